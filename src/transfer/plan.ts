// Transfer plan: what has to travel, computed from the sender's manifests and the receiver's
// answer ("these chunk ids I lack").
//
// Goals: each distinct chunk the receiver lacks is sent exactly once, however many files or
// positions contain it; per file we know which positions arrive over the wire and which the
// receiver fills from what it already has; the final stats (chunksSent / chunksSkipped) fall
// out of the same pass. Pure and deterministic: the same input gives the same plan.
// Non-goals: hashing or reading files (chunking/ and the driver do that), deciding which
// files to offer (sync/ and the CLI do that), scheduling (lpt-scheduler.ts).
//
// Memory is O(chunk references in the manifests); the manifests are themselves bounded by the
// protocol decoder, and `PlanLimits` bounds them again here because the answer comes from a peer.
import { ClawpeerError } from '../errors.js';

/** A chunk id is the 32-byte BLAKE3 hash of the chunk's bytes. */
export const CHUNK_ID_BYTES = 32;
export type ChunkId = Uint8Array;
/** A chunk id as 64 lowercase hex characters, for use as a Map/Set key. */
export type ChunkKey = string;

/** Hex key of a chunk id; PROTOCOL error when it is not exactly 32 bytes (ids come from peers). */
export function chunkKey(id: ChunkId): ChunkKey {
  if (!(id instanceof Uint8Array) || id.length !== CHUNK_ID_BYTES) {
    const got = id instanceof Uint8Array ? `${id.length} bytes` : typeof id;
    throw new ClawpeerError('PROTOCOL', `chunk id must be ${CHUNK_ID_BYTES} bytes, got ${got}`);
  }
  return Buffer.from(id.buffer, id.byteOffset, id.byteLength).toString('hex');
}

export interface ChunkRef {
  readonly id: ChunkId;
  /** Plain (uncompressed, unsealed) length in bytes; > 0. */
  readonly length: number;
}

/** A file as its ordered chunk list. `size` must equal the sum of the chunk lengths. */
export interface FileManifest {
  /** Relative POSIX path inside the share (normalised by paths.ts on the receiving side). */
  readonly path: string;
  readonly size: number;
  readonly mode: number;
  readonly mtimeMs: number;
  readonly chunks: readonly ChunkRef[];
}

/** One distinct chunk that travels, located at its first occurrence (where the sender reads it). */
export interface PlannedChunk {
  readonly key: ChunkKey;
  readonly id: ChunkId;
  readonly length: number;
  readonly fileIndex: number;
  /** Index into that file's `chunks`. */
  readonly chunkIndex: number;
  /** Byte offset of the chunk inside that file. */
  readonly offset: number;
}

export interface FilePlan {
  readonly fileIndex: number;
  readonly path: string;
  readonly size: number;
  /** Positions (indices into the manifest's `chunks`) whose content the receiver lacks. */
  readonly needed: readonly number[];
  /** Positions whose content the receiver already has and fills locally. */
  readonly present: readonly number[];
  /**
   * The chunks this file carries on the wire: `plan.chunks[sendFirst .. sendEnd)`. They are the
   * needed positions whose content did not occur earlier in the plan, so each file's share of
   * the unique list is one contiguous range, which is what the scheduler cuts into work units.
   */
  readonly sendFirst: number;
  readonly sendEnd: number;
  readonly sendBytes: number;
}

export interface TransferStats {
  /** Chunk references over all manifests (positions, duplicates included). */
  readonly chunkRefs: number;
  /** Distinct chunks that travel. */
  readonly chunksSent: number;
  readonly bytesSent: number;
  /** References that do not travel: `chunksPresent + chunksDeduplicated`. */
  readonly chunksSkipped: number;
  readonly bytesSkipped: number;
  /** References the receiver already had. */
  readonly chunksPresent: number;
  /** Repeated references to a chunk that travels once for an earlier position. */
  readonly chunksDeduplicated: number;
}

export interface TransferPlan {
  readonly files: readonly FilePlan[];
  /** Distinct chunks to send, in order of first occurrence (file order, then chunk order). */
  readonly chunks: readonly PlannedChunk[];
  /** Sum of `chunks[].length`: the payload bytes that travel (before framing/AEAD overhead). */
  readonly totalBytes: number;
  readonly stats: TransferStats;
}

export interface PlanLimits {
  /** Most files in one transfer. */
  readonly maxFiles: number;
  /** Most chunk references over all manifests. */
  readonly maxChunkRefs: number;
}

/**
 * 1 Mi files / 16 Mi references (1 TiB at 64 KiB average chunks). At ~100 bytes of bookkeeping
 * per reference (hex key, index entries) the worst case is ~1.6 GiB: callers with tighter memory
 * pass smaller limits, and the protocol's manifest decoder should cap below these.
 */
export const DEFAULT_PLAN_LIMITS: PlanLimits = { maxFiles: 1 << 20, maxChunkRefs: 1 << 24 };

interface IndexedChunk {
  readonly id: ChunkId;
  readonly length: number;
  readonly fileIndex: number;
  readonly chunkIndex: number;
  readonly offset: number;
}

/**
 * Validates manifests (sizes add up, a chunk id always has the same length, limits hold) and
 * returns each distinct chunk at its first occurrence plus the per-position keys.
 * Shared with receive-tracker.ts, where the manifests come from the peer.
 */
export function indexManifests(
  files: readonly FileManifest[],
  limits: PlanLimits = DEFAULT_PLAN_LIMITS,
): {
  readonly firstByKey: ReadonlyMap<ChunkKey, IndexedChunk>;
  readonly keys: readonly (readonly ChunkKey[])[];
  readonly chunkRefs: number;
} {
  if (files.length > limits.maxFiles) {
    throw new ClawpeerError(
      'PROTOCOL',
      `transfer has ${files.length} files, more than the limit of ${limits.maxFiles}`,
    );
  }
  const firstByKey = new Map<ChunkKey, IndexedChunk>();
  const keys: ChunkKey[][] = [];
  let chunkRefs = 0;
  files.forEach((file, fileIndex) => {
    chunkRefs += file.chunks.length;
    if (chunkRefs > limits.maxChunkRefs) {
      throw new ClawpeerError('PROTOCOL', `transfer has more than ${limits.maxChunkRefs} chunk references`);
    }
    if (!Number.isSafeInteger(file.size) || file.size < 0) {
      throw new ClawpeerError('PROTOCOL', `manifest of ${JSON.stringify(file.path)}: invalid size ${file.size}`);
    }
    const fileKeys: ChunkKey[] = [];
    let offset = 0;
    file.chunks.forEach((chunk, chunkIndex) => {
      if (!Number.isSafeInteger(chunk.length) || chunk.length <= 0) {
        throw new ClawpeerError(
          'PROTOCOL',
          `manifest of ${JSON.stringify(file.path)}: chunk ${chunkIndex} has invalid length ${chunk.length}`,
        );
      }
      const key = chunkKey(chunk.id);
      const first = firstByKey.get(key);
      if (first === undefined) {
        firstByKey.set(key, { id: chunk.id, length: chunk.length, fileIndex, chunkIndex, offset });
      } else if (first.length !== chunk.length) {
        // Same BLAKE3 id with two lengths: the manifest is corrupt (or forged).
        throw new ClawpeerError(
          'PROTOCOL',
          `manifest of ${JSON.stringify(file.path)}: chunk ${key} has length ${chunk.length} here and ${first.length} elsewhere`,
        );
      }
      fileKeys.push(key);
      offset += chunk.length;
    });
    if (offset !== file.size) {
      throw new ClawpeerError(
        'PROTOCOL',
        `manifest of ${JSON.stringify(file.path)}: chunks add up to ${offset} bytes, size says ${file.size}`,
      );
    }
    keys.push(fileKeys);
  });
  return { firstByKey, keys, chunkRefs };
}

/**
 * Turns the receiver's lack-set (from the peer: ids must be distinct and each must occur in
 * the manifests) into a Set of keys. PROTOCOL error otherwise.
 */
export function lackSet(lacking: Iterable<ChunkId>, known: ReadonlyMap<ChunkKey, unknown>): Set<ChunkKey> {
  const set = new Set<ChunkKey>();
  for (const id of lacking) {
    const key = chunkKey(id);
    if (!known.has(key))
      throw new ClawpeerError('PROTOCOL', `peer asked for chunk ${key}, which no offered file contains`);
    if (set.has(key)) throw new ClawpeerError('PROTOCOL', `peer asked for chunk ${key} twice`);
    set.add(key);
  }
  return set;
}

/**
 * Computes the work list. `files` are the sender's manifests in the order they were offered;
 * `lacking` is the receiver's answer. Throws ClawpeerError PROTOCOL when the answer names a
 * chunk no file contains, names one twice, or a manifest is inconsistent.
 */
export function planTransfer(
  files: readonly FileManifest[],
  lacking: Iterable<ChunkId>,
  limits: PlanLimits = DEFAULT_PLAN_LIMITS,
): TransferPlan {
  const { firstByKey, keys, chunkRefs } = indexManifests(files, limits);
  const lack = lackSet(lacking, firstByKey);

  const chunks: PlannedChunk[] = [];
  const planned = new Set<ChunkKey>();
  const filePlans: FilePlan[] = [];
  let totalBytes = 0;
  let bytesAll = 0;
  let chunksPresent = 0;
  let chunksDeduplicated = 0;

  files.forEach((file, fileIndex) => {
    const fileKeys = keys[fileIndex] ?? [];
    const needed: number[] = [];
    const present: number[] = [];
    const sendFirst = chunks.length;
    let sendBytes = 0;
    let offset = 0;
    file.chunks.forEach((chunk, chunkIndex) => {
      const key = fileKeys[chunkIndex] ?? chunkKey(chunk.id);
      bytesAll += chunk.length;
      if (!lack.has(key)) {
        present.push(chunkIndex);
        chunksPresent++;
      } else {
        needed.push(chunkIndex);
        if (planned.has(key)) {
          chunksDeduplicated++;
        } else {
          planned.add(key);
          chunks.push({ key, id: chunk.id, length: chunk.length, fileIndex, chunkIndex, offset });
          sendBytes += chunk.length;
        }
      }
      offset += chunk.length;
    });
    totalBytes += sendBytes;
    filePlans.push({
      fileIndex,
      path: file.path,
      size: file.size,
      needed,
      present,
      sendFirst,
      sendEnd: chunks.length,
      sendBytes,
    });
  });

  return {
    files: filePlans,
    chunks,
    totalBytes,
    stats: {
      chunkRefs,
      chunksSent: chunks.length,
      bytesSent: totalBytes,
      chunksSkipped: chunkRefs - chunks.length,
      bytesSkipped: bytesAll - totalBytes,
      chunksPresent,
      chunksDeduplicated,
    },
  };
}
