// Shared helpers of the micro-benchmarks: the machine conditions every result carries, a median,
// a timed sampling loop, and where results are written.
//
// Goals: one definition of "conditions" so results of different benches compare (a number without
// its machine, runtime and date is worthless); a sampler that times whole batches of calls
// (performance.now() per call would cost more than a 16 KiB AES-GCM seal) and reports per-run
// rates so the median and spread are visible.
// Non-goals: statistics beyond median/min/max (runs are few on a shared 2-core machine; the
// ratio to a baseline measured in the same run is the robust number), and printing.
import { mkdir, readdir, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The repository root: compiled benches live in <outDir>/bench/, two levels below it. */
export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const RESULTS_DIR = join(REPO_ROOT, 'bench', 'results');

export const KiB = 1 << 10;
export const MiB = 1 << 20;

// The conditions record lives in src/ (the `clawpeer bench` command records it too).
export { machineConditions, machineCpuSeconds, type BenchConditions } from '../src/benchkit/machine.js';

import { fileCreateMicros } from '../src/benchkit/machine.js';
import { median } from '../src/benchkit/stats.js';

export { median };

export function round(x: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** a / b rounded to 3 decimals: the form every ratio to a baseline is reported in. */
export function ratio(a: number, b: number): number {
  return round(a / b, 3);
}

export interface SampleOptions {
  /** Timed samples (one rate each). */
  readonly runs: number;
  /** Each sample repeats the operation until this process has used at least this much CPU, ms. */
  readonly minSampleMs: number;
  /** Untimed samples first (JIT, allocator, cipher contexts). Default 1. */
  readonly warmupRuns?: number;
}

export interface SampleRates {
  /** Operations per CPU-second of this process (user + system), one per run: robust to other
   *  processes sharing the cores, which wall time is not. Ratios are taken from these. */
  readonly cpuOpsPerSec: number[];
  /** Operations per wall-clock second, one per run. */
  readonly wallOpsPerSec: number[];
}

function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

/**
 * Rates of the synchronous `op`, one per run. Each run calls `op` in batches that double until
 * the process has spent `minSampleMs` of CPU, so the clocks are read about log2(calls) times
 * per run. CPU time counts every thread of the process (GC helpers too), which is the honest
 * cost of `op` as long as nothing else runs in the process.
 */
export function sampleRates(op: () => void, options: SampleOptions): SampleRates {
  const cpu: number[] = [];
  const wall: number[] = [];
  const warmup = options.warmupRuns ?? 1;
  for (let run = 0; run < warmup + options.runs; run++) {
    let calls = 0;
    let batch = 1;
    const wall0 = performance.now();
    const cpu0 = cpuMs();
    let cpuElapsed = 0;
    while (cpuElapsed < options.minSampleMs) {
      for (let i = 0; i < batch; i++) op();
      calls += batch;
      batch *= 2;
      cpuElapsed = cpuMs() - cpu0;
    }
    const wallElapsed = performance.now() - wall0;
    if (run >= warmup) {
      cpu.push((calls * 1000) / cpuElapsed);
      wall.push((calls * 1000) / wallElapsed);
    }
  }
  return { cpuOpsPerSec: cpu, wallOpsPerSec: wall };
}

/** Writes `json` to bench/results/<name>.json (pretty, trailing newline); returns the path. */
export async function writeResult(name: string, json: unknown): Promise<string> {
  if (!/^[a-z0-9][a-z0-9-]*$/.test(name))
    throw new RangeError(`bench result name must be kebab-case, got ${JSON.stringify(name)}`);
  return writeJsonFile(join(RESULTS_DIR, `${name}.json`), json);
}

/** Writes `json` (pretty-printed) to `file`, creating its directory; returns the path. */
export async function writeJsonFile(file: string, json: unknown): Promise<string> {
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, JSON.stringify(json, null, 2) + '\n');
  return file;
}

/** fileCreateMicros (src/benchkit/machine.ts) as a bench condition, with what it means. */
export function fileCreateCondition(dir: string, files = 500): { dir: string; median: number; note: string } {
  const note =
    'one empty-file create in a fresh directory beside the destinations, before the runs: every tool pays it per file';
  return { dir, median: fileCreateMicros(dir, files), note };
}

/** Files and bytes under `dir`, leaving out clawpeer's own `.clawpeer*` state. */
export async function treeBytes(dir: string): Promise<{ files: number; bytes: number }> {
  let files = 0;
  let bytes = 0;
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    const rel = join(e.parentPath, e.name).slice(dir.length);
    if (!e.isFile() || rel.split('/').some((s) => s.startsWith('.clawpeer'))) continue;
    files++;
    bytes += (await stat(join(e.parentPath, e.name))).size;
  }
  return { files, bytes };
}

/** The word after `flag` on a bench script's command line, if the flag is there. */
export function argValue(argv: readonly string[], flag: string): string | undefined {
  const i = argv.indexOf(flag);
  return i < 0 ? undefined : argv[i + 1];
}

/** True when the module at `moduleUrl` is the script node was started with. */
function isMainModule(moduleUrl: string): boolean {
  const script = process.argv[1];
  return script !== undefined && moduleUrl === pathToFileURL(script).href;
}

/** A bench script's command line, read into its main's options. */
export interface BenchArgs {
  readonly argv: readonly string[];
  /** --smoke: a small, quick run (the test suite's). */
  readonly smoke: boolean;
  readonly has: (flag: string) => boolean;
  /** The words after the flags named, under the option names given; a flag not there is left out. */
  readonly texts: <K extends string>(flags: Readonly<Record<K, string>>) => Partial<Record<K, string>>;
  /** As texts, as numbers; throws naming the flag when its word is not a number. */
  readonly numbers: <K extends string>(flags: Readonly<Record<K, string>>) => Partial<Record<K, number>>;
}

function benchArgs(argv: readonly string[]): BenchArgs {
  const texts = <K extends string>(flags: Readonly<Record<K, string>>): Partial<Record<K, string>> => {
    const out: Partial<Record<K, string>> = {};
    for (const key of Object.keys(flags) as K[]) {
      const v = argValue(argv, flags[key]);
      if (v !== undefined) out[key] = v;
    }
    return out;
  };
  return {
    argv,
    smoke: argv.includes('--smoke'),
    has: (flag) => argv.includes(flag),
    texts,
    numbers: <K extends string>(flags: Readonly<Record<K, string>>): Partial<Record<K, number>> => {
      const out: Partial<Record<K, number>> = {};
      for (const [key, v] of Object.entries(texts(flags)) as [K, string][]) {
        const n = Number(v);
        if (v === '' || !Number.isFinite(n)) throw new Error(`${flags[key]} takes a number, got ${JSON.stringify(v)}`);
        out[key] = n;
      }
      return out;
    },
  };
}

/**
 * Runs `run` when the module at `moduleUrl` is the script node was started with: what it
 * resolves to (unless undefined) goes to stdout as JSON; a failure's stack goes to stderr and
 * the exit code is 1. Every bench script ends with one call of it.
 */
export function runAsScript(moduleUrl: string, run: (args: BenchArgs) => Promise<unknown>): void {
  if (!isMainModule(moduleUrl)) return;
  Promise.resolve()
    .then(() => run(benchArgs(process.argv.slice(2))))
    .then(
      (result) => {
        if (result !== undefined) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
      },
      (err: unknown) => {
        process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
        process.exitCode = 1;
      },
    );
}
