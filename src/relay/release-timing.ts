// When a relay driver releases a packet, given timers of whole milliseconds.
//
// setTimeout(d) fires after max(1, floor(d)) ms plus a small, steady lateness L (median ~0.12 ms
// here), so a driver can wake only at now + k + L for whole k >= 1. A packet due between two
// possible wake-ups is sent at one of them, early or late. Rounding to the nearer one (what the
// relays did) is unbiased only when due times fall at random phases of the millisecond grid.
// Request-response traffic locks the phase: each packet arrives right after the previous
// release, so a one-way delay of 2.5 ms was released 0.38 ms early every time, and a 5 ms RTT
// measured 4.46 ms (11% short) while 50 ms measured within 1%.
//
// Dithering removes the bias: at a timer wake-up, a packet due x ms ahead (x < 1 + L, the gap
// to the next possible wake-up) is sent now with probability 1 - x / (1 + L), else at that next
// wake-up, so its expected release is exactly its due time, whatever the phase. One draw per
// wake-up serves all packets (a threshold), which keeps their order. The price is per-packet
// jitter of up to ~1 ms, at mean zero.

/**
 * At a timer wake-up at `now`: send every packet due before the returned time. `random` is in
 * [0, 1) (injectable for tests); `biasMs` (from ReleaseBias) moves the horizon to cancel a
 * measured mean release error.
 */
export function dueHorizon(now: number, latenessMs: number, random: () => number = Math.random, biasMs = 0): number {
  return now + random() * (1 + latenessMs) + biasMs;
}

/** How much of each observed release error the bias takes in (an integral controller's gain). */
const BIAS_GAIN = 0.02;
/** Observations are clamped to one wake-up gap: a stalled loop's 5 ms must not swing the bias. */
const MAX_OBSERVED_ERROR_MS = 1.2;
/** The bias never moves the horizon by more than this, whatever it observes. */
const MAX_BIAS_MS = 1;

/**
 * Cancels what dithering alone leaves: the mean release error measured at the relay. Dithering is
 * unbiased only if the next wake-up comes exactly 1 + L ms later, with L the timers' typical
 * lateness; real wake-ups have a right tail (a busy loop, a late timer), so deferred packets went
 * out late on average: +0.09 to +0.14 ms per packet here, +0.2-0.27 ms on a 5 ms RTT (5%). Each
 * packet released at a timer wake-up reports its error (now - due); the bias integrates a small
 * fraction of it and shifts the horizon, so the mean error is driven to zero.
 */
export class ReleaseBias {
  #biasMs = 0;

  get biasMs(): number {
    return this.#biasMs;
  }

  /** A packet released at a timer wake-up `errorMs` after its due time (negative: early). */
  observe(errorMs: number): void {
    const e = Math.max(-MAX_OBSERVED_ERROR_MS, Math.min(MAX_OBSERVED_ERROR_MS, errorMs));
    this.#biasMs = Math.max(-MAX_BIAS_MS, Math.min(MAX_BIAS_MS, this.#biasMs + BIAS_GAIN * e));
  }
}

/**
 * Whole ms to ask setTimeout for, to wake at the last possible wake-up before `deadline` (or
 * after 1 ms, the soonest): there dueHorizon decides between that wake-up and the next.
 */
export function wakeDelayMs(deadline: number, now: number, latenessMs: number): number {
  return Math.max(1, Math.floor(deadline - now - latenessMs));
}
