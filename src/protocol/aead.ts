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
//
// CPU: node:crypto has no "update into this buffer": every update() returns a new, zero-filled
// buffer of its input's size. One update() per 256 KiB chunk made a fresh 256 KiB allocation per
// frame on both sides (~1 s of main-thread CPU per GiB each, twice what the cipher itself costs
// here, plus the GCs external memory drives). So the bulk paths run the cipher over slices of
// CRYPT_SLICE_BYTES, whose small outputs come from the malloc heap, and copy each into the
// caller's buffer (open: the receiver's reused plaintext buffer; sealInto). Same bytes on the
// wire: AEAD output does not depend on how the input is cut into update() calls. (node's
// update() is not zero-filled, but allocates its input's size plus a block, then allocates
// again and copies when the output is shorter, as it always is for these suites.)
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
import {
  AEAD_TAG_BYTES,
  DATA_HEADER_BYTES,
  FRAME_HEADER_BYTES,
  encodeDataFramePrefix,
  writeDataHeader,
  writeFrameHeader,
  type DataFrame,
  type DataHeader,
} from './frame-codec.js';
import { SESSION_KEY_BYTES } from '../crypto/session-keys.js';

export const AEAD_NONCE_BYTES = 12;
export { AEAD_TAG_BYTES };

/** The 12-byte nonce of the frame `sequence` on stream `streamId`. */
export function dataNonce(streamId: number, sequence: number): Uint8Array {
  if (!Number.isInteger(streamId) || streamId < 0 || streamId > 0xffff_ffff)
    throw new RangeError(`streamId out of range: ${streamId}`);
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
  if (key.length !== SESSION_KEY_BYTES)
    throw new RangeError(`AEAD key must be ${SESSION_KEY_BYTES} bytes, got ${key.length}`);
  return createSecretKey(key);
}

/**
 * Bytes of input per cipher update() on the bulk paths (see the header): small enough that the
 * output comes from the malloc heap (glibc maps 128 KiB and up afresh), large enough that the
 * per-call cost is noise. Measured here, aes-256-gcm over 256 KiB chunks: 1.3-1.5 GiB/s with one
 * update, 1.7-2.0 with 32-64 KiB slices (in a quiet process; more in a busy one).
 */
export const CRYPT_SLICE_BYTES = 64 << 10;

/** Runs `cipher` over `input` slice by slice, each output copied into `out` at the same offset. */
function cryptSliced(cipher: { update(data: Uint8Array): Buffer }, input: Uint8Array, out: Uint8Array): void {
  for (let at = 0; at < input.length; at += CRYPT_SLICE_BYTES) {
    const piece = cipher.update(input.subarray(at, Math.min(input.length, at + CRYPT_SLICE_BYTES)));
    out.set(piece, at);
  }
}

/**
 * Seals `plaintext` into `out` (ciphertext || tag, exactly plaintext.length + 16 bytes).
 * The low-level primitive; also what the interop test compares to libsodium. `out` must not
 * overlap `plaintext`.
 */
export function aeadSealInto(
  suite: AeadSuiteName,
  key: Uint8Array | KeyObject,
  nonce: Uint8Array,
  aad: Uint8Array,
  plaintext: Uint8Array,
  out: Uint8Array,
): void {
  if (out.length !== plaintext.length + AEAD_TAG_BYTES)
    throw new RangeError(`output must be ${plaintext.length + AEAD_TAG_BYTES} bytes, got ${out.length}`);
  const cipher = cipherFor(suite, secretKey(key), nonce);
  cipher.setAAD(aad, { plaintextLength: plaintext.length });
  cryptSliced(cipher, plaintext, out);
  const rest = cipher.final(); // empty for both suites (stream modes)
  if (rest.length !== 0) throw new TypeError(`${suite} final() returned ${rest.length} bytes; expected none`);
  out.set(cipher.getAuthTag(), plaintext.length);
}

/** Seals into a new buffer: ciphertext || tag. */
export function aeadSeal(
  suite: AeadSuiteName,
  key: Uint8Array | KeyObject,
  nonce: Uint8Array,
  aad: Uint8Array,
  plaintext: Uint8Array,
): Uint8Array {
  const out = new Uint8Array(plaintext.length + AEAD_TAG_BYTES);
  aeadSealInto(suite, key, nonce, aad, plaintext, out);
  return out;
}

/**
 * Opens ciphertext || tag; DECRYPT_FAILED when the tag does not verify. The plaintext is written
 * into `into` (at least sealed.length - 16 bytes, not overlapping `sealed`) and returned as a
 * view of it, or into a new buffer when `into` is omitted. On failure nothing of it is left
 * readable: `into` is zeroed over the plaintext's length.
 */
export function aeadOpen(
  suite: AeadSuiteName,
  key: Uint8Array | KeyObject,
  nonce: Uint8Array,
  aad: Uint8Array,
  sealed: Uint8Array,
  into?: Uint8Array,
): Uint8Array {
  if (sealed.length < AEAD_TAG_BYTES) {
    throw new ClawpeerError(
      'DECRYPT_FAILED',
      `sealed payload of ${sealed.length} bytes is shorter than the ${AEAD_TAG_BYTES}-byte tag`,
    );
  }
  const split = sealed.length - AEAD_TAG_BYTES;
  if (into !== undefined && into.length < split)
    throw new RangeError(`plaintext buffer of ${into.length} bytes cannot hold ${split}`);
  // Not zero-filled: cryptSliced writes every byte of it.
  const plaintext =
    into === undefined ? new Uint8Array(Buffer.allocUnsafeSlow(split).buffer, 0, split) : into.subarray(0, split);
  const decipher = decipherFor(suite, secretKey(key), nonce);
  decipher.setAAD(aad, { plaintextLength: split });
  decipher.setAuthTag(sealed.subarray(split));
  cryptSliced(decipher, sealed.subarray(0, split), plaintext);
  try {
    const rest = decipher.final(); // empty for both suites (stream modes)
    if (rest.length !== 0) throw new TypeError(`${suite} final() returned ${rest.length} bytes; expected none`);
    return plaintext;
  } catch (cause) {
    plaintext.fill(0); // never let unauthenticated plaintext escape
    if (cause instanceof TypeError) throw cause;
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
   * Seals a DATA frame (frame header, data header, ciphertext || tag) into `out`, which must hold
   * dataFrameBytes(plaintext.length) and not overlap `plaintext`, and returns the frame as a view
   * of it; the cipher runs over slices (see the header). `plaintext` is the chunk's payload as sent (compressed when
   * header.compressed); the caller keeps chunkBytes and chunkId honest. Refuses a sequence that
   * does not increase on its stream (nonce reuse).
   */
  sealInto(header: Omit<DataHeader, 'payloadBytes'>, plaintext: Uint8Array, out: Uint8Array): Uint8Array {
    const last = this.#lastSequence.get(header.streamId);
    if (last !== undefined && header.sequence <= last) {
      throw new TypeError(`nonce reuse refused: stream ${header.streamId} sequence ${header.sequence} after ${last}`);
    }
    const frameBytes = dataFrameBytes(plaintext.length);
    if (out.length < frameBytes)
      throw new RangeError(`frame buffer of ${out.length} bytes cannot hold a ${frameBytes}-byte frame`);
    const frame = out.subarray(0, frameBytes);
    const payloadBytes = plaintext.length + AEAD_TAG_BYTES;
    writeFrameHeader(frame, 0, 'data', DATA_HEADER_BYTES + payloadBytes);
    writeDataHeader(frame, FRAME_HEADER_BYTES, { ...header, payloadBytes });
    const sealedAt = FRAME_HEADER_BYTES + DATA_HEADER_BYTES;
    aeadSealInto(
      this.suite,
      this.#key,
      dataNonce(header.streamId, header.sequence),
      frame.subarray(FRAME_HEADER_BYTES, sealedAt),
      plaintext,
      frame.subarray(sealedAt),
    );
    this.#lastSequence.set(header.streamId, header.sequence);
    return frame;
  }

  /**
   * A DATA frame as three pieces written in that order (the bulk sender's path): the ciphertext
   * is the cipher's own output of one update(), so no frame-sized buffer is allocated or copied
   * into here; the write coalescer joins the pieces into its reused buffer. (Sealing into reused
   * frame buffers with sliced updates instead, measured on a 512 MiB push: no less CPU on the
   * sender, and ~30 MiB more peak RSS for the buffers a stream kept.)
   */
  sealParts(header: Omit<DataHeader, 'payloadBytes'>, plaintext: Uint8Array): SealedFrameParts {
    const last = this.#lastSequence.get(header.streamId);
    if (last !== undefined && header.sequence <= last) {
      throw new TypeError(`nonce reuse refused: stream ${header.streamId} sequence ${header.sequence} after ${last}`);
    }
    const prefix = encodeDataFramePrefix({ ...header, payloadBytes: plaintext.length + AEAD_TAG_BYTES });
    const cipher = cipherFor(this.suite, this.#key, dataNonce(header.streamId, header.sequence));
    cipher.setAAD(prefix.subarray(FRAME_HEADER_BYTES), { plaintextLength: plaintext.length });
    const ciphertext = cipher.update(plaintext);
    const rest = cipher.final(); // empty for both suites (stream modes)
    if (rest.length !== 0) throw new TypeError(`${this.suite} final() returned ${rest.length} bytes; expected none`);
    this.#lastSequence.set(header.streamId, header.sequence);
    return { prefix, ciphertext, tag: cipher.getAuthTag() };
  }

  /** sealInto() a new buffer of the frame's size (tests and tools; the bulk path writes sealParts()). */
  seal(header: Omit<DataHeader, 'payloadBytes'>, plaintext: Uint8Array): Uint8Array {
    return this.sealInto(header, plaintext, new Uint8Array(dataFrameBytes(plaintext.length)));
  }
}

/**
 * A DATA frame as three pieces (DataSealer.sealParts): frame and data headers, ciphertext, tag.
 * Written in order on one stream, they are the frame.
 */
export interface SealedFrameParts {
  /** Frame header + 56-byte data header (61 bytes). */
  readonly prefix: Uint8Array;
  readonly ciphertext: Uint8Array;
  readonly tag: Uint8Array;
}

/** Bytes of the whole DATA frame whose payload (as sent) is `plaintextBytes` long. */
export function dataFrameBytes(plaintextBytes: number): number {
  return FRAME_HEADER_BYTES + DATA_HEADER_BYTES + plaintextBytes + AEAD_TAG_BYTES;
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
   * DECRYPT_FAILED before any decryption. A bad tag is DECRYPT_FAILED too. The plaintext goes
   * into `into` when given (a buffer the caller reuses; see aeadOpen), else a new buffer.
   */
  open(
    frame: DataFrame,
    expected: { readonly streamId: number; readonly sequence: number },
    into?: Uint8Array,
  ): Uint8Array {
    const { streamId, sequence } = frame.header;
    if (streamId !== expected.streamId || sequence !== expected.sequence) {
      throw new ClawpeerError(
        'DECRYPT_FAILED',
        `replayed or reordered DATA frame: stream ${streamId} sequence ${sequence}, expected stream ${expected.streamId} sequence ${expected.sequence}`,
      );
    }
    if (frame.headerBytes.length !== DATA_HEADER_BYTES)
      throw new TypeError(`data header must be ${DATA_HEADER_BYTES} bytes`);
    try {
      return aeadOpen(this.suite, this.#key, dataNonce(streamId, sequence), frame.headerBytes, frame.payload, into);
    } catch (err) {
      if (err instanceof ClawpeerError) {
        throw new ClawpeerError(
          'DECRYPT_FAILED',
          `DATA frame stream ${streamId} sequence ${sequence} failed authentication (${err.message})`,
          { cause: err },
        );
      }
      throw err;
    }
  }
}
