// When a data receiver that is about to wait for more frames sends the ACK it owes: not at once,
// but ACK_DELAY_MS later (QUIC's and TCP's delayed ACK), unless the pacer sent it meanwhile
// because ACK_EVERY_CHUNKS more arrived (transfer/ack-pacer.ts).
//
// Why: a stream of small files runs dry after nearly every chunk (a read returns one frame), so
// flushing on every wait sent one ACK per file, and each write into the quinn binding costs a
// fixed ~0.1-0.5 ms of CPU on this side plus a packet to receive on the other: 10,000 x 64 KiB
// spent 1-1.5 s of the receiver's CPU writing ACKs. Delayed, the chunks that arrive within the
// delay share one ACK.
// Why it cannot stall the sender for long: a sender stops only when its window is full; the
// pacer acks every ACK_EVERY_CHUNKS (a quarter of the default window), and whatever is owed when
// the stream goes quiet is sent ACK_DELAY_MS later. At the stream's end everything owed is
// flushed at once (flushNow).

/** Longest an owed ACK waits once its stream has run dry, ms (QUIC's default max_ack_delay is 25 ms). */
export const ACK_DELAY_MS = 4;

export class DelayedAckFlush {
  readonly #flush: () => void;
  readonly #delayMs: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;

  /** `flush` sends what is owed (AckPacer.flush: a no-op when nothing is). */
  constructor(flush: () => void, delayMs = ACK_DELAY_MS) {
    if (!Number.isFinite(delayMs) || delayMs < 0)
      throw new RangeError(`ack delay must be a non-negative number of ms, got ${delayMs}`);
    this.#flush = flush;
    this.#delayMs = delayMs;
  }

  /** The receiver is about to wait for data: what it owes goes out within the delay. */
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
