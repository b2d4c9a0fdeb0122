import fc from 'fast-check';
import t from 'tap';
import {
  makespanLowerBound,
  scheduleLpt,
  splitIntoUnits,
  WorkQueue,
  type Job,
} from '../../src/transfer/lpt-scheduler.js';
import { planTransfer } from '../../src/transfer/plan.js';
import { makeManifests } from './sim.js';

const MiB = 1 << 20;
interface Named extends Job {
  readonly name: number;
}
const jobs = (costs: readonly number[]): Named[] => costs.map((costBytes, name) => ({ costBytes, name }));

/** Exact optimum by trying every assignment (tiny inputs only). */
function optimum(costs: readonly number[], n: number): number {
  let best = Infinity;
  const loads = new Array<number>(n).fill(0);
  const go = (i: number): void => {
    if (i === costs.length) {
      best = Math.min(best, Math.max(...loads));
      return;
    }
    for (let s = 0; s < n; s++) {
      loads[s]! += costs[i]!;
      if (loads[s]! < best) go(i + 1);
      loads[s]! -= costs[i]!;
      if (loads[s] === 0) break; // empty streams are interchangeable
    }
  };
  go(0);
  return best;
}

t.test('splitIntoUnits cuts big files into ranges and keeps small files whole', async (t) => {
  const files = makeManifests([
    Array.from({ length: 100 }, () => MiB), // 100 MiB
    [4096, 4096],
    [40 * MiB], // one chunk above the limit stays whole
    [],
  ]);
  const plan = planTransfer(
    files,
    files.flatMap((f) => f.chunks.map((c) => c.id)),
  );
  const units = splitIntoUnits(plan, { maxUnitBytes: 16 * MiB, perUnitOverheadBytes: 1000 });
  t.same(
    units.map((u) => [u.fileIndex, u.end - u.first, u.bytes]),
    [
      [0, 16, 16 * MiB],
      [0, 16, 16 * MiB],
      [0, 16, 16 * MiB],
      [0, 16, 16 * MiB],
      [0, 16, 16 * MiB],
      [0, 16, 16 * MiB],
      [0, 4, 4 * MiB],
      [1, 2, 8192],
      [2, 1, 40 * MiB],
    ],
  );
  t.ok(
    units.every((u) => u.costBytes === u.bytes + 1000),
    'overhead added per unit',
  );
  t.throws(() => splitIntoUnits(plan, { maxUnitBytes: 0 }), RangeError);
});

t.test('property: units cover every planned chunk exactly once, within the limit', async (t) => {
  fc.assert(
    fc.property(
      fc.array(fc.array(fc.integer({ min: 1, max: 5000 }), { maxLength: 20 }), { maxLength: 8 }),
      fc.integer({ min: 1, max: 20_000 }),
      (shapes, limit) => {
        const files = makeManifests(shapes);
        const plan = planTransfer(
          files,
          files.flatMap((f) => f.chunks.map((c) => c.id)),
        );
        const units = splitIntoUnits(plan, { maxUnitBytes: limit });
        let expectNext = 0;
        for (const u of units) {
          if (u.first !== expectNext || u.end <= u.first) throw new Error('units must tile the chunk list in order');
          const range = plan.chunks.slice(u.first, u.end);
          if (range.some((c) => c.fileIndex !== u.fileIndex)) throw new Error('unit crosses a file');
          if (u.bytes > limit && u.end - u.first > 1) throw new Error('over the limit with more than one chunk');
          expectNext = u.end;
        }
        if (expectNext !== plan.chunks.length) throw new Error('not all chunks covered');
      },
    ),
    { numRuns: 300, seed: 11 },
  );
  t.pass('300 random splits tile the plan');
});

t.test('LPT assigns largest first to the least loaded stream, ties to the lowest index', async (t) => {
  const a = scheduleLpt(jobs([5, 7, 3, 7, 2]), 2);
  // sorted: 7(#1) 7(#3) 5(#0) 3(#2) 2(#4): s0=7, s1=7, s0=12, s1=10, s1=12
  t.same(
    a.streams.map((s) => s.map((j) => j.name)),
    [
      [1, 0],
      [3, 2, 4],
    ],
  );
  t.same(a.loadsBytes, [12, 12]);
  t.equal(a.makespanBytes, 12);
  const empty = scheduleLpt([], 3);
  t.same(empty.loadsBytes, [0, 0, 0]);
  t.throws(() => scheduleLpt(jobs([1]), 0), RangeError);
  t.throws(() => scheduleLpt(jobs([-1]), 1), RangeError);
});

t.test('property: LPT is within 4/3 - 1/(3N) of the optimum (brute force) and assigns each job once', async (t) => {
  fc.assert(
    fc.property(
      fc.array(fc.integer({ min: 1, max: 100 }), { minLength: 1, maxLength: 8 }),
      fc.integer({ min: 1, max: 3 }),
      (costs, n) => {
        const a = scheduleLpt(jobs(costs), n);
        const names = a.streams
          .flat()
          .map((j) => j.name)
          .sort((x, y) => x - y);
        if (JSON.stringify(names) !== JSON.stringify(costs.map((_, i) => i))) throw new Error('each job exactly once');
        const opt = optimum(costs, n);
        const bound = (4 / 3 - 1 / (3 * n)) * opt;
        if (a.makespanBytes > bound + 1e-9) throw new Error(`LPT ${a.makespanBytes} > ${bound} (OPT ${opt})`);
        if (a.makespanBytes < makespanLowerBound(jobs(costs), n)) throw new Error('below the lower bound');
      },
    ),
    { numRuns: 300, seed: 3 },
  );
  t.pass('300 tiny instances within the LPT bound');
});

t.test('the classic worst case reaches the 4/3 - 1/(3N) bound exactly', async (t) => {
  // N=2: jobs 3,3,2,2,2 -> LPT 7, OPT 6 = (4/3 - 1/6) * 6.
  const costs = [3, 3, 2, 2, 2];
  t.equal(scheduleLpt(jobs(costs), 2).makespanBytes, 7);
  t.equal(optimum(costs, 2), 6);
});

t.test('property: on larger inputs LPT stays within the list-scheduling bound of the lower bound', async (t) => {
  fc.assert(
    fc.property(
      fc.array(fc.integer({ min: 1, max: 1 << 24 }), { minLength: 1, maxLength: 200 }),
      fc.integer({ min: 1, max: 16 }),
      (costs, n) => {
        const a = scheduleLpt(jobs(costs), n);
        const lb = makespanLowerBound(jobs(costs), n);
        // LPT <= 4/3 OPT <= 4/3 * ... and OPT >= lb; we check the weaker, exact-on-lb form.
        const total = costs.reduce((s, c) => s + c, 0);
        const largest = Math.max(...costs);
        if (a.makespanBytes > total / n + (1 - 1 / n) * largest + 1e-6) throw new Error('list scheduling bound');
        if (a.makespanBytes < lb) throw new Error('below the lower bound');
        if (a.loadsBytes.reduce((s, l) => s + l, 0) !== total) throw new Error('loads');
      },
    ),
    { numRuns: 200, seed: 5 },
  );
  t.pass('200 instances');
});

t.test('WorkQueue without stealing hands out each stream its own queue, largest first', async (t) => {
  const q = new WorkQueue(scheduleLpt(jobs([1, 9, 4, 6]), 2), { steal: false });
  t.same(q.next(0), { kind: 'own', job: { costBytes: 9, name: 1 } });
  t.same(q.next(0), { kind: 'own', job: { costBytes: 1, name: 0 } }); // s0 = 9, 1 ; s1 = 6, 4
  t.same(q.next(0), { kind: 'empty' });
  t.equal(q.unstartedCount, 2);
  t.equal(q.unstartedBytes(1), 10);
  t.throws(() => q.next(2), RangeError);
});

t.test(
  'WorkQueue with stealing: an idle stream takes the largest unstarted unit of the most loaded stream',
  async (t) => {
    // s0: 10 ; s1: 6, 3, 1 ; s2: 5, 4 (LPT on [10,6,5,4,3,1] over 3 streams gives s0=10, s1=6+3+1, s2=5+4)
    const a = scheduleLpt(jobs([10, 6, 5, 4, 3, 1]), 3);
    t.same(
      a.streams.map((s) => s.map((j) => j.costBytes)),
      [[10], [6, 3, 1], [5, 4]],
    );
    const q = new WorkQueue(a, { steal: true });
    t.equal(q.next(0).kind, 'own');
    t.equal(q.next(1).kind, 'own'); // 6; s1 has 3, 1 queued (4 bytes)
    t.equal(q.next(2).kind, 'own'); // 5; s2 has 4 queued (4 bytes)
    // s0 idle: victims s1 (4) and s2 (4) tie -> lowest index s1, its largest unstarted unit: 3.
    t.same(q.next(0), { kind: 'stolen', job: { costBytes: 3, name: 4 }, from: 1 });
    t.same(q.next(0), { kind: 'stolen', job: { costBytes: 4, name: 3 }, from: 2 });
    t.same(q.next(2), { kind: 'stolen', job: { costBytes: 1, name: 5 }, from: 1 });
    t.same(q.next(1), { kind: 'empty' });
    t.equal(q.unstartedCount, 0);
  },
);

t.test('property: with any interleaving of next() calls every unit is handed out exactly once', async (t) => {
  fc.assert(
    fc.property(
      fc.array(fc.integer({ min: 0, max: 50 }), { maxLength: 30 }),
      fc.integer({ min: 1, max: 5 }),
      fc.array(fc.nat(), { maxLength: 100 }),
      fc.boolean(),
      (costs, n, callers, steal) => {
        const q = new WorkQueue(scheduleLpt(jobs(costs), n), { steal });
        const got: number[] = [];
        for (const c of [...callers, ...Array.from({ length: costs.length * n }, (_, i) => i)]) {
          const w = q.next(c % n);
          if (w.kind !== 'empty') got.push(w.job.name);
        }
        got.sort((x, y) => x - y);
        if (JSON.stringify(got) !== JSON.stringify(costs.map((_, i) => i)))
          throw new Error(`handed out ${JSON.stringify(got)}`);
        if (q.unstartedCount !== 0) throw new Error('left over');
      },
    ),
    { numRuns: 300, seed: 13 },
  );
  t.pass('300 interleavings');
});
