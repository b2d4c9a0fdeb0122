// Typed encode/decode of CONTROL frame bodies (the clawpeer.v1.Control protobuf envelope).
//
// Goals: the rest of the code sees plain readonly objects (a discriminated union on `type`),
// never protobufjs classes or Long values; every decode takes a maximum length and turns any
// malformed input into a PROTOCOL error naming the field; the raw bytes of the envelope's body
// are available to the handshake, whose signatures cover exactly the bytes received.
// Non-goals: framing (frame-codec.ts), semantic checks such as version or capability
// negotiation (capabilities.ts, handshake.ts).
//
// uint64 fields (Ping/Pong seq and times) are numbers: our encoders never exceed 2^53-1 and a
// decoded value above it is a PROTOCOL error.
import protobuf from 'protobufjs/minimal.js';
import { ClawpeerError } from '../errors.js';
import type { AeadSuiteName, Capabilities, ChunkingParams, CompressionName, FeatureName } from './capabilities.js';
import { MAX_CAPABILITY_LIST_ENTRIES } from './capabilities.js';
import { encodeFrame } from './frame-codec.js';
import { clawpeer } from './gen/clawpeer.js';

const pb = clawpeer.v1;

export const ED25519_KEY_BYTES = 32;
export const ED25519_SIGNATURE_BYTES = 64;
export const X25519_KEY_BYTES = 32;
export const HANDSHAKE_NONCE_BYTES = 32;
/** Error texts longer than this (in UTF-16 code units) are cut, on encode and on decode. */
export const MAX_ERROR_MESSAGE_CHARS = 1024;

export interface HelloMessage {
  readonly type: 'hello';
  readonly minVersion: number;
  readonly maxVersion: number;
  readonly nodePublicKey: Uint8Array;
  readonly caps: Capabilities;
  readonly ephemeralPublicKey: Uint8Array;
  readonly nonce: Uint8Array;
  /** Empty while being signed. */
  readonly signature: Uint8Array;
}

export interface WelcomeMessage {
  readonly type: 'welcome';
  readonly version: number;
  readonly nodePublicKey: Uint8Array;
  readonly caps: Capabilities;
  readonly ephemeralPublicKey: Uint8Array;
  readonly nonce: Uint8Array;
  readonly signature: Uint8Array;
}

export interface FinishedMessage {
  readonly type: 'finished';
  readonly signature: Uint8Array;
}

export interface ErrorMessage {
  readonly type: 'error';
  /** Wire number from WIRE_ERRORS (src/errors.ts); unknown numbers are kept as they are. */
  readonly code: number;
  readonly message: string;
}

export interface PingMessage {
  readonly type: 'ping';
  readonly seq: number;
  readonly sentTimeUs: number;
}

export interface PongMessage {
  readonly type: 'pong';
  readonly seq: number;
  readonly echoedTimeUs: number;
}

export type ControlMessage = HelloMessage | WelcomeMessage | FinishedMessage | ErrorMessage | PingMessage | PongMessage;
export type ControlMessageType = ControlMessage['type'];

/** Field number of each envelope member (proto/clawpeer.proto, message Control). */
export const CONTROL_FIELDS = { hello: 1, welcome: 2, finished: 3, error: 4, ping: 5, pong: 6 } as const satisfies Record<ControlMessageType, number>;
/** Field numbers of the signature inside Hello and Welcome: excluded from the signed bytes. */
export const HELLO_SIGNATURE_FIELD = 7;
export const WELCOME_SIGNATURE_FIELD = 6;

const AEAD_TO_WIRE: Record<AeadSuiteName, number> = {
  'aes-256-gcm': pb.AeadSuite.AEAD_SUITE_AES_256_GCM,
  'chacha20-poly1305': pb.AeadSuite.AEAD_SUITE_CHACHA20_POLY1305,
};
const COMPRESSION_TO_WIRE: Record<CompressionName, number> = {
  none: pb.Compression.COMPRESSION_NONE,
  zstd: pb.Compression.COMPRESSION_ZSTD,
};
const FEATURE_TO_WIRE: Record<FeatureName, number> = {
  sync: pb.Feature.FEATURE_SYNC,
  resume: pb.Feature.FEATURE_RESUME,
  history: pb.Feature.FEATURE_HISTORY,
};

function invert<K extends string>(table: Record<K, number>): ReadonlyMap<number, K> {
  return new Map((Object.entries(table) as [K, number][]).map(([k, v]) => [v, k]));
}
const AEAD_FROM_WIRE = invert(AEAD_TO_WIRE);
const COMPRESSION_FROM_WIRE = invert(COMPRESSION_TO_WIRE);
const FEATURE_FROM_WIRE = invert(FEATURE_TO_WIRE);

// ---------------------------------------------------------------------------------------------
// Encoding

function capsToWire(caps: Capabilities): clawpeer.v1.Capabilities.$Properties {
  return {
    aeadSuites: caps.aeadSuites.map((s) => AEAD_TO_WIRE[s]),
    compression: caps.compression.map((c) => COMPRESSION_TO_WIRE[c]),
    chunking: caps.chunking.map((c) => ({ minBytes: c.minBytes, avgBytes: c.avgBytes, maxBytes: c.maxBytes })),
    maxWindowChunks: caps.maxWindowChunks,
    maxStreams: caps.maxStreams,
    maxFrameBytes: caps.maxFrameBytes,
    features: caps.features.map((f) => FEATURE_TO_WIRE[f]),
  };
}

function checkUint(name: string, value: number, max: number): void {
  if (!Number.isInteger(value) || value < 0 || value > max) throw new RangeError(`${name} must be an integer in 0..${max}, got ${value}`);
}

function helloToWire(m: Omit<HelloMessage, 'type'>): clawpeer.v1.Hello.$Properties {
  return {
    minVersion: m.minVersion,
    maxVersion: m.maxVersion,
    nodePublicKey: m.nodePublicKey,
    caps: capsToWire(m.caps),
    ephemeralPublicKey: m.ephemeralPublicKey,
    nonce: m.nonce,
    signature: m.signature,
  };
}

function welcomeToWire(m: Omit<WelcomeMessage, 'type'>): clawpeer.v1.Welcome.$Properties {
  return {
    version: m.version,
    nodePublicKey: m.nodePublicKey,
    caps: capsToWire(m.caps),
    ephemeralPublicKey: m.ephemeralPublicKey,
    nonce: m.nonce,
    signature: m.signature,
  };
}

/**
 * Cuts to MAX_ERROR_MESSAGE_CHARS and replaces control and bidi-override characters with spaces:
 * a peer's text reaches terminals and logs, where escapes could repaint or disguise output.
 */
export function sanitizeErrorText(text: string): string {
  // eslint-disable-next-line no-control-regex
  const clean = text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, ' ');
  return clean.length <= MAX_ERROR_MESSAGE_CHARS ? clean : `${clean.slice(0, MAX_ERROR_MESSAGE_CHARS - 1)}…`;
}

function toWire(message: ControlMessage): clawpeer.v1.Control.$Properties {
  switch (message.type) {
    case 'hello':
      return { hello: helloToWire(message) };
    case 'welcome':
      return { welcome: welcomeToWire(message) };
    case 'finished':
      return { finished: { signature: message.signature } };
    case 'error':
      checkUint('Error.code', message.code, 0xffff_ffff);
      return { error: { code: message.code, message: sanitizeErrorText(message.message) } };
    case 'ping':
      checkUint('Ping.seq', message.seq, Number.MAX_SAFE_INTEGER);
      checkUint('Ping.sentTimeUs', message.sentTimeUs, Number.MAX_SAFE_INTEGER);
      return { ping: { seq: message.seq, sentTimeUs: message.sentTimeUs } };
    case 'pong':
      checkUint('Pong.seq', message.seq, Number.MAX_SAFE_INTEGER);
      checkUint('Pong.echoedTimeUs', message.echoedTimeUs, Number.MAX_SAFE_INTEGER);
      return { pong: { seq: message.seq, echoedTimeUs: message.echoedTimeUs } };
    default: {
      const unreachable: never = message;
      throw new TypeError(`unknown control message ${JSON.stringify(unreachable)}`);
    }
  }
}

/** The Control envelope bytes (a CONTROL frame body). */
export function encodeControl(message: ControlMessage): Uint8Array {
  return pb.Control.encode(toWire(message)).finish();
}

/** A complete CONTROL frame (frame header + envelope), ready to write. */
export function encodeControlFrame(message: ControlMessage): Uint8Array {
  return encodeFrame('control', encodeControl(message));
}

/**
 * A Control envelope around an already encoded body message (e.g. a signed Hello): the body
 * goes on the wire byte for byte, so the transcript the handshake hashes is what the peer gets.
 */
export function encodeControlFromRaw(type: ControlMessageType, body: Uint8Array): Uint8Array {
  return protobuf.Writer.create().uint32((CONTROL_FIELDS[type] << 3) | 2).bytes(body).finish();
}

/** The bytes of a Hello message alone (not the envelope): what the handshake signs. */
export function encodeHelloBody(hello: Omit<HelloMessage, 'type'>): Uint8Array {
  return pb.Hello.encode(helloToWire(hello)).finish();
}

/** The bytes of a Welcome message alone (not the envelope). */
export function encodeWelcomeBody(welcome: Omit<WelcomeMessage, 'type'>): Uint8Array {
  return pb.Welcome.encode(welcomeToWire(welcome)).finish();
}

// ---------------------------------------------------------------------------------------------
// Decoding

interface LongLike {
  readonly low: number;
  readonly high: number;
}

function u64ToNumber(field: string, value: number | LongLike): number {
  if (typeof value === 'number') return value;
  const big = (BigInt(value.high >>> 0) << 32n) | BigInt(value.low >>> 0);
  if (big > BigInt(Number.MAX_SAFE_INTEGER)) throw new ClawpeerError('PROTOCOL', `${field} ${big} exceeds 2^53-1`);
  return Number(big);
}

function fixedBytes(field: string, value: Uint8Array | null | undefined, length: number): Uint8Array {
  const got = value?.length ?? 0;
  if (value === null || value === undefined || got !== length) {
    throw new ClawpeerError('PROTOCOL', `${field} must be ${length} bytes, got ${got}`);
  }
  return new Uint8Array(value); // a copy: decoded bytes are views into the frame buffer
}

function enumList<K extends string>(field: string, values: readonly number[] | null | undefined, table: ReadonlyMap<number, K>): K[] {
  const raw = values ?? [];
  if (raw.length > MAX_CAPABILITY_LIST_ENTRIES) {
    throw new ClawpeerError('PROTOCOL', `${field} has ${raw.length} entries, more than ${MAX_CAPABILITY_LIST_ENTRIES}`);
  }
  const out: K[] = [];
  for (const v of raw) {
    const name = table.get(v);
    // Unknown values come from newer peers: ignore them (they cannot be in the intersection).
    if (name !== undefined && !out.includes(name)) out.push(name);
  }
  return out;
}

function capsFromWire(owner: string, caps: clawpeer.v1.Capabilities.$Properties | null | undefined): Capabilities {
  if (caps === null || caps === undefined) throw new ClawpeerError('PROTOCOL', `${owner}.caps is missing`);
  const chunkingRaw = caps.chunking ?? [];
  if (chunkingRaw.length > MAX_CAPABILITY_LIST_ENTRIES) {
    throw new ClawpeerError('PROTOCOL', `${owner}.caps.chunking has ${chunkingRaw.length} entries, more than ${MAX_CAPABILITY_LIST_ENTRIES}`);
  }
  const chunking: ChunkingParams[] = chunkingRaw.map((c) => ({ minBytes: c.minBytes ?? 0, avgBytes: c.avgBytes ?? 0, maxBytes: c.maxBytes ?? 0 }));
  return {
    aeadSuites: enumList(`${owner}.caps.aeadSuites`, caps.aeadSuites, AEAD_FROM_WIRE),
    compression: enumList(`${owner}.caps.compression`, caps.compression, COMPRESSION_FROM_WIRE),
    chunking,
    maxWindowChunks: caps.maxWindowChunks ?? 0,
    maxStreams: caps.maxStreams ?? 0,
    maxFrameBytes: caps.maxFrameBytes ?? 0,
    features: enumList(`${owner}.caps.features`, caps.features, FEATURE_FROM_WIRE),
  };
}

function fromWire(control: clawpeer.v1.Control): ControlMessage {
  switch (control.body) {
    case 'hello': {
      const h = control.hello;
      if (h === null || h === undefined) break;
      return {
        type: 'hello',
        minVersion: h.minVersion ?? 0,
        maxVersion: h.maxVersion ?? 0,
        nodePublicKey: fixedBytes('Hello.nodePublicKey', h.nodePublicKey, ED25519_KEY_BYTES),
        caps: capsFromWire('Hello', h.caps),
        ephemeralPublicKey: fixedBytes('Hello.ephemeralPublicKey', h.ephemeralPublicKey, X25519_KEY_BYTES),
        nonce: fixedBytes('Hello.nonce', h.nonce, HANDSHAKE_NONCE_BYTES),
        signature: fixedBytes('Hello.signature', h.signature, ED25519_SIGNATURE_BYTES),
      };
    }
    case 'welcome': {
      const w = control.welcome;
      if (w === null || w === undefined) break;
      return {
        type: 'welcome',
        version: w.version ?? 0,
        nodePublicKey: fixedBytes('Welcome.nodePublicKey', w.nodePublicKey, ED25519_KEY_BYTES),
        caps: capsFromWire('Welcome', w.caps),
        ephemeralPublicKey: fixedBytes('Welcome.ephemeralPublicKey', w.ephemeralPublicKey, X25519_KEY_BYTES),
        nonce: fixedBytes('Welcome.nonce', w.nonce, HANDSHAKE_NONCE_BYTES),
        signature: fixedBytes('Welcome.signature', w.signature, ED25519_SIGNATURE_BYTES),
      };
    }
    case 'finished': {
      const f = control.finished;
      if (f === null || f === undefined) break;
      return { type: 'finished', signature: fixedBytes('Finished.signature', f.signature, ED25519_SIGNATURE_BYTES) };
    }
    case 'error': {
      const e = control.error;
      if (e === null || e === undefined) break;
      return { type: 'error', code: e.code ?? 0, message: sanitizeErrorText(e.message ?? '') };
    }
    case 'ping': {
      const p = control.ping;
      if (p === null || p === undefined) break;
      return { type: 'ping', seq: u64ToNumber('Ping.seq', p.seq ?? 0), sentTimeUs: u64ToNumber('Ping.sentTimeUs', p.sentTimeUs ?? 0) };
    }
    case 'pong': {
      const p = control.pong;
      if (p === null || p === undefined) break;
      return { type: 'pong', seq: u64ToNumber('Pong.seq', p.seq ?? 0), echoedTimeUs: u64ToNumber('Pong.echoedTimeUs', p.echoedTimeUs ?? 0) };
    }
    case undefined:
      break;
    default: {
      const unreachable: never = control.body;
      throw new TypeError(`unhandled Control member ${String(unreachable)}`);
    }
  }
  throw new ClawpeerError('PROTOCOL', 'control message has no body');
}

interface FieldSpan {
  readonly field: number;
  readonly wireType: number;
  /** Whole field, tag included. */
  readonly start: number;
  readonly end: number;
  /** Value bytes of a length-delimited field. */
  readonly valueStart: number;
}

/** The top-level fields of a protobuf message, in wire order. Throws on malformed input. */
function scanFields(bytes: Uint8Array): FieldSpan[] {
  const reader = protobuf.Reader.create(bytes);
  const spans: FieldSpan[] = [];
  while (reader.pos < reader.len) {
    const start = reader.pos;
    const tag = reader.uint32();
    const field = tag >>> 3;
    const wireType = tag & 7;
    if (field === 0) throw new RangeError(`field number 0 at offset ${start}`);
    let valueStart = reader.pos;
    if (wireType === 2) {
      const length = reader.uint32();
      valueStart = reader.pos;
      if (length > reader.len - reader.pos) throw new RangeError(`field ${field} length ${length} runs past the end at offset ${start}`);
      reader.pos += length;
    } else {
      reader.skipType(wireType);
    }
    spans.push({ field, wireType, start, end: reader.pos, valueStart });
  }
  return spans;
}

/** `message` (an encoded protobuf message) without any occurrence of top-level `field`. */
export function stripField(message: Uint8Array, field: number): Uint8Array {
  let spans: FieldSpan[];
  try {
    spans = scanFields(message);
  } catch (cause) {
    throw new ClawpeerError('PROTOCOL', `malformed protobuf message: ${(cause as Error).message}`, { cause });
  }
  const kept = spans.filter((s) => s.field !== field);
  const out = new Uint8Array(kept.reduce((n, s) => n + (s.end - s.start), 0));
  let at = 0;
  for (const s of kept) {
    out.set(message.subarray(s.start, s.end), at);
    at += s.end - s.start;
  }
  return out;
}

export interface DecodedControl {
  readonly message: ControlMessage;
  /** The encoded body message (e.g. the Hello bytes inside the envelope), a view of the input. */
  readonly raw: Uint8Array;
}

const KNOWN_CONTROL_FIELDS: ReadonlySet<number> = new Set(Object.values(CONTROL_FIELDS));

/**
 * Decodes a CONTROL frame body. The envelope must hold exactly one member; an unknown member
 * (a newer peer's message we do not speak) is a PROTOCOL error naming its field number.
 * FRAME_TOO_LARGE when `bytes` exceeds `maxBytes`.
 */
export function decodeControlWithRaw(bytes: Uint8Array, options: { readonly maxBytes: number }): DecodedControl {
  if (bytes.length > options.maxBytes) {
    throw new ClawpeerError('FRAME_TOO_LARGE', `control message of ${bytes.length} bytes exceeds the maximum of ${options.maxBytes}`);
  }
  let spans: FieldSpan[];
  let control: clawpeer.v1.Control;
  try {
    spans = scanFields(bytes);
    control = pb.Control.decode(bytes);
  } catch (cause) {
    if (cause instanceof ClawpeerError) throw cause;
    throw new ClawpeerError('PROTOCOL', `malformed control message: ${(cause as Error).message}`, { cause });
  }
  const [span, ...extra] = spans;
  if (span === undefined) throw new ClawpeerError('PROTOCOL', 'control message has no body');
  if (extra.length > 0) {
    throw new ClawpeerError('PROTOCOL', `control message carries ${spans.length} fields (${spans.map((s) => s.field).join(', ')}); exactly one expected`);
  }
  if (!KNOWN_CONTROL_FIELDS.has(span.field)) {
    throw new ClawpeerError('PROTOCOL', `unknown control message (envelope field ${span.field})`);
  }
  if (span.wireType !== 2) throw new ClawpeerError('PROTOCOL', `control message field ${span.field} has wire type ${span.wireType}, expected 2`);
  let message: ControlMessage;
  try {
    message = fromWire(control);
  } catch (cause) {
    if (cause instanceof ClawpeerError) throw cause;
    throw new ClawpeerError('PROTOCOL', `malformed control message: ${(cause as Error).message}`, { cause });
  }
  return { message, raw: bytes.subarray(span.valueStart, span.end) };
}

/** Decodes a CONTROL frame body; see decodeControlWithRaw. */
export function decodeControl(bytes: Uint8Array, options: { readonly maxBytes: number }): ControlMessage {
  return decodeControlWithRaw(bytes, options).message;
}
