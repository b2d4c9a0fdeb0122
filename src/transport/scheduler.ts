// Time for the memory transport (memory.ts): the wall-clock scheduler, and a virtual clock on
// which nothing happens until a test advances it.

export interface TimerHandle {
  cancel(): void;
}

/** Where the memory backend gets its time from: real (default) or virtual. Times in ms. */
export interface Scheduler {
  now(): number;
  /** Runs `fn` after `delayMs` (>= 0). Callbacks due at the same time run in scheduling order. */
  schedule(delayMs: number, fn: () => void): TimerHandle;
}

/** Wall-clock scheduler. Zero delays use setImmediate so a 0 ms link is not 1 ms per hop. */
export const realTimeScheduler: Scheduler = {
  now: () => performance.now(),
  schedule(delayMs, fn) {
    if (delayMs <= 0) {
      const h = setImmediate(fn);
      return { cancel: () => clearImmediate(h) };
    }
    const h = setTimeout(fn, delayMs);
    return { cancel: () => clearTimeout(h) };
  },
};

interface VirtualTimer {
  readonly due: number;
  readonly seq: number;
  readonly fn: () => void;
  cancelled: boolean;
}

/** Lets all pending promise reactions run (setImmediate fires after the microtask queue drains). */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Virtual time: nothing happens until the test advances the clock. Between timer callbacks the
 * clock lets pending promise reactions run, so async code reacting to a delivery (a write after
 * a read, say) schedules its own timers before time moves on.
 */
export class VirtualClock implements Scheduler {
  #now = 0;
  #seq = 0;
  #timers: VirtualTimer[] = []; // sorted by (due, seq)

  now(): number {
    return this.#now;
  }

  get pendingTimers(): number {
    return this.#timers.filter((x) => !x.cancelled).length;
  }

  schedule(delayMs: number, fn: () => void): TimerHandle {
    const timer: VirtualTimer = { due: this.#now + Math.max(0, delayMs), seq: this.#seq++, fn, cancelled: false };
    let lo = 0;
    let hi = this.#timers.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const m = this.#timers[mid] as VirtualTimer;
      if (m.due < timer.due || (m.due === timer.due && m.seq < timer.seq)) lo = mid + 1;
      else hi = mid;
    }
    this.#timers.splice(lo, 0, timer);
    return { cancel: () => void (timer.cancelled = true) };
  }

  /** Moves time forward by `ms`, firing every timer due on the way, in order. */
  async advance(ms: number): Promise<void> {
    if (!(ms >= 0)) throw new RangeError(`advance needs ms >= 0, got ${ms}`);
    await this.#runUntil(this.#now + ms);
  }

  /** Fires timers until none is left, or until `limitMs` of virtual time has passed (keep-alive loops). */
  async runUntilIdle(limitMs = 3_600_000): Promise<void> {
    const end = this.#now + limitMs;
    for (;;) {
      await settle();
      const next = this.#timers.find((x) => !x.cancelled);
      if (next === undefined || next.due > end) return;
      await this.#runUntil(next.due);
    }
  }

  async #runUntil(target: number): Promise<void> {
    for (;;) {
      await settle();
      const next = this.#timers[0];
      if (next === undefined || next.due > target) break;
      this.#timers.shift();
      if (next.cancelled) continue;
      this.#now = next.due;
      next.fn();
    }
    this.#now = Math.max(this.#now, target);
    await settle();
  }
}
