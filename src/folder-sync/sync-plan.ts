// What applying a peer's revisions (sync-apply.ts) would do in a synced folder, decided per path
// and touching nothing: the head (sync/conflict.ts pickHead over the path's stored and received
// revisions, so it never depends on arrival order), the change on disk that makes the local state
// into it, and a conflict's copy, planned as one more incoming revision of the copy's path.
// Also what `sync --dry-run` lists (plannedChanges).
import { ClawpeerError } from '../errors.js';
import type { Logger } from '../logger.js';
import { conflictPath, MAX_CONCURRENT_REVISIONS, pickHead, TooManyConcurrent } from '../sync/conflict.js';
import { bytesEqual, toHex } from '../chunking/blake3.js';
import { compareVectors } from '../sync/version-vector.js';
import { compareIds, type MerkleIdSet } from '../sync/merkle-root.js';
import type { RevisionEntry, Revision, RevisionKind } from '../sync/revision.js';
import { mtimeMsOf, revisionEntry, sameContent } from '../sync/revision.js';
import type { RevisionStore } from '../store/revision-store.js';
import { symlinkTargetIsConfined } from '../store/tree-scan.js';
import type { FetchRequest } from './sync-exchange.js';
import type { SyncIgnore } from './sync-ignore.js';

export interface PlanOptions {
  readonly store: RevisionStore;
  /**
   * Receive-only semantics: a remote revision replaces a local one only when it has seen it
   * (remote newer); concurrent local edits stay, are not overwritten and are reported.
   */
  readonly keepConcurrentLocal: boolean;
  /** This folder's ignore rules: the peer's revisions of an ignored path are recorded, its disk is left alone. */
  readonly ignore?: SyncIgnore;
  readonly log: Logger;
}

export type FsAction =
  | { readonly kind: 'none' }
  | { readonly kind: 'fetch'; readonly request: FetchRequest }
  /** A conflict copy of a local file: `from`'s bytes written here as a new inode. */
  | { readonly kind: 'copy-local'; readonly from: string; readonly mode: number; readonly mtimeMs: number }
  /** Same bytes, other metadata: the head's mode (`chmod`) and, when it differs, its mtime (`mtimeMs`). */
  | { readonly kind: 'chmod'; readonly mode: number; readonly mtimeMs: number | undefined }
  | { readonly kind: 'mkdir'; readonly mode: number }
  | { readonly kind: 'symlink'; readonly target: string; readonly mtimeMs: number }
  | { readonly kind: 'delete' };

export interface PathPlan {
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
  readonly source:
    { readonly local: true; readonly from: string } | { readonly local: false; readonly request: FetchRequest };
}

/** How deep conflict copies of conflict copies go in one sync (each level a user file that took the name). */
const MAX_COPY_DEPTH = 4;

/** The revision both peers record for a conflict copy: the loser's, moved to its conflict name. */
export function conflictCopyRevision(loser: Revision, loserPath: string): RevisionEntry {
  return revisionEntry({ ...loser, path: loserPath });
}

/** Of `ids`, the revisions that are their path's head in `store` (the current version here). */
export function headsAmong(store: RevisionStore, ids: readonly Uint8Array[]): RevisionEntry[] {
  const heads: RevisionEntry[] = [];
  for (const id of ids) {
    const entry = store.get(id);
    const head = entry === undefined ? undefined : store.head(entry.revision.path);
    if (entry !== undefined && head !== undefined && bytesEqual(head.id, entry.id)) heads.push(entry);
  }
  return heads;
}

export function isLiveFile(e: RevisionEntry | undefined): e is RevisionEntry {
  return e !== undefined && !e.revision.deleted && e.revision.kind === 'file';
}

/**
 * What to do on disk to make `local` into `remote`. A type change (a file or link where the
 * head is a directory, or the other way round) takes the same action as a new path: the apply
 * step clears the old entry first (typeChangeOf).
 */
function actionFor(local: RevisionEntry | undefined, remote: RevisionEntry): FsAction {
  const r = remote.revision;
  const l = local !== undefined && !local.revision.deleted ? local.revision : undefined;
  if (r.deleted) return l === undefined ? { kind: 'none' } : { kind: 'delete' };
  switch (r.kind) {
    case 'dir':
      return l?.kind === 'dir' && l.mode === r.mode ? { kind: 'none' } : { kind: 'mkdir', mode: r.mode };
    case 'symlink':
      return l?.kind === 'symlink' && l.linkTarget === r.linkTarget
        ? { kind: 'none' }
        : { kind: 'symlink', target: r.linkTarget, mtimeMs: mtimeMsOf(r) };
    case 'file':
      if (l?.kind === 'file' && sameContent(l, r)) {
        // The same bytes under another head (concurrent writes of equal content: the winner's
        // metadata is taken): its mtime too, or the nodes' files keep their own times for good.
        const mtimeMs = l.mtimeNs === r.mtimeNs ? undefined : mtimeMsOf(r);
        return l.mode === r.mode && mtimeMs === undefined ? { kind: 'none' } : { kind: 'chmod', mode: r.mode, mtimeMs };
      }
      return {
        kind: 'fetch',
        request: { sourcePath: r.path, root: r.contentRoot, destPath: r.path, mode: r.mode, mtimeMs: mtimeMsOf(r) },
      };
    default: {
      const never: never = r.kind;
      throw new TypeError(`unknown kind ${String(never)}`);
    }
  }
}

/**
 * Whether a plan turns a file or link into a directory ('to-dir': the old entry goes into
 * history first) or a directory into a file or link ('from-dir': what is left in it after this
 * sync's deletions below moves aside, see sync-apply.ts); undefined for every other plan.
 */
export function typeChangeOf(plan: Pick<PathPlan, 'local' | 'head'>): 'to-dir' | 'from-dir' | undefined {
  const l = plan.local?.revision;
  const h = plan.head?.revision;
  if (l === undefined || h === undefined || l.deleted || h.deleted) return undefined;
  if (l.kind === h.kind || (l.kind !== 'dir' && h.kind !== 'dir')) return undefined;
  return h.kind === 'dir' ? 'to-dir' : 'from-dir';
}

/** Whether a directory on the way to `p` is one `isNonDir` says is a file or link. */
function belowNonDir(p: string, isNonDir: (dir: string) => boolean): boolean {
  for (let i = p.indexOf('/'); i !== -1; i = p.indexOf('/', i + 1)) if (isNonDir(p.slice(0, i))) return true;
  return false;
}

const isLive = (e: RevisionEntry | undefined): boolean => e !== undefined && !e.revision.deleted;

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
export function planRemote(
  received: readonly RevisionEntry[],
  o: PlanOptions,
): { plans: PathPlan[]; skipped: string[]; kept: string[] } {
  const { store, log } = o;
  const groups = new Map<string, RevisionEntry[]>();
  for (const e of received) {
    const group = groups.get(e.revision.path);
    if (group === undefined) groups.set(e.revision.path, [e]);
    else group.push(e);
  }

  // A loser whose conflict copy some node made already (its copy's revision stored here or come
  // in now) is not a candidate for the head (conflict.ts pickHead). The ids that came in are
  // indexed only when a path has a choice to make: most syncs never ask.
  let receivedIds: Set<string> | undefined;
  const copiedBefore = (e: RevisionEntry): boolean => {
    const r = e.revision;
    if (r.deleted || r.kind !== 'file') return false;
    const id = conflictCopyRevision(r, conflictPath(r.path, r.mtimeNs, r.origin)).id;
    if (store.has(id)) return true;
    receivedIds ??= new Set(received.map((x) => toHex(x.id)));
    return receivedIds.has(toHex(id));
  };
  const claims = new Map<string, CopyClaim>();
  const planned = new Map<string, PathPlan>();
  const skipped = new Set<string>();
  /** Of `skipped`, the paths left as is because a receive-only copy keeps its own edit (keepConcurrentLocal). */
  const kept = new Set<string>();
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
  // A copy path is one more path to decide: each one first claimed adds its share. Only a claim
  // made again (copies claiming each other) spends without adding, so that still ends; a budget of
  // the peer's paths alone failed every sync of one path with 24 losers whose copies are here.
  const perPath = (MAX_COPY_DEPTH + 2) * 2;
  let decisionsLeft = (groups.size + 1) * perPath;
  const everClaimed = new Set<string>();
  for (let next = 0; next < queue.length; next++) {
    const p = queue[next];
    if (p === undefined) break;
    pending.delete(p);
    if (--decisionsLeft < 0)
      throw new ClawpeerError(
        'INTERNAL',
        "planning the peer's revisions did not settle (conflict copies claiming each other)",
      );
    const claim = claims.get(p);
    const peerRecords = groups.get(p) ?? [];
    // A copy path queued by a claim that was withdrawn since (its parent, itself a copy path, was
    // claimed by another conflict and is decided again): nothing comes in here now. If the new
    // decision claims it again, it is queued again (seed 17158).
    if (claim === undefined && peerRecords.length === 0) continue;
    const records =
      claim === undefined || peerRecords.some((r) => sameId(r, claim.entry))
        ? peerRecords
        : [...peerRecords, claim.entry];
    const unit = claim?.unit ?? unitOf.get(p) ?? units++;
    unitOf.set(p, unit);
    const depth = claim?.depth ?? 0;
    const local = store.head(p);
    const base = { path: p, records, local, copy: undefined, depth, unit };
    const skip = (): void => {
      skipped.add(p);
    };
    kept.delete(p); // decided again (a copy landed on it): the last decision says
    /** Where an incoming revision's bytes are, to land at `destPath`: a copy's where its claim says, any other at this path on the peer. */
    const sourceOf = (e: RevisionEntry, destPath: string): CopyClaim['source'] => {
      const r = e.revision;
      if (
        claim !== undefined &&
        sameId(e, claim.entry) &&
        (claim.source.local || !peerRecords.some((x) => sameId(x, e)))
      ) {
        return claim.source.local ? claim.source : { local: false, request: { ...claim.source.request, destPath } };
      }
      return {
        local: false,
        request: { sourcePath: r.path, root: r.contentRoot, destPath, mode: r.mode, mtimeMs: mtimeMsOf(r) },
      };
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
      if (!groups.has(copyPath) && !everClaimed.has(copyPath)) {
        everClaimed.add(copyPath);
        decisionsLeft += perPath;
      }
      // The copy's path is decided (again, if its own records came first) with the copy in it.
      planned.delete(copyPath);
      skipped.delete(copyPath);
      dropClaimsOf(copyPath);
      enqueue(copyPath);
      return true;
    };

    // The head is a function of the path's whole set of revisions (stored and incoming), never
    // of the order they came in (sync/conflict.ts pickHead): nodes holding the same set agree.
    let pick: ReturnType<typeof pickHead>;
    try {
      pick = pickHead([...store.history(p), ...records], copiedBefore);
    } catch (err) {
      if (!(err instanceof TooManyConcurrent)) throw err;
      // Only a faulty or hostile peer makes so many: the rest of the folder lands.
      log.warn('sync: too many concurrent revisions of one path; left as is', {
        path: p,
        limit: MAX_CONCURRENT_REVISIONS,
      });
      skip();
      continue;
    }
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
    // A local deletion is not kept: deleting a file is how a receive-only copy takes the peer's
    // version again (it was skipped for good before, the peer's edit never landing).
    if (
      o.keepConcurrentLocal &&
      local !== undefined &&
      !local.revision.deleted &&
      ((!winnerIsLocal && compareVectors(local.revision.vector, winner.revision.vector) !== 'before') ||
        newLosers.length > 0)
    ) {
      skip();
      kept.add(p);
      continue;
    }
    /** The bytes of a revision we hold only as a conflict copy (stored, the copy's head): that file. */
    const copiedHere = (e: RevisionEntry): string | undefined => {
      const r = e.revision;
      if (r.kind !== 'file' || r.deleted) return undefined;
      const cp = conflictPath(r.path, r.mtimeNs, r.origin);
      const h = store.head(cp);
      return h !== undefined && !h.revision.deleted && h.revision.kind === 'file' && sameContent(h.revision, r)
        ? cp
        : undefined;
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
    let action: FsAction = { kind: 'none' };
    if (!winnerIsLocal) {
      action = actionFor(local, winner);
      if (action?.kind === 'fetch') {
        const src = winnerSource();
        action = src.local
          ? { kind: 'copy-local', from: src.from, mode: action.request.mode, mtimeMs: action.request.mtimeMs }
          : { kind: 'fetch', request: src.request };
      }
      // The publisher would refuse it and fail the whole sync: one link out of the folder (fine
      // in the peer's share, as /etc/hostname) must not keep every other change from landing.
      if (action.kind === 'symlink' && !symlinkTargetIsConfined(p.split('/').length - 1, action.target)) {
        log.warn('sync: a symlink from the peer leads out of this folder; left as is', {
          path: p,
          target: action.target,
        });
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
  // A conflict lands whole: its path is not replaced unless its copy is made, and the other way
  // round. Nothing new can be written below a file or link (the publisher would refuse the
  // whole sync, and every later one): below a path left as is here, or one this sync turns from
  // a directory into a file (only the deletions there land), or one the peer still has as a
  // directory while ours is a file. Those paths are left as is too, then their conflicts, until
  // nothing more is left out; the rest of the folder lands.
  const plans: PathPlan[] = [];
  for (;;) {
    const nonDir = new Map<string, boolean>();
    /** Whether `dir` will be a file or link after this sync: its plan's head if it lands, else ours. */
    const landsNonDir = (dir: string): boolean => {
      let v = nonDir.get(dir);
      if (v === undefined) {
        const plan = skipped.has(dir) ? undefined : planned.get(dir);
        const e = plan?.head ?? store.head(dir);
        v = e !== undefined && !e.revision.deleted && e.revision.kind !== 'dir';
        nonDir.set(dir, v);
      }
      return v;
    };
    const skippedUnits = new Set<number>();
    for (const p of skipped) {
      const u = unitOf.get(p);
      if (u !== undefined) skippedUnits.add(u);
    }
    let more = false;
    for (const plan of planned.values()) {
      if (skipped.has(plan.path)) continue;
      if (skippedUnits.has(plan.unit) || (isLive(plan.head) && belowNonDir(plan.path, landsNonDir))) {
        skipped.add(plan.path);
        more = true;
      }
    }
    if (more) continue;
    for (const plan of planned.values()) if (!skipped.has(plan.path)) plans.push(plan);
    break;
  }
  return { plans, skipped: [...skipped], kept: [...kept].filter((p) => skipped.has(p)) };
}

/** One path a sync would change in this folder (sync --dry-run). */
/**
 * The id set a sync's check reconciles with: the log's, and the ids of `received` at a path
 * `kept` that were not stored (a receive-only copy keeping its own edit leaves the peer's
 * revision out on purpose, so neither side takes it for something left to move; `status`'s
 * local changes say the rest). The peer's copy is a receive-only one only when `kept` is set.
 * `declined`: ids the peer sent that our gc dropped (not stored); those it was not `told` of
 * (an older peer, past the 10,000 told a sync) it keeps, and they are not left to move either.
 */
export function checkIdSet(
  store: RevisionStore,
  received: readonly RevisionEntry[],
  kept: readonly string[],
  declined: readonly Uint8Array[] = [],
  told: readonly Uint8Array[] = [],
): MerkleIdSet {
  const ids = store.snapshotIdSet();
  const heard = new Set(told.map(toHex));
  for (const id of declined) if (!heard.has(toHex(id))) ids.add(id);
  if (kept.length === 0) return ids;
  const paths = new Set(kept);
  for (const e of received) if (paths.has(e.revision.path) && !store.has(e.id)) ids.add(e.id);
  return ids;
}

export interface PlannedChange {
  readonly path: string;
  /** conflict: both sides changed the path; the loser's content would be kept at `copy`. */
  readonly change: 'create' | 'update' | 'mode' | 'time' | 'delete' | 'conflict';
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
export function plannedChanges(
  received: readonly RevisionEntry[],
  o: PlanOptions,
): { changes: PlannedChange[]; skipped: string[] } {
  const { plans, skipped } = planRemote(received, o);
  const changes: PlannedChange[] = [];
  const byPathPlan = new Map(plans.map((p) => [p.path, p]));
  for (const plan of plans) {
    const localLive = plan.local !== undefined && !plan.local.revision.deleted;
    if (plan.copy !== undefined) {
      // Bytes: the winner's, or the peer's losing version fetched into the copy.
      const copyPlan = byPathPlan.get(plan.copy.entry.revision.path);
      const fetched =
        plan.action.kind === 'fetch' ? plan.head : copyPlan?.action.kind === 'fetch' ? copyPlan.head : undefined;
      changes.push({
        path: plan.path,
        change: 'conflict',
        kind: 'file',
        bytes: fetched?.revision.size ?? 0,
        copy: plan.copy.entry.revision.path,
      });
      continue;
    }
    if (plan.depth > 0 && plan.local === undefined) continue; // a new conflict copy: its conflict's line names it
    const bytes = plan.action.kind === 'fetch' ? (plan.head?.revision.size ?? 0) : 0;
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
        // The same bytes: new permission bits, or (a touch, the winner's metadata) a new mtime only.
        changes.push({
          path: plan.path,
          change: plan.local?.revision.mode === plan.head?.revision.mode ? 'time' : 'mode',
          kind: 'file',
          bytes: 0,
        });
        continue;
      case 'mkdir':
        changes.push({
          path: plan.path,
          change: !localLive ? 'create' : typeChangeOf(plan) === 'to-dir' ? 'update' : 'mode',
          kind: 'dir',
          bytes: 0,
        });
        continue;
      case 'fetch':
        changes.push({ path: plan.path, change: localLive ? 'update' : 'create', kind: 'file', bytes });
        continue;
      case 'symlink':
        changes.push({
          path: plan.path,
          change: localLive ? 'update' : 'create',
          kind: 'symlink',
          bytes: 0,
          target: plan.action.target,
        });
        continue;
      default: {
        const never: never = plan.action;
        throw new TypeError(`unknown action ${JSON.stringify(never)}`);
      }
    }
  }
  return { changes: changes.sort(byPath), skipped: skipped.sort() };
}

/**
 * The fetches this node can make by moving a file the same sync deletes, each paired with the
 * plan of the deletion (a file or directory renamed on the peer: Syncthing renames too): a new
 * path with nothing live here, whose content (root and size) is that of a deleted file. Both
 * plans alone in their conflict units and neither the source of a conflict copy, so nothing else
 * waits on them. Each deleted file serves one new path; the others are fetched as before.
 */
export function renamesAmong(plans: readonly PathPlan[]): Map<PathPlan, PathPlan> {
  const perUnit = new Map<number, number>();
  for (const p of plans) perUnit.set(p.unit, (perUnit.get(p.unit) ?? 0) + 1);
  const copied = new Set(plans.flatMap((p) => (p.action.kind === 'copy-local' ? [p.action.from] : [])));
  const alone = (p: PathPlan): boolean => p.copy === undefined && perUnit.get(p.unit) === 1 && !copied.has(p.path);
  const contentKey = (r: Revision): string => `${toHex(r.contentRoot)}:${r.size}`;
  const deleted = new Map<string, PathPlan[]>();
  for (const p of plans) {
    if (p.action.kind !== 'delete' || !isLiveFile(p.local) || !alone(p)) continue;
    const key = contentKey(p.local.revision);
    const list = deleted.get(key);
    if (list === undefined) deleted.set(key, [p]);
    else list.push(p);
  }
  const pairs = new Map<PathPlan, PathPlan>();
  if (deleted.size === 0) return pairs;
  for (const p of plans) {
    const h = p.head?.revision;
    if (p.action.kind !== 'fetch' || p.action.request.destPath !== p.path || !isLiveFile(p.head) || h === undefined)
      continue;
    if ((p.local !== undefined && !p.local.revision.deleted) || !alone(p)) continue;
    const from = deleted.get(contentKey(h))?.pop();
    if (from !== undefined) pairs.set(p, from);
  }
  return pairs;
}
