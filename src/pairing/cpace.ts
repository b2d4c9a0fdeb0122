// CPace (draft-irtf-cfrg-cpace), the cipher suite CPACE-RISTR255-SHA512, initiator-responder
// mode: both sides derive a generator from the password (PRS), the channel identifier (CI) and
// the session id (sid); each sends its scalar times that generator; both reach the same
// intermediate session key (ISK) only when they used the same password. Someone without the
// password gets one guess per run, and learns nothing it could test other guesses against
// offline. test/pairing/cpace-vectors.test.ts checks this against the draft's test vectors.
import { createHash } from 'node:crypto';
import { elementFromUniform, scalarFromRandom, scalarMultVfy } from './ristretto255.js';

export const DSI = utf8('CPaceRistretto255');
const DSI_ISK = utf8('CPaceRistretto255_ISK');
/** SHA-512's input block size: the generator string's zero padding fills the first block. */
const H_S_IN_BYTES = 128;

export interface CpaceInputs {
  /** The password (the code). */
  readonly prs: Uint8Array;
  /** The channel identifier: what binds the run to these two parties. */
  readonly ci: Uint8Array;
  readonly sid: Uint8Array;
}

/** A party's share: its secret scalar and the element it sends. */
export interface CpaceShare {
  readonly scalar: Uint8Array;
  readonly element: Uint8Array;
}

/** prepend_len: the length as LEB128, then the bytes. */
export function prependLen(data: Uint8Array): Uint8Array {
  const len: number[] = [];
  let n = data.length;
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n > 0) byte |= 0x80;
    len.push(byte);
  } while (n > 0);
  return concat([Uint8Array.from(len), data]);
}

/** lv_cat: each part length-prefixed, concatenated. */
export function lvCat(...parts: Uint8Array[]): Uint8Array {
  return concat(parts.map(prependLen));
}

/** generator_string(DSI, PRS, CI, sid, s_in_bytes): zero padding so PRS ends in the first hash block. */
export function generatorString(prs: Uint8Array, ci: Uint8Array, sid: Uint8Array): Uint8Array {
  const zpad = Math.max(0, H_S_IN_BYTES - prependLen(prs).length - prependLen(DSI).length - 1);
  return lvCat(DSI, prs, new Uint8Array(zpad), ci, sid);
}

/** calculate_generator: the password's generator for this channel and session. */
export function calculateGenerator(inputs: CpaceInputs): Uint8Array {
  return elementFromUniform(sha512(generatorString(inputs.prs, inputs.ci, inputs.sid)));
}

/** A share from a given scalar (the vectors' fixed ones) or 64 random bytes. */
export function makeShare(
  inputs: CpaceInputs,
  scalarOrRandom: { scalar: Uint8Array } | { random: Uint8Array },
): CpaceShare {
  const scalar = 'scalar' in scalarOrRandom ? scalarOrRandom.scalar : scalarFromRandom(scalarOrRandom.random);
  const element = scalarMultVfy(scalar, calculateGenerator(inputs));
  if (element === undefined) throw new RangeError('CPace: the scalar gave no usable element');
  return { scalar, element };
}

/** K = scalar_mult_vfy(own scalar, peer's element); undefined when the peer's element is invalid. */
export function sharedPoint(own: CpaceShare, peerElement: Uint8Array): Uint8Array | undefined {
  return scalarMultVfy(own.scalar, peerElement);
}

/** transcript_ir(Ya, ADa, Yb, ADb): initiator's element and data first. */
export function transcriptIr(ya: Uint8Array, ada: Uint8Array, yb: Uint8Array, adb: Uint8Array): Uint8Array {
  return concat([lvCat(ya, ada), lvCat(yb, adb)]);
}

/** ISK = H(lv_cat(DSI_ISK, sid, K) || transcript_ir(Ya, ADa, Yb, ADb)), 64 bytes. */
export function intermediateKey(
  sid: Uint8Array,
  k: Uint8Array,
  ya: Uint8Array,
  ada: Uint8Array,
  yb: Uint8Array,
  adb: Uint8Array,
): Uint8Array {
  return sha512(concat([lvCat(DSI_ISK, sid, k), transcriptIr(ya, ada, yb, adb)]));
}

export function sha512(data: Uint8Array): Uint8Array {
  return new Uint8Array(createHash('sha512').update(data).digest());
}

export function utf8(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

export function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
