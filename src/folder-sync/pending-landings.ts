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
import { bytesEqual, fromHex } from '../chunking/blake3.js';
import type { ChunkingParams } from '../chunking/fastcdc.js';
import { manifestFromFile } from '../file-chunking/file-chunker.js';
import type { Logger } from '../logger.js';
import { isRacy, sameFileKey, fileKeyOf } from '../store/file-key.js';
import type { RevisionStore } from '../store/revision-store.js';
import { warmStatOf, type WarmStat } from '../store/revlog-format.js';
import { decodeRevisionWithId, floorMs, type RevisionEntry } from '../sync/revision.js';
import { isConfinedRealpath } from '../transfer/paths.js';
import { typeChangeOf, type PathPlan } from './sync-plan.js';

const NOTE_VERSION = 1;

/** Hex of `bytes` (Buffer's: a note of 10,000 files is 30,000 of these). */
const hex = (bytes: Uint8Array): string =>
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
const base64 = (bytes: Uint8Array): string =>
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');

/** One path of a noted unit, as JSON: ids hex, records base64. */
interface NotedPath {
  /** The path. */
  readonly p: string;
  /** Its head's id before the sync (hex), or null. */
  readonly l: string | null;
  /** The new head's id (hex), or null: the head stays. */
  readonly h: string | null;
  /** What lands there: a fetched file, a directory, or nothing (records only). */
  readonly a: 'fetch' | 'mkdir' | 'none';
  /** A fetched file's mtime as the publisher sets it, ms. */
  readonly ms?: number;
  /** The records stored for it: [id hex, encoded base64]. */
  readonly r: readonly (readonly [string, string])[];
}

interface Note {
  readonly v: number;
  readonly units: readonly (readonly NotedPath[])[];
}

/**
 * The note of `plans` (the plans about to land), or undefined when no unit of them can be
 * recovered from the disk alone (nothing to write).
 */
export function landingsNote(plans: readonly PathPlan[]): Uint8Array | undefined {
  const byUnit = new Map<number, PathPlan[]>();
  for (const p of plans) {
    const list = byUnit.get(p.unit);
    if (list === undefined) byUnit.set(p.unit, [p]);
    else list.push(p);
  }
  const units: NotedPath[][] = [];
  for (const unit of byUnit.values()) {
    const simple = unit.every(
      (p) =>
        p.copy === undefined &&
        typeChangeOf(p) === undefined &&
        (p.action.kind === 'none' ||
          ((p.action.kind === 'fetch' || p.action.kind === 'mkdir') && p.head !== undefined)),
    );
    if (!simple || !unit.some((p) => p.action.kind !== 'none')) continue;
    units.push(
      unit.map((p) => ({
        p: p.path,
        l: p.local === undefined ? null : hex(p.local.id),
        h: p.head === undefined ? null : hex(p.head.id),
        a: p.action.kind as NotedPath['a'],
        ...(p.action.kind === 'fetch' ? { ms: p.action.request.mtimeMs } : {}),
        r: p.records.map((e) => [hex(e.id), base64(e.encoded)] as const),
      })),
    );
  }
  if (units.length === 0) return undefined;
  const note: Note = { v: NOTE_VERSION, units };
  return Buffer.from(JSON.stringify(note), 'utf8');
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

function parseNote(bytes: Uint8Array): Note | undefined {
  try {
    const note = JSON.parse(Buffer.from(bytes).toString('utf8')) as Note;
    return note.v === NOTE_VERSION && Array.isArray(note.units) ? note : undefined;
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
  const before = store.headId(np.p);
  if ((before === undefined ? null : hex(before)) !== np.l) return undefined; // recorded otherwise since
  const records = np.r.map(([id, enc]) => decodeRevisionWithId(Buffer.from(enc, 'base64'), fromHex(id)));
  const headId = np.h === null ? undefined : fromHex(np.h);
  const out = { path: np.p, records, head: headId, warm: undefined };
  if (np.a === 'none') return out;
  const head = records.find((e) => headId !== undefined && bytesEqual(e.id, headId))?.revision;
  if (head === undefined || head.deleted) return undefined;
  const abs = path.join(root, ...head.path.split('/'));
  const st = lstatSync(abs, { bigint: true, throwIfNoEntry: false });
  if (st === undefined) return undefined;
  if (np.a === 'mkdir')
    return head.kind === 'dir' && dirTakesHeadMode(root, abs, head.mode, head.mode) ? out : undefined;
  const warm = warmStatOf(st);
  if (
    head.kind !== 'file' ||
    !st.isFile() ||
    warm.size !== head.size ||
    warm.mode !== head.mode ||
    floorMs(st.mtimeNs) !== np.ms
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
  for (const unit of note?.units ?? []) {
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
