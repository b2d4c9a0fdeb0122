import fc from 'fast-check';
import t from 'tap';
import { ByteQueue, COALESCE_BELOW_BYTES } from '../../src/transport/byte-queue.js';

t.test('bytes come out in order, whatever the push sizes and read sizes', async (t) => {
  fc.assert(
    fc.property(
      fc.array(fc.oneof(fc.uint8Array({ maxLength: 40 }), fc.uint8Array({ minLength: 1000, maxLength: 3000 })), {
        maxLength: 40,
      }),
      fc.array(fc.integer({ min: 1, max: 5000 }), { minLength: 1, maxLength: 20 }),
      (pushes, reads) => {
        const q = new ByteQueue();
        const expected = Buffer.concat(pushes);
        const out: Uint8Array[] = [];
        let r = 0;
        // Interleave pushes and reads: the queue must keep order across partial reads.
        for (const p of pushes) {
          q.push(p);
          const got = q.shift(reads[r++ % reads.length] ?? 1);
          if (got !== undefined) out.push(Uint8Array.from(got));
        }
        for (let got = q.shift(4096); got !== undefined; got = q.shift(4096)) out.push(Uint8Array.from(got));
        return q.length === 0 && Buffer.concat(out).equals(expected);
      },
    ),
    { numRuns: 300 },
  );
  t.pass('order preserved');
});

t.test('large pieces are kept as views; small ones are coalesced', async (t) => {
  const q = new ByteQueue();
  const big = new Uint8Array(COALESCE_BELOW_BYTES).fill(1);
  q.push(big);
  const out = q.shift(1 << 20);
  t.equal(out?.buffer, big.buffer, 'no copy for a large piece');
  for (let i = 0; i < 1000; i++) q.push(Uint8Array.of(i & 0xff));
  t.equal(q.length, 1000);
  const merged = q.shift(1 << 20);
  t.equal(merged?.length, 1000, '1000 one-byte pushes come back as one piece');
  t.equal(merged?.[999], 999 & 0xff);
  t.equal(q.shift(1), undefined, 'empty');
  q.push(Uint8Array.of(5));
  t.same(q.shift(10), Uint8Array.of(5), 'the fully-read tail still accepts appends');
  q.push(new Uint8Array(10));
  q.clear();
  t.equal(q.length, 0);
  t.equal(q.shift(1), undefined);
});
