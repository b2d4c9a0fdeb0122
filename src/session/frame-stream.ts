// Frames over one transport stream: a FrameDecoder fed by large reads, and serialised writes.
// Used by data streams (DATA frames one way, ACK frames the other). Every wait is bounded by
// the caller's idle timeout, so a peer that stalls a stream frees it.
import { ClawpeerError } from '../errors.js';
import { FrameDecoder, type Frame } from '../protocol/frame-codec.js';
import type { DuplexStream } from '../transport/types.js';
import { withTimeout } from '../support/timeouts.js';

/** Bytes asked of the transport per read: 256 KiB (quinn allocates per call; PLATFORM.md). */
export const DATA_READ_BYTES = 256 << 10;

/**
 * next()'s `beforeWait` runs once a read has waited this long, ms, not before every read. A
 * bulk receiver needs one or two reads per 256 KiB frame, and flushing its owed ack before each
 * made one ACK write per chunk (each a round trip through the quinn runtime on both sides,
 * ~4,000 per GiB) whatever ACK_EVERY_CHUNKS said. A read that waits this long means the frames
 * stopped coming (the sender's window may be full): then the ack goes, at most this late.
 */
export const BEFORE_WAIT_GRACE_MS = 1;

export class FrameStream {
  readonly #decoder: FrameDecoder;
  #ended = false;
  /** A read still pending when a deadline passed that `busy` waived: the next wait continues it. */
  #pendingRead: Promise<Uint8Array | null> | undefined;

  constructor(
    readonly stream: DuplexStream,
    maxFrameBytes: number,
    private readonly idleTimeoutMs: number,
    private readonly what: string,
  ) {
    this.#decoder = new FrameDecoder({ maxFrameBytes });
  }

  /**
   * The next frame, or null at the peer's FIN. TIMEOUT when nothing arrives for idleTimeoutMs,
   * unless `busy()` says then that this side itself is still making progress (a sender whose
   * writes still move: the acks it waits for come behind them), which waives that deadline.
   * `beforeWait` runs when no whole frame is buffered and a read for more has waited
   * BEFORE_WAIT_GRACE_MS, or at the end of the stream (a receiver flushes the acks it owes
   * there: transfer/ack-pacer.ts).
   */
  async next(signal?: AbortSignal, busy?: () => boolean, beforeWait?: () => void): Promise<Frame | null> {
    for (;;) {
      const decoded = this.#decoder.next();
      if (decoded.kind === 'frame') return decoded.frame;
      if (this.#ended) {
        beforeWait?.();
        return null;
      }
      const read = (this.#pendingRead ??= this.stream.read(DATA_READ_BYTES));
      let bytes: Uint8Array | null;
      // Its failure (an ack write that failed before) is this call's, once the read settles.
      let waitFailure: { error: unknown } | undefined;
      const grace =
        beforeWait === undefined
          ? undefined
          : setTimeout(() => {
              try {
                beforeWait();
              } catch (error) {
                waitFailure = { error };
              }
            }, BEFORE_WAIT_GRACE_MS);
      try {
        bytes = await withTimeout(read, this.idleTimeoutMs, `waiting for data on ${this.what}`, signal);
      } catch (err) {
        clearTimeout(grace);
        // Waived: #pendingRead stays, and the next wait continues the same read.
        if (err instanceof ClawpeerError && err.code === 'TIMEOUT' && busy?.() === true) continue;
        this.#pendingRead = undefined;
        read.catch(() => undefined); // abandoned: its failure is nobody's to handle
        throw err;
      }
      clearTimeout(grace);
      this.#pendingRead = undefined;
      if (waitFailure !== undefined) throw waitFailure.error;
      if (bytes === null) {
        this.#ended = true;
        this.#decoder.end(); // PROTOCOL if the peer stopped inside a frame
        continue;
      }
      this.#decoder.push(bytes);
    }
  }

  /** Hands a frame back once nothing uses it any more (FrameDecoder.recycle). */
  recycle(frame: Frame): void {
    this.#decoder.recycle(frame);
  }

  write(frame: Uint8Array): Promise<void> {
    return this.stream.write(frame);
  }
}

export function expectFrame<T extends Frame['type']>(
  frame: Frame | null,
  type: T,
  what: string,
): Extract<Frame, { type: T }> {
  if (frame === null) throw new ClawpeerError('PROTOCOL', `${what}: stream ended, expected a ${type} frame`);
  if (frame.type !== type) throw new ClawpeerError('PROTOCOL', `${what}: expected a ${type} frame, got ${frame.type}`);
  return frame as Extract<Frame, { type: T }>;
}
