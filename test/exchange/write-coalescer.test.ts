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
  t.same(writes.map((w) => w.atCall), [[1], [2, 3, 4], [5, 6]], 'each write carries its parts in order');
  t.same(writes.map((w) => w.atRelease), [[1], [2, 3, 4], [5, 6]], 'no write changed before it resolved');
  const [a, b] = [writes[1]!.bytes, writes[2]!.bytes];
  t.ok(a.buffer === b.buffer && a.byteOffset === b.byteOffset, 'the second join reused the first join\'s buffer');
});

t.test('a failed write fails drained() and every later push', async (t) => {
  const out = new WriteCoalescer(() => Promise.reject(new Error('stream reset')));
  out.push(Uint8Array.of(1));
  await t.rejects(out.drained(), /stream reset/);
  t.throws(() => out.push(Uint8Array.of(2)), /stream reset/);
});

t.test('owned parts are released once copied into a join or written alone, and on failure', async (t) => {
  const released: string[] = [];
  let release: (() => void) | undefined;
  let fail = false;
  const writes: number[][] = [];
  const out = new WriteCoalescer(async (bytes) => {
    writes.push([...bytes.subarray(0, 2)]);
    await new Promise<void>((r) => (release = r));
    if (fail) throw new Error('stream reset');
  });
  const settle = (): Promise<void> => new Promise((r) => setImmediate(r));
  const big = new Uint8Array(COALESCE_MAX_BYTES).fill(9);
  out.pushOwned(big, () => released.push('big'));
  await settle();
  t.same(released, [], 'a part written alone is held until its write resolves');
  out.pushOwned(Uint8Array.of(1), () => released.push('a'));
  out.pushOwned(Uint8Array.of(2), () => released.push('b'));
  release!();
  await settle();
  t.same(released, ['big', 'a', 'b'], 'joined parts are released once copied, before their write resolves');
  t.same(writes[1], [1, 2]);
  out.pushOwned(new Uint8Array(0), () => released.push('empty'));
  t.same(released.at(-1), 'empty', 'an empty part is released at once');
  fail = true;
  out.pushOwned(Uint8Array.of(3), () => released.push('c')); // queued behind the join's write, which fails
  release!();
  await t.rejects(out.drained(), /stream reset/);
  t.same(released.at(-1), 'c', 'a part still queued at a failure is released');
  t.throws(() => out.pushOwned(Uint8Array.of(4), () => released.push('d')), /stream reset/);
  t.notOk(released.includes('d'), 'a part refused is not taken, so not released');

  const lone = new WriteCoalescer(() => Promise.reject(new Error('stopped by peer')));
  lone.pushOwned(big, () => released.push('lone'));
  await t.rejects(lone.drained(), /stopped by peer/);
  t.same(released.at(-1), 'lone', 'a part whose own write failed is released');
});
