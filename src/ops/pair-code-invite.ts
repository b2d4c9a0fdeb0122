// Opening a short-code invite (`pair invite`): pick a nameplate free in this home and in every
// nameplate directory, write the invite (home/code-invites.ts) and keep the directory claims.
// A directory that says another node holds the nameplate (PEER_BUSY) makes it pick another.
import { ClawpeerError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { CodeInviteOutcome, CodeInviteStore } from '../home/code-invites.js';
import { sleep } from '../support/timeouts.js';
import { generateCode, type ParsedCode } from '../pairing/code-words.js';
import { pickNameplate, type NameplateClaim, type NameplateDirectory } from '../pairing/nameplate-directory.js';

/** Nameplates tried before giving up (each taken here or in a directory). */
export const NAMEPLATE_TRIES = 8;

export interface OpenCodeInviteOptions {
  readonly store: CodeInviteStore;
  readonly directories: readonly NameplateDirectory[];
  readonly words: number;
  readonly ttlMs: number;
  /** The name to pin the joiner under. */
  readonly name?: string;
  readonly random: (n: number) => Uint8Array;
  readonly log: Logger;
  readonly signal?: AbortSignal;
}

export interface OpenedCodeInvite {
  readonly code: ParsedCode;
  readonly expiresAt: number;
  /** The directory claims, for the caller to release when it stops waiting. */
  readonly claims: readonly NameplateClaim[];
}

export async function openCodeInvite(o: OpenCodeInviteOptions): Promise<OpenedCodeInvite> {
  const taken = new Set([...(await o.store.usedNameplates())].map(Number));
  let opened: { code: ParsedCode; expiresAt: number; claims: NameplateClaim[] } | undefined;
  for (let attempt = 0; attempt < NAMEPLATE_TRIES && opened === undefined; attempt++) {
    const code = generateCode(pickNameplate(taken, o.random), o.words, o.random);
    const nameplate = Number(code.nameplate);
    let expiresAt: number;
    try {
      ({ expiresAt } = await o.store.create({
        code,
        ttlMs: o.ttlMs,
        ...(o.name === undefined ? {} : { name: o.name }),
      }));
    } catch (err) {
      if (!(err instanceof ClawpeerError && err.code === 'FILE_EXISTS')) throw err;
      taken.add(nameplate);
      continue;
    }
    const claims: NameplateClaim[] = [];
    let busy = false;
    for (const d of o.directories) {
      try {
        claims.push(await d.claim(nameplate, { expiresAt, ...(o.signal === undefined ? {} : { signal: o.signal }) }));
      } catch (err) {
        if (err instanceof ClawpeerError && err.code === 'PEER_BUSY') {
          busy = true;
          break;
        }
        o.log.warn('cannot claim the nameplate in a directory: the joiner will not find this node there', {
          directory: d.name,
          error: (err as Error).message,
        });
      }
    }
    if (busy) {
      await Promise.all(claims.map((c) => c.release().catch(() => undefined)));
      await o.store.cancel(code.nameplate);
      taken.add(nameplate);
      continue;
    }
    opened = { code, expiresAt, claims };
  }
  if (opened === undefined)
    throw new ClawpeerError('PEER_BUSY', `no free nameplate after ${NAMEPLATE_TRIES} tries: retry in a moment`);
  return opened;
}

/** How often `pair invite` looks whether its code was used, ms. */
const OUTCOME_POLL_MS = 200;

/** The pair a used code made. */
export type CodeInvitePaired = Extract<CodeInviteOutcome, { outcome: 'paired' }>;

/**
 * Waits until the listener settles the invite: the pair it made, or an error naming why not
 * (withdrawn by `signal`, expired, burnt); `remake` says how to get a new code.
 */
export async function waitForCodeOutcome(
  store: CodeInviteStore,
  code: ParsedCode,
  signal: AbortSignal,
  remake = 'make a new one with `clawpeer pair invite`',
): Promise<CodeInvitePaired> {
  for (;;) {
    if (signal.aborted) throw new ClawpeerError('INTERRUPTED', `stopped waiting: the code ${code.text} is withdrawn`);
    const status = await store.status(code.nameplate);
    if (status.state === 'gone') throw new ClawpeerError('TIMEOUT', `the code ${code.text} expired unused`);
    if (status.state === 'settled') {
      if (status.outcome === 'burnt') {
        throw new ClawpeerError(
          'AUTH_FAILED',
          `the code ${code.text} is burnt: ${status.reason}. Nothing was pinned; ${remake}`,
        );
      }
      return status;
    }
    await sleep(OUTCOME_POLL_MS);
  }
}
