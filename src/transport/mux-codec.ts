// Frame codec for the stream multiplexer that runs inside one TLS-over-TCP connection.
// Sans-I/O: bytes in, frames out; no sockets, timers or clocks.
//
// Wire format (all integers big-endian), a fixed 9-byte header then the payload:
//
//   offset 0  u8   type       OPEN=1 DATA=2 FIN=3 RESET=4 WINDOW_UPDATE=5 PING=6 PONG=7 GOAWAY=8
//   offset 1  u32  stream id  0 for connection frames (PING, PONG, GOAWAY), else >= 1;
//                             odd = opened by the connecting side, even = by the accepting side
//   offset 5  u32  length     payload bytes that follow
//
//   OPEN           no payload           a new stream; the opener may send INITIAL_WINDOW_BYTES at once
//   DATA           0..maxDataBytes      stream bytes
//   FIN            no payload           the sender will send no more DATA on this stream
//   RESET          u32 code             abort both directions of the stream
//   WINDOW_UPDATE  u32 increment > 0    the receiver consumed bytes: the sender may send that much more
//   PING / PONG    8 opaque bytes       PONG echoes the PING payload (RTT, liveness)
//   GOAWAY         u32 code, then a UTF-8 reason of at most MAX_GOAWAY_REASON_BYTES
//
// Goals: bounded decoding (a length above the limit is rejected from the header alone, before
// any allocation), "need more bytes" as a value, zero-copy DATA where it cannot pin memory.
// Non-goals: stream state (mux-session.ts), flow-control accounting, I/O.
import { ClawpeerError } from '../errors.js';

export const FrameType = {
  OPEN: 1,
  DATA: 2,
  FIN: 3,
  RESET: 4,
  WINDOW_UPDATE: 5,
  PING: 6,
  PONG: 7,
  GOAWAY: 8,
} as const;
export type FrameType = (typeof FrameType)[keyof typeof FrameType];

export const FRAME_HEADER_BYTES = 9;
/** Largest DATA payload a sender emits and the default decode limit: 256 KiB. */
export const MAX_DATA_FRAME_BYTES = 256 * 1024;
/** Hard ceiling for any configured decode limit (16 MiB): a u32 length must never size an allocation. */
export const MAX_FRAME_BYTES_LIMIT = 16 * 1024 * 1024;
export const PING_PAYLOAD_BYTES = 8;
export const MAX_GOAWAY_REASON_BYTES = 1024;
/** Largest stream id; ids are u32 and never reused, so a connection can open 2^31 streams per side. */
export const MAX_STREAM_ID = 0xffff_ffff;

/** RESET codes. */
export const ResetCode = {
  /** The application called reset(). */
  CANCEL: 0,
  /** The receiver already has its maximum of concurrent streams. */
  REFUSED: 1,
  /** The connection is going away. */
  CLOSING: 2,
} as const;

/** GOAWAY codes. */
export const GoAwayCode = {
  NORMAL: 0,
  PROTOCOL_ERROR: 1,
  FLOW_CONTROL_ERROR: 2,
  IDLE_TIMEOUT: 3,
  INTERNAL: 4,
} as const;

export type MuxFrame =
  | { readonly type: typeof FrameType.OPEN; readonly streamId: number }
  | { readonly type: typeof FrameType.DATA; readonly streamId: number; readonly payload: Uint8Array }
  | { readonly type: typeof FrameType.FIN; readonly streamId: number }
  | { readonly type: typeof FrameType.RESET; readonly streamId: number; readonly code: number }
  | { readonly type: typeof FrameType.WINDOW_UPDATE; readonly streamId: number; readonly increment: number }
  | { readonly type: typeof FrameType.PING; readonly payload: Uint8Array }
  | { readonly type: typeof FrameType.PONG; readonly payload: Uint8Array }
  | { readonly type: typeof FrameType.GOAWAY; readonly code: number; readonly reason: string };

/**
 * What the streaming decoder yields. A DATA frame whose payload arrives in several socket
 * chunks is yielded as several `data` pieces (views, not copies); `last` marks the piece that
 * completes the frame. Every other frame is yielded whole as `frame`.
 */
export type DecodeResult =
  | { readonly kind: 'frame'; readonly frame: Exclude<MuxFrame, { type: typeof FrameType.DATA }> }
  | { readonly kind: 'data'; readonly streamId: number; readonly bytes: Uint8Array; readonly last: boolean }
  | { readonly kind: 'need-more' };

export interface FrameHeader {
  readonly type: FrameType;
  readonly streamId: number;
  readonly length: number;
}

const NEED_MORE: DecodeResult = Object.freeze({ kind: 'need-more' });

const isConnectionFrame = (type: FrameType): boolean =>
  type === FrameType.PING || type === FrameType.PONG || type === FrameType.GOAWAY;

const protocolError = (message: string): ClawpeerError =>
  new ClawpeerError('PROTOCOL', `mux: ${message}`, { wire: 'PROTOCOL' });

/**
 * Validates a frame header against the wire rules and `maxDataBytes` (the DATA payload limit).
 * Throws PROTOCOL for an unknown type, a stream id the type does not allow, or a control payload
 * of the wrong size; FRAME_TOO_LARGE for DATA above the limit.
 */
export function checkFrameHeader(header: FrameHeader, maxDataBytes: number): void {
  const { type, streamId, length } = header;
  const name = frameTypeName(type);
  if (isConnectionFrame(type)) {
    if (streamId !== 0) throw protocolError(`${name} frame on stream ${streamId}; connection frames use stream 0`);
  } else if (streamId === 0) {
    throw protocolError(`${name} frame on stream 0; stream frames need an id >= 1`);
  }
  switch (type) {
    case FrameType.DATA:
      if (length > maxDataBytes) {
        throw new ClawpeerError(
          'FRAME_TOO_LARGE',
          `mux: DATA frame of ${length} bytes on stream ${streamId} exceeds the ${maxDataBytes}-byte limit`,
          { wire: 'FRAME_TOO_LARGE' },
        );
      }
      return;
    case FrameType.OPEN:
    case FrameType.FIN:
      if (length !== 0)
        throw protocolError(`${name} frame on stream ${streamId} has a ${length}-byte payload, expected none`);
      return;
    case FrameType.RESET:
    case FrameType.WINDOW_UPDATE:
      if (length !== 4)
        throw protocolError(`${name} frame on stream ${streamId} has a ${length}-byte payload, expected 4`);
      return;
    case FrameType.PING:
    case FrameType.PONG:
      if (length !== PING_PAYLOAD_BYTES)
        throw protocolError(`${name} frame has a ${length}-byte payload, expected ${PING_PAYLOAD_BYTES}`);
      return;
    case FrameType.GOAWAY:
      if (length < 4 || length > 4 + MAX_GOAWAY_REASON_BYTES) {
        throw protocolError(`GOAWAY frame has a ${length}-byte payload, expected 4..${4 + MAX_GOAWAY_REASON_BYTES}`);
      }
      return;
    default: {
      const unknown: never = type;
      throw protocolError(`unknown frame type ${String(unknown)}`);
    }
  }
}

export function frameTypeName(type: number): string {
  for (const [name, value] of Object.entries(FrameType)) if (value === type) return name;
  return `type-${type}`;
}

function isFrameType(type: number): type is FrameType {
  return type >= FrameType.OPEN && type <= FrameType.GOAWAY;
}

/**
 * Parses and checks the header at `bytes[offset..]`; `need-more` when fewer than
 * FRAME_HEADER_BYTES are available.
 */
export function decodeFrameHeader(
  bytes: Uint8Array,
  offset: number,
  maxDataBytes: number,
): FrameHeader | { readonly kind: 'need-more' } {
  if (bytes.length - offset < FRAME_HEADER_BYTES) return NEED_MORE as { kind: 'need-more' };
  const type = bytes[offset] ?? 0;
  if (!isFrameType(type))
    throw protocolError(`unknown frame type 0x${type.toString(16).padStart(2, '0')} (not a clawpeer mux stream?)`);
  const view = new DataView(bytes.buffer, bytes.byteOffset + offset, FRAME_HEADER_BYTES);
  const header: FrameHeader = { type, streamId: view.getUint32(1), length: view.getUint32(5) };
  checkFrameHeader(header, maxDataBytes);
  return header;
}

/** The 9 header bytes of a frame. */
export function encodeFrameHeader(type: FrameType, streamId: number, length: number): Uint8Array {
  if (!Number.isInteger(streamId) || streamId < 0 || streamId > MAX_STREAM_ID)
    throw new RangeError(`stream id ${streamId} out of range`);
  if (!Number.isInteger(length) || length < 0 || length > 0xffff_ffff)
    throw new RangeError(`frame length ${length} out of range`);
  const out = new Uint8Array(FRAME_HEADER_BYTES);
  const view = new DataView(out.buffer);
  view.setUint8(0, type);
  view.setUint32(1, streamId);
  view.setUint32(5, length);
  return out;
}

function u32(value: number, what: string): Uint8Array {
  if (!Number.isInteger(value) || value < 0 || value > 0xffff_ffff)
    throw new RangeError(`${what} ${value} is not a u32`);
  const out = new Uint8Array(4);
  new DataView(out.buffer).setUint32(0, value);
  return out;
}

/**
 * Encodes a frame as [header, payload?]: the DATA payload is passed through, not copied, so
 * the caller can hand both parts to one vectored write. Does not enforce the DATA size limit
 * (the session splits writes into MAX_DATA_FRAME_BYTES pieces); it does check field ranges.
 */
export function encodeFrame(frame: MuxFrame): Uint8Array[] {
  switch (frame.type) {
    case FrameType.OPEN:
    case FrameType.FIN:
      return [encodeFrameHeader(frame.type, frame.streamId, 0)];
    case FrameType.DATA:
      return frame.payload.length === 0
        ? [encodeFrameHeader(frame.type, frame.streamId, 0)]
        : [encodeFrameHeader(frame.type, frame.streamId, frame.payload.length), frame.payload];
    case FrameType.RESET:
      return [encodeFrameHeader(frame.type, frame.streamId, 4), u32(frame.code, 'RESET code')];
    case FrameType.WINDOW_UPDATE:
      if (frame.increment === 0) throw new RangeError('WINDOW_UPDATE increment must be > 0');
      return [encodeFrameHeader(frame.type, frame.streamId, 4), u32(frame.increment, 'WINDOW_UPDATE increment')];
    case FrameType.PING:
    case FrameType.PONG:
      if (frame.payload.length !== PING_PAYLOAD_BYTES)
        throw new RangeError(`${frameTypeName(frame.type)} payload must be ${PING_PAYLOAD_BYTES} bytes`);
      return [encodeFrameHeader(frame.type, 0, PING_PAYLOAD_BYTES), frame.payload];
    case FrameType.GOAWAY: {
      const reason = truncateUtf8(frame.reason, MAX_GOAWAY_REASON_BYTES);
      return [encodeFrameHeader(frame.type, 0, 4 + reason.length), u32(frame.code, 'GOAWAY code'), reason];
    }
    default: {
      const unknown: never = frame;
      throw new TypeError(`unknown frame ${String(unknown)}`);
    }
  }
}

/** UTF-8 bytes of `text`, cut at a character boundary to at most `maxBytes`. */
export function truncateUtf8(text: string, maxBytes: number): Uint8Array {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return bytes;
  let end = maxBytes;
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--; // back off continuation bytes
  return bytes.subarray(0, end);
}

function decodeControl(header: FrameHeader, payload: Uint8Array): Exclude<MuxFrame, { type: typeof FrameType.DATA }> {
  const view = new DataView(payload.buffer, payload.byteOffset, payload.length);
  switch (header.type) {
    case FrameType.OPEN:
    case FrameType.FIN:
      return { type: header.type, streamId: header.streamId };
    case FrameType.RESET:
      return { type: header.type, streamId: header.streamId, code: view.getUint32(0) };
    case FrameType.WINDOW_UPDATE: {
      const increment = view.getUint32(0);
      if (increment === 0) throw protocolError(`WINDOW_UPDATE of 0 bytes on stream ${header.streamId}`);
      return { type: header.type, streamId: header.streamId, increment };
    }
    case FrameType.PING:
    case FrameType.PONG:
      return { type: header.type, payload };
    case FrameType.GOAWAY: {
      let reason: string;
      try {
        reason = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(payload.subarray(4));
      } catch (cause) {
        throw new ClawpeerError('PROTOCOL', 'mux: GOAWAY reason is not valid UTF-8', { cause, wire: 'PROTOCOL' });
      }
      return { type: header.type, code: view.getUint32(0), reason };
    }
    case FrameType.DATA:
      throw new TypeError('DATA is not a control frame');
    default: {
      const unknown: never = header.type;
      throw new TypeError(`unknown frame type ${String(unknown)}`);
    }
  }
}

/** Largest control payload (GOAWAY): control frames are assembled whole, never streamed. */
const MAX_CONTROL_PAYLOAD_BYTES = 4 + MAX_GOAWAY_REASON_BYTES;

/**
 * Streaming decoder: push() socket chunks in, call next() until it says `need-more`.
 * Buffered bytes are bounded by one header plus one control payload (~1 KiB); DATA payload
 * bytes pass straight through as views into the pushed chunks. A view pins its whole chunk,
 * so a piece smaller than half its chunk's backing memory is copied instead: retained memory
 * stays within 2x the payload bytes a peer can have in flight, whatever the chunking.
 *
 * After next() throws, the decoder is unusable (the connection must be closed).
 */
export class FrameDecoder {
  readonly #maxDataBytes: number;
  readonly #chunks: Uint8Array[] = [];
  #chunkIndex = 0;
  /** Read position inside #chunks[#chunkIndex]. */
  #offset = 0;
  #buffered = 0;
  /** The DATA frame whose payload is being streamed, and its bytes still to come. */
  #dataStreamId = 0;
  #dataRemaining = 0;
  #failed: ClawpeerError | undefined;

  constructor(maxDataBytes: number = MAX_DATA_FRAME_BYTES) {
    if (!Number.isInteger(maxDataBytes) || maxDataBytes < 1 || maxDataBytes > MAX_FRAME_BYTES_LIMIT) {
      throw new RangeError(`maxDataBytes must be 1..${MAX_FRAME_BYTES_LIMIT}, got ${maxDataBytes}`);
    }
    this.#maxDataBytes = maxDataBytes;
  }

  /** Bytes pushed but not yet returned by next(). */
  get bufferedBytes(): number {
    return this.#buffered;
  }

  push(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    this.#chunks.push(chunk);
    this.#buffered += chunk.length;
  }

  next(): DecodeResult {
    if (this.#failed !== undefined) throw this.#failed;
    try {
      return this.#next();
    } catch (err) {
      if (err instanceof ClawpeerError) this.#failed = err;
      throw err;
    }
  }

  #next(): DecodeResult {
    if (this.#dataRemaining > 0) return this.#dataPiece();
    if (this.#buffered < FRAME_HEADER_BYTES) return NEED_MORE;
    const headerBytes = this.#peek(FRAME_HEADER_BYTES);
    const header = decodeFrameHeader(headerBytes, 0, this.#maxDataBytes);
    if (!('type' in header)) return NEED_MORE;
    if (header.type === FrameType.DATA) {
      this.#consume(FRAME_HEADER_BYTES);
      if (header.length === 0) return { kind: 'data', streamId: header.streamId, bytes: new Uint8Array(0), last: true };
      this.#dataStreamId = header.streamId;
      this.#dataRemaining = header.length;
      return this.#dataPiece();
    }
    // Control frame: wait until header and payload are both here, then take them in one go.
    if (header.length > MAX_CONTROL_PAYLOAD_BYTES)
      throw new TypeError('checkFrameHeader let an oversized control frame through');
    if (this.#buffered < FRAME_HEADER_BYTES + header.length) return NEED_MORE;
    this.#consume(FRAME_HEADER_BYTES);
    const payload = header.length === 0 ? new Uint8Array(0) : new Uint8Array(this.#peek(header.length));
    this.#consume(header.length);
    return { kind: 'frame', frame: decodeControl(header, payload) };
  }

  #dataPiece(): DecodeResult {
    const chunk = this.#chunks[this.#chunkIndex];
    if (chunk === undefined) return NEED_MORE;
    const take = Math.min(this.#dataRemaining, chunk.length - this.#offset);
    let bytes = chunk.subarray(this.#offset, this.#offset + take);
    if (take * 2 < chunk.buffer.byteLength) bytes = new Uint8Array(bytes); // a copy, so the big socket buffer can go (Buffer#slice would be a view)
    this.#consume(take);
    this.#dataRemaining -= take;
    return { kind: 'data', streamId: this.#dataStreamId, bytes, last: this.#dataRemaining === 0 };
  }

  /** The next `n` buffered bytes (n <= #buffered), a view when they sit in one chunk. */
  #peek(n: number): Uint8Array {
    const first = this.#chunks[this.#chunkIndex];
    if (first !== undefined && first.length - this.#offset >= n) return first.subarray(this.#offset, this.#offset + n);
    const out = new Uint8Array(n);
    let filled = 0;
    for (let i = this.#chunkIndex, off = this.#offset; filled < n; i++, off = 0) {
      const c = this.#chunks[i];
      if (c === undefined) throw new TypeError('FrameDecoder peeked past its buffered bytes');
      const take = Math.min(n - filled, c.length - off);
      out.set(c.subarray(off, off + take), filled);
      filled += take;
    }
    return out;
  }

  #consume(n: number): void {
    this.#buffered -= n;
    while (n > 0) {
      const c = this.#chunks[this.#chunkIndex];
      if (c === undefined) throw new TypeError('FrameDecoder consumed past its buffered bytes');
      const avail = c.length - this.#offset;
      if (n < avail) {
        this.#offset += n;
        return;
      }
      n -= avail;
      this.#chunkIndex++;
      this.#offset = 0;
    }
    // Drop consumed chunks now and then, not on every frame (splice is O(chunks)).
    if (this.#chunkIndex >= 64 || this.#chunkIndex === this.#chunks.length) {
      this.#chunks.splice(0, this.#chunkIndex);
      this.#chunkIndex = 0;
    }
  }
}
