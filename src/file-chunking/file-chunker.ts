// The file adapter for the chunking core: streams a file from disk through FastCDC and BLAKE3.
//
// Goals: bounded memory whatever the file size (one sliding buffer of a few MiB; only a file of
// at most WHOLE_READ_MAX_BYTES is read whole, by manifestFromFile), the same chunks and root as
// manifestFromBytes() on the same bytes, and chunk bytes handed to the caller as they are cut,
// so a sender can seal them without reading the file twice.
// Non-goals: noticing a file that changes while it is read (the caller compares size/mtime before
// and after, and re-chunks), choosing which chunks to send (transfer/).
// This is the one module of chunking/ that does I/O; the cutting and hashing stay in the cores.

import { closeSync, fstatSync, openSync, read, readSync } from 'node:fs';
import { promisify } from 'node:util';
import { ClawpeerError } from '../errors.js';
import { blake3 } from '../chunking/blake3.js';
import { FastCdcChunker } from '../chunking/fastcdc.js';
import type { ChunkingParams } from '../chunking/fastcdc.js';
import { ManifestRootBuilder, manifestFromBytes } from '../chunking/manifest.js';
import { parallelManifest } from './parallel-manifest.js';
import type { ChunkRef, FileManifest } from '../chunking/manifest.js';

/** Default sliding-buffer size: 4 MiB (at least 2 x maxBytes is always used). */
export const DEFAULT_CHUNK_BUFFER_BYTES = 4 << 20;
/**
 * Files up to this size are read with synchronous calls: an awaited read costs a thread-pool
 * round trip (~0.1 ms here) that dwarfs reading a small file from the page cache, and trees are
 * mostly small files. The event loop is blocked for at most one such read (~0.2 ms).
 */
export const SYNC_READ_MAX_BYTES = 1 << 20;
/**
 * Files up to this size get their manifest from one read of the whole file into a buffer of its
 * size (manifestFromFile). The streaming chunker takes a 4 MiB window per file: pushing 10,000 x
 * 64 KiB files cost the sender 30 CPU-seconds with it and 19 without (45.7 s -> 29.3 s wall,
 * bench/transfer.ts, same run). Memory stays bounded by this size.
 */
export const WHOLE_READ_MAX_BYTES = 1 << 20;

const readAsync = promisify(read);

export interface ChunkFileOptions {
  /** Sliding-buffer size in bytes; raised to 2 x maxBytes if smaller. */
  readonly bufferBytes?: number;
  readonly signal?: AbortSignal;
  /**
   * The file's size as the caller just stat'ed it (a scan's walk): a file that small is read
   * whole without an fstat. A wrong hint costs nothing but the fstat: a file that grew past it
   * is stat'ed and chunked as without one, and one that shrank gives a manifest of the bytes
   * read, whose size then differs from the caller's stat.
   */
  readonly sizeHint?: number;
}

export type FileChunkEvent =
  | {
      readonly kind: 'chunk';
      readonly chunk: ChunkRef;
      /** The chunk's bytes: a view into the sliding buffer, valid only until the next iteration. */
      readonly bytes: Uint8Array;
    }
  | { readonly kind: 'end'; readonly size: number; readonly chunkCount: number; readonly root: Uint8Array };

/**
 * Sliding buffers are reused: allocating (and zeroing) a fresh 4 MiB window per file made
 * chunking 1,000 small files spend more time in allocation and GC than in hashing. A few spares
 * are kept; contents are never read before being overwritten by a file read.
 */
const SPARE_BUFFERS_MAX = 4;
const spareBuffers: Uint8Array[] = [];

function takeBuffer(bytes: number): Uint8Array {
  const i = spareBuffers.findIndex((b) => b.length === bytes);
  if (i >= 0) return spareBuffers.splice(i, 1)[0] as Uint8Array;
  return Buffer.allocUnsafeSlow(bytes);
}

function returnBuffer(buffer: Uint8Array): void {
  if (spareBuffers.length < SPARE_BUFFERS_MAX) spareBuffers.push(buffer);
}

function ioError(path: string, what: string, err: unknown): ClawpeerError {
  const detail = err instanceof Error ? err.message : String(err);
  return new ClawpeerError('IO', `cannot ${what} ${path}: ${detail}`, { cause: err });
}

function checkAborted(signal: AbortSignal | undefined, path: string): void {
  if (signal?.aborted === true) {
    throw new ClawpeerError('ABORTED', `chunking ${path} aborted`, { cause: signal.reason });
  }
}

/** Opens `path` for reading: a failure is an IO error naming the file. */
function openFile(path: string): number {
  try {
    return openSync(path, 'r');
  } catch (err) {
    throw ioError(path, 'open', err);
  }
}

/** Opens `path` for reading and stats it: both failures are IO errors naming the file. */
function openForChunking(path: string): { fd: number; size: number } {
  const fd = openFile(path);
  try {
    return { fd, size: fstatSync(fd).size };
  } catch (err) {
    closeSync(fd);
    throw ioError(path, 'stat', err);
  }
}

/**
 * Chunks the file at `path`: yields one 'chunk' event per chunk in file order, then one 'end'
 * event with the size and manifest root. Throws ClawpeerError IO (open/read failed) or ABORTED.
 */
export async function* chunkFile(
  path: string,
  params: ChunkingParams,
  options: ChunkFileOptions = {},
): AsyncGenerator<FileChunkEvent, void, undefined> {
  const chunker = new FastCdcChunker(params);
  checkAborted(options.signal, path);
  const { fd, size } = openForChunking(path);
  try {
    yield* chunkOpenFile(fd, size, path, chunker, options);
  } finally {
    closeSync(fd);
  }
}

/**
 * chunkFile's work on a file already open at `fd` (read from its current position, which must
 * be the start; `statSize` picks synchronous reads for small files). The caller closes `fd`.
 */
async function* chunkOpenFile(
  fd: number,
  statSize: number,
  path: string,
  chunker: FastCdcChunker,
  options: ChunkFileOptions,
): AsyncGenerator<FileChunkEvent, void, undefined> {
  const bufferBytes = Math.max(options.bufferBytes ?? DEFAULT_CHUNK_BUFFER_BYTES, 2 * chunker.params.maxBytes);
  const { signal } = options;
  const small = statSize <= SYNC_READ_MAX_BYTES;
  const buffer = takeBuffer(bufferBytes);
  try {
    const root = new ManifestRootBuilder();
    // buffer[0, fill) holds file bytes [bufferBase, bufferBase + fill); the current chunk starts at
    // buffer index chunkStart. Invariant: fill - chunkStart = chunker.pendingBytes < maxBytes.
    let bufferBase = 0;
    let fill = 0;
    let chunkStart = 0;

    const cut = (end: number): FileChunkEvent => {
      const startAbs = bufferBase + chunkStart;
      const bytes = buffer.subarray(chunkStart, end - bufferBase);
      const id = blake3(bytes);
      root.add(id, bytes.length);
      chunkStart = end - bufferBase;
      return { kind: 'chunk', chunk: { offset: startAbs, length: bytes.length, id }, bytes };
    };

    for (;;) {
      checkAborted(signal, path);
      if (fill === buffer.length) {
        // Full: slide the unfinished chunk (< maxBytes <= half the buffer) to the front.
        buffer.copyWithin(0, chunkStart, fill);
        bufferBase += chunkStart;
        fill -= chunkStart;
        chunkStart = 0;
      }
      let bytesRead: number;
      try {
        // A small file that grows while read goes on with the same reads, still bounded.
        bytesRead = small
          ? readSync(fd, buffer, fill, buffer.length - fill, null)
          : (await readAsync(fd, buffer, fill, buffer.length - fill, null)).bytesRead;
      } catch (err) {
        throw ioError(path, 'read', err);
      }
      if (bytesRead === 0) break;
      const ends = chunker.push(buffer.subarray(fill, fill + bytesRead));
      fill += bytesRead;
      for (const end of ends) yield cut(end);
    }
    const last = chunker.finish();
    if (last !== undefined) yield cut(last);
    const size = bufferBase + fill;
    yield { kind: 'end', size, chunkCount: root.count, root: root.finish() };
  } finally {
    returnBuffer(buffer);
  }
}

/**
 * Where readWholeIfSmall reads, grown to the largest small file seen (at most
 * WHOLE_READ_MAX_BYTES + 1). A fresh buffer per file cost more than the read itself: new memory
 * is faulted in page by page (a scan of 10,000 x 64 KiB spent ~0.9 s of CPU in these reads).
 */
let wholeReadBuffer = Buffer.allocUnsafe(0);

/**
 * The whole content of the open file `fd` if it is at most `maxBytes` long when read, else
 * undefined (it is larger, or grew past its stat size while read: the caller streams it
 * instead). Reads at explicit positions, so the file position stays at the start.
 * Synchronous, like the small reads of chunkFile (SYNC_READ_MAX_BYTES). The bytes are a view
 * of wholeReadBuffer: valid until the next call, so the caller consumes them before it awaits.
 */
function readWholeIfSmall(fd: number, statSize: number, path: string, maxBytes: number): Buffer | undefined {
  if (statSize > maxBytes) return undefined;
  // One byte more than the stat size: filling it means the file grew since.
  if (wholeReadBuffer.length < statSize + 1) wholeReadBuffer = Buffer.allocUnsafe(statSize + 1);
  const buf = wholeReadBuffer.subarray(0, statSize + 1);
  let filled = 0;
  try {
    while (filled < buf.length) {
      const asked = buf.length - filled;
      const bytesRead = readSync(fd, buf, filled, asked, filled);
      filled += bytesRead;
      // A short read of a regular file is its end: no second call to be told 0 (one per file).
      if (bytesRead < asked) break;
    }
  } catch (err) {
    throw ioError(path, 'read', err);
  }
  return filled > statSize ? undefined : buf.subarray(0, filled);
}

/**
 * The whole manifest of the file at `path` (chunk list in memory: ~100 bytes per chunk): small
 * files from one read (WHOLE_READ_MAX_BYTES), large ones on several threads where there are
 * cores for them (parallel-manifest.ts), others streamed through chunkFile. Same manifest
 * every way.
 */
export async function manifestFromFile(
  path: string,
  params: ChunkingParams,
  options: ChunkFileOptions = {},
): Promise<FileManifest> {
  const chunker = new FastCdcChunker(params); // validates before touching the file, like chunkFile
  checkAborted(options.signal, path);
  const hint = options.sizeHint;
  if (hint !== undefined && Number.isSafeInteger(hint) && hint >= 0 && hint <= WHOLE_READ_MAX_BYTES) {
    const fd = openFile(path);
    try {
      const whole = readWholeIfSmall(fd, hint, path, WHOLE_READ_MAX_BYTES);
      if (whole !== undefined) return manifestFromBytes(whole, chunker.params); // synchronous: the view is still valid
    } finally {
      closeSync(fd);
    }
    // It grew past the hint: chunked as without one.
  }
  const { fd, size } = openForChunking(path);
  try {
    const whole = readWholeIfSmall(fd, size, path, WHOLE_READ_MAX_BYTES);
    if (whole !== undefined) return manifestFromBytes(whole, chunker.params); // synchronous: the view is still valid
    const parallel = await parallelManifest(fd, size, path, chunker.params, options.signal);
    if (parallel !== undefined) return parallel;
    const chunks: ChunkRef[] = [];
    for await (const event of chunkOpenFile(fd, size, path, chunker, options)) {
      if (event.kind === 'chunk') chunks.push(event.chunk);
      else return { size: event.size, chunks, root: event.root };
    }
    throw new TypeError('chunkFile ended without an end event');
  } finally {
    closeSync(fd);
  }
}
