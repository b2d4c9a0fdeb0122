// Traversal messages: what nodes and a rendezvous server say to each other over UDP (register,
// lookup, reflect, connect, punch, relay, nameplates), and what two traversal sockets say to
// each other while punching. They share the traversal socket's port with QUIC datagrams.
//
// Wire form: TYPE u8 (0x80 set, 0x40 clear) | magic c1 a3 77 5e | fields (integers big-endian).
// quinn greases QUIC's fixed bit (0x40), so a QUIC packet can look like a traversal type by
// its first byte alone: isTraversalMessage checks the type bits AND the magic (bytes 1..4 of a
// QUIC long header are the version, and c1a3775e is none; a short header would have to carry
// the magic in its connection id by chance, 1 in 2^32, and then fails to decode and is dropped).
// An address: family u8 (4 or 6) | ip (4 or 16) | port u16. A key: 32 bytes (Ed25519 public).
import { ClawpeerError } from '../errors.js';
import { ipBytes, ipText } from './announcement.js';

export const TRAVERSAL_MAGIC = Uint8Array.of(0xc1, 0xa3, 0x77, 0x5e);
const HEADER_BYTES = 5;
const KEY_BYTES = 32;
export const NONCE_BYTES = 8;
export const RELAY_TOKEN_BYTES = 8;
/** Bytes a relayed QUIC datagram carries in front of it (type, magic, token). */
export const RELAY_DATA_HEADER_BYTES = HEADER_BYTES + RELAY_TOKEN_BYTES;
const MAX_ERROR_TEXT_BYTES = 200;

export interface WireAddress {
  readonly host: string;
  readonly port: number;
}

export const TRAVERSAL_TYPES = {
  register: 0x81,
  registered: 0x82,
  lookup: 0x83,
  lookupReply: 0x84,
  connect: 0x85,
  connectReply: 0x86,
  callMeMaybe: 0x87,
  ping: 0x88,
  pong: 0x89,
  relayBind: 0x8a,
  relayOffer: 0x8b,
  relayReady: 0x8c,
  relayData: 0x8d,
  reflect: 0x8e,
  reflected: 0x8f,
  nameplateClaim: 0x90,
  nameplateLookup: 0x91,
  nameplateRelease: 0x92,
  nameplateReply: 0x93,
  refused: 0x94,
} as const;
export type TraversalType = keyof typeof TRAVERSAL_TYPES;

/** relay-ready status: the session is spliced, or why not. */
export type RelayStatus = 'ready' | 'unknown-peer' | 'over-cap';
const RELAY_STATUSES: readonly RelayStatus[] = ['ready', 'unknown-peer', 'over-cap'];
export type NameplateOp = 'claim' | 'lookup' | 'release';
const NAMEPLATE_OPS: readonly NameplateOp[] = ['claim', 'lookup', 'release'];
/** `taken`: claimed by another node; `absent`: no such nameplate (lookup, release). */
export type NameplateStatus = 'ok' | 'taken' | 'absent';
const NAMEPLATE_STATUSES: readonly NameplateStatus[] = ['ok', 'taken', 'absent'];
/** Why a server refused a request. */
export type RefusalReason = 'rate-limited' | 'invalid' | 'stale' | 'full';
const REFUSAL_REASONS: readonly RefusalReason[] = ['rate-limited', 'invalid', 'stale', 'full'];

export type TraversalMessage =
  /** A signed announcement (protocol/announcement.ts), from the node's traversal socket. */
  | { readonly type: 'register'; readonly announcement: Uint8Array }
  /** The address the server saw the REGISTER from, and how long it keeps it. */
  | { readonly type: 'registered'; readonly ttlS: number; readonly reflexive: WireAddress }
  | { readonly type: 'lookup'; readonly publicKey: Uint8Array }
  /** The stored announcement, unchanged (the dialer verifies it), or none. */
  | { readonly type: 'lookupReply'; readonly publicKey: Uint8Array; readonly announcement?: Uint8Array }
  /** A dialer asks the server to have `target` punch toward it. */
  | { readonly type: 'connect'; readonly target: Uint8Array; readonly dialer: Uint8Array }
  /** The target's traversal socket as the server sees it, or none (not registered). */
  | { readonly type: 'connectReply'; readonly target: Uint8Array; readonly mux?: WireAddress }
  /** Server to target: this dialer wants you; punch toward its address. */
  | { readonly type: 'callMeMaybe'; readonly dialer: Uint8Array; readonly dialerMux: WireAddress }
  | { readonly type: 'ping'; readonly nonce: Uint8Array; readonly from: Uint8Array }
  | { readonly type: 'pong'; readonly nonce: Uint8Array }
  /** Bind one end of a relay session: `from` wants a session with `to` under `token`. */
  | { readonly type: 'relayBind'; readonly from: Uint8Array; readonly to: Uint8Array; readonly token: Uint8Array }
  /** Server to target: `from` opened a relay session under `token`; bind it to accept. */
  | { readonly type: 'relayOffer'; readonly from: Uint8Array; readonly token: Uint8Array }
  | { readonly type: 'relayReady'; readonly token: Uint8Array; readonly status: RelayStatus }
  /** One QUIC datagram through a relay session (ciphertext: TLS runs end to end inside). */
  | { readonly type: 'relayData'; readonly token: Uint8Array; readonly payload: Uint8Array }
  | { readonly type: 'reflect'; readonly nonce: Uint8Array }
  | { readonly type: 'reflected'; readonly nonce: Uint8Array; readonly address: WireAddress }
  /** An announcement carrying the nameplate, signed by the claimer. */
  | { readonly type: 'nameplateClaim'; readonly announcement: Uint8Array }
  | { readonly type: 'nameplateLookup'; readonly nameplate: number }
  /** A newer announcement of the claimer carrying the nameplate: only the claimer can release it. */
  | { readonly type: 'nameplateRelease'; readonly announcement: Uint8Array }
  | {
      readonly type: 'nameplateReply';
      readonly op: NameplateOp;
      readonly status: NameplateStatus;
      readonly nameplate: number;
      readonly announcement?: Uint8Array;
    }
  /** The server refused a request of type `request`. */
  | { readonly type: 'refused'; readonly request: number; readonly reason: RefusalReason; readonly text: string };

/** True when `buf` is a traversal message, never for a QUIC packet (type bits AND magic). */
export function isTraversalMessage(buf: Uint8Array): boolean {
  const t = buf[0] ?? 0;
  return (
    buf.length >= HEADER_BYTES &&
    (t & 0xc0) === 0x80 &&
    buf[1] === 0xc1 &&
    buf[2] === 0xa3 &&
    buf[3] === 0x77 &&
    buf[4] === 0x5e
  );
}

function bad(why: string): ClawpeerError {
  return new ClawpeerError('PROTOCOL', `invalid traversal message: ${why}`);
}

function addressBytes(a: WireAddress): Uint8Array {
  const ip = ipBytes(a.host);
  if (!Number.isInteger(a.port) || a.port < 0 || a.port > 65535)
    throw new ClawpeerError('USAGE', `port ${a.port} is not 0-65535`);
  return Uint8Array.from([ip.length === 4 ? 4 : 6, ...ip, a.port >> 8, a.port & 0xff]);
}

function fixed(bytes: Uint8Array, length: number, what: string): Uint8Array {
  if (bytes.length !== length) throw new ClawpeerError('USAGE', `${what} must be ${length} bytes, got ${bytes.length}`);
  return bytes;
}

const u32 = (n: number): Uint8Array => Uint8Array.of(n >>> 24, (n >>> 16) & 0xff, (n >>> 8) & 0xff, n & 0xff);

/** The header of a relay-data message, to send in front of a payload without copying it. */
export function relayDataHeader(token: Uint8Array): Uint8Array {
  const out = new Uint8Array(RELAY_DATA_HEADER_BYTES);
  out[0] = TRAVERSAL_TYPES.relayData;
  out.set(TRAVERSAL_MAGIC, 1);
  out.set(fixed(token, RELAY_TOKEN_BYTES, 'relay token'), HEADER_BYTES);
  return out;
}

export function encodeTraversal(m: TraversalMessage): Uint8Array {
  const parts: Uint8Array[] = [Uint8Array.of(TRAVERSAL_TYPES[m.type]), TRAVERSAL_MAGIC];
  const key = (k: Uint8Array, what: string): void => void parts.push(fixed(k, KEY_BYTES, what));
  const optional = (bytes: Uint8Array | undefined): void =>
    void parts.push(bytes === undefined ? Uint8Array.of(0) : Uint8Array.of(1), ...(bytes === undefined ? [] : [bytes]));
  switch (m.type) {
    case 'register':
    case 'nameplateClaim':
    case 'nameplateRelease':
      parts.push(m.announcement);
      break;
    case 'registered':
      parts.push(u32(m.ttlS), addressBytes(m.reflexive));
      break;
    case 'lookup':
      key(m.publicKey, 'lookup key');
      break;
    case 'lookupReply':
      key(m.publicKey, 'lookup key');
      optional(m.announcement);
      break;
    case 'connect':
      key(m.target, 'target key');
      key(m.dialer, 'dialer key');
      break;
    case 'connectReply':
      key(m.target, 'target key');
      optional(m.mux === undefined ? undefined : addressBytes(m.mux));
      break;
    case 'callMeMaybe':
      key(m.dialer, 'dialer key');
      parts.push(addressBytes(m.dialerMux));
      break;
    case 'ping':
      parts.push(fixed(m.nonce, NONCE_BYTES, 'nonce'));
      key(m.from, 'sender key');
      break;
    case 'pong':
    case 'reflect':
      parts.push(fixed(m.nonce, NONCE_BYTES, 'nonce'));
      break;
    case 'reflected':
      parts.push(fixed(m.nonce, NONCE_BYTES, 'nonce'), addressBytes(m.address));
      break;
    case 'relayBind':
      key(m.from, 'relay from key');
      key(m.to, 'relay to key');
      parts.push(fixed(m.token, RELAY_TOKEN_BYTES, 'relay token'));
      break;
    case 'relayOffer':
      key(m.from, 'relay from key');
      parts.push(fixed(m.token, RELAY_TOKEN_BYTES, 'relay token'));
      break;
    case 'relayReady':
      parts.push(fixed(m.token, RELAY_TOKEN_BYTES, 'relay token'), Uint8Array.of(RELAY_STATUSES.indexOf(m.status)));
      break;
    case 'relayData':
      return new Uint8Array(Buffer.concat([relayDataHeader(m.token), m.payload]));
    case 'nameplateLookup':
      parts.push(u32(m.nameplate));
      break;
    case 'nameplateReply':
      parts.push(Uint8Array.of(NAMEPLATE_OPS.indexOf(m.op), NAMEPLATE_STATUSES.indexOf(m.status)), u32(m.nameplate));
      optional(m.announcement);
      break;
    case 'refused': {
      const text = new TextEncoder().encode(m.text).subarray(0, MAX_ERROR_TEXT_BYTES);
      parts.push(Uint8Array.of(m.request, REFUSAL_REASONS.indexOf(m.reason)), text);
      break;
    }
  }
  return new Uint8Array(Buffer.concat(parts));
}

const TYPE_NAMES = new Map<number, TraversalType>(
  Object.entries(TRAVERSAL_TYPES).map(([k, v]) => [v, k as TraversalType]),
);

/** Reads fields in order; every read checks the length, so a short datagram throws PROTOCOL. */
class Reader {
  at = HEADER_BYTES;
  constructor(readonly buf: Uint8Array) {}
  take(n: number, what: string): Uint8Array {
    if (this.at + n > this.buf.length) throw bad(`truncated ${what}`);
    const out = this.buf.subarray(this.at, this.at + n);
    this.at += n;
    return out;
  }
  u8(what: string): number {
    return this.take(1, what)[0] ?? 0;
  }
  u32(what: string): number {
    const b = this.take(4, what);
    return (((b[0] ?? 0) << 24) | ((b[1] ?? 0) << 16) | ((b[2] ?? 0) << 8) | (b[3] ?? 0)) >>> 0;
  }
  key(what: string): Uint8Array {
    return this.take(KEY_BYTES, what).slice();
  }
  address(what: string): WireAddress {
    const family = this.u8(what);
    if (family !== 4 && family !== 6) throw bad(`${what} has family ${family}`);
    const host = ipText(this.take(family === 4 ? 4 : 16, what));
    const p = this.take(2, what);
    return { host, port: ((p[0] ?? 0) << 8) | (p[1] ?? 0) };
  }
  flag(what: string): boolean {
    const f = this.u8(what);
    if (f > 1) throw bad(`${what} flag is ${f}`);
    return f === 1;
  }
  rest(): Uint8Array {
    const out = this.buf.subarray(this.at);
    this.at = this.buf.length;
    return out;
  }
  end(type: string): void {
    if (this.at !== this.buf.length) throw bad(`${this.buf.length - this.at} stray bytes after ${type}`);
  }
}

function pick<T>(list: readonly T[], index: number, what: string): T {
  const v = list[index];
  if (v === undefined) throw bad(`unknown ${what} ${index}`);
  return v;
}

/** Decodes one traversal message; anything malformed throws PROTOCOL (the caller drops it). */
export function decodeTraversal(buf: Uint8Array): TraversalMessage {
  if (!isTraversalMessage(buf)) throw bad('not a traversal message (type bits or magic)');
  const type = TYPE_NAMES.get(buf[0] ?? 0);
  if (type === undefined) throw bad(`unknown type 0x${(buf[0] ?? 0).toString(16)}`);
  const r = new Reader(buf);
  let m: TraversalMessage;
  switch (type) {
    case 'register':
    case 'nameplateClaim':
    case 'nameplateRelease':
      m = { type, announcement: r.rest().slice() };
      break;
    case 'registered':
      m = { type, ttlS: r.u32('ttl'), reflexive: r.address('reflexive address') };
      break;
    case 'lookup':
      m = { type, publicKey: r.key('lookup key') };
      break;
    case 'lookupReply': {
      const publicKey = r.key('lookup key');
      m = r.flag('announcement') ? { type, publicKey, announcement: r.rest().slice() } : { type, publicKey };
      break;
    }
    case 'connect':
      m = { type, target: r.key('target key'), dialer: r.key('dialer key') };
      break;
    case 'connectReply': {
      const target = r.key('target key');
      m = r.flag('mux address') ? { type, target, mux: r.address('mux address') } : { type, target };
      break;
    }
    case 'callMeMaybe':
      m = { type, dialer: r.key('dialer key'), dialerMux: r.address('dialer address') };
      break;
    case 'ping':
      m = { type, nonce: r.take(NONCE_BYTES, 'nonce').slice(), from: r.key('sender key') };
      break;
    case 'pong':
    case 'reflect':
      m = { type, nonce: r.take(NONCE_BYTES, 'nonce').slice() };
      break;
    case 'reflected':
      m = { type, nonce: r.take(NONCE_BYTES, 'nonce').slice(), address: r.address('reflected address') };
      break;
    case 'relayBind':
      m = {
        type,
        from: r.key('relay from key'),
        to: r.key('relay to key'),
        token: r.take(RELAY_TOKEN_BYTES, 'relay token').slice(),
      };
      break;
    case 'relayOffer':
      m = { type, from: r.key('relay from key'), token: r.take(RELAY_TOKEN_BYTES, 'relay token').slice() };
      break;
    case 'relayReady':
      m = {
        type,
        token: r.take(RELAY_TOKEN_BYTES, 'relay token').slice(),
        status: pick(RELAY_STATUSES, r.u8('relay status'), 'relay status'),
      };
      break;
    case 'relayData':
      // A view, not a copy: the payload goes on to a forwarder as is.
      m = { type, token: r.take(RELAY_TOKEN_BYTES, 'relay token'), payload: r.rest() };
      break;
    case 'nameplateLookup':
      m = { type, nameplate: r.u32('nameplate') };
      break;
    case 'nameplateReply': {
      const op = pick(NAMEPLATE_OPS, r.u8('nameplate op'), 'nameplate op');
      const status = pick(NAMEPLATE_STATUSES, r.u8('nameplate status'), 'nameplate status');
      const nameplate = r.u32('nameplate');
      m = r.flag('announcement')
        ? { type, op, status, nameplate, announcement: r.rest().slice() }
        : { type, op, status, nameplate };
      break;
    }
    case 'refused': {
      const request = r.u8('refused type');
      const reason = pick(REFUSAL_REASONS, r.u8('refusal reason'), 'refusal reason');
      const text = r.rest();
      if (text.length > MAX_ERROR_TEXT_BYTES) throw bad(`refusal text of ${text.length} bytes`);
      m = { type, request, reason, text: new TextDecoder().decode(text) };
      break;
    }
  }
  r.end(type);
  return m;
}
