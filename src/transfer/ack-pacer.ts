// When a data receiver sends its cumulative ACK for one stream: not after every chunk, but once
// ACK_EVERY_CHUNKS are owed or the receiver is about to wait for more data, whichever is first
// (the receiver delays the second by a few ms: exchange/delayed-acks.ts).
//
// Why: each write into the quinn binding costs a fixed ~0.2-0.5 ms of CPU (a round trip through
// its runtime; write-coalescer.ts), whatever its size. One ACK per chunk made a listener receiving
// 10,000 x 64 KiB spend ~2 s of its ~9 s of CPU writing ACKs. An ACK is cumulative, so the latest
// one says everything the earlier ones did.
// Why it cannot stall the sender: the sender stops only when its window is full, and then the
// receiver runs out of frames, is about to wait, and flushes what it owes (within the delay).
// Sans I/O: the caller sends; this only decides when and what.

/** Chunks acknowledged in one ACK at most while frames keep arriving (a window is 32 by default). */
export const ACK_EVERY_CHUNKS = 8;

export class AckPacer {
  readonly #send: (ackedThroughSeq: number) => void;
  readonly #every: number;
  #latest = -1;
  #owed = 0;

  constructor(send: (ackedThroughSeq: number) => void, every = ACK_EVERY_CHUNKS) {
    if (!Number.isInteger(every) || every < 1)
      throw new RangeError(`ack every must be a positive integer, got ${every}`);
    this.#send = send;
    this.#every = every;
  }

  /** Frame `sequence` (and every one before it on this stream) is received and verified. */
  received(sequence: number): void {
    if (sequence <= this.#latest)
      throw new RangeError(`sequence ${sequence} acknowledged after ${this.#latest}: acks are cumulative`);
    this.#latest = sequence;
    if (++this.#owed >= this.#every) this.flush();
  }

  /** Sends what is owed now (the receiver is about to wait, or the stream ended). */
  flush(): void {
    if (this.#owed === 0) return;
    this.#owed = 0;
    this.#send(this.#latest);
  }
}
