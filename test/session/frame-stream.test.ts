// FrameStream's read deadline, and the waiver a sender uses: while its own writes still move
// (a slow or shared rate cap, a slow link), an ack that is overdue is not yet a stall.
import t from 'tap';
import { BEFORE_WAIT_GRACE_MS, FrameStream } from '../../src/session/frame-stream.js';
import { encodeAckFrame } from '../../src/protocol/ack-codec.js';
import type { DuplexStream } from '../../src/transport/types.js';

/** A stream whose next read resolves only when the test says; counts reads started. */
function controlledStream(): {
  stream: DuplexStream;
  deliver: (bytes: Uint8Array | null) => void;
  reads: () => number;
} {
  let started = 0;
  let pending: ((b: Uint8Array | null) => void) | undefined;
  const stream: DuplexStream = {
    id: 0,
    read: () => {
      started++;
      return new Promise((resolve) => (pending = resolve));
    },
    write: async () => undefined,
    finish: async () => undefined,
    reset: () => undefined,
  };
  return { stream, deliver: (b) => pending?.(b), reads: () => started };
}

const IDLE_MS = 50;

t.test('nothing within the deadline is TIMEOUT', async (t) => {
  const { stream } = controlledStream();
  const frames = new FrameStream(stream, 1 << 20, IDLE_MS, 'test stream');
  await t.rejects(frames.next(), { code: 'TIMEOUT', message: /waiting for data on test stream timed out after 50 ms/ });
});

t.test('while busy() holds, the deadline is waived and the same read continues', async (t) => {
  const { stream, deliver, reads } = controlledStream();
  const frames = new FrameStream(stream, 1 << 20, IDLE_MS, 'test stream');
  let busy = true;
  let asked = 0;
  const next = frames.next(undefined, () => {
    asked++;
    return busy;
  });
  await new Promise((r) => setTimeout(r, IDLE_MS * 4));
  t.ok(asked >= 2, `the deadline passed ${asked} times and was waived`);
  t.equal(reads(), 1, 'one read, never a second one beside it');
  deliver(encodeAckFrame(3, 7));
  const frame = await next;
  t.equal(frame?.type, 'ack', 'the frame that came late is returned');
  busy = false;
  await t.rejects(
    frames.next(undefined, () => busy),
    { code: 'TIMEOUT' },
    'once not busy, the deadline holds',
  );
});

t.test("beforeWait runs only once a read has waited its grace, and its failure is next()'s", async (t) => {
  const { stream, deliver } = controlledStream();
  const frames = new FrameStream(stream, 1 << 20, 10_000, 'test stream');
  let flushes = 0;
  const flush = (): void => {
    flushes++;
  };
  const quick = frames.next(undefined, undefined, flush);
  deliver(encodeAckFrame(3, 1)); // arrives before the grace is over
  t.equal((await quick)?.type, 'ack');
  t.equal(flushes, 0, 'a frame that came at once costs no flush');
  const slow = frames.next(undefined, undefined, flush);
  await new Promise((r) => setTimeout(r, BEFORE_WAIT_GRACE_MS + 20));
  t.equal(flushes, 1, 'a read that waits gets its flush, once');
  deliver(encodeAckFrame(3, 2));
  t.equal((await slow)?.type, 'ack');
  const failing = frames.next(undefined, undefined, () => {
    throw new Error('ack write failed');
  });
  await new Promise((r) => setTimeout(r, BEFORE_WAIT_GRACE_MS + 20));
  deliver(encodeAckFrame(3, 3));
  await t.rejects(failing, /ack write failed/, "the flush's failure comes out of next()");
  const ended = frames.next(undefined, undefined, flush);
  deliver(null);
  t.equal(await ended, null);
  t.equal(flushes, 2, 'the end of the stream flushes what is owed');
});
