// Frame codec: how bytes on one stream are cut into messages.
//
// Goals: a fixed 5-byte header (type, body length) so a decoder knows the frame size before it
// buffers the body and can refuse an oversized frame before allocating anything; an incremental
// decoder that returns "need more bytes" as a value and hands out zero-copy views when a frame
// lies inside one pushed buffer; the fixed binary header of DATA frames (bulk chunk bytes never
// go through protobuf), which is also the AEAD associated data.
// Non-goals: encryption (src/protocol/aead.ts), protobuf decoding of CONTROL bodies
// (src/protocol/messages.ts), I/O of any kind.
//
// Frame (all integers big-endian):
//   offset 0  u8   type        1 = CONTROL (protobuf clawpeer.v1.Control), 2 = DATA, 3 = ACK
//   offset 1  u32  bodyBytes   length of the body that follows, <= the decoder's maxFrameBytes
//   offset 5  body
//
// DATA body = 56-byte data header || sealed payload (AEAD ciphertext || 16-byte tag):
//   offset 0   u32      streamId      sender-assigned data stream id (unique per session+direction)
//   offset 4   u64      sequence      frame number on that stream, 0, 1, 2, ... (< 2^53)
//   offset 12  u8[32]   chunkId       BLAKE3 of the chunk's plaintext (uncompressed) bytes
//   offset 44  u8       flags         bit 0 = payload is compressed (the session's codec);
//                                     bit 1 = early: sent before the sender read the
//                                     receiver's Want, so the receiver may hold it already
//                                     (feature early-chunks); other bits reserved, must be 0
//   offset 45  u8[3]    reserved      must be 0
//   offset 48  u32      payloadBytes  sealed bytes after the header (== bodyBytes - 56)
//   offset 52  u32      chunkBytes    the chunk's plaintext length (bounds decompression)
// The nonce of a DATA frame is streamId || sequence (src/protocol/aead.ts); the whole 56-byte
// header is the AAD, so none of these fields can be changed in flight.
//
// ACK bodies are defined by the data plane (src/transfer/); the codec only delimits them.
import { ClawpeerError } from '../errors.js';

/** 16 MiB: default cap on a frame body; every decoder takes its own. */
export const DEFAULT_MAX_FRAME_BYTES = 16 << 20;
/** u8 type + u32 body length. */
export const FRAME_HEADER_BYTES = 5;
export const DATA_HEADER_BYTES = 56;
export const CHUNK_ID_BYTES = 32;
/** The sealed payload of a DATA frame is ciphertext || a 16-byte AEAD tag (both suites). */
export const AEAD_TAG_BYTES = 16;
/** Largest body length the u32 length field can carry. */
export const MAX_ENCODABLE_FRAME_BYTES = 0xffff_ffff;

export const FRAME_TYPES = { control: 1, data: 2, ack: 3 } as const;
export type FrameType = keyof typeof FRAME_TYPES;

const DATA_FLAG_COMPRESSED = 0x01;
const DATA_FLAG_EARLY = 0x02;
const DATA_FLAGS_KNOWN = DATA_FLAG_COMPRESSED | DATA_FLAG_EARLY;

export interface DataHeader {
  readonly streamId: number;
  readonly sequence: number;
  readonly chunkId: Uint8Array;
  readonly compressed: boolean;
  /** Sent before the sender had the receiver's Want (absent: false). */
  readonly early?: boolean;
  /** Sealed payload length (ciphertext plus tag) that follows the header. */
  readonly payloadBytes: number;
  /** Plaintext chunk length after decompression. */
  readonly chunkBytes: number;
}

export type Frame =
  | { readonly type: 'control'; readonly body: Uint8Array }
  | {
      readonly type: 'data';
      readonly header: DataHeader;
      /** The 56 encoded header bytes: the AEAD associated data. */
      readonly headerBytes: Uint8Array;
      /** Sealed payload (ciphertext || tag). */
      readonly payload: Uint8Array;
    }
  | { readonly type: 'ack'; readonly body: Uint8Array };

export type DataFrame = Extract<Frame, { readonly type: 'data' }>;

export type DecodeResult = { readonly kind: 'frame'; readonly frame: Frame } | { readonly kind: 'need-more' };

function frameTypeName(code: number): FrameType | undefined {
  switch (code) {
    case FRAME_TYPES.control:
      return 'control';
    case FRAME_TYPES.data:
      return 'data';
    case FRAME_TYPES.ack:
      return 'ack';
    default:
      return undefined;
  }
}

function checkU32(name: string, value: number): void {
  if (!Number.isInteger(value) || value < 0 || value > 0xffff_ffff) {
    throw new RangeError(`${name} must be an integer in 0..2^32-1, got ${value}`);
  }
}

/** Encodes a frame header into `out` at `offset`. */
export function writeFrameHeader(out: Uint8Array, offset: number, type: FrameType, bodyBytes: number): void {
  checkU32('frame body length', bodyBytes);
  out[offset] = FRAME_TYPES[type];
  new DataView(out.buffer, out.byteOffset + offset + 1, 4).setUint32(0, bodyBytes);
}

/**
 * Encodes one frame: header plus a copy of `body`. For CONTROL and ACK frames (small);
 * DATA frames are built in one allocation by encodeDataFrame / the AEAD sealer.
 */
export function encodeFrame(type: Exclude<FrameType, 'data'>, body: Uint8Array): Uint8Array {
  const out = new Uint8Array(FRAME_HEADER_BYTES + body.length);
  writeFrameHeader(out, 0, type, body.length);
  out.set(body, FRAME_HEADER_BYTES);
  return out;
}

/** Writes the 56-byte data header into `out` at `offset`. */
export function writeDataHeader(out: Uint8Array, offset: number, header: DataHeader): void {
  checkU32('streamId', header.streamId);
  if (!Number.isSafeInteger(header.sequence) || header.sequence < 0) {
    throw new RangeError(`sequence must be an integer in 0..2^53-1, got ${header.sequence}`);
  }
  if (header.chunkId.length !== CHUNK_ID_BYTES) {
    throw new RangeError(`chunkId must be ${CHUNK_ID_BYTES} bytes, got ${header.chunkId.length}`);
  }
  checkU32('payloadBytes', header.payloadBytes);
  checkU32('chunkBytes', header.chunkBytes);
  const view = new DataView(out.buffer, out.byteOffset + offset, DATA_HEADER_BYTES);
  view.setUint32(0, header.streamId);
  view.setBigUint64(4, BigInt(header.sequence));
  out.set(header.chunkId, offset + 12);
  view.setUint8(44, (header.compressed ? DATA_FLAG_COMPRESSED : 0) | (header.early === true ? DATA_FLAG_EARLY : 0));
  view.setUint8(45, 0);
  view.setUint16(46, 0);
  view.setUint32(48, header.payloadBytes);
  view.setUint32(52, header.chunkBytes);
}

export function encodeDataHeader(header: DataHeader): Uint8Array {
  const out = new Uint8Array(DATA_HEADER_BYTES);
  writeDataHeader(out, 0, header);
  return out;
}

/**
 * Allocates a whole DATA frame (frame header, data header, room for the payload) and returns
 * it with views on its parts, so a sealer can write the ciphertext in place: one allocation,
 * no concatenation. `payloadBytes` in `header` decides the size. The payload is NOT zeroed:
 * the caller must write every byte of it.
 */
function allocateDataFrame(header: DataHeader): { frame: Uint8Array; headerBytes: Uint8Array; payload: Uint8Array } {
  const bodyBytes = DATA_HEADER_BYTES + header.payloadBytes;
  // Not zero-filled: both headers are written here and the caller overwrites the whole payload
  // (the sealer: ciphertext || tag). Zeroing a 256 KiB frame first cost ~3% of a push's CPU.
  const frame = Buffer.allocUnsafe(FRAME_HEADER_BYTES + bodyBytes);
  writeFrameHeader(frame, 0, 'data', bodyBytes);
  writeDataHeader(frame, FRAME_HEADER_BYTES, header);
  return {
    frame,
    headerBytes: frame.subarray(FRAME_HEADER_BYTES, FRAME_HEADER_BYTES + DATA_HEADER_BYTES),
    payload: frame.subarray(FRAME_HEADER_BYTES + DATA_HEADER_BYTES),
  };
}

/**
 * The first FRAME_HEADER_BYTES + DATA_HEADER_BYTES (61) bytes of a DATA frame: what precedes the
 * sealed payload on the wire. A sender that writes prefix, ciphertext and tag as three pieces
 * never allocates or copies a whole frame (aead.ts DataSealer.sealParts).
 */
export function encodeDataFramePrefix(header: DataHeader): Uint8Array {
  const prefix = new Uint8Array(FRAME_HEADER_BYTES + DATA_HEADER_BYTES);
  writeFrameHeader(prefix, 0, 'data', DATA_HEADER_BYTES + header.payloadBytes);
  writeDataHeader(prefix, FRAME_HEADER_BYTES, header);
  return prefix;
}

/** Encodes a DATA frame from a header and an already sealed payload (copies the payload). */
export function encodeDataFrame(header: Omit<DataHeader, 'payloadBytes'>, payload: Uint8Array): Uint8Array {
  const parts = allocateDataFrame({ ...header, payloadBytes: payload.length });
  parts.payload.set(payload);
  return parts.frame;
}

/** Parses a 56-byte data header; PROTOCOL error naming the bad field. `bytes` may be longer. */
export function decodeDataHeader(bytes: Uint8Array): DataHeader {
  if (bytes.length < DATA_HEADER_BYTES) {
    throw new ClawpeerError(
      'PROTOCOL',
      `DATA frame body is ${bytes.length} bytes, shorter than its ${DATA_HEADER_BYTES}-byte header`,
    );
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, DATA_HEADER_BYTES);
  const sequence = view.getBigUint64(4);
  if (sequence > BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new ClawpeerError('PROTOCOL', `DATA frame sequence ${sequence} exceeds 2^53-1`);
  }
  const flags = view.getUint8(44);
  if ((flags & ~DATA_FLAGS_KNOWN) !== 0) {
    throw new ClawpeerError('PROTOCOL', `DATA frame has unknown flag bits 0x${flags.toString(16).padStart(2, '0')}`);
  }
  if (view.getUint8(45) !== 0 || view.getUint16(46) !== 0) {
    throw new ClawpeerError('PROTOCOL', 'DATA frame reserved header bytes 45..47 are not zero');
  }
  return {
    streamId: view.getUint32(0),
    sequence: Number(sequence),
    chunkId: bytes.subarray(12, 12 + CHUNK_ID_BYTES),
    compressed: (flags & DATA_FLAG_COMPRESSED) !== 0,
    early: (flags & DATA_FLAG_EARLY) !== 0,
    payloadBytes: view.getUint32(48),
    chunkBytes: view.getUint32(52),
  };
}

function decodeBody(type: FrameType, body: Uint8Array, maxFrameBytes: number): Frame {
  switch (type) {
    case 'control':
      return { type, body };
    case 'ack':
      return { type, body };
    case 'data': {
      const header = decodeDataHeader(body);
      if (header.payloadBytes !== body.length - DATA_HEADER_BYTES) {
        throw new ClawpeerError(
          'PROTOCOL',
          `DATA frame header says ${header.payloadBytes} payload bytes but the frame carries ${body.length - DATA_HEADER_BYTES}`,
        );
      }
      if (header.chunkBytes > maxFrameBytes) {
        throw new ClawpeerError(
          'FRAME_TOO_LARGE',
          `DATA frame chunk of ${header.chunkBytes} bytes exceeds the maximum of ${maxFrameBytes}`,
        );
      }
      return {
        type,
        header,
        headerBytes: body.subarray(0, DATA_HEADER_BYTES),
        payload: body.subarray(DATA_HEADER_BYTES),
      };
    }
    default: {
      const unreachable: never = type;
      throw new TypeError(`unhandled frame type ${String(unreachable)}`);
    }
  }
}

export interface FrameDecoderOptions {
  /** Largest frame body accepted, in bytes (default 16 MiB). Checked before buffering the body. */
  readonly maxFrameBytes?: number;
}

/**
 * Incremental frame decoder. push() the bytes as they arrive, then call next() until it returns
 * need-more. Pushed buffers are kept by reference (not copied) and must not be mutated; a frame
 * inside one pushed buffer is returned as a view of it, a frame spanning several is copied once
 * into a buffer of exactly its size. Memory is bounded by the caller pulling frames before
 * pushing more: at most one partial frame (<= header + maxFrameBytes) plus the last push.
 * A caller done with a frame may hand it back with recycle(): the next frame that spans pushes
 * is then copied into that frame's buffer instead of a new one (a bulk receiver otherwise
 * allocates one frame-sized buffer per chunk, and that garbage drives major GCs).
 * After an error the stream is unusable (framing is lost); the decoder stays failed.
 */
export class FrameDecoder {
  #maxFrameBytes: number;
  #chunks: Uint8Array[] = [];
  #head = 0; // index of the first live chunk in #chunks
  #offset = 0; // bytes already consumed from #chunks[#head]
  #buffered = 0;
  #failed: ClawpeerError | undefined;
  /** The buffer the last spanning frame was copied into, and one handed back for reuse. */
  #lastCopy: Buffer | undefined;
  #spare: Buffer | undefined;

  constructor(options: FrameDecoderOptions = {}) {
    this.#maxFrameBytes = checkMaxFrameBytes(options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES);
  }

  get maxFrameBytes(): number {
    return this.#maxFrameBytes;
  }

  /**
   * Changes the limit for frames whose header has not been decoded yet. A connection starts
   * with a small limit for the handshake and raises it to the negotiated one afterwards.
   */
  setMaxFrameBytes(maxFrameBytes: number): void {
    this.#maxFrameBytes = checkMaxFrameBytes(maxFrameBytes);
  }

  /** Bytes pushed but not yet returned as frames. */
  get bufferedBytes(): number {
    return this.#buffered;
  }

  /**
   * Hands back a frame the caller no longer uses (nor any view of it, such as a data header's
   * chunkId): its buffer may then hold the next frame. Frames that are views of pushed buffers
   * are ignored, so any frame from next() may be passed.
   */
  recycle(frame: Frame): void {
    const bytes = frame.type === 'data' ? frame.headerBytes : frame.body;
    const copy = this.#lastCopy;
    if (copy === undefined || bytes.buffer !== copy.buffer || bytes.byteOffset !== copy.byteOffset) return;
    this.#lastCopy = undefined;
    if (this.#spare === undefined || this.#spare.length < copy.length) this.#spare = copy;
  }

  push(bytes: Uint8Array): void {
    if (bytes.length === 0) return;
    this.#chunks.push(bytes);
    this.#buffered += bytes.length;
  }

  next(): DecodeResult {
    if (this.#failed !== undefined) throw this.#failed;
    if (this.#buffered < FRAME_HEADER_BYTES) return NEED_MORE;
    const header = this.#peek(FRAME_HEADER_BYTES);
    const typeCode = header[0] ?? 0;
    const bodyBytes = new DataView(header.buffer, header.byteOffset + 1, 4).getUint32(0);
    const type = frameTypeName(typeCode);
    if (type === undefined) {
      return this.#fail(new ClawpeerError('PROTOCOL', `unknown frame type ${typeCode} (length field ${bodyBytes})`));
    }
    if (bodyBytes > this.maxFrameBytes) {
      return this.#fail(
        new ClawpeerError(
          'FRAME_TOO_LARGE',
          `${type} frame of ${bodyBytes} bytes exceeds the maximum of ${this.maxFrameBytes}`,
        ),
      );
    }
    if (type === 'data' && bodyBytes < DATA_HEADER_BYTES) {
      return this.#fail(
        new ClawpeerError(
          'PROTOCOL',
          `DATA frame of ${bodyBytes} bytes is shorter than its ${DATA_HEADER_BYTES}-byte header`,
        ),
      );
    }
    if (this.#buffered < FRAME_HEADER_BYTES + bodyBytes) return NEED_MORE;
    this.#consume(FRAME_HEADER_BYTES);
    const body = this.#take(bodyBytes);
    try {
      return { kind: 'frame', frame: decodeBody(type, body, this.maxFrameBytes) };
    } catch (err) {
      if (err instanceof ClawpeerError) return this.#fail(err);
      throw err;
    }
  }

  /**
   * The stream ended (read returned null). A PROTOCOL error if it ended inside a frame.
   * Call after next() has returned need-more.
   */
  end(): void {
    if (this.#failed !== undefined) throw this.#failed;
    if (this.#buffered === 0) return;
    let detail = `${this.#buffered} byte(s) of an incomplete frame header`;
    if (this.#buffered >= FRAME_HEADER_BYTES) {
      const header = this.#peek(FRAME_HEADER_BYTES);
      const bodyBytes = new DataView(header.buffer, header.byteOffset + 1, 4).getUint32(0);
      detail = `${this.#buffered - FRAME_HEADER_BYTES} of ${bodyBytes} body bytes of a ${frameTypeName(header[0] ?? 0) ?? 'unknown'} frame`;
    }
    this.#fail(new ClawpeerError('PROTOCOL', `stream ended inside a frame: got ${detail}`));
  }

  #fail(err: ClawpeerError): never {
    this.#failed = err;
    this.#chunks = [];
    this.#head = 0;
    this.#offset = 0;
    this.#buffered = 0;
    throw err;
  }

  /** The next `n` buffered bytes without consuming them (n <= 5: copying is cheap). */
  #peek(n: number): Uint8Array {
    const first = this.#chunks[this.#head];
    if (first !== undefined && first.length - this.#offset >= n) return first.subarray(this.#offset, this.#offset + n);
    const out = new Uint8Array(n);
    let filled = 0;
    for (let i = this.#head; filled < n; i++) {
      const chunk = this.#chunks[i];
      if (chunk === undefined) throw new TypeError('peek past buffered bytes');
      const start = i === this.#head ? this.#offset : 0;
      const piece = chunk.subarray(start, start + (n - filled));
      out.set(piece, filled);
      filled += piece.length;
    }
    return out;
  }

  #consume(n: number): void {
    this.#buffered -= n;
    while (n > 0) {
      const chunk = this.#chunks[this.#head];
      if (chunk === undefined) throw new TypeError('consume past buffered bytes');
      const available = chunk.length - this.#offset;
      if (n < available) {
        this.#offset += n;
        return;
      }
      n -= available;
      this.#dropHead();
    }
  }

  #dropHead(): void {
    this.#chunks[this.#head] = EMPTY; // release the consumed buffer now, not at compaction
    this.#head++;
    this.#offset = 0;
    if (this.#head === this.#chunks.length) {
      this.#chunks = [];
      this.#head = 0;
    } else if (this.#head >= 64 && this.#head * 2 >= this.#chunks.length) {
      // Compact now and then so the array does not grow with the number of pushes.
      this.#chunks = this.#chunks.slice(this.#head);
      this.#head = 0;
    }
  }

  /** Removes and returns the next `n` bytes: a view when contiguous, else one copy. */
  #take(n: number): Uint8Array {
    const first = this.#chunks[this.#head];
    if (n === 0) return new Uint8Array(0);
    if (first !== undefined && first.length - this.#offset >= n) {
      const view = first.subarray(this.#offset, this.#offset + n);
      this.#consume(n);
      return view;
    }
    // n <= maxFrameBytes, checked from the header. Not zero-filled: the loop below writes all n
    // bytes (a DATA frame spanning reads is the common case, so this runs per chunk).
    const spare = this.#spare;
    const buffer = spare !== undefined && spare.length >= n ? spare : Buffer.allocUnsafe(n);
    if (buffer === spare) this.#spare = undefined;
    this.#lastCopy = buffer;
    const out = buffer.subarray(0, n);
    let filled = 0;
    while (filled < n) {
      const chunk = this.#chunks[this.#head];
      if (chunk === undefined) throw new TypeError('take past buffered bytes');
      const piece = chunk.subarray(this.#offset, this.#offset + (n - filled));
      out.set(piece, filled);
      filled += piece.length;
      this.#consume(piece.length);
    }
    return out;
  }
}

function checkMaxFrameBytes(max: number): number {
  if (!Number.isInteger(max) || max < DATA_HEADER_BYTES || max > MAX_ENCODABLE_FRAME_BYTES) {
    throw new RangeError(`maxFrameBytes must be an integer in ${DATA_HEADER_BYTES}..2^32-1, got ${max}`);
  }
  return max;
}

const NEED_MORE: DecodeResult = Object.freeze({ kind: 'need-more' });
const EMPTY = new Uint8Array(0);
