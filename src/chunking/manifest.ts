// File manifests: a file as its ordered chunk list, its size and a root hash over both.
//
// Goals: one 32-byte root that names a file's content AND its chunking, so a receiver that has
// every chunk can check it assembled exactly the announced file; an incremental root builder, so
// a file of millions of chunks is rooted without holding its encoding; a structural check for
// manifests that come from a peer.
// Non-goals: the wire format of a manifest (protocol/), storage of chunk lists (node/).
//
// Canonical encoding, version 1 (what the root hashes; fixed-width, so it is unambiguous):
//   "clawpeer/manifest/v1" 0x00        21 bytes: domain separation from every other BLAKE3 use
//   per chunk, in file order:
//     id                               32 bytes: BLAKE3 of the chunk's bytes
//     length                           uint32 big-endian (chunks are at most 16 MiB)
//   chunk count                        uint64 big-endian
//   file size                          uint64 big-endian (= sum of lengths)
//   root = BLAKE3(encoding)
// Offsets are not encoded: lengths in order determine them, so the root commits to content,
// order and position. The root depends on the chunking parameters (other boundaries give other
// ids), so peers compare roots only under the same negotiated parameters; an empty file has zero
// chunks and the root of an encoding with just the header and trailer.

import { ClawpeerError } from '../errors.js';
import { BLAKE3_OUT_BYTES, blake3, bytesEqual, createBlake3Hasher, toHex } from './blake3.js';
import type { Blake3Hasher } from './blake3.js';
import { CHUNKING_LIMITS, FastCdcChunker } from './fastcdc.js';
import type { ChunkingParams } from './fastcdc.js';

/** A chunk of a file: its byte range and its content id. */
export interface ChunkRef {
  readonly offset: number;
  readonly length: number;
  /** BLAKE3 of the chunk's bytes (32 bytes). */
  readonly id: Uint8Array;
}

export interface FileManifest {
  readonly size: number;
  readonly chunks: readonly ChunkRef[];
  /** BLAKE3 of the canonical encoding above. */
  readonly root: Uint8Array;
}

/** ASCII "clawpeer/manifest/v1" followed by a zero byte. */
export const MANIFEST_DOMAIN: Uint8Array = new TextEncoder().encode('clawpeer/manifest/v1\0');
/** Bytes per chunk entry in the canonical encoding: 32-byte id + uint32 length. */
export const MANIFEST_ENTRY_BYTES = BLAKE3_OUT_BYTES + 4;
/** Bytes of the trailer: uint64 count + uint64 size. */
export const MANIFEST_TRAILER_BYTES = 16;

const UINT32_LIMIT = 2 ** 32;
// Entries are batched before each hasher update: one native call per 1024 chunks, not per chunk.
const ENTRY_BATCH_COUNT = 1024;

function writeUint64BE(view: DataView, at: number, value: number): void {
  view.setUint32(at, Math.floor(value / UINT32_LIMIT));
  view.setUint32(at + 4, value >>> 0);
}

/**
 * Computes a manifest root incrementally: `add` each chunk in file order, then `finish`.
 * Memory is one batch of entries (at most 36 KiB), whatever the number of chunks. A small file's
 * list (the common case in trees) is hashed in one call from a small buffer: a 36 KiB batch and
 * an incremental hasher per file made chunking 2,000 small files spend most of its time
 * allocating (~40 us per file).
 */
export class ManifestRootBuilder {
  /** Created when the batch first overflows; until then everything is in #batch. */
  #hasher: Blake3Hasher | undefined;
  #batch: Uint8Array;
  #batchView: DataView;
  #batchFill: number;
  #count = 0;
  #size = 0;
  #finished = false;

  constructor() {
    this.#batch = new Uint8Array(MANIFEST_DOMAIN.length + 4 * MANIFEST_ENTRY_BYTES + MANIFEST_TRAILER_BYTES);
    this.#batchView = new DataView(this.#batch.buffer);
    this.#batch.set(MANIFEST_DOMAIN, 0);
    this.#batchFill = MANIFEST_DOMAIN.length;
  }

  /** Bytes covered so far (the offset the next chunk must have). */
  get size(): number {
    return this.#size;
  }

  get count(): number {
    return this.#count;
  }

  add(id: Uint8Array, length: number): void {
    if (this.#finished) throw new TypeError('ManifestRootBuilder used after finish()');
    if (id.length !== BLAKE3_OUT_BYTES)
      throw new TypeError(`chunk id has ${id.length} bytes, expected ${BLAKE3_OUT_BYTES}`);
    if (!Number.isSafeInteger(length) || length <= 0 || length >= UINT32_LIMIT) {
      throw new TypeError(`chunk length ${length} not in 1..2^32-1`);
    }
    this.#reserve(MANIFEST_ENTRY_BYTES);
    const at = this.#batchFill;
    this.#batch.set(id, at);
    this.#batchView.setUint32(at + BLAKE3_OUT_BYTES, length);
    this.#batchFill = at + MANIFEST_ENTRY_BYTES;
    this.#count++;
    this.#size += length;
  }

  /** The root; ends the builder. */
  finish(): Uint8Array {
    if (this.#finished) throw new TypeError('ManifestRootBuilder finished twice');
    this.#finished = true;
    this.#reserve(MANIFEST_TRAILER_BYTES);
    writeUint64BE(this.#batchView, this.#batchFill, this.#count);
    writeUint64BE(this.#batchView, this.#batchFill + 8, this.#size);
    const tail = this.#batch.subarray(0, this.#batchFill + MANIFEST_TRAILER_BYTES);
    const hasher = this.#hasher;
    this.#hasher = undefined;
    return hasher === undefined ? blake3(tail) : hasher.update(tail).digest();
  }

  /** Makes room for `bytes` more: grows the batch up to its cap, then hands it to the hasher. */
  #reserve(bytes: number): void {
    if (this.#batchFill + bytes <= this.#batch.length) return;
    const cap = ENTRY_BATCH_COUNT * MANIFEST_ENTRY_BYTES;
    if (this.#batch.length < cap) {
      const grown = new Uint8Array(Math.min(cap, this.#batch.length * 4));
      grown.set(this.#batch.subarray(0, this.#batchFill));
      this.#batch = grown;
      this.#batchView = new DataView(grown.buffer);
      if (this.#batchFill + bytes <= grown.length) return;
    }
    this.#hasher ??= createBlake3Hasher();
    this.#hasher.update(this.#batch.subarray(0, this.#batchFill));
    this.#batchFill = 0;
  }
}

/** The canonical encoding of a chunk list (for tests, debugging and pinning; roots use the builder). */
export function encodeManifestCanonical(chunks: readonly Pick<ChunkRef, 'id' | 'length'>[]): Uint8Array {
  const out = new Uint8Array(MANIFEST_DOMAIN.length + chunks.length * MANIFEST_ENTRY_BYTES + MANIFEST_TRAILER_BYTES);
  const view = new DataView(out.buffer);
  out.set(MANIFEST_DOMAIN, 0);
  let at = MANIFEST_DOMAIN.length;
  let size = 0;
  for (const c of chunks) {
    if (c.id.length !== BLAKE3_OUT_BYTES)
      throw new TypeError(`chunk id has ${c.id.length} bytes, expected ${BLAKE3_OUT_BYTES}`);
    out.set(c.id, at);
    view.setUint32(at + BLAKE3_OUT_BYTES, c.length);
    at += MANIFEST_ENTRY_BYTES;
    size += c.length;
  }
  writeUint64BE(view, at, chunks.length);
  writeUint64BE(view, at + 8, size);
  return out;
}

/** The root of a chunk list (ids and lengths, in order). */
export function manifestRoot(chunks: readonly Pick<ChunkRef, 'id' | 'length'>[]): Uint8Array {
  const builder = new ManifestRootBuilder();
  for (const c of chunks) builder.add(c.id, c.length);
  return builder.finish();
}

/** Chunks and hashes an in-memory buffer: the reference the streaming file chunker must equal. */
export function manifestFromBytes(bytes: Uint8Array, params: ChunkingParams): FileManifest {
  const chunker = new FastCdcChunker(params);
  const ends = chunker.push(bytes);
  const last = chunker.finish();
  if (last !== undefined) ends.push(last);
  const builder = new ManifestRootBuilder();
  const chunks: ChunkRef[] = [];
  let offset = 0;
  for (const end of ends) {
    const id = blake3(bytes.subarray(offset, end));
    chunks.push({ offset, length: end - offset, id });
    builder.add(id, end - offset);
    offset = end;
  }
  return { size: bytes.length, chunks, root: builder.finish() };
}

/**
 * Checks a manifest received from a peer before acting on it: at most `maxChunkCount` chunks,
 * each at most `maxChunkBytes` long (the negotiated maxBytes), contiguous from offset 0, summing
 * to `size`, with 32-byte ids, and a root that matches. Throws ClawpeerError PROTOCOL for a
 * malformed list and HASH_MISMATCH for a root that does not match the list.
 */
export function verifyManifest(
  manifest: FileManifest,
  limits: { maxChunkBytes: number; maxChunkCount: number } = {
    maxChunkBytes: CHUNKING_LIMITS.maxBytesCeiling,
    maxChunkCount: Number.MAX_SAFE_INTEGER,
  },
): void {
  const { chunks, size, root } = manifest;
  if (!Number.isSafeInteger(size) || size < 0)
    throw new ClawpeerError('PROTOCOL', `manifest size ${size} is not a byte count`);
  if (chunks.length > limits.maxChunkCount) {
    throw new ClawpeerError('PROTOCOL', `manifest has ${chunks.length} chunks, limit ${limits.maxChunkCount}`);
  }
  if (root.length !== BLAKE3_OUT_BYTES) throw new ClawpeerError('PROTOCOL', `manifest root has ${root.length} bytes`);
  let offset = 0;
  for (let i = 0; i < chunks.length; i++) {
    const c = chunks[i]!;
    if (c.offset !== offset)
      throw new ClawpeerError('PROTOCOL', `manifest chunk ${i} at offset ${c.offset}, expected ${offset}`);
    if (!Number.isSafeInteger(c.length) || c.length <= 0 || c.length > limits.maxChunkBytes) {
      throw new ClawpeerError('PROTOCOL', `manifest chunk ${i} length ${c.length} not in 1..${limits.maxChunkBytes}`);
    }
    if (c.id.length !== BLAKE3_OUT_BYTES)
      throw new ClawpeerError('PROTOCOL', `manifest chunk ${i} id has ${c.id.length} bytes`);
    offset += c.length;
  }
  if (offset !== size) throw new ClawpeerError('PROTOCOL', `manifest chunks cover ${offset} bytes, size says ${size}`);
  const expected = manifestRoot(chunks);
  if (!bytesEqual(expected, root)) {
    throw new ClawpeerError(
      'HASH_MISMATCH',
      `manifest root ${toHex(root)} does not match its chunk list (${toHex(expected)})`,
    );
  }
}
