// A LAN discovery query: a dialer broadcasts it to ask "where is node K?" (or "who holds
// nameplate N?", for short-code pairing); a listener that is K (or holds N) answers with its
// signed announcement (announcement.ts), sent back to the query's source. The query itself is
// unsigned: it asks, the answer proves. Nothing else travels on the discovery port.
//
// Wire form: magic "CPQ1" | kind u8 (1: node key, 2: nameplate) | target
//   kind 1: the node's Ed25519 public key (32 bytes); kind 2: the nameplate, u32 big-endian.
import { ClawpeerError } from '../errors.js';

export type LanQuery =
  | { readonly kind: 'node'; readonly publicKey: Uint8Array }
  | { readonly kind: 'nameplate'; readonly nameplate: number };

const MAGIC = Uint8Array.from([0x43, 0x50, 0x51, 0x31]); // "CPQ1"
const KIND_NODE = 1;
const KIND_NAMEPLATE = 2;

/** True when `bytes` starts like a query (cheap test before decoding; announcements start "CPA1"). */
export function isLanQuery(bytes: Uint8Array): boolean {
  return bytes.length >= 5 && MAGIC.every((b, i) => bytes[i] === b);
}

export function encodeLanQuery(q: LanQuery): Uint8Array {
  if (q.kind === 'node') {
    if (q.publicKey.length !== 32)
      throw new ClawpeerError('USAGE', `a LAN query names a 32-byte key, got ${q.publicKey.length} bytes`);
    const out = new Uint8Array(5 + 32);
    out.set(MAGIC, 0);
    out[4] = KIND_NODE;
    out.set(q.publicKey, 5);
    return out;
  }
  if (!Number.isInteger(q.nameplate) || q.nameplate < 0 || q.nameplate > 0xffff_ffff)
    throw new ClawpeerError('USAGE', `nameplate ${q.nameplate} is not a u32`);
  const out = new Uint8Array(5 + 4);
  out.set(MAGIC, 0);
  out[4] = KIND_NAMEPLATE;
  new DataView(out.buffer).setUint32(5, q.nameplate);
  return out;
}

/** Decodes a query; PROTOCOL naming what was wrong otherwise (the caller drops the datagram). */
export function decodeLanQuery(bytes: Uint8Array): LanQuery {
  if (!isLanQuery(bytes)) throw new ClawpeerError('PROTOCOL', 'invalid LAN query: bad magic');
  const kind = bytes[4];
  if (kind === KIND_NODE && bytes.length === 5 + 32) return { kind: 'node', publicKey: bytes.slice(5, 37) };
  if (kind === KIND_NAMEPLATE && bytes.length === 5 + 4)
    return {
      kind: 'nameplate',
      nameplate: new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(5),
    };
  throw new ClawpeerError('PROTOCOL', `invalid LAN query: kind ${String(kind)} with ${bytes.length} bytes`);
}
