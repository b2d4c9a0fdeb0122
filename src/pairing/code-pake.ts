// The PAKE exchange of pairing by short code, both sides, as pure state machines (the listener's
// code-pairing.ts and the joiner's pair-code-join.ts move the messages):
//
//   joiner  -> inviter  CodePairStart  {nameplate, Ya}
//   inviter -> joiner   CodePairReply  {Yb, inviter's confirmation}
//   joiner  -> inviter  CodePairFinish {joiner's confirmation, sealed joiner info}
//   inviter -> joiner   CodePairDone   {sealed inviter info}
//
// CPace runs with the code as the password and, in its channel identifier, the nameplate and both
// public keys as the transport's TLS proved them: a party in the middle that terminates TLS with
// keys of its own makes the two sides derive different generators, so their keys differ and the
// confirmations fail. sid is empty (the draft allows it when the CI already binds the channel).
// Each side checks the other's confirmation before it reveals or accepts anything; the info
// (node id, addresses, suggested name) travels sealed under the key, and each side checks the id
// inside against the key TLS proved. Nobody pins anything before both confirmations passed.
import { createCipheriv, createDecipheriv, createHmac, timingSafeEqual } from 'node:crypto';
import { nodeIdFromPublicKey } from '../crypto/node-id.js';
import { ClawpeerError } from '../errors.js';
import {
  concat,
  intermediateKey,
  lvCat,
  makeShare,
  sha512,
  sharedPoint,
  transcriptIr,
  utf8,
  type CpaceInputs,
  type CpaceShare,
} from './cpace.js';
import { ELEMENT_BYTES } from './ristretto255.js';
import type { ParsedCode } from './code-words.js';

export const CONFIRM_BYTES = 32;
/** Sealed info above this is refused (a node id, a few addresses, a name). */
export const MAX_SEALED_BYTES = 4096;
const MAX_ADDRS = 16;
const PROTOCOL_LABEL = 'clawpeer code-pair v1';
const AD_JOINER = utf8('joiner');
const AD_INVITER = utf8('inviter');

/** What each side tells the other once the key is confirmed. */
export interface PairInfo {
  /** Its node id: must be the key the transport proved. */
  readonly id: string;
  /** HOST:PORT where it listens, as it knows them (may be empty). */
  readonly addrs: readonly string[];
  /** The name it suggests it be pinned under ('' for none). */
  readonly name: string;
}

export interface PakeParties {
  readonly code: ParsedCode;
  readonly inviterKey: Uint8Array;
  readonly joinerKey: Uint8Array;
  /** n uniform random bytes. */
  readonly random: (n: number) => Uint8Array;
}

/** The failure a wrong code (or a party in the middle) gives: the same on both sides. */
export function wrongCodeError(side: 'joiner' | 'inviter'): ClawpeerError {
  const other = side === 'joiner' ? 'the inviter' : 'the joiner';
  return new ClawpeerError(
    'AUTH_FAILED',
    `the pairing code did not match ${other}'s (mistyped, or someone may have tried to guess it, or something in between tried to pose as ${other}): nothing was pinned and the code is burnt; make a new one with \`clawpeer pair invite\``,
  );
}

function cpaceInputs(p: PakeParties): CpaceInputs {
  return {
    prs: utf8(p.code.text),
    ci: lvCat(utf8(PROTOCOL_LABEL), utf8(p.code.nameplate), p.inviterKey, p.joinerKey),
    sid: new Uint8Array(0),
  };
}

interface SessionKeys {
  readonly confirmInviter: Uint8Array;
  readonly confirmJoiner: Uint8Array;
  readonly sealInviter: Uint8Array;
  readonly sealJoiner: Uint8Array;
  readonly verify: Uint8Array;
  readonly transcript: Uint8Array;
}

function sessionKeys(isk: Uint8Array, transcript: Uint8Array): SessionKeys {
  const derive = (label: string): Uint8Array =>
    sha512(concat([utf8(`${PROTOCOL_LABEL} ${label}`), isk])).subarray(0, 32);
  return {
    confirmInviter: derive('confirm inviter'),
    confirmJoiner: derive('confirm joiner'),
    sealInviter: derive('seal inviter'),
    sealJoiner: derive('seal joiner'),
    verify: derive('verify'),
    transcript,
  };
}

function tag(key: Uint8Array, transcript: Uint8Array): Uint8Array {
  return new Uint8Array(createHmac('sha256', key).update(transcript).digest());
}

function tagMatches(expected: Uint8Array, got: Uint8Array): boolean {
  return got.length === CONFIRM_BYTES && timingSafeEqual(expected, got);
}

/** ChaCha20-Poly1305 under a key used for this one message (so a zero nonce). */
function seal(key: Uint8Array, info: PairInfo): Uint8Array {
  const cipher = createCipheriv('chacha20-poly1305', key, new Uint8Array(12), { authTagLength: 16 });
  const body = cipher.update(utf8(JSON.stringify({ id: info.id, addrs: info.addrs, name: info.name })));
  cipher.final();
  return concat([new Uint8Array(body), new Uint8Array(cipher.getAuthTag())]);
}

function unseal(key: Uint8Array, sealed: Uint8Array, expectedKey: Uint8Array, from: string): PairInfo {
  if (sealed.length < 16 || sealed.length > MAX_SEALED_BYTES)
    throw new ClawpeerError('PROTOCOL', `${from}'s sealed pairing info has ${sealed.length} bytes`);
  let text: string;
  try {
    const decipher = createDecipheriv('chacha20-poly1305', key, new Uint8Array(12), { authTagLength: 16 });
    decipher.setAuthTag(sealed.subarray(sealed.length - 16));
    const body = decipher.update(sealed.subarray(0, sealed.length - 16));
    decipher.final();
    text = new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    throw new ClawpeerError('AUTH_FAILED', `${from}'s sealed pairing info failed authentication: nothing pinned`);
  }
  let info: Partial<PairInfo> | null;
  try {
    info = JSON.parse(text) as Partial<PairInfo> | null;
  } catch {
    throw new ClawpeerError('PROTOCOL', `${from}'s pairing info is not JSON`);
  }
  const addrs = info?.addrs;
  if (
    typeof info?.id !== 'string' ||
    typeof info.name !== 'string' ||
    !Array.isArray(addrs) ||
    addrs.length > MAX_ADDRS ||
    addrs.some((a) => typeof a !== 'string' || a.length > 300) ||
    info.name.length > 255
  ) {
    throw new ClawpeerError('PROTOCOL', `${from}'s pairing info is malformed`);
  }
  const proven = nodeIdFromPublicKey(expectedKey);
  if (info.id !== proven) {
    throw new ClawpeerError(
      'AUTH_FAILED',
      `${from} sent node id ${info.id} under the code's key but its connection proved ${proven}: nothing pinned`,
    );
  }
  return { id: info.id, addrs: addrs as string[], name: info.name };
}

/** A short string both people can compare (wormhole's --verify): 4 groups of 4 hex digits from the key. */
function verifyString(keys: SessionKeys): string {
  const hex = Buffer.from(keys.verify.subarray(0, 8)).toString('hex');
  return hex.match(/.{4}/g)?.join('-') ?? hex;
}

function checkElement(element: Uint8Array, from: string): void {
  if (element.length !== ELEMENT_BYTES)
    throw new ClawpeerError('PROTOCOL', `${from}'s PAKE share has ${element.length} bytes, not ${ELEMENT_BYTES}`);
}

/** The joining side (CPace initiator). */
export class JoinerPake {
  readonly #parties: PakeParties;
  readonly #share: CpaceShare;
  #keys: SessionKeys | undefined;
  #sentFinish = false;

  constructor(parties: PakeParties) {
    this.#parties = parties;
    this.#share = makeShare(cpaceInputs(parties), { random: parties.random(64) });
  }

  /** CodePairStart. */
  start(): { nameplate: string; share: Uint8Array } {
    return { nameplate: this.#parties.code.nameplate, share: this.#share.element };
  }

  /** Checks CodePairReply; AUTH_FAILED (wrongCodeError) when the inviter did not use our code. Returns the verification string. */
  reply(m: { share: Uint8Array; confirm: Uint8Array }): { verify: string } {
    checkElement(m.share, 'the inviter');
    const k = sharedPoint(this.#share, m.share);
    if (k === undefined) throw new ClawpeerError('PROTOCOL', 'the inviter sent an invalid PAKE share');
    const transcript = transcriptIr(this.#share.element, AD_JOINER, m.share, AD_INVITER);
    const keys = sessionKeys(
      intermediateKey(new Uint8Array(0), k, this.#share.element, AD_JOINER, m.share, AD_INVITER),
      transcript,
    );
    if (!tagMatches(tag(keys.confirmInviter, transcript), m.confirm)) throw wrongCodeError('joiner');
    this.#keys = keys;
    return { verify: verifyString(keys) };
  }

  /** CodePairFinish: our confirmation and our info sealed. Only after reply() passed. */
  finish(own: PairInfo): { confirm: Uint8Array; sealed: Uint8Array } {
    const keys = this.#confirmed();
    this.#sentFinish = true;
    return { confirm: tag(keys.confirmJoiner, keys.transcript), sealed: seal(keys.sealJoiner, own) };
  }

  /** The inviter's info from CodePairDone, its id checked against the key TLS proved. */
  done(m: { sealed: Uint8Array }): PairInfo {
    if (!this.#sentFinish) throw new ClawpeerError('PROTOCOL', 'CodePairDone before CodePairFinish');
    return unseal(this.#confirmed().sealInviter, m.sealed, this.#parties.inviterKey, 'the inviter');
  }

  #confirmed(): SessionKeys {
    if (this.#keys === undefined) throw new ClawpeerError('PROTOCOL', 'the pairing key is not confirmed yet');
    return this.#keys;
  }
}

/** The inviting side (CPace responder). */
export class InviterPake {
  readonly #parties: PakeParties;
  readonly #share: CpaceShare;
  #keys: SessionKeys | undefined;
  #joiner: PairInfo | undefined;

  constructor(parties: PakeParties) {
    this.#parties = parties;
    this.#share = makeShare(cpaceInputs(parties), { random: parties.random(64) });
  }

  /** CodePairReply to the joiner's CodePairStart (its nameplate was matched by the caller). */
  start(m: { share: Uint8Array }): { share: Uint8Array; confirm: Uint8Array } {
    checkElement(m.share, 'the joiner');
    const k = sharedPoint(this.#share, m.share);
    if (k === undefined) throw new ClawpeerError('PROTOCOL', 'the joiner sent an invalid PAKE share');
    const transcript = transcriptIr(m.share, AD_JOINER, this.#share.element, AD_INVITER);
    this.#keys = sessionKeys(
      intermediateKey(new Uint8Array(0), k, m.share, AD_JOINER, this.#share.element, AD_INVITER),
      transcript,
    );
    return { share: this.#share.element, confirm: tag(this.#keys.confirmInviter, transcript) };
  }

  /** Checks CodePairFinish: AUTH_FAILED (wrongCodeError) on a wrong code; the joiner's info when it is right. */
  finish(m: { confirm: Uint8Array; sealed: Uint8Array }): PairInfo {
    const keys = this.#keys;
    if (keys === undefined) throw new ClawpeerError('PROTOCOL', 'CodePairFinish before CodePairStart');
    if (!tagMatches(tag(keys.confirmJoiner, keys.transcript), m.confirm)) throw wrongCodeError('inviter');
    this.#joiner = unseal(keys.sealJoiner, m.sealed, this.#parties.joinerKey, 'the joiner');
    return this.#joiner;
  }

  /** CodePairDone: our info sealed. Only after finish() passed. */
  done(own: PairInfo): { sealed: Uint8Array } {
    if (this.#keys === undefined || this.#joiner === undefined)
      throw new ClawpeerError('PROTOCOL', 'the joiner is not confirmed yet');
    return { sealed: seal(this.#keys.sealInviter, own) };
  }

  /** The verification string (the same as the joiner's when both used one code over one channel). */
  get verify(): string {
    if (this.#keys === undefined) throw new ClawpeerError('PROTOCOL', 'no pairing key yet');
    return verifyString(this.#keys);
  }
}
