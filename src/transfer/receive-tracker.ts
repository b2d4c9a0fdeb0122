// The receiver's bookkeeping for one transfer.
//
// Goals: `ReceiveTracker` knows, from the peer's manifests and our own lack-set, which chunks
// must arrive over the wire and which we fill from what we already hold; it refuses data
// frames for chunks it did not ask for (or asked for and already got), says where each
// arriving chunk goes (every position in every file that contains it), and reports a file as
// complete the moment its last position is written and verified, so the driver can verify the
// root hash, fsync and rename. `StreamAckTracker` turns "frame n verified" events (which may
// finish out of order when verification runs in parallel) into cumulative acks, and refuses a
// peer that sends more than the window allows.
// Non-goals: writing, hashing or publishing (the driver does those, then reports back here),
// path checks (paths.ts), retrying a local fill that failed (the driver aborts instead).
//
// Bounds: memory is O(chunk references in the manifests), which `PlanLimits` caps; the
// completion queue holds at most one entry per file; StreamAckTracker holds W flags.
import { ClawpeerError } from '../errors.js';
import {
  chunkKey,
  DEFAULT_PLAN_LIMITS,
  indexManifests,
  lackSet,
  type ChunkId,
  type ChunkKey,
  type FileManifest,
  type PlanLimits,
} from './plan.js';
import { MAX_WINDOW_CHUNKS } from './send-window.js';

/** One place a chunk's bytes go. */
export interface ChunkPlacement {
  readonly fileIndex: number;
  readonly chunkIndex: number;
  /** Byte offset inside the file. */
  readonly offset: number;
  readonly length: number;
}

/** A chunk the receiver already holds and copies into place itself. */
export interface LocalChunk {
  readonly key: ChunkKey;
  readonly id: ChunkId;
  readonly length: number;
  readonly placements: readonly ChunkPlacement[];
}

/**
 * Per distinct chunk: peer chunks go awaiting -> writing (frame accepted) -> done;
 * local chunks go awaiting -> done.
 */
type ChunkState = 'awaiting' | 'writing' | 'done';

interface ChunkEntry {
  readonly id: ChunkId;
  readonly source: 'peer' | 'local';
  readonly length: number;
  readonly placements: ChunkPlacement[];
  state: ChunkState;
}

/** filling -> complete (all positions written and verified) -> published (driver renamed it). */
export type FileState =
  | { readonly kind: 'filling'; readonly missingChunks: number }
  | { readonly kind: 'complete' }
  | { readonly kind: 'published' };

export class ReceiveTracker {
  readonly #chunks = new Map<ChunkKey, ChunkEntry>();
  readonly #missing: number[];
  readonly #published: boolean[];
  // Completion queue: each file enters it once (when `missing` reaches 0), so length <= files.
  readonly #completed: number[] = [];
  #completedHead = 0;
  #peerChunksLeft = 0;
  #filesLeft: number;

  /**
   * `files` are the peer's manifests (paths already normalised by the caller with
   * `normalizeSharePath`), `lacking` the ids
   * we answered with. PROTOCOL error when the manifests are inconsistent or over the limits.
   */
  constructor(files: readonly FileManifest[], lacking: Iterable<ChunkId>, limits: PlanLimits = DEFAULT_PLAN_LIMITS) {
    const { firstByKey, keys } = indexManifests(files, limits);
    const paths = new Set<string>();
    for (const file of files) {
      // Two entries for one path would race for the same final name.
      if (paths.has(file.path))
        throw new ClawpeerError('PROTOCOL', `peer offered ${JSON.stringify(file.path)} twice in one transfer`);
      paths.add(file.path);
    }
    const lack = lackSet(lacking, firstByKey);
    for (const [key, first] of firstByKey) {
      const source = lack.has(key) ? 'peer' : 'local';
      this.#chunks.set(key, { id: first.id, source, length: first.length, placements: [], state: 'awaiting' });
      if (source === 'peer') this.#peerChunksLeft++;
    }
    this.#missing = files.map((f) => f.chunks.length);
    this.#published = files.map(() => false);
    this.#filesLeft = files.length;
    files.forEach((file, fileIndex) => {
      let offset = 0;
      file.chunks.forEach((chunk, chunkIndex) => {
        const key = keys[fileIndex]?.[chunkIndex] ?? chunkKey(chunk.id);
        this.#chunks.get(key)?.placements.push({ fileIndex, chunkIndex, offset, length: chunk.length });
        offset += chunk.length;
      });
      if (file.chunks.length === 0) this.#completed.push(fileIndex);
    });
  }

  /** Distinct chunks still expected from the peer (not yet accepted by `onFrame`). */
  get peerChunksAwaited(): number {
    return this.#peerChunksLeft;
  }

  /** True when every file has been published. */
  get isDone(): boolean {
    return this.#filesLeft === 0;
  }

  /** The chunks we fill from our own store: copy each to its placements, verify, then `onWritten`. */
  *localChunks(): IterableIterator<LocalChunk> {
    for (const [key, entry] of this.#chunks) {
      if (entry.source === 'local' && entry.state === 'awaiting') {
        yield { key, id: entry.id, length: entry.length, placements: entry.placements };
      }
    }
  }

  /**
   * A data frame announcing chunk `id` with `length` payload bytes arrived. Returns where to
   * write it. PROTOCOL error for a chunk we did not ask for, one already received, or a length
   * that disagrees with the manifest (checked before any byte is written).
   */
  onFrame(id: ChunkId, length: number): readonly ChunkPlacement[] {
    const key = chunkKey(id);
    const entry = this.#chunks.get(key);
    if (entry === undefined || entry.source !== 'peer') {
      throw new ClawpeerError('PROTOCOL', `peer sent chunk ${key}, which we did not ask for`);
    }
    if (entry.state !== 'awaiting') {
      throw new ClawpeerError('PROTOCOL', `peer sent chunk ${key} a second time`);
    }
    if (length !== entry.length) {
      throw new ClawpeerError('PROTOCOL', `peer sent chunk ${key} with ${length} bytes, manifest says ${entry.length}`);
    }
    entry.state = 'writing';
    this.#peerChunksLeft--;
    return entry.placements;
  }

  /**
   * Chunk `id` is written at all its placements and its BLAKE3 verified (after `onFrame` for a
   * peer chunk; directly for a local one). Files that thereby complete appear in `pollComplete`.
   */
  onWritten(id: ChunkId): void {
    const key = chunkKey(id);
    const entry = this.#chunks.get(key);
    if (entry === undefined) throw new Error(`onWritten: chunk ${key} is not part of this transfer`);
    const ready = entry.source === 'peer' ? entry.state === 'writing' : entry.state === 'awaiting';
    if (!ready) throw new Error(`onWritten: ${entry.source} chunk ${key} is ${entry.state}`);
    entry.state = 'done';
    for (const p of entry.placements) {
      const left = (this.#missing[p.fileIndex] ?? 0) - 1;
      this.#missing[p.fileIndex] = left;
      if (left === 0) this.#completed.push(p.fileIndex);
    }
  }

  /** The next file whose content is complete (in completion order), or undefined. */
  pollComplete(): number | undefined {
    if (this.#completedHead >= this.#completed.length) return undefined;
    const fileIndex = this.#completed[this.#completedHead++];
    if (this.#completedHead === this.#completed.length) {
      this.#completed.length = 0;
      this.#completedHead = 0;
    }
    return fileIndex;
  }

  /** The driver verified the root hash, fsynced and renamed the file into place. */
  markPublished(fileIndex: number): void {
    const state = this.fileState(fileIndex);
    if (state.kind !== 'complete') throw new Error(`markPublished: file ${fileIndex} is ${state.kind}`);
    this.#published[fileIndex] = true;
    this.#filesLeft--;
  }

  fileState(fileIndex: number): FileState {
    const missing = this.#missing[fileIndex];
    if (missing === undefined) throw new RangeError(`no file ${fileIndex}`);
    if (this.#published[fileIndex] === true) return { kind: 'published' };
    return missing === 0 ? { kind: 'complete' } : { kind: 'filling', missingChunks: missing };
  }
}

/**
 * Receiver side of one stream's window. Frames arrive in seq order (the stream is ordered);
 * they may be verified in any order; the cumulative ack is the highest seq whose prefix is all
 * verified. A peer with more than W frames unacknowledged ignored the negotiated window:
 * PROTOCOL error, so a misbehaving sender cannot make us buffer without bound.
 */
export class StreamAckTracker {
  readonly #window: number;
  // verified[seq % W] for seqs in (ackedThrough, nextSeq).
  readonly #verified: Uint8Array;
  #nextSeq = 0;
  #ackedThrough = -1;

  constructor(maxInFlightChunks: number) {
    if (!Number.isInteger(maxInFlightChunks) || maxInFlightChunks < 1 || maxInFlightChunks > MAX_WINDOW_CHUNKS) {
      throw new RangeError(`maxInFlightChunks must be an integer in 1..${MAX_WINDOW_CHUNKS}, got ${maxInFlightChunks}`);
    }
    this.#window = maxInFlightChunks;
    this.#verified = new Uint8Array(maxInFlightChunks);
  }

  /** Highest seq acknowledged so far (-1 before the first ack): the resume point of this stream. */
  get ackedThrough(): number {
    return this.#ackedThrough;
  }

  /** Frames received and not yet covered by an ack. */
  get outstanding(): number {
    return this.#nextSeq - this.#ackedThrough - 1;
  }

  /** A data frame with `seq` arrived. PROTOCOL error when out of order or over the window. */
  onFrame(seq: number): void {
    if (seq !== this.#nextSeq) {
      throw new ClawpeerError('PROTOCOL', `frame seq ${seq} out of order, expected ${this.#nextSeq}`);
    }
    if (this.outstanding >= this.#window) {
      throw new ClawpeerError(
        'PROTOCOL',
        `peer exceeded the window: frame seq ${seq} with ${this.outstanding} frames unacknowledged (window ${this.#window})`,
      );
    }
    this.#verified[seq % this.#window] = 0;
    this.#nextSeq++;
  }

  /**
   * Frame `seq` is written and verified. Returns the cumulative ack to send now, or undefined
   * when an earlier frame is still being verified. Several results ready at once can be
   * coalesced by sending only the last, since acks are cumulative.
   */
  onVerified(seq: number): number | undefined {
    if (
      !Number.isInteger(seq) ||
      seq <= this.#ackedThrough ||
      seq >= this.#nextSeq ||
      this.#verified[seq % this.#window] === 1
    ) {
      throw new Error(`onVerified: seq ${seq} is not an outstanding frame`);
    }
    this.#verified[seq % this.#window] = 1;
    const before = this.#ackedThrough;
    while (this.#ackedThrough + 1 < this.#nextSeq && this.#verified[(this.#ackedThrough + 1) % this.#window] === 1) {
      this.#ackedThrough++;
    }
    return this.#ackedThrough > before ? this.#ackedThrough : undefined;
  }
}
