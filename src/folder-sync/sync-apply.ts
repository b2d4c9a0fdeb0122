// Applies a peer's revisions to a synced folder: decide per path (sync/conflict.ts pickHead, over
// the path's stored and received revisions, so the head never depends on arrival order), fetch the
// content that is needed, change the files, then record the new heads in one transaction.
//
// Goals: nothing a user wrote is lost: a file sync replaces or deletes is kept as a history
// blob first (sync-history.ts), a losing concurrent edit is kept beside the winner under its
// conflict name before the winner is published (a new inode, conflict-copy.ts: never a second
// name of the live file); both peers compute the same winner, the same conflict name and the
// same revision for the conflict copy (origin, vector and mtime of the losing revision), so
// their logs converge without another round. The copy is planned as one more incoming revision
// of its path, so the peer's record of the same copy (it settled the conflict in a sync killed
// before we did), our scan's record of a copy a killed sync left, or another file of that name
// are resolved by the same rules on both sides, never two writes of one path; the log only records what the
// folder holds: content is published first (staged, verified, renamed by TransferReceiver), and
// heads move in one store write afterwards. A crash between the two leaves files the next scan
// records as local revisions with the same content, which resolve without a conflict copy.
// A path whose content the peer could not deliver is left out entirely (its records are not
// stored, so the next sync asks again), and with it the other paths of its conflict.
// Non-goals: the wire (sync-exchange.ts), choosing who applies (the mode, in the callers).
import { lstatSync } from 'node:fs';
import { chmod, lstat, lutimes, realpath, rmdir, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { ChunkingParams } from '../chunking/fastcdc.js';
import { ClawpeerError } from '../errors.js';
import type { Logger } from '../logger.js';
import { conflictPath, pickHead } from '../sync/conflict.js';
import { compareVectors } from '../sync/version-vector.js';
import { compareIds } from '../sync/merkle-root.js';
import type { RevisionEntry, Revision, RevisionKind } from '../sync/revision.js';
import { revisionEntry, sameContent } from '../sync/revision.js';
import { isConfinedRealpath } from '../transfer/paths.js';
import { writeOwnCopy } from './conflict-copy.js';
import { isRacy, msToNs } from '../store/file-key.js';
import { Publisher } from '../store/publisher.js';
import { symlinkTargetIsConfined } from '../store/tree-scan.js';
import type { RevisionStore } from '../store/revision-store.js';
import type { WarmStat } from '../store/revlog-format.js';
import type { FsyncPolicy } from '../store/publish-types.js';
import type { FetchOutcome, FetchRequest } from './sync-exchange.js';
import { preserveInHistory } from '../store/sync-history.js';
import type { SyncIgnore } from './sync-ignore.js';
import { crashPoint } from '../support/test-hooks.js';
import { rescueUnscanned } from './unchanged-since-scan.js';

export interface ApplyOptions {
  readonly store: RevisionStore;
  readonly folder: string;
  readonly chunking: ChunkingParams;
  /**
   * Receive-only semantics: a remote revision replaces a local one only when it has seen it
   * (remote newer); concurrent local edits stay, are not overwritten and are reported.
   */
  readonly keepConcurrentLocal: boolean;
  /** This folder's ignore rules: the peer's revisions of an ignored path are recorded, its disk is left alone. */
  readonly ignore?: SyncIgnore;
  readonly log: Logger;
  /** Fetches content from the peer; calls `beforePublish` once it knows what will arrive. */
  readonly fetch: (requests: readonly FetchRequest[], beforePublish: (delivered: readonly FetchRequest[]) => Promise<void>) => Promise<FetchOutcome>;
  /** --fsync for what needs no content (symlinks, directories); `fetch` applies it to files. */
  readonly fsync?: FsyncPolicy;
}

export interface ApplyResult {
  /** Paths whose head moved to a remote revision. */
  readonly applied: number;
  /** Concurrent edits resolved with a conflict copy. */
  readonly conflicts: number;
  /** Paths left as they are this time (content not delivered, local concurrent edit kept, unsupported change). */
  readonly skipped: string[];
  /** Chunks that travelled to us. */
  readonly chunksReceived: number;
}

type FsAction =
  | { readonly kind: 'none' }
  | { readonly kind: 'fetch'; readonly request: FetchRequest }
  /** A conflict copy of a local file: `from`'s bytes written here as a new inode. */
  | { readonly kind: 'copy-local'; readonly from: string; readonly mode: number; readonly mtimeMs: number }
  /** Same bytes, other metadata: the head's mode (`chmod`) and, when it differs, its mtime (`mtimeMs`). */
  | { readonly kind: 'chmod'; readonly mode: number; readonly mtimeMs: number | undefined }
  | { readonly kind: 'mkdir'; readonly mode: number }
  | { readonly kind: 'symlink'; readonly target: string; readonly mtimeMs: number }
  | { readonly kind: 'delete' };

interface PathPlan {
  readonly path: string;
  /** The peer's records of this path, and the conflict copy's revision when one lands here. */
  readonly records: readonly RevisionEntry[];
  readonly local: RevisionEntry | undefined;
  /** New head, or undefined to keep the local one. */
  readonly head: RevisionEntry | undefined;
  readonly action: FsAction;
  /** A conflict at this path: the losing revision's copy (its own plan, at the copy's path, does the work). */
  readonly copy: { readonly entry: RevisionEntry; readonly fromLocal: boolean } | undefined;
  /** Conflict copies stacked on this path (0 for a path of the peer's records). */
  readonly depth: number;
  /** Plans of one conflict (the path and its copy's path) land together or not at all. */
  readonly unit: number;
}

/** A conflict copy some path's conflict puts at another path, and where its bytes come from. */
interface CopyClaim {
  readonly entry: RevisionEntry;
  readonly parent: string;
  readonly depth: number;
  readonly unit: number;
  /** Where the loser's bytes are: our file at `from` (copied here), or the peer's (fetched by `request`). */
  readonly source: { readonly local: true; readonly from: string } | { readonly local: false; readonly request: FetchRequest };
}

/** How deep conflict copies of conflict copies go in one sync (each level a user file that took the name). */
const MAX_COPY_DEPTH = 4;

const NS_PER_MS = 1_000_000n;

/**
 * A revision's mtime in whole ms for utimes, rounded to the nearest: utimes(X ms) often stores
 * X ms less 1 ns (seconds as a double), and truncating that gave X-1 ms, so a winner's mtime
 * placed on another node drifted a ms from the winner's own file.
 */
function mtimeMsOf(rev: Revision): number {
  const half = rev.mtimeNs < 0n ? -NS_PER_MS / 2n : NS_PER_MS / 2n;
  return Number((rev.mtimeNs + half) / NS_PER_MS);
}

/** The revision both peers record for a conflict copy: the loser's, moved to its conflict name. */
export function conflictCopyRevision(loser: Revision, loserPath: string): RevisionEntry {
  return revisionEntry({ ...loser, path: loserPath });
}

function isLiveFile(e: RevisionEntry | undefined): e is RevisionEntry {
  return e !== undefined && !e.revision.deleted && e.revision.kind === 'file';
}

/** What to do on disk to make `local` into `remote`; undefined when unsupported (skip the path). */
function actionFor(local: RevisionEntry | undefined, remote: RevisionEntry): FsAction | undefined {
  const r = remote.revision;
  const l = local !== undefined && !local.revision.deleted ? local.revision : undefined;
  if (r.deleted) return l === undefined ? { kind: 'none' } : { kind: 'delete' };
  switch (r.kind) {
    case 'dir':
      if (l !== undefined && l.kind !== 'dir') return undefined;
      return l?.mode === r.mode ? { kind: 'none' } : { kind: 'mkdir', mode: r.mode };
    case 'symlink':
      if (l?.kind === 'dir') return undefined;
      return l?.kind === 'symlink' && l.linkTarget === r.linkTarget ? { kind: 'none' } : { kind: 'symlink', target: r.linkTarget, mtimeMs: mtimeMsOf(r) };
    case 'file':
      if (l?.kind === 'dir') return undefined;
      if (l !== undefined && sameContent(l, r)) {
        // The same bytes under another head (concurrent writes of equal content: the winner's
        // metadata is taken): its mtime too, or the nodes' files keep their own times for good.
        const mtimeMs = l.mtimeNs === r.mtimeNs ? undefined : mtimeMsOf(r);
        return l.mode === r.mode && mtimeMs === undefined ? { kind: 'none' } : { kind: 'chmod', mode: r.mode, mtimeMs };
      }
      return { kind: 'fetch', request: { sourcePath: r.path, root: r.contentRoot, destPath: r.path, mode: r.mode, mtimeMs: mtimeMsOf(r) } };
    default: {
      const never: never = r.kind;
      throw new TypeError(`unknown kind ${String(never)}`);
    }
  }
}

/** Resolves a path inside the folder whose parent directory really lies inside it. */
async function confined(folderReal: string, rel: string): Promise<string> {
  const abs = path.join(folderReal, ...rel.split('/'));
  let parentReal: string;
  try {
    parentReal = await realpath(path.dirname(abs));
  } catch {
    return abs; // the parent does not exist: nothing there to touch
  }
  if (!isConfinedRealpath(folderReal, parentReal)) throw new ClawpeerError('PATH_INVALID', `${rel} refused: its directory resolves outside the folder`);
  return path.join(parentReal, path.basename(abs));
}

/**
 * The warm stat of a file this sync just published as `rev`, or undefined when it cannot be
 * certified: gone or replaced since, another mode on disk, or modified within the racy window
 * (a local write right after the publish could hide behind an equal mtime).
 */
function publishedStat(folderReal: string, rev: Revision, nowNs: bigint): WarmStat | undefined {
  try {
    const st = lstatSync(path.join(folderReal, ...rev.path.split('/')), { bigint: true });
    const mode = Number(st.mode) & 0o7777;
    if (!st.isFile() || isRacy(st.mtimeNs, nowNs) || Number(st.size) !== rev.size || mode !== rev.mode) return undefined;
    return { size: Number(st.size), mtimeNs: st.mtimeNs, ino: st.ino, dev: st.dev, mode };
  } catch {
    return undefined;
  }
}

type PlanOptions = Pick<ApplyOptions, 'store' | 'keepConcurrentLocal' | 'ignore' | 'log'>;

const sameId = (a: RevisionEntry, b: RevisionEntry): boolean => compareIds(a.id, 0, b.id, 0) === 0;

/**
 * What to do per path with `received`, decided against `store`'s heads; touches nothing.
 *
 * A conflict's copy is one more revision of the copy's path, decided there like any other: the
 * peer may have sent that very revision already (it settled the same conflict in a sync that was
 * killed before we did), or we may hold another revision there (a killed sync's copy that our
 * scan recorded, a user's file of that name). One path then has one plan, whatever claims it,
 * and the resolution rules pick the same head on both sides (a concurrent copy with other bytes
 * is itself a conflict, kept under its own conflict name).
 */
function planRemote(received: readonly RevisionEntry[], o: PlanOptions): { plans: PathPlan[]; skipped: string[] } {
  const { store, log } = o;
  const groups = new Map<string, RevisionEntry[]>();
  for (const e of received) groups.set(e.revision.path, [...(groups.get(e.revision.path) ?? []), e]);

  const claims = new Map<string, CopyClaim>();
  const planned = new Map<string, PathPlan>();
  const skipped = new Set<string>();
  // Paths to decide, in order; `pending` says which are queued and not yet decided.
  const queue = [...groups.keys()];
  const pending = new Set(queue);
  const enqueue = (rel: string): void => {
    if (pending.has(rel)) return;
    pending.add(rel);
    queue.push(rel);
  };
  let units = 0;
  const unitOf = new Map<string, number>();
  // A path decided again (a copy landed on it) withdraws the copies its first decision claimed.
  const dropClaimsOf = (parent: string): void => {
    for (const [copyPath, c] of [...claims]) {
      if (c.parent !== parent) continue;
      claims.delete(copyPath);
      planned.delete(copyPath);
      skipped.delete(copyPath);
      dropClaimsOf(copyPath);
      if (groups.has(copyPath)) enqueue(copyPath);
    }
  };
  // Each path is decided once, again for each copy that lands on it (at most MAX_COPY_DEPTH deep).
  let decisionsLeft = (groups.size + 1) * (MAX_COPY_DEPTH + 2) * 2;
  for (let next = 0; next < queue.length; next++) {
    const p = queue[next];
    if (p === undefined) break;
    pending.delete(p);
    if (--decisionsLeft < 0) throw new ClawpeerError('INTERNAL', 'planning the peer\'s revisions did not settle (conflict copies claiming each other)');
    const claim = claims.get(p);
    const peerRecords = groups.get(p) ?? [];
    const records = claim === undefined || peerRecords.some((r) => sameId(r, claim.entry)) ? peerRecords : [...peerRecords, claim.entry];
    const unit = claim?.unit ?? unitOf.get(p) ?? units++;
    unitOf.set(p, unit);
    const depth = claim?.depth ?? 0;
    const local = store.head(p);
    const base = { path: p, records, local, copy: undefined, depth, unit };
    const skip = (): void => {
      skipped.add(p);
    };
    /** Where an incoming revision's bytes are, to land at `destPath`: a copy's where its claim says, any other at this path on the peer. */
    const sourceOf = (e: RevisionEntry, destPath: string): CopyClaim['source'] => {
      const r = e.revision;
      if (claim !== undefined && sameId(e, claim.entry) && (claim.source.local || !peerRecords.some((x) => sameId(x, e)))) {
        return claim.source.local ? claim.source : { local: false, request: { ...claim.source.request, destPath } };
      }
      return { local: false, request: { sourcePath: r.path, root: r.contentRoot, destPath, mode: r.mode, mtimeMs: mtimeMsOf(r) } };
    };
    /** Claims `copyPath` for a loser's copy; false (the path is left as is) when it cannot be. */
    const claimCopy = (entry: RevisionEntry, source: CopyClaim['source']): boolean => {
      const copyPath = entry.revision.path;
      if (depth >= MAX_COPY_DEPTH) {
        log.warn('sync: conflict copies of conflict copies nest too deep; left as is', { path: p, copy: copyPath });
        return false;
      }
      if (claims.has(copyPath)) {
        // Two losers under one name (same origin and second): keep the first, leave this path.
        log.warn('sync: two conflicts name the same copy; left as is', { path: p, copy: copyPath });
        return false;
      }
      claims.set(copyPath, { entry, parent: p, depth: depth + 1, unit, source });
      // The copy's path is decided (again, if its own records came first) with the copy in it.
      planned.delete(copyPath);
      skipped.delete(copyPath);
      dropClaimsOf(copyPath);
      enqueue(copyPath);
      return true;
    };

    // The head is a function of the path's whole set of revisions (stored and incoming), never
    // of the order they came in (sync/conflict.ts pickHead): nodes holding the same set agree.
    const pick = pickHead([...store.history(p), ...records]);
    if (pick === undefined) throw new TypeError(`nothing comes in for ${p}`);
    const winner = pick.head;
    const winnerIsLocal = local !== undefined && sameId(local, winner);
    // Ignored here: the records are kept (the logs converge), the head and the disk stay. A
    // conflict copy is made even under an ignore rule: its path's winner is replacing our file.
    if (claim === undefined && o.ignore?.ignores(p, winner.revision.kind === 'dir') === true) {
      planned.set(p, { ...base, head: undefined, action: { kind: 'none' } });
      continue;
    }
    // Losers not copied yet (a copy made once is decided at its own path from then on).
    const newLosers = pick.losers.filter((l) => !store.has(conflictCopyRevision(l.loser.revision, l.loserPath).id));
    if (o.keepConcurrentLocal && local !== undefined && ((!winnerIsLocal && compareVectors(local.revision.vector, winner.revision.vector) !== 'before') || newLosers.length > 0)) {
      skip();
      continue;
    }
    /** The bytes of a revision we hold only as a conflict copy (stored, the copy's head): that file. */
    const copiedHere = (e: RevisionEntry): string | undefined => {
      const r = e.revision;
      if (r.kind !== 'file' || r.deleted) return undefined;
      const cp = conflictPath(r.path, r.mtimeNs, r.origin);
      const h = store.head(cp);
      return h !== undefined && !h.revision.deleted && h.revision.kind === 'file' && sameContent(h.revision, r) ? cp : undefined;
    };
    const fromPeerOrClaim = (e: RevisionEntry): boolean => records.some((x) => sameId(x, e));
    /** Where the winner's bytes are when they must be placed at p. */
    const winnerSource = (): CopyClaim['source'] => {
      if (!fromPeerOrClaim(winner)) {
        const cp = copiedHere(winner);
        if (cp !== undefined) return { local: true, from: cp };
      }
      return sourceOf(winner, p);
    };
    let action: FsAction | undefined = { kind: 'none' };
    if (!winnerIsLocal) {
      action = actionFor(local, winner);
      if (action?.kind === 'fetch') {
        const src = winnerSource();
        action = src.local ? { kind: 'copy-local', from: src.from, mode: action.request.mode, mtimeMs: action.request.mtimeMs } : { kind: 'fetch', request: src.request };
      }
      if (action === undefined) {
        log.warn('sync: a directory and a file meet at one path; left as is', { path: p });
        skip();
        continue;
      }
      // The publisher would refuse it and fail the whole sync: one link out of the folder (fine
      // in the peer's share, as /etc/hostname) must not keep every other change from landing.
      if (action.kind === 'symlink' && !symlinkTargetIsConfined(p.split('/').length - 1, action.target)) {
        log.warn('sync: a symlink from the peer leads out of this folder; left as is', { path: p, target: action.target });
        skip();
        continue;
      }
    }
    // Each loser's bytes: our file at p (our head loses), its claim's source, the peer's file at
    // p (one request per source path), or a copy we hold; otherwise it stays in history only.
    // The peer serves one file per path (its current one): one request per source path.
    let peerSourceTaken = action.kind === 'fetch' && action.request.sourcePath === p;
    let firstCopy: PathPlan['copy'];
    let refused = false;
    for (const l of newLosers) {
      const entry = conflictCopyRevision(l.loser.revision, l.loserPath);
      let source: CopyClaim['source'] | undefined;
      if (local !== undefined && sameId(l.loser, local) && isLiveFile(local)) source = { local: true, from: p };
      else if (claim !== undefined && sameId(l.loser, claim.entry)) source = sourceOf(l.loser, l.loserPath);
      else if (fromPeerOrClaim(l.loser) && !peerSourceTaken) {
        source = sourceOf(l.loser, l.loserPath);
        peerSourceTaken = true;
      } else {
        const cp = copiedHere(l.loser);
        if (cp !== undefined) source = { local: true, from: cp };
      }
      if (source === undefined) {
        log.warn('sync: a losing revision has no bytes here to copy; kept in history', { path: p, copy: l.loserPath });
        continue;
      }
      if (!claimCopy(entry, source)) {
        refused = true;
        break;
      }
      firstCopy ??= { entry, fromLocal: source.local };
    }
    if (refused) {
      skip();
      continue;
    }
    planned.set(p, { ...base, head: winnerIsLocal ? undefined : winner, action, copy: firstCopy });
  }
  // A conflict lands whole: its path is not replaced unless its copy is made, and the other way round.
  const skippedUnits = new Set<number>();
  for (const p of skipped) {
    const u = unitOf.get(p);
    if (u !== undefined) skippedUnits.add(u);
  }
  const plans: PathPlan[] = [];
  for (const plan of planned.values()) {
    if (skippedUnits.has(plan.unit)) skipped.add(plan.path);
    else plans.push(plan);
  }
  return { plans, skipped: [...skipped] };
}

/** One path a sync would change in this folder (sync --dry-run). */
export interface PlannedChange {
  readonly path: string;
  /** conflict: both sides changed the path; the loser's content would be kept at `copy`. */
  readonly change: 'create' | 'update' | 'mode' | 'delete' | 'conflict';
  readonly kind: RevisionKind;
  /** Content bytes that would be fetched (whole files; chunks held here already would not travel). */
  readonly bytes: number;
  readonly copy?: string;
  /** A symlink's target. */
  readonly target?: string;
}

/** Orders planned changes by path. */
export const byPath = (a: PlannedChange, b: PlannedChange): number => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);

/** The changes applying `received` would make, path order; and the paths it would leave as they are. */
export function plannedChanges(received: readonly RevisionEntry[], o: PlanOptions): { changes: PlannedChange[]; skipped: string[] } {
  const { plans, skipped } = planRemote(received, o);
  const changes: PlannedChange[] = [];
  const byPathPlan = new Map(plans.map((p) => [p.path, p]));
  for (const plan of plans) {
    const localLive = plan.local !== undefined && !plan.local.revision.deleted;
    if (plan.copy !== undefined) {
      // Bytes: the winner's, or the peer's losing version fetched into the copy.
      const copyPlan = byPathPlan.get(plan.copy.entry.revision.path);
      const fetched = plan.action.kind === 'fetch' ? plan.head : copyPlan?.action.kind === 'fetch' ? copyPlan.head : undefined;
      changes.push({ path: plan.path, change: 'conflict', kind: 'file', bytes: fetched?.revision.size ?? 0, copy: plan.copy.entry.revision.path });
      continue;
    }
    if (plan.depth > 0 && plan.local === undefined) continue; // a new conflict copy: its conflict's line names it
    const bytes = plan.action.kind === 'fetch' ? plan.head?.revision.size ?? 0 : 0;
    switch (plan.action.kind) {
      case 'none':
        continue; // the log moves, the disk already matches
      case 'copy-local':
        changes.push({ path: plan.path, change: localLive ? 'update' : 'create', kind: 'file', bytes: 0 });
        continue;
      case 'delete':
        changes.push({ path: plan.path, change: 'delete', kind: plan.local?.revision.kind ?? 'file', bytes: 0 });
        continue;
      case 'chmod':
        if (plan.local?.revision.mode === plan.head?.revision.mode) continue; // an mtime only
        changes.push({ path: plan.path, change: 'mode', kind: 'file', bytes: 0 });
        continue;
      case 'mkdir':
        changes.push({ path: plan.path, change: localLive ? 'mode' : 'create', kind: 'dir', bytes: 0 });
        continue;
      case 'fetch':
        changes.push({ path: plan.path, change: localLive ? 'update' : 'create', kind: 'file', bytes });
        continue;
      case 'symlink':
        changes.push({ path: plan.path, change: localLive ? 'update' : 'create', kind: 'symlink', bytes: 0, target: plan.action.target });
        continue;
      default: {
        const never: never = plan.action;
        throw new TypeError(`unknown action ${JSON.stringify(never)}`);
      }
    }
  }
  return { changes: changes.sort(byPath), skipped: skipped.sort() };
}

/** Plans and applies `received` (records the peer has and we lacked). */
export async function applyRemote(received: readonly RevisionEntry[], o: ApplyOptions): Promise<ApplyResult> {
  const { store, log } = o;
  crashPoint('sync-apply');
  const folderReal = await realpath(o.folder);
  const { plans, skipped } = planRemote(received, o);

  // 1. Content: fetch; just before it is published, make the conflict copies of our own files
  // and keep in history what gets replaced. A conflict lands whole or not at all (its unit): if
  // the peer cannot deliver the content of one of its paths, none of them changes.
  const requests: FetchRequest[] = [];
  for (const plan of plans) if (plan.action.kind === 'fetch') requests.push(plan.action.request);
  const undeliveredUnits = (delivered: readonly FetchRequest[]): Set<number> => {
    const got = new Set(delivered);
    return new Set(plans.filter((p) => p.action.kind === 'fetch' && !got.has(p.action.request)).map((p) => p.unit));
  };
  const outcome = await o.fetch(requests, async (delivered) => {
    const missing = undeliveredUnits(delivered);
    const landing = plans.filter((p) => !missing.has(p.unit));
    // Deepest first: a copy that lands where our own losing bytes are copied away goes after them.
    const copies = landing.filter((p) => p.action.kind === 'copy-local').sort((x, y) => y.depth - x.depth);
    for (const plan of copies) {
      if (plan.action.kind !== 'copy-local') continue;
      const abs = await confined(folderReal, plan.path);
      if (isLiveFile(plan.local)) await preserveInHistory(folderReal, abs, plan.local.revision.contentRoot, { move: false });
      await writeOwnCopy(await confined(folderReal, plan.action.from), abs, plan.action.mode, plan.action.mtimeMs);
    }
    if (copies.length > 0) crashPoint('conflict-copy');
    // A file saved here since the scan (the copies above are made) is not replaced or deleted
    // unseen: it moves aside (unchanged-since-scan.ts), which the next scan records.
    for (const p of landing) {
      if (p.action.kind !== 'fetch' && p.action.kind !== 'delete' && p.action.kind !== 'symlink') continue;
      const aside = await rescueUnscanned(folderReal, p.path, p.local, store);
      if (aside !== undefined) log.info('sync: a file changed here since the scan; kept beside it', { path: p.path, copy: aside });
    }
    for (const plan of landing) {
      if (plan.action.kind !== 'fetch' || !isLiveFile(plan.local)) continue;
      await preserveInHistory(folderReal, await confined(folderReal, plan.path), plan.local.revision.contentRoot, { move: false });
    }
  });
  const missing = undeliveredUnits(outcome.delivered);
  const done: PathPlan[] = [];
  for (const plan of plans) {
    if (missing.has(plan.unit)) skipped.push(plan.path);
    else done.push(plan);
  }

  // 2. Everything that needs no content: symlinks, directories, modes, deletions.
  const publisher = await Publisher.open({ shareRoot: folderReal, force: true, chunking: o.chunking, ...(o.fsync === undefined ? {} : { fsync: o.fsync }) });
  const dirRemovals: PathPlan[] = [];
  // Once more just before a path is deleted or becomes a link: the content fetch may have taken a while.
  const rescueLate = async (plan: PathPlan): Promise<void> => {
    const aside = await rescueUnscanned(folderReal, plan.path, plan.local, store);
    if (aside !== undefined) log.info('sync: a file changed here since the scan; kept beside it', { path: plan.path, copy: aside });
  };
  for (const plan of done) {
    const a = plan.action;
    switch (a.kind) {
      case 'none':
      case 'fetch':
      case 'copy-local':
        break;
      case 'chmod': {
        const abs = await confined(folderReal, plan.path);
        await chmod(abs, a.mode & 0o777).catch((err: unknown) => log.warn('sync: cannot set mode', { path: plan.path, error: (err as Error).message }));
        if (a.mtimeMs !== undefined) await lutimes(abs, new Date(), new Date(a.mtimeMs)).catch((err: unknown) => log.warn('sync: cannot set mtime', { path: plan.path, error: (err as Error).message }));
        break;
      }
      case 'mkdir':
        await publisher.makeDir(plan.path);
        await chmod(await confined(folderReal, plan.path), a.mode & 0o777);
        break;
      case 'symlink': {
        const abs = await confined(folderReal, plan.path);
        await rescueLate(plan);
        if (isLiveFile(plan.local)) await preserveInHistory(folderReal, abs, plan.local.revision.contentRoot, { move: true });
        await publisher.makeSymlink(plan.path, a.target, a.mtimeMs);
        break;
      }
      case 'delete': {
        const local = plan.local?.revision;
        if (local?.kind === 'dir') {
          dirRemovals.push(plan);
          break;
        }
        const abs = await confined(folderReal, plan.path);
        await rescueLate(plan);
        if (local?.kind === 'file') await preserveInHistory(folderReal, abs, local.contentRoot, { move: true });
        else await unlink(abs).catch((err: unknown) => {
          if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        });
        break;
      }
      default: {
        const never: never = a;
        throw new TypeError(`unknown action ${JSON.stringify(never)}`);
      }
    }
  }
  // Deepest first, so a directory emptied by this sync goes after its contents. One that still
  // holds files this side has not synced stays; the next scan records it again.
  dirRemovals.sort((x, y) => y.path.split('/').length - x.path.split('/').length);
  for (const plan of dirRemovals) {
    const abs = await confined(folderReal, plan.path);
    try {
      const st = await lstat(abs);
      if (st.isDirectory()) await rmdir(abs);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTEMPTY' && code !== 'EEXIST') throw err;
    }
  }
  await publisher.flushDirs();

  // 3. The log, in one transaction: every record of a settled path, the new heads, the copies,
  // and a warm entry for each file just published, so the next scan does not hash it again.
  // The stats are taken before the write transaction: no file I/O while LMDB's lock is held.
  const nowNs = msToNs(Date.now());
  const published = new Map<PathPlan, WarmStat>();
  for (const plan of done) {
    if (plan.head === undefined || (plan.action.kind !== 'fetch' && plan.action.kind !== 'copy-local')) continue;
    const warm = publishedStat(folderReal, plan.head.revision, nowNs);
    if (warm !== undefined) published.set(plan, warm);
  }
  let applied = 0;
  crashPoint('sync-log');
  store.write((w) => {
    for (const plan of done) {
      for (const r of plan.records) w.put(r);
      if (plan.head !== undefined) {
        w.setHead(plan.head.id);
        applied++;
        const warm = published.get(plan);
        if (warm !== undefined) w.setWarm(plan.path, warm);
      }
    }
  });
  return { applied, conflicts: done.filter((p) => p.copy !== undefined).length, skipped, chunksReceived: outcome.chunksReceived };
}
