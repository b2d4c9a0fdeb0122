// The open short-code invites of a home (`pair invite`; pairing/code-words.ts): one file per
// nameplate in the invites directory, beside the long invites of pair-invite.ts (mode 0700, files
// 0600: they hold the code). The CLI creates one; the listener claims it when a joiner names its
// nameplate, and settles it (paired or burnt); the CLI that waits reads the outcome.
//
// Single use without a lock: claiming renames `code-N.open.json` to `code-N.claimed.json`, so of
// two joiners at once only one gets to run the PAKE, and whoever claims it uses it up: a wrong
// code burns it (one online guess per code). Settling writes `code-N.result.json`. Expired files
// of every state are removed as they are seen.
import { readFile, rename, rm } from 'node:fs/promises';
import { listDirOrEmpty } from '../support/list-dir.js';
import { dirname, join } from 'node:path';
import { ClawpeerError } from '../errors.js';
import { createExclusive, writeFileAtomic } from '../support/atomic-file.js';
import { makeDirs } from '../support/make-dirs.js';
import { parseCode, type ParsedCode } from '../pairing/code-words.js';
import { assertPrivateHome } from './home.js';

export const DEFAULT_CODE_INVITE_TTL_MS = 10 * 60_000;
/** Short-code invites open at once (each is a guess someone could try). */
export const MAX_OPEN_CODE_INVITES = 8;
/** A settled invite's outcome is kept this long past its expiry for a late `pair invite --wait`. */
const RESULT_GRACE_MS = 60_000;

type FileState = 'open' | 'claimed' | 'result';
const PREFIX = 'code-';

interface StoredCodeInvite {
  readonly code: string;
  /** The name the joiner is pinned under (else its suggestion, else peer-<id>). */
  readonly name?: string;
  readonly expiresAt: number;
}

/** How a claimed invite ended. */
export type CodeInviteOutcome =
  | { readonly outcome: 'paired'; readonly id: string; readonly name: string; readonly verify: string }
  | { readonly outcome: 'burnt'; readonly reason: string };

/** What `status` reports. */
export type CodeInviteStatus =
  { readonly state: 'open' | 'claimed' | 'gone' } | ({ readonly state: 'settled' } & CodeInviteOutcome);

export interface ClaimedCodeInvite {
  readonly code: ParsedCode;
  readonly name?: string;
  readonly expiresAt: number;
}

export class CodeInviteStore {
  constructor(readonly dir: string) {}

  /**
   * Opens an invite for `code` (its nameplate must be free here: FILE_EXISTS otherwise) valid
   * for `ttlMs`. USAGE beyond MAX_OPEN_CODE_INVITES.
   */
  async create(options: {
    code: ParsedCode;
    name?: string;
    ttlMs: number;
    nowMs?: number;
  }): Promise<{ expiresAt: number }> {
    const now = options.nowMs ?? Date.now();
    const open = await this.openNameplates(now);
    if (open.length >= MAX_OPEN_CODE_INVITES)
      throw new ClawpeerError(
        'USAGE',
        `${open.length} code invites are open already: let them expire or be used first`,
      );
    await makeDirs(this.dir, 0o700);
    await assertPrivateHome(dirname(this.dir));
    await assertPrivateHome(this.dir, 'invites directory');
    const expiresAt = now + options.ttlMs;
    const invite: StoredCodeInvite = {
      code: options.code.text,
      expiresAt,
      ...(options.name === undefined ? {} : { name: options.name }),
    };
    const nameplate = options.code.nameplate;
    // A nameplate is taken while any file of it is there (open, claimed, or an outcome).
    if ((await this.#stateOf(nameplate, now)) !== undefined)
      throw new ClawpeerError('FILE_EXISTS', `nameplate ${nameplate} is in use here`);
    let handle;
    try {
      handle = await createExclusive(this.#file(nameplate, 'open'), 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST')
        throw new ClawpeerError('FILE_EXISTS', `nameplate ${nameplate} is in use here`, { cause: err });
      throw new ClawpeerError('IO', `cannot create the invite for nameplate ${nameplate}: ${(err as Error).message}`, {
        cause: err,
      });
    }
    try {
      await handle.writeFile(JSON.stringify(invite) + '\n');
    } finally {
      await handle.close();
    }
    return { expiresAt };
  }

  /** The nameplates of the unexpired open (unclaimed) invites. */
  async openNameplates(nowMs = Date.now()): Promise<string[]> {
    return (await this.#list(nowMs)).filter((f) => f.state === 'open').map((f) => f.nameplate);
  }

  /** The unexpired open invites' nameplates and expiry (what a listener announces in nameplate directories). */
  async openInvites(nowMs = Date.now()): Promise<{ nameplate: string; expiresAt: number }[]> {
    return (await this.#list(nowMs))
      .filter((f) => f.state === 'open')
      .map((f) => ({ nameplate: f.nameplate, expiresAt: f.expiresAt }));
  }

  /** Nameplates in use here in any state (a new invite must pick another). */
  async usedNameplates(nowMs = Date.now()): Promise<Set<string>> {
    return new Set((await this.#list(nowMs)).map((f) => f.nameplate));
  }

  /** True when an unexpired open invite exists (the listener asks this for unpaired connections). */
  async hasOpen(nowMs = Date.now()): Promise<boolean> {
    return (await this.openNameplates(nowMs)).length > 0;
  }

  /** Takes the open invite of `nameplate` for one PAKE run (single use); undefined when there is none. */
  async claim(nameplate: string, nowMs = Date.now()): Promise<ClaimedCodeInvite | undefined> {
    const file = this.#file(nameplate, 'open');
    const invite = await readInvite(file);
    if (invite === undefined) return undefined;
    if (invite.expiresAt <= nowMs) {
      await rm(file, { force: true });
      return undefined;
    }
    try {
      await rename(file, this.#file(nameplate, 'claimed'));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined; // claimed by someone else just now
      throw new ClawpeerError('IO', `cannot claim the invite ${file}: ${(err as Error).message}`, { cause: err });
    }
    let code: ParsedCode;
    try {
      code = parseCode(invite.code);
    } catch {
      await this.settle(nameplate, { outcome: 'burnt', reason: 'its file was malformed' });
      return undefined;
    }
    return { code, expiresAt: invite.expiresAt, ...(invite.name === undefined ? {} : { name: invite.name }) };
  }

  /** Records how a claimed invite ended (the waiting `pair invite` reads it). */
  async settle(nameplate: string, outcome: CodeInviteOutcome, nowMs = Date.now()): Promise<void> {
    const claimed = this.#file(nameplate, 'claimed');
    const invite = await readInvite(claimed);
    const expiresAt = Math.max(invite?.expiresAt ?? nowMs, nowMs) + RESULT_GRACE_MS;
    await writeFileAtomic(this.#file(nameplate, 'result'), JSON.stringify({ ...outcome, expiresAt }) + '\n', 0o600);
    await rm(claimed, { force: true });
  }

  /** Where the invite of `nameplate` stands. */
  async status(nameplate: string, nowMs = Date.now()): Promise<CodeInviteStatus> {
    // A claim or a settle between a look's directory listing and its read of the file listed
    // (renamed to `claimed`, or removed once `result` is written) leaves the invite in neither,
    // and the waiting `pair invite` said "expired unused" of a code just burnt or used
    // (pair-code.test.ts failed so in a CI run). An invite moves forward at most three times
    // (claimed, settled, expired), and only a move during a look spoils it: four looks find a
    // live invite.
    let state: FileState | undefined;
    for (let look = 0; look < 4 && state === undefined; look++) state = await this.#stateOf(nameplate, nowMs);
    if (state === undefined) return { state: 'gone' };
    if (state !== 'result') return { state };
    const raw = await readJson(this.#file(nameplate, 'result'));
    if (
      raw?.['outcome'] === 'paired' &&
      typeof raw['id'] === 'string' &&
      typeof raw['name'] === 'string' &&
      typeof raw['verify'] === 'string'
    ) {
      return { state: 'settled', outcome: 'paired', id: raw['id'], name: raw['name'], verify: raw['verify'] };
    }
    return {
      state: 'settled',
      outcome: 'burnt',
      reason: typeof raw?.['reason'] === 'string' ? raw['reason'] : 'unknown',
    };
  }

  /** Withdraws an open invite (a `pair invite` stopped with Ctrl-C); false when it was claimed or gone. */
  async cancel(nameplate: string): Promise<boolean> {
    const file = this.#file(nameplate, 'open');
    if ((await readInvite(file)) === undefined) return false;
    await rm(file, { force: true });
    return true;
  }

  #file(nameplate: string, state: FileState): string {
    if (!/^[1-9][0-9]{0,5}$/.test(nameplate))
      throw new ClawpeerError('USAGE', `nameplate ${JSON.stringify(nameplate)} is not a number of 1 to 6 digits`);
    return join(this.dir, `${PREFIX}${nameplate}.${state}.json`);
  }

  async #stateOf(nameplate: string, nowMs: number): Promise<FileState | undefined> {
    return (await this.#list(nowMs)).find((f) => f.nameplate === nameplate)?.state;
  }

  /** The unexpired files; expired and unreadable ones are removed on the way. */
  async #list(nowMs: number): Promise<{ nameplate: string; state: FileState; expiresAt: number }[]> {
    const names = await listDirOrEmpty(this.dir);
    const out: { nameplate: string; state: FileState; expiresAt: number }[] = [];
    for (const name of names) {
      const m = /^code-([1-9][0-9]{0,5})\.(open|claimed|result)\.json$/.exec(name);
      if (m === null) continue;
      const file = join(this.dir, name);
      const raw = await readJson(file);
      const expiresAt = raw?.['expiresAt'];
      // An unreadable file may be one `create` is writing now: left alone (it never counts as open).
      if (typeof expiresAt !== 'number') continue;
      if (expiresAt > nowMs) out.push({ nameplate: m[1] ?? '', state: m[2] as FileState, expiresAt });
      else await rm(file, { force: true });
    }
    return out;
  }
}

async function readJson(file: string): Promise<Record<string, unknown> | undefined> {
  try {
    const v = JSON.parse(await readFile(file, 'utf8')) as unknown;
    return typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

async function readInvite(file: string): Promise<StoredCodeInvite | undefined> {
  const i = await readJson(file);
  if (
    typeof i?.['code'] !== 'string' ||
    typeof i['expiresAt'] !== 'number' ||
    (i['name'] !== undefined && typeof i['name'] !== 'string')
  )
    return undefined;
  return { code: i['code'], expiresAt: i['expiresAt'], ...(typeof i['name'] === 'string' ? { name: i['name'] } : {}) };
}
