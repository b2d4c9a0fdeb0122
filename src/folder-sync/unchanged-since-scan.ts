// Is a path on disk still what the sync's scan saw? Asked by the apply step just before it
// replaces, copies over or deletes a path: a user who saved the file after the scan (the sync
// then runs for a second or more) would otherwise lose that save without a trace, replaced by
// the peer's version (its bytes were never recorded, so they are neither a conflict copy nor in
// history). Such a file is moved aside first to `<stem>.sync-unsynced-<its mtime>-<this node>`
// (a conflict copy's name with its own marker, so it never takes the name of a real conflict
// copy, which the log decides), which the next scan records as a new file and every peer then
// gets: nothing lost.
//
// "What the scan saw" is the path's head here: a live file of the head's size whose warm entry
// (stat certified by the scan) matches, or, for a file modified within the racy window (never
// certified warm), whose mtime is the head's within a millisecond (an apply sets mtimes in whole
// ms); no entry where the head is none or a tombstone, no file where it is a directory or link.
// Directories and links are not content a sync could destroy here, so they always pass.
// sync-apply.ts asks about a path to delete or link before the content is received and again
// just before it acts, and the publisher asks just before it renames a fetched file over its
// path (PublisherOptions.beforeReplace); what is left is the few microseconds between that last
// look and the rename.
import { randomBytes } from 'node:crypto';
import type { BigIntStats } from 'node:fs';
import { lstatSync } from 'node:fs';
import { link, lstat, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { RevisionStore } from '../store/revision-store.js';
import type { RevisionEntry } from '../sync/revision.js';
import { CONFLICT_MARKER, conflictPath } from '../sync/conflict.js';

/** Marks a file moved aside because it changed since the scan (as long as CONFLICT_MARKER: the name fits where a copy's does). */
export const UNSYNCED_MARKER = '.sync-unsynced-';

/** The name a save moved aside takes: a conflict copy's, with UNSYNCED_MARKER for its marker. */
export function unsyncedPath(relPath: string, mtimeNs: bigint, nodeId: string): string {
  const copy = conflictPath(relPath, mtimeNs, nodeId);
  const at = copy.lastIndexOf(CONFLICT_MARKER);
  return `${copy.slice(0, at)}${UNSYNCED_MARKER}${copy.slice(at + CONFLICT_MARKER.length)}`;
}

/**
 * The names to try, in order, for an entry moved aside: its unsynced name at its mtime and at each
 * of the next 9 seconds, then ten with a random tag for this node's. A peer can sync files here
 * under the first ten (it knows this node's id and can guess an mtime to the second): were they
 * all, the save would be lost (a file) or every sync fail (a directory). The random ones it cannot.
 */
export function unsyncedNames(relPath: string, mtimeNs: bigint, nodeId: string): string[] {
  const names: string[] = [];
  for (let k = 0n; k < 10n; k++) names.push(unsyncedPath(relPath, mtimeNs + k * 1_000_000_000n, nodeId));
  for (let k = 0; k < 10; k++) names.push(unsyncedPath(relPath, mtimeNs, randomBytes(4).toString('hex')));
  return names;
}

const NS_PER_MS = 1_000_000n;

export function unchangedSinceScan(
  folderReal: string,
  relPath: string,
  local: RevisionEntry | undefined,
  store: RevisionStore,
): boolean {
  // Asked for every received file: a synchronous lstat that returns no entry rather than throw
  // costs a first sync of 10,000 files ~0.2 CPU-s less than the promise that rejects.
  let st: BigIntStats | undefined;
  try {
    st = lstatSync(path.join(folderReal, ...relPath.split('/')), { bigint: true, throwIfNoEntry: false });
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOTDIR'; // a file where a directory was: nothing of ours below
  }
  if (st === undefined) return true; // nothing there now (deleted since: nothing to lose)
  const head = local === undefined || local.revision.deleted ? undefined : local.revision;
  if (head === undefined) return st.isDirectory(); // a file or link the log does not know: made since the scan
  // A directory or link is not content a sync could destroy; a file where the scan saw one is
  // (made since: a peer's file, link or deletion must not replace it unseen).
  if (head.kind !== 'file') return !st.isFile();
  if (!st.isFile() || st.size !== BigInt(head.size)) return false;
  const mode = Number(st.mode) & 0o7777;
  if (store.isWarm(relPath, { size: head.size, mtimeNs: st.mtimeNs, ino: st.ino, dev: st.dev, mode })) return true;
  const drift = st.mtimeNs - head.mtimeNs;
  return drift < NS_PER_MS && drift > -NS_PER_MS;
}

/**
 * Moves the file at `relPath` aside to its unsynced name when it changed since the scan
 * (unchangedSinceScan); returns that name, or undefined when nothing was moved. Linked, then
 * unlinked, so an existing file of that name is never replaced (the next second's name is tried).
 */
export async function rescueUnscanned(
  folderReal: string,
  relPath: string,
  local: RevisionEntry | undefined,
  store: RevisionStore,
): Promise<string | undefined> {
  if (unchangedSinceScan(folderReal, relPath, local, store)) return undefined;
  const abs = path.join(folderReal, ...relPath.split('/'));
  const st = await lstat(abs, { bigint: true }).catch(() => undefined);
  if (st?.isFile() !== true) return undefined; // a link or something else made meanwhile: not content of ours to keep
  for (const to of unsyncedNames(relPath, st.mtimeNs, store.nodeId)) {
    try {
      await link(abs, path.join(folderReal, ...to.split('/')));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') continue;
      throw err;
    }
    await unlink(abs);
    return to;
  }
  return undefined;
}
