// The revision log of one shared folder, in an embedded LMDB environment: each revision stored
// once by id, each path's head and history, the Merkle set of all ids kept current with every
// commit, the local counter, the warm index. Invariants: several records commit in one atomic
// transaction; one writer process per folder (the sync folder lock). Goals, non-goals and why LMDB:
// ARCHITECTURE.md, "The revision log". The on-disk layout is in revlog-format.ts; the parts only
// this class uses in revlog/: a write transaction's writer, gc's and a peer's pruning, the O(N)
// consistency check.

import path from 'node:path';
import type { RootDatabase } from 'lmdb';
import { BLAKE3_OUT_BYTES, bytesEqual, toHex } from '../chunking/blake3.js';
import { ClawpeerError } from '../errors.js';
import { MerkleIdSet } from '../sync/merkle-root.js';
import { decodeRevision, isLiveFileWithRoot, type Revision, type RevisionEntry } from '../sync/revision.js';
import { EMPTY_VECTOR, checkNodeId, decodeVector, type VersionVector } from '../sync/version-vector.js';
import { INTERNAL_DIR_NAME } from './internal-names.js';
import { versionsToDrop, type VersioningPolicy } from '../sync/versioning.js';
import { revlogProblems } from './revlog/revlog-check.js';
import {
  pruneHistories,
  pruneTold,
  type ChooseDrops,
  type GcResult,
  type PruneStore,
  type Pruned,
} from './revlog/revlog-prune.js';
import { revlogWriter, withdrawRevisions, type RevisionWriter, type WithdrawResult } from './revlog/revlog-writer.js';

export type { GcResult } from './revlog/revlog-prune.js';
export type { RevisionDraft, RevisionWriter, WithdrawResult, WithdrawnPath } from './revlog/revlog-writer.js';
import {
  REVLOG_DIR_NAME,
  WARM_VALUE_BYTES,
  META_COUNTER,
  META_LIVE_HEADS,
  META_ID_CHANGES,
  META_LANDINGS,
  META_NODE,
  META_PEER,
  WARM_KEY_MAX_BYTES,
  type WarmStat,
  hashPath,
  pathKey,
  warmKey,
  u64,
  readU64,
  encodeWarmStat,
  corrupt,
  historyRange,
  type Dbs,
  openRevlog,
  revlogTransaction,
} from './revlog-format.js';

export interface OpenRevisionStoreOptions {
  /** This node's id: the origin of local revisions. */
  readonly nodeId: string;
}

export class RevisionStore {
  readonly nodeId: string;
  /** Directory of the LMDB environment. */
  readonly dir: string;
  readonly #env: RootDatabase<Buffer, Buffer>;
  readonly #db: Dbs;
  readonly #ids: MerkleIdSet;
  readonly #scratchKey = Buffer.alloc(WARM_KEY_MAX_BYTES);
  readonly #scratchWarm = Buffer.alloc(WARM_VALUE_BYTES);
  readonly #scratchId = Buffer.alloc(BLAKE3_OUT_BYTES);
  /** Keys (latin1) of the paths that gained revisions since the last gc here: gcWith's 'touched'. */
  readonly #touched = new Set<string>();
  #fullGcAtMs: number | undefined;
  #inTransaction = false;
  #closed = false;
  /** META_ID_CHANGES as of the in-memory id set; #stale once another process was seen changing it. */
  #idChanges: number;
  #stale = false;

  private constructor(
    dir: string,
    nodeId: string,
    env: RootDatabase<Buffer, Buffer>,
    db: Dbs,
    ids: MerkleIdSet,
    idChanges: number,
  ) {
    this.dir = dir;
    this.nodeId = nodeId;
    this.#env = env;
    this.#db = db;
    this.#ids = ids;
    this.#idChanges = idChanges;
  }

  /**
   * Opens (creating if needed) the revision log of the shared folder at `folder`. Rebuilds the in-memory Merkle
   * set from the stored ids (one key scan: ~32 bytes per revision read). Throws ClawpeerError IO when the
   * environment cannot be opened or has another format.
   */
  static async open(folder: string, options: OpenRevisionStoreOptions): Promise<RevisionStore> {
    const dir = path.join(path.resolve(folder), INTERNAL_DIR_NAME, REVLOG_DIR_NAME);
    const badId = checkNodeId(options.nodeId);
    if (badId !== undefined) throw new ClawpeerError('USAGE', `revision store for ${folder}: ${badId}`);
    const { env, db, ids, idChanges } = await openRevlog(dir);
    return new RevisionStore(dir, options.nodeId, env, db, ids, idChanges);
  }

  /**
   * True when the in-memory id set still matches the stored ids: no other process added or dropped revisions
   * since this store was opened (a long-lived process reuses an open store only then; revision-store-pool.ts).
   */
  isCurrent(): boolean {
    return !this.#closed && !this.#stale && readU64(this.#db.meta.get(META_ID_CHANGES)) === this.#idChanges;
  }

  /** Inside a write transaction that changes the id set. */
  #bumpIdChanges(): void {
    const stored = readU64(this.#db.meta.get(META_ID_CHANGES));
    if (stored !== this.#idChanges) this.#stale = true; // another process changed the ids meanwhile
    this.#idChanges = stored + 1;
    this.#db.meta.putSync(META_ID_CHANGES, u64(this.#idChanges));
  }

  /** Number of stored revisions. */
  get size(): number {
    return this.#ids.size;
  }

  /** Merkle root of the stored revision ids (what reconciliation compares first). */
  root(): Uint8Array {
    return this.#ids.root();
  }

  /**
   * The live id set, updated after every commit. Hand it to a ReconcileInitiator/Responder only while no write
   * can happen (the folder lock is held and nothing commits until the exchange ends), or take `snapshotIdSet()`.
   */
  idSet(): MerkleIdSet {
    return this.#ids;
  }

  /** A copy of the id set that later commits do not change. */
  snapshotIdSet(): MerkleIdSet {
    return this.#ids.clone();
  }

  /** All stored ids, ascending, packed back to back (size x 32 bytes). */
  allIds(): Uint8Array {
    return this.#ids.toPacked();
  }

  has(id: Uint8Array): boolean {
    return id.length === BLAKE3_OUT_BYTES && this.#ids.has(id);
  }

  /** The stored revision with this id. */
  get(id: Uint8Array): RevisionEntry | undefined {
    this.#checkOpen();
    return this.#get(id);
  }

  /** The canonical record bytes of a stored revision (what a peer is sent). */
  getEncoded(id: Uint8Array): Uint8Array | undefined {
    this.#checkOpen();
    return this.#db.revs.get(Buffer.from(id));
  }

  /** The head revision of `relPath`, tombstones included. */
  head(relPath: string): RevisionEntry | undefined {
    this.#checkOpen();
    return this.#head(relPath);
  }

  /** The id of `relPath`'s head revision, tombstones included, without reading or decoding the revision. */
  headId(relPath: string): Uint8Array | undefined {
    this.#checkOpen();
    return this.#db.heads.get(pathKey(relPath));
  }

  /**
   * True when `relPath`'s head is a live file with content `root`, as head() would say, without
   * decoding it or allocating (serving a fetch asks this once per file). A record that does not
   * pass is decoded, so a corrupt one still throws.
   */
  isLiveFileHead(relPath: string, root: Uint8Array): boolean {
    this.#checkOpen();
    // Values read through lmdb's shared buffer stay valid only until the next read: the id is
    // copied out before the record is read, and the record is read with plain byte loops.
    const id = this.#db.heads.getBinaryFast(pathKey(relPath));
    if (id === undefined) return false;
    if (id.length !== BLAKE3_OUT_BYTES) return this.#liveFileHeadSlow(relPath, root);
    for (let i = 0; i < BLAKE3_OUT_BYTES; i++) this.#scratchId[i] = id[i]!;
    const rec = this.#db.revs.getBinaryFast(this.#scratchId);
    if (rec !== undefined && isLiveFileWithRoot(rec, rec.length, root)) return true;
    return this.#liveFileHeadSlow(relPath, root);
  }

  #liveFileHeadSlow(relPath: string, root: Uint8Array): boolean {
    const h = this.#head(relPath)?.revision;
    return h !== undefined && !h.deleted && h.kind === 'file' && bytesEqual(h.contentRoot, root);
  }

  /** The head revision of `relPath` if the path exists in it (a tombstone head: undefined). */
  liveHead(relPath: string): RevisionEntry | undefined {
    const head = this.head(relPath);
    return head === undefined || head.revision.deleted ? undefined : head;
  }

  /** The key headPathKeys() lists `relPath` under (latin1 string of its 32-byte path key). */
  static pathKeyOf(relPath: string): string {
    // Asked once per path and never again: the cache would only churn.
    return hashPath(relPath).toString('latin1');
  }

  /**
   * True when `relPath` has a warm entry with exactly this stat and mode: it is certified for the current head,
   * a live file (setHead removes the entries of paths whose head moves). The scanner's no-op fast path: one
   * read, no path hash (the directory's key is cached), nothing decoded.
   */
  isWarm(relPath: string, stat: WarmStat): boolean {
    this.#checkOpen();
    // A no-op scan asks this once per file: read through lmdb's shared value buffer and compare against a scratch
    // buffer, so it allocates nothing per file. That buffer is valid until the next read and only its `length`
    // says the value's size (the typed array is larger: Buffer methods would see its stale tail): plain byte loops.
    const v = this.#db.warm.getBinaryFast(warmKey(relPath, this.#scratchKey));
    if (v === undefined || v.length !== WARM_VALUE_BYTES) return false;
    const expected = encodeWarmStat(stat, this.#scratchWarm);
    for (let i = BLAKE3_OUT_BYTES; i < WARM_VALUE_BYTES; i++) if (v[i] !== expected[i]) return false;
    return true;
  }

  /** Number of heads that are not tombstones (one per live path). */
  liveHeadCount(): number {
    this.#checkOpen();
    return readU64(this.#db.meta.get(META_LIVE_HEADS));
  }

  /** Every path key (pathKeyOf) that has a head: a scan finds unseen paths without decoding each head. */
  *headPathKeys(): Generator<string, void, undefined> {
    this.#checkOpen();
    for (const key of this.#db.heads.getKeys({ snapshot: true })) yield key.toString('latin1');
  }

  /** The head under a key from headPathKeys(). */
  headByKey(key: string): RevisionEntry | undefined {
    this.#checkOpen();
    const id = this.#db.heads.get(Buffer.from(key, 'latin1'));
    return id === undefined ? undefined : this.#get(id);
  }

  /** Every head (one per path ever seen, tombstones included), in no particular order. */
  *heads(): Generator<RevisionEntry, void, undefined> {
    this.#checkOpen();
    for (const { value } of this.#db.heads.getRange({ snapshot: true })) {
      const entry = this.#get(value);
      if (entry === undefined) throw corrupt(this.dir, `head ${toHex(value)} is not a stored revision`);
      yield entry;
    }
  }

  /** The stored revisions of `relPath`, oldest first (arrival order here). */
  history(relPath: string): RevisionEntry[] {
    this.#checkOpen();
    const out: RevisionEntry[] = [];
    for (const { value } of this.#db.history.getRange(historyRange(pathKey(relPath)))) {
      const entry = this.#get(value);
      if (entry === undefined) throw corrupt(this.dir, `history of ${relPath} lists missing revision ${toHex(value)}`);
      out.push(entry);
    }
    return out;
  }

  /** Merge of the vectors of every revision ever stored for `relPath`. */
  pathVector(relPath: string): VersionVector {
    this.#checkOpen();
    return this.#pathVector(pathKey(relPath));
  }

  /** The id of the node that last synced this folder (recordSyncingNode), if any did since it was recorded. */
  syncingNode(): string | undefined {
    this.#checkOpen();
    const v = this.#db.meta.get(META_NODE);
    return v === undefined ? undefined : Buffer.from(v).toString('latin1');
  }

  /** Records this store's node as the one that syncs the folder (a write only when it changes). */
  recordSyncingNode(): void {
    this.#checkOpen();
    if (this.syncingNode() === this.nodeId) return;
    this.#txn(() => this.#db.meta.putSync(META_NODE, Buffer.from(this.nodeId, 'latin1')));
  }

  /** The note of what a sync was publishing when it was cut short (folder-sync/pending-landings.ts), if any. */
  pendingLandings(): Uint8Array | undefined {
    return this.#db.meta.get(META_LANDINGS);
  }

  /** The peer and share this folder last synced with (recordSyncingPeer), if any. */
  syncingPeer(): { peerId: string; share: string } | undefined {
    this.#checkOpen();
    const v = this.#db.meta.get(META_PEER);
    if (v === undefined) return undefined;
    const text = Buffer.from(v).toString('latin1');
    const colon = text.indexOf(':');
    return colon < 0 ? { peerId: text, share: '' } : { peerId: text.slice(0, colon), share: text.slice(colon + 1) };
  }

  /** Records the peer and share this folder syncs with (a write only when it changes). */
  recordSyncingPeer(peerId: string, share: string): void {
    this.#checkOpen();
    const value = Buffer.from(`${peerId}:${share}`, 'latin1');
    const before = this.#db.meta.get(META_PEER);
    if (before !== undefined && before.equals(value)) return;
    this.#txn(() => this.#db.meta.putSync(META_PEER, value));
  }

  /** True when gc dropped revision `id` here, or a peer said it dropped it: it is never stored again. */
  isPruned(id: Uint8Array): boolean {
    this.#checkOpen();
    return id.length === BLAKE3_OUT_BYTES && this.#db.pruned.doesExist(Buffer.from(id));
  }

  /** Of `ids`, those that are pruned here (in their order). */
  prunedAmong(ids: readonly Uint8Array[]): Uint8Array[] {
    return ids.filter((id) => this.isPruned(id));
  }

  /** Number of pruned ids recorded. */
  prunedCount(): number {
    this.#checkOpen();
    return this.#db.pruned.getKeysCount();
  }

  /**
   * Drops what a peer said its gc dropped, as gc does (revlog-prune.ts pruneTold: never a head,
   * nor a revision no other of its path's has seen), and records the ids pruned, unknown ones too.
   */
  prune(ids: readonly Uint8Array[]): GcResult {
    this.#checkOpen();
    return this.#drop((store) => pruneTold(store, ids));
  }

  /** The highest counter this node has used (persisted). */
  localCounter(): number {
    this.#checkOpen();
    return readU64(this.#db.meta.get(META_COUNTER));
  }

  /**
   * Runs `fn` in one write transaction and commits once: all its writes become visible (and the
   * Merkle set changes) together, or none do if it throws (the error is rethrown). `fn` must be
   * synchronous: LMDB holds its write lock while it runs, so do the hashing before.
   */
  write<T>(fn: (writer: RevisionWriter) => T): T {
    this.#checkOpen();
    if (this.#inTransaction) throw new TypeError('RevisionStore.write() called inside a write transaction');
    const added: Uint8Array[] = [];
    this.#inTransaction = true;
    let result: T;
    try {
      result = this.#txn(() => {
        const { writer, finish } = revlogWriter(
          {
            db: this.#db,
            dir: this.dir,
            nodeId: this.nodeId,
            get: (id) => this.#get(id),
            head: (p) => this.#head(p),
            pathVector: (pk) => this.#storedPathVector(pk),
          },
          added,
          this.#touched,
        );
        const out = fn(writer);
        if (out instanceof Promise) throw new TypeError('RevisionStore.write() callback must be synchronous');
        finish();
        if (added.length > 0) this.#bumpIdChanges();
        return out;
      });
    } finally {
      this.#inTransaction = false;
    }
    for (const id of added) this.#ids.add(id);
    return result;
  }

  /**
   * Withdraws revisions made here that no peer has (`folder revert`): removed, NOT recorded as
   * pruned (stored again if a peer ever sends them), each touched path's head, vector, warm
   * entry, content-root counts and the live-head count recomputed (revlog-writer.ts
   * withdrawRevisions), the Merkle set without them. `copied`: as the sync's plan asks pickHead.
   */
  withdraw(ids: readonly Uint8Array[], copied: (e: RevisionEntry) => boolean = () => false): WithdrawResult {
    this.#checkOpen();
    if (this.#inTransaction) throw new TypeError('RevisionStore.withdraw() called inside a write transaction');
    const result = this.#txn(() => {
      const store = { db: this.#db, dir: this.dir, nodeId: this.nodeId, get: (id: Uint8Array) => this.#get(id) };
      const r = withdrawRevisions({ ...store, head: (p) => this.#head(p), pathVector: () => undefined }, ids, copied);
      if (r.removed.length > 0) this.#bumpIdChanges();
      return r;
    });
    for (const id of result.removed) this.#ids.delete(id);
    return result;
  }

  /**
   * Drops, for every path, the revisions older than its `keepLast` most recent ones, never the
   * head (so a path keeps keepLast revisions, or keepLast + 1 when its head is older than
   * those): gcWith keep-last:N.
   */
  gc(keepLast: number): GcResult {
    return this.gcWith({ kind: 'keep-last', count: keepLast }, 0);
  }

  /**
   * Drops what `policy` does not keep at `nowMs` (versioning.ts versionsToDrop), never a head, in
   * one transaction; returns the content roots nothing references now. Dropped ids are recorded
   * pruned (a sync tells the peer, whose log drops them too). `scope` 'touched': only the paths
   * that gained revisions since this object's last gc (after a sync: a walk of every path cost
   * seconds per sync of a folder of 20,000 files); every path while this object has walked none
   * (what was stored before it opened, by a CLI sync or another process, is in no touched set).
   */
  gcWith(policy: VersioningPolicy, nowMs: number, scope: 'all' | 'touched' = 'all'): GcResult {
    this.#checkOpen();
    if (policy.kind === 'keep-last' && (!Number.isSafeInteger(policy.count) || policy.count < 1))
      throw new ClawpeerError('USAGE', `gc keepLast must be an integer >= 1, got ${policy.count}`);
    const all = scope === 'all' || this.#fullGcAtMs === undefined;
    const keys = all ? undefined : [...this.#touched].map((k) => Buffer.from(k, 'latin1'));
    this.#touched.clear(); // a walk of every path, or of these: nothing else gained revisions since
    const choose: ChooseDrops = (group, isHead) => versionsToDrop(policy, group, isHead, nowMs);
    const result = this.#drop((store) => pruneHistories(store, choose, keys));
    if (all) this.#fullGcAtMs = nowMs;
    return result;
  }

  /** The `nowMs` of this object's last gc of every path (gcWith), if it ran one. */
  get fullGcAtMs(): number | undefined {
    return this.#fullGcAtMs;
  }

  /** Runs a prune in one write transaction, then takes what it dropped out of the Merkle set. */
  #drop(prune: (store: PruneStore) => Pruned): GcResult {
    const { dropped, released } = this.#txn(() => {
      const result = prune({ db: this.#db, dir: this.dir });
      if (result.dropped.length > 0) this.#bumpIdChanges();
      return result;
    });
    for (const id of dropped) this.#ids.delete(id);
    return { removedRevisions: dropped.length, releasedContentRoots: released };
  }

  /**
   * Checks the store's invariants and returns what is wrong (empty when consistent): every head
   * and history entry names a stored revision of that path; every revision is in its path's
   * history exactly once and hashes to its id; content-root reference counts match; the local
   * counter is at least every counter of this node in a stored vector; the live-head count is
   * right; every warm entry is certified for its path's head, a live file; the in-memory Merkle
   * set holds exactly the stored ids. O(N): for tests and `doctor`, not the hot path.
   */
  checkInvariants(): string[] {
    this.#checkOpen();
    return revlogProblems({
      db: this.#db,
      nodeId: this.nodeId,
      ids: this.#ids,
      get: (id) => this.#get(id),
      liveHeadCount: () => this.liveHeadCount(),
      localCounter: () => this.localCounter(),
    });
  }

  /** Closes the environment; the store cannot be used afterwards. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#env.close();
  }

  /** One write transaction; a failed commit (a full disk) as an IO error naming the log. */
  #txn<T>(fn: () => T): T {
    return revlogTransaction(this.#env, this.dir, fn);
  }

  #checkOpen(): void {
    if (this.#closed) throw new TypeError('revision store is closed');
  }

  #get(id: Uint8Array): RevisionEntry | undefined {
    const encoded = this.#db.revs.get(Buffer.from(id.buffer, id.byteOffset, id.byteLength));
    if (encoded === undefined) return undefined;
    let revision: Revision;
    try {
      revision = decodeRevision(encoded);
    } catch (err) {
      throw corrupt(this.dir, `revision ${toHex(id)} does not decode`, err);
    }
    return { id: Uint8Array.from(id), revision, encoded };
  }

  #head(relPath: string): RevisionEntry | undefined {
    const id = this.#db.heads.get(pathKey(relPath));
    if (id === undefined) return undefined;
    const entry = this.#get(id);
    if (entry === undefined) throw corrupt(this.dir, `head of ${relPath} (${toHex(id)}) is not a stored revision`);
    return entry;
  }

  #pathVector(pk: Buffer): VersionVector {
    return this.#storedPathVector(pk) ?? EMPTY_VECTOR;
  }

  #storedPathVector(pk: Buffer): VersionVector | undefined {
    const v = this.#db.pathVectors.get(pk);
    return v === undefined ? undefined : decodeVector(v);
  }
}
