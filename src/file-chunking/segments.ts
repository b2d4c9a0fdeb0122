// Chunking one file in segments that can run on separate threads, and stitching the segments'
// chunk lists back into exactly the list a single pass from offset 0 gives.
//
// Why it stitches exactly: FastCDC keeps no state across a cut (the gear hash restarts at zero
// and the length count with it), so two passes that both cut at some offset cut identically from
// there on. A segment's pass starts at its own offset, not at a true chunk start, so its first
// chunks may differ from the file's; the pass before it therefore reads on past the segment's
// start (by up to SEGMENT_OVERLAP_MAX_CHUNKS x maxBytes) until it cuts where the segment's pass also
// cut (or starts). From that common cut on, the later segment's list is the file's. Segments
// start at multiples of maxBytes, so even content with no content-defined cuts at all (zeros:
// every chunk is maxBytes long) meets at the first cut. Content that never meets within the
// overlap (possible in theory, e.g. periodic data) gets undefined from stitchSegments: the caller
// then chunks the file in one pass.
// Non-goals: threads and files by path (parallel-manifest.ts), small files (file-chunker.ts).

import { readSync } from 'node:fs';
import { BLAKE3_OUT_BYTES, blake3 } from '../chunking/blake3.js';
import { FastCdcChunker } from '../chunking/fastcdc.js';
import type { ChunkingParams } from '../chunking/fastcdc.js';
import type { ChunkRef } from '../chunking/manifest.js';

/**
 * How far (in maxBytes) a segment's pass reads past the next segment's start to meet it. On
 * random data at normalization level 2, two passes from different offsets met within 0.5
 * maxBytes at the median, 3.6 at the 99.9th percentile and 4.7 at most (20,000 pairs at
 * 64/256/1024 bytes; 400 pairs at 64K/256K/1M: 4.5 at most): 16 leaves a wide margin for
 * 1.6% more reading of a 1 GiB file on 2 threads.
 */
export const SEGMENT_OVERLAP_MAX_CHUNKS = 16;
/** Read size of a segment's pass (at least 2 x maxBytes is used). */
const SEGMENT_READ_BYTES = 4 << 20;

/** What one segment's pass found: its cuts and the ids of the chunks they close. */
export interface ChunkedSegment {
  /** File offset the pass started at (a multiple of maxBytes). */
  readonly start: number;
  /** Absolute end offset of every chunk cut, ascending. */
  readonly ends: readonly number[];
  /** BLAKE3 of each chunk, 32 bytes per chunk, in the order of `ends`. */
  readonly ids: Uint8Array;
  /** The pass read to the end of the file: its last chunk is the file's last. */
  readonly reachedEof: boolean;
}

/**
 * Chunks the file open at `fd` from `start` (fresh chunker) until `stop` or the end of the file,
 * whichever comes first, hashing each chunk. Bytes after the last cut are dropped unless the
 * file ended (then they are the file's last chunk). Synchronous: it runs on a worker thread.
 */
export function chunkSegment(fd: number, start: number, stop: number, params: ChunkingParams): ChunkedSegment {
  const chunker = new FastCdcChunker(params);
  const buffer = Buffer.allocUnsafe(Math.max(SEGMENT_READ_BYTES, 2 * chunker.params.maxBytes));
  const ends: number[] = [];
  const ids: Uint8Array[] = [];
  // buffer[0, fill) holds file bytes [base, base + fill); the chunk being cut starts at buffer index from.
  let base = start;
  let fill = 0;
  let from = 0;
  let reachedEof = false;
  const cut = (end: number): void => {
    ids.push(blake3(buffer.subarray(from, end - base)));
    ends.push(end);
    from = end - base;
  };
  while (base + fill < stop) {
    if (fill === buffer.length) {
      // Full: slide the unfinished chunk (< maxBytes <= half the buffer) to the front.
      buffer.copyWithin(0, from, fill);
      base += from;
      fill -= from;
      from = 0;
    }
    const want = Math.min(buffer.length - fill, stop - (base + fill));
    const got = readSync(fd, buffer, fill, want, base + fill);
    if (got === 0) {
      reachedEof = true;
      break;
    }
    for (const end of chunker.push(buffer.subarray(fill, fill + got))) cut(start + end);
    fill += got;
  }
  if (reachedEof) {
    const last = chunker.finish();
    if (last !== undefined) cut(start + last);
  }
  const packed = new Uint8Array(ids.length * BLAKE3_OUT_BYTES);
  ids.forEach((id, i) => packed.set(id, i * BLAKE3_OUT_BYTES));
  return { start, ends, ids: packed, reachedEof };
}

/**
 * Where each segment's pass starts and stops for a file of `size` bytes cut into `count`
 * segments: starts at multiples of maxBytes, each pass reading into the next segment by the
 * overlap; the last reads to the end of the file (stop = Infinity).
 */
export function segmentRanges(size: number, count: number, params: ChunkingParams): { start: number; stop: number }[] {
  const max = params.maxBytes;
  const step = Math.max(1, Math.ceil(size / count / max)) * max;
  const starts: number[] = [];
  for (let s = 0; s < size && starts.length < count; s += step) starts.push(s);
  return starts.map((start, i) => {
    const next = starts[i + 1];
    return { start, stop: next === undefined ? Infinity : next + SEGMENT_OVERLAP_MAX_CHUNKS * max };
  });
}

/**
 * The file's chunk list from its segments' passes (in file order, the first starting at 0), or
 * undefined when a pass read all it was given without meeting the next pass's cuts. A pass that
 * reached the end of the file (a short last segment lies within its overlap) ends the list.
 */
export function stitchSegments(segments: readonly ChunkedSegment[]): ChunkRef[] | undefined {
  const chunks: ChunkRef[] = [];
  if (segments[0]?.start !== 0) return undefined;
  let pos = 0; // a cut on the file's true chain, and a chunk start in the current segment's pass
  for (const [i, seg] of segments.entries()) {
    const next = seg.reachedEof ? undefined : segments[i + 1];
    const nextStarts = next === undefined ? undefined : new Set([next.start, ...next.ends]);
    let j = pos === seg.start ? 0 : seg.ends.indexOf(pos) + 1;
    if (j === 0 && pos !== seg.start) return undefined; // cannot happen: pos came from this pass's cuts
    for (; j < seg.ends.length; j++) {
      const end = seg.ends[j] as number;
      chunks.push({
        offset: pos,
        length: end - pos,
        id: seg.ids.slice(j * BLAKE3_OUT_BYTES, (j + 1) * BLAKE3_OUT_BYTES),
      });
      pos = end;
      if (nextStarts?.has(end) === true && end >= (next?.start ?? Infinity)) break;
    }
    if (next === undefined) return seg.reachedEof ? chunks : undefined;
    if (pos < next.start || nextStarts?.has(pos) !== true) return undefined; // never met
  }
  return undefined; // the last pass always reads to the end of the file
}
