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
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { hostname } from 'node:os';
import { mkdir, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { ClawpeerError } from '../errors.js';
import { PAIR_PROOF_BYTES } from '../protocol/messages.js';
import { writeFileAtomic } from './atomic-file.js';
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
      out += BASE32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31];
  return out.match(new RegExp(`.{1,${CODE_GROUP}}`, 'g'))?.join('-') ?? '';
}

/** The secret of a code as `formatInviteCode` writes it (any case; dashes and spaces ignored). USAGE when malformed. */
export function parseInviteCode(code: string): Uint8Array {
  const chars = code.toLowerCase().replace(/[-\s]/g, '');
  const wanted = Math.ceil((INVITE_SECRET_BYTES * 8) / 5);
  if (chars.length !== wanted || [...chars].some((c) => !BASE32.includes(c))) {
    throw new ClawpeerError('USAGE', `invite code ${JSON.stringify(code)} is malformed: it has ${wanted} letters and digits 2-7 (as \`clawpeer pair invite\` printed it)`);
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
export function pairProof(secret: Uint8Array, role: 'joiner' | 'inviter', inviterKey: Uint8Array, joinerKey: Uint8Array): Uint8Array {
  const mac = createHmac('sha256', secret);
  mac.update(`clawpeer pair v1 ${role}`);
  mac.update(inviterKey);
  mac.update(joinerKey);
  return new Uint8Array(mac.digest());
}

export function proofMatches(expected: Uint8Array, got: Uint8Array): boolean {
  return got.length === PAIR_PROOF_BYTES && expected.length === PAIR_PROOF_BYTES && timingSafeEqual(expected, got);
}

interface StoredInvite {
  readonly secret: string; // base64
  /** The name the joiner is pinned under (else its suggestion, else peer-<id prefix>). */
  readonly name?: string;
  readonly expiresAt: number; // ms since the epoch
}

interface InvitesFile {
  readonly version: 1;
  readonly invites: StoredInvite[];
}

/** A redeemed invite: its secret (for the inviter's own proof) and the name it set for the joiner, if any. */
export interface RedeemedInvite {
  readonly secret: Uint8Array;
  readonly name?: string;
}

/** The name this machine suggests the other side pin it under: its host name, as a valid peer name ('' if none fits). */
export function suggestedName(host = hostname()): string {
  const cleaned = host.split('.')[0]?.replace(/[^A-Za-z0-9._-]/g, '-').replace(/^[^A-Za-z0-9]+/, '').slice(0, 64) ?? '';
  try {
    return validatePeerName(cleaned);
  } catch {
    return '';
  }
}

/**
 * The name to pin a peer under: the first of `preferred` that is a valid name and not taken,
 * else `peer-<last 8 characters of its id>` (numbered if that is taken too). A peer's own
 * suggestion is only a suggestion: it never replaces a name in use.
 */
export function pickPeerName(preferred: readonly (string | undefined)[], peerId: string, taken: ReadonlySet<string>): string {
  for (const name of preferred) {
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

/** The open invites of a home (`invites.json`, mode 0600). */
export class InviteStore {
  constructor(private readonly file: string) {}

  /** Opens an invite valid for `ttlMs`; returns its code and expiry. */
  async create(options: { name?: string; ttlMs: number; nowMs?: number }): Promise<{ code: string; expiresAt: number }> {
    const now = options.nowMs ?? Date.now();
    const open = (await this.#load()).filter((i) => i.expiresAt > now);
    if (open.length >= MAX_OPEN_INVITES) throw new ClawpeerError('USAGE', `${open.length} invites are open already: let them expire or be used first`);
    const secret = randomBytes(INVITE_SECRET_BYTES);
    const expiresAt = now + options.ttlMs;
    await this.#save([...open, { secret: secret.toString('base64'), expiresAt, ...(options.name === undefined ? {} : { name: options.name }) }]);
    return { code: formatInviteCode(secret), expiresAt };
  }

  /** True when an unexpired invite exists (cheap: a listener asks this for every unpaired connection). */
  async hasOpen(nowMs = Date.now()): Promise<boolean> {
    return (await this.#load()).some((i) => i.expiresAt > nowMs);
  }

  /**
   * The unexpired invite whose secret `proves` accepts, removed (single use), with expired ones;
   * undefined when none does.
   */
  async redeem(proves: (secret: Uint8Array) => boolean, nowMs = Date.now()): Promise<RedeemedInvite | undefined> {
    const all = await this.#load();
    const open = all.filter((i) => i.expiresAt > nowMs);
    const match = open.find((i) => proves(new Uint8Array(Buffer.from(i.secret, 'base64'))));
    const keep = open.filter((i) => i !== match);
    if (keep.length !== all.length) await this.#save(keep);
    if (match === undefined) return undefined;
    const secret = new Uint8Array(Buffer.from(match.secret, 'base64'));
    return match.name === undefined ? { secret } : { secret, name: match.name };
  }

  async #load(): Promise<StoredInvite[]> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw new ClawpeerError('IO', `cannot read ${this.file}: ${(err as Error).message}`, { cause: err });
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      throw new ClawpeerError('CONFIG_INVALID', `${this.file} is not valid JSON: ${(err as Error).message}`, { cause: err });
    }
    const invites = (parsed as Partial<InvitesFile> | null)?.invites;
    if (!Array.isArray(invites)) throw new ClawpeerError('CONFIG_INVALID', `${this.file}: no invites list`);
    return invites.filter((i): i is StoredInvite => typeof i?.secret === 'string' && typeof i.expiresAt === 'number' && (i.name === undefined || typeof i.name === 'string'));
  }

  async #save(invites: StoredInvite[]): Promise<void> {
    await mkdir(dirname(this.file), { recursive: true, mode: 0o700 });
    const body: InvitesFile = { version: 1, invites };
    await writeFileAtomic(this.file, JSON.stringify(body, null, 2) + '\n', 0o600);
  }
}
