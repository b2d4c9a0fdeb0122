// Node ids are libp2p peer ids of the Ed25519 identity key: base58btc of the identity
// multihash of the protobuf-encoded public key (0x00 0x24 | 0x08 0x01 0x12 0x20 | pub).
// Using this exact form means the id the quinn binding proves in TLS ("/p2p/<id>") is the
// id users pair with: no second naming scheme to keep in sync.
import { ClawpeerError } from '../errors.js';

const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';
const PREFIX = Uint8Array.from([0x00, 0x24, 0x08, 0x01, 0x12, 0x20]);
export const ED25519_PUBLIC_KEY_BYTES = 32;

export function base58Encode(bytes: Uint8Array): string {
  let zeros = 0;
  while (zeros < bytes.length && bytes[zeros] === 0) zeros++;
  const digits: number[] = [];
  for (let i = zeros; i < bytes.length; i++) {
    let carry = bytes[i] ?? 0;
    for (let j = 0; j < digits.length; j++) {
      carry += (digits[j] ?? 0) << 8;
      digits[j] = carry % 58;
      carry = (carry / 58) | 0;
    }
    while (carry > 0) {
      digits.push(carry % 58);
      carry = (carry / 58) | 0;
    }
  }
  let out = '1'.repeat(zeros);
  for (let i = digits.length - 1; i >= 0; i--) out += ALPHABET.charAt(digits[i] ?? 0);
  return out;
}

export function base58Decode(text: string): Uint8Array {
  let zeros = 0;
  while (zeros < text.length && text[zeros] === '1') zeros++;
  const bytes: number[] = [];
  for (let i = zeros; i < text.length; i++) {
    let carry = ALPHABET.indexOf(text[i] ?? '');
    if (carry < 0)
      throw new ClawpeerError(
        'USAGE',
        `invalid base58 character ${JSON.stringify(text[i])} in ${JSON.stringify(text)}`,
      );
    for (let j = 0; j < bytes.length; j++) {
      carry += (bytes[j] ?? 0) * 58;
      bytes[j] = carry & 0xff;
      carry >>= 8;
    }
    while (carry > 0) {
      bytes.push(carry & 0xff);
      carry >>= 8;
    }
  }
  const out = new Uint8Array(zeros + bytes.length);
  for (let i = 0; i < bytes.length; i++) out[out.length - 1 - i] = bytes[i] ?? 0;
  return out;
}

/** The node id of an Ed25519 public key. */
export function nodeIdFromPublicKey(publicKey: Uint8Array): string {
  if (publicKey.length !== ED25519_PUBLIC_KEY_BYTES) {
    throw new TypeError(`Ed25519 public key must be ${ED25519_PUBLIC_KEY_BYTES} bytes, got ${publicKey.length}`);
  }
  const buf = new Uint8Array(PREFIX.length + publicKey.length);
  buf.set(PREFIX, 0);
  buf.set(publicKey, PREFIX.length);
  return base58Encode(buf);
}

/** The Ed25519 public key inside a node id; a clear USAGE error if the text is not one. */
export function publicKeyFromNodeId(id: string): Uint8Array {
  let raw: Uint8Array;
  try {
    raw = base58Decode(id);
  } catch (cause) {
    throw new ClawpeerError('USAGE', `not a node id: ${JSON.stringify(id)} (expected base58, like 12D3KooW...)`, {
      cause,
    });
  }
  const ok = raw.length === PREFIX.length + ED25519_PUBLIC_KEY_BYTES && PREFIX.every((b, i) => raw[i] === b);
  if (!ok)
    throw new ClawpeerError(
      'USAGE',
      `not a node id: ${JSON.stringify(id)} (not an Ed25519 identity; expected 12D3KooW...)`,
    );
  return raw.slice(PREFIX.length);
}

export function isNodeId(text: string): boolean {
  try {
    publicKeyFromNodeId(text);
    return true;
  } catch {
    return false;
  }
}
