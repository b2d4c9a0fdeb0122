// When a data receiver that ran out of frames sends the ACK it owes: not at once, but once its
// stream has been quiet for ACK_DELAY_MS (QUIC's and TCP's delayed ACK), unless the pacer sent it
// meanwhile because ACK_EVERY_CHUNKS more arrived (transfer/ack-pacer.ts).
//
// Why: a stream of small files runs dry after nearly every chunk (a read returns one frame), and a
// bulk stream needs one or two reads per 256 KiB frame; flushing before every read that waits sent
// one ACK per file or per chunk, and each write into the quinn binding costs a fixed ~0.1-0.5 ms
// of CPU on this side plus a packet to receive on the other: 10,000 x 64 KiB spent 1-1.5 s of the
// receiver's CPU writing ACKs. Delayed until the stream is quiet, the chunks that keep arriving
// are acked by the pacer alone, and those that arrive within the delay share one ACK.
// Why it cannot stall the sender for long: a sender stops only when its window is full; the
// pacer acks every ACK_EVERY_CHUNKS (a quarter of the default window), and whatever is owed when
// the stream goes quiet is sent ACK_DELAY_MS to twice that later. At the stream's end everything
// owed is flushed at once (flushNow).

/** How long a stream must be quiet before what it owes is acked, ms (QUIC's default max_ack_delay is 25 ms). */
export const ACK_DELAY_MS = 4;

export class DelayedAckFlush {
  readonly #flush: () => void;
  readonly #delayMs: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;
  /** performance.now() when the last frame arrived. */
  #lastArrival = 0;

  /** `flush` sends what is owed (AckPacer.flush: a no-op when nothing is). */
  constructor(flush: () => void, delayMs = ACK_DELAY_MS) {
    if (!Number.isFinite(delayMs) || delayMs < 0)
      throw new RangeError(`ack delay must be a non-negative number of ms, got ${delayMs}`);
    this.#flush = flush;
    this.#delayMs = delayMs;
  }

  /** A frame arrived: the stream is not quiet (one timestamp, no timer work per frame). */
  arrived(): void {
    this.#lastArrival = performance.now();
  }

  /** The receiver is about to wait for data: what it owes goes out once the stream is quiet. */
  readonly waiting = (): void => {
    if (this.#closed || this.#timer !== undefined) return;
    if (this.#delayMs === 0) {
      this.#flush();
      return;
    }
    this.#timer = setTimeout(this.#fire, this.#delayMs);
  };

  readonly #fire = (): void => {
    this.#timer = undefined;
    if (this.#closed) return;
    // Frames came since the timer was set: the stream is busy and the pacer acks it. Wait out
    // the rest of the quiet time from the last one (one timer per delay, not one per read).
    const quietMs = performance.now() - this.#lastArrival;
    if (quietMs < this.#delayMs) {
      this.#timer = setTimeout(this.#fire, this.#delayMs - quietMs);
      return;
    }
    try {
      this.#flush();
    } catch {
      // A failed earlier write of the stream: its reads and its next write report it.
    }
  };

  /** Sends what is owed now (the stream ended) and stops the timer. */
  flushNow(): void {
    this.#stop();
    this.#flush();
  }

  /** Stops the timer without sending (the stream failed). */
  close(): void {
    this.#closed = true;
    this.#stop();
  }

  #stop(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
