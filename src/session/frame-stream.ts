// Frames over one transport stream: a FrameDecoder fed by large reads, and serialised writes.
// Used by data streams (DATA frames one way, ACK frames the other). Every wait is bounded by
// the caller's idle timeout, so a peer that stalls a stream frees it.
import { ClawpeerError } from '../errors.js';
import { FrameDecoder, type Frame } from '../protocol/frame-codec.js';
import type { DuplexStream } from '../transport/types.js';
import { withTimeout } from '../support/timeouts.js';

/** Bytes asked of the transport per read: 256 KiB (quinn allocates per call; PLATFORM.md). */
export const DATA_READ_BYTES = 256 << 10;

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
   * `beforeWait` runs before each read for more (no whole frame is buffered), and at the end of
   * the stream: a receiver arms its delayed ack flush there (exchange/delayed-acks.ts).
   */
  async next(signal?: AbortSignal, busy?: () => boolean, beforeWait?: () => void): Promise<Frame | null> {
    for (;;) {
      const decoded = this.#decoder.next();
      if (decoded.kind === 'frame') return decoded.frame;
      if (this.#ended) {
        beforeWait?.();
        return null;
      }
      beforeWait?.();
      const read = (this.#pendingRead ??= this.stream.read(DATA_READ_BYTES));
      let bytes: Uint8Array | null;
      try {
        bytes = await withTimeout(read, this.idleTimeoutMs, `waiting for data on ${this.what}`, signal);
      } catch (err) {
        // Waived: #pendingRead stays, and the next wait continues the same read.
        if (err instanceof ClawpeerError && err.code === 'TIMEOUT' && busy?.() === true) continue;
        this.#pendingRead = undefined;
        read.catch(() => undefined); // abandoned: its failure is nobody's to handle
        throw err;
      }
      this.#pendingRead = undefined;
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
