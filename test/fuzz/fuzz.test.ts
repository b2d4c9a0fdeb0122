// CI-depth fuzzing: every target in targets.ts at CI_ITERATIONS from a fixed base seed, so a run
// is deterministic and a failure names the iteration seed that reproduces it. Failures of open
// findings (committed seeds still marked todo, see seeds/) are listed as known, not failed.
// Each subtest logs the iterations reached and the time taken (for the report; no timing asserts).
import t from 'tap';
import { asciiJson, describeReport, knownPatterns, loadSeeds, runFuzz, seedDir, type FuzzTarget } from './fuzz-kit.js';
import { CI_ITERATIONS, CI_SEED, TARGETS, type TargetName } from './targets.js';

const seeds = loadSeeds(seedDir(import.meta.url, 3));

for (const [name, target] of Object.entries(TARGETS) as [TargetName, FuzzTarget<unknown>][]) {
  t.test(`fuzz ${name}: ${CI_ITERATIONS[name]} iterations, no input breaks a property`, async (t) => {
    const report = runFuzz(target, {
      iterations: CI_ITERATIONS[name],
      seed: CI_SEED,
      known: knownPatterns(seeds, name),
    });
    t.comment(describeReport(report));
    for (const k of report.known) t.comment(`known (open finding): ${asciiJson({ seed: k.seed, error: k.error })}`);
    t.equal(report.iterations, CI_ITERATIONS[name], 'ran every iteration');
    for (const f of report.failures)
      t.fail(`new failure, commit it under test/fuzz/seeds/: ${asciiJson(f).slice(0, 4000)}`);
    t.equal(report.failures.length, 0, 'no new failures');
  });
}
