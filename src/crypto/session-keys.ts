// Session keys: X25519 between the two ephemeral keys of a handshake, then HKDF-SHA256 with the
// handshake transcript hash as salt, one 32-byte key per direction.
//
// Goals: forward secrecy (ephemeral keys live for one handshake), keys bound to the exact
// transcript both identities signed, and separate keys per direction so the explicit nonces of
// DATA frames (stream id || sequence) can never repeat under one key across directions.
// Non-goals: the handshake sequence (src/protocol/handshake.ts), sealing (src/protocol/aead.ts), rekeying.
//
// node:crypto does the math; raw keys are imported as JWK, the fast path (PLATFORM.md).
import {
  createHmac,
  createPrivateKey,
  createPublicKey,
  diffieHellman,
  generateKeyPairSync,
  hkdfSync,
  timingSafeEqual,
  type KeyObject,
} from 'node:crypto';
import { ClawpeerError } from '../errors.js';

/** The AEAD suites a session can seal DATA frames with (protocol/aead.ts), in default preference order. */
export const AEAD_SUITES = ['aes-256-gcm', 'chacha20-poly1305'] as const;
export type AeadSuiteName = (typeof AEAD_SUITES)[number];

export const X25519_KEY_BYTES = 32;
/** Both AEAD suites use 256-bit keys. */
export const SESSION_KEY_BYTES = 32;
export const HKDF_INFO_CLIENT_TO_SERVER = 'clawpeer v1 c2s';
export const HKDF_INFO_SERVER_TO_CLIENT = 'clawpeer v1 s2c';
/** The key that proves a SessionJoin: only the two ends of the handshake can derive it. */
export const HKDF_INFO_JOIN = 'clawpeer v1 join';
const JOIN_PROOF_CONTEXT = Buffer.from('clawpeer v1 join\0');

export type HandshakeRole = 'client' | 'server';

export interface EphemeralKeyPair {
  /** 32-byte X25519 public key, as sent in Hello/Welcome. */
  readonly publicKey: Uint8Array;
  readonly privateKey: KeyObject;
}

const b64u = (bytes: Uint8Array): string => Buffer.from(bytes).toString('base64url');
const fromB64u = (text: string | undefined): Uint8Array => new Uint8Array(Buffer.from(text ?? '', 'base64url'));

export function generateEphemeralKeyPair(): EphemeralKeyPair {
  const { privateKey } = generateKeyPairSync('x25519');
  const jwk = privateKey.export({ format: 'jwk' });
  return { publicKey: fromB64u(jwk.x), privateKey };
}

/**
 * A key pair from a 32-byte X25519 private key. For reproducible tests and test vectors; real
 * handshakes use generateEphemeralKeyPair(). (Goes through PKCS#8 DER once to learn the public
 * key, the slow path, which does not matter here.)
 */
export function ephemeralKeyPairFromPrivate(privateKeyBytes: Uint8Array): EphemeralKeyPair {
  if (privateKeyBytes.length !== X25519_KEY_BYTES)
    throw new RangeError(`X25519 private key must be 32 bytes, got ${privateKeyBytes.length}`);
  const pkcs8 = Buffer.concat([Buffer.from('302e020100300506032b656e04220420', 'hex'), Buffer.from(privateKeyBytes)]);
  const privateKey = createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' });
  return { publicKey: fromB64u(createPublicKey(privateKey).export({ format: 'jwk' }).x), privateKey };
}

/**
 * X25519(own private, peer public). A peer key that yields the all-zero secret (a low-order
 * point, which would make the session keys predictable) is AUTH_FAILED.
 */
export function x25519SharedSecret(own: EphemeralKeyPair, peerPublicKey: Uint8Array): Uint8Array {
  if (peerPublicKey.length !== X25519_KEY_BYTES) {
    throw new ClawpeerError(
      'PROTOCOL',
      `peer X25519 key must be ${X25519_KEY_BYTES} bytes, got ${peerPublicKey.length}`,
    );
  }
  let secret: Uint8Array;
  try {
    const publicKey = createPublicKey({ key: { kty: 'OKP', crv: 'X25519', x: b64u(peerPublicKey) }, format: 'jwk' });
    secret = new Uint8Array(diffieHellman({ privateKey: own.privateKey, publicKey }));
  } catch (cause) {
    // OpenSSL refuses an all-zero result ("failed during derivation"): a low-order peer key.
    throw new ClawpeerError('AUTH_FAILED', 'peer X25519 ephemeral key is invalid (low-order point)', { cause });
  }
  if (secret.every((b) => b === 0))
    throw new ClawpeerError('AUTH_FAILED', 'peer X25519 ephemeral key is a low-order point');
  return secret;
}

/** The two direction keys of a session; identical on both sides. */
export interface DirectionKeys {
  readonly clientToServer: Uint8Array;
  readonly serverToClient: Uint8Array;
  /** Keys the proofs of connections joining the session (never seals data). */
  readonly join: Uint8Array;
}

/** HKDF-SHA256(ikm = shared secret, salt = transcript hash, info = direction label). */
export function deriveDirectionKeys(sharedSecret: Uint8Array, transcriptHash: Uint8Array): DirectionKeys {
  const expand = (info: string): Uint8Array =>
    new Uint8Array(hkdfSync('sha256', sharedSecret, transcriptHash, info, SESSION_KEY_BYTES));
  return {
    clientToServer: expand(HKDF_INFO_CLIENT_TO_SERVER),
    serverToClient: expand(HKDF_INFO_SERVER_TO_CLIENT),
    join: expand(HKDF_INFO_JOIN),
  };
}

/**
 * The proof of a SessionJoin: HMAC-SHA256(join key, "clawpeer v1 join\0" || sessionId ||
 * u32be(index)). Bound to the session's keys (only its two ends know the join key) and to the
 * connection's number (each number is accepted once, so a replayed join is refused).
 */
export function joinProof(joinKey: Uint8Array, sessionId: Uint8Array, index: number): Uint8Array {
  const n = Buffer.alloc(4);
  n.writeUInt32BE(index);
  return new Uint8Array(createHmac('sha256', joinKey).update(JOIN_PROOF_CONTEXT).update(sessionId).update(n).digest());
}

/** Constant-time comparison of a received proof with the expected one. */
export function joinProofMatches(expected: Uint8Array, received: Uint8Array): boolean {
  return expected.length === received.length && timingSafeEqual(expected, received);
}

/** One side's view of the session keys. */
export interface SessionKeys {
  readonly suite: AeadSuiteName;
  /** Seals what this side sends. */
  readonly sendKey: Uint8Array;
  /** Opens what this side receives. */
  readonly receiveKey: Uint8Array;
  /** Proves (client) or checks (server) connections joining the session. */
  readonly joinKey: Uint8Array;
}

export function sessionKeysFor(role: HandshakeRole, suite: AeadSuiteName, keys: DirectionKeys): SessionKeys {
  return role === 'client'
    ? { suite, sendKey: keys.clientToServer, receiveKey: keys.serverToClient, joinKey: keys.join }
    : { suite, sendKey: keys.serverToClient, receiveKey: keys.clientToServer, joinKey: keys.join };
}
