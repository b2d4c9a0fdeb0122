// A FIFO of received stream bytes whose memory stays proportional to the bytes it holds.
//
// Goals: large pieces are kept as-is (zero copy); small pieces are copied into a growable tail
// buffer, so a peer that sends many 1-byte DATA frames costs ~1 byte each, not a piece object
// each (the stream's flow-control window bounds bytes, not pieces).
// Non-goals: flow control (the caller counts bytes against its window), waiting, I/O.

/** Pieces below this size are coalesced (bytes). Per-piece overhead (~100 B) is then <= 10%. */
export const COALESCE_BELOW_BYTES = 1024;
/** First capacity of a coalescing buffer; it doubles up to MAX_COALESCE_BUFFER_BYTES. */
const MIN_COALESCE_BUFFER_BYTES = 256;
const MAX_COALESCE_BUFFER_BYTES = 64 * 1024;

interface Piece {
  buf: Uint8Array;
  /** Bytes of `buf` that hold data; for an owned (coalescing) piece, < buf.length while it has room. */
  used: number;
  readonly owned: boolean;
}

export class ByteQueue {
  #pieces: Piece[] = [];
  #head = 0;
  /** Read position inside the head piece. */
  #headOffset = 0;
  #length = 0;

  /** Bytes queued. */
  get length(): number {
    return this.#length;
  }

  /** Appends `bytes`; the queue keeps a reference to pieces >= COALESCE_BELOW_BYTES (do not mutate them). */
  push(bytes: Uint8Array): void {
    const n = bytes.length;
    if (n === 0) return;
    this.#length += n;
    if (n >= COALESCE_BELOW_BYTES) {
      this.#pieces.push({ buf: bytes, used: n, owned: false });
      return;
    }
    const tail = this.#pieces[this.#pieces.length - 1];
    if (tail !== undefined && tail.owned && this.#pieces.length - 1 >= this.#head) {
      if (tail.used + n <= tail.buf.length) {
        tail.buf.set(bytes, tail.used);
        tail.used += n;
        return;
      }
      if (tail.buf.length < MAX_COALESCE_BUFFER_BYTES) {
        // Grow by doubling: amortised O(1) per byte. Views handed out earlier keep the old buffer.
        const grown = new Uint8Array(Math.min(MAX_COALESCE_BUFFER_BYTES, Math.max(2 * tail.buf.length, tail.used + n)));
        if (tail.used + n <= grown.length) {
          grown.set(tail.buf.subarray(0, tail.used));
          grown.set(bytes, tail.used);
          tail.buf = grown;
          tail.used += n;
          return;
        }
      }
    }
    const buf = new Uint8Array(Math.max(MIN_COALESCE_BUFFER_BYTES, n));
    buf.set(bytes);
    this.#pieces.push({ buf, used: n, owned: true });
  }

  /** Removes and returns up to `maxBytes` (>= 1) from the front: a view of one piece, never a concatenation. */
  shift(maxBytes: number): Uint8Array | undefined {
    for (;;) {
      const piece = this.#pieces[this.#head];
      if (piece === undefined) return undefined;
      const available = piece.used - this.#headOffset;
      if (available === 0) {
        this.#dropHead();
        continue;
      }
      const take = Math.min(available, maxBytes);
      const out = piece.buf.subarray(this.#headOffset, this.#headOffset + take);
      this.#headOffset += take;
      this.#length -= take;
      // An owned tail that is fully read stays for appends only if it is still the tail.
      if (this.#headOffset === piece.used && (!piece.owned || this.#head < this.#pieces.length - 1)) this.#dropHead();
      return out;
    }
  }

  clear(): void {
    this.#pieces = [];
    this.#head = 0;
    this.#headOffset = 0;
    this.#length = 0;
  }

  #dropHead(): void {
    this.#head++;
    this.#headOffset = 0;
    // Compact now and then so the array does not grow without bound (O(1) amortised).
    if (this.#head >= 1024 || this.#head === this.#pieces.length) {
      this.#pieces.splice(0, this.#head);
      this.#head = 0;
    }
  }
}
