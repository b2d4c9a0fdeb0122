// Pairing by invite code, for two people who can read a code to each other but would rather not
// copy node ids both ways (croc's code phrase, without a relay). `pair invite` on the listener's
// machine makes a single-use secret that expires; `pair join CODE --addr HOST:PORT` on the other
// connects, and each side proves it knows the secret with an HMAC over both public keys, the
// keys the transport's TLS proved. The listener checks the joiner's proof before it pins the
// joiner, and the joiner checks the listener's before it pins the listener, so a third party
// without the code can neither get pinned nor pose as the listener.
//
// Why an HMAC and no PAKE: the secret is 120 random bits, not a short word list, so a party that
// sees a proof cannot search for the secret offline. The joiner proves first; a server posing as
// the listener learns only that proof. An invite is deleted when used or expired.
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { hostname } from 'node:os';
import { readFile, rename, rm } from 'node:fs/promises';
import { listDirOrEmpty } from '../support/list-dir.js';
import { makeDirs } from '../support/make-dirs.js';
import { assertPrivateHome } from './home.js';
import { dirname, join } from 'node:path';
import { ClawpeerError } from '../errors.js';
import { PAIR_PROOF_BYTES } from '../protocol/messages.js';
import { writeFileAtomic } from '../support/atomic-file.js';
import { validatePeerName } from './peer-store.js';

/** 120 bits: 24 base32 characters. */
export const INVITE_SECRET_BYTES = 15;
export const DEFAULT_INVITE_TTL_MS = 10 * 60_000;
/** Invites open at once: a mistake beyond this (each one is a way in until it expires). */
export const MAX_OPEN_INVITES = 16;
const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567';
const CODE_GROUP = 4;

/** `abcd-efgh-...`: the secret in lowercase base32, in groups of four. */
export function formatInviteCode(secret: Uint8Array): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of secret) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32.charAt((value >>> (bits - 5)) & 31);
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32.charAt((value << (5 - bits)) & 31);
  return out.match(new RegExp(`.{1,${CODE_GROUP}}`, 'g'))?.join('-') ?? '';
}

/** The secret of a code as `formatInviteCode` writes it (any case; dashes and spaces ignored). USAGE when malformed. */
export function parseInviteCode(code: string): Uint8Array {
  const chars = code.toLowerCase().replace(/[-\s]/g, '');
  const wanted = Math.ceil((INVITE_SECRET_BYTES * 8) / 5);
  if (chars.length !== wanted || chars.split('').some((c) => !BASE32.includes(c))) {
    throw new ClawpeerError(
      'USAGE',
      `invite code ${JSON.stringify(code)} is malformed: it has ${wanted} letters and digits 2-7 (as \`clawpeer pair invite\` printed it)`,
    );
  }
  const out = new Uint8Array(INVITE_SECRET_BYTES);
  let bits = 0;
  let value = 0;
  let i = 0;
  for (const c of chars) {
    value = ((value << 5) | BASE32.indexOf(c)) & 0xfff;
    bits += 5;
    if (bits >= 8 && i < out.length) {
      out[i++] = (value >>> (bits - 8)) & 0xff;
      bits -= 8;
    }
  }
  return out;
}

/** HMAC-SHA256(secret, label || inviter key || joiner key): what `role` sends to prove it knows the secret. */
export function pairProof(
  secret: Uint8Array,
  role: 'joiner' | 'inviter',
  inviterKey: Uint8Array,
  joinerKey: Uint8Array,
): Uint8Array {
  const mac = createHmac('sha256', secret);
  mac.update(`clawpeer pair v1 ${role}`);
  mac.update(inviterKey);
  mac.update(joinerKey);
  return new Uint8Array(mac.digest());
}

export function proofMatches(expected: Uint8Array, got: Uint8Array): boolean {
  return got.length === PAIR_PROOF_BYTES && expected.length === PAIR_PROOF_BYTES && timingSafeEqual(expected, got);
}

/** A redeemed invite: its secret (for the inviter's own proof) and the name it set for the joiner, if any. */
export interface RedeemedInvite {
  readonly secret: Uint8Array;
  readonly name?: string;
}

/** The name this machine suggests the other side pin it under: its host name, as a valid peer name ('' if none fits). */
export function suggestedName(host = hostname()): string {
  const cleaned =
    host
      .split('.')[0]
      ?.replace(/[^A-Za-z0-9._-]/g, '-')
      .replace(/^[^A-Za-z0-9]+/, '')
      .slice(0, 64) ?? '';
  try {
    return validatePeerName(cleaned);
  } catch {
    return '';
  }
}

/**
 * The name to pin a peer under: the first of `preferred` that is a valid name and not taken,
 * else `peer-<last 8 characters of its id>` (numbered if that is taken too). A peer's own
 * suggestion is only a suggestion: it never replaces a name in use. A suggestion that is
 * `ownHost` (a node on this same machine) gets the last 6 characters of the id appended.
 */
export function pickPeerName(
  preferred: readonly (string | undefined)[],
  peerId: string,
  taken: ReadonlySet<string>,
  ownHost = suggestedName(),
): string {
  for (const given of preferred) {
    // A peer on this very machine suggests this machine's host name: its id's tail tells several apart.
    const name = given !== undefined && given !== '' && given === ownHost ? `${given}-${peerId.slice(-6)}` : given;
    if (name === undefined || name === '' || taken.has(name)) continue;
    try {
      return validatePeerName(name);
    } catch {
      // not a usable name: try the next
    }
  }
  const base = `peer-${peerId.slice(-8)}`;
  for (let n = 1; ; n++) {
    const name = n === 1 ? base : `${base}-${n}`;
    if (!taken.has(name)) return name;
  }
}

interface StoredInvite {
  readonly secret: string; // base64
  /** The name the joiner is pinned under (else its suggestion, else peer-<id prefix>). */
  readonly name?: string;
  readonly expiresAt: number; // ms since the epoch
}

/**
 * The open invites of a home: one file each in a directory (mode 0700, files 0600), named by a
 * hash of the secret. Redeeming renames that file to its used name, so of two redemptions at
 * once only one wins, and creating one never rewrites (or revives) another: the CLI creates while
 * the listener redeems, with no lock between them. Used invites stay until they expire.
 */
export class InviteStore {
  constructor(readonly dir: string) {}

  /** Opens an invite valid for `ttlMs`; returns its code and expiry. */
  async create(options: {
    name?: string;
    ttlMs: number;
    nowMs?: number;
  }): Promise<{ code: string; expiresAt: number }> {
    const now = options.nowMs ?? Date.now();
    const open = await this.#open(now);
    if (open.length >= MAX_OPEN_INVITES)
      throw new ClawpeerError('USAGE', `${open.length} invites are open already: let them expire or be used first`);
    const secret = randomBytes(INVITE_SECRET_BYTES);
    const expiresAt = now + options.ttlMs;
    const invite: StoredInvite = {
      secret: secret.toString('base64'),
      expiresAt,
      ...(options.name === undefined ? {} : { name: options.name }),
    };
    await makeDirs(this.dir, 0o700);
    await assertPrivateHome(dirname(this.dir));
    await assertPrivateHome(this.dir, 'invites directory');
    await writeFileAtomic(join(this.dir, fileNameOf(secret)), JSON.stringify(invite) + '\n', 0o600);
    return { code: formatInviteCode(secret), expiresAt };
  }

  /** True when an unexpired invite exists (cheap: a listener asks this for every unpaired connection). */
  async hasOpen(nowMs = Date.now()): Promise<boolean> {
    return (await this.#open(nowMs)).length > 0;
  }

  /**
   * The unexpired open invite whose secret `proves` accepts, marked used (single use: renaming
   * its file, so of two redemptions at once only one wins); undefined when none does.
   */
  async redeem(proves: (secret: Uint8Array) => boolean, nowMs = Date.now()): Promise<RedeemedInvite | undefined> {
    for (const { file, invite } of await this.#open(nowMs)) {
      const secret = secretOf(invite);
      if (!proves(secret)) continue;
      try {
        await rename(file, file.slice(0, -INVITE_SUFFIX.length) + USED_SUFFIX);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined; // redeemed by someone else just now
        throw new ClawpeerError('IO', `cannot mark the invite ${file} used: ${(err as Error).message}`, { cause: err });
      }
      return invite.name === undefined ? { secret } : { secret, name: invite.name };
    }
    return undefined;
  }

  /**
   * The unexpired used invite whose secret `proves` accepts (it stays: a joiner may retry until
   * the invite expires); undefined when none does. For a key the listener pinned by that invite,
   * whose PairAccept was lost.
   */
  async confirm(proves: (secret: Uint8Array) => boolean, nowMs = Date.now()): Promise<RedeemedInvite | undefined> {
    for (const { invite } of await this.#open(nowMs, USED_SUFFIX)) {
      const secret = secretOf(invite);
      if (proves(secret)) return invite.name === undefined ? { secret } : { secret, name: invite.name };
    }
    return undefined;
  }

  /** The unexpired invites (open ones, or used ones); expired and unreadable files are removed on the way. */
  async #open(nowMs: number, suffix = INVITE_SUFFIX): Promise<{ file: string; invite: StoredInvite }[]> {
    const names = await listDirOrEmpty(this.dir);
    const open: { file: string; invite: StoredInvite }[] = [];
    for (const name of names.filter((n) => n.endsWith(suffix))) {
      const file = join(this.dir, name);
      const invite = await readInvite(file);
      if (invite !== undefined && invite.expiresAt > nowMs) open.push({ file, invite });
      else await rm(file, { force: true });
    }
    return open;
  }
}

const INVITE_SUFFIX = '.invite.json';
/** A used invite, kept until it expires so its joiner can retry (confirm). */
const USED_SUFFIX = '.used.json';

function secretOf(invite: StoredInvite): Uint8Array {
  return new Uint8Array(Buffer.from(invite.secret, 'base64'));
}

/** The file of an invite: named by a hash of its secret, never the secret itself. */
function fileNameOf(secret: Uint8Array): string {
  return createHash('sha256').update(secret).digest('hex').slice(0, 32) + INVITE_SUFFIX;
}

/** An invite file's content, or undefined when it is gone or malformed (it is removed then). */
async function readInvite(file: string): Promise<StoredInvite | undefined> {
  try {
    const i = JSON.parse(await readFile(file, 'utf8')) as Partial<StoredInvite> | null;
    if (
      typeof i?.secret !== 'string' ||
      typeof i.expiresAt !== 'number' ||
      (i.name !== undefined && typeof i.name !== 'string')
    )
      return undefined;
    return { secret: i.secret, expiresAt: i.expiresAt, ...(i.name === undefined ? {} : { name: i.name }) };
  } catch {
    return undefined;
  }
}
