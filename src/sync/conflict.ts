// What to do when a peer's revision of a path meets ours: keep ours, take theirs, or keep both.
//
// Goals: a pure decision that both peers compute identically from the same two revisions, so
// they converge on the same head without another message; nothing silently lost (a concurrent
// edit that loses is kept beside the winner under a conflict name; an edit always beats a
// deletion); conflict names that stay valid share paths. Non-goals: touching the file system
// (the driver renames/publishes), what is already at the conflict name (the driver resolves the
// copy against it as one more revision of that path: folder-sync/sync-apply.ts).
//
// The rule, for two revisions L (our head) and R (theirs) of one path:
//   1. same id, or R's vector is before or equal to L's: keep local (we have seen R).
//   2. R's vector is after L's: take remote (a plain fast-forward).
//   3. concurrent (neither has seen the other), pick a winner by, in order:
//      a. an edit beats a deletion: nothing a user wrote is lost to a delete on another machine,
//         and the deleted side has nothing to keep, so there is no conflict copy (Syncthing
//         resurrects the edited file the same way);
//      b. the later mtime wins (the last writer, as the user most likely expects);
//      c. equal mtimes: the smaller origin node id wins (Syncthing makes the device with the
//         larger id the conflicting one; any fixed order works, this one matches the tool users
//         know);
//      d. same origin and mtime (only a peer that reused a counter can produce this): the
//         smaller revision id wins, so the order is total and never depends on who asks.
//      If the two revisions leave the same content (sameContent), it is no conflict: the
//      winner's metadata is taken or kept and no copy is made. Otherwise the loser is kept as
//      `<stem>.sync-conflict-<YYYYMMDD-HHMMSS>-<short id>[.<ext>]` in the same directory, the
//      date being the loser's mtime in UTC and the short id its origin's (see shortNodeId).
// Both peers resolve every concurrent pair the same way, so after they exchange the loser's
// content each holds the winner at the path and the loser under the same conflict name.
//
// With three or more devices a pairwise decision against the present head can cycle, so the
// driver decides a path with pickHead over the set of all its revisions: the winner by the rule
// above among those no other revision has seen and no node has kept as a conflict copy yet
// (once a copy, a loser's fate is decided at the copy's path), every other such live file a
// conflict copy.

import { compareIds } from './merkle-root.js';
import { floorMs, sameContent } from './revision.js';
import type { Revision, RevisionEntry } from './revision.js';
import { compareVectors } from './version-vector.js';
import type { VectorOrder } from './version-vector.js';

export type ResolutionReason =
  | 'no-local' // we have no revision of this path
  | 'same-revision' // identical ids
  | 'local-newer' // L has seen R (R before or equal)
  | 'remote-newer' // R has seen L
  | 'edit-beats-delete' // concurrent, one side deleted
  | 'same-content' // concurrent, same content: metadata only
  | 'concurrent-edit'; // concurrent, different content: a conflict copy is kept

export type Resolution =
  | { readonly action: 'keep-local'; readonly reason: ResolutionReason; readonly order: VectorOrder | undefined }
  | { readonly action: 'take-remote'; readonly reason: ResolutionReason; readonly order: VectorOrder | undefined }
  | {
      readonly action: 'conflict';
      readonly reason: 'concurrent-edit';
      readonly order: 'concurrent';
      readonly winner: 'local' | 'remote';
      /** The losing revision, whose content goes to `loserPath`. */
      readonly loser: Revision;
      /** Share path the loser is kept under. */
      readonly loserPath: string;
    };

/** The prefix every real node id starts with (base58 of the libp2p Ed25519 key header). */
export const NODE_ID_COMMON_PREFIX = '12D3KooW';
/** Characters of a node id that go into conflict names. */
export const SHORT_NODE_ID_LENGTH = 7;
/** Marker that names a conflict copy. */
export const CONFLICT_MARKER = '.sync-conflict-';
const MAX_SEGMENT_BYTES = 255;
/** A share path's limit (transfer/paths.ts MAX_PATH_BYTES): a conflict copy's path must fit it too. */
const MAX_PATH_BYTES = 4096;

/**
 * The node id as short as conflict names carry it: the first 7 characters after the common
 * "12D3KooW" prefix (which every Ed25519 node id shares, so it tells nothing apart), or the
 * first 7 characters of an id without that prefix. 7 base58 characters are ~41 bits: enough to
 * tell the handful of machines sharing a folder apart by eye.
 */
export function shortNodeId(nodeId: string): string {
  const rest =
    nodeId.startsWith(NODE_ID_COMMON_PREFIX) && nodeId.length > NODE_ID_COMMON_PREFIX.length
      ? nodeId.slice(NODE_ID_COMMON_PREFIX.length)
      : nodeId;
  return rest.slice(0, SHORT_NODE_ID_LENGTH);
}

// Dates outside 0000..9999 would not fit YYYYMMDD: clamp to the range (only bogus mtimes).
const MIN_DATE_MS = new Date(0).setUTCFullYear(0, 0, 1);
const MAX_DATE_MS = Date.UTC(9999, 11, 31, 23, 59, 59);

function pad(n: number, width: number): string {
  return String(n).padStart(width, '0');
}

/** `YYYYMMDD-HHMMSS` of a time in ns since the epoch, UTC (seconds truncated). */
export function conflictTimestamp(mtimeNs: bigint): string {
  // Floor, so -1 ns is 1969-12-31 23:59:59, not 1970-01-01.
  const clamped = Math.min(MAX_DATE_MS, Math.max(MIN_DATE_MS, floorMs(mtimeNs)));
  const d = new Date(clamped);
  return (
    pad(d.getUTCFullYear(), 4) +
    pad(d.getUTCMonth() + 1, 2) +
    pad(d.getUTCDate(), 2) +
    '-' +
    pad(d.getUTCHours(), 2) +
    pad(d.getUTCMinutes(), 2) +
    pad(d.getUTCSeconds(), 2)
  );
}

function utf8Length(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

/** Cuts `s` to at most `maxBytes` of UTF-8 without splitting a code point. */
function truncateUtf8(s: string, maxBytes: number): string {
  let out = '';
  let bytes = 0;
  for (const ch of s) {
    const n = utf8Length(ch);
    if (bytes + n > maxBytes) break;
    out += ch;
    bytes += n;
  }
  return out;
}

/**
 * The name a losing revision is kept under: `dir/<stem>.sync-conflict-<date>-<short id>.<ext>`.
 * The extension is what follows the last dot of the file name, unless that dot is the first
 * character (a dotfile such as `.bashrc` has no extension: `.bashrc.sync-conflict-...`), so the
 * copy still opens with the same application. A name too long for one path segment (255 bytes)
 * (or a path too long for 4,096 bytes) has its stem shortened; trailing dots and spaces that
 * shortening exposes are dropped, since share paths refuse them.
 */
export function conflictPath(path: string, mtimeNs: bigint, origin: string): string {
  const slash = path.lastIndexOf('/');
  const dir = slash >= 0 ? path.slice(0, slash + 1) : '';
  const name = path.slice(slash + 1);
  const dot = name.lastIndexOf('.');
  const hasExt = dot > 0 && dot < name.length - 1;
  const stem = hasExt ? name.slice(0, dot) : name;
  const ext = hasExt ? name.slice(dot) : '';
  const suffix = `${CONFLICT_MARKER}${conflictTimestamp(mtimeNs)}-${shortNodeId(origin)}${ext}`;
  let keptStem = stem;
  // The whole path too: a copy of a path near 4,096 bytes was a path no log accepts, and every
  // sync and revert that named it threw. Names that fitted before are unchanged.
  const room = Math.min(MAX_SEGMENT_BYTES, MAX_PATH_BYTES - utf8Length(dir)) - utf8Length(suffix);
  if (utf8Length(stem) > room) keptStem = truncateUtf8(stem, Math.max(1, room)).replace(/[. ]+$/, '') || '_';
  return `${dir}${keptStem}${suffix}`;
}

/**
 * Rules 3a-3d as a strict total order of revisions of one path: negative when `a` wins over
 * `b`, 0 only for the same id. Total (3d breaks every tie by id bytes), so the winner of a set
 * does not depend on the order its members are compared in.
 */
export function compareConcurrent(a: RevisionEntry, b: RevisionEntry): number {
  const ra = a.revision;
  const rb = b.revision;
  if (ra.deleted !== rb.deleted) return ra.deleted ? 1 : -1; // 3a
  if (ra.mtimeNs !== rb.mtimeNs) return ra.mtimeNs > rb.mtimeNs ? -1 : 1; // 3b
  if (ra.origin !== rb.origin) return ra.origin < rb.origin ? -1 : 1; // 3c (ASCII ids: string order = byte order)
  return compareIds(a.id, 0, b.id, 0); // 3d
}

/** True if `a` wins over `b` under rules 3a-3d (for two concurrent revisions of one path). */
function winsConcurrent(a: RevisionEntry, b: RevisionEntry): boolean {
  return compareConcurrent(a, b) < 0;
}

/**
 * Most revisions of one path that no other has seen that pickHead decides among: one per device
 * that edited the path while apart, so a few in practice. Finding them costs entries x maximal
 * vector comparisons: a peer's 8,000 mutually concurrent revisions of one path held a listener's
 * thread for 2.3 s, and the protocol allows millions. Past this many, the path is left as is.
 */
export const MAX_CONCURRENT_REVISIONS = 256;

/** More than `limit` revisions of one path that no other has seen (maximalRevisions). */
export class TooManyConcurrent extends RangeError {}

/**
 * The revisions of one path that no other of `entries` has seen (whose vector is before no
 * other's), each id once, in id order. Equal vectors with other ids (a faulty peer) are both kept:
 * concurrent, as resolveRevision treats them. Throws TooManyConcurrent past `limit` of them.
 */
export function maximalRevisions<E extends Pick<RevisionEntry, 'id' | 'revision'>>(
  entries: readonly E[],
  limit = Number.POSITIVE_INFINITY,
): E[] {
  const byId = new Map<string, E>();
  for (const e of entries) byId.set(Buffer.from(e.id).toString('hex'), e);
  // A revision's dominators have strictly larger counter sums; one is dominated iff a maximal
  // one dominates it (transitivity). So, largest sums first, compare only with the maximal found
  // so far: n x (maximal ones), not n x n, for a long history.
  const sum = (e: E): bigint => [...e.revision.vector.values()].reduce((a, c) => a + BigInt(c), 0n);
  const bySum = [...byId.values()].map((e) => ({ e, s: sum(e) })).sort((a, b) => (a.s > b.s ? -1 : a.s < b.s ? 1 : 0));
  const maximal: E[] = [];
  for (const { e } of bySum) {
    if (maximal.some((m) => compareVectors(e.revision.vector, m.revision.vector) === 'before')) continue;
    maximal.push(e);
    if (maximal.length > limit)
      throw new TooManyConcurrent(`more than ${limit} revisions of one path that no other has seen`);
  }
  return maximal.sort((a, b) => compareIds(a.id, 0, b.id, 0));
}

/** A losing revision of a set that is kept as a conflict copy. */
export interface ConflictLoser {
  readonly loser: RevisionEntry;
  /** Share path the loser is kept under (conflictPath of its path, mtime and origin). */
  readonly loserPath: string;
}

/** The head of a path's set of revisions, and the losers kept as conflict copies. */
export interface HeadPick {
  readonly head: RevisionEntry;
  /** Maximal live files other than the head with other bytes, by the total order (best first). */
  readonly losers: readonly ConflictLoser[];
}

/**
 * The current revision of a path as a function of the SET of its revisions, whatever order they
 * arrived in (every node holding the same set picks the same head): among the maximal ones
 * (maximalRevisions), the first by compareConcurrent that is not `copied` (the first of all when
 * every one is). Pairwise resolution against the present head is not enough: three revisions
 * can cycle (a deletion that saw edit H beats H, H beats a concurrent edit C on mtime, C beats
 * the deletion as an edit), and the head then depends on arrival order. Every other maximal
 * revision that is a live file with other bytes than the head is a loser kept as a conflict copy; the rest (dominated revisions, deletions, losers with
 * the head's bytes, directories and symlinks) are history. Undefined for no entries; throws
 * TooManyConcurrent past MAX_CONCURRENT_REVISIONS maximal ones.
 */
export function pickHead(
  entries: readonly RevisionEntry[],
  copied: (e: RevisionEntry) => boolean = () => false,
): HeadPick | undefined {
  const maximal = maximalRevisions(entries, MAX_CONCURRENT_REVISIONS).sort(compareConcurrent);
  // A loser some node already kept as a conflict copy (`copied`: its copy's revision is known)
  // lives on at the copy's path and competes for this one no more. Otherwise a deletion that saw
  // the winner but not the loser made the loser, an edit, the head again: the file came back
  // with bytes that may exist nowhere any more (its copy deleted since), and the two nodes
  // asked each other for them at every sync (convergence seeds 3153, 10097, 20042).
  // (Asked only when there is a choice: a path's usual one revision costs no copy lookup.)
  const head = maximal.length > 1 ? (maximal.find((e) => !copied(e)) ?? maximal[0]) : maximal[0];
  if (head === undefined) return undefined;
  const paths = new Set(maximal.map((e) => e.revision.path));
  if (paths.size > 1)
    throw new TypeError(`picking a head among revisions of different paths: ${[...paths].join(', ')}`);
  const losers: ConflictLoser[] = [];
  for (const e of maximal) {
    if (e === head) continue;
    const r = e.revision;
    if (r.deleted || r.kind !== 'file' || sameContent(head.revision, r)) continue;
    losers.push({ loser: e, loserPath: conflictPath(r.path, r.mtimeNs, r.origin) });
  }
  return { head, losers };
}

/**
 * Decides what to do with remote revision `remote` of a path given our head `local` (undefined
 * if we have none). Pure and symmetric: resolve(L, R) and resolve(R, L) pick the same winner.
 */
export function resolveRevision(local: RevisionEntry | undefined, remote: RevisionEntry): Resolution {
  if (local === undefined) return { action: 'take-remote', reason: 'no-local', order: undefined };
  if (local.revision.path !== remote.revision.path) {
    throw new TypeError(`resolving revisions of different paths: ${local.revision.path} vs ${remote.revision.path}`);
  }
  if (compareIds(local.id, 0, remote.id, 0) === 0)
    return { action: 'keep-local', reason: 'same-revision', order: 'equal' };
  const order = compareVectors(local.revision.vector, remote.revision.vector);
  // 'equal' vectors with different ids break the rule that every new revision increments its
  // origin's counter (a peer that lost its store, or a faulty one): treated as concurrent, so
  // both sides still pick the same winner and nothing is lost.
  if (order === 'after') return { action: 'keep-local', reason: 'local-newer', order };
  if (order === 'before') return { action: 'take-remote', reason: 'remote-newer', order };

  const localWins = winsConcurrent(local, remote);
  const action = localWins ? 'keep-local' : 'take-remote';
  if (local.revision.deleted !== remote.revision.deleted) return { action, reason: 'edit-beats-delete', order };
  if (sameContent(local.revision, remote.revision)) return { action, reason: 'same-content', order };
  const loser = localWins ? remote.revision : local.revision;
  return {
    action: 'conflict',
    reason: 'concurrent-edit',
    order: 'concurrent',
    winner: localWins ? 'local' : 'remote',
    loser,
    loserPath: conflictPath(loser.path, loser.mtimeNs, loser.origin),
  };
}

/** True if `path`'s last segment is a conflict copy's name. */
export function isConflictPath(path: string): boolean {
  return /\.sync-conflict-\d{8}-\d{6}-[^/.]+(\.[^/]*)?$/.test(path);
}
