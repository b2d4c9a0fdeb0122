// The on-disk format of the revision log (revision-store.ts): its databases, key and value
// encodings, opening an environment at this format, and the upgrade from format 1.
//
// Layout: one environment per folder at `<folder>/.clawpeer/revlog/` (data.mdb, lock.mdb), with
// named databases, binary keys and values (integers big-endian so keys sort numerically):
//   revs         id (32)                      -> canonical revision record (sync/revision.ts)
//   heads        pathKey (32)                 -> head revision id (32)
//   history      pathKey (32) | seq (u64)     -> revision id (32); seq is store-wide arrival order
//   pathvectors  pathKey (32)                 -> merge of the vectors of every revision ever
//                                                stored for the path (survives gc, so a new
//                                                local edit dominates everything seen)
//   roots        content root (32)            -> u32 number of stored revisions referencing it
//   warmfiles    dirKey (32) | UTF-8 name     -> head id (32) | size u64 | mtimeNs i64 | ino u64 | dev u64
//                                                | mode u32
//   pruned       id (32)                      -> empty: a revision gc dropped here or a peer said it
//                                                dropped; never stored again, so gc converges
//   meta         ascii name                   -> 'format', 'counter', 'seq', 'liveheads': each a u64;
//                                                'node': the id of the node that syncs the folder
//                                                (ASCII; `restore` records its edit as that node's);
//                                                'peer': the peer and share it last synced with
//                                                (ASCII 'NODEID:SHARE'; where `restore` fetches from)
// pathKey = BLAKE3(UTF-8 path): paths reach 4096 bytes, LMDB keys stop at ~2 KB.
// dirKey = pathKey of the file's directory ('' for the folder's top). A warm key is built from
// one hash per directory, not one per file: a no-op scan of 10,000 files spent ~45 ms hashing
// paths. A name is at most 255 bytes (MAX_PATH_SEGMENT_BYTES), so the key fits.
// A warm entry is removed whenever its path's head moves (setHead), so an entry that exists is
// certified for the current head, which is a live file: the scan reads it alone, not the head.
// Format 1 kept warm entries under pathKey in 'warm' and had no 'liveheads'; open() upgrades it
// in one transaction (the entries move, nothing is re-hashed).

import { statfsSync, type BigIntStats } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { constants } from 'node:os';
import type { Database, RootDatabase } from 'lmdb';
import { BLAKE3_OUT_BYTES, blake3, bytesEqual, toHex } from '../chunking/blake3.js';
import { ClawpeerError, isClawpeerError } from '../errors.js';
import { MerkleIdSet } from '../sync/merkle-root.js';
import { decodeRevision } from '../sync/revision.js';
import { MAX_PATH_SEGMENT_BYTES } from '../transfer/paths.js';

// lmdb (~80-150 ms to load) starts loading with this module, as the static import did, but as a
// dynamic import: a bundle that inlines this module lazily (scripts/bundle-cli.mjs's run
// files) would hoist a static one to its top and load lmdb in every push. The catch marks the
// promise handled; openRevlog awaits it and so still sees a failure.
const lmdb = import('lmdb');
lmdb.catch(() => undefined);

/** Directory of the LMDB environment inside `.clawpeer/`. */
export const REVLOG_DIR_NAME = 'revlog';
/** On-disk layout version; a store with another is refused rather than misread. */
export const REVLOG_FORMAT_VERSION = 2;
/** The layout open() upgrades in place. */
export const REVLOG_FORMAT_V1 = 1;
export const MAX_DBS = 12;
const SEQ_BYTES = 8;
export const WARM_VALUE_BYTES = BLAKE3_OUT_BYTES + 8 + 8 + 8 + 8 + 4;
export const META_FORMAT = Buffer.from('format', 'latin1');
export const META_COUNTER = Buffer.from('counter', 'latin1');
export const META_SEQ = Buffer.from('seq', 'latin1');
export const META_LIVE_HEADS = Buffer.from('liveheads', 'latin1');
/**
 * Bumped by every transaction that adds or drops ids, so a store kept open in a long-lived
 * process can tell that another process changed the id set under it (isCurrent).
 */
export const META_ID_CHANGES = Buffer.from('idchanges', 'latin1');
/** The node that syncs this folder (recordSyncingNode): what `restore` without --home goes by. */
export const META_NODE = Buffer.from('node', 'latin1');
/** The peer and share the folder last synced with (recordSyncingPeer): where `restore` fetches from. */
export const META_PEER = Buffer.from('peer', 'latin1');
/** What a sync is about to publish, while it does (folder-sync/pending-landings.ts). */
export const META_LANDINGS = Buffer.from('landings', 'latin1');
/** Longest warm key: a directory key and a name of MAX_PATH_SEGMENT_BYTES. */
export const WARM_KEY_MAX_BYTES = BLAKE3_OUT_BYTES + MAX_PATH_SEGMENT_BYTES;

/**
 * The stat fields that say a file is unchanged since it was hashed, and its permission bits
 * (chmod moves ctime, not mtime). Certified for a head that is a live file with this mode, so
 * a matching entry answers "unchanged" without decoding the head.
 */
export interface WarmStat {
  readonly size: number;
  readonly mtimeNs: bigint;
  readonly ino: bigint;
  readonly dev: bigint;
  readonly mode: number;
}

/** A file's lstat as the warm index keeps it. */
export function warmStatOf(st: BigIntStats): WarmStat {
  return { size: Number(st.size), mtimeNs: st.mtimeNs, ino: st.ino, dev: st.dev, mode: Number(st.mode) & 0o7777 };
}

// A scan or an apply looks one path up several times (head, warm, vector, history), and a sync
// looks each received path up again in later phases (the heads before, the plan, the log write,
// the changes counted): remember the keys rather than hash the path each time. Sized for a
// first sync of 10,000 files to hash each path once (at 1,024 it hashed each 4-5 times);
// ~200 bytes an entry, emptied whole when full.
const PATH_KEY_CACHE_MAX = 16_384;
const pathKeyCache = new Map<string, Buffer>();

/** BLAKE3 of the UTF-8 path, as a Buffer view of the digest (no copy). */
export function hashPath(relPath: string): Buffer {
  const digest = blake3(Buffer.from(relPath, 'utf8'));
  return Buffer.from(digest.buffer, digest.byteOffset, digest.byteLength);
}

export function pathKey(relPath: string): Buffer {
  const cached = pathKeyCache.get(relPath);
  if (cached !== undefined) return cached;
  const key = hashPath(relPath);
  if (pathKeyCache.size >= PATH_KEY_CACHE_MAX) pathKeyCache.clear();
  pathKeyCache.set(relPath, key);
  return key;
}

/**
 * The warm index key of `relPath`: its directory's path key, then its name. Written into `out`
 * when given (a scan reuses one buffer); the result is a view of it.
 */
export function warmKey(relPath: string, out: Buffer = Buffer.allocUnsafe(WARM_KEY_MAX_BYTES)): Buffer {
  const slash = relPath.lastIndexOf('/');
  out.set(pathKey(slash < 0 ? '' : relPath.slice(0, slash)), 0);
  const name = slash < 0 ? relPath : relPath.slice(slash + 1);
  const n = out.write(name, BLAKE3_OUT_BYTES, 'utf8');
  // write() stops before a character that does not fit, without saying so: a name that came
  // within a character (up to 4 bytes) of the end may have been cut.
  if (n > MAX_PATH_SEGMENT_BYTES - 4 && Buffer.byteLength(name, 'utf8') !== n) {
    throw new TypeError(`warm key: the name of ${relPath} is longer than ${MAX_PATH_SEGMENT_BYTES} bytes`);
  }
  return out.subarray(0, BLAKE3_OUT_BYTES + n);
}

export function u64(n: number | bigint): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(n));
  return b;
}

export function readU64(b: Uint8Array | undefined): number {
  if (b === undefined) return 0;
  return Number(Buffer.from(b.buffer, b.byteOffset, b.byteLength).readBigUInt64BE(0));
}

/** A warm entry: the head id it is certified for, then size, mtimeNs, ino, dev (u64 BE) and mode (u32 BE). */
export function encodeWarm(headId: Uint8Array, stat: WarmStat): Buffer {
  if (headId.length !== BLAKE3_OUT_BYTES) throw new TypeError(`warm entry: head id of ${headId.length} bytes`);
  // From the shared pool (a value lmdb need not take the address of), every byte written here.
  const v = Buffer.allocUnsafe(WARM_VALUE_BYTES);
  v.set(headId, 0);
  return encodeWarmStat(stat, v);
}

/** Writes the stat part of a warm entry (after the head id) into `v`. */
export function encodeWarmStat(stat: WarmStat, v: Buffer): Buffer {
  let o = BLAKE3_OUT_BYTES;
  v.writeBigUInt64BE(BigInt(stat.size), o);
  v.writeBigInt64BE(stat.mtimeNs, (o += 8));
  v.writeBigUInt64BE(stat.ino, (o += 8));
  v.writeBigUInt64BE(stat.dev, (o += 8));
  v.writeUInt32BE(stat.mode, (o += 8));
  return v;
}

/** Less free space than this where a write of the log failed with EIO: the disk was full. */
const FULL_BELOW_BYTES = 1 << 20;

function freeBytes(dir: string): number {
  try {
    const s = statfsSync(dir);
    return s.bavail * s.bsize;
  } catch {
    return Infinity;
  }
}

/**
 * A failed write of the log at `dir`: LMDB throws a plain Error with the errno as a number in
 * `code` (a commit on a full disk: "No space left on device: Attempting to write page ..."),
 * which the listener took for a bug of its own ("internal error serving peer") and answered by
 * dropping the connection. As an IO error it names the cause, like the data plane's "the disk
 * is full", and reaches the peer and `status`. Anything else is returned as it is.
 */
export function revlogWriteError(dir: string, err: unknown): unknown {
  if (isClawpeerError(err) || !(err instanceof Error)) return err;
  const code = (err as { code?: unknown }).code;
  if (typeof code !== 'number') return err;
  const { ENOSPC, EDQUOT, EROFS, EIO } = constants.errno;
  // A page write cut short by a full disk is EIO to LMDB (it checks the count pwrite wrote).
  const full = code === ENOSPC || code === EDQUOT || (code === EIO && freeBytes(dir) < FULL_BELOW_BYTES);
  const why = full ? 'the disk is full' : code === EROFS ? 'the file system is read-only' : err.message;
  return new ClawpeerError('IO', `cannot write the revision log in ${dir}: ${why}`, { cause: err });
}

/** One write transaction of the log at `dir`: a failed commit (a full disk) as revlogWriteError says. */
export function revlogTransaction<T>(env: RootDatabase<Buffer, Buffer>, dir: string, fn: () => T): T {
  try {
    return env.transactionSync(fn);
  } catch (err) {
    throw revlogWriteError(dir, err);
  }
}

export function corrupt(dir: string, detail: string, cause?: unknown): ClawpeerError {
  return new ClawpeerError(
    'IO',
    `revision log in ${dir} is corrupt: ${detail}`,
    cause === undefined ? undefined : { cause },
  );
}

export function historyKey(pk: Uint8Array, seq: number): Buffer {
  const key = Buffer.alloc(BLAKE3_OUT_BYTES + SEQ_BYTES);
  key.set(pk, 0);
  key.writeBigUInt64BE(BigInt(seq), BLAKE3_OUT_BYTES);
  return key;
}

/** Range bounds covering every history key of one path. */
export function historyRange(pk: Uint8Array): { start: Buffer; end: Buffer } {
  const start = Buffer.alloc(BLAKE3_OUT_BYTES + SEQ_BYTES);
  start.set(pk, 0);
  const end = Buffer.alloc(BLAKE3_OUT_BYTES + SEQ_BYTES, 0xff);
  end.set(pk, 0);
  return { start, end };
}

/**
 * Format 1 -> 2, inside the caller's write transaction: counts the live heads and moves each
 * warm entry that is still certified for its path's head from the pathKey-keyed `oldWarm` to
 * the directory-keyed index (the others would never match again), then empties `oldWarm`.
 */
export function upgradeFromV1(dir: string, db: Dbs, oldWarm: Database<Buffer, Buffer>): void {
  let live = 0;
  for (const { key: pk, value: headId } of [...db.heads.getRange()]) {
    const encoded = db.revs.get(headId);
    if (encoded === undefined) throw corrupt(dir, `head ${toHex(headId)} is not a stored revision`);
    const rev = decodeRevision(encoded);
    if (rev.deleted) continue;
    live++;
    const w = oldWarm.get(pk);
    if (
      rev.kind !== 'file' ||
      w === undefined ||
      w.length !== WARM_VALUE_BYTES ||
      !bytesEqual(w.subarray(0, BLAKE3_OUT_BYTES), headId)
    )
      continue;
    if (w.readUInt32BE(WARM_VALUE_BYTES - 4) !== rev.mode) continue;
    db.warm.putSync(warmKey(rev.path), Buffer.from(w));
  }
  oldWarm.clearSync();
  db.meta.putSync(META_LIVE_HEADS, u64(live));
  db.meta.putSync(META_FORMAT, u64(REVLOG_FORMAT_VERSION));
}

export interface Dbs {
  readonly revs: Database<Buffer, Buffer>;
  readonly heads: Database<Buffer, Buffer>;
  readonly history: Database<Buffer, Buffer>;
  readonly pathVectors: Database<Buffer, Buffer>;
  readonly roots: Database<Buffer, Buffer>;
  readonly warm: Database<Buffer, Buffer>;
  readonly pruned: Database<Buffer, Buffer>;
  readonly meta: Database<Buffer, Buffer>;
}

/** An open revision log: its environment, databases, the Merkle set of its ids, META_ID_CHANGES as read with them. */
export interface OpenRevlog {
  readonly env: RootDatabase<Buffer, Buffer>;
  readonly db: Dbs;
  readonly ids: MerkleIdSet;
  readonly idChanges: number;
}

/**
 * Opens (creating if needed) the environment at `dir`, at this format (upgrading format 1), and
 * rebuilds the Merkle set from the stored ids (one key scan: ~32 bytes per revision read).
 * Throws ClawpeerError IO when it cannot be opened or has another format.
 */
export async function openRevlog(dir: string): Promise<OpenRevlog> {
  const { open } = await lmdb;
  let env: RootDatabase<Buffer, Buffer>;
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    // lmdb-js makes data.mdb and lock.mdb 0664 unless told otherwise (an option its typings omit).
    const privateFiles: Record<string, unknown> = { permissionsMode: 0o600 };
    env = open<Buffer, Buffer>({
      path: dir,
      noSubdir: false,
      maxDbs: MAX_DBS,
      encoding: 'binary',
      keyEncoding: 'binary',
      ...privateFiles,
    });
  } catch (err) {
    throw new ClawpeerError(
      'IO',
      `cannot open the revision log in ${dir}: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
  const sub = (name: string): Database<Buffer, Buffer> =>
    env.openDB<Buffer, Buffer>({ name, encoding: 'binary', keyEncoding: 'binary' });
  try {
    const db: Dbs = {
      revs: sub('revs'),
      heads: sub('heads'),
      history: sub('history'),
      pathVectors: sub('pathvectors'),
      roots: sub('roots'),
      warm: sub('warmfiles'),
      pruned: sub('pruned'),
      meta: sub('meta'),
    };
    const format = db.meta.get(META_FORMAT);
    const txn = (fn: () => void): void => revlogTransaction(env, dir, fn);
    if (format === undefined) {
      txn(() => {
        if (db.meta.get(META_FORMAT) === undefined) db.meta.putSync(META_FORMAT, u64(REVLOG_FORMAT_VERSION));
      });
    } else if (readU64(format) === REVLOG_FORMAT_V1) {
      txn(() => {
        if (readU64(db.meta.get(META_FORMAT)) === REVLOG_FORMAT_V1) upgradeFromV1(dir, db, sub('warm'));
      });
    } else if (readU64(format) !== REVLOG_FORMAT_VERSION) {
      throw corrupt(
        dir,
        `layout version ${readU64(format)}, this version of clawpeer reads ${REVLOG_FORMAT_V1} and ${REVLOG_FORMAT_VERSION}`,
      );
    }
    // Read before the ids: a change committed in between makes the store look stale, never current.
    const idChanges = readU64(db.meta.get(META_ID_CHANGES));
    const count = db.revs.getKeysCount();
    const packed = new Uint8Array(count * BLAKE3_OUT_BYTES);
    let o = 0;
    for (const key of db.revs.getKeys({ snapshot: true })) {
      if (key.length !== BLAKE3_OUT_BYTES || o >= packed.length)
        throw corrupt(dir, 'a revision key is not a 32-byte id');
      packed.set(key, o);
      o += BLAKE3_OUT_BYTES;
    }
    const ids = MerkleIdSet.fromPacked(packed.subarray(0, o));
    return { env, db, ids, idChanges };
  } catch (err) {
    await env.close();
    throw err;
  }
}
