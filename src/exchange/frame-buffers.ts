// The buffers one data stream seals its DATA frames into (transfer-send.ts), reused: a frame's
// buffer comes back once the write coalescer is done with it (write-coalescer.ts pushOwned), so
// a stream allocates a few frame-sized buffers for a whole transfer instead of one per chunk.
// Why: a fresh 256 KiB buffer per frame was a GiB of external memory per GiB sent, which V8
// frees only in its collections (and which drives them), and fresh pages cost a fault each.

export class FrameBuffers {
  readonly #free: Buffer[] = [];

  /**
   * `bufferBytes`: the size of the buffers kept (the largest frame the stream normally seals);
   * `keep`: how many free ones are kept (more in use at once are allocated, and dropped when given back).
   */
  constructor(
    readonly bufferBytes: number,
    readonly keep: number,
  ) {}

  /** A buffer of at least `bytes`; its contents are garbage (the sealer writes every byte of a frame). */
  take(bytes: number): Buffer {
    if (bytes > this.bufferBytes) return Buffer.allocUnsafeSlow(bytes); // larger than planned: not kept
    return this.#free.pop() ?? Buffer.allocUnsafeSlow(this.bufferBytes);
  }

  /** Hands `buf` (from take) back: nothing may use it any more. */
  give(buf: Buffer): void {
    if (buf.length === this.bufferBytes && this.#free.length < this.keep) this.#free.push(buf);
  }
}
