// The sender's per-stream sliding window of unacknowledged chunks.
//
// Goals: keep up to W chunks (and optionally B bytes) in flight per stream so one stream fills
// a high-RTT link (throughput ~ min(link, W * chunk / RTT)); know exactly which chunks the
// receiver has written and BLAKE3-verified, which is what makes resume exact; detect a stalled
// peer; sample ack latency. Sans-I/O in the quinn style: time comes in as `now` (ms, any
// monotonic origin), the machine says when it wants to be woken (`pollTimeout`) and what the
// wake-up means (`handleTimeout`).
// Non-goals: retransmission and congestion control (QUIC streams are reliable, ordered and
// congestion controlled already), choosing the next chunk (WorkQueue), framing.
//
// Acks are CUMULATIVE: `onAck(n)` means "every chunk with seq <= n on this stream is written
// and verified". Why not selective: the stream is reliable and ordered, so nothing is ever
// missing in the middle and SACK's loss-recovery benefit does not exist here; a cumulative ack
// is one integer, idempotent to reason about, lets the receiver coalesce acks (one per k
// chunks), and the receiver's per-stream state is a single number, which is exactly the resume
// point. The cost: a receiver that verifies chunks in parallel holds an ack until the prefix
// before it is verified (receive-tracker.ts `StreamAckTracker`), i.e. at most one chunk's
// verify time of extra latency. Acks must advance: one that covers nothing new is a duplicate
// and one beyond the last sent seq is for a chunk never sent; both are PROTOCOL errors.
//
// Memory: a ring of W entries (seq, chunk key, bytes, sentAt). Nothing grows with file size.
import { ClawpeerError } from '../errors.js';
import { chunkKey, type ChunkId, type ChunkKey } from './plan.js';

/** Largest window accepted: 65536 chunks of >= 4 KiB is >= 256 MiB in flight, beyond any BDP we target. */
export const MAX_WINDOW_CHUNKS = 1 << 16;

export interface SendWindowOptions {
  /** W: most chunks sent but not yet acknowledged, 1..MAX_WINDOW_CHUNKS. */
  readonly maxInFlightChunks: number;
  /** Optional cap on unacknowledged payload bytes. A single chunk larger than the cap may still go when nothing is in flight. */
  readonly maxInFlightBytes?: number;
  /**
   * A stream with chunks in flight that sees no ack for this long is stalled. Measured from the
   * later of the oldest in-flight chunk's send time and the last ack, so a slow but moving
   * stream never trips it; pick it well above W * chunk / rate + RTT.
   */
  readonly stallTimeoutMs: number;
}

/** Lifecycle: open -> (finish) -> finishing -> (last ack) -> done; a protocol error or a stall -> failed (terminal). */
export type SendWindowState =
  | { readonly kind: 'open' }
  /** No more chunks will be sent; waiting for the last acks. */
  | { readonly kind: 'finishing' }
  /** Everything sent was acknowledged after `finish()`. */
  | { readonly kind: 'done' }
  | { readonly kind: 'failed'; readonly error: ClawpeerError };

export interface AckedChunk {
  readonly seq: number;
  readonly key: ChunkKey;
  readonly bytes: number;
}

export interface AckResult {
  /** The chunks this ack newly covers, oldest first (at most W). */
  readonly acked: readonly AckedChunk[];
  /** now - sentAt of the newest chunk covered: the one sample not inflated by ack coalescing. */
  readonly rttSampleMs: number;
}

export type TimeoutAction =
  | { readonly kind: 'none' }
  /** The driver should abort the transfer with `error` (TIMEOUT); the window is now failed. */
  | { readonly kind: 'stalled'; readonly error: ClawpeerError; readonly oldestSeq: number; readonly waitedMs: number };

/**
 * Ack latency statistics: send hand-off to ack arrival, so they include send-buffer queueing,
 * serialisation, the receiver's write + verify and the network RTT. `minMs` approximates the
 * path RTT; smoothing follows RFC 6298 (alpha 1/8, beta 1/4).
 */
export interface RttStats {
  readonly samples: number;
  readonly minMs: number;
  readonly maxMs: number;
  readonly meanMs: number;
  readonly smoothedMs: number;
  /** RFC 6298 RTTVAR: smoothed mean deviation. */
  readonly deviationMs: number;
}

export class SendWindow {
  readonly #maxChunks: number;
  readonly #maxBytes: number;
  readonly #stallTimeoutMs: number;

  // Ring buffer of in-flight chunks; entry i (0 = oldest) has seq #oldestSeq + i.
  readonly #keys: (ChunkKey | undefined)[];
  readonly #bytes: Float64Array;
  readonly #sentAt: Float64Array;
  #head = 0;
  #count = 0;
  #oldestSeq = 0;
  #nextSeq = 0;
  #inFlightBytes = 0;

  #state: SendWindowState = { kind: 'open' };
  #lastNow = -Infinity;
  #lastAckAt = -Infinity;

  #chunksSent = 0;
  #bytesSent = 0;
  #chunksAcked = 0;
  #bytesAcked = 0;

  #rttSamples = 0;
  #rttMin = Infinity;
  #rttMax = 0;
  #rttSum = 0;
  #srtt = 0;
  #rttvar = 0;

  constructor(options: SendWindowOptions) {
    const { maxInFlightChunks, stallTimeoutMs } = options;
    if (!Number.isInteger(maxInFlightChunks) || maxInFlightChunks < 1 || maxInFlightChunks > MAX_WINDOW_CHUNKS) {
      throw new RangeError(`maxInFlightChunks must be an integer in 1..${MAX_WINDOW_CHUNKS}, got ${maxInFlightChunks}`);
    }
    const maxBytes = options.maxInFlightBytes ?? Infinity;
    if (!(maxBytes > 0)) throw new RangeError(`maxInFlightBytes must be > 0, got ${maxBytes}`);
    if (!(stallTimeoutMs > 0) || !Number.isFinite(stallTimeoutMs)) {
      throw new RangeError(`stallTimeoutMs must be finite and > 0, got ${stallTimeoutMs}`);
    }
    this.#maxChunks = maxInFlightChunks;
    this.#maxBytes = maxBytes;
    this.#stallTimeoutMs = stallTimeoutMs;
    this.#keys = new Array<ChunkKey | undefined>(maxInFlightChunks).fill(undefined);
    this.#bytes = new Float64Array(maxInFlightChunks);
    this.#sentAt = new Float64Array(maxInFlightChunks);
  }

  get state(): SendWindowState {
    return this.#state;
  }

  /** The seq the next `onSent` must carry (seqs start at 0 and are consecutive per stream). */
  get nextSeq(): number {
    return this.#nextSeq;
  }

  get inFlightChunks(): number {
    return this.#count;
  }

  get inFlightBytes(): number {
    return this.#inFlightBytes;
  }

  get counters(): {
    readonly chunksSent: number;
    readonly bytesSent: number;
    readonly chunksAcked: number;
    readonly bytesAcked: number;
  } {
    return {
      chunksSent: this.#chunksSent,
      bytesSent: this.#bytesSent,
      chunksAcked: this.#chunksAcked,
      bytesAcked: this.#bytesAcked,
    };
  }

  get rtt(): RttStats {
    const n = this.#rttSamples;
    return {
      samples: n,
      minMs: n === 0 ? 0 : this.#rttMin,
      maxMs: this.#rttMax,
      meanMs: n === 0 ? 0 : this.#rttSum / n,
      smoothedMs: this.#srtt,
      deviationMs: this.#rttvar,
    };
  }

  /** True when a chunk of `bytes` may be sent now (window open, below W, below the byte cap). */
  canSend(bytes = 0): boolean {
    if (this.#state.kind !== 'open' || this.#count >= this.#maxChunks) return false;
    return this.#count === 0 || this.#inFlightBytes + bytes <= this.#maxBytes;
  }

  /** Records that chunk `seq` was handed to the stream at `now`. Calling it when `canSend(bytes)` is false is a driver bug. */
  onSent(seq: number, chunkId: ChunkId, bytes: number, now: number): void {
    this.#advanceClock(now);
    if (seq !== this.#nextSeq) throw new RangeError(`onSent: expected seq ${this.#nextSeq}, got ${seq}`);
    if (!Number.isSafeInteger(bytes) || bytes < 0) throw new RangeError(`onSent: invalid byte count ${bytes}`);
    if (!this.canSend(bytes))
      throw new Error(
        `onSent: window cannot send now (state ${this.#state.kind}, ${this.#count}/${this.#maxChunks} chunks, ${this.#inFlightBytes} bytes in flight)`,
      );
    const slot = (this.#head + this.#count) % this.#maxChunks;
    this.#keys[slot] = chunkKey(chunkId);
    this.#bytes[slot] = bytes;
    this.#sentAt[slot] = now;
    if (this.#count === 0) this.#oldestSeq = seq;
    this.#count++;
    this.#nextSeq++;
    this.#inFlightBytes += bytes;
    this.#chunksSent++;
    this.#bytesSent += bytes;
  }

  /**
   * A cumulative ack arrived: every seq <= `ackedThroughSeq` is written and verified.
   * PROTOCOL error (and the window fails) when it acknowledges nothing new or a seq never sent.
   */
  onAck(ackedThroughSeq: number, now: number): AckResult {
    this.#advanceClock(now);
    const kind = this.#state.kind;
    if (kind === 'failed') throw new Error('onAck on a failed window');
    if (!Number.isSafeInteger(ackedThroughSeq) || ackedThroughSeq < 0) {
      return this.#fail(new ClawpeerError('PROTOCOL', `ack for invalid seq ${ackedThroughSeq}`));
    }
    if (ackedThroughSeq >= this.#nextSeq) {
      return this.#fail(
        new ClawpeerError('PROTOCOL', `ack for seq ${ackedThroughSeq}, but only seqs below ${this.#nextSeq} were sent`),
      );
    }
    if (this.#count === 0 || ackedThroughSeq < this.#oldestSeq) {
      return this.#fail(
        new ClawpeerError(
          'PROTOCOL',
          `duplicate ack for seq ${ackedThroughSeq}: everything through ${this.#nextSeq - this.#count - 1} was already acknowledged`,
        ),
      );
    }
    const covered = ackedThroughSeq - this.#oldestSeq + 1;
    const acked: AckedChunk[] = [];
    let newestSentAt = now;
    for (let i = 0; i < covered; i++) {
      const slot = this.#head;
      const bytes = this.#bytes[slot] ?? 0;
      acked.push({ seq: this.#oldestSeq, key: this.#keys[slot] ?? '', bytes });
      newestSentAt = this.#sentAt[slot] ?? now;
      this.#keys[slot] = undefined;
      this.#head = (this.#head + 1) % this.#maxChunks;
      this.#count--;
      this.#oldestSeq++;
      this.#inFlightBytes -= bytes;
      this.#chunksAcked++;
      this.#bytesAcked += bytes;
    }
    this.#lastAckAt = now;
    const sample = now - newestSentAt;
    this.#recordRtt(sample);
    if (kind === 'finishing' && this.#count === 0) this.#state = { kind: 'done' };
    return { acked, rttSampleMs: sample };
  }

  /** No more chunks will be sent on this stream; the window is done once everything in flight is acked. */
  finish(): void {
    switch (this.#state.kind) {
      case 'open':
        this.#state = this.#count === 0 ? { kind: 'done' } : { kind: 'finishing' };
        return;
      case 'finishing':
      case 'done':
      case 'failed':
        return;
      default:
        return assertNever(this.#state);
    }
  }

  /** When the driver should call `handleTimeout` (ms, same origin as `now`), or undefined for "no timer". */
  pollTimeout(): number | undefined {
    const kind = this.#state.kind;
    if (this.#count === 0 || (kind !== 'open' && kind !== 'finishing')) return undefined;
    return Math.max(this.#sentAt[this.#head] ?? 0, this.#lastAckAt) + this.#stallTimeoutMs;
  }

  /** Driver's timer fired. Returns `stalled` (and the window fails) once the deadline has passed. */
  handleTimeout(now: number): TimeoutAction {
    this.#advanceClock(now);
    const deadline = this.pollTimeout();
    if (deadline === undefined || now < deadline) return { kind: 'none' };
    const waitedMs = now - (deadline - this.#stallTimeoutMs);
    const error = new ClawpeerError(
      'TIMEOUT',
      `stream stalled: chunk seq ${this.#oldestSeq} (${this.#keys[this.#head] ?? '?'}) and ${this.#count - 1} more unacknowledged, no ack for ${Math.round(waitedMs)} ms (limit ${this.#stallTimeoutMs} ms)`,
    );
    this.#state = { kind: 'failed', error };
    return { kind: 'stalled', error, oldestSeq: this.#oldestSeq, waitedMs };
  }

  #fail(error: ClawpeerError): never {
    this.#state = { kind: 'failed', error };
    throw error;
  }

  #advanceClock(now: number): void {
    if (!Number.isFinite(now)) throw new RangeError(`now must be finite, got ${now}`);
    if (now < this.#lastNow) throw new RangeError(`time went backwards: ${now} < ${this.#lastNow}`);
    this.#lastNow = now;
  }

  #recordRtt(sampleMs: number): void {
    if (this.#rttSamples === 0) {
      this.#srtt = sampleMs;
      this.#rttvar = sampleMs / 2;
    } else {
      this.#rttvar = 0.75 * this.#rttvar + 0.25 * Math.abs(this.#srtt - sampleMs);
      this.#srtt = 0.875 * this.#srtt + 0.125 * sampleMs;
    }
    this.#rttSamples++;
    this.#rttSum += sampleMs;
    if (sampleMs < this.#rttMin) this.#rttMin = sampleMs;
    if (sampleMs > this.#rttMax) this.#rttMax = sampleMs;
  }
}

function assertNever(x: never): never {
  throw new Error(`unreachable state ${JSON.stringify(x)}`);
}
