// Start-up cost of the CLI (issue 33 compares whole processes with scp and rsync, so every
// millisecond before the first packet counts): each case is one whole `node bin/clawpeer.cjs`
// process, as a user runs it, against a fresh loopback QUIC listener (setUpClawpeer).
//
// Cases: `node -e 0` (the floor: Node's own start, in the same run), --version, pair list, a push
// of a 3-byte file, and the first sync of a 5-file folder (a fresh folder and share each run).
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

function runOnce(command: readonly string[], preload: string, cwd: string): Sample {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, ['--require', preload, ...command], { cwd, encoding: 'utf8' });
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
      const cases: [string, (bin: string) => Promise<string[]>][] = [
        ['node -e 0', async () => ['-e', '0']],
        ['--version', async (bin) => [bin, '--version']],
        ['pair list', async (bin) => [bin, ...home, 'pair', 'list']],
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
      ];
      const samples = new Map<string, Sample[]>();
      for (let r = 0; r < runs; r++)
        for (const [name, argsFor] of cases)
          for (const [which, dir] of r % 2 === 0 ? checkouts : [...checkouts].reverse()) {
            const key = `${name}\0${which}`;
            const s = runOnce(await argsFor(join(dir, 'bin', 'clawpeer.cjs')), preload, root);
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
