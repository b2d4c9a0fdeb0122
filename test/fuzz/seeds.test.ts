// Regression replays: every committed failing input under test/fuzz/seeds/ is checked against
// its target's properties. A seed whose fix has not landed yet is a `todo` naming the reason;
// once the source is fixed, delete the seed's "todo" (and "matches") and it guards the fix.
import t from 'tap';
import { loadSeeds, seedDir } from './fuzz-kit.js';
import { replaySeed, TARGETS } from './targets.js';

const seeds = loadSeeds(seedDir(import.meta.url, 3));

t.test('seed files are well-formed', async (t) => {
  t.ok(seeds.length > 0, 'at least one committed seed');
  for (const { file, seed } of seeds) {
    t.ok(Object.hasOwn(TARGETS, seed.target), `${file}: target ${seed.target} exists`);
    t.ok(seed.finding.length > 0, `${file}: describes its finding`);
    t.ok(
      seed.todo === undefined || seed.matches !== undefined,
      `${file}: an open finding says which failures it explains`,
    );
  }
});

for (const { file, seed } of seeds) {
  const name = `${file}: ${seed.finding}`;
  if (seed.todo !== undefined) {
    t.test(name, { todo: seed.todo }, async (t) => {
      t.throws(() => replaySeed(seed.target, seed.input), 'still reproduces (remove todo once fixed)');
    });
    continue;
  }
  t.test(name, async (t) => {
    t.doesNotThrow(() => replaySeed(seed.target, seed.input), 'the property holds on this input');
  });
}
