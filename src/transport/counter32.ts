// Widens a 32-bit wrapping counter into a total: the quinn binding's per-connection byte
// counters are 32-bit and wrap every 4 GiB (a 4 GiB push reported 124 MB of wire bytes).
// Correct as long as it is read at least once per wrap, which its owner ensures by sampling.

const WRAP = 2 ** 32;

export class Counter32 {
  #last: number;
  #total: number;

  /** `first`: the raw counter now (counted from here: the total starts at it). */
  constructor(first: number) {
    this.#last = first % WRAP;
    this.#total = this.#last;
  }

  /** Takes a new raw reading (mod 2^32) and returns the total so far. */
  update(raw: number): number {
    const now = raw % WRAP;
    this.#total += (now - this.#last + WRAP) % WRAP;
    this.#last = now;
    return this.#total;
  }
}
