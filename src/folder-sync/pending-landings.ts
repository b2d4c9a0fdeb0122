// A sync's durable note of what it is about to publish, so a sync killed mid-transfer (SIGKILL,
// power loss) does not leave the peer's files for the next scan to record as this node's
// creations (wrong history, keep-last versions, every file sent back, and directories whose
// revision by this node outranks the peer's).
//
// applyRemote writes the note in one log transaction before anything lands: per conflict unit
// that only fetches files, makes directories or stores records (no conflict copy, deletion,
// link, mode change or type change), each path's head before the sync, the peer's records it
// will store, the new head and, for a file, the mtime the publisher sets. The transaction that
// records the heads (or recordLanded's, after a failure in-process) clears it. Left behind, it
// is read by the next scan before it looks at anything (scanFolder calls recoverLandings): a
// unit is recorded as the sync would have recorded it when every path of it still has the head
// it had then and holds exactly what the sync published (a file: size, mode, the mtime set to
// the ms, and the content root hashed; a directory: a directory inside the folder, given the
// head's mode as recordLanded does). Anything else (a file not there yet, half a unit, a user's
// edit since: another mtime or other bytes) is left to the scan as before, and the next sync
// receives the peer's records again. The note is cleared in the same transaction, whatever was
// recovered: it never outlives one scan.
//
// Crash safety: LMDB commits are atomic, so the note is either there whole or not at all; it is
// written before the first rename into the folder and cleared only with (or after) the records
// it stands for; a kill during recovery leaves the note, and the next scan does it again.
// Non-goals: units with conflict copies, deletions or links (the scan records what a kill left
// of those, as before), resuming the transfer itself.
import { chmodSync, lstatSync, realpathSync, type BigIntStats } from 'node:fs';
import path from 'node:path';
import { bytesEqual } from '../chunking/blake3.js';
import type { ChunkingParams } from '../chunking/fastcdc.js';
import { manifestFromFile } from '../file-chunking/file-chunker.js';
import type { Logger } from '../logger.js';
import { isRacy, sameFileKey, fileKeyOf } from '../store/file-key.js';
import type { RevisionStore } from '../store/revision-store.js';
import { warmStatOf, type WarmStat } from '../store/revlog-format.js';
import { decodeRevisionWithId, floorMs, type RevisionEntry } from '../sync/revision.js';
import { isConfinedRealpath } from '../transfer/paths.js';
import { typeChangeOf, type PathPlan } from './sync-plan.js';

// The note is binary: ids and encoded records as they are (a JSON note with hex ids and base64
// records was ~4 MB and ~70 ms to build for 10,000 files, on the applying side while the peer waits).
//   u8 version, u32 units, per unit: u32 paths, per path:
//     u32 path length, path (UTF-8), u8 flags (ACTION_BITS: the action; HAS_LOCAL, HAS_HEAD, HAS_MS),
//     [u8 length, old head id], [u8 length, new head id], [f64 mtime ms], u32 records,
//     per record: u8 id length, id, u32 encoding length, encoding.
const NOTE_VERSION = 2;
const ACTIONS = ['none', 'fetch', 'mkdir'] as const;
const ACTION_BITS = 0b11;
const HAS_LOCAL = 0b100;
const HAS_HEAD = 0b1000;
const HAS_MS = 0b10000;

/** One path of a noted unit. */
interface NotedPath {
  readonly path: string;
  /** Its head's id before the sync, or undefined: none. */
  readonly local: Uint8Array | undefined;
  /** The new head's id, or undefined: the head stays. */
  readonly head: Uint8Array | undefined;
  /** What lands there: a fetched file, a directory, or nothing (records only). */
  readonly action: (typeof ACTIONS)[number];
  /** A fetched file's mtime as the publisher sets it, ms. */
  readonly mtimeMs: number | undefined;
  /** The records stored for it: [id, encoded]. */
  readonly records: readonly (readonly [Uint8Array, Uint8Array])[];
}

/** The plans of the units a kill can leave for the disk alone to tell (the header's simple units). */
function notedUnits(plans: readonly PathPlan[]): PathPlan[][] {
  const byUnit = new Map<number, PathPlan[]>();
  for (const p of plans) {
    const list = byUnit.get(p.unit);
    if (list === undefined) byUnit.set(p.unit, [p]);
    else list.push(p);
  }
  const units: PathPlan[][] = [];
  for (const unit of byUnit.values()) {
    const simple = unit.every(
      (p) =>
        p.copy === undefined &&
        typeChangeOf(p) === undefined &&
        (p.action.kind === 'none' ||
          ((p.action.kind === 'fetch' || p.action.kind === 'mkdir') && p.head !== undefined)),
    );
    if (simple && unit.some((p) => p.action.kind !== 'none')) units.push(unit);
  }
  return units;
}

/**
 * The note of `plans` (the plans about to land), or undefined when no unit of them can be
 * recovered from the disk alone (nothing to write).
 */
export function landingsNote(plans: readonly PathPlan[]): Uint8Array | undefined {
  const units = notedUnits(plans);
  if (units.length === 0) return undefined;
  let size = 1 + 4;
  for (const unit of units) {
    size += 4;
    for (const p of unit) {
      size += 4 + Buffer.byteLength(p.path, 'utf8') + 1 + 4;
      if (p.local !== undefined) size += 1 + p.local.id.length;
      if (p.head !== undefined) size += 1 + p.head.id.length;
      if (p.action.kind === 'fetch') size += 8;
      for (const r of p.records) size += 1 + r.id.length + 4 + r.encoded.length;
    }
  }
  const out = Buffer.allocUnsafe(size);
  let at = out.writeUInt8(NOTE_VERSION, 0);
  const bytes = (b: Uint8Array, lengthBytes: 1 | 4): void => {
    at = lengthBytes === 1 ? out.writeUInt8(b.length, at) : out.writeUInt32BE(b.length, at);
    out.set(b, at);
    at += b.length;
  };
  at = out.writeUInt32BE(units.length, at);
  for (const unit of units) {
    at = out.writeUInt32BE(unit.length, at);
    for (const p of unit) {
      const pathLength = out.write(p.path, at + 4, 'utf8');
      out.writeUInt32BE(pathLength, at);
      at += 4 + pathLength;
      const a = p.action;
      const kind = ACTIONS.indexOf(a.kind as NotedPath['action']);
      const flags =
        kind |
        (p.local === undefined ? 0 : HAS_LOCAL) |
        (p.head === undefined ? 0 : HAS_HEAD) |
        (a.kind === 'fetch' ? HAS_MS : 0);
      at = out.writeUInt8(flags, at);
      if (p.local !== undefined) bytes(p.local.id, 1);
      if (p.head !== undefined) bytes(p.head.id, 1);
      if (a.kind === 'fetch') at = out.writeDoubleBE(a.request.mtimeMs, at);
      at = out.writeUInt32BE(p.records.length, at);
      for (const r of p.records) {
        bytes(r.id, 1);
        bytes(r.encoded, 4);
      }
    }
  }
  if (at !== size) throw new Error(`landings note: wrote ${at} of ${size} bytes`);
  return out;
}

/**
 * Writes the note of `plans` (about to land) in `store`, if any unit of them needs one. True when
 * it was written. A log that cannot take it (a full disk) fails no sync: a kill then leaves what
 * landed to the scan, as before.
 */
export function noteLandings(store: RevisionStore, plans: readonly PathPlan[], log: Logger): boolean {
  const note = landingsNote(plans);
  if (note === undefined) return false;
  try {
    store.write((w) => w.setLandings(note));
    return true;
  } catch (err) {
    log.warn('sync: cannot note what is about to land; a kill now leaves it to the next scan', {
      error: (err as Error).message,
    });
    return false;
  }
}

/**
 * A directory the publisher made at `abs` (in the folder `root`), given `mode` as a sync's mkdir
 * step would: true when it is a directory inside the folder that now has exactly `headMode`
 * (what the head records). Shared by recordLanded (sync-apply.ts) and the recovery below.
 */
export function dirTakesHeadMode(root: string, abs: string, mode: number, headMode: number): boolean {
  try {
    if (lstatSync(abs, { throwIfNoEntry: false })?.isDirectory() !== true) return false;
    if (!isConfinedRealpath(root, realpathSync(abs))) return false;
    chmodSync(abs, mode & 0o777);
    return (lstatSync(abs).mode & 0o7777) === headMode;
  } catch {
    return false;
  }
}

/** The units of a note, or undefined when it is not one this version wrote (ignored: the scan decides). */
function parseNote(note: Uint8Array): NotedPath[][] | undefined {
  const b = Buffer.from(note.buffer, note.byteOffset, note.byteLength);
  let at = 0;
  const take = (n: number): Buffer => {
    if (at + n > b.length) throw new RangeError('truncated');
    at += n;
    return b.subarray(at - n, at);
  };
  const u8 = (): number => take(1).readUInt8(0);
  const u32 = (): number => take(4).readUInt32BE(0);
  try {
    if (u8() !== NOTE_VERSION) return undefined;
    const units: NotedPath[][] = [];
    for (let u = u32(); u > 0; u--) {
      const unit: NotedPath[] = [];
      for (let n = u32(); n > 0; n--) {
        const notedPath = take(u32()).toString('utf8');
        const flags = u8();
        const action = ACTIONS[flags & ACTION_BITS];
        if (action === undefined) return undefined;
        const local = (flags & HAS_LOCAL) !== 0 ? take(u8()) : undefined;
        const head = (flags & HAS_HEAD) !== 0 ? take(u8()) : undefined;
        const mtimeMs = (flags & HAS_MS) !== 0 ? take(8).readDoubleBE(0) : undefined;
        const records: [Uint8Array, Uint8Array][] = [];
        for (let r = u32(); r > 0; r--) records.push([take(u8()), take(u32())]);
        unit.push({ path: notedPath, local, head, action, mtimeMs, records });
      }
      units.push(unit);
    }
    return at === b.length ? units : undefined;
  } catch {
    return undefined;
  }
}

/** What one noted path recovers: its records, its new head, the warm entry of its file. */
interface Recovered {
  readonly path: string;
  readonly records: RevisionEntry[];
  readonly head: Uint8Array | undefined;
  readonly warm: WarmStat | undefined;
}

/** `np` as the sync left it on disk, or undefined when it is not exactly what the sync published. */
async function recoverPath(
  np: NotedPath,
  store: RevisionStore,
  root: string,
  chunking: ChunkingParams,
  nowNs: bigint,
): Promise<Recovered | undefined> {
  const before = store.headId(np.path);
  const unmoved =
    before === undefined ? np.local === undefined : np.local !== undefined && bytesEqual(before, np.local);
  if (!unmoved) return undefined; // recorded otherwise since
  const records = np.records.map(([id, enc]) => decodeRevisionWithId(enc, id));
  const headId = np.head;
  const out = { path: np.path, records, head: headId, warm: undefined };
  if (np.action === 'none') return out;
  const head = records.find((e) => headId !== undefined && bytesEqual(e.id, headId))?.revision;
  if (head === undefined || head.deleted) return undefined;
  const abs = path.join(root, ...head.path.split('/'));
  const st = lstatSync(abs, { bigint: true, throwIfNoEntry: false });
  if (st === undefined) return undefined;
  if (np.action === 'mkdir')
    return head.kind === 'dir' && dirTakesHeadMode(root, abs, head.mode, head.mode) ? out : undefined;
  const warm = warmStatOf(st);
  if (
    head.kind !== 'file' ||
    !st.isFile() ||
    warm.size !== head.size ||
    warm.mode !== head.mode ||
    floorMs(st.mtimeNs) !== np.mtimeMs
  )
    return undefined;
  const manifest = await manifestFromFile(abs, chunking, { sizeHint: warm.size });
  const after: BigIntStats = lstatSync(abs, { bigint: true });
  if (!bytesEqual(manifest.root, head.contentRoot) || !sameFileKey(fileKeyOf(after), fileKeyOf(st))) return undefined;
  return { ...out, warm: isRacy(st.mtimeNs, nowNs) ? undefined : warm };
}

/**
 * Records what a sync cut short had published (see the header), and clears its note. Returns the
 * number of paths recorded. Never throws for what it finds on disk: a path it cannot look at
 * is left to the scan.
 */
export async function recoverLandings(
  store: RevisionStore,
  root: string,
  chunking: ChunkingParams,
  nowNs: bigint,
  log?: Logger,
): Promise<number> {
  const bytes = store.pendingLandings();
  if (bytes === undefined) return 0;
  const note = parseNote(bytes);
  const recovered: Recovered[] = [];
  for (const unit of note ?? []) {
    const paths: Recovered[] = [];
    for (const np of unit) {
      const r = await recoverPath(np, store, root, chunking, nowNs).catch(() => undefined);
      if (r === undefined) break;
      paths.push(r);
    }
    if (paths.length === unit.length) recovered.push(...paths);
  }
  store.write((w) => {
    for (const r of recovered) {
      for (const e of r.records) w.put(e);
      if (r.head !== undefined) w.setHead(r.head);
      if (r.warm !== undefined) w.setWarm(r.path, r.warm);
    }
    w.setLandings(undefined);
  });
  if (recovered.length > 0)
    log?.info('sync: recorded what a sync cut short had published', { paths: recovered.length });
  return recovered.length;
}
