// Dropping revisions from the revision log, each id recorded as pruned (never stored again),
// never a path's head nor a revision no other of the path's has seen: gc's walk over each path's
// history (RevisionStore.gcWith) and the ids a peer said its gc dropped (RevisionStore.prune, so
// both logs converge). Runs inside a write transaction of RevisionStore; nothing here commits,
// and the store takes the dropped ids out of its Merkle set.
import { BLAKE3_OUT_BYTES, bytesEqual, toHex } from '../../chunking/blake3.js';
import { maximalRevisions } from '../../sync/conflict.js';
import { decodeRevision, type Revision } from '../../sync/revision.js';
import { corrupt, historyRange, pathKey, type Dbs } from '../revlog-format.js';
import { unrefRoot } from './revlog-writer.js';

export interface GcResult {
  /** Revisions dropped. */
  readonly removedRevisions: number;
  /** Content roots no stored revision references any more (their chunks may be reclaimed). */
  readonly releasedContentRoots: Uint8Array[];
}

/** What one prune dropped: the ids, and the content roots nothing references now. */
export interface Pruned {
  readonly dropped: Uint8Array[];
  readonly released: Uint8Array[];
}

/** The log's tables, and its directory to name in a corruption error. */
export interface PruneStore {
  readonly db: Dbs;
  readonly dir: string;
}

/** One revision of a path's history, as gc walks it. */
export interface HistoryItem {
  readonly key: Buffer;
  readonly id: Buffer;
  readonly rev: Revision;
}

/** Of a path's history (oldest first), what to drop; `isHead` says which one is its head. */
export type ChooseDrops = (
  group: readonly HistoryItem[],
  isHead: (g: HistoryItem) => boolean,
) => readonly HistoryItem[];

/**
 * gc's walk over each path's history (or `only` these path keys), one at a time: memory is
 * bounded by the longest history. `choose` names what to drop; a head never is, nor a maximal one.
 */
export function pruneHistories(store: PruneStore, choose: ChooseDrops, only?: readonly Buffer[]): Pruned {
  const dropped: Uint8Array[] = [];
  const released: Uint8Array[] = [];
  for (const pk of only ?? historyPathKeys(store.db)) {
    const group = historyGroup(store, historyRange(pk));
    if (group.length <= 1) continue;
    const headId = store.db.heads.get(pk);
    const isHead = (g: HistoryItem): boolean => headId !== undefined && bytesEqual(headId, g.id);
    const chosen = choose(group, isHead);
    if (chosen.length === 0) continue; // most paths after a sync's gc: no vector comparisons
    const maximal = maximalIds(group);
    for (const g of chosen) {
      if (isHead(g) || maximal.has(toHex(g.id))) continue;
      dropRevision(store.db, g.key, g.id, g.rev, released);
      dropped.push(g.id);
    }
  }
  return { dropped, released };
}

/**
 * Drops the stored revisions of `ids` (what a peer said its gc dropped) that are neither their
 * path's head nor maximal in its history, and records them pruned. A head is not recorded: the
 * next sync still carries it. Unknown ids are recorded as pruned.
 */
export function pruneTold(store: PruneStore, ids: readonly Uint8Array[]): Pruned {
  const { db } = store;
  const dropped: Uint8Array[] = [];
  const released: Uint8Array[] = [];
  for (const id of ids) {
    if (id.length !== BLAKE3_OUT_BYTES) continue;
    const idKey = Buffer.from(id);
    const encoded = db.revs.get(idKey);
    if (encoded === undefined) {
      db.pruned.putSync(idKey, Buffer.alloc(0));
      continue;
    }
    const rev = decodeRevision(encoded);
    const pk = pathKey(rev.path);
    const headId = db.heads.get(pk);
    if (headId !== undefined && bytesEqual(headId, idKey)) continue;
    const group = historyGroup(store, historyRange(pk));
    const item = group.find((g) => bytesEqual(g.id, idKey));
    if (item === undefined || maximalIds(group).has(toHex(idKey))) continue;
    dropRevision(db, item.key, idKey, rev, released);
    dropped.push(Uint8Array.from(idKey));
  }
  return { dropped, released };
}

/**
 * The ids (hex) of a path's revisions that no other of them has seen. gc never drops one: on a
 * node holding more revisions of the path, a maximal loser can become the head (a deletion that
 * saw the winner but not the loser: the loser, an edit, beats it), and a node that dropped it
 * would refuse it forever, the two logs and files apart for good.
 */
function maximalIds(group: readonly HistoryItem[]): Set<string> {
  return new Set(maximalRevisions(group.map((g) => ({ id: g.id, revision: g.rev }))).map((e) => toHex(e.id)));
}

/** A path's history entries (a historyRange), oldest first, decoded. */
function historyGroup(store: PruneStore, range: ReturnType<typeof historyRange>): HistoryItem[] {
  return [...store.db.history.getRange(range)].map(({ key, value: id }) => {
    const encoded = store.db.revs.get(id);
    if (encoded === undefined) throw corrupt(store.dir, `history lists missing revision ${toHex(id)}`);
    return { key, id, rev: decodeRevision(encoded) };
  });
}

/** Removes one revision (history entry `key`), counts its content root off, records it pruned. */
function dropRevision(db: Dbs, key: Buffer, id: Buffer, rev: Revision, released: Uint8Array[]): void {
  db.history.removeSync(key);
  db.revs.removeSync(id);
  db.pruned.putSync(id, Buffer.alloc(0));
  if (rev.contentRoot.length > 0 && unrefRoot(db, rev.contentRoot)) released.push(rev.contentRoot);
}

/** Each path key with a history (a path ignored here may have one and no head), one range read each. */
function* historyPathKeys(db: Dbs): Generator<Buffer> {
  for (let start: Buffer = Buffer.alloc(0), exclusiveStart = false; ; exclusiveStart = true) {
    let first: Buffer | undefined;
    for (const { key } of db.history.getRange({ start, exclusiveStart, limit: 1 })) first = key;
    if (first === undefined) return;
    const pk = Buffer.from(first.subarray(0, BLAKE3_OUT_BYTES));
    start = historyRange(pk).end;
    yield pk;
  }
}
