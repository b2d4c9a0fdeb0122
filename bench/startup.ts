// Start-up cost of the CLI (issue 33 compares whole processes with scp and rsync, so every
// millisecond before the first packet counts; a Syncthing-like user polls `status`, scripts call
// `ls` and `pair list`): each case is one whole `node bin/clawpeer.cjs` process, as a user runs
// it, against a fresh loopback QUIC listener (setUpClawpeer).
//
// Cases: `node -e 0` (the floor: Node's own start, in the same run), --version, pair list, a push
// of a 3-byte file, and the first sync of a 5-file folder (a fresh folder and share each run);
// then status (of the listener's home: it asks the listener), id, folder list, folder log (of a
// folder no sync has touched) and ls of a share (a dial to the listener). The commands
// plain-fast-path.ts runs are also run "(yargs)": with CLAWPEER_NO_FAST_PATH=1, the launcher
// skips the fast paths and yargs parses the command (the command's own code is this build's).
// Measured per process: wall (spawn to exit) and CPU seconds (user + system, all threads, from
// process.cpuUsage() in an exit hook preloaded with --require). Medians of the runs.
// --base DIR: a second checkout (its bin/ and built dist/, e.g. a copy of main's) runs each case
// interleaved with this one, so both see the same load: an A/B in one run.
// Run: node <outDir>/bench/startup.js [--smoke] [--runs N] [--base DIR]  (writes bench/results/startup.json)
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { machineConditions, median, REPO_ROOT, round, runAsScript, writeResult } from './common.js';
import { setUpClawpeer } from './transfer.js';

export interface StartupBenchOptions {
  /** One run, no --base, nothing written: for CI. */
  readonly smoke?: boolean;
  /** Runs per case and checkout (default 9; smoke 1). */
  readonly runs?: number;
  /** Another checkout to run interleaved with this one. */
  readonly baseDir?: string;
  readonly verbose?: boolean;
}

const CPU_MARK = 'CLAWPEER_STARTUP_CPU ';
const FOLDER_FILES = 5;

interface Sample {
  readonly wallSeconds: number;
  readonly cpuSeconds: number;
}

/** The environment of a "(yargs)" case: the launcher runs the full CLI, no fast path. */
const NO_FAST_PATH = { CLAWPEER_NO_FAST_PATH: '1' };

function runOnce(command: readonly string[], preload: string, cwd: string, env?: NodeJS.ProcessEnv): Sample {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, ['--require', preload, ...command], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, ...env },
  });
  const wallSeconds = (performance.now() - t0) / 1000;
  if (r.status !== 0) throw new Error(`${command.join(' ')} exited ${String(r.status)}: ${r.stderr}`);
  const line = r.stderr.split('\n').find((l) => l.startsWith(CPU_MARK));
  const u = JSON.parse(line?.slice(CPU_MARK.length) ?? '{"user":0,"system":0}') as { user: number; system: number };
  return { wallSeconds, cpuSeconds: (u.user + u.system) / 1e6 };
}

const summary = (samples: readonly Sample[]): Record<string, number> => ({
  wallSeconds: round(median(samples.map((s) => s.wallSeconds)), 3),
  cpuSeconds: round(median(samples.map((s) => s.cpuSeconds)), 3),
});

export async function main(options: StartupBenchOptions = {}): Promise<Record<string, unknown>> {
  const smoke = options.smoke === true;
  const runs = options.runs ?? (smoke ? 1 : 9);
  const checkouts: [string, string][] = [['this', REPO_ROOT]];
  if (!smoke && options.baseDir !== undefined) checkouts.push(['base', options.baseDir]);
  const log = options.verbose === true ? (m: string) => process.stderr.write(`${m}\n`) : () => undefined;
  const conditions = machineConditions();
  const loadBefore = loadavg().map((x) => round(x, 2));
  const root = await mkdtemp(join(tmpdir(), 'clawpeer-bench-startup-'));
  try {
    const preload = join(root, 'cpu-at-exit.cjs');
    await writeFile(
      preload,
      `process.on('exit', () => process.stderr.write('\\n${CPU_MARK}' + JSON.stringify(process.cpuUsage()) + '\\n'));\n`,
    );
    await writeFile(join(root, 'tiny'), 'hi\n');
    const syncs = runs * checkouts.length;
    const setup = await setUpClawpeer(root, 1 + syncs, undefined);
    let nextShare = 1;
    try {
      const home = ['--home', setup.senderHome];
      const listenerHome = ['--home', setup.listenerHome];
      // A folder of the sender's home (no listener there: only its config and empty log).
      const folderAdd = spawnSync(
        process.execPath,
        [
          join(REPO_ROOT, 'bin', 'clawpeer.cjs'),
          ...home,
          'folder',
          'add',
          join(root, 'docs'),
          '--id',
          'docs',
          '--with',
          'recv',
        ],
        { encoding: 'utf8' },
      );
      if (folderAdd.status !== 0) throw new Error(`folder add: ${folderAdd.stderr}`);
      type Case = [string, (bin: string) => Promise<string[]>, NodeJS.ProcessEnv?];
      /** The command as it is, then through yargs (NO_FAST_PATH), interleaved. */
      const bothWays = (name: string, args: string[]): Case[] => [
        [name, async (bin) => [bin, ...args]],
        [`${name} (yargs)`, async (bin) => [bin, ...args], NO_FAST_PATH],
      ];
      const cases: Case[] = [
        ['node -e 0', async () => ['-e', '0']],
        ['--version', async (bin) => [bin, '--version']],
        ...bothWays('pair list', [...home, 'pair', 'list']),
        ['push 3 B', async (bin) => [bin, ...home, 'push', join(root, 'tiny'), 'recv:s0']],
        [
          `first sync of ${FOLDER_FILES} files`,
          async (bin) => {
            const n = nextShare++;
            const dir = join(root, `folder-${n}`);
            await mkdir(dir);
            for (let i = 0; i < FOLDER_FILES; i++) await writeFile(join(dir, `f${i}.txt`), `file ${n}.${i}\n`);
            return [bin, ...home, 'sync', dir, `recv:s${n}`];
          },
        ],
        ...bothWays('status', [...listenerHome, 'status']),
        ...bothWays('pair list (listener home)', [...listenerHome, 'pair', 'list', '--json']),
        ...bothWays('id', [...home, 'id']),
        ...bothWays('folder list', [...home, 'folder', 'list']),
        ...bothWays('folder log', [...home, 'folder', 'log', 'docs']),
        ...bothWays('ls recv:s0', [...home, 'ls', 'recv:s0']),
      ];
      const samples = new Map<string, Sample[]>();
      for (let r = 0; r < runs; r++)
        for (const [name, argsFor, env] of cases)
          for (const [which, dir] of r % 2 === 0 ? checkouts : [...checkouts].reverse()) {
            const key = `${name}\0${which}`;
            const s = runOnce(await argsFor(join(dir, 'bin', 'clawpeer.cjs')), preload, root, env);
            samples.set(key, [...(samples.get(key) ?? []), s]);
          }
      const results = Object.fromEntries(
        cases.map(([name]) => [
          name,
          Object.fromEntries(checkouts.map(([which]) => [which, summary(samples.get(`${name}\0${which}`) ?? [])])),
        ]),
      );
      for (const [name, r] of Object.entries(results)) log(`${name}: ${JSON.stringify(r)}`);
      const result = {
        bench: 'startup',
        smoke,
        conditions: {
          ...conditions,
          nodeVersion: process.version,
          loadAverageBefore: loadBefore,
          loadAverageAfter: loadavg().map((x) => round(x, 2)),
          runs,
          checkouts: Object.fromEntries(checkouts),
          note: 'shared 2-core machine (see the load averages [1, 5, 15 min]); cases and checkouts interleaved; medians; one process per sample through bin/clawpeer.cjs; the listener (loopback QUIC) runs apart',
          cases:
            "\"(yargs)\": the same command with CLAWPEER_NO_FAST_PATH=1 (the full CLI of the same build: yargs parses, the command's own code is the same; a base checkout without that switch runs its launcher as always); pair list: the sender's home (one peer, no listener); pair list (listener home): --json, asks the listener which peers are connected; status: the listener's home; id, folder list, folder log (one folder, an empty log), ls recv:s0 (one 3-byte file): the sender's home",
        },
        results,
      };
      if (!smoke) log(`wrote ${await writeResult('startup', result)}`);
      return result;
    } finally {
      await setup.listener.stop();
    }
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

runAsScript(import.meta.url, ({ smoke, numbers, texts }) => {
  const { runs } = numbers({ runs: '--runs' });
  const { base } = texts({ base: '--base' });
  return main({
    smoke,
    verbose: true,
    ...(runs === undefined ? {} : { runs }),
    ...(base === undefined ? {} : { baseDir: base }),
  });
});
