import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { forEachBounded } from '../../src/support/for-each-bounded.js';

t.test('at most `limit` calls run at once, each item once, with its index', async (t) => {
  const items = Array.from({ length: 20 }, (_, i) => i * 10);
  let running = 0;
  let peak = 0;
  const seen: [number, number][] = [];
  await forEachBounded(items, 3, async (item, index) => {
    running++;
    peak = Math.max(peak, running);
    await sleep(item % 7);
    seen.push([item, index]);
    running--;
  });
  t.equal(peak, 3);
  t.same(
    seen.sort((a, b) => a[1] - b[1]),
    items.map((item, i) => [item, i]),
  );
});

t.test('a failure does not stop the rest; the first error is thrown after all settle', async (t) => {
  const done: number[] = [];
  await t.rejects(
    forEachBounded([1, 2, 3, 4, 5], 2, async (n) => {
      await sleep(n);
      if (n === 2 || n === 4) throw new Error(`item ${n}`);
      done.push(n);
    }),
    { message: 'item 2' },
  );
  t.same(done.sort(), [1, 3, 5]);
  await forEachBounded([], 4, () => Promise.reject(new Error('never called')));
});
