// Deep fuzzing driver shared by the files in this folder: each target up to DEEP_ITERATIONS
// (1,000,000), time-boxed at DEEP_TIME_BUDGET_MS; the log states the iterations reached. Targets
// are grouped into files of at most three so every file stays under the runner's 300 s timeout.
// The base seed is fresh per run (printed; FUZZ_SEED=<n> repeats one), the budget is
// FUZZ_BUDGET_MS=<ms> (0 = no time box: all 1,000,000). A failure prints its iteration seed and
// input as JSON, ready to commit under test/fuzz/seeds/.
import type { Test } from 'tap';
import { randomInt } from 'node:crypto';
import {
  asciiJson,
  describeReport,
  knownPatterns,
  loadSeeds,
  runFuzz,
  seedDir,
  type FuzzTarget,
} from '../../fuzz/fuzz-kit.js';
import { DEEP_ITERATIONS, DEEP_TIME_BUDGET_MS, TARGETS, type TargetName } from '../../fuzz/targets.js';

const seeds = loadSeeds(seedDir(import.meta.url, 4));
const baseSeed =
  process.env['FUZZ_SEED'] !== undefined ? Number(process.env['FUZZ_SEED']) >>> 0 : randomInt(0x1_0000_0000);
const budgetMs =
  process.env['FUZZ_BUDGET_MS'] !== undefined ? Number(process.env['FUZZ_BUDGET_MS']) : DEEP_TIME_BUDGET_MS;

export function deepFuzz(t: Test, names: readonly TargetName[]): void {
  t.comment(`deep fuzz: base seed ${baseSeed}, up to ${DEEP_ITERATIONS} iterations or ${budgetMs} ms per target`);
  for (const name of names) {
    const target = TARGETS[name] as FuzzTarget<unknown>;
    t.test(`deep fuzz ${name}`, async (t) => {
      const budget = budgetMs > 0 ? { timeBudgetMs: budgetMs } : {};
      const report = runFuzz(target, {
        iterations: DEEP_ITERATIONS,
        seed: baseSeed,
        ...budget,
        known: knownPatterns(seeds, name),
        maxFailures: 10,
      });
      t.comment(describeReport(report));
      for (const k of report.known) t.comment(`known (open finding): ${asciiJson({ seed: k.seed, error: k.error })}`);
      t.ok(report.iterations > 0, 'ran');
      for (const f of report.failures)
        t.fail(`new failure, commit it under test/fuzz/seeds/: ${asciiJson(f).slice(0, 8000)}`);
      t.equal(report.failures.length, 0, 'no new failures');
    });
  }
}
