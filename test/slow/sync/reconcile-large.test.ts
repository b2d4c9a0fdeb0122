// Slow suite: reconciliation of random sets up to 1,000,000 ids with differences up to 10,000,
// in both directions. The oracle is the construction itself (ids only one side was given;
// random 32-byte ids do not collide), which stays cheap at this size. Takes a few minutes.
import t, { type Test } from 'tap';
import fc from 'fast-check';
import { randomSets, reconcile, sortedHex } from '../../sync/harness.js';
import { REVISION_ID_BYTES } from '../../../src/sync/merkle-root.js';

const idsOf = (packed: Uint8Array, from: number, to: number): string[] => {
  const out: Uint8Array[] = [];
  for (let i = from; i < to; i++) out.push(packed.subarray(i * REVISION_ID_BYTES, (i + 1) * REVISION_ID_BYTES));
  return sortedHex(out);
};

function check(t: Test, common: number, onlyA: number, onlyB: number): void {
  const { a, b } = randomSets(common, onlyA, onlyB);
  // randomSets: a = common ++ onlyA, b = onlyB ++ common
  const aOnly = idsOf(a, common, common + onlyA);
  const bOnly = idsOf(b, 0, onlyB);
  const run = reconcile(a, b);
  const ri = run.initiator.result;
  const rr = run.responder.result;
  const label = `N=${common + onlyA} D=${onlyA + onlyB} (${onlyA}/${onlyB})`;
  t.ok(ri !== undefined && rr !== undefined, `${label}: finished`);
  t.same(sortedHex(ri?.idsWeLack ?? []), bOnly, `${label}: initiator lacks`);
  t.same(sortedHex(ri?.idsTheyLack ?? []), aOnly, `${label}: responder lacks`);
  t.same(sortedHex(rr?.idsWeLack ?? []), aOnly, `${label}: responder's view`);
  const d = onlyA + onlyB;
  if (d >= 10 && ri?.method === 'riblt') {
    const perDiff = run.initiator.stats.cells / d;
    t.ok(
      perDiff <= 3,
      `${label}: ${perDiff.toFixed(2)} cells per difference, ${run.initiator.stats.roundTrips} round trips`,
    );
  }
  if (d === 0) t.ok(run.wireBytes < 200, `${label}: ${run.wireBytes} bytes`);
}

t.test('one million ids, differences 0 .. 10,000 both ways', async (t) => {
  const n = 1_000_000;
  for (const [onlyA, onlyB] of [
    [0, 0],
    [1, 0],
    [0, 1],
    [5, 5],
    [500, 500],
    [10_000, 0],
    [0, 10_000],
    [5_000, 5_000],
  ] as const) {
    check(t, n - onlyA, onlyA, onlyB);
  }
});

t.test('property: random sizes up to 200,000 and differences up to 10,000', async (t) => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 200_000 }),
      fc.integer({ min: 0, max: 5_000 }),
      fc.integer({ min: 0, max: 5_000 }),
      (common, onlyA, onlyB) => {
        check(t, common, onlyA, onlyB);
      },
    ),
    { numRuns: 12 },
  );
});
