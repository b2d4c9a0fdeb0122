// What a sync changed in a folder, as `clawpeer folder log` tells it: files (and directories,
// symlinks) added, changed and deleted here by the peer's revisions, counted, and the first
// MAX_LISTED_CHANGES of them by path (Syncthing's "recent changes"). Counted from the folder's
// heads before and after the revisions are applied, so a revision that lost to a local one, was
// skipped, or only carried history counts as nothing. A conflict copy the sync made here (of the
// losing version, on either side) is a new file here: counted as added, though no revision the
// peer sent names its path.
import { bytesEqual } from '../chunking/blake3.js';
import type { RevisionEntry } from '../sync/revision.js';
import type { RevisionStore } from '../store/revision-store.js';

/** How many changed paths one sync lists (the counts cover them all): a log line stays bounded. */
export const MAX_LISTED_CHANGES = 100;

export type PathChangeKind = 'added' | 'changed' | 'deleted';

export interface PathChange {
  readonly path: string;
  readonly change: PathChangeKind;
}

export interface ChangeCounts {
  readonly added: number;
  readonly changed: number;
  readonly deleted: number;
  /** The first MAX_LISTED_CHANGES changes, in path order. */
  readonly paths: readonly PathChange[];
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
export function countChanges(
  store: RevisionStore,
  before: HeadsBefore,
  copies: ReadonlyMap<string, RevisionEntry | undefined> = new Map(),
): ChangeCounts {
  const counts = { added: 0, changed: 0, deleted: 0 };
  const paths: PathChange[] = [];
  const note = (p: string, change: PathChangeKind): void => {
    counts[change]++;
    paths.push({ path: p, change });
  };
  const heads = new Map(before.heads);
  for (const [p, was] of copies) if (!heads.has(p)) heads.set(p, was);
  for (const [p, was] of heads) {
    const nowId = store.headId(p);
    if (nowId === undefined || (was !== undefined && bytesEqual(was.id, nowId))) continue;
    const now = before.receivedByPath.get(p)?.find((e) => bytesEqual(e.id, nowId)) ?? store.head(p);
    if (now === undefined) continue;
    const wasLive = was !== undefined && !was.revision.deleted;
    if (now.revision.deleted) {
      if (wasLive) note(p, 'deleted');
    } else note(p, wasLive ? 'changed' : 'added');
  }
  paths.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { ...counts, paths: paths.slice(0, MAX_LISTED_CHANGES) };
}
