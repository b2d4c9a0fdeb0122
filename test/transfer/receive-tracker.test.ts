import fc from 'fast-check';
import t from 'tap';
import { isClawpeerError } from '../../src/errors.js';
import type { FileManifest } from '../../src/transfer/plan.js';
import { ReceiveTracker, StreamAckTracker } from '../../src/transfer/receive-tracker.js';
import { fakeChunkId } from './sim.js';

const id = fakeChunkId;
function file(path: string, chunks: [number, number][]): FileManifest {
  return {
    path,
    size: chunks.reduce((s, [, l]) => s + l, 0),
    mode: 0o644,
    mtimeMs: 0,
    chunks: chunks.map(([n, length]) => ({ id: id(n), length })),
  };
}
function protocolError(fn: () => unknown, pattern: RegExp): void {
  try {
    fn();
  } catch (err) {
    if (isClawpeerError(err, 'PROTOCOL') && pattern.test(err.message)) return;
    throw err;
  }
  throw new Error('did not throw');
}
function drain(r: ReceiveTracker): number[] {
  const out: number[] = [];
  for (let f = r.pollComplete(); f !== undefined; f = r.pollComplete()) out.push(f);
  return out;
}

t.test('a received chunk fills every placement; files complete when their last chunk is written', async (t) => {
  // chunk 1 twice in a and once in b; chunk 2 we hold locally; c is empty.
  const r = new ReceiveTracker(
    [
      file('a', [
        [1, 10],
        [2, 5],
        [1, 10],
      ]),
      file('b', [[1, 10]]),
      file('c', []),
    ],
    [id(1)],
  );
  t.same(drain(r), [2], 'the empty file is complete at once');
  t.equal(r.peerChunksAwaited, 1);
  const local = [...r.localChunks()];
  t.same(
    local.map((l) => [l.length, l.placements]),
    [[5, [{ fileIndex: 0, chunkIndex: 1, offset: 10, length: 5 }]]],
  );
  r.onWritten(local[0]!.id);
  t.same(r.fileState(0), { kind: 'filling', missingChunks: 2 });
  t.same(r.onFrame(id(1), 10), [
    { fileIndex: 0, chunkIndex: 0, offset: 0, length: 10 },
    { fileIndex: 0, chunkIndex: 2, offset: 15, length: 10 },
    { fileIndex: 1, chunkIndex: 0, offset: 0, length: 10 },
  ]);
  t.same(drain(r), [], 'not complete before written and verified');
  r.onWritten(id(1));
  t.same(drain(r), [0, 1]);
  t.equal(r.peerChunksAwaited, 0);
  t.notOk(r.isDone);
  for (const f of [0, 1, 2]) r.markPublished(f);
  t.ok(r.isDone);
  t.same(r.fileState(1), { kind: 'published' });
  t.throws(() => r.markPublished(1), /published/);
});

t.test('refuses frames for chunks not asked for, repeated, or of the wrong length', async (t) => {
  const r = new ReceiveTracker(
    [
      file('a', [
        [1, 10],
        [2, 5],
      ]),
    ],
    [id(1)],
  );
  protocolError(() => r.onFrame(id(2), 5), /did not ask for/); // we hold it locally
  protocolError(() => r.onFrame(id(9), 5), /did not ask for/);
  protocolError(() => r.onFrame(id(1), 11), /with 11 bytes, manifest says 10/);
  r.onFrame(id(1), 10);
  protocolError(() => r.onFrame(id(1), 10), /second time/);
  r.onWritten(id(1));
  protocolError(() => r.onFrame(id(1), 10), /second time/);
  protocolError(() => r.onFrame(new Uint8Array(8), 10), /32 bytes/);
  t.throws(() => r.onWritten(id(1)), /is done/, 'double write is a driver bug');
  t.throws(() => r.markPublished(0), /filling/);
});

t.test('refuses inconsistent or oversized manifests from the peer', async () => {
  protocolError(() => new ReceiveTracker([file('a', [[1, 1]]), file('a', [[2, 1]])], []), /offered "a" twice/);
  protocolError(() => new ReceiveTracker([file('a', [[1, 1]])], [id(2)]), /no offered file/);
  protocolError(
    () =>
      new ReceiveTracker(
        [
          file('a', [
            [1, 1],
            [2, 1],
          ]),
        ],
        [],
        { maxFiles: 5, maxChunkRefs: 1 },
      ),
    /more than 1 chunk references/,
  );
});

t.test('property: any delivery order completes every file exactly once', async (t) => {
  fc.assert(
    fc.property(
      fc.array(fc.array(fc.nat({ max: 9 }), { maxLength: 6 }), { minLength: 1, maxLength: 5 }),
      fc.array(fc.boolean(), { minLength: 10, maxLength: 10 }),
      fc.func(fc.integer()),
      (shapes, lackMask, order) => {
        const files = shapes.map((ns, i) =>
          file(
            `f${i}`,
            ns.map((n) => [n, n + 1]),
          ),
        );
        const used = [...new Set(shapes.flat())];
        const lacking = used.filter((n) => lackMask[n]);
        const r = new ReceiveTracker(files, lacking.map(id));
        const events = [...used].sort((a, b) => order(a) - order(b) || a - b);
        const completed: number[] = drain(r);
        for (const n of events) {
          if (lacking.includes(n)) r.onFrame(id(n), n + 1);
          r.onWritten(id(n));
          completed.push(...drain(r));
        }
        completed.sort((a, b) => a - b);
        if (JSON.stringify(completed) !== JSON.stringify(files.map((_, i) => i)))
          throw new Error(`completed ${JSON.stringify(completed)}`);
        if (r.peerChunksAwaited !== 0) throw new Error('left awaited');
      },
    ),
    { numRuns: 300, seed: 23 },
  );
  t.pass('300 orders');
});

t.test('StreamAckTracker: cumulative acks over out-of-order verification', async (t) => {
  const a = new StreamAckTracker(4);
  for (let s = 0; s < 4; s++) a.onFrame(s);
  protocolError(() => a.onFrame(4), /exceeded the window: frame seq 4 with 4 frames unacknowledged \(window 4\)/);
  t.equal(a.onVerified(2), undefined, 'seq 0 and 1 still being verified');
  t.equal(a.onVerified(0), 0);
  t.equal(a.onVerified(1), 2, 'covers the already-verified 2');
  t.equal(a.ackedThrough, 2);
  t.equal(a.outstanding, 1);
  a.onFrame(4);
  protocolError(() => a.onFrame(6), /out of order, expected 5/);
  t.throws(() => a.onVerified(2), /not an outstanding frame/);
  t.throws(() => a.onVerified(5), /not an outstanding frame/);
  t.equal(a.onVerified(4), undefined);
  t.equal(a.onVerified(3), 4);
  t.throws(() => new StreamAckTracker(0), RangeError);
});
