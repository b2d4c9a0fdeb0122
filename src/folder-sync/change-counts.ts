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

/** The heads of the paths `received` names before they are applied, and the received revisions by path. */
export interface HeadsBefore {
  readonly heads: ReadonlyMap<string, RevisionEntry | undefined>;
  readonly receivedByPath: ReadonlyMap<string, readonly RevisionEntry[]>;
}

/** The heads of the paths `received` names, before they are applied. */
export function headsBefore(store: RevisionStore, received: readonly RevisionEntry[]): HeadsBefore {
  const heads = new Map<string, RevisionEntry | undefined>();
  const receivedByPath = new Map<string, RevisionEntry[]>();
  for (const e of received) {
    const p = e.revision.path;
    const list = receivedByPath.get(p);
    if (list !== undefined) {
      list.push(e);
      continue;
    }
    receivedByPath.set(p, [e]);
    heads.set(p, store.head(p));
  }
  return { heads, receivedByPath };
}

/**
 * Compares those heads with the heads now. A head that moved to a received revision is that
 * revision, already decoded: only the head's id is read (a first sync of 10,000 files decoded
 * every new head again here).
 */
export function countChanges(store: RevisionStore, before: HeadsBefore): ChangeCounts {
  let added = 0;
  let changed = 0;
  let deleted = 0;
  for (const [p, was] of before.heads) {
    const nowId = store.headId(p);
    if (nowId === undefined || (was !== undefined && bytesEqual(was.id, nowId))) continue;
    const now = before.receivedByPath.get(p)?.find((e) => bytesEqual(e.id, nowId)) ?? store.head(p);
    if (now === undefined) continue;
    const wasLive = was !== undefined && !was.revision.deleted;
    if (now.revision.deleted) {
      if (wasLive) deleted++;
    } else if (wasLive) changed++;
    else added++;
  }
  return { added, changed, deleted };
}
