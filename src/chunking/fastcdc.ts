// FastCDC content-defined chunking (Xia et al., "The Design of Fast Content-Defined Chunking for
// Data Deduplication Based Storage Systems", IEEE TPDS 2020), as a sans-I/O streaming core.
//
// Goals: boundaries that depend only on the bytes and the parameters (so an insertion moves only
// the chunks around it, and two peers with the same negotiated parameters cut identically), fed
// with buffers of any size (a file streams through in bounded memory), and speed: the inner loop
// (gear-scan.ts, WebAssembly with a JS fallback) chunks ~1.9 GB/s of random bytes on one core.
// Non-goals: hashing chunks (blake3.ts), reading files (file-chunker.ts), the paper's optional
// "rolling two bytes at a time" (not done: it is a second loop that must stay boundary-identical
// to this one).
//
// The algorithm, as the boundaries are defined (this text is the contract; the code follows it):
//  - Each chunk starts with hash h = 0. Its first `minBytes` bytes are skipped, not hashed
//    (the paper's cut-point skipping: no boundary can fall there anyway).
//  - For each following byte b at chunk offset j (0-based): h = (h << 1) + GEAR[b], mod 2^32.
//    A 32-bit gear hash shifted one bit per byte forgets a byte after 32 more: bit k of h depends
//    on the last k+1 bytes, so the masks below use high bits to see a ~32-byte window.
//  - Normalized chunking: while j < avgBytes the test is (h & MASK_S) == 0 with
//    log2(avgBytes) + level bits (harder, fewer cuts before the normal size); from j >= avgBytes
//    it is (h & MASK_L) == 0 with log2(avgBytes) - level bits (easier). A hit ends the chunk after
//    byte j (length j + 1).
//  - A chunk that reaches `maxBytes` without a hit ends there. The last chunk of the input ends at
//    the end of the input, whatever its length (it may be shorter than minBytes).
//  - MASK(n) has n one-bits at positions 31 - floor(i * span / n) for i in 0..n-1, with
//    span = min(32, 2n): bits spread evenly down from bit 31 (the paper spreads its mask bits too,
//    which it reports dedups slightly better than n contiguous bits).
// The gear table is the fixed constant in gear-table.ts.

import { ClawpeerError } from '../errors.js';
import { gearScan } from './gear-scan.js';

/** 0 = plain FastCDC (one mask); 1 and 2 are the paper's recommended levels; 3 is very tight. */
export type NormalizationLevel = 0 | 1 | 2 | 3;

/** Chunking parameters. Negotiated in the handshake: both peers must use identical values. */
export interface ChunkingParams {
  /** No chunk is shorter, except the last of a file. */
  readonly minBytes: number;
  /** Where normalized chunking switches masks; a power of two (its log2 sets the mask bits). */
  readonly avgBytes: number;
  /** No chunk is longer. Also the most a chunker's caller must buffer for one chunk. */
  readonly maxBytes: number;
  readonly normalization: NormalizationLevel;
}

/** Bounds on acceptable parameters (a peer proposing others is refused). */
export const CHUNKING_LIMITS = {
  /** Smallest minBytes: below this per-chunk overhead (36-byte manifest entry, a frame) dominates. */
  minBytesFloor: 64,
  /** Smallest avgBytes (8 mask bits). */
  avgBytesFloor: 256,
  /** Largest avgBytes: 4 MiB (22 mask bits; +3 normalization bits still fit in 32). */
  avgBytesCeiling: 4 << 20,
  /** Largest maxBytes: 16 MiB bounds a chunk buffer and a data frame. */
  maxBytesCeiling: 16 << 20,
} as const;

/**
 * Default parameters: 4 KiB / 16 KiB / 64 KiB, normalization level 2.
 *
 * Chosen from bench/results/chunking.json (bench/chunking.ts, 2026-11-30, 2-core Xeon, Node 20).
 * Dedup on real content: an 84 MB tar-like stream of this repo's node_modules (4,820 files), then
 * the same stream with small random edits (insert/delete/overwrite of 1-64 bytes). "Sent" =
 * missing chunk bytes + 36 B of manifest per chunk, as a fraction of the new version:
 *   avg (min = avg/4, max = 4 avg)     16 edits   256 edits   mean chunk on this data
 *   8 KiB  n2                          0.58 %     3.7 %        9.5 KiB
 *   16 KiB n2  (default)               0.58 %     7.0 %       19.3 KiB
 *   16 KiB n1                          0.61 %     8.7 %       21.3 KiB
 *   32 KiB n2                          0.91 %    13.2 %       39.1 KiB
 *   64 KiB n2                          1.8 %     24.5 %       79.3 KiB
 *   64 KiB fixed-size blocks           79 %      98.6 %
 * 16 KiB equals the best measured after sparse edits and is within 2x of 8 KiB after dense ones,
 * with half the chunks of 8 KiB. Chunk + BLAKE3 + root barely depends on the size in this range
 * (345-370 MiB/s per CPU-second for 8-64 KiB, same run; ~356 MiB/s from a page-cached file), but
 * every chunk downstream is a frame, an ack and an index row, and the manifest costs 36 B per
 * ~19 KiB (0.18 %). 64 KiB sends 3x more after sparse edits and 3.5x after dense ones. Level 2
 * beat level 1 at the same average in every edit run (the paper recommends it too). Upgrades
 * between package major versions (15 pairs, 5.3 MB) share little at any size (2-13 %: files
 * are rewritten, not edited), so they did not decide.
 */
export const DEFAULT_CHUNKING: ChunkingParams = Object.freeze({
  minBytes: 4 << 10, // 4 KiB
  avgBytes: 16 << 10, // 16 KiB
  maxBytes: 64 << 10, // 64 KiB
  normalization: 2,
});

/** Returns what is wrong with `params`, or undefined when they are acceptable. */
export function checkChunkingParams(params: ChunkingParams): string | undefined {
  const { minBytes, avgBytes, maxBytes, normalization } = params;
  for (const [name, v] of [
    ['minBytes', minBytes],
    ['avgBytes', avgBytes],
    ['maxBytes', maxBytes],
  ] as const) {
    if (!Number.isSafeInteger(v) || v <= 0) return `chunking ${name} must be a positive integer, got ${String(v)}`;
  }
  if (normalization !== 0 && normalization !== 1 && normalization !== 2 && normalization !== 3) {
    return `chunking normalization must be 0, 1, 2 or 3, got ${String(normalization)}`;
  }
  if (minBytes < CHUNKING_LIMITS.minBytesFloor) {
    return `chunking minBytes ${minBytes} is below ${CHUNKING_LIMITS.minBytesFloor}`;
  }
  if (avgBytes < CHUNKING_LIMITS.avgBytesFloor || avgBytes > CHUNKING_LIMITS.avgBytesCeiling) {
    return `chunking avgBytes ${avgBytes} is outside ${CHUNKING_LIMITS.avgBytesFloor}..${CHUNKING_LIMITS.avgBytesCeiling}`;
  }
  if ((avgBytes & (avgBytes - 1)) !== 0) return `chunking avgBytes ${avgBytes} is not a power of two`;
  if (maxBytes > CHUNKING_LIMITS.maxBytesCeiling) {
    return `chunking maxBytes ${maxBytes} is above ${CHUNKING_LIMITS.maxBytesCeiling}`;
  }
  if (!(minBytes < avgBytes && avgBytes < maxBytes)) {
    return `chunking sizes must satisfy minBytes < avgBytes < maxBytes, got ${minBytes}/${avgBytes}/${maxBytes}`;
  }
  return undefined;
}

/** A frozen copy of `params`, or ClawpeerError CONFIG_INVALID naming the bad field. */
export function validateChunkingParams(params: ChunkingParams): ChunkingParams {
  const problem = checkChunkingParams(params);
  if (problem !== undefined) throw new ClawpeerError('CONFIG_INVALID', problem);
  return Object.freeze({
    minBytes: params.minBytes,
    avgBytes: params.avgBytes,
    maxBytes: params.maxBytes,
    normalization: params.normalization,
  });
}

/** MASK(n) as defined above, as an unsigned 32-bit value. 1 <= n <= 32. */
export function fastCdcMask(bits: number): number {
  if (!Number.isInteger(bits) || bits < 1 || bits > 32) throw new RangeError(`mask bits ${bits} not in 1..32`);
  const span = Math.min(32, 2 * bits);
  let mask = 0;
  for (let i = 0; i < bits; i++) mask |= 1 << (31 - Math.floor((i * span) / bits));
  return mask >>> 0;
}

/** MASK_S (before avgBytes) and MASK_L (from avgBytes on) for validated params. */
export function fastCdcMasks(params: ChunkingParams): { maskS: number; maskL: number } {
  const bits = Math.log2(params.avgBytes);
  return { maskS: fastCdcMask(bits + params.normalization), maskL: fastCdcMask(bits - params.normalization) };
}

/** A chunk as a byte range of its stream. */
export interface ChunkSpan {
  readonly offset: number;
  readonly length: number;
}

/**
 * Streaming FastCDC. Feed the stream's bytes in order with `push` (any split gives the same
 * boundaries), then `finish()` at EOF. It keeps no bytes, only the rolling state, so the caller
 * owns buffering: to hash a chunk it must keep at most `maxBytes` of not-yet-cut input
 * (`pendingBytes`). Offsets are absolute stream positions (safe integers, < 2^53 bytes).
 */
export class FastCdcChunker {
  readonly params: ChunkingParams;
  readonly #min: number;
  readonly #avg: number;
  readonly #max: number;
  readonly #maskS: number; // int32 views of the masks, to compare with int32 hash values
  readonly #maskL: number;
  #hash = 0;
  /** Bytes of the current (not yet cut) chunk seen so far. */
  #chunkLen = 0;
  /** Stream offset of the next byte to be pushed. */
  #position = 0;

  constructor(params: ChunkingParams) {
    this.params = validateChunkingParams(params);
    this.#min = this.params.minBytes;
    this.#avg = this.params.avgBytes;
    this.#max = this.params.maxBytes;
    const { maskS, maskL } = fastCdcMasks(this.params);
    this.#maskS = maskS | 0;
    this.#maskL = maskL | 0;
  }

  /** Stream offset of the next byte to push (= total bytes pushed since start or finish()). */
  get position(): number {
    return this.#position;
  }

  /** Bytes pushed since the last boundary: the caller must still hold these to hash the chunk. */
  get pendingBytes(): number {
    return this.#chunkLen;
  }

  /**
   * Consumes `bytes` and returns the stream offsets where chunks ended inside them (each is the
   * exclusive end of a chunk, ascending). The array is new on every call.
   */
  push(bytes: Uint8Array): number[] {
    const cuts: number[] = [];
    const min = this.#min;
    const avg = this.#avg;
    const max = this.#max;
    const n = bytes.length;
    const base = this.#position;
    let hash = this.#hash;
    let len = this.#chunkLen;
    let i = 0;
    while (i < n) {
      if (len < min) {
        // Cut-point skipping: the first minBytes of a chunk are never hashed.
        const skip = Math.min(min - len, n - i);
        i += skip;
        len += skip;
        continue;
      }
      let mask: number;
      let limit: number;
      if (len < avg) {
        mask = this.#maskS;
        limit = avg;
      } else {
        mask = this.#maskL;
        limit = max;
      }
      const stop = Math.min(n, i + (limit - len));
      const hit = gearScan(bytes, i, stop, hash, mask); // the hot loop (gear-scan.ts)
      hash = hit.hash;
      if (hit.index >= 0) {
        i = hit.index + 1;
        cuts.push(base + i);
        hash = 0;
        len = 0;
      } else {
        len += stop - i;
        i = stop;
        if (len === max) {
          cuts.push(base + i);
          hash = 0;
          len = 0;
        }
      }
    }
    this.#hash = hash;
    this.#chunkLen = len;
    this.#position = base + n;
    return cuts;
  }

  /**
   * Ends the stream: returns the end offset of the final, possibly short, chunk (undefined if the
   * stream ended on a boundary or was empty), then resets so the instance can chunk a new stream
   * from offset 0.
   */
  finish(): number | undefined {
    const end = this.#chunkLen > 0 ? this.#position : undefined;
    this.#hash = 0;
    this.#chunkLen = 0;
    this.#position = 0;
    return end;
  }
}

/** Chunks a whole in-memory buffer: contiguous spans covering every byte, in order. */
export function chunkBoundaries(bytes: Uint8Array, params: ChunkingParams): ChunkSpan[] {
  const chunker = new FastCdcChunker(params);
  const ends = chunker.push(bytes);
  const last = chunker.finish();
  if (last !== undefined) ends.push(last);
  const spans: ChunkSpan[] = [];
  let offset = 0;
  for (const end of ends) {
    spans.push({ offset, length: end - offset });
    offset = end;
  }
  return spans;
}
