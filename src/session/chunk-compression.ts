// Optional zstd compression of DATA chunks: the codec (the @mongodb-js/zstd binding, an
// optional dependency), the capability set that offers it, the sender's policy and the
// receiver's bounded decompression.
//
// Negotiation: a node offers 'zstd' (before 'none') when the binding loads and its config says
// compression 'auto'; the session's list is the client's order filtered by the server, so a
// client started with --no-compress (offering only 'none') turns it off for both directions.
// The sender compresses when the session's first codec is 'zstd'.
// Sender policy: a chunk goes compressed only if that saves more than 5% (else raw, flag clear).
// Incompressible data would cost a compression attempt per chunk (a thread-pool round trip each,
// which on a busy host made 4 KiB revisions wait ~1 ms apiece), so three filters come first,
// cheapest first: files whose names say they are compressed already (.zip, .jpg, .zst, ...) are
// never tried; after a miss, the next 1, 2, 4 .. 64 chunks of that kind of file (by extension)
// go raw untried; and a chunk of 1 KiB or more whose sampled byte entropy is near 8 bits
// (byte-entropy.ts) goes raw untried. The entropy test is what catches random files named
// page.r001, page.r002 .., each its own "kind" for the backoff.
// Receiver: the frame's block headers are read first (zstd-frame.ts) and a frame that could
// decode to more than the chunk allows is refused before the decoder runs; the output must be
// exactly the header's chunkBytes, and BLAKE3 is checked on it as on any chunk.
import { createRequire } from 'node:module';
import path from 'node:path';
import { ClawpeerError } from '../errors.js';
import { DEFAULT_CAPABILITIES, type Capabilities, type SessionCapabilities } from '../protocol/capabilities.js';
import type { CompressionChoice } from '../home/config.js';
import { sampledEntropyBits } from '../transfer/byte-entropy.js';
import { readZstdFrame, ZSTD_MAX_BLOCK_BYTES, ZstdFrameError } from '../transfer/zstd-frame.js';

/** The binding's API (promise-based: both run on the libuv thread pool, off the event loop). */
export interface ZstdCodec {
  compress(data: Buffer, level?: number): Promise<Buffer>;
  decompress(data: Buffer): Promise<Buffer>;
}

/** zstd level 3 (its default): ~80 ms per 100 x 256 KiB of text here, at ~2.2x. */
const ZSTD_LEVEL = 3;
/** A chunk is sent compressed only when that saves more than 5%. */
const MAX_COMPRESSED_RATIO = 0.95;
/** Below this, framing overhead eats what compression could save. */
const MIN_COMPRESS_BYTES = 128;
/**
 * Chunks at least this long are first judged by their sampled entropy (smaller samples read
 * low: 512 random bytes show ~7.8 bits).
 */
const ENTROPY_MIN_BYTES = 1024;
/**
 * Above this (bits per byte, bias-corrected), a chunk goes raw untried. Measured here on 1,823
 * 64 KiB pieces of /usr (binaries, libraries, docs, .debs, fonts, icons): compressed formats and
 * random bytes read 7.90-8.0, everything zstd shrank by 5% or more read <= 7.77 except 2 (a
 * PNG, a .ps.gz), and 1 piece under the threshold did not shrink.
 */
const INCOMPRESSIBLE_BITS_PER_BYTE = 7.85;
/** Longest run of chunks sent raw untried after misses. */
const MAX_SKIP_CHUNKS = 64;
/** Extensions of formats that are compressed already: never worth an attempt. */
const COMPRESSED_EXTENSIONS = new Set([
  '.7z',
  '.apk',
  '.avif',
  '.br',
  '.bz2',
  '.deb',
  '.docx',
  '.flac',
  '.gif',
  '.gz',
  '.heic',
  '.jar',
  '.jpeg',
  '.jpg',
  '.lz',
  '.lz4',
  '.lzma',
  '.m4a',
  '.mkv',
  '.mov',
  '.mp3',
  '.mp4',
  '.ogg',
  '.opus',
  '.png',
  '.pptx',
  '.rar',
  '.rpm',
  '.tgz',
  '.txz',
  '.webm',
  '.webp',
  '.whl',
  '.woff2',
  '.xlsx',
  '.xz',
  '.zip',
  '.zst',
]);

let codec: ZstdCodec | null | undefined;

/** The zstd binding, or null when it is not installed or does not load here (loaded once). */
export function zstdCodec(): ZstdCodec | null {
  if (codec === undefined) {
    // The binding's musl check calls process.report.getReport(), which otherwise names both ends
    // of every open socket by a synchronous reverse DNS lookup (getnameinfo): with a DNS server
    // that does not answer (an offline LAN), a listener's first handshake blocked ~10 s per
    // socket (its LAN discovery socket's 0.0.0.0) and the dialer's connection died meanwhile.
    const report = process.report as { excludeNetwork?: boolean } | undefined;
    const excluded = report?.excludeNetwork;
    if (report !== undefined) report.excludeNetwork = true;
    try {
      codec = createRequire(import.meta.url)('@mongodb-js/zstd') as ZstdCodec;
    } catch {
      codec = null;
    } finally {
      if (report !== undefined && excluded !== undefined) report.excludeNetwork = excluded;
    }
  }
  return codec;
}

/** What this node offers in a Hello or supports in a Welcome. */
export function localCapabilities(compression: CompressionChoice): Capabilities {
  if (compression === 'none' || zstdCodec() === null) return DEFAULT_CAPABILITIES;
  return { ...DEFAULT_CAPABILITIES, compression: ['zstd', 'none'] };
}

/**
 * Most bytes a compressed chunk of `chunkBytes` may claim to decode to. zstd cuts its input into
 * blocks of 128 KiB, and a compressed block only promises "at most 128 KiB", so the bound of an
 * honest frame is the chunk rounded up to whole blocks; twice that leaves room for encoders that
 * split blocks smaller, and still bounds what a lying peer can make us allocate.
 */
export function maxDecodedBytes(chunkBytes: number): number {
  return 2 * (Math.ceil(chunkBytes / ZSTD_MAX_BLOCK_BYTES) + 1) * ZSTD_MAX_BLOCK_BYTES;
}

/** Why a zstd frame cannot be the compressed form of a `chunkBytes` chunk; undefined if it can. */
function frameProblem(payload: Uint8Array, chunkBytes: number): string | undefined {
  let shape;
  try {
    shape = readZstdFrame(payload);
  } catch (err) {
    if (err instanceof ZstdFrameError) return err.message;
    throw err;
  }
  if (shape.contentSize !== undefined && shape.contentSize !== chunkBytes)
    return `frame declares ${shape.contentSize} bytes, the chunk has ${chunkBytes}`;
  if (shape.exactBytes > chunkBytes || shape.maxOutputBytes < chunkBytes)
    return `its blocks decode to ${shape.exactBytes}..${shape.maxOutputBytes} bytes, the chunk has ${chunkBytes}`;
  const limit = maxDecodedBytes(chunkBytes);
  if (shape.maxOutputBytes > limit)
    return `its blocks could decode to ${shape.maxOutputBytes} bytes, more than the ${limit} allowed for a ${chunkBytes}-byte chunk`;
  return undefined;
}

/**
 * The chunk `key` from its compressed payload: PROTOCOL when the frame is malformed, could
 * decode to more than the chunk allows, or does not decode to exactly `chunkBytes` bytes.
 */
export async function decompressChunk(
  zstd: ZstdCodec,
  payload: Uint8Array,
  chunkBytes: number,
  key: string,
): Promise<Uint8Array> {
  const problem = frameProblem(payload, chunkBytes);
  if (problem !== undefined) throw new ClawpeerError('PROTOCOL', `compressed chunk ${key} refused: ${problem}`);
  let plain: Buffer;
  try {
    plain = await zstd.decompress(Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength));
  } catch (cause) {
    throw new ClawpeerError('PROTOCOL', `compressed chunk ${key} does not decompress: ${(cause as Error).message}`, {
      cause,
    });
  }
  if (plain.length !== chunkBytes)
    throw new ClawpeerError(
      'PROTOCOL',
      `compressed chunk ${key} decompressed to ${plain.length} bytes, its header says ${chunkBytes}`,
    );
  return plain;
}

/** The codec a sender uses in this session: zstd when it leads the negotiated list and loads here. */
export function senderCodec(caps: SessionCapabilities): ZstdCodec | null {
  return caps.compression[0] === 'zstd' ? zstdCodec() : null;
}

/** The receiver's codec for a compressed frame; PROTOCOL when the session never agreed on one. */
export function receiverCodec(caps: SessionCapabilities, streamId: number): ZstdCodec {
  const zstd = caps.compression.includes('zstd') ? zstdCodec() : null;
  if (zstd === null)
    throw new ClawpeerError('PROTOCOL', `data stream ${streamId} sent a compressed chunk, but no codec was negotiated`);
  return zstd;
}

/** The extension that tells a kind of file (lower case, with the dot; '' for none). */
function extensionOf(filePath: string): string {
  return path.extname(filePath).toLowerCase();
}

/** True for names of formats that are compressed already (by extension). */
export function looksCompressed(filePath: string): boolean {
  return COMPRESSED_EXTENSIONS.has(extensionOf(filePath));
}

/** Misses of one kind of file: how many chunks to send raw untried, and how many after the next miss. */
interface Backoff {
  skip: number;
  next: number;
}

/** Distinct extensions tracked apart; beyond this, the rest share one entry. */
const MAX_TRACKED_EXTENSIONS = 256;

/**
 * The sender's side of one transfer: compresses a chunk when that pays, and stops trying for a
 * while after it did not (see the module comment). Misses are tracked per file extension, so
 * random .bin files do not stop the .log files beside them from being compressed, while a tree
 * of 10,000 incompressible files of one kind costs a few dozen attempts. Shared by the streams.
 */
export class ChunkCompressor {
  readonly #zstd: ZstdCodec;
  readonly #backoff = new Map<string, Backoff>();
  #compressed = 0;

  constructor(zstd: ZstdCodec) {
    this.#zstd = zstd;
  }

  /** Chunks sent compressed so far. */
  get compressedChunks(): number {
    return this.#compressed;
  }

  #backoffFor(extension: string): Backoff {
    let kind = extension;
    if (!this.#backoff.has(kind) && this.#backoff.size >= MAX_TRACKED_EXTENSIONS) kind = '*';
    let b = this.#backoff.get(kind);
    if (b === undefined) this.#backoff.set(kind, (b = { skip: 0, next: 0 }));
    return b;
  }

  /** The compressed payload of `plain` (a chunk of `filePath`), or null to send it raw. */
  async compress(plain: Uint8Array, filePath: string): Promise<Uint8Array | null> {
    const extension = extensionOf(filePath);
    if (plain.length < MIN_COMPRESS_BYTES || COMPRESSED_EXTENSIONS.has(extension)) return null;
    const backoff = this.#backoffFor(extension);
    if (backoff.skip > 0) {
      backoff.skip--;
      return null;
    }
    if (plain.length >= ENTROPY_MIN_BYTES && sampledEntropyBits(plain) > INCOMPRESSIBLE_BITS_PER_BYTE) return null;
    const packed = await this.#zstd.compress(Buffer.from(plain.buffer, plain.byteOffset, plain.byteLength), ZSTD_LEVEL);
    // Our own frames must pass the receiver's bound too; one that would not goes raw.
    if (packed.length > plain.length * MAX_COMPRESSED_RATIO || frameProblem(packed, plain.length) !== undefined) {
      backoff.skip = backoff.next;
      backoff.next = Math.min(MAX_SKIP_CHUNKS, Math.max(1, backoff.next * 2));
      return null;
    }
    backoff.next = 0;
    this.#compressed++;
    return packed;
  }
}
