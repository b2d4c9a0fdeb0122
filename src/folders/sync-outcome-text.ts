// What `clawpeer status` says of a folder pair whose last sync did not leave it in sync: the
// paths a completed sync left behind, or why the sync failed, in terms a user can act on.
import { isClawpeerError } from '../errors.js';
import type { SyncFolderResult } from '../folder-sync/sync-client.js';
import { count } from '../format.js';

/** Why a completed sync is not in sync, naming the first path of each kind (status's `error`). */
export function notInSyncReason(r: SyncFolderResult): string {
  const first = (paths: readonly string[]): string => `${paths[0] ?? ''}${paths.length > 1 ? ', ...' : ''}`;
  const peerSkipped = r.peerSkipped ?? [];
  const why = [
    r.unreadable.length > 0
      ? `${count(r.unreadable.length, 'entry', 'entries')} here cannot be read (${first(r.unreadable.map((u) => u.path))})`
      : undefined,
    r.skipped.length > 0 ? `${count(r.skipped.length, 'path')} left as is here (${first(r.skipped)})` : undefined,
    peerSkipped.length > 0
      ? `${count(peerSkipped.length, 'path')} left as is by the peer (${first(peerSkipped)})`
      : undefined,
  ].filter((x) => x !== undefined);
  return why.length === 0
    ? 'the sync ended with changes left to move (they are retried)'
    : `${why.join('; ')}; retried`;
}

/**
 * A failed sync's message; a peer that serves no share of the folder's name is told apart from
 * a broken one: the folder not added there yet (the usual first minutes of a shared folder),
 * paused there, or removed.
 */
export function failureText(err: unknown, folderId: string): string {
  const message = err instanceof Error ? err.message : String(err);
  if (!isClawpeerError(err, 'SHARE_UNKNOWN')) return message;
  return `${message}; the peer has not added folder ${folderId}, or has paused or removed it`;
}
