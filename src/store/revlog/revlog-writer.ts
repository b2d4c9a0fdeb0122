// One write transaction of the revision store: put, setHead, recordLocal, setWarm and setLandings, with the
// arrival sequence, local counter and live-head count read once and written once (finish) per
// transaction. RevisionStore.write runs it inside an LMDB transaction; nothing here commits.
import { bytesEqual, toHex } from '../../chunking/blake3.js';
import { conflictPath, pickHead, TooManyConcurrent } from '../../sync/conflict.js';
import { isHashedEntry, revisionEntry, revisionIdOf, type Revision, type RevisionEntry } from '../../sync/revision.js';
import {
  EMPTY_VECTOR,
  compareVectors,
  counterOf,
  encodeVector,
  incrementVector,
  mergeVectors,
  type VersionVector,
} from '../../sync/version-vector.js';
import {
  META_COUNTER,
  META_LANDINGS,
  META_LIVE_HEADS,
  META_SEQ,
  corrupt,
  encodeWarm,
  historyKey,
  historyRange,
  pathKey,
  readU64,
  u64,
  warmKey,
  type Dbs,
  type WarmStat,
} from '../revlog-format.js';

/** A revision made here, before the store gives it an origin and a version vector. */
export type RevisionDraft = Omit<Revision, 'origin' | 'vector'>;

/** Reads and writes inside one transaction; reads see the transaction's own writes. */
export interface RevisionWriter {
  get(id: Uint8Array): RevisionEntry | undefined;
  head(relPath: string): RevisionEntry | undefined;
  /**
   * Stores a revision (ours or a peer's, already decoded and checked against its id). Idempotent:
   * `added` is false when it was stored before. Appends it to its path's history and merges its
   * vector into the path's; does not move the head.
   */
  put(revision: Revision | RevisionEntry): { entry: RevisionEntry; added: boolean };
  /** Makes the stored revision `id` the head of its path. */
  setHead(id: Uint8Array): void;
  /**
   * Records an edit made on this node: origin = this node, vector = the path's merged vector with
   * this node's counter raised past both it and the persisted local counter; stores it and makes
   * it the head. `seen`: versions of the path not stored here, merged in too (`folder override`:
   * the new revision dominates a peer's head this send-only copy never took).
   */
  recordLocal(draft: RevisionDraft, seen?: VersionVector): RevisionEntry;
  /**
   * Records an edit a scan found on disk: as recordLocal, but built on the version this node last
   * had on disk there (onDiskBase): an edit made while the path was ignored here has not seen the
   * peers' revisions stored meanwhile, so it meets them as a concurrent edit (a conflict copy, or
   * edit beats delete), never replaces them unseen.
   */
  recordScanned(draft: RevisionDraft): RevisionEntry;
  /**
   * Sets (or with undefined clears) the warm index entry of `relPath`, certified for its current
   * head. `modeKept`: the file on disk could not be given the head's mode (folder-sync/head-metadata.ts),
   * so the stat's mode may differ from the head's.
   */
  setWarm(relPath: string, stat: WarmStat | undefined, options?: { readonly modeKept?: boolean }): void;
  /** Sets (or with undefined clears) the note of what a sync is about to publish (folder-sync/pending-landings.ts). */
  setLandings(note: Uint8Array | undefined): void;
}

/** What a transaction reads from its store. */
export interface WriterStore {
  readonly db: Dbs;
  /** The store's directory, for errors. */
  readonly dir: string;
  readonly nodeId: string;
  get(id: Uint8Array): RevisionEntry | undefined;
  head(relPath: string): RevisionEntry | undefined;
  /** The merged vector of the path with key `pk`; undefined when no revision of it was ever stored. */
  pathVector(pk: Buffer): VersionVector | undefined;
}

/**
 * `added`: the ids this transaction stored; `touched`: their paths' keys (latin1), for a
 * versioning run that visits only the paths that gained revisions (RevisionStore.gcWith).
 */
export function revlogWriter(
  store: WriterStore,
  added: Uint8Array[],
  touched?: Set<string>,
): { writer: RevisionWriter; finish: () => void } {
  const db = store.db;
  // The arrival sequence and the local counter are read once and written once per transaction
  // (finish), not per record: a scan recording 10,000 new files makes 40,000 LMDB calls less.
  let seq: number | undefined;
  let counter: number | undefined;
  let liveHeads: number | undefined;
  const finish = (): void => {
    if (seq !== undefined) db.meta.putSync(META_SEQ, u64(seq));
    if (counter !== undefined) db.meta.putSync(META_COUNTER, u64(counter));
    if (liveHeads !== undefined) db.meta.putSync(META_LIVE_HEADS, u64(liveHeads));
  };
  // Entries stored by this transaction, by id (latin1), so setHead and setWarm need not read
  // and decode what put() just wrote.
  const fresh = new Map<string, RevisionEntry>();
  // Heads set by this transaction, by path key (latin1): setWarm right after need not read them.
  const freshHeads = new Map<string, Buffer>();
  const lookup = (id: Uint8Array): RevisionEntry | undefined =>
    fresh.get(Buffer.from(id.buffer, id.byteOffset, id.byteLength).toString('latin1')) ?? store.get(id);
  // `mergedVector`: the path's vector after this revision, when the caller knows it already;
  // `knownPk`: the path's key, when the caller computed it (a path hash each); `newPath`: the
  // path has no stored vector, so none of its revisions was ever stored (put writes the vector
  // of every revision it stores, and nothing removes one): no revision of it can exist yet.
  const put = (
    input: Revision | RevisionEntry,
    mergedVector?: VersionVector,
    knownPk?: Buffer,
    newPath = false,
  ): { entry: RevisionEntry; added: boolean } => {
    const entry = 'encoded' in input ? input : revisionEntry(input);
    if ('encoded' in input && !isHashedEntry(input) && !bytesEqual(revisionIdOf(entry.encoded), entry.id)) {
      throw new TypeError(`revision entry of ${entry.revision.path} does not hash to its id`);
    }
    const idKey = Buffer.from(entry.id);
    if (!newPath && db.revs.doesExist(idKey)) return { entry, added: false };
    const pk = knownPk ?? pathKey(entry.revision.path);
    seq = (seq ?? readU64(db.meta.get(META_SEQ))) + 1;
    db.revs.putSync(idKey, Buffer.from(entry.encoded));
    db.history.putSync(historyKey(pk, seq), idKey);
    const vector = mergedVector ?? mergeVectors(store.pathVector(pk) ?? EMPTY_VECTOR, entry.revision.vector);
    db.pathVectors.putSync(pk, Buffer.from(encodeVector(vector)));
    if (entry.revision.contentRoot.length > 0) {
      const rootKey = Buffer.from(entry.revision.contentRoot);
      // From the shared pool, every byte written: lmdb takes a value's address, which costs a
      // native call (and a copy off the V8 heap) for a buffer of its own.
      const v = Buffer.allocUnsafe(4);
      v.writeUInt32BE((db.roots.get(rootKey)?.readUInt32BE(0) ?? 0) + 1);
      db.roots.putSync(rootKey, v);
    }
    added.push(Uint8Array.from(entry.id));
    touched?.add(pk.toString('latin1'));
    fresh.set(idKey.toString('latin1'), entry);
    return { entry, added: true };
  };
  // `newPath`: as put's; a path without a vector has no head either.
  const setHead = (id: Uint8Array, knownPk?: Buffer, newPath = false): void => {
    const entry = lookup(id);
    if (entry === undefined) throw new TypeError(`setHead: revision ${toHex(id)} is not stored`);
    const pk = knownPk ?? pathKey(entry.revision.path);
    const before = newPath ? undefined : (freshHeads.get(pk.toString('latin1')) ?? db.heads.get(pk));
    if (before !== undefined && bytesEqual(before, id)) return;
    let wasLive = false;
    if (before !== undefined) {
      const old = lookup(before);
      if (old === undefined)
        throw corrupt(store.dir, `head of ${entry.revision.path} (${toHex(before)}) is not a stored revision`);
      wasLive = !old.revision.deleted;
      // The warm entry was certified for the old head (a path without a head has none).
      db.warm.removeSync(warmKey(entry.revision.path));
    }
    liveHeads =
      (liveHeads ?? readU64(db.meta.get(META_LIVE_HEADS))) + (entry.revision.deleted ? 0 : 1) - (wasLive ? 1 : 0);
    const headId = Buffer.from(id);
    db.heads.putSync(pk, headId);
    freshHeads.set(pk.toString('latin1'), headId);
  };
  /** The stored revision `id`, which a path's history or head names (corrupt otherwise). */
  const listed = (id: Uint8Array, relPath: string): RevisionEntry => {
    const entry = lookup(id);
    if (entry === undefined) throw corrupt(store.dir, `${relPath} names missing revision ${toHex(id)}`);
    return entry;
  };
  /**
   * The vector an edit found on disk at `relPath` builds on: the path's merged vector `stored`
   * without the revisions this node has not settled, those the path's stored revisions pick
   * (pickHead, as a sync decides) over the head here, or as losers with no conflict copy yet. A
   * sync stores the peers' revisions of a path ignored here and leaves the head and the disk as
   * they were (sync-plan.ts): the file on disk, the head's or an edit of it, has seen none of
   * them, and an edit counting them replaced the peers' edit everywhere, unseen. Left out, the
   * edit meets them as a concurrent one: a conflict copy, or an edit beating a deletion.
   */
  const onDiskBase = (relPath: string, pk: Buffer, stored: VersionVector): VersionVector => {
    const headId = freshHeads.get(pk.toString('latin1')) ?? db.heads.get(pk);
    const head = headId === undefined ? undefined : listed(headId, relPath);
    // The common case: the head has seen every stored revision of the path.
    if (head !== undefined && compareVectors(head.revision.vector, stored) === 'equal') return stored;
    const history = [...db.history.getRange(historyRange(pk))].map(({ value }) => listed(value, relPath));
    const copied = (e: RevisionEntry): boolean => {
      const r = e.revision;
      if (r.deleted || r.kind !== 'file') return false;
      let copy: RevisionEntry;
      try {
        copy = revisionEntry({ ...r, path: conflictPath(r.path, r.mtimeNs, r.origin) });
      } catch (err) {
        // The copy's name makes a path past 4,096 bytes: no node made that copy (nor can).
        if (err instanceof TypeError) return false;
        throw err;
      }
      return fresh.has(Buffer.from(copy.id).toString('latin1')) || db.revs.doesExist(Buffer.from(copy.id));
    };
    let pick: ReturnType<typeof pickHead>;
    try {
      pick = pickHead(history, copied);
    } catch (err) {
      if (err instanceof TooManyConcurrent) return stored; // a sync leaves such a path as is too
      throw err;
    }
    if (pick === undefined) return stored;
    const unsettled = new Set(
      [pick.head, ...pick.losers.map((l) => l.loser).filter((e) => !copied(e))]
        .filter((e) => head === undefined || !bytesEqual(e.id, head.id))
        .map((e) => toHex(e.id)),
    );
    if (unsettled.size === 0) return stored;
    // A maximal revision's own counter is in no other's vector: the rest never dominate it.
    let base = EMPTY_VECTOR;
    for (const e of history) if (!unsettled.has(toHex(e.id))) base = mergeVectors(base, e.revision.vector);
    return base;
  };
  const recordLocal = (draft: RevisionDraft, seen: VersionVector | undefined, onDisk: boolean): RevisionEntry => {
    const current = counter ?? readU64(db.meta.get(META_COUNTER));
    const pk = pathKey(draft.path); // one path hash for the vector, the history and the head
    const stored = store.pathVector(pk);
    // A path never recorded (every path of a folder's first scan): two reads fewer.
    const newPath = stored === undefined;
    const built = stored !== undefined && onDisk ? onDiskBase(draft.path, pk, stored) : (stored ?? EMPTY_VECTOR);
    const base = seen === undefined ? built : mergeVectors(built, seen);
    const vector = incrementVector(base, store.nodeId, current + 1);
    const revision: Revision = { ...draft, origin: store.nodeId, vector };
    // It raised the path's vector, the merge is itself; unless built on less than all of it.
    const merged = built === stored || stored === undefined ? vector : mergeVectors(stored, vector);
    const { entry } = put(revision, merged, pk, newPath);
    counter = counterOf(vector, store.nodeId);
    setHead(entry.id, pk, newPath);
    return entry;
  };
  const writer: RevisionWriter = {
    get: (id) => store.get(id),
    head: (relPath) => store.head(relPath),
    put,
    setHead: (id) => setHead(id),
    recordLocal: (draft, seen) => recordLocal(draft, seen, false),
    recordScanned: (draft) => recordLocal(draft, undefined, true),
    setWarm: (relPath, stat, options) => {
      if (stat === undefined) {
        db.warm.removeSync(warmKey(relPath));
        return;
      }
      const pk = pathKey(relPath);
      const headId = freshHeads.get(pk.toString('latin1')) ?? db.heads.get(pk);
      if (headId === undefined) throw new TypeError(`setWarm: ${relPath} has no head`);
      const head = lookup(headId)?.revision;
      const modeOk = head?.mode === stat.mode || options?.modeKept === true;
      if (head === undefined || head.deleted || head.kind !== 'file' || !modeOk) {
        throw new TypeError(`setWarm: the head of ${relPath} is not a live file with mode ${stat.mode.toString(8)}`);
      }
      db.warm.putSync(warmKey(relPath), encodeWarm(headId, stat));
    },
    setLandings: (note) => {
      if (note === undefined) db.meta.removeSync(META_LANDINGS);
      else db.meta.putSync(META_LANDINGS, Buffer.from(note.buffer, note.byteOffset, note.byteLength));
    },
  };
  return { writer, finish };
}

/** What RevisionStore.withdraw did to one path. */
export interface WithdrawnPath {
  readonly path: string;
  /** The head before and after (undefined after: no revision of the path is left). */
  readonly headBefore: RevisionEntry | undefined;
  readonly headAfter: RevisionEntry | undefined;
  /** The revisions of the path withdrawn. */
  readonly withdrawn: readonly RevisionEntry[];
}

export interface WithdrawResult {
  /** The ids removed (to take out of the Merkle set). */
  readonly removed: readonly Uint8Array[];
  readonly paths: readonly WithdrawnPath[];
  /** Content roots no stored revision references any more. */
  readonly releasedContentRoots: Uint8Array[];
}

/**
 * Inside a write transaction: removes the stored revisions of `ids` (unknown ids are ignored)
 * WITHOUT recording them pruned (a peer may send them again, and they are stored then), and
 * puts each touched path as if they had never come: its head is `pickHead` over what is left
 * (`copied`: as the sync's plan asks it), its vector the merge of what is left, its warm entry
 * gone when the head moves, the content-root counts and the live-head count adjusted. A path
 * with nothing left loses its head and vector (the writer's new-path shortcut takes a path
 * without a vector for one without revisions). The local counter stays: no counter is reused.
 */
export function withdrawRevisions(
  store: WriterStore,
  ids: readonly Uint8Array[],
  copied: (e: RevisionEntry) => boolean,
): WithdrawResult {
  const db = store.db;
  const byPath = new Map<string, { pk: Buffer; path: string; ids: Set<string> }>();
  for (const id of ids) {
    const entry = store.get(id);
    if (entry === undefined) continue;
    const pk = pathKey(entry.revision.path);
    const key = pk.toString('latin1');
    const group = byPath.get(key) ?? { pk, path: entry.revision.path, ids: new Set<string>() };
    group.ids.add(toHex(entry.id));
    byPath.set(key, group);
  }
  const removed: Uint8Array[] = [];
  const released: Uint8Array[] = [];
  const paths: WithdrawnPath[] = [];
  let liveHeads = readU64(db.meta.get(META_LIVE_HEADS));
  for (const { pk, path: relPath, ids: gone } of byPath.values()) {
    const headId = db.heads.get(pk);
    const headBefore = headId === undefined ? undefined : store.get(headId);
    const withdrawn: RevisionEntry[] = [];
    const kept: RevisionEntry[] = [];
    for (const { key, value: id } of [...db.history.getRange(historyRange(pk))]) {
      const entry = store.get(id);
      if (entry === undefined) throw corrupt(store.dir, `history of ${relPath} lists missing revision ${toHex(id)}`);
      if (!gone.has(toHex(id))) {
        kept.push(entry);
        continue;
      }
      db.history.removeSync(key);
      db.revs.removeSync(Buffer.from(id));
      if (entry.revision.contentRoot.length > 0 && unrefRoot(db, entry.revision.contentRoot))
        released.push(entry.revision.contentRoot);
      withdrawn.push(entry);
      removed.push(Uint8Array.from(id));
    }
    const headAfter = pickHead(kept, copied)?.head;
    if (kept.length === 0) db.pathVectors.removeSync(pk);
    else
      db.pathVectors.putSync(
        pk,
        Buffer.from(encodeVector(kept.reduce((v, e) => mergeVectors(v, e.revision.vector), EMPTY_VECTOR))),
      );
    if (headAfter === undefined || headBefore === undefined || !bytesEqual(headAfter.id, headBefore.id)) {
      db.warm.removeSync(warmKey(relPath));
      if (headAfter === undefined) db.heads.removeSync(pk);
      else db.heads.putSync(pk, Buffer.from(headAfter.id));
      liveHeads +=
        (headAfter !== undefined && !headAfter.revision.deleted ? 1 : 0) -
        (headBefore !== undefined && !headBefore.revision.deleted ? 1 : 0);
    }
    paths.push({ path: relPath, headBefore, headAfter, withdrawn });
  }
  db.meta.putSync(META_LIVE_HEADS, u64(liveHeads));
  return { removed, paths, releasedContentRoots: released };
}

/** Decrements a content root's count; true when it reached zero (and was removed). */
export function unrefRoot(db: Dbs, root: Uint8Array): boolean {
  const key = Buffer.from(root);
  const n = db.roots.get(key)?.readUInt32BE(0) ?? 0;
  if (n <= 1) {
    db.roots.removeSync(key);
    return true;
  }
  const v = Buffer.alloc(4);
  v.writeUInt32BE(n - 1);
  db.roots.putSync(key, v);
  return false;
}
