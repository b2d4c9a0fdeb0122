// A send-rate cap (--bwlimit): the sender takes each frame's bytes from it before writing.
//
// Goals: the average rate over any interval longer than the burst stays at or under the limit,
// whatever the number of streams sharing one limiter; takers are served in call order, so no
// stream starves; a take can be aborted. Sans-I/O: the clock and the sleep are injected (tests
// run in virtual time). Non-goals: pacing inside a frame (a frame goes out whole), and shaping
// what others send (a pull asks the peer to cap its own sending).
//
// The algorithm is GCRA (the virtual-scheduling form of a token bucket): each take moves a
// theoretical arrival time `tat` on by bytes / rate; a take waits until tat - burst / rate.
// Unlike a bucket refilled by a timer it keeps no timer and no queue: a take's wait is decided
// when it is called, and later takes wait behind it.

/** The highest rate a request can carry: its wire fields (and the control socket's) are uint32 bytes per second. */
export const MAX_RATE_BYTES_PER_SEC = 0xffff_ffff;
/** Most bytes a limiter lets through at once after being idle: a tenth of a second's worth, at most this. */
export const MAX_BURST_BYTES = 256 << 10;
/** Writes are cut into slices of a twentieth of a second's worth, within these bounds: a slow cap still moves bytes often (the receiver's read deadline), a fast one does not pay a write per few KiB. */
const MIN_SLICE_BYTES = 1 << 10;
const MAX_SLICE_BYTES = 64 << 10;

export interface RateLimiterClock {
  /** Milliseconds, monotonic. */
  now(): number;
  /** Resolves after `ms`; rejects with the signal's reason when it aborts first. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const REAL_CLOCK: RateLimiterClock = {
  now: () => performance.now(),
  sleep: (ms, signal) =>
    new Promise((resolve, reject) => {
      if (signal?.aborted === true) {
        reject(signal.reason);
        return;
      }
      const onAbort = (): void => {
        clearTimeout(timer);
        reject(signal?.reason);
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};

export class RateLimiter {
  /** Bytes per second. */
  readonly bytesPerSecond: number;
  readonly burstBytes: number;
  /** What pacedWrite() writes per take. */
  readonly sliceBytes: number;
  readonly #clock: RateLimiterClock;
  /** Theoretical arrival time (ms) of the next byte at exactly the limit. */
  #tat = -Infinity;

  constructor(bytesPerSecond: number, options: { burstBytes?: number; clock?: RateLimiterClock } = {}) {
    if (!(bytesPerSecond > 0) || !Number.isFinite(bytesPerSecond))
      throw new RangeError(`rate limit must be a positive number of bytes per second, got ${bytesPerSecond}`);
    this.sliceBytes = Math.round(Math.min(MAX_SLICE_BYTES, Math.max(MIN_SLICE_BYTES, bytesPerSecond / 20)));
    const burst = options.burstBytes ?? Math.max(this.sliceBytes, Math.min(MAX_BURST_BYTES, bytesPerSecond / 10));
    if (!(burst > 0)) throw new RangeError(`burst must be > 0 bytes, got ${burst}`);
    this.bytesPerSecond = bytesPerSecond;
    this.burstBytes = burst;
    this.#clock = options.clock ?? REAL_CLOCK;
  }

  /** How long a take of `bytes` made now would wait, ms (0: at once). Reserves nothing. */
  delayFor(bytes: number): number {
    const now = this.#clock.now();
    const tat = Math.max(this.#tat, now) + this.#ms(bytes);
    return Math.max(0, tat - this.#ms(this.burstBytes) - now);
  }

  /**
   * Reserves `bytes` and resolves when they may be sent. The reservation stands even when the
   * wait is aborted: the caller may have sent part of it already, and a cap that forgets is no cap.
   */
  async take(bytes: number, signal?: AbortSignal): Promise<void> {
    if (!(bytes >= 0)) throw new RangeError(`bytes must be >= 0, got ${bytes}`);
    signal?.throwIfAborted();
    const wait = this.delayFor(bytes);
    this.#tat = Math.max(this.#tat, this.#clock.now()) + this.#ms(bytes);
    if (wait > 0) await this.#clock.sleep(wait, signal);
  }

  #ms(bytes: number): number {
    return (bytes * 1000) / this.bytesPerSecond;
  }
}

/**
 * `write` under every cap in `limiters` (a transfer's own and a listener-wide one, say): each
 * buffer goes out in pieces of the smallest sliceBytes, each taken from every limiter first.
 * Resolves once the last piece is written, so the caller may reuse the buffer then.
 */
export function pacedWrite(
  limiters: readonly RateLimiter[],
  write: (bytes: Uint8Array) => Promise<void>,
  signal?: AbortSignal,
): (bytes: Uint8Array) => Promise<void> {
  if (limiters.length === 0) return write;
  const slice = Math.min(...limiters.map((l) => l.sliceBytes));
  return async (bytes) => {
    for (let at = 0; at < bytes.length; at += slice) {
      const piece = bytes.subarray(at, Math.min(bytes.length, at + slice));
      for (const limiter of limiters) await limiter.take(piece.length, signal);
      await write(piece);
    }
  };
}
