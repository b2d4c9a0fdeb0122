// Runs an action once a burst of pokes has gone quiet for `quietMs`, or at the latest `maxDelayMs`
// after the burst's first poke, so a steady stream of events is still followed up. The folder
// watcher's follow-up walk and a listener's share-change notices both work this way.

export class QuietTimer {
  readonly #quietMs: number;
  readonly #maxDelayMs: number;
  readonly #action: () => void;
  #timer: NodeJS.Timeout | undefined;
  #deadline = 0;

  constructor(quietMs: number, maxDelayMs: number, action: () => void) {
    this.#quietMs = quietMs;
    this.#maxDelayMs = maxDelayMs;
    this.#action = action;
  }

  /** Notes an event; true when it starts a new burst (no action pending). */
  poke(now = Date.now()): boolean {
    const first = this.#timer === undefined;
    if (first) this.#deadline = now + this.#maxDelayMs;
    else clearTimeout(this.#timer);
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        this.#action();
      },
      Math.max(0, Math.min(this.#quietMs, this.#deadline - now)),
    );
    return first;
  }

  /** An action is waiting to run. */
  get pending(): boolean {
    return this.#timer !== undefined;
  }

  /** Drops a pending action. */
  cancel(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }
}
