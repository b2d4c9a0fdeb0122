// Runs every benchmark in bench/ in sequence (`npm run bench`), or smoke-runs them (--smoke).
//
// Goals: no list to keep in sync: a bench is any module next to this one that exports
// `main(options)` taking `{ smoke }`; one failing bench does not stop the others; one summary
// line per bench (status, wall time, and for a real run the result file it wrote).
// Non-goals: parallel runs (benches on a 2-core machine would measure each other), comparing
// with earlier results.
// Run: node .build-x/bench/run-all.js [--smoke] [NAME ...]   (NAMEs limit the run, e.g. aead)
import { readdir } from 'node:fs/promises';
import { performance } from 'node:perf_hooks';
import { runAsScript, round } from './common.js';

export interface BenchModule {
  /** File name without extension, e.g. "aead"; also the name of its result file. */
  readonly name: string;
  readonly url: URL;
  readonly main: (options: { smoke?: boolean }) => Promise<unknown>;
}

/** Modules here that are not benchmarks. */
const NOT_BENCHES: ReadonlySet<string> = new Set(['run-all', 'common']);

/**
 * The bench modules in `dir` (a directory URL ending in "/"), sorted by name: every `*.js` file
 * that exports a function `main`, except this runner and the shared helpers. Importing a module
 * must not start it (each runs its main only when it is node's entry script).
 */
export async function findBenchModules(dir: URL = new URL('./', import.meta.url)): Promise<BenchModule[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.js')).sort();
  const found: BenchModule[] = [];
  for (const file of files) {
    const name = file.slice(0, -'.js'.length);
    if (NOT_BENCHES.has(name)) continue;
    const url = new URL(file, dir);
    const mod = (await import(url.href)) as { main?: unknown };
    if (typeof mod.main !== 'function') continue;
    const main = mod.main as (options: { smoke?: boolean }) => Promise<unknown>;
    found.push({ name, url, main });
  }
  return found;
}

export interface BenchOutcome {
  readonly name: string;
  readonly ok: boolean;
  readonly seconds: number;
  readonly error?: string;
}

/** Runs `benches` one after another; never throws for a failing bench (its outcome says so). */
export async function runBenches(
  benches: readonly BenchModule[],
  options: { smoke: boolean; onDone?: (o: BenchOutcome) => void },
): Promise<BenchOutcome[]> {
  const outcomes: BenchOutcome[] = [];
  for (const bench of benches) {
    const t0 = performance.now();
    let outcome: BenchOutcome;
    try {
      await bench.main({ smoke: options.smoke });
      outcome = { name: bench.name, ok: true, seconds: round((performance.now() - t0) / 1000, 2) };
    } catch (err) {
      const error = err instanceof Error ? (err.stack ?? err.message) : String(err);
      outcome = { name: bench.name, ok: false, seconds: round((performance.now() - t0) / 1000, 2), error };
    }
    outcomes.push(outcome);
    options.onDone?.(outcome);
  }
  return outcomes;
}

export async function runAll(argv: readonly string[]): Promise<number> {
  const smoke = argv.includes('--smoke');
  const names = argv.filter((a) => !a.startsWith('--'));
  const all = await findBenchModules();
  const unknown = names.filter((n) => !all.some((b) => b.name === n));
  if (unknown.length > 0) {
    process.stderr.write(
      `run-all: no bench named ${unknown.join(', ')} (have: ${all.map((b) => b.name).join(', ')})\n`,
    );
    return 2;
  }
  const selected = names.length === 0 ? all : all.filter((b) => names.includes(b.name));
  process.stdout.write(
    `running ${selected.length} bench(es)${smoke ? ' in smoke mode (nothing written)' : ''}: ${selected.map((b) => b.name).join(', ')}\n`,
  );
  const outcomes = await runBenches(selected, {
    smoke,
    onDone: (o) => {
      const where = smoke ? '' : ` (results: bench/results/${o.name}.json)`;
      process.stdout.write(
        o.ok
          ? `${o.name}: ok in ${o.seconds} s${where}\n`
          : `${o.name}: FAILED after ${o.seconds} s: ${(o.error ?? '').split('\n')[0]}\n`,
      );
      if (!o.ok && o.error !== undefined) process.stderr.write(`${o.error}\n`);
    },
  });
  const failed = outcomes.filter((o) => !o.ok).length;
  process.stdout.write(`${outcomes.length - failed} ok, ${failed} failed\n`);
  return failed === 0 ? 0 : 1;
}

runAsScript(import.meta.url, async ({ argv }) => {
  process.exitCode = await runAll([...argv]);
});
