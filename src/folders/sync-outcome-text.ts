// What `clawpeer status` says of a folder pair whose last sync did not leave it in sync: the
// paths a completed sync left behind, or why the sync failed, in terms a user can act on.
import { ClawpeerError, isClawpeerError } from '../errors.js';
import { CHANGED_WHILE_SENT } from '../exchange/chunk-reader.js';
import type { SyncFolderResult } from '../folder-sync/sync-client.js';
import { RECEIVE_ONLY_REFUSAL, type ServedSync } from '../folder-sync/sync-service.js';
import type { FolderMode } from '../home/folders-config.js';
import { count } from '../format.js';
import { noSpaceText } from '../exchange/space-fit.js';
import type { Logger } from '../logger.js';
import type { SyncOutcome } from '../sync/folder-schedule.js';

/**
 * Why a completed sync is not in sync, naming the first path of each kind (status's `error`);
 * undefined when it names no cause (no entry here unreadable, no path left as is on either
 * side): what is left came in while it ran, and a sync at once moves it (UNSETTLED_TEXT).
 */
export function notInSyncReason(r: SyncFolderResult): string | undefined {
  const first = (paths: readonly string[]): string => `${paths[0] ?? ''}${paths.length > 1 ? ', ...' : ''}`;
  const peerSkipped = r.peerSkipped ?? [];
  const why = [
    r.unreadable.length > 0
      ? `${count(r.unreadable.length, 'entry', 'entries')} here cannot be read (${first(r.unreadable.map((u) => u.path))})`
      : undefined,
    r.noSpace !== undefined ? noSpaceText(r.noSpace, 'here') : undefined,
    r.skipped.length > (r.noSpace?.files ?? 0)
      ? `${count(r.skipped.length, 'path')} left as is here (${first(r.skipped)})`
      : undefined,
    r.peerNoSpace !== undefined ? noSpaceText(r.peerNoSpace, 'on the peer') : undefined,
    peerSkipped.length > (r.peerNoSpace?.files ?? 0)
      ? `${count(peerSkipped.length, 'path')} left as is by the peer (${first(peerSkipped)})`
      : undefined,
  ].filter((x) => x !== undefined);
  return why.length === 0 ? undefined : `${why.join('; ')}; retried`;
}

/** A sync the peer ran here left files out that did not fit on this disk: the pair's error, as its own sync's would be. */
export function noRoomText(served: ServedSync): string {
  return served.noSpace === undefined ? '' : `${noSpaceText(served.noSpace, 'here')}; retried`;
}

/** A pair's error once unsettled syncs (notInSyncReason undefined) kept ending so (folder-schedule.ts MAX_UNSETTLED_RUNS). */
export const UNSETTLED_TEXT = 'the sync ended with changes left to move (they are retried)';

/** What the schedule makes of a completed sync (folder-schedule.ts SyncOutcome). */
export function completedOutcome(r: SyncFolderResult): SyncOutcome {
  if (r.inSync) return { kind: 'done' };
  const reason = notInSyncReason(r);
  return reason === undefined ? { kind: 'unsettled', error: UNSETTLED_TEXT } : { kind: 'failed', error: reason };
}

/**
 * A sync the peer ran here left the pair in sync for its mode here (`mode`: this side's with the
 * peer): what this side may receive is all here, and what it may send is all there, entries the
 * scan here could not read included (this side's own sync is not in sync while they last, so
 * the peer's must not read `in-sync` either).
 */
export function servedInSyncFor(mode: FolderMode | undefined, served: ServedSync): boolean {
  const sentAll = served.peerHasAll && served.unreadable === 0;
  if (mode === 'send-only') return sentAll;
  if (mode === 'receive-only') return served.hereHasAll;
  return mode === 'two-way' && sentAll && served.hereHasAll;
}

/**
 * A failed sync's message; a peer that serves no share of the folder's name is told apart from
 * a broken one: the folder not added there yet (the usual first minutes of a shared folder),
 * paused there (a peer older than SHARE_PAUSED, which a newer one answers instead), or removed.
 */
export function failureText(err: unknown, folderId: string): string {
  const message = err instanceof Error ? err.message : String(err);
  if (!isClawpeerError(err, 'SHARE_UNKNOWN')) return message;
  return `${message}; the peer has not added folder ${folderId}, or has paused or removed it`;
}

/** Node's errno codes of a lost connection, not of this side's disk. */
const NETWORK_ERRNO = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT', 'ECANCELED']);

/**
 * What `status` says of a pair when a sync the peer ran here failed on this side (the disk
 * full or read-only, a file error, a refusal or a limit here); undefined when the failure is
 * not this side's: the peer went away or timed out, the folder was busy, the listener stopped,
 * the peer reported an error of its own, a file here edited while it was being sent (the edit's
 * own sync follows at once), or a refusal that only narrows the peer's mode (SHARE_READ_ONLY,
 * the receive-only refusal: it learns and syncs narrowed).
 */
export function servedFailureText(err: unknown): string | undefined {
  if (err instanceof ClawpeerError) {
    if (err.wire !== undefined) return undefined; // the peer's own error (an IO error there is not ours)
    const ours =
      (err.code === 'IO' && !err.message.includes(CHANGED_WHILE_SENT)) ||
      err.code === 'INTERNAL' ||
      err.code === 'BUDGET_EXCEEDED' ||
      err.code === 'PATH_INVALID' ||
      (err.code === 'SHARE_FORBIDDEN' && !err.message.includes(RECEIVE_ONLY_REFUSAL));
    return ours ? `a sync the peer ran here failed: ${err.message}` : undefined;
  }
  // A file-system call's own error (not wrapped in a ClawpeerError): its errno says it is ours.
  const code = err instanceof Error ? (err as NodeJS.ErrnoException).code : undefined;
  if (typeof code !== 'string' || !code.startsWith('E') || NETWORK_ERRNO.has(code)) return undefined;
  return `a sync the peer ran here failed: ${(err as Error).message}`;
}

/** What a folder service's failed sync means for the schedule (a mode narrowing is learnt before). */
export function failedSyncOutcome(
  err: unknown,
  o: {
    readonly folderId: string;
    readonly peerId: string;
    /** The peer answered the dial. */
    readonly dialled: boolean;
    /** The listener is stopping: the sync was ended, not failed. */
    readonly stopping: boolean;
    readonly log: Logger;
  },
): SyncOutcome {
  const message = failureText(err, o.folderId);
  if (o.stopping) return { kind: 'busy', error: message };
  if (isClawpeerError(err, 'FOLDER_BUSY') || isClawpeerError(err, 'PEER_BUSY')) return { kind: 'busy', error: message };
  const where = { folder: o.folderId, peer: o.peerId };
  if (isClawpeerError(err, 'SHARE_PAUSED')) {
    o.log.info('the peer has paused the folder; trying again at its interval', where);
    return { kind: 'peer-paused' };
  }
  // A dial the peer answered with a refusal (it unpaired this node, its key is not the pinned
  // one) reached it: an error, not `waiting` for a peer that is online.
  const refusedAtHandshake = isClawpeerError(err, 'PEER_NOT_PAIRED') || isClawpeerError(err, 'AUTH_FAILED');
  const offline =
    (!o.dialled && !refusedAtHandshake) ||
    isClawpeerError(err, 'UNREACHABLE') ||
    isClawpeerError(err, 'TIMEOUT') ||
    isClawpeerError(err, 'CONNECTION_CLOSED');
  o.log.info(offline ? 'peer not reached; retrying with backoff' : 'folder sync failed; retrying with backoff', {
    ...where,
    error: message,
  });
  return offline ? { kind: 'offline', error: message } : { kind: 'failed', error: message };
}
