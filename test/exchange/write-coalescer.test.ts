import t from 'tap';
import { COALESCE_MAX_BYTES, WriteCoalescer } from '../../src/exchange/write-coalescer.js';

t.test('parts go out in order, joined while a write is in progress, up to the size cap', async (t) => {
  const writes: Uint8Array[] = [];
  let release: (() => void) | undefined;
  const out = new WriteCoalescer(async (bytes) => {
    writes.push(bytes);
    await new Promise<void>((r) => (release = r));
  });
  out.push(Uint8Array.of(1));
  out.push(Uint8Array.of(2), new Uint8Array(0), Uint8Array.of(3));
  out.push(Uint8Array.of(4));
  t.equal(writes.length, 1, 'the first part is written at once');
  release!();
  await new Promise((r) => setImmediate(r));
  t.same([...writes[1]!], [2, 3, 4], 'what queued meanwhile is one write, in order, empty parts dropped');
  release!();
  const big = new Uint8Array(COALESCE_MAX_BYTES);
  out.push(big, Uint8Array.of(5));
  await new Promise((r) => setImmediate(r));
  t.equal(writes[2]!.length, COALESCE_MAX_BYTES, 'a write stops at the cap');
  release!();
  await new Promise((r) => setImmediate(r));
  t.same([...writes[3]!], [5]);
  release!();
  await out.drained();
  t.equal(writes.length, 4);
});

t.test('joins reuse one buffer, never while a write of it is pending', async (t) => {
  const writes: { bytes: Uint8Array; atCall: number[]; atRelease?: number[] }[] = [];
  let release: (() => void) | undefined;
  const out = new WriteCoalescer(async (bytes) => {
    const w = { bytes, atCall: [...bytes] };
    writes.push(w);
    await new Promise<void>((r) => (release = r));
    (w as { atRelease?: number[] }).atRelease = [...bytes];
  });
  const settle = (): Promise<void> => new Promise((r) => setImmediate(r));
  out.push(Uint8Array.of(1));
  out.push(Uint8Array.of(2), Uint8Array.of(3, 4));
  release!();
  await settle();
  out.push(Uint8Array.of(5), Uint8Array.of(6)); // queued while the join [2, 3, 4] is being written
  release!();
  await settle();
  release!();
  await out.drained();
  t.same(
    writes.map((w) => w.atCall),
    [[1], [2, 3, 4], [5, 6]],
    'each write carries its parts in order',
  );
  t.same(
    writes.map((w) => w.atRelease),
    [[1], [2, 3, 4], [5, 6]],
    'no write changed before it resolved',
  );
  const [a, b] = [writes[1]!.bytes, writes[2]!.bytes];
  t.ok(a.buffer === b.buffer && a.byteOffset === b.byteOffset, "the second join reused the first join's buffer");
});

t.test('a failed write fails drained() and every later push', async (t) => {
  const out = new WriteCoalescer(() => Promise.reject(new Error('stream reset')));
  out.push(Uint8Array.of(1));
  await t.rejects(out.drained(), /stream reset/);
  t.throws(() => out.push(Uint8Array.of(2)), /stream reset/);
});
