// AEAD seal/open of DATA frames (node:crypto aes-256-gcm, the default, or chacha20-poly1305).
//
// Goals: the nonce is explicit and derived from the frame header (stream id || sequence, see
// src/protocol/frame-codec.ts), never from a hidden counter, so a frame can be opened on its
// own and a reordered, replayed or moved frame fails; the 56-byte data header is the AAD; each
// direction has its own key (crypto/session-keys.ts), so the same (stream, sequence) in the two
// directions never shares a key. A sealer refuses to reuse a nonce (programming bug guard).
// Non-goals: compression, windowing and acks (transfer/), key exchange (crypto/session-keys.ts).
//
// Nonce (96 bits) = streamId (u32 BE) || sequence (u64 BE). Sealed payload = ciphertext || tag.
// Key usage: nonces are unique per key by construction; AES-GCM's confidentiality margin per key
// is ~2^38 bytes (TLS 1.3's 2^24.5 full records of 16 KiB); rekeying is a later concern.
import {
  createCipheriv,
  createDecipheriv,
  createSecretKey,
  type CipherChaCha20Poly1305,
  type CipherGCM,
  type DecipherChaCha20Poly1305,
  type DecipherGCM,
  type KeyObject,
} from 'node:crypto';
import { ClawpeerError } from '../errors.js';
import type { AeadSuiteName } from './capabilities.js';
import { AEAD_TAG_BYTES, DATA_HEADER_BYTES, FRAME_HEADER_BYTES, encodeDataFramePrefix, type DataFrame, type DataHeader } from './frame-codec.js';
import { SESSION_KEY_BYTES } from '../crypto/session-keys.js';

export const AEAD_NONCE_BYTES = 12;
export { AEAD_TAG_BYTES };

/** The 12-byte nonce of the frame `sequence` on stream `streamId`. */
export function dataNonce(streamId: number, sequence: number): Uint8Array {
  if (!Number.isInteger(streamId) || streamId < 0 || streamId > 0xffff_ffff) throw new RangeError(`streamId out of range: ${streamId}`);
  if (!Number.isSafeInteger(sequence) || sequence < 0) throw new RangeError(`sequence out of range: ${sequence}`);
  const nonce = new Uint8Array(AEAD_NONCE_BYTES);
  const view = new DataView(nonce.buffer);
  view.setUint32(0, streamId);
  view.setBigUint64(4, BigInt(sequence));
  return nonce;
}

// One overload per suite in @types/node: a union argument matches none of them.
function cipherFor(suite: AeadSuiteName, key: KeyObject, nonce: Uint8Array): CipherGCM | CipherChaCha20Poly1305 {
  return suite === 'aes-256-gcm'
    ? createCipheriv(suite, key, nonce, { authTagLength: AEAD_TAG_BYTES })
    : createCipheriv(suite, key, nonce, { authTagLength: AEAD_TAG_BYTES });
}

function decipherFor(suite: AeadSuiteName, key: KeyObject, nonce: Uint8Array): DecipherGCM | DecipherChaCha20Poly1305 {
  return suite === 'aes-256-gcm'
    ? createDecipheriv(suite, key, nonce, { authTagLength: AEAD_TAG_BYTES })
    : createDecipheriv(suite, key, nonce, { authTagLength: AEAD_TAG_BYTES });
}

function secretKey(key: Uint8Array | KeyObject): KeyObject {
  if (!(key instanceof Uint8Array)) return key;
  if (key.length !== SESSION_KEY_BYTES) throw new RangeError(`AEAD key must be ${SESSION_KEY_BYTES} bytes, got ${key.length}`);
  return createSecretKey(key);
}

/** The two outputs of sealing: the cipher's own ciphertext buffer and the 16-byte tag. */
function sealPieces(suite: AeadSuiteName, key: KeyObject, nonce: Uint8Array, aad: Uint8Array, plaintext: Uint8Array): { ciphertext: Buffer; tag: Buffer } {
  const cipher = cipherFor(suite, key, nonce);
  cipher.setAAD(aad, { plaintextLength: plaintext.length });
  const ciphertext = cipher.update(plaintext);
  const rest = cipher.final(); // empty for both suites (stream modes)
  if (rest.length !== 0) throw new TypeError(`${suite} final() returned ${rest.length} bytes; expected none`);
  return { ciphertext, tag: cipher.getAuthTag() };
}

/**
 * Seals `plaintext` into `out` (ciphertext || tag, exactly plaintext.length + 16 bytes).
 * The low-level primitive; also what the interop test compares to libsodium.
 */
export function aeadSealInto(
  suite: AeadSuiteName,
  key: Uint8Array | KeyObject,
  nonce: Uint8Array,
  aad: Uint8Array,
  plaintext: Uint8Array,
  out: Uint8Array,
): void {
  if (out.length !== plaintext.length + AEAD_TAG_BYTES) throw new RangeError(`output must be ${plaintext.length + AEAD_TAG_BYTES} bytes, got ${out.length}`);
  const { ciphertext, tag } = sealPieces(suite, secretKey(key), nonce, aad, plaintext);
  out.set(ciphertext, 0);
  out.set(tag, plaintext.length);
}

/** Seals into a new buffer: ciphertext || tag. */
export function aeadSeal(suite: AeadSuiteName, key: Uint8Array | KeyObject, nonce: Uint8Array, aad: Uint8Array, plaintext: Uint8Array): Uint8Array {
  const out = new Uint8Array(plaintext.length + AEAD_TAG_BYTES);
  aeadSealInto(suite, key, nonce, aad, plaintext, out);
  return out;
}

/** Opens ciphertext || tag; DECRYPT_FAILED when the tag does not verify. */
export function aeadOpen(suite: AeadSuiteName, key: Uint8Array | KeyObject, nonce: Uint8Array, aad: Uint8Array, sealed: Uint8Array): Uint8Array {
  if (sealed.length < AEAD_TAG_BYTES) {
    throw new ClawpeerError('DECRYPT_FAILED', `sealed payload of ${sealed.length} bytes is shorter than the ${AEAD_TAG_BYTES}-byte tag`);
  }
  const split = sealed.length - AEAD_TAG_BYTES;
  const decipher = decipherFor(suite, secretKey(key), nonce);
  decipher.setAAD(aad, { plaintextLength: sealed.length - AEAD_TAG_BYTES });
  decipher.setAuthTag(sealed.subarray(split));
  const plaintext = decipher.update(sealed.subarray(0, split));
  try {
    const rest = decipher.final();
    if (rest.length === 0) return new Uint8Array(plaintext.buffer, plaintext.byteOffset, plaintext.length);
    return new Uint8Array(Buffer.concat([plaintext, rest]));
  } catch (cause) {
    plaintext.fill(0); // never let unauthenticated plaintext escape
    throw new ClawpeerError('DECRYPT_FAILED', `${suite} tag does not verify`, { cause });
  }
}

/**
 * Seals DATA frames for one direction of a session. Sequence numbers come from the caller (they
 * are on the wire); the sealer only checks that each stream's sequence strictly increases, so a
 * bug can never reuse a nonce. Memory: one number per stream id ever used.
 */
export class DataSealer {
  readonly suite: AeadSuiteName;
  #key: KeyObject;
  #lastSequence = new Map<number, number>();

  constructor(suite: AeadSuiteName, key: Uint8Array) {
    this.suite = suite;
    this.#key = secretKey(key);
  }

  /**
   * A DATA frame (frame header, data header, ciphertext || tag) as three pieces written in that
   * order: the ciphertext is the cipher's own output, so no frame-sized buffer is allocated,
   * zeroed or copied into. Per 256 KiB chunk that saves one allocation and one copy, and the
   * garbage that drives V8's full collections (bench/transfer.ts). `plaintext` is the chunk's
   * payload as sent (compressed when header.compressed); the caller keeps chunkBytes and chunkId
   * honest. Refuses a sequence that does not increase on its stream (nonce reuse).
   */
  sealParts(header: Omit<DataHeader, 'payloadBytes'>, plaintext: Uint8Array): SealedFrameParts {
    const last = this.#lastSequence.get(header.streamId);
    if (last !== undefined && header.sequence <= last) {
      throw new TypeError(`nonce reuse refused: stream ${header.streamId} sequence ${header.sequence} after ${last}`);
    }
    const prefix = encodeDataFramePrefix({ ...header, payloadBytes: plaintext.length + AEAD_TAG_BYTES });
    const { ciphertext, tag } = sealPieces(this.suite, this.#key, dataNonce(header.streamId, header.sequence), prefix.subarray(FRAME_HEADER_BYTES), plaintext);
    this.#lastSequence.set(header.streamId, header.sequence);
    return { prefix, ciphertext, tag };
  }

  /** The frame of sealParts() in one buffer (tests and tools; the bulk path writes the parts). */
  seal(header: Omit<DataHeader, 'payloadBytes'>, plaintext: Uint8Array): Uint8Array {
    const { prefix, ciphertext, tag } = this.sealParts(header, plaintext);
    const frame = new Uint8Array(prefix.length + ciphertext.length + tag.length);
    frame.set(prefix, 0);
    frame.set(ciphertext, prefix.length);
    frame.set(tag, prefix.length + ciphertext.length);
    return frame;
  }
}

/**
 * A DATA frame as three pieces (DataSealer.sealParts; DataSealer.seal joins them):
 * frame and data headers, ciphertext, tag. Written in order on one stream, they are the frame.
 */
export interface SealedFrameParts {
  /** Frame header + 56-byte data header (61 bytes). */
  readonly prefix: Uint8Array;
  readonly ciphertext: Uint8Array;
  readonly tag: Uint8Array;
}

/** Opens DATA frames for one direction of a session. */
export class DataOpener {
  readonly suite: AeadSuiteName;
  #key: KeyObject;

  constructor(suite: AeadSuiteName, key: Uint8Array) {
    this.suite = suite;
    this.#key = secretKey(key);
  }

  /**
   * The plaintext of `frame`, which must be the frame `expected.sequence` of stream
   * `expected.streamId`: anything else is a replayed, reordered or misrouted frame and is
   * DECRYPT_FAILED before any decryption. A bad tag is DECRYPT_FAILED too.
   */
  open(frame: DataFrame, expected: { readonly streamId: number; readonly sequence: number }): Uint8Array {
    const { streamId, sequence } = frame.header;
    if (streamId !== expected.streamId || sequence !== expected.sequence) {
      throw new ClawpeerError(
        'DECRYPT_FAILED',
        `replayed or reordered DATA frame: stream ${streamId} sequence ${sequence}, expected stream ${expected.streamId} sequence ${expected.sequence}`,
      );
    }
    if (frame.headerBytes.length !== DATA_HEADER_BYTES) throw new TypeError(`data header must be ${DATA_HEADER_BYTES} bytes`);
    try {
      return aeadOpen(this.suite, this.#key, dataNonce(streamId, sequence), frame.headerBytes, frame.payload);
    } catch (err) {
      if (err instanceof ClawpeerError) {
        throw new ClawpeerError('DECRYPT_FAILED', `DATA frame stream ${streamId} sequence ${sequence} failed authentication (${err.message})`, { cause: err });
      }
      throw err;
    }
  }
}
