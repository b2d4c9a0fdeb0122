// Typed encode/decode of CONTROL frame bodies (the clawpeer.v1.Control protobuf envelope).
//
// Goals: the rest of the code sees plain readonly objects (a discriminated union on `type`),
// never protobufjs classes or Long values; every decode takes a maximum length and turns any
// malformed input into a PROTOCOL error naming the field; the raw bytes of the envelope's body
// are available to the handshake, whose signatures cover exactly the bytes received.
// Non-goals: framing (frame-codec.ts), semantic checks such as version or capability
// negotiation (capabilities.ts, handshake.ts).
//
// uint64 fields (Ping/Pong seq and times, sizes, counters) are numbers: our encoders never
// exceed 2^53-1 and a decoded value above it is a PROTOCOL error (the sint64 mtime likewise
// outside +-(2^53-1)).
//
// This module holds the envelope (one member, counted repeated fields before decoding:
// message-fields.ts) and the small families (handshake, error, ping, pairing, watch, list); the
// message types are in
// message-types.ts, the transfer and sync families in transfer-wire.ts and sync-wire.ts,
// manifest batching in manifest-batches.ts and want bitmaps in want-bitmap.ts. It re-exports
// their public API, so importers keep importing from here.
import protobuf from 'protobufjs/minimal.js';
import { UNSAFE_TEXTS } from '../format.js';
import { LONE_SURROGATE } from './wire-limits.js';
import { ClawpeerError } from '../errors.js';
import { encodeFrame } from './frame-codec.js';
import { clawpeer } from './gen/clawpeer.js';
import {
  ED25519_KEY_BYTES,
  ED25519_SIGNATURE_BYTES,
  X25519_KEY_BYTES,
  HANDSHAKE_NONCE_BYTES,
  MAX_ERROR_MESSAGE_CHARS,
  type HelloMessage,
  type WelcomeMessage,
  PAIR_PROOF_BYTES,
  SESSION_ID_BYTES,
  JOIN_PROOF_BYTES,
  type ListEntry,
  type ControlMessage,
  type ControlMessageType,
  CONTROL_FIELDS,
  MAX_SYNC_ITEMS_PER_MESSAGE,
  MAX_LIST_ENTRIES_PER_MESSAGE,
  MAX_MANIFEST_ENTRIES_PER_MESSAGE,
} from './message-types.js';
import {
  pb,
  UINT32_MAX,
  ENTRY_KIND_TO_WIRE,
  checkUint,
  checkTextBytes,
  quote,
  entryMetaProblem,
  u64ToNumber,
  fixedBytes,
  wireText,
  entryMetaFromWire,
} from './wire-helpers.js';
import { helloToWire, welcomeToWire, capsFromWire } from './handshake-wire.js';
import { transferToWire, transferFromWire } from './transfer-wire.js';
import { syncToWire, syncFromWire } from './sync-wire.js';
import { codePairToWire, codePairFromWire } from './code-pair-wire.js';
import { scanFields, type FieldSpan } from './message-fields.js';

export { stripField } from './message-fields.js';

export * from './message-types.js';
export { MAX_FILES_FROM_PATHS, MAX_FILES_FROM_BYTES, fileListBytes, listedEntryBytes } from './transfer-wire.js';
export { manifestEntryWireBytes, splitManifest } from './manifest-batches.js';
export { bitmapBytes, newBitmap, bitmapSet, bitmapGet } from './want-bitmap.js';

/** A suggested peer name: peer-store.ts allows 64 characters. */
const MAX_PAIR_NAME_BYTES = 64;
/** Field number of the entries inside ListReply. */
const LIST_REPLY_ENTRIES_FIELD = 2;
/** Field numbers of the repeated members counted before decoding (records, items). */
const SYNC_REVISIONS_RECORDS_FIELD = 2;
const SYNC_FETCH_ITEMS_FIELD = 3;
/** Field number of the entries inside Manifest (counted before decoding). */
const MANIFEST_ENTRIES_FIELD = 2;

// An unpaired UTF-16 surrogate (paths.ts): protobufjs would write it as invalid UTF-8 that its
// own decoder refuses.
const LONE_SURROGATES = new RegExp(LONE_SURROGATE.source, 'g');

/**
 * Cuts to MAX_ERROR_MESSAGE_CHARS and replaces control and bidi-override characters with spaces:
 * a peer's text reaches terminals and logs, where escapes could repaint or disguise output.
 */
export function sanitizeErrorText(text: string): string {
  const clean = text.replace(UNSAFE_TEXTS, ' ').replace(LONE_SURROGATES, '\ufffd');
  if (clean.length <= MAX_ERROR_MESSAGE_CHARS) return clean;
  // Never between the halves of a surrogate pair: a lone half would be written as U+FFFD (deep fuzz).
  const cut = isHighSurrogate(clean.charCodeAt(MAX_ERROR_MESSAGE_CHARS - 2))
    ? MAX_ERROR_MESSAGE_CHARS - 2
    : MAX_ERROR_MESSAGE_CHARS - 1;
  return `${clean.slice(0, cut)}…`;
}

function isHighSurrogate(unit: number): boolean {
  return unit >= 0xd800 && unit <= 0xdbff;
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
    case 'pair-request':
    case 'pair-accept': {
      if (message.proof.length !== PAIR_PROOF_BYTES)
        throw new RangeError(`${message.type} proof must be ${PAIR_PROOF_BYTES} bytes, got ${message.proof.length}`);
      checkTextBytes(`${message.type} name`, message.name);
      if (protobuf.util.utf8.length(message.name) > MAX_PAIR_NAME_BYTES)
        throw new RangeError(`${message.type} name is longer than ${MAX_PAIR_NAME_BYTES} bytes`);
      const body = { proof: message.proof, name: message.name };
      return message.type === 'pair-request' ? { pairRequest: body } : { pairAccept: body };
    }
    case 'code-pair-start':
    case 'code-pair-reply':
    case 'code-pair-finish':
    case 'code-pair-done':
      return codePairToWire(message);
    case 'transfer-request':
    case 'transfer-accept':
    case 'manifest':
    case 'want':
    case 'data-open':
    case 'transfer-done':
      return transferToWire(message);
    case 'sync-request':
    case 'sync-accept':
    case 'sync-reconcile':
    case 'sync-revisions':
    case 'sync-fetch':
    case 'sync-done':
      return syncToWire(message);
    case 'watch-share':
      checkTextBytes('WatchShare.share', message.share);
      return { watchShare: { share: message.share } };
    case 'share-changed':
      checkTextBytes('ShareChanged.share', message.share);
      checkUint('ShareChanged.seq', message.seq, Number.MAX_SAFE_INTEGER);
      return { shareChanged: { share: message.share, seq: message.seq } };
    case 'list-request':
      checkUint('ListRequest.requestId', message.requestId, UINT32_MAX);
      checkTextBytes('ListRequest.share', message.share);
      checkTextBytes('ListRequest.path', message.path);
      return {
        listRequest: {
          requestId: message.requestId,
          share: message.share,
          path: message.path,
          recursive: message.recursive,
        },
      };
    case 'session-join':
      if (message.sessionId.length !== SESSION_ID_BYTES)
        throw new RangeError(
          `SessionJoin.sessionId must be ${SESSION_ID_BYTES} bytes, got ${message.sessionId.length}`,
        );
      if (message.proof.length !== JOIN_PROOF_BYTES)
        throw new RangeError(`SessionJoin.proof must be ${JOIN_PROOF_BYTES} bytes, got ${message.proof.length}`);
      checkUint('SessionJoin.index', message.index, UINT32_MAX);
      return { sessionJoin: { sessionId: message.sessionId, index: message.index, proof: message.proof } };
    case 'session-joined':
      checkUint('SessionJoined.index', message.index, UINT32_MAX);
      return { sessionJoined: { index: message.index } };
    case 'join-wanted':
      checkUint('JoinWanted.connections', message.connections, UINT32_MAX);
      return { joinWanted: { connections: message.connections } };
    case 'list-reply': {
      checkUint('ListReply.requestId', message.requestId, UINT32_MAX);
      if (message.entries.length > MAX_LIST_ENTRIES_PER_MESSAGE)
        throw new RangeError(
          `ListReply has ${message.entries.length} entries, more than ${MAX_LIST_ENTRIES_PER_MESSAGE}`,
        );
      for (const sh of message.shares) checkTextBytes('ListReply.shares.name', sh.name);
      const entries = message.entries.map((e) => {
        const problem = entryMetaProblem(e);
        if (problem !== undefined) throw new RangeError(`ListEntry ${quote(e.path)}: ${problem}`);
        return {
          path: e.path,
          kind: ENTRY_KIND_TO_WIRE[e.kind],
          size: e.size,
          mode: e.mode,
          mtimeMs: e.mtimeMs,
          linkTarget: e.linkTarget,
        };
      });
      return {
        listReply: {
          requestId: message.requestId,
          entries,
          shares: message.shares.map((sh) => ({ name: sh.name, readOnly: sh.readOnly, noDelete: sh.noDelete })),
          last: message.last,
        },
      };
    }
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
  return protobuf.Writer.create()
    .uint32((CONTROL_FIELDS[type] << 3) | 2)
    .bytes(body)
    .finish();
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

function listEntryFromWire(index: number, w: clawpeer.v1.ListEntry.$Properties | null | undefined): ListEntry {
  const { owner, meta } = entryMetaFromWire('ListReply.entries', index, w);
  const problem = entryMetaProblem(meta);
  if (problem !== undefined) throw new ClawpeerError('PROTOCOL', `${owner}: ${problem}`);
  return meta;
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
      return {
        type: 'ping',
        seq: u64ToNumber('Ping.seq', p.seq ?? 0),
        sentTimeUs: u64ToNumber('Ping.sentTimeUs', p.sentTimeUs ?? 0),
      };
    }
    case 'pong': {
      const p = control.pong;
      if (p === null || p === undefined) break;
      return {
        type: 'pong',
        seq: u64ToNumber('Pong.seq', p.seq ?? 0),
        echoedTimeUs: u64ToNumber('Pong.echoedTimeUs', p.echoedTimeUs ?? 0),
      };
    }
    case 'pairRequest':
    case 'pairAccept': {
      const p = control.body === 'pairRequest' ? control.pairRequest : control.pairAccept;
      if (p === null || p === undefined) break;
      const what = control.body === 'pairRequest' ? 'PairRequest' : 'PairAccept';
      const name = wireText(`${what}.name`, p.name);
      if (protobuf.util.utf8.length(name) > MAX_PAIR_NAME_BYTES)
        throw new ClawpeerError('PROTOCOL', `${what}.name is longer than ${MAX_PAIR_NAME_BYTES} bytes`);
      const proof = fixedBytes(`${what}.proof`, p.proof, PAIR_PROOF_BYTES);
      return control.body === 'pairRequest'
        ? { type: 'pair-request', proof, name }
        : { type: 'pair-accept', proof, name };
    }
    case 'codePairStart':
    case 'codePairReply':
    case 'codePairFinish':
    case 'codePairDone': {
      const message = codePairFromWire(control);
      if (message === undefined) break;
      return message;
    }
    case 'transferRequest':
    case 'transferAccept':
    case 'manifest':
    case 'want':
    case 'dataOpen':
    case 'transferDone': {
      const message = transferFromWire(control);
      if (message === undefined) break;
      return message;
    }
    case 'syncRequest':
    case 'syncAccept':
    case 'syncReconcile':
    case 'syncRevisions':
    case 'syncFetch':
    case 'syncDone': {
      const message = syncFromWire(control);
      if (message === undefined) break;
      return message;
    }
    case 'watchShare': {
      const w = control.watchShare;
      if (w === null || w === undefined) break;
      return { type: 'watch-share', share: wireText('WatchShare.share', w.share) };
    }
    case 'shareChanged': {
      const c = control.shareChanged;
      if (c === null || c === undefined) break;
      return {
        type: 'share-changed',
        share: wireText('ShareChanged.share', c.share),
        seq: u64ToNumber('ShareChanged.seq', c.seq ?? 0),
      };
    }
    case 'listRequest': {
      const r = control.listRequest;
      if (r === null || r === undefined) break;
      return {
        type: 'list-request',
        requestId: r.requestId ?? 0,
        share: wireText('ListRequest.share', r.share),
        path: wireText('ListRequest.path', r.path),
        recursive: r.recursive ?? false,
      };
    }
    case 'listReply': {
      const r = control.listReply;
      if (r === null || r === undefined) break;
      return {
        type: 'list-reply',
        requestId: r.requestId ?? 0,
        entries: (r.entries ?? []).map((e, i) => listEntryFromWire(i, e)),
        shares: (r.shares ?? []).map((sh) => ({
          name: wireText('ShareInfo.name', sh.name),
          readOnly: sh.readOnly ?? false,
          noDelete: sh.noDelete ?? false,
        })),
        last: r.last ?? false,
      };
    }
    case 'sessionJoin': {
      const j = control.sessionJoin;
      if (j === null || j === undefined) break;
      return {
        type: 'session-join',
        sessionId: fixedBytes('SessionJoin.sessionId', j.sessionId, SESSION_ID_BYTES),
        index: j.index ?? 0,
        proof: fixedBytes('SessionJoin.proof', j.proof, JOIN_PROOF_BYTES),
      };
    }
    case 'sessionJoined': {
      const j = control.sessionJoined;
      if (j === null || j === undefined) break;
      return { type: 'session-joined', index: j.index ?? 0 };
    }
    case 'joinWanted': {
      const j = control.joinWanted;
      if (j === null || j === undefined) break;
      return { type: 'join-wanted', connections: j.connections ?? 0 };
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
    throw new ClawpeerError(
      'FRAME_TOO_LARGE',
      `control message of ${bytes.length} bytes exceeds the maximum of ${options.maxBytes}`,
    );
  }
  let spans: FieldSpan[];
  try {
    spans = scanFields(bytes);
  } catch (cause) {
    throw new ClawpeerError('PROTOCOL', `malformed control message: ${(cause as Error).message}`, { cause });
  }
  const [span, ...extra] = spans;
  if (span === undefined) throw new ClawpeerError('PROTOCOL', 'control message has no body');
  if (extra.length > 0) {
    throw new ClawpeerError(
      'PROTOCOL',
      `control message carries ${spans.length} fields (${spans.map((s) => s.field).join(', ')}); exactly one expected`,
    );
  }
  if (!KNOWN_CONTROL_FIELDS.has(span.field)) {
    throw new ClawpeerError('PROTOCOL', `unknown control message (envelope field ${span.field})`);
  }
  if (span.wireType !== 2)
    throw new ClawpeerError(
      'PROTOCOL',
      `control message field ${span.field} has wire type ${span.wireType}, expected 2`,
    );
  const raw = bytes.subarray(span.valueStart, span.end);
  let message: ControlMessage;
  try {
    // Count manifest entries before protobufjs builds an object for each: a 16 MiB frame of
    // empty entries would otherwise become 8 million objects before the limit is checked.
    if (span.field === CONTROL_FIELDS.manifest) {
      const entries = scanFields(raw).filter((s) => s.field === MANIFEST_ENTRIES_FIELD).length;
      if (entries > MAX_MANIFEST_ENTRIES_PER_MESSAGE) {
        throw new ClawpeerError(
          'PROTOCOL',
          `Manifest has ${entries} entries, more than ${MAX_MANIFEST_ENTRIES_PER_MESSAGE}`,
        );
      }
    }
    if (span.field === CONTROL_FIELDS['list-reply']) {
      const entries = scanFields(raw).filter((s) => s.field === LIST_REPLY_ENTRIES_FIELD).length;
      if (entries > MAX_LIST_ENTRIES_PER_MESSAGE)
        throw new ClawpeerError(
          'PROTOCOL',
          `ListReply has ${entries} entries, more than ${MAX_LIST_ENTRIES_PER_MESSAGE}`,
        );
    }
    if (span.field === CONTROL_FIELDS['sync-revisions'] || span.field === CONTROL_FIELDS['sync-fetch']) {
      const field =
        span.field === CONTROL_FIELDS['sync-revisions'] ? SYNC_REVISIONS_RECORDS_FIELD : SYNC_FETCH_ITEMS_FIELD;
      const items = scanFields(raw).filter((s) => s.field === field).length;
      if (items > MAX_SYNC_ITEMS_PER_MESSAGE) {
        throw new ClawpeerError(
          'PROTOCOL',
          `${span.field === CONTROL_FIELDS['sync-revisions'] ? 'SyncRevisions' : 'SyncFetch'} has ${items} items, more than ${MAX_SYNC_ITEMS_PER_MESSAGE}`,
        );
      }
    }
    message = fromWire(pb.Control.decode(bytes));
  } catch (cause) {
    if (cause instanceof ClawpeerError) throw cause;
    throw new ClawpeerError('PROTOCOL', `malformed control message: ${(cause as Error).message}`, { cause });
  }
  return { message, raw };
}

/** Decodes a CONTROL frame body; see decodeControlWithRaw. */
export function decodeControl(bytes: Uint8Array, options: { readonly maxBytes: number }): ControlMessage {
  return decodeControlWithRaw(bytes, options).message;
}
