// A node's long-term Ed25519 identity: creation, persistence (private key file mode 0600,
// refused when group/world readable), signing. node:crypto does the math (faster than
// libsodium here, see PLATFORM.md); keys are imported as JWK, the cheap path.
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import { ClawpeerError } from '../errors.js';
import { nodeIdFromPublicKey } from './node-id.js';

export interface Identity {
  /** 32-byte Ed25519 seed (the private key). */
  readonly seed: Uint8Array;
  /** 32-byte Ed25519 public key. */
  readonly publicKey: Uint8Array;
  readonly nodeId: string;
  readonly privateKeyObject: KeyObject;
}

const b64u = (b: Uint8Array): string => Buffer.from(b).toString('base64url');

export function identityFromSeed(seed: Uint8Array): Identity {
  if (seed.length !== 32)
    throw new ClawpeerError('IDENTITY_CORRUPT', `Ed25519 seed must be 32 bytes, got ${seed.length}`);
  // Derive the public key through node:crypto so the pair is always consistent.
  const pkcs8 = Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), Buffer.from(seed)]);
  const privateKeyObject = createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' });
  const jwk = createPublicKey(privateKeyObject).export({ format: 'jwk' });
  const publicKey = new Uint8Array(Buffer.from(jwk.x ?? '', 'base64url'));
  return { seed: new Uint8Array(seed), publicKey, nodeId: nodeIdFromPublicKey(publicKey), privateKeyObject };
}

export function generateIdentity(): Identity {
  const { privateKey } = generateKeyPairSync('ed25519');
  const jwk = privateKey.export({ format: 'jwk' });
  return identityFromSeed(new Uint8Array(Buffer.from(jwk.d ?? '', 'base64url')));
}

export function publicKeyObject(publicKey: Uint8Array): KeyObject {
  return createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: b64u(publicKey) }, format: 'jwk' });
}

export function signMessage(identity: Identity, message: Uint8Array): Uint8Array {
  return new Uint8Array(sign(null, message, identity.privateKeyObject));
}

export function verifySignature(publicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean {
  if (publicKey.length !== 32 || signature.length !== 64) return false;
  try {
    return verify(null, message, publicKeyObject(publicKey), signature);
  } catch {
    return false;
  }
}

/** libp2p protobuf private key (0x08 0x01 0x12 0x40 || seed || pub), the quinn binding's key format. */
export function libp2pPrivateKeyProto(identity: Identity): Uint8Array {
  const out = new Uint8Array(4 + 64);
  out.set([0x08, 0x01, 0x12, 0x40], 0);
  out.set(identity.seed, 4);
  out.set(identity.publicKey, 36);
  return out;
}
