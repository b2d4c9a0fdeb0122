// What a sync changed in a folder, as `clawpeer folder log` tells it: files (and directories,
// symlinks) added, changed and deleted here by the peer's revisions. Counted from the folder's
// heads before and after the revisions are applied, so a revision that lost to a local one, was
// skipped, or only carried history counts as nothing.
import { bytesEqual } from '../chunking/blake3.js';
import type { RevisionEntry } from '../sync/revision.js';
import type { RevisionStore } from '../store/revision-store.js';

export interface ChangeCounts {
  readonly added: number;
  readonly changed: number;
  readonly deleted: number;
}

/** The heads of the paths `received` names, before they are applied. */
export function headsBefore(store: RevisionStore, received: readonly RevisionEntry[]): Map<string, RevisionEntry | undefined> {
  const before = new Map<string, RevisionEntry | undefined>();
  for (const e of received) if (!before.has(e.revision.path)) before.set(e.revision.path, store.head(e.revision.path));
  return before;
}

/** Compares those heads with the heads now. */
export function countChanges(store: RevisionStore, before: ReadonlyMap<string, RevisionEntry | undefined>): ChangeCounts {
  let added = 0;
  let changed = 0;
  let deleted = 0;
  for (const [p, was] of before) {
    const now = store.head(p);
    if (now === undefined || (was !== undefined && bytesEqual(was.id, now.id))) continue;
    const wasLive = was !== undefined && !was.revision.deleted;
    if (now.revision.deleted) {
      if (wasLive) deleted++;
    } else if (wasLive) changed++;
    else added++;
  }
  return { added, changed, deleted };
}
