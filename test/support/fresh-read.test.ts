// freshRead (shared reads that never predate the caller) and ThrottledWarnings (a flood of
// refusals costs a few log lines), the two helpers the listener's admission uses.
import t from 'tap';
import { freshRead } from '../../src/support/fresh-read.js';
import { ThrottledWarnings } from '../../src/support/throttled-log.js';
import type { Logger } from '../../src/logger.js';

t.test('freshRead: callers at once share a read; a caller after a read began gets the next one', async (t) => {
  let reads = 0;
  const gates: (() => void)[] = [];
  const read = freshRead(async () => {
    const n = ++reads;
    await new Promise<void>((resolve) => gates.push(resolve));
    return n;
  });
  const a = read();
  await Promise.resolve();
  const b = read(); // read 1 is running: it may predate b, so b waits for read 2
  const c = read(); // shares read 2 with b
  await new Promise((resolve) => setImmediate(resolve));
  t.equal(reads, 1, 'one read runs');
  gates.shift()?.();
  t.equal(await a, 1);
  await new Promise((resolve) => setImmediate(resolve));
  t.equal(reads, 2, 'the queued read starts once the first is done');
  gates.shift()?.();
  t.same([await b, await c], [2, 2], 'both later callers got the read that began after them');
  const d = read();
  await new Promise((resolve) => setImmediate(resolve));
  gates.shift()?.();
  t.equal(await d, 3, 'an idle reader reads at once');
});

t.test('freshRead: a failed read rejects its callers only', async (t) => {
  let fail = true;
  const read = freshRead(async () => {
    if (fail) throw new Error('unreadable');
    return 'ok';
  });
  await t.rejects(read(), /unreadable/);
  fail = false;
  t.equal(await read(), 'ok');
});

t.test('ThrottledWarnings: the first ones one by one, the rest counted in one line per window', async (t) => {
  const lines: string[] = [];
  const log = {
    warn: (m: string, f?: Record<string, unknown>) =>
      lines.push(`${m}${f === undefined ? '' : ' ' + JSON.stringify(f)}`),
  } as unknown as Logger;
  let now = 0;
  const w = new ThrottledWarnings(log, 'refusals', 3, 1_000, () => now);
  for (let i = 0; i < 10; i++) w.warn(`refused ${i}`);
  t.same(lines, ['refused 0', 'refused 1', 'refused 2'], 'a burst of 3 is logged');
  now = 1_500;
  w.warn('refused 10');
  t.same(
    lines.slice(3),
    ['7 more refusals (not logged one by one) {"windowMs":1000}', 'refused 10'],
    'a new window first tells what the last one held back',
  );
  w.close();
  t.equal(lines.length, 5, 'nothing held back: close adds nothing');
});
