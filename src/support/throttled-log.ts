// Warnings about something a flood can repeat (refused connections): the first `burst` in a
// window are logged one by one, the rest are counted and told in one line when the window ends,
// so thousands of hostile connections cost a few log lines, not thousands.
import type { Logger } from '../logger.js';

export class ThrottledWarnings {
  #windowStart = 0;
  #logged = 0;
  #suppressed = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly log: Logger,
    /** What is counted, plural, for the summary line ("refused connections of unpaired keys"). */
    private readonly what: string,
    private readonly burst = 10,
    private readonly windowMs = 10_000,
    private readonly now: () => number = () => performance.now(),
  ) {}

  warn(message: string, fields?: Record<string, unknown>): void {
    const t = this.now();
    if (t - this.#windowStart >= this.windowMs) {
      this.#flush();
      this.#windowStart = t;
      this.#logged = 0;
    }
    if (this.#logged < this.burst) {
      this.#logged++;
      this.log.warn(message, fields);
      return;
    }
    this.#suppressed++;
    if (this.#timer === undefined) {
      this.#timer = setTimeout(() => this.#flush(), Math.max(0, this.#windowStart + this.windowMs - t));
      this.#timer.unref();
    }
  }

  /** Tells what was counted and not logged (also when the listener stops). */
  close(): void {
    this.#flush();
  }

  #flush(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#suppressed === 0) return;
    this.log.warn(`${this.#suppressed} more ${this.what} (not logged one by one)`, { windowMs: this.windowMs });
    this.#suppressed = 0;
  }
}
