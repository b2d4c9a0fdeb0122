// FrameStream's read deadline, and the waiver a sender uses: while its own writes still move
// (a slow or shared rate cap, a slow link), an ack that is overdue is not yet a stall.
import t from 'tap';
import { FrameStream } from '../../src/session/frame-stream.js';
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

t.test("beforeWait runs before each read for more and at the end; its failure is next()'s", async (t) => {
  const { stream, deliver } = controlledStream();
  const frames = new FrameStream(stream, 1 << 20, 10_000, 'test stream');
  let waits = 0;
  const waiting = (): void => {
    waits++;
  };
  const first = frames.next(undefined, undefined, waiting);
  t.equal(waits, 1, 'nothing buffered: it runs before the read');
  const two = Buffer.concat([encodeAckFrame(3, 1), encodeAckFrame(3, 2)]);
  deliver(two);
  t.equal((await first)?.type, 'ack');
  t.equal((await frames.next(undefined, undefined, waiting))?.type, 'ack');
  t.equal(waits, 1, 'a frame already buffered needs no read and no wait');
  await t.rejects(
    frames.next(undefined, undefined, () => {
      throw new Error('ack write failed');
    }),
    /ack write failed/,
    'the failure comes out of next()',
  );
  const ended = frames.next(undefined, undefined, waiting);
  deliver(null);
  t.equal(await ended, null);
  t.equal(waits, 3, 'before the read that found the end, and at the end');
});
