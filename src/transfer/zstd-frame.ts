// Reads the structure of a zstd frame (RFC 8878, section 3.1) without decompressing it, to bound
// what decompressing it can produce.
//
// Why: a compressed chunk comes from the peer, and a zstd decoder writes whatever the frame
// describes. One 4-byte RLE block regenerates up to 128 KiB, so a 1 MiB payload could expand to
// gigabytes. Walking the block headers first gives an upper bound on the output; the receiver
// refuses a frame whose bound exceeds what the chunk can be before it hands anything to the
// decoder. Non-goals: decoding, dictionaries (refused), skippable frames (refused).

/** zstd frame magic, little-endian on the wire: 28 B5 2F FD. */
export const ZSTD_MAGIC = 0xfd2fb528;
/** Largest regenerated size of one block (RFC 8878 3.1.1.2.4). */
export const ZSTD_MAX_BLOCK_BYTES = 128 << 10;

export interface ZstdFrameShape {
  /** Frame_Content_Size when the header declares it. */
  readonly contentSize: number | undefined;
  /** The most bytes decoding can produce: exact for raw and RLE blocks, the block maximum for compressed ones. */
  readonly maxOutputBytes: number;
  /** Bytes of output that raw and RLE blocks regenerate exactly (a lower bound of the output). */
  readonly exactBytes: number;
  readonly blocks: number;
}

/** Why a payload is not exactly one plain zstd frame; the message names the offending field. */
export class ZstdFrameError extends Error {
  override readonly name = 'ZstdFrameError';
}

function fail(message: string): never {
  throw new ZstdFrameError(message);
}

/**
 * The shape of `payload`, which must be exactly one zstd frame: no dictionary, no trailing bytes,
 * every block within its size limits. Throws ZstdFrameError otherwise.
 */
export function readZstdFrame(payload: Uint8Array): ZstdFrameShape {
  const view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  if (payload.length < 6) fail(`${payload.length} bytes is too short for a zstd frame`);
  const magic = view.getUint32(0, true);
  if (magic !== ZSTD_MAGIC) fail(`magic 0x${magic.toString(16)} is not a zstd frame's 0x${ZSTD_MAGIC.toString(16)}`);
  const descriptor = payload[4] ?? 0;
  const fcsFlag = descriptor >> 6;
  const singleSegment = (descriptor & 0x20) !== 0;
  if ((descriptor & 0x08) !== 0) fail('frame header descriptor has its reserved bit set');
  const hasChecksum = (descriptor & 0x04) !== 0;
  if ((descriptor & 0x03) !== 0) fail('frame names a dictionary; clawpeer never uses one');
  let at = 5;
  let windowBytes = 0;
  if (!singleSegment) {
    const wd = payload[at++] ?? 0;
    const windowLog = 10 + (wd >> 3);
    const base = 2 ** windowLog;
    windowBytes = base + (base / 8) * (wd & 0x07);
  }
  const fcsBytes = fcsFlag === 0 ? (singleSegment ? 1 : 0) : 1 << fcsFlag;
  if (at + fcsBytes > payload.length) fail('frame header is truncated');
  let contentSize: number | undefined;
  if (fcsBytes === 1) contentSize = payload[at] ?? 0;
  else if (fcsBytes === 2) contentSize = view.getUint16(at, true) + 256;
  else if (fcsBytes === 4) contentSize = view.getUint32(at, true);
  else if (fcsBytes === 8) contentSize = Number(view.getBigUint64(at, true));
  at += fcsBytes;
  if (singleSegment) windowBytes = contentSize ?? 0;
  const blockMax = Math.min(windowBytes, ZSTD_MAX_BLOCK_BYTES);

  let maxOutputBytes = 0;
  let exactBytes = 0;
  let blocks = 0;
  for (;;) {
    if (at + 3 > payload.length) fail(`block ${blocks} header is truncated`);
    const header = (payload[at] ?? 0) | ((payload[at + 1] ?? 0) << 8) | ((payload[at + 2] ?? 0) << 16);
    at += 3;
    const last = (header & 1) === 1;
    const type = (header >> 1) & 0x03;
    const size = header >>> 3;
    if (size > blockMax) fail(`block ${blocks} has ${size} bytes, more than the block maximum of ${blockMax}`);
    if (type === 0) {
      at += size; // raw: the bytes as they are
      exactBytes += size;
      maxOutputBytes += size;
    } else if (type === 1) {
      at += 1; // RLE: one byte, repeated `size` times
      exactBytes += size;
      maxOutputBytes += size;
    } else if (type === 2) {
      at += size; // compressed: regenerates at most the block maximum
      maxOutputBytes += blockMax;
    } else {
      fail(`block ${blocks} has the reserved block type 3`);
    }
    if (at > payload.length) fail(`block ${blocks} runs past the end of the payload`);
    blocks++;
    if (last) break;
  }
  if (hasChecksum) at += 4;
  if (at !== payload.length) fail(`${payload.length - at} bytes follow the frame (exactly one frame expected)`);
  if (contentSize !== undefined && (contentSize > maxOutputBytes || contentSize < exactBytes)) {
    fail(`frame declares ${contentSize} bytes of content, but its blocks make ${exactBytes}..${maxOutputBytes}`);
  }
  return { contentSize, maxOutputBytes, exactBytes, blocks };
}
