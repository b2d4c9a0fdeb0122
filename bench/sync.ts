// Macro benchmark of `clawpeer sync` against `rsync -a` over ssh (issue 4, benchmarks 2 and 3):
// (2) a no-op sync of a many-file tree, goal: at most half of rsync's time; (3) 1% of the files
// changed: wire bytes and time against rsync.
//
// Both sides run on this machine through the real CLI (bin/clawpeer.cjs, i.e. the dist/ build):
// two homes paired both ways, a listener serving share `docs`, and `sync LOCALDIR alice:docs`.
// rsync runs against a private sshd on 127.0.0.1 (throwaway host and client keys in a temp dir).
//
// Sequence: write the tree (4 KiB incompressible files in nested directories); initial sync of
// each tool (timed once, reported separately); no-op syncs, interleaved clawpeer / rsync, median
// of `runs`; rewrite 1% of the files (every 100th, new random bytes, same size, new mtime); one
// sync of each tool. After every sync the destination is checked against the source.
//
// What is timed:
//   - clawpeer `seconds`: the CLI's own figure (sync start to done: scan, reconciliation,
//     transfer, publish); excludes node start-up and the QUIC connect/handshake.
//   - clawpeer `processSeconds` and rsync: wall time of the whole client process (start-up,
//     connect, authentication, everything). The goal ratio is taken on these (like for like).
// Wire bytes: clawpeer's `wireBytes`; rsync's `--stats` "Total bytes sent" + "received", which
// is rsync's protocol stream and leaves out ssh's own framing, MAC and key exchange (a few KiB).
// Durability: clawpeer publishes durably (fsync); rsync -a does not. `rsync -a --fsync` runs the
// initial and the 1% syncs into a destination of its own as the like-for-like baseline.
// Non-goals: CPU accounting.
// Smoke mode: 50 files, one run, no ssh tools, nothing written: seconds, for CI.
// Run: node <outDir>/bench/sync.js [--smoke] [--files N] [--runs N] [--no-ssh] [--keep]
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { sshCommand, startSshd, type SshSetup } from './ssh-loopback.js';
import {
  fileCreateCondition,
  runAsScript,
  KiB,
  machineConditions,
  median,
  ratio,
  REPO_ROOT,
  round,
  treeBytes,
  writeResult,
} from './common.js';

export interface SyncBenchOptions {
  /** 50 files, one run, no ssh tools; writes nothing. */
  readonly smoke?: boolean;
  /** Files in the tree (default 10,000; smoke 50). */
  readonly files?: number;
  /** Timed no-op runs per tool (default 3; smoke 1). */
  readonly runs?: number;
  /** Skip rsync (and never install anything). */
  readonly noSsh?: boolean;
  /** Keep the temp directory for inspection. */
  readonly keep?: boolean;
  /** Progress to stderr (default true when run from the command line). */
  readonly verbose?: boolean;
}

const DEFAULT_FILES = 10_000;
const SMOKE_FILES = 50;
export const FILE_BYTES = 4 * KiB;
/** Tree shape: files per leaf directory, leaf directories per top-level directory. */
const FILES_PER_DIR = 100;
const DIRS_PER_TOP = 10;
/** One file in this many is rewritten for benchmark 3 (1%). */
const CHANGE_EVERY_FILES = 100;
/** Untimed syncs through bob's listener, at most, until its watcher vouches for the folder (the first scans certify it). */
const RESIDENT_WARMUP_MAX = 10;
/** A sync (or rsync) that takes longer than this is a failure, ms. */
const RUN_TIMEOUT_MS = 15 * 60_000;
const CLI = join(REPO_ROOT, 'bin', 'clawpeer.cjs');
/** clawpeer's state inside a synced folder (.clawpeer/, .clawpeer-tmp-*): rsync leaves it out. */
const CLAWPEER_STATE_GLOB = '.clawpeer*';

type Log = (msg: string) => void;

// ---------------------------------------------------------------------------------------------
// The tree

/** Where file `i` of a tree of `files` lies: d<top>/e<leaf>/f<i>.bin (shared with bench/sync-initial.ts). */
export function relPath(i: number, files: number): string {
  const width = String(files - 1).length;
  const leaf = Math.floor(i / FILES_PER_DIR);
  return join(
    `d${Math.floor(leaf / DIRS_PER_TOP)}`,
    `e${leaf % DIRS_PER_TOP}`,
    `f${String(i).padStart(width, '0')}.bin`,
  );
}

/** Writes a tree of `files` incompressible files of FILE_BYTES under `dir`. */
export async function makeTree(dir: string, files: number): Promise<void> {
  for (let i = 0; i < files; i++) {
    const file = join(dir, relPath(i, files));
    if (i % FILES_PER_DIR === 0) await mkdir(join(file, '..'), { recursive: true });
    await writeFile(file, randomBytes(FILE_BYTES));
  }
}

/** Rewrites every CHANGE_EVERY_FILES-th file with new random bytes of the same size; returns their paths. */
async function changeFiles(dir: string, files: number): Promise<string[]> {
  const changed: string[] = [];
  for (let i = 0; i < files; i += CHANGE_EVERY_FILES) {
    changed.push(relPath(i, files));
    await writeFile(join(dir, relPath(i, files)), randomBytes(FILE_BYTES));
  }
  return changed;
}

/** Throws unless `dest` holds as many files and bytes as `source` and the `sample` files are equal. */
async function checkCopy(tool: string, source: string, dest: string, sample: readonly string[]): Promise<void> {
  const [a, b] = await Promise.all([treeBytes(source), treeBytes(dest)]);
  if (a.files !== b.files || a.bytes !== b.bytes)
    throw new Error(`${tool}: destination has ${b.files} files / ${b.bytes} bytes, source ${a.files} / ${a.bytes}`);
  for (const rel of sample) {
    if (!(await readFile(join(source, rel))).equals(await readFile(join(dest, rel))))
      throw new Error(`${tool}: ${rel} differs from the source`);
  }
}

// ---------------------------------------------------------------------------------------------
// Processes

interface ProcessRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly wallSeconds: number;
}

function runProcess(cmd: string, args: readonly string[]): Promise<ProcessRun> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), RUN_TIMEOUT_MS);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, wallSeconds: (performance.now() - t0) / 1000 });
    });
  });
}

async function cliJson(args: readonly string[]): Promise<{ lines: Record<string, unknown>[]; wallSeconds: number }> {
  const r = await runProcess(process.execPath, [CLI, ...args]);
  if (r.code !== 0) throw new Error(`clawpeer ${args.join(' ')} exited ${String(r.code)}: ${r.stderr}`);
  const lines = r.stdout
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { lines, wallSeconds: r.wallSeconds };
}

// ---------------------------------------------------------------------------------------------
// clawpeer

interface ClawpeerSetup {
  readonly bobHome: string;
  readonly shareDir: string;
  readonly listener: ListenerProcess;
  stop(): Promise<void>;
}

interface ListenerProcess {
  readonly child: ChildProcess;
  readonly port: number;
  stop(): Promise<void>;
}

/** `clawpeer listen` of `home` on a free loopback port, serving `shares` (NAME=DIR). */
async function startListenerProcess(home: string, shares: readonly string[]): Promise<ListenerProcess> {
  const child = spawn(
    process.execPath,
    [
      CLI,
      '--home',
      home,
      'listen',
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      ...shares.flatMap((x) => ['--share', x]),
      '--json',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<void>((res) => child.on('close', () => res()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  const port = await new Promise<number>((resolve, reject) => {
    createInterface({ input: child.stdout }).once('line', (line) =>
      resolve(Number((JSON.parse(line) as Record<string, unknown>)['port'])),
    );
    child.once('close', (code) => reject(new Error(`listener exited ${String(code)} before ready: ${stderr}`)));
  });
  return { child, port, stop };
}

/** alice listens with share docs=shareDir; bob has alice paired at the listener's address. */
async function setUpClawpeer(root: string): Promise<ClawpeerSetup> {
  const aliceHome = join(root, 'home-alice');
  const bobHome = join(root, 'home-bob');
  const shareDir = join(root, 'clawpeer-dest');
  await mkdir(shareDir, { recursive: true });
  const aliceId = String((await cliJson(['--home', aliceHome, 'init', '--json'])).lines[0]?.['id']);
  const bobId = String((await cliJson(['--home', bobHome, 'init', '--json'])).lines[0]?.['id']);
  await cliJson(['--home', aliceHome, 'pair', 'add', bobId, '--name', 'bob', '--json']);
  const listener = await startListenerProcess(aliceHome, [`docs=${shareDir}`]);
  await cliJson([
    '--home',
    bobHome,
    'pair',
    'add',
    aliceId,
    '--name',
    'alice',
    '--addr',
    `127.0.0.1:${listener.port}`,
    '--json',
  ]);
  return { bobHome, shareDir, listener, stop: () => listener.stop() };
}

interface ClawpeerSync {
  readonly seconds: number;
  readonly processSeconds: number;
  readonly wireBytes: number;
  readonly roundTrips: number;
  readonly reconcileBytes: number;
  readonly revisionsSent: number;
  readonly chunksSent: number;
  /** The local folder was scanned (false: a listener's watcher vouched it unchanged). */
  readonly scanned: boolean;
  /** Run by a listener of bob's home (its control socket), not in the CLI's process. */
  readonly resident: boolean;
}

async function clawpeerSync(setup: ClawpeerSetup, localDir: string): Promise<ClawpeerSync> {
  const r = await cliJson(['--home', setup.bobHome, 'sync', localDir, 'alice:docs', '--json']);
  const done = r.lines.at(-1) ?? {};
  if (done['event'] !== 'done' || done['inSync'] !== true)
    throw new Error(
      `clawpeer sync: unexpected final line ${JSON.stringify(done)} (all: ${JSON.stringify(r.lines.slice(0, 5))})`,
    );
  const n = (k: string): number => Number(done[k]);
  return {
    seconds: n('seconds'),
    processSeconds: round(r.wallSeconds, 3),
    wireBytes: n('wireBytes'),
    roundTrips: n('roundTrips'),
    reconcileBytes: n('reconcileBytes'),
    revisionsSent: n('revisionsSent'),
    chunksSent: n('chunksSent'),
    scanned: done['scanned'] === true,
    resident: done['resident'] === true,
  };
}

// ---------------------------------------------------------------------------------------------
// rsync over a private sshd

interface RsyncRun {
  readonly seconds: number;
  readonly wireBytes: number;
  readonly bytesSent: number;
  readonly bytesReceived: number;
  readonly filesTransferred: number;
}

/** `fsync`: rsync's --fsync (every written file), the durability clawpeer always gives. */
async function rsyncSync(ssh: SshSetup, source: string, dest: string, fsync = false): Promise<RsyncRun> {
  const r = await runProcess('rsync', [
    '-a',
    ...(fsync ? ['--fsync'] : []),
    '--stats',
    `--exclude=${CLAWPEER_STATE_GLOB}`,
    '-e',
    sshCommand(ssh),
    `${source}/`,
    `127.0.0.1:${dest}/`,
  ]);
  if (r.code !== 0) throw new Error(`rsync exited ${String(r.code)}: ${r.stderr}`);
  const num = (label: string): number => {
    const m = new RegExp(`^${label}: ([\\d,]+)`, 'm').exec(r.stdout);
    if (m === null) throw new Error(`rsync --stats has no "${label}": ${r.stdout}`);
    return Number(m[1]!.replace(/,/g, ''));
  };
  const sent = num('Total bytes sent');
  const received = num('Total bytes received');
  return {
    seconds: round(r.wallSeconds, 3),
    wireBytes: sent + received,
    bytesSent: sent,
    bytesReceived: received,
    filesTransferred: num('Number of regular files transferred'),
  };
}

// ---------------------------------------------------------------------------------------------
// The run

export async function main(options: SyncBenchOptions = {}): Promise<Record<string, unknown>> {
  const smoke = options.smoke === true;
  const log: Log = (msg) => {
    if (options.verbose === true) process.stderr.write(`${msg}\n`);
  };
  const files = options.files ?? (smoke ? SMOKE_FILES : DEFAULT_FILES);
  const runs = options.runs ?? (smoke ? 1 : 3);
  const useSsh = !smoke && options.noSsh !== true;
  const loadBefore = loadavg().map((x) => round(x, 2));
  const conditions = machineConditions();
  const root = await mkdtemp(join(tmpdir(), 'clawpeer-bench-sync-'));
  const fileCreate = fileCreateCondition(root);
  const notes: string[] = [];
  let setup: ClawpeerSetup | undefined;
  let ssh: SshSetup | undefined;
  let bobListener: ListenerProcess | undefined;
  try {
    const source = join(root, 'local');
    log(`writing ${files} files x ${FILE_BYTES / KiB} KiB`);
    await makeTree(source, files);
    const sample = [relPath(0, files), relPath(files - 1, files)];
    if (useSsh) {
      try {
        ssh = await startSshd(join(root, 'ssh'), log);
      } catch (err) {
        notes.push(`rsync skipped: ${(err as Error).message}`);
        log(notes.at(-1)!);
      }
    } else {
      notes.push(smoke ? 'smoke mode: rsync not run (no ssh tools needed in CI)' : 'rsync not run (--no-ssh)');
    }
    setup = await setUpClawpeer(root);
    const rsyncDest = join(root, 'rsync-dest');
    await mkdir(rsyncDest, { recursive: true });
    const rsyncFsyncDest = join(root, 'rsync-fsync-dest'); // synced initially and after the change only
    await mkdir(rsyncFsyncDest, { recursive: true });

    // Initial syncs (everything travels): timed once, reported apart.
    const clawInitial = await clawpeerSync(setup, source);
    await checkCopy('clawpeer initial sync', source, setup.shareDir, sample);
    log(
      `initial: clawpeer ${clawInitial.seconds} s (process ${clawInitial.processSeconds} s), ${clawInitial.wireBytes} wire bytes`,
    );
    const rsyncInitial = ssh === undefined ? undefined : await rsyncSync(ssh, source, rsyncDest);
    if (rsyncInitial !== undefined) {
      await checkCopy('rsync initial', source, rsyncDest, sample);
      log(`initial: rsync ${rsyncInitial.seconds} s, ${rsyncInitial.wireBytes} wire bytes`);
    }
    const rsyncFsyncInitial = ssh === undefined ? undefined : await rsyncSync(ssh, source, rsyncFsyncDest, true);
    if (rsyncFsyncInitial !== undefined) {
      await checkCopy('rsync --fsync initial', source, rsyncFsyncDest, sample);
      log(`initial: rsync --fsync ${rsyncFsyncInitial.seconds} s`);
    }

    // Benchmark 2: no-op syncs, interleaved so a burst of load hits both tools alike.
    const clawpeer = setup;
    const noopRounds = async (tag: string): Promise<{ claw: ClawpeerSync[]; rsync: RsyncRun[] }> => {
      const claw: ClawpeerSync[] = [];
      const rsync: RsyncRun[] = [];
      for (let r = 0; r < runs; r++) {
        const c = await clawpeerSync(clawpeer, source);
        claw.push(c);
        log(
          `${tag}no-op ${r + 1}/${runs}: clawpeer ${c.seconds} s (process ${c.processSeconds} s, scanned ${String(c.scanned)}), ${c.wireBytes} wire bytes, ${c.roundTrips} round trips`,
        );
        if (ssh !== undefined) {
          rsync.push(await rsyncSync(ssh, source, rsyncDest));
          log(`${tag}no-op ${r + 1}/${runs}: rsync ${rsync.at(-1)!.seconds} s, ${rsync.at(-1)!.wireBytes} wire bytes`);
        }
      }
      return { claw, rsync };
    };
    // Benchmark 3: 1% of the files rewritten, then each tool's copy checked.
    const changedRound = async (
      tag: string,
    ): Promise<{
      changed: string[];
      claw: ClawpeerSync;
      rsync: RsyncRun | undefined;
      rsyncFsync: RsyncRun | undefined;
    }> => {
      const changed = await changeFiles(source, files);
      const claw = await clawpeerSync(clawpeer, source);
      await checkCopy(`clawpeer ${tag}1% sync`, source, clawpeer.shareDir, changed);
      log(
        `${tag}1% changed (${changed.length} files): clawpeer ${claw.seconds} s (process ${claw.processSeconds} s), ${claw.wireBytes} wire bytes`,
      );
      const rsync = ssh === undefined ? undefined : await rsyncSync(ssh, source, rsyncDest);
      if (rsync !== undefined) {
        await checkCopy(`rsync ${tag}1%`, source, rsyncDest, changed);
        log(`${tag}1% changed: rsync ${rsync.seconds} s, ${rsync.wireBytes} wire bytes`);
      }
      const rsyncFsync = ssh === undefined ? undefined : await rsyncSync(ssh, source, rsyncFsyncDest, true);
      if (rsyncFsync !== undefined) {
        await checkCopy(`rsync --fsync ${tag}1%`, source, rsyncFsyncDest, changed);
        log(`${tag}1% changed: rsync --fsync ${rsyncFsync.seconds} s`);
      }
      return { changed, claw, rsync, rsyncFsync };
    };
    const { claw: clawNoop, rsync: rsyncNoop } = await noopRounds('');
    const { changed, claw: clawChanged, rsync: rsyncChanged, rsyncFsync: rsyncFsyncChanged } = await changedRound('');

    // Benchmarks 2 and 3 again with bob's own listener serving the folder: `sync` runs in it, and
    // its watcher lets an unchanged folder go unscanned (how a folder left syncing is used).
    bobListener = await startListenerProcess(setup.bobHome, [`local=${source}`]);
    let warmupSyncs = 0;
    for (; warmupSyncs < RESIDENT_WARMUP_MAX; warmupSyncs++) {
      const w = await clawpeerSync(setup, source);
      if (!w.resident) throw new Error("bob's listener did not take the sync (resident: false)");
      if (!w.scanned) break;
    }
    log(`resident: ${warmupSyncs + 1} untimed syncs until the watcher vouched for the folder`);
    const { claw: residentNoop, rsync: rsyncNoop2 } = await noopRounds('resident ');
    const {
      changed: changed2,
      claw: residentChanged,
      rsync: rsyncChanged2,
      rsyncFsync: rsyncFsyncChanged2,
    } = await changedRound('resident ');
    await bobListener.stop();
    bobListener = undefined;

    const noopProcess = median(clawNoop.map((c) => c.processSeconds));
    const noopSeconds = median(clawNoop.map((c) => c.seconds));
    const rsyncNoopMedian = median(rsyncNoop.map((x) => x.seconds));
    const ratios: Record<string, number> = {};
    if (rsyncNoop.length > 0 && rsyncChanged !== undefined) {
      ratios['noopProcessTimePerRsync'] = ratio(noopProcess, rsyncNoopMedian);
      ratios['noopCliSecondsPerRsync'] = ratio(noopSeconds, rsyncNoopMedian);
      ratios['noopWireBytesPerRsync'] = ratio(
        median(clawNoop.map((c) => c.wireBytes)),
        median(rsyncNoop.map((x) => x.wireBytes)),
      );
      ratios['changedProcessTimePerRsync'] = ratio(clawChanged.processSeconds, rsyncChanged.seconds);
      ratios['changedCliSecondsPerRsync'] = ratio(clawChanged.seconds, rsyncChanged.seconds);
      ratios['changedWireBytesPerRsync'] = ratio(clawChanged.wireBytes, rsyncChanged.wireBytes);
    }
    if (rsyncNoop2.length > 0 && rsyncChanged2 !== undefined && rsyncFsyncChanged2 !== undefined) {
      ratios['residentNoopProcessTimePerRsync'] = ratio(
        median(residentNoop.map((c) => c.processSeconds)),
        median(rsyncNoop2.map((x) => x.seconds)),
      );
      ratios['residentChangedProcessTimePerRsync'] = ratio(residentChanged.processSeconds, rsyncChanged2.seconds);
      ratios['residentChangedProcessTimePerRsyncFsync'] = ratio(
        residentChanged.processSeconds,
        rsyncFsyncChanged2.seconds,
      );
    }
    if (rsyncInitial !== undefined)
      ratios['initialProcessTimePerRsync'] = ratio(clawInitial.processSeconds, rsyncInitial.seconds);
    if (rsyncFsyncInitial !== undefined && rsyncFsyncChanged !== undefined) {
      ratios['initialProcessTimePerRsyncFsync'] = ratio(clawInitial.processSeconds, rsyncFsyncInitial.seconds);
      ratios['changedProcessTimePerRsyncFsync'] = ratio(clawChanged.processSeconds, rsyncFsyncChanged.seconds);
    }
    const result = {
      bench: 'sync',
      smoke,
      conditions: {
        ...conditions,
        loadAverageBefore: loadBefore,
        loadAverageAfter: loadavg().map((x) => round(x, 2)),
        note: "shared 2-core machine: other engineers' runs may be using the cores (see load averages [1, 5, 15 min]); no-op runs of the two tools are interleaved",
        tree: {
          files,
          fileBytes: FILE_BYTES,
          totalBytes: files * FILE_BYTES,
          layout: `d<top>/e<leaf>/f<i>.bin: ${FILES_PER_DIR} files per leaf directory, ${DIRS_PER_TOP} leaves per top directory`,
        },
        data: 'incompressible (crypto.randomBytes, distinct per file), page-cached source, both destinations on the same disk',
        change: `every ${CHANGE_EVERY_FILES}th file rewritten whole with new random bytes, same size, new mtime (${changed.length} files)`,
        network: 'loopback 127.0.0.1; both sides of each tool are separate processes on the same cores',
        fileCreateMicros: fileCreate,
        clawpeer: {
          cli: 'node bin/clawpeer.cjs (dist/ build)',
          command: 'sync LOCALDIR alice:docs --json (two-way, transport auto)',
          listener: 'listen --host 127.0.0.1 --port 0 --share docs=DIR',
        },
        rsync:
          ssh === undefined
            ? undefined
            : {
                ...ssh.versions,
                command: `rsync -a --stats --exclude=${CLAWPEER_STATE_GLOB} -e ssh SRC/ 127.0.0.1:DEST/`,
                sshd: 'private sshd on 127.0.0.1, OpenSSH defaults, ed25519 keys',
                installedByThisRun: ssh.installed,
              },
        measures: {
          clawpeerSeconds: 'CLI "seconds": sync start to done (no node start-up, no connect)',
          clawpeerProcessSeconds: 'wall time of the sync client process (node start-up, connect, everything)',
          rsyncSeconds: 'wall time of the rsync process (ssh start, key exchange, everything)',
          clawpeerWireBytes: "the CLI's wireBytes",
          rsyncWireBytes:
            'rsync --stats "Total bytes sent" + "Total bytes received" (rsync protocol stream; excludes ssh framing, MAC and key exchange)',
          durability:
            'clawpeer publishes received files durably; rsync -a does not fsync; rsync -a --fsync (initial and 1% only, into its own destination) fsyncs every file it writes, the like-for-like baseline',
        },
        runs,
        notes,
      },
      initial: { clawpeer: clawInitial, rsync: rsyncInitial, rsyncFsync: rsyncFsyncInitial },
      noop: {
        goal: "clawpeer at most half of rsync's time (noopProcessTimePerRsync <= 0.5)",
        clawpeer: { all: clawNoop, secondsMedian: round(noopSeconds, 3), processSecondsMedian: round(noopProcess, 3) },
        rsync: rsyncNoop.length === 0 ? undefined : { all: rsyncNoop, secondsMedian: round(rsyncNoopMedian, 3) },
      },
      resident: {
        setup:
          "bob runs `listen --share local=LOCALDIR` too: `clawpeer sync LOCALDIR alice:docs` runs in that listener (control socket in bob's home), whose watcher vouches for an unchanged folder and whose revision log stays open; alice's listener likewise",
        warmupSyncs: warmupSyncs + 1,
        noop: {
          goal: "clawpeer at most half of rsync's time (residentNoopProcessTimePerRsync <= 0.5)",
          clawpeer: {
            all: residentNoop,
            secondsMedian: round(median(residentNoop.map((c) => c.seconds)), 3),
            processSecondsMedian: round(median(residentNoop.map((c) => c.processSeconds)), 3),
          },
          rsync:
            rsyncNoop2.length === 0
              ? undefined
              : { all: rsyncNoop2, secondsMedian: round(median(rsyncNoop2.map((x) => x.seconds)), 3) },
        },
        changed1pct: {
          changedFiles: changed2.length,
          clawpeer: residentChanged,
          rsync: rsyncChanged2,
          rsyncFsync: rsyncFsyncChanged2,
        },
      },
      changed1pct: {
        changedFiles: changed.length,
        changedBytes: changed.length * FILE_BYTES,
        clawpeer: clawChanged,
        rsync: rsyncChanged,
        rsyncFsync: rsyncFsyncChanged,
      },
      ratios,
    };
    if (!smoke) log(`wrote ${await writeResult('sync', result)}`);
    return result;
  } finally {
    await bobListener?.stop();
    await setup?.stop();
    await ssh?.stop();
    if (options.keep !== true) await rm(root, { recursive: true, force: true });
    else log(`kept ${root}`);
  }
}

runAsScript(import.meta.url, ({ smoke, has, numbers }) =>
  main({
    smoke,
    verbose: true,
    noSsh: has('--no-ssh'),
    keep: has('--keep'),
    ...numbers({ files: '--files', runs: '--runs' }),
  }),
);
