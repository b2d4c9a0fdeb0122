// Macro benchmark of push: the real CLI over loopback against a raw quinn stream of the same
// bytes, scp and rsync over a private sshd, all measured side by side in one run.
//
// Cases: (a) one big incompressible file (1 GiB); (b) many small files (10,000 x 64 KiB, one
// directory). Every tool copies from the same page-cached source into a fresh directory on the
// same disk; runs of the tools are interleaved so a burst of load on this shared machine hits
// them alike, `sync` runs (untimed) between runs so one tool's dirty pages are not flushed on
// another's clock, and destinations are deleted after the case's last run: ext4 without a journal
// (this disk) skips inodes freed less than 60 s ago (5 min while their inode-table block is dirty)
// when it allocates new ones (recently_deleted() in its inode allocator), so a run that followed the deletion of 10,000 files paid 150-600 us per create instead of ~40 us,
// and which tool paid depended on the order of the runs.
//
// What is timed:
//   - clawpeer `seconds`: the CLI's own figure (push() start to the receiver's done): includes
//     the sender's scan + BLAKE3 hashing, the manifest exchange, receiving, fsync and publish;
//     excludes node start-up and the connect/handshake.
//   - clawpeer `dataSeconds`: `seconds` minus the scan+hash phase. For one file that phase comes
//     from the NDJSON progress events (the 'scanning' event is emitted as the file is hashed:
//     exact); for a tree the events are throttled, so the phase is estimated as the smaller of
//     the same scan (scanSource, same chunking) timed in the bench process after the push and
//     the time to the first 'sending' event (an upper bound): approximate.
//   - clawpeer `processSeconds`, scp, rsync: wall time of the whole client process (start-up,
//     connect, authentication, transfer). scp and rsync -a do not fsync; clawpeer does (batched);
//     `rsync -a --fsync` (every file fsync'd) is the like-for-like baseline for durability.
//   - raw quinn: one connection, one stream, the file read in 1 MiB pieces and written; from the
//     first write until the sink (a separate process, like the listener) has read every byte and
//     answered. No hashing, AEAD of our own, framing or fsync: the ceiling clawpeer aims at.
//   - raw quinn into a file: the same, the sink writing the bytes to a new file on the same disk
//     as they arrive and fsyncing it before it answers: what any tool pays here to land them.
//
// Ratios: clawpeer / raw quinn on throughput (goal >= 0.8, issue 3) for both clawpeer figures;
// small files: clawpeer process time / scp and / rsync (goal < 1), and / rsync --fsync.
// ssh tools: installed from Debian packages when `sshd` is missing (apt-get), run as a private
// sshd on 127.0.0.1 with throwaway host and client keys in a temp dir; stopped afterwards.
// Smoke mode: 8 MiB and 50 files, one run, no ssh tools, nothing written: seconds, for CI.
// Run: node <outDir>/bench/transfer.js [--smoke] [--runs N] [--only big|small] [--streams N]
//      [--window W] [--no-ssh] [--cpu-prof DIR] [--node-flags "--flag ..."] [--out FILE] [--keep]
//   (the CLI it spawns is what users run: bin/clawpeer.cjs beside the build's outDir, which runs
//   the bundle; a build copied elsewhere without bin/ runs <outDir>/src/cli/main.js, unbundled
//   and always through yargs, ~0.1-0.2 CPU-s more per process: `cliLauncher` in the JSON says which).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { DEFAULT_CHUNKING } from '../src/chunking/fastcdc.js';
import { generateIdentity } from '../src/crypto/identity.js';
import { silentLogger } from '../src/logger.js';
import { scanSource } from '../src/exchange/transfer-source.js';
import { DEFAULT_CAPABILITIES } from '../src/protocol/capabilities.js';
import { QuinnBackend } from '../src/transport/quinn.js';
import { QUINN_TUNING_DEFAULTS } from '../src/transport/quinn-connection.js';
import { sshCommand, startSshd, type SshSetup } from './ssh-loopback.js';
import {
  fileCreateCondition,
  runAsScript,
  KiB,
  REPO_ROOT,
  machineConditions,
  machineCpuSeconds,
  median,
  MiB,
  ratio,
  round,
  treeBytes,
  writeJsonFile,
  writeResult,
} from './common.js';

/** USER_HZ of /proc/<pid>/stat times: 100 on every Linux build that matters. */
const CLOCK_TICKS_PER_SECOND = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

export interface TransferBenchOptions {
  /** 8 MiB and 50 files, one run, no ssh tools; writes nothing unless outFile is set. */
  readonly smoke?: boolean;
  /** Timed runs per tool and case (default 3; smoke 1). */
  readonly runs?: number;
  /** Only one case. */
  readonly only?: 'big' | 'small';
  /** Passed to clawpeer push as --streams / --window (default: the CLI's defaults). */
  readonly streams?: number;
  readonly window?: number;
  /** Skip scp/rsync (and never install anything). */
  readonly noSsh?: boolean;
  /** Extra node flags for both clawpeer processes (e.g. ['--no-memory-reducer']): to test runtime tuning. */
  readonly nodeFlags?: readonly string[];
  /** Run both clawpeer processes with --cpu-prof, profiles written into this directory. */
  readonly cpuProfDir?: string;
  /** Result file (default bench/results/transfer.json for a real run, none for smoke). */
  readonly outFile?: string;
  /** Keep the temp directory (source data, homes) for inspection. */
  readonly keep?: boolean;
  /** Progress to stderr (default true when run from the command line). */
  readonly verbose?: boolean;
}

const BIG_BYTES = 1 << 30; // 1 GiB
const SMALL_FILES = 10_000;
const SMALL_FILE_BYTES = 64 * KiB;
const SMOKE_BIG_BYTES = 8 * MiB;
const SMOKE_SMALL_FILES = 50;
/** Source data is written in distinct random blocks of this size (incompressible, no dedup). */
const FILL_BLOCK_BYTES = 8 * MiB;
/** Raw quinn: bytes read from the file and written to the stream per call. */
const RAW_PIECE_BYTES = 1 * MiB;
const RAW_READ_BYTES = 256 * KiB;
/** Writes the file-writing sink keeps queued: 2 MiB at most, enough to keep one pool thread busy. */
const RAW_WRITES_IN_FLIGHT = 8;
/** A clawpeer, scp or rsync run that takes longer than this is a failure (1 GiB at ~2 MiB/s). */
const RUN_TIMEOUT_MS = 10 * 60_000;
const SINK_FLAG = '--raw-quinn-sink';
/** Prefix of the line on which a launched CLI reports its CPU time (and peak RSS, Linux) at exit. */
const CPU_MARK = '@@clawpeer-bench-cpu ';

const here = dirname(fileURLToPath(import.meta.url));
/** The CLI compiled next to this bench (same outDir), so a bench of a build measures that build. */
const CLI_MAIN_URL = pathToFileURL(join(here, '..', 'src', 'cli', 'main.js')).href;
/** The launcher users run, beside this build's outDir: it runs the bundle (or dist/src when newer). */
const CLI_BIN = join(here, '..', '..', 'bin', 'clawpeer.cjs');
const THREAD_POOL_SETUP = join(REPO_ROOT, 'bin', 'thread-pool.cjs');
const HEAP_GROWTH_SETUP = join(REPO_ROOT, 'bin', 'heap-growth.cjs');
const PROC_STATUS_URL = pathToFileURL(join(here, 'proc-status.js')).href;

/** Which CLI the bench spawns (recorded in each JSON's conditions as cliLauncher). */
export const CLI_LAUNCHER = existsSync(CLI_BIN) ? 'bin/clawpeer.cjs' : 'dist/src/cli/main.js';

/**
 * A CommonJS file preloaded (--require) into a CLI run through bin/clawpeer.cjs: at exit it reports
 * the process's CPU time and peak RSS on stderr, as the main.js launcher below does. CommonJS and
 * reading nothing at load, so the launcher still sets the thread pool's size before its first use.
 */
let exitReportFile: string | undefined;
function exitReportPreload(): string {
  if (exitReportFile !== undefined) return exitReportFile;
  const dir = mkdtempSync(join(tmpdir(), 'clawpeer-bench-exit-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'report-at-exit.cjs');
  writeFileSync(
    file,
    [
      "'use strict';",
      "process.on('exit', () => {",
      '  let peakRssKiB;',
      "  try { const m = /^VmHWM:\\s+(\\d+) kB$/m.exec(require('node:fs').readFileSync('/proc/self/status', 'utf8')); peakRssKiB = m === null ? undefined : Number(m[1]); } catch {}",
      `  process.stderr.write('\\n${CPU_MARK}' + JSON.stringify({ ...process.cpuUsage(), peakRssKiB }) + '\\n');`,
      '});',
      '',
    ].join('\n'),
  );
  return (exitReportFile = file);
}

type Log = (msg: string) => void;

// ---------------------------------------------------------------------------------------------
// Source data

export async function writeRandomFile(file: string, bytes: number): Promise<void> {
  const h = await open(file, 'w');
  try {
    for (let done = 0; done < bytes;) {
      const n = Math.min(FILL_BLOCK_BYTES, bytes - done);
      await h.write(randomBytes(n), 0, n, done);
      done += n;
    }
  } finally {
    await h.close();
  }
}

async function makeSmallTree(dir: string, files: number): Promise<void> {
  await mkdir(dir, { recursive: true });
  const width = String(files - 1).length;
  for (let i = 0; i < files; i++)
    await writeFile(join(dir, `f${String(i).padStart(width, '0')}.bin`), randomBytes(SMALL_FILE_BYTES));
}

/** What a launched CLI reported at exit: CPU seconds (user + system, all threads) and its peak RSS. */
export function reportedAtExit(stderr: string): { cpuSeconds?: number; peakRssKiB?: number } {
  const line = stderr.split('\n').find((l) => l.startsWith(CPU_MARK));
  if (line === undefined) return {};
  const u = JSON.parse(line.slice(CPU_MARK.length)) as { user: number; system: number; peakRssKiB?: number | null };
  return {
    cpuSeconds: (u.user + u.system) / 1e6,
    ...(typeof u.peakRssKiB === 'number' ? { peakRssKiB: u.peakRssKiB } : {}),
  };
}

/** CPU seconds (user + system, all threads) a live process has used so far; Linux only. */
export function procCpuSeconds(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  const r = spawnSync('cat', [`/proc/${pid}/stat`], { encoding: 'utf8' });
  if (r.status !== 0) return undefined;
  // Fields after the command name (which may contain spaces) start after the last ')'.
  const fields = r.stdout.slice(r.stdout.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15)
  return ticks / CLOCK_TICKS_PER_SECOND;
}

/** Flushes dirty pages (untimed) so the next run does not pay for the previous one's writeback. */
export function syncDisks(): void {
  spawnSync('sync', { stdio: 'ignore' });
}

// ---------------------------------------------------------------------------------------------
// clawpeer through the real CLI

export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** ms since the child was spawned, one per stdout line. */
  readonly lineTimesMs: number[];
  readonly lines: string[];
  readonly wallMs: number;
}

/** Node flags for every launched CLI (set once by main from options.nodeFlags). */
let extraNodeFlags: readonly string[] = [];

function cliArgs(args: readonly string[], cpuProfDir: string | undefined, profName: string): string[] {
  const prof = [
    ...extraNodeFlags,
    ...(cpuProfDir === undefined
      ? []
      : ['--cpu-prof', '--cpu-prof-dir', cpuProfDir, '--cpu-prof-name', `${profName}.cpuprofile`]),
  ];
  // At exit the process reports its CPU time (all threads: libuv pool, quinn's runtime) on
  // stderr; stderr is a pipe, which node writes synchronously on Linux and macOS.
  if (CLI_LAUNCHER === 'bin/clawpeer.cjs') return [...prof, '--require', exitReportPreload(), CLI_BIN, ...args];
  const launcher = [
    `import { main } from ${JSON.stringify(CLI_MAIN_URL)};`,
    `import { peakRssKiBOf } from ${JSON.stringify(PROC_STATUS_URL)};`,
    `process.on('exit', () => { const u = process.cpuUsage(); process.stderr.write('\\n${CPU_MARK}' + JSON.stringify({ ...u, peakRssKiB: peakRssKiBOf('self') }) + '\\n'); });`,
    'main(process.argv.slice(1)).then((c) => { process.exitCode = c; });',
  ].join(' ');
  // --require: what bin/clawpeer.cjs sets up for the CLI: the thread-pool size, before the pool's
  // first use, and the pacing of full GCs.
  return [
    ...prof,
    '--require',
    THREAD_POOL_SETUP,
    '--require',
    HEAP_GROWTH_SETUP,
    '--input-type=module',
    '-e',
    launcher,
    '--',
    ...args,
  ];
}

export function runCli(
  args: readonly string[],
  options: { cpuProfDir?: string; profName?: string } = {},
): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, cliArgs(args, options.cpuProfDir, options.profName ?? 'cli'), {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    const lines: string[] = [];
    const lineTimesMs: number[] = [];
    createInterface({ input: child.stdout }).on('line', (line) => {
      lineTimesMs.push(performance.now() - t0);
      lines.push(line);
      stdout += line + '\n';
    });
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), RUN_TIMEOUT_MS);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, lines, lineTimesMs, wallMs: performance.now() - t0 });
    });
  });
}

async function cliOk(args: readonly string[]): Promise<Record<string, unknown>[]> {
  const r = await runCli(args);
  if (r.code !== 0) throw new Error(`clawpeer ${args.join(' ')} exited ${String(r.code)}: ${r.stderr}`);
  return r.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
}

interface Listener {
  readonly child: ChildProcess;
  readonly port: number;
  stop(): Promise<void>;
}

function startListener(home: string, shares: readonly string[], cpuProfDir: string | undefined): Promise<Listener> {
  return new Promise((resolve, reject) => {
    const args = [
      '--home',
      home,
      'listen',
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--transport',
      'quic',
      '--json',
      ...shares.flatMap((s) => ['--share', s]),
    ];
    const child = spawn(process.execPath, cliArgs(args, cpuProfDir, 'listener'), { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<void>((res) => child.on('close', () => res()));
    let ready = false;
    createInterface({ input: child.stdout }).once('line', (line) => {
      ready = true;
      const port = Number((JSON.parse(line) as Record<string, unknown>)['port']);
      resolve({
        child,
        port,
        stop: async () => {
          if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
          await exited;
        },
      });
    });
    child.on('close', (code) => {
      if (!ready) reject(new Error(`listener exited ${String(code)} before ready: ${stderr}`));
    });
  });
}

export interface ClawpeerSetup {
  readonly senderHome: string;
  /** The home the listener runs for. */
  readonly listenerHome: string;
  readonly listener: Listener;
  readonly shareDirs: string[];
}

/** Two homes, paired both ways; a listener serving one fresh share per planned run. */
export async function setUpClawpeer(
  root: string,
  shareCount: number,
  cpuProfDir: string | undefined,
): Promise<ClawpeerSetup> {
  const recvHome = join(root, 'home-recv');
  const sendHome = join(root, 'home-send');
  const recvId = String((await cliOk(['--home', recvHome, 'init', '--json']))[0]?.['id']);
  const sendId = String((await cliOk(['--home', sendHome, 'init', '--json']))[0]?.['id']);
  await cliOk(['--home', recvHome, 'pair', 'add', sendId, '--name', 'sender', '--json']);
  const shareDirs = Array.from({ length: shareCount }, (_, i) => join(root, 'clawpeer-dest', `s${i}`));
  for (const d of shareDirs) await mkdir(d, { recursive: true });
  const listener = await startListener(
    recvHome,
    shareDirs.map((d, i) => `s${i}=${d}`),
    cpuProfDir,
  );
  await cliOk([
    '--home',
    sendHome,
    'pair',
    'add',
    recvId,
    '--name',
    'recv',
    '--addr',
    `127.0.0.1:${listener.port}`,
    '--json',
  ]);
  return { senderHome: sendHome, listenerHome: recvHome, listener, shareDirs };
}

export interface ClawpeerSample {
  readonly seconds: number;
  readonly dataSeconds: number;
  readonly scanSeconds: number;
  readonly processSeconds: number;
  readonly wireBytes: number;
  readonly chunksSent: number;
  readonly streams: number;
  readonly window: number;
  /** CPU seconds of the sending CLI process and of the listener during this push. */
  readonly cpuSender: number | undefined;
  readonly cpuReceiver: number | undefined;
  /** The sending CLI process's peak RSS (VmHWM at exit; Linux), KiB. */
  readonly peakRssKiBSender: number | undefined;
  /** CPU seconds of the whole machine during the push (machineCpuSeconds: both sides, the kernel's writeback). */
  readonly cpuMachine: number;
}

/**
 * Scan+hash time of a one-file push from its progress events: the CLI emits a 'scanning' event
 * as each file is hashed (the first one unthrottled), so for one file it marks the end of
 * hashing; push() started `seconds` before the done event. Undefined for a tree.
 */
function scanSecondsFromEvents(run: CliRun, done: Record<string, unknown>, totalBytes: number): number | undefined {
  const pushStartMs = (run.lineTimesMs[run.lines.length - 1] ?? 0) - Number(done['seconds']) * 1000;
  for (const [i, line] of run.lines.entries()) {
    const e = JSON.parse(line) as Record<string, unknown>;
    if (e['event'] === 'progress' && e['phase'] === 'scanning')
      return Number(e['bytes']) === totalBytes
        ? Math.max(0, (run.lineTimesMs[i] ?? 0) - pushStartMs) / 1000
        : undefined;
  }
  return undefined;
}

/**
 * Seconds from push() start to the first 'sending' progress event: an upper bound on the scan
 * phase (it also covers the manifest exchange, the receiver's staging and the event throttle).
 */
function firstSendingSeconds(run: CliRun, done: Record<string, unknown>): number | undefined {
  const pushStartMs = (run.lineTimesMs[run.lines.length - 1] ?? 0) - Number(done['seconds']) * 1000;
  for (const [i, line] of run.lines.entries()) {
    const e = JSON.parse(line) as Record<string, unknown>;
    if (e['event'] === 'progress' && e['phase'] === 'sending')
      return Math.max(0, (run.lineTimesMs[i] ?? 0) - pushStartMs) / 1000;
  }
  return undefined;
}

/** The sender's scan+hash of `source` timed in this process (same scanner and chunking as the CLI, page-cached data). */
async function scanSecondsInProcess(source: string): Promise<number> {
  const c = DEFAULT_CAPABILITIES.chunking[0]!;
  const t0 = performance.now();
  await scanSource(source, {
    chunking: {
      minBytes: c.minBytes,
      avgBytes: c.avgBytes,
      maxBytes: c.maxBytes,
      normalization: DEFAULT_CHUNKING.normalization,
    },
    log: silentLogger,
  });
  return (performance.now() - t0) / 1000;
}

/** One timed `clawpeer push` of `source` into share `share`; `extraArgs` go to the CLI as they are. */
export async function clawpeerPush(
  setup: ClawpeerSetup,
  source: string,
  share: number,
  totalBytes: number,
  o: TransferBenchOptions,
  profName: string,
  extraArgs: readonly string[] = [],
): Promise<ClawpeerSample> {
  const extra = [
    ...(o.streams === undefined ? [] : ['--streams', String(o.streams)]),
    ...(o.window === undefined ? [] : ['--window', String(o.window)]),
    ...extraArgs,
  ];
  const recvCpu0 = procCpuSeconds(setup.listener.child.pid);
  const machine0 = machineCpuSeconds();
  const run = await runCli(
    ['--home', setup.senderHome, 'push', source, `recv:s${share}`, '--json', ...extra],
    o.cpuProfDir === undefined ? {} : { cpuProfDir: o.cpuProfDir, profName },
  );
  const recvCpu1 = procCpuSeconds(setup.listener.child.pid);
  const cpuMachine = machineCpuSeconds() - machine0;
  const atExit = reportedAtExit(run.stderr);
  if (run.code !== 0) throw new Error(`clawpeer push exited ${String(run.code)}: ${run.stderr}`);
  const lines = run.lines.filter((l) => l.startsWith('{'));
  if (lines.length !== run.lines.length) throw new Error(`clawpeer push printed non-JSON lines: ${run.stdout}`);
  const done = JSON.parse(run.lines.at(-1) ?? '{}') as Record<string, unknown>;
  if (done['event'] !== 'done' || Number(done['bytes']) !== totalBytes)
    throw new Error(`clawpeer push: unexpected final event ${run.lines.at(-1) ?? ''}`);
  const seconds = Number(done['seconds']);
  const scanSeconds =
    scanSecondsFromEvents(run, done, totalBytes) ??
    Math.min(await scanSecondsInProcess(source), firstSendingSeconds(run, done) ?? Number.POSITIVE_INFINITY);
  return {
    seconds,
    scanSeconds,
    dataSeconds: seconds - scanSeconds,
    processSeconds: run.wallMs / 1000,
    wireBytes: Number(done['wireBytes']),
    chunksSent: Number(done['chunksSent']),
    streams: Number(done['streams']),
    window: Number(done['window']),
    cpuSender: atExit.cpuSeconds,
    peakRssKiBSender: atExit.peakRssKiB,
    cpuReceiver: recvCpu0 === undefined || recvCpu1 === undefined ? undefined : recvCpu1 - recvCpu0,
    cpuMachine,
  };
}

// ---------------------------------------------------------------------------------------------
// Raw quinn: one connection, one stream, the same bytes, sink in its own process

/**
 * The sink process: accepts one connection and one stream, reads to FIN, answers the count.
 * With `writeTo`, it also writes every byte to that file as it arrives (up to
 * RAW_WRITES_IN_FLIGHT writes queued on the thread pool, in order) and fsyncs it before
 * answering: what a stream costs here when its bytes must land durably on this disk.
 */
async function rawQuinnSink(writeTo?: string): Promise<void> {
  const backend = new QuinnBackend();
  const listener = await backend.listen({ host: '127.0.0.1', port: 0, identity: generateIdentity() });
  const accepted = listener.accept();
  process.stdout.write(JSON.stringify({ port: listener.address.port }) + '\n');
  const conn = await accepted;
  if (conn === null) throw new Error('raw quinn sink: listener closed');
  const stream = await conn.acceptStream();
  if (stream === null) throw new Error('raw quinn sink: no stream');
  let got = 0;
  const file = writeTo === undefined ? undefined : await open(writeTo, 'wx', 0o600);
  const writes: Promise<unknown>[] = [];
  for (;;) {
    const bytes = await stream.read(RAW_READ_BYTES);
    if (bytes === null) break;
    if (file !== undefined) {
      if (writes.length >= RAW_WRITES_IN_FLIGHT) await writes.shift();
      // Sequential positions, one queue: the thread pool runs them in order (its libuv queue is FIFO).
      writes.push(file.write(bytes, 0, bytes.length, got));
    }
    got += bytes.length;
  }
  if (file !== undefined) {
    await Promise.all(writes);
    await file.sync();
    await file.close();
  }
  const u = process.cpuUsage();
  const answer = Buffer.alloc(16);
  answer.writeBigUInt64BE(BigInt(got));
  answer.writeBigUInt64BE(BigInt(u.user + u.system), 8); // µs of CPU so far (this process does nothing else)
  await stream.write(answer);
  await stream.finish();
  // The sender closes once it has the answer; wait for that (bounded) so nothing is cut.
  await Promise.race([conn.closed, new Promise((r) => setTimeout(r, 5_000))]);
  await listener.close();
}

interface RawSample {
  readonly seconds: number;
  /** CPU seconds of the bench process while sending (it does nothing else meanwhile). */
  readonly cpuSender: number;
  /** CPU seconds of the sink process, start-up included (~0.1 s). */
  readonly cpuReceiver: number;
}

/** Pushes `file` to a sink process; with `writeTo`, the sink writes it there and fsyncs (rawQuinnSink). */
async function rawQuinnPush(file: string, bytes: number, writeTo?: string): Promise<RawSample> {
  const sink = spawn(
    process.execPath,
    [fileURLToPath(import.meta.url), SINK_FLAG, ...(writeTo === undefined ? [] : [writeTo])],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const exited = new Promise<number | null>((res) => sink.on('close', (code) => res(code)));
  try {
    const port = await new Promise<number>((resolve, reject) => {
      createInterface({ input: sink.stdout }).once('line', (line) =>
        resolve(Number((JSON.parse(line) as { port: number }).port)),
      );
      sink.once('close', (code) => reject(new Error(`raw quinn sink exited ${String(code)} before listening`)));
    });
    const conn = await new QuinnBackend().connect({ host: '127.0.0.1', port, identity: generateIdentity() });
    const h = await open(file, 'r');
    try {
      const stream = await conn.openStream();
      const t0 = performance.now();
      const cpu0 = process.cpuUsage();
      for (let done = 0; done < bytes;) {
        // A fresh buffer per piece: quinn may still hold the previous one until write() resolves.
        const buf = Buffer.allocUnsafe(Math.min(RAW_PIECE_BYTES, bytes - done));
        const { bytesRead } = await h.read(buf, 0, buf.length, done);
        if (bytesRead === 0) throw new Error(`${file} ended at ${done} of ${bytes} bytes`);
        await stream.write(buf.subarray(0, bytesRead));
        done += bytesRead;
      }
      await stream.finish();
      const answer = await stream.read(16);
      const seconds = (performance.now() - t0) / 1000;
      const cpu = process.cpuUsage(cpu0);
      if (answer === null || answer.length !== 16 || Buffer.from(answer).readBigUInt64BE(0) !== BigInt(bytes))
        throw new Error('raw quinn sink did not confirm every byte');
      await conn.close();
      return {
        seconds,
        cpuSender: (cpu.user + cpu.system) / 1e6,
        cpuReceiver: Number(Buffer.from(answer).readBigUInt64BE(8)) / 1e6,
      };
    } finally {
      await h.close();
    }
  } finally {
    if (sink.exitCode === null) setTimeout(() => sink.kill('SIGKILL'), 6_000).unref();
    await exited;
  }
}

// ---------------------------------------------------------------------------------------------
// scp and rsync over a private sshd

/** A process's wall seconds, and the whole machine's CPU seconds meanwhile (its ssh and sshd, the remote side). */
interface TimedRun {
  readonly seconds: number;
  readonly cpuMachine: number;
}

async function timedProcess(cmd: string, args: readonly string[]): Promise<TimedRun> {
  const t0 = performance.now();
  const machine0 = machineCpuSeconds();
  const r = await new Promise<{ code: number | null; stderr: string }>((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), RUN_TIMEOUT_MS);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
  if (r.code !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${String(r.code)}: ${r.stderr}`);
  return { seconds: (performance.now() - t0) / 1000, cpuMachine: machineCpuSeconds() - machine0 };
}

/** `scp` copies `source` (file or, with -r, directory) into `destDir`. */
function scpCopy(ssh: SshSetup, source: string, destDir: string, recursive: boolean): Promise<TimedRun> {
  // scp takes -P for the port and the user in the target (no -l).
  return timedProcess('scp', [
    ...ssh.commonArgs,
    '-P',
    String(ssh.port),
    '-q',
    ...(recursive ? ['-r'] : []),
    source,
    `${ssh.user}@127.0.0.1:${destDir}/`,
  ]);
}

/** `fsync`: rsync's --fsync (every written file), the durability clawpeer always gives. */
function rsyncCopy(ssh: SshSetup, source: string, destDir: string, fsync = false): Promise<TimedRun> {
  return timedProcess('rsync', [
    '-a',
    ...(fsync ? ['--fsync'] : []),
    '-e',
    sshCommand(ssh),
    source,
    `127.0.0.1:${destDir}/`,
  ]);
}

// ---------------------------------------------------------------------------------------------
// The run

interface ToolResult {
  readonly tool: string;
  readonly measure: string;
  readonly secondsAll: number[];
  readonly secondsMedian: number;
  readonly MiBps: number;
  readonly extra?: Record<string, unknown>;
}

function toolResult(
  tool: string,
  measure: string,
  secs: number[],
  bytes: number,
  extra?: Record<string, unknown>,
): ToolResult {
  const m = median(secs);
  return {
    tool,
    measure,
    secondsAll: secs.map((s) => round(s, 3)),
    secondsMedian: round(m, 3),
    MiBps: round(bytes / MiB / m, 1),
    ...(extra === undefined ? {} : { extra }),
  };
}

interface CaseSpec {
  readonly name: 'big' | 'small';
  readonly description: string;
  readonly source: string;
  readonly files: number;
  readonly bytes: number;
}

async function runCase(
  spec: CaseSpec,
  ctx: {
    root: string;
    setup: ClawpeerSetup;
    shareBase: number;
    runs: number;
    ssh: SshSetup | undefined;
    o: TransferBenchOptions;
    log: Log;
  },
): Promise<Record<string, unknown>> {
  const { runs, ssh, o, log } = ctx;
  const claw: ClawpeerSample[] = [];
  const clawNoFsync: ClawpeerSample[] = [];
  const raw: RawSample[] = [];
  const rawToFile: RawSample[] = [];
  const scp: number[] = [];
  const rsync: number[] = [];
  const rsyncFsync: number[] = [];
  const sshCpu = { scp: [] as number[], rsync: [] as number[], 'rsync-fsync': [] as number[] };
  const MiBs = (s: number): string => `${round(spec.bytes / MiB / s, 1)} MiB/s`;
  const removeAfterCase: string[] = []; // see the header: no deletes between runs
  for (let r = 0; r < runs; r++) {
    if (spec.name === 'big') {
      const landing = join(ctx.root, `raw-quinn-file-${r}.bin`);
      removeAfterCase.push(landing);
      for (const [samples, label, writeTo] of [
        [raw, 'raw quinn', undefined],
        [rawToFile, 'raw quinn into a file', landing],
      ] as const) {
        syncDisks();
        const x = await rawQuinnPush(spec.source, spec.bytes, writeTo);
        samples.push(x);
        log(
          `  ${spec.name} run ${r + 1}/${runs}: ${label} ${MiBs(x.seconds)} (cpu: sender ${round(x.cpuSender, 2)} s, sink ${round(x.cpuReceiver, 2)} s)`,
        );
      }
    }
    syncDisks();
    const share = ctx.shareBase + r;
    const s = await clawpeerPush(ctx.setup, spec.source, share, spec.bytes, o, `push-${spec.name}-${r}`);
    claw.push(s);
    log(
      `  ${spec.name} run ${r + 1}/${runs}: clawpeer ${MiBs(s.seconds)} (seconds ${round(s.seconds, 2)}, scan ${round(s.scanSeconds, 2)}, process ${round(s.processSeconds, 2)}; cpu: sender ${round(s.cpuSender ?? NaN, 2)} s, receiver ${round(s.cpuReceiver ?? NaN, 2)} s)`,
    );
    syncDisks();
    const unsyncedShare = share + runs;
    const n = await clawpeerPush(
      ctx.setup,
      spec.source,
      unsyncedShare,
      spec.bytes,
      o,
      `push-${spec.name}-nofsync-${r}`,
      ['--fsync', 'none'],
    );
    clawNoFsync.push(n);
    log(
      `  ${spec.name} run ${r + 1}/${runs}: clawpeer --fsync=none ${MiBs(n.seconds)} (process ${round(n.processSeconds, 2)}; cpu: sender ${round(n.cpuSender ?? NaN, 2)} s, receiver ${round(n.cpuReceiver ?? NaN, 2)} s)`,
    );
    for (const landedIn of [share, unsyncedShare]) {
      const landed = await treeBytes(ctx.setup.shareDirs[landedIn]!);
      if (landed.bytes !== spec.bytes || landed.files !== spec.files)
        throw new Error(
          `clawpeer delivered ${landed.files} files / ${landed.bytes} bytes, expected ${spec.files} / ${spec.bytes}`,
        );
      removeAfterCase.push(ctx.setup.shareDirs[landedIn]!);
    }
    if (ssh !== undefined) {
      for (const tool of ['scp', 'rsync', 'rsync-fsync'] as const) {
        const dest = join(ctx.root, `${tool}-dest-${spec.name}-${r}`);
        await mkdir(dest, { recursive: true });
        syncDisks();
        const { seconds: secs, cpuMachine } =
          tool === 'scp'
            ? await scpCopy(ssh, spec.source, dest, spec.name === 'small')
            : await rsyncCopy(ssh, spec.source, dest, tool === 'rsync-fsync');
        ({ scp, rsync, 'rsync-fsync': rsyncFsync })[tool].push(secs);
        sshCpu[tool].push(round(cpuMachine, 2));
        const landedSsh = await treeBytes(dest);
        if (landedSsh.bytes !== spec.bytes)
          throw new Error(`${tool} delivered ${landedSsh.bytes} bytes, expected ${spec.bytes}`);
        removeAfterCase.push(dest);
        log(`  ${spec.name} run ${r + 1}/${runs}: ${tool} ${MiBs(secs)} (machine cpu ${round(cpuMachine, 2)} s)`);
      }
    }
  }
  // Retried: the listener may still be saving a share's chunk index (chunk-index-pool.ts).
  for (const dir of removeAfterCase) await rm(dir, { recursive: true, force: true, maxRetries: 5 });
  const clawSeconds = toolResult(
    'clawpeer push',
    'CLI "seconds": scan+hash, manifest, transfer, fsync, publish (no process start, no connect)',
    claw.map((c) => c.seconds),
    spec.bytes,
    {
      cpuSecondsSender: claw.map((c) => round(c.cpuSender ?? Number.NaN, 2)),
      cpuSecondsReceiver: claw.map((c) => round(c.cpuReceiver ?? Number.NaN, 2)),
      peakRssKiBSender: claw.map((c) => c.peakRssKiBSender ?? null),
      cpuSecondsMachine: claw.map((c) => round(c.cpuMachine, 2)),
      wireBytes: claw.map((c) => c.wireBytes),
      chunksSent: claw.map((c) => c.chunksSent),
      streams: claw[0]?.streams,
      window: claw[0]?.window,
    },
  );
  const clawData = toolResult(
    'clawpeer push',
    spec.name === 'big'
      ? 'CLI "seconds" minus the scan+hash phase (exact: from the scanning progress event)'
      : 'CLI "seconds" minus the scan+hash phase (approximate: min of the same scan timed in the bench process and the first sending event)',
    claw.map((c) => c.dataSeconds),
    spec.bytes,
    { scanSecondsAll: claw.map((c) => round(c.scanSeconds, 3)) },
  );
  const clawProcess = toolResult(
    'clawpeer push',
    'wall time of the client process (node start-up, connect, everything)',
    claw.map((c) => c.processSeconds),
    spec.bytes,
  );
  const clawNoFsyncProcess = toolResult(
    'clawpeer push --fsync=none',
    'wall time of the client process; the listener renames into place without fsync, as scp and rsync -a',
    clawNoFsync.map((c) => c.processSeconds),
    spec.bytes,
    {
      cpuSecondsSender: clawNoFsync.map((c) => round(c.cpuSender ?? Number.NaN, 2)),
      cpuSecondsReceiver: clawNoFsync.map((c) => round(c.cpuReceiver ?? Number.NaN, 2)),
      cpuSecondsMachine: clawNoFsync.map((c) => round(c.cpuMachine, 2)),
    },
  );
  const rows: ToolResult[] = [clawSeconds, clawData, clawProcess, clawNoFsyncProcess];
  const ratios: Record<string, number> = {
    clawpeerNoFsyncProcessTimePerDefault: ratio(clawNoFsyncProcess.secondsMedian, clawProcess.secondsMedian),
  };
  const rawRow = (tool: string, measure: string, samples: readonly RawSample[]): ToolResult =>
    toolResult(
      tool,
      measure,
      samples.map((x) => x.seconds),
      spec.bytes,
      {
        cpuSecondsSender: samples.map((x) => round(x.cpuSender, 2)),
        cpuSecondsReceiver: samples.map((x) => round(x.cpuReceiver, 2)),
      },
    );
  if (raw.length > 0) {
    const row = rawRow(
      'raw quinn stream',
      'first write until the sink confirmed every byte (1 connection, 1 stream, 1 MiB writes read from the file)',
      raw,
    );
    rows.push(row);
    ratios['clawpeerSecondsPerRawQuinn'] = ratio(clawSeconds.MiBps, row.MiBps);
    ratios['clawpeerDataPerRawQuinn'] = ratio(clawData.MiBps, row.MiBps);
  }
  if (rawToFile.length > 0) {
    const row = rawRow(
      'raw quinn stream into a file',
      'as the raw quinn stream, the sink writing every byte to a new file on this disk as it arrives and fsyncing it before it answers',
      rawToFile,
    );
    rows.push(row);
    ratios['clawpeerSecondsPerRawQuinnIntoFile'] = ratio(clawSeconds.MiBps, row.MiBps);
  }
  if (scp.length > 0) {
    const row = toolResult(
      'scp',
      `wall time of the scp process${spec.name === 'small' ? ' (-r)' : ''}`,
      scp,
      spec.bytes,
      { cpuSecondsMachine: sshCpu.scp },
    );
    rows.push(row);
    ratios['clawpeerProcessTimePerScpTime'] = ratio(clawProcess.secondsMedian, row.secondsMedian);
    ratios['clawpeerNoFsyncProcessTimePerScpTime'] = ratio(clawNoFsyncProcess.secondsMedian, row.secondsMedian);
  }
  if (rsync.length > 0) {
    const row = toolResult('rsync -a over ssh', 'wall time of the rsync process', rsync, spec.bytes, {
      cpuSecondsMachine: sshCpu.rsync,
    });
    rows.push(row);
    ratios['clawpeerProcessTimePerRsyncTime'] = ratio(clawProcess.secondsMedian, row.secondsMedian);
    ratios['clawpeerNoFsyncProcessTimePerRsyncTime'] = ratio(clawNoFsyncProcess.secondsMedian, row.secondsMedian);
    // The whole machine's CPU per run against rsync's, and that CPU over the cores: the wall time
    // no overlap of work could beat on these shared cores.
    const machineCpu = median(clawNoFsync.map((c) => c.cpuMachine));
    ratios['clawpeerNoFsyncMachineCpuPerRsync'] = ratio(machineCpu, median(sshCpu.rsync));
    ratios['clawpeerNoFsyncCpuFloorPerRsyncTime'] = ratio(machineCpu / cpus().length, row.secondsMedian);
  }
  if (rsyncFsync.length > 0) {
    const row = toolResult(
      'rsync -a --fsync over ssh',
      "wall time of the rsync process; --fsync: every file fsync'd, like clawpeer",
      rsyncFsync,
      spec.bytes,
      { cpuSecondsMachine: sshCpu['rsync-fsync'] },
    );
    rows.push(row);
    ratios['clawpeerProcessTimePerRsyncFsyncTime'] = ratio(clawProcess.secondsMedian, row.secondsMedian);
  }
  // CPU seconds per GiB moved, each side and both (medians over the runs; a side's total per run
  // first, then the median): the per-byte cost issue 33 halves, beside raw quinn's from the same run.
  const gib = spec.bytes / 2 ** 30;
  const cpuPerGiB = (
    sender: readonly (number | undefined)[],
    receiver: readonly (number | undefined)[],
  ): Record<string, number> | undefined => {
    const both = sender.map((x, i) => (x === undefined || receiver[i] === undefined ? Number.NaN : x + receiver[i]));
    if (both.length === 0 || both.some((x) => Number.isNaN(x))) return undefined;
    return {
      sender: round(median(sender as number[]) / gib, 2),
      receiver: round(median(receiver as number[]) / gib, 2),
      both: round(median(both) / gib, 2),
    };
  };
  const cpuSecondsPerGiB: Record<string, Record<string, number> | undefined> = {
    clawpeer: cpuPerGiB(
      claw.map((c) => c.cpuSender),
      claw.map((c) => c.cpuReceiver),
    ),
    clawpeerNoFsync: cpuPerGiB(
      clawNoFsync.map((c) => c.cpuSender),
      clawNoFsync.map((c) => c.cpuReceiver),
    ),
    ...(raw.length === 0
      ? {}
      : {
          rawQuinn: cpuPerGiB(
            raw.map((x) => x.cpuSender),
            raw.map((x) => x.cpuReceiver),
          ),
        }),
    ...(rawToFile.length === 0
      ? {}
      : {
          rawQuinnIntoFile: cpuPerGiB(
            rawToFile.map((x) => x.cpuSender),
            rawToFile.map((x) => x.cpuReceiver),
          ),
        }),
  };
  const clawCpu = cpuSecondsPerGiB['clawpeer']?.['both'];
  const rawCpu = cpuSecondsPerGiB['rawQuinn']?.['both'];
  if (clawCpu !== undefined && rawCpu !== undefined) ratios['clawpeerCpuPerRawQuinnCpu'] = ratio(clawCpu, rawCpu);
  return {
    case: spec.name,
    description: spec.description,
    files: spec.files,
    bytes: spec.bytes,
    runs,
    results: rows,
    ratios,
    cpuSecondsPerGiB,
  };
}

export async function main(options: TransferBenchOptions = {}): Promise<Record<string, unknown>> {
  const smoke = options.smoke === true;
  const o = options;
  const log: Log = (msg) => {
    if (options.verbose === true) process.stderr.write(`${msg}\n`);
  };
  const runs = options.runs ?? (smoke ? 1 : 3);
  const bigBytes = smoke ? SMOKE_BIG_BYTES : BIG_BYTES;
  const smallFiles = smoke ? SMOKE_SMALL_FILES : SMALL_FILES;
  const useSsh = !smoke && options.noSsh !== true;
  const cases = (['big', 'small'] as const).filter((c) => options.only === undefined || options.only === c);
  extraNodeFlags = options.nodeFlags ?? [];
  const loadBefore = loadavg().map((x) => round(x, 2));
  const conditions = machineConditions();
  const root = await mkdtemp(join(tmpdir(), 'clawpeer-bench-transfer-'));
  let ssh: SshSetup | undefined;
  let setup: ClawpeerSetup | undefined;
  const fileCreate = fileCreateCondition(root);
  const notes: string[] = [];
  try {
    const specs: CaseSpec[] = [];
    if (cases.includes('big')) {
      const file = join(root, 'src-big', 'big.bin');
      await mkdir(dirname(file), { recursive: true });
      log(`writing ${bigBytes / MiB} MiB of random bytes`);
      await writeRandomFile(file, bigBytes);
      specs.push({
        name: 'big',
        description: `one ${bigBytes / MiB} MiB incompressible file`,
        source: file,
        files: 1,
        bytes: bigBytes,
      });
    }
    if (cases.includes('small')) {
      const dir = join(root, 'src-small', 'tree');
      log(`writing ${smallFiles} files x ${SMALL_FILE_BYTES / KiB} KiB`);
      await makeSmallTree(dir, smallFiles);
      specs.push({
        name: 'small',
        description: `${smallFiles} files x ${SMALL_FILE_BYTES / KiB} KiB of random bytes in one directory`,
        source: dir,
        files: smallFiles,
        bytes: smallFiles * SMALL_FILE_BYTES,
      });
    }
    if (useSsh) {
      try {
        ssh = await startSshd(join(root, 'ssh'), log);
        log(`private sshd on 127.0.0.1:${ssh.port} (${ssh.versions['ssh'] ?? ''})`);
      } catch (err) {
        notes.push(`scp/rsync skipped: ${(err as Error).message}`);
        log(notes.at(-1)!);
      }
    } else {
      notes.push(smoke ? 'smoke mode: scp/rsync not run (no ssh tools needed in CI)' : 'scp/rsync not run (--no-ssh)');
    }
    if (options.cpuProfDir !== undefined) await mkdir(options.cpuProfDir, { recursive: true });
    // Two shares per run of each case: the default push and the --fsync=none push.
    setup = await setUpClawpeer(root, 2 * runs * specs.length, options.cpuProfDir);
    const results: Record<string, unknown>[] = [];
    for (const [i, spec] of specs.entries()) {
      log(`case ${spec.name}: ${spec.description}, ${runs} run(s)`);
      results.push(await runCase(spec, { root, setup, shareBase: 2 * i * runs, runs, ssh, o, log }));
    }
    const caps = DEFAULT_CAPABILITIES;
    const result = {
      bench: 'transfer',
      smoke,
      conditions: {
        ...conditions,
        loadAverageBefore: loadBefore,
        loadAverageAfter: loadavg().map((x) => round(x, 2)),
        note: "shared 2-core machine: other engineers' test runs may be running (see load averages [1, 5, 15 min]); runs of the tools are interleaved",
        network: 'loopback 127.0.0.1; sender and receiver are separate processes on the same 2 cores',
        data: 'incompressible (crypto.randomBytes, distinct 8 MiB blocks / distinct files), page-cached source, destination on the same disk',
        durability:
          'clawpeer fsyncs every file (batched) before rename; scp and rsync -a do not fsync; rsync -a --fsync fsyncs every file it writes (a like-for-like baseline)',
        fileCreateMicros: fileCreate,
        clawpeer: {
          streams: options.streams ?? 'CLI default',
          window: options.window ?? 'CLI default',
          chunking: caps.chunking[0],
          maxWindowChunks: caps.maxWindowChunks,
          maxStreams: caps.maxStreams,
          aead: caps.aeadSuites[0],
          transport: 'quic (quinn)',
          nodeFlags: extraNodeFlags,
          quinnTuning: QUINN_TUNING_DEFAULTS,
          cliLauncher: CLI_LAUNCHER,
        },
        ssh:
          ssh === undefined
            ? undefined
            : {
                ...ssh.versions,
                installedByThisRun: ssh.installed,
                options: 'OpenSSH defaults, private sshd on 127.0.0.1',
              },
        notes,
      },
      cases: results,
    };
    const outFile = options.outFile ?? (smoke ? undefined : 'transfer');
    if (outFile !== undefined) {
      const written = outFile.includes('/') ? await writeJsonFile(outFile, result) : await writeResult(outFile, result);
      log(`wrote ${written}`);
    }
    return result;
  } finally {
    await setup?.listener.stop();
    await ssh?.stop();
    if (options.keep !== true) await rm(root, { recursive: true, force: true });
    else log(`kept ${root}`);
  }
}

runAsScript(import.meta.url, ({ argv, smoke, has, numbers, texts }) => {
  const sinkAt = argv.indexOf(SINK_FLAG);
  if (sinkAt >= 0) return rawQuinnSink(argv[sinkAt + 1]);
  const only = texts({ only: '--only' }).only;
  const { nodeFlags } = texts({ nodeFlags: '--node-flags' });
  return main({
    smoke,
    verbose: true,
    noSsh: has('--no-ssh'),
    keep: has('--keep'),
    ...numbers({ runs: '--runs', streams: '--streams', window: '--window' }),
    ...(only === 'big' || only === 'small' ? { only } : {}),
    ...texts({ cpuProfDir: '--cpu-prof', outFile: '--out' }),
    ...(nodeFlags === undefined ? {} : { nodeFlags: nodeFlags.split(' ').filter((f) => f !== '') }),
  });
});
