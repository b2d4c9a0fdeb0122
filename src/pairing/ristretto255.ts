// The ristretto255 group (RFC 9496) as CPace uses it: map 64 uniform bytes to an element,
// multiply an element by a scalar with the check CPace's scalar_mult_vfy asks for (a bad encoding
// or the identity is refused), and sample a scalar. @noble/curves does the arithmetic: the
// libsodium-wrappers build we depend on has no ristretto255 functions.
import { ristretto255, ristretto255_hasher } from '@noble/curves/ed25519.js';

export const ELEMENT_BYTES = 32;
export const SCALAR_BYTES = 32;
/** The group's order: 2^252 + 27742317777372353535851937790883648493. */
const ORDER = 2n ** 252n + 27742317777372353535851937790883648493n;

/** RFC 9496 element derivation: 64 uniform bytes (a hash's output) to an encoded element. */
export function elementFromUniform(bytes: Uint8Array): Uint8Array {
  if (bytes.length !== 64) throw new RangeError(`ristretto255 derivation takes 64 bytes, got ${bytes.length}`);
  return ristretto255_hasher.deriveToCurve!(bytes).toBytes();
}

/**
 * scalar_mult_vfy: `scalar` (little-endian, reduced mod the order) times the element encoded in
 * `element`; undefined when `element` is no valid encoding or the product is the identity (the
 * caller aborts: the peer sent garbage, or a point meant to force a known key).
 */
export function scalarMultVfy(scalar: Uint8Array, element: Uint8Array): Uint8Array | undefined {
  if (element.length !== ELEMENT_BYTES) return undefined;
  let point;
  try {
    point = ristretto255.Point.fromBytes(element);
  } catch {
    return undefined;
  }
  const s = scalarOf(scalar);
  if (s === 0n) return undefined;
  const product = point.multiply(s);
  if (product.equals(ristretto255.Point.ZERO)) return undefined;
  return product.toBytes();
}

/** A scalar in 1..order-1 from 64 random bytes (reduced: the bias is below 2^-250), little-endian. */
export function scalarFromRandom(random: Uint8Array): Uint8Array {
  if (random.length < 64) throw new RangeError('a scalar needs 64 random bytes');
  let n = 0n;
  for (let i = 63; i >= 0; i--) n = (n << 8n) | BigInt(random[i] ?? 0);
  const s = (n % (ORDER - 1n)) + 1n;
  const out = new Uint8Array(SCALAR_BYTES);
  let v = s;
  for (let i = 0; i < SCALAR_BYTES; i++) {
    out[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return out;
}

function scalarOf(bytes: Uint8Array): bigint {
  let n = 0n;
  for (let i = bytes.length - 1; i >= 0; i--) n = (n << 8n) | BigInt(bytes[i] ?? 0);
  return n % ORDER;
}
