// A node's signed, expiring statement of where it can be reached: what LAN discovery
// broadcasts and what a rendezvous server keeps and hands out on lookup. The node's Ed25519
// key signs it, so a neighbour or a rendezvous can drop or delay one but never forge or alter
// one; receivers keep the highest `seq` per node, so an old one replayed is ignored.
//
// Wire form (all integers big-endian):
//   magic "CPA1" | public key (32) | seq u64 | issued_at_ms u64 | ttl_s u32 | flags u8
//   | address count u8 | addresses | nameplate? (u32, when flags bit 0) | signature (64)
//   address: role u8 | source u8 | family u8 (4 or 6) | ip (4 or 16) | port u16
// The signature covers SIGNING_CONTEXT || every byte before the signature.
import { signMessage, verifySignature, type Identity } from '../crypto/identity.js';
import { nodeIdFromPublicKey } from '../crypto/node-id.js';
import { ClawpeerError } from '../errors.js';

/** `listen`: the quinn/TLS listener itself; `mux`: the NAT traversal socket (hole punching). */
export type AddressRole = 'listen' | 'mux';
/** `local`: an interface address; `mapped`: a UPnP/NAT-PMP mapping; `reflexive`: as a rendezvous saw it. */
export type AddressSource = 'local' | 'mapped' | 'reflexive';

export interface AnnouncedAddress {
  readonly host: string;
  readonly port: number;
  readonly role: AddressRole;
  readonly source: AddressSource;
}

export interface AnnouncementFields {
  /** Strictly increasing per node (a clock in ms is fine): receivers keep the highest. */
  readonly seq: number;
  readonly issuedAtMs: number;
  readonly ttlMs: number;
  readonly addresses: readonly AnnouncedAddress[];
  /** A short-code pairing's nameplate, while an invite is open (issue: code pairing). */
  readonly nameplate?: number;
}

export interface Announcement extends AnnouncementFields {
  readonly nodeId: string;
  readonly publicKey: Uint8Array;
  readonly expiresAtMs: number;
  /** The whole signed wire form, to pass on unchanged (a rendezvous answering a lookup). */
  readonly bytes: Uint8Array;
}

const MAGIC = Uint8Array.from([0x43, 0x50, 0x41, 0x31]); // "CPA1"
const SIGNING_CONTEXT = new TextEncoder().encode('clawpeer announcement v1\0');
export const MAX_ANNOUNCED_ADDRESSES = 16;
/** Longest life an announcement may claim; a lost node drops out of lookups within it. */
export const MAX_ANNOUNCEMENT_TTL_MS = 60 * 60_000;
/** How far in the future `issued_at` may be (clock skew between the two machines). */
export const MAX_CLOCK_SKEW_MS = 5 * 60_000;
const SIGNATURE_BYTES = 64;
const FLAG_NAMEPLATE = 1;
/** Largest encoded announcement: well inside one UDP datagram on any path. */
export const MAX_ANNOUNCEMENT_BYTES =
  4 + 32 + 8 + 8 + 4 + 1 + 1 + MAX_ANNOUNCED_ADDRESSES * (3 + 16 + 2) + 4 + SIGNATURE_BYTES;

const ROLES: readonly AddressRole[] = ['listen', 'mux'];
const SOURCES: readonly AddressSource[] = ['local', 'mapped', 'reflexive'];

function invalid(why: string): ClawpeerError {
  return new ClawpeerError('PROTOCOL', `invalid announcement: ${why}`);
}

/** 4, 6, or 0 when `host` is not an IP literal (node:net's isIP, which a core may not import). */
export function ipFamily(host: string): 0 | 4 | 6 {
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
  if (v4 !== null) return v4.slice(1).every((o) => Number(o) <= 255) ? 4 : 0;
  if (!/^[0-9A-Fa-f:.]+$/.test(host) || !host.includes(':') || host.split('::').length > 2) return 0;
  const groups = host.split(':').filter((g) => g !== '');
  const last = groups[groups.length - 1] ?? '';
  const v4Tail = last.includes('.') ? (ipFamily(last) === 4 ? 2 : NaN) : 0;
  const count = groups.length - (last.includes('.') ? 1 : 0) + v4Tail;
  if (!groups.slice(0, last.includes('.') ? -1 : undefined).every((g) => /^[0-9A-Fa-f]{1,4}$/.test(g))) return 0;
  return (host.includes('::') ? count < 8 : count === 8) ? 6 : 0;
}

export function ipBytes(host: string): Uint8Array {
  const family = ipFamily(host);
  if (family === 4) return Uint8Array.from(host.split('.').map(Number));
  if (family !== 6) throw new ClawpeerError('USAGE', `announced address ${JSON.stringify(host)} is not an IP literal`);
  const [head = '', tail = ''] = host.includes('::') ? host.split('::') : [host, ''];
  const groups = (s: string): string[] => (s === '' ? [] : s.split(':'));
  const h = groups(head);
  const t = groups(tail);
  const last = t.length > 0 ? t : h;
  // An embedded IPv4 tail (::ffff:192.0.2.1) is two groups.
  if (last.length > 0 && (last[last.length - 1] ?? '').includes('.')) {
    const v4 = (last.pop() ?? '').split('.').map(Number);
    last.push((((v4[0] ?? 0) << 8) | (v4[1] ?? 0)).toString(16), (((v4[2] ?? 0) << 8) | (v4[3] ?? 0)).toString(16));
  }
  const all = [...h, ...Array<string>(8 - h.length - t.length).fill('0'), ...t];
  const out = new Uint8Array(16);
  all.forEach((g, i) => {
    const v = parseInt(g, 16);
    out[2 * i] = v >> 8;
    out[2 * i + 1] = v & 0xff;
  });
  return out;
}

export function ipText(bytes: Uint8Array): string {
  if (bytes.length === 4) return Array.from(bytes).join('.');
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((((bytes[i] ?? 0) << 8) | (bytes[i + 1] ?? 0)).toString(16));
  // Shorten the longest run of zero groups, as RFC 5952 asks.
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8;) {
    let j = i;
    while (j < 8 && groups[j] === '0') j++;
    if (j - i > bestLen) [best, bestLen] = [i, j - i];
    i = j === i ? i + 1 : j;
  }
  if (best < 0) return groups.join(':');
  return `${groups.slice(0, best).join(':')}::${groups.slice(best + bestLen).join(':')}`;
}

/** Encodes and signs an announcement with the node's identity key. */
export function encodeAnnouncement(identity: Identity, fields: AnnouncementFields): Uint8Array {
  if (fields.addresses.length > MAX_ANNOUNCED_ADDRESSES)
    throw new ClawpeerError(
      'USAGE',
      `at most ${MAX_ANNOUNCED_ADDRESSES} addresses per announcement, got ${fields.addresses.length}`,
    );
  if (!(fields.ttlMs > 0 && fields.ttlMs <= MAX_ANNOUNCEMENT_TTL_MS))
    throw new ClawpeerError(
      'USAGE',
      `announcement ttl must be 1 ms to ${MAX_ANNOUNCEMENT_TTL_MS} ms, got ${fields.ttlMs}`,
    );
  const parts: Uint8Array[] = [MAGIC, identity.publicKey];
  const fixed = new DataView(new ArrayBuffer(8 + 8 + 4 + 1 + 1));
  fixed.setBigUint64(0, BigInt(fields.seq));
  fixed.setBigUint64(8, BigInt(fields.issuedAtMs));
  fixed.setUint32(16, Math.ceil(fields.ttlMs / 1000));
  fixed.setUint8(20, fields.nameplate !== undefined ? FLAG_NAMEPLATE : 0);
  fixed.setUint8(21, fields.addresses.length);
  parts.push(new Uint8Array(fixed.buffer));
  for (const a of fields.addresses) {
    const ip = ipBytes(a.host);
    if (!Number.isInteger(a.port) || a.port < 1 || a.port > 65535)
      throw new ClawpeerError('USAGE', `announced port ${a.port} is not 1-65535`);
    const head = Uint8Array.of(ROLES.indexOf(a.role), SOURCES.indexOf(a.source), ip.length === 4 ? 4 : 6);
    parts.push(head, ip, Uint8Array.of(a.port >> 8, a.port & 0xff));
  }
  if (fields.nameplate !== undefined) {
    const np = new DataView(new ArrayBuffer(4));
    np.setUint32(0, fields.nameplate);
    parts.push(new Uint8Array(np.buffer));
  }
  const body = Buffer.concat(parts);
  const signature = signMessage(identity, Buffer.concat([SIGNING_CONTEXT, body]));
  return new Uint8Array(Buffer.concat([body, signature]));
}

/**
 * Decodes and checks an announcement: well formed, signed by the key it names, issued no
 * further ahead than the allowed clock skew, and not expired at `nowMs`. Anything else throws
 * PROTOCOL naming what was wrong; a caller drops the datagram.
 */
export function decodeAnnouncement(bytes: Uint8Array, nowMs: number): Announcement {
  if (bytes.length > MAX_ANNOUNCEMENT_BYTES)
    throw invalid(`${bytes.length} bytes, more than ${MAX_ANNOUNCEMENT_BYTES}`);
  if (bytes.length < 4 + 32 + 22 + SIGNATURE_BYTES) throw invalid(`${bytes.length} bytes is too short`);
  if (!MAGIC.every((b, i) => bytes[i] === b)) throw invalid('bad magic');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const publicKey = bytes.slice(4, 36);
  const seq = Number(view.getBigUint64(36));
  const issuedAtMs = Number(view.getBigUint64(44));
  const ttlMs = view.getUint32(52) * 1000;
  const flags = view.getUint8(56);
  const count = view.getUint8(57);
  if (count > MAX_ANNOUNCED_ADDRESSES) throw invalid(`${count} addresses, more than ${MAX_ANNOUNCED_ADDRESSES}`);
  if ((flags & ~FLAG_NAMEPLATE) !== 0) throw invalid(`unknown flags ${flags}`);
  let at = 58;
  const end = bytes.length - SIGNATURE_BYTES;
  const addresses: AnnouncedAddress[] = [];
  for (let i = 0; i < count; i++) {
    if (at + 3 > end) throw invalid('truncated address');
    const role = ROLES[bytes[at] ?? 255];
    const source = SOURCES[bytes[at + 1] ?? 255];
    const family = bytes[at + 2];
    const ipLen = family === 4 ? 4 : family === 6 ? 16 : 0;
    if (role === undefined || source === undefined || ipLen === 0)
      throw invalid(`address ${i} has an unknown role, source or family`);
    if (at + 3 + ipLen + 2 > end) throw invalid('truncated address');
    const host = ipText(bytes.subarray(at + 3, at + 3 + ipLen));
    const port = view.getUint16(at + 3 + ipLen);
    if (port === 0) throw invalid(`address ${i} has port 0`);
    addresses.push({ host, port, role, source });
    at += 3 + ipLen + 2;
  }
  let nameplate: number | undefined;
  if ((flags & FLAG_NAMEPLATE) !== 0) {
    if (at + 4 > end) throw invalid('truncated nameplate');
    nameplate = view.getUint32(at);
    at += 4;
  }
  if (at !== end) throw invalid(`${end - at} stray bytes before the signature`);
  if (!verifySignature(publicKey, Buffer.concat([SIGNING_CONTEXT, bytes.subarray(0, end)]), bytes.subarray(end)))
    throw invalid('bad signature');
  if (ttlMs === 0 || ttlMs > MAX_ANNOUNCEMENT_TTL_MS)
    throw invalid(`ttl ${ttlMs} ms is outside 1 s to ${MAX_ANNOUNCEMENT_TTL_MS} ms`);
  if (issuedAtMs > nowMs + MAX_CLOCK_SKEW_MS) throw invalid(`issued ${issuedAtMs - nowMs} ms in the future`);
  const expiresAtMs = issuedAtMs + ttlMs;
  if (expiresAtMs <= nowMs) throw invalid(`expired ${nowMs - expiresAtMs} ms ago`);
  return {
    nodeId: nodeIdFromPublicKey(publicKey),
    publicKey,
    seq,
    issuedAtMs,
    ttlMs,
    expiresAtMs,
    addresses,
    ...(nameplate !== undefined ? { nameplate } : {}),
    bytes: bytes.slice(),
  };
}
