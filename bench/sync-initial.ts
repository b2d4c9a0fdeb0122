// Macro benchmark of a first `clawpeer sync` of a many-file tree (issue 33, item 4) against rsync
// over ssh, side by side in one run, with the CPU each clawpeer process spends.
//
// bench/sync.ts times the initial sync once, inside a longer sequence; this bench repeats only
// that case, so it has medians: each round syncs the same tree (10,000 x 4 KiB incompressible
// files, 100 per leaf directory, as bench/sync.ts) into a fresh destination four ways,
// interleaved so a burst of load on this shared machine hits them alike:
//   - clawpeer sync (default: received files fsynced in batches),
//   - clawpeer sync --fsync none (renames atomic, nothing fsynced, as rsync -a),
//   - rsync -a over a private sshd (no fsync),
//   - rsync -a --fsync (every file fsynced: the like-for-like baseline for the default).
// clawpeer syncs a fresh copy of the tree each time (copied untimed with cp -a: a synced folder
// keeps its revision log in .clawpeer/) into a fresh share of one listener. `sync` (untimed) runs
// between runs so one tool's dirty pages are not flushed on another's clock.
//
// What is timed: wall time of the client process (node start-up, connect, scan, reconciliation,
// transfer, publish; rsync: ssh start, key exchange, everything), and for clawpeer its CLI
// "seconds" (no start-up, no connect) and CPU seconds (user + system, all threads) of the client
// (reported by the process at exit) and of the listener (from /proc during the run).
// Goals (issue 33): clawpeer --fsync none <= 1.2x rsync; clawpeer (default) <= 1.0x rsync --fsync.
// Run: node <outDir>/bench/sync-initial.js [--smoke] [--files N] [--runs N] [--no-ssh]
//      [--cpu-prof DIR] [--out FILE] [--keep]
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { spawn } from 'node:child_process';
import { sshCommand, startSshd, type SshSetup } from './ssh-loopback.js';
import { FILE_BYTES, makeTree } from './sync.js';
import {
  CLI_LAUNCHER,
  procCpuSeconds,
  reportedAtExit,
  runCli,
  setUpClawpeer,
  syncDisks,
  type ClawpeerSetup,
} from './transfer.js';
import {
  fileCreateCondition,
  runAsScript,
  KiB,
  machineConditions,
  machineCpuSeconds,
  median,
  ratio,
  round,
  treeBytes,
  writeJsonFile,
  writeResult,
} from './common.js';

export interface SyncInitialOptions {
  /** 50 files, one run, no ssh tools; writes nothing unless outFile is set. */
  readonly smoke?: boolean;
  readonly files?: number;
  /** Rounds (default 3; smoke 1). */
  readonly runs?: number;
  readonly noSsh?: boolean;
  /** Both clawpeer processes with --cpu-prof, profiles in this directory. */
  readonly cpuProfDir?: string;
  /** Result file (default bench/results/sync-initial.json for a real run, none for smoke). */
  readonly outFile?: string;
  readonly keep?: boolean;
  readonly verbose?: boolean;
}

const DEFAULT_FILES = 10_000;
const SMOKE_FILES = 50;
const FILES_PER_DIR = 100;
const DIRS_PER_TOP = 10;
const RUN_TIMEOUT_MS = 15 * 60_000;
/** clawpeer's state inside a synced folder: rsync leaves it out. */
const CLAWPEER_STATE_GLOB = '.clawpeer*';

type Log = (msg: string) => void;

async function checkCopy(tool: string, source: string, dest: string): Promise<void> {
  const [a, b] = await Promise.all([treeBytes(source), treeBytes(dest)]);
  if (a.files !== b.files || a.bytes !== b.bytes)
    throw new Error(`${tool}: destination has ${b.files} files / ${b.bytes} bytes, source ${a.files} / ${a.bytes}`);
}

export interface ClawpeerSyncSample {
  readonly seconds: number;
  readonly processSeconds: number;
  readonly wireBytes: number;
  readonly cpuClient: number | undefined;
  readonly cpuListener: number | undefined;
  /** CPU seconds of the whole machine during the run (machineCpuSeconds). */
  readonly cpuMachine: number;
}

async function clawpeerSync(
  setup: ClawpeerSetup,
  localDir: string,
  share: number,
  o: SyncInitialOptions,
  profName: string,
  extra: readonly string[],
): Promise<ClawpeerSyncSample> {
  const cpu0 = procCpuSeconds(setup.listener.child.pid);
  const machine0 = machineCpuSeconds();
  const run = await runCli(
    ['--home', setup.senderHome, 'sync', localDir, `recv:s${share}`, '--json', ...extra],
    o.cpuProfDir === undefined ? {} : { cpuProfDir: o.cpuProfDir, profName },
  );
  const cpu1 = procCpuSeconds(setup.listener.child.pid);
  const cpuMachine = round(machineCpuSeconds() - machine0, 2);
  if (run.code !== 0) throw new Error(`clawpeer sync exited ${String(run.code)}: ${run.stderr}`);
  const done = JSON.parse(run.lines.at(-1) ?? '{}') as Record<string, unknown>;
  if (done['event'] !== 'done' || done['inSync'] !== true)
    throw new Error(`clawpeer sync: unexpected final line ${run.lines.at(-1) ?? ''}`);
  return {
    seconds: Number(done['seconds']),
    processSeconds: round(run.wallMs / 1000, 3),
    wireBytes: Number(done['wireBytes']),
    cpuClient: reportedAtExit(run.stderr).cpuSeconds,
    cpuListener: cpu0 === undefined || cpu1 === undefined ? undefined : round(cpu1 - cpu0, 2),
    cpuMachine,
  };
}

/** One rsync run: wall seconds and the whole machine's CPU seconds (ssh, sshd and both rsyncs). */
function rsyncSync(
  ssh: SshSetup,
  source: string,
  dest: string,
  fsync: boolean,
): Promise<{ seconds: number; cpuMachine: number }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const machine0 = machineCpuSeconds();
    const child = spawn(
      'rsync',
      [
        '-a',
        ...(fsync ? ['--fsync'] : []),
        `--exclude=${CLAWPEER_STATE_GLOB}`,
        '-e',
        sshCommand(ssh),
        `${source}/`,
        `127.0.0.1:${dest}/`,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), RUN_TIMEOUT_MS);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      if (code !== 0) reject(new Error(`rsync exited ${String(code)}: ${stderr}`));
      else resolve({ seconds: (performance.now() - t0) / 1000, cpuMachine: round(machineCpuSeconds() - machine0, 2) });
    });
  });
}

/** A fresh copy of `source` (page-cached, no .clawpeer state) for one clawpeer sync. */
function freshCopy(source: string, dest: string): void {
  const r = spawnSync('cp', ['-a', source, dest]);
  if (r.status !== 0) throw new Error(`cp -a ${source} ${dest} failed: ${r.stderr.toString()}`);
}

const cores = cpus().length;

/** The machine's CPU seconds of each run, their median, and that median over the cores (a floor on wall time). */
function machineCpuRow(all: readonly number[]): Record<string, unknown> {
  const m = median([...all]);
  return { cpuSecondsMachineAll: all, cpuSecondsMachineMedian: round(m, 2), cpuFloorSeconds: round(m / cores, 3) };
}

const perThousand = (cpu: number | undefined, files: number): number | undefined =>
  cpu === undefined ? undefined : round((cpu / files) * 1000, 3);

export async function main(options: SyncInitialOptions = {}): Promise<Record<string, unknown>> {
  const smoke = options.smoke === true;
  const log: Log = (msg) => {
    if (options.verbose === true) process.stderr.write(`${msg}\n`);
  };
  const files = options.files ?? (smoke ? SMOKE_FILES : DEFAULT_FILES);
  const runs = options.runs ?? (smoke ? 1 : 3);
  const useSsh = !smoke && options.noSsh !== true;
  const loadBefore = loadavg().map((x) => round(x, 2));
  const root = await mkdtemp(join(tmpdir(), 'clawpeer-bench-sync-initial-'));
  const fileCreate = fileCreateCondition(root);
  const notes: string[] = [];
  let ssh: SshSetup | undefined;
  let setup: ClawpeerSetup | undefined;
  try {
    const source = join(root, 'src');
    log(`writing ${files} files x ${FILE_BYTES / KiB} KiB`);
    await makeTree(source, files);
    if (useSsh) ssh = await startSshd(join(root, 'ssh'), log);
    else notes.push(smoke ? 'smoke mode: rsync not run' : 'rsync not run (--no-ssh)');
    if (options.cpuProfDir !== undefined) await mkdir(options.cpuProfDir, { recursive: true });
    setup = await setUpClawpeer(root, 2 * runs, options.cpuProfDir);
    const claw: ClawpeerSyncSample[] = [];
    const clawNone: ClawpeerSyncSample[] = [];
    const rsync: number[] = [];
    const rsyncFsync: number[] = [];
    const rsyncCpu: number[] = [];
    const rsyncFsyncCpu: number[] = [];
    for (let r = 0; r < runs; r++) {
      for (const [share, extra, into, tag] of [
        [2 * r, [], claw, ''],
        [2 * r + 1, ['--fsync', 'none'], clawNone, ' --fsync none'],
      ] as const) {
        const local = join(root, `local-${share}`);
        freshCopy(source, local);
        syncDisks();
        const s = await clawpeerSync(setup, local, share, options, `sync-${share}`, extra);
        await checkCopy(`clawpeer sync${tag}`, source, setup.shareDirs[share] ?? '');
        into.push(s);
        log(
          `  run ${r + 1}/${runs}: clawpeer${tag} process ${s.processSeconds} s (seconds ${s.seconds}; cpu: client ${String(s.cpuClient)} s, listener ${String(s.cpuListener)} s, machine ${s.cpuMachine} s)`,
        );
      }
      if (ssh !== undefined) {
        for (const fsync of [false, true]) {
          const dest = join(root, `rsync-${r}-${fsync ? 'fsync' : 'plain'}`);
          await mkdir(dest, { recursive: true });
          syncDisks();
          const { seconds: secs, cpuMachine } = await rsyncSync(ssh, source, dest, fsync);
          await checkCopy('rsync', source, dest);
          (fsync ? rsyncFsync : rsync).push(round(secs, 3));
          (fsync ? rsyncFsyncCpu : rsyncCpu).push(cpuMachine);
          log(
            `  run ${r + 1}/${runs}: rsync${fsync ? ' --fsync' : ''} ${round(secs, 3)} s (machine cpu ${cpuMachine} s)`,
          );
        }
      }
    }
    const row = (samples: readonly ClawpeerSyncSample[]): Record<string, unknown> => ({
      processSecondsAll: samples.map((s) => s.processSeconds),
      processSecondsMedian: round(median(samples.map((s) => s.processSeconds)), 3),
      cliSecondsAll: samples.map((s) => s.seconds),
      cpuSecondsClient: samples.map((s) => s.cpuClient),
      cpuSecondsListener: samples.map((s) => s.cpuListener),
      cpuPer1000FilesClientMedian: perThousand(median(samples.map((s) => s.cpuClient ?? Number.NaN)), files),
      cpuPer1000FilesListenerMedian: perThousand(median(samples.map((s) => s.cpuListener ?? Number.NaN)), files),
      wireBytes: samples.map((s) => s.wireBytes),
      ...machineCpuRow(samples.map((s) => s.cpuMachine)),
    });
    const ratios: Record<string, number> = {};
    if (rsync.length > 0) {
      ratios['fsyncNoneProcessPerRsync'] = ratio(median(clawNone.map((s) => s.processSeconds)), median(rsync));
      ratios['defaultProcessPerRsyncFsync'] = ratio(median(claw.map((s) => s.processSeconds)), median(rsyncFsync));
      ratios['defaultProcessPerRsync'] = ratio(median(claw.map((s) => s.processSeconds)), median(rsync));
      // What overlapping every phase could reach at best: the machine's CPU of a run over its cores.
      ratios['fsyncNoneCpuFloorPerRsync'] = ratio(median(clawNone.map((s) => s.cpuMachine)) / cores, median(rsync));
      ratios['defaultCpuFloorPerRsyncFsync'] = ratio(median(claw.map((s) => s.cpuMachine)) / cores, median(rsyncFsync));
      ratios['fsyncNoneMachineCpuPerRsync'] = ratio(median(clawNone.map((s) => s.cpuMachine)), median(rsyncCpu));
      ratios['defaultMachineCpuPerRsyncFsync'] = ratio(median(claw.map((s) => s.cpuMachine)), median(rsyncFsyncCpu));
    }
    const result = {
      bench: 'sync-initial',
      smoke,
      conditions: {
        ...machineConditions(),
        loadAverageBefore: loadBefore,
        loadAverageAfter: loadavg().map((x) => round(x, 2)),
        note: "shared 2-core machine: other engineers' runs may be using the cores (load averages [1, 5, 15 min]); the four ways are interleaved in each round; CPU seconds are steadier than wall time",
        tree: {
          files,
          fileBytes: FILE_BYTES,
          layout: `d<top>/e<leaf>/f<i>.bin: ${FILES_PER_DIR} files per leaf directory, ${DIRS_PER_TOP} leaves per top directory`,
        },
        data: 'incompressible (crypto.randomBytes, distinct per file), page-cached source (clawpeer: a fresh cp -a copy per run), destinations on the same disk',
        network: 'loopback 127.0.0.1; client and listener (rsync: ssh and rsync processes) on the same 2 cores',
        fileCreateMicros: fileCreate,
        clawpeer: {
          command: 'sync LOCALDIR recv:sN --json [--fsync none] into a fresh share of one listener (--transport quic)',
          cliLauncher: CLI_LAUNCHER,
        },
        rsync:
          ssh === undefined
            ? undefined
            : {
                ...ssh.versions,
                command: `rsync -a [--fsync] --exclude=${CLAWPEER_STATE_GLOB} -e ssh SRC/ 127.0.0.1:DEST/`,
                installedByThisRun: ssh.installed,
              },
        runs,
        notes,
      },
      goals: 'clawpeer --fsync none <= 1.2x rsync; clawpeer default <= 1.0x rsync --fsync (process wall, medians)',
      clawpeer: row(claw),
      clawpeerFsyncNone: row(clawNone),
      rsync:
        rsync.length === 0
          ? undefined
          : { secondsAll: rsync, secondsMedian: round(median(rsync), 3), ...machineCpuRow(rsyncCpu) },
      rsyncFsync:
        rsyncFsync.length === 0
          ? undefined
          : { secondsAll: rsyncFsync, secondsMedian: round(median(rsyncFsync), 3), ...machineCpuRow(rsyncFsyncCpu) },
      ratios,
    };
    if (options.outFile !== undefined) log(`wrote ${await writeJsonFile(options.outFile, result)}`);
    else if (!smoke) log(`wrote ${await writeResult('sync-initial', result)}`);
    return result;
  } finally {
    await setup?.listener.stop();
    await ssh?.stop();
    if (options.keep !== true) await rm(root, { recursive: true, force: true });
    else log(`kept ${root}`);
  }
}

runAsScript(import.meta.url, ({ smoke, has, numbers, texts }) =>
  main({
    smoke,
    verbose: true,
    noSsh: has('--no-ssh'),
    keep: has('--keep'),
    ...numbers({ files: '--files', runs: '--runs' }),
    ...texts({ cpuProfDir: '--cpu-prof', outFile: '--out' }),
  }),
);
