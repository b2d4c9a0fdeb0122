// Applies a peer's revisions to a synced folder: decide per path (sync/conflict.ts), fetch the
// content that is needed, change the files, then record the new heads in one transaction.
//
// Goals: nothing a user wrote is lost: a file sync replaces or deletes is kept as a history
// blob first (sync-history.ts), a losing concurrent edit is kept beside the winner under its
// conflict name before the winner is published; both peers compute the same winner, the same
// conflict name and the same revision for the conflict copy (origin, vector and mtime of the
// losing revision), so their logs converge without another round; the log only records what the
// folder holds: content is published first (staged, verified, renamed by TransferReceiver), and
// heads move in one store write afterwards. A crash between the two leaves files the next scan
// records as local revisions with the same content, which resolve without a conflict copy.
// A path whose content the peer could not deliver is left out entirely (its records are not
// stored, so the next sync asks again).
// Non-goals: the wire (sync-exchange.ts), choosing who applies (the mode, in the callers).
import { constants as fsConstants, lstatSync } from 'node:fs';
import { chmod, lstat, realpath, rmdir, unlink, link, copyFile } from 'node:fs/promises';
import path from 'node:path';
import type { ChunkingParams } from '../chunking/fastcdc.js';
import { ClawpeerError } from '../errors.js';
import type { Logger } from '../logger.js';
import { resolveRevision } from '../sync/conflict.js';
import type { RevisionEntry, Revision, RevisionKind } from '../sync/revision.js';
import { revisionEntry, sameContent } from '../sync/revision.js';
import { isConfinedRealpath } from '../transfer/paths.js';
import { isRacy, msToNs } from './file-key.js';
import { Publisher } from './publisher.js';
import { symlinkTargetIsConfined } from './tree-scan.js';
import type { RevisionStore, WarmStat } from './revision-store.js';
import type { FetchOutcome, FetchRequest } from './sync-exchange.js';
import { preserveInHistory } from './sync-history.js';
import type { SyncIgnore } from './sync-ignore.js';

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
  | { readonly kind: 'chmod'; readonly mode: number }
  | { readonly kind: 'mkdir'; readonly mode: number }
  | { readonly kind: 'symlink'; readonly target: string; readonly mtimeMs: number }
  | { readonly kind: 'delete' };

interface PathPlan {
  readonly path: string;
  readonly records: readonly RevisionEntry[];
  readonly local: RevisionEntry | undefined;
  /** New head, or undefined to keep the local one. */
  readonly head: RevisionEntry | undefined;
  readonly action: FsAction;
  /** Conflict copy: the losing revision's content kept at `copy.path`. */
  readonly copy: { readonly entry: RevisionEntry; readonly fromLocal: boolean } | undefined;
  /** Content fetched for the conflict copy (when the remote lost). */
  readonly copyFetch: FetchRequest | undefined;
}

const NS_PER_MS = 1_000_000n;

function mtimeMsOf(rev: Revision): number {
  return Number(rev.mtimeNs / NS_PER_MS);
}

/** The revision both peers record for a conflict copy: the loser's, moved to its conflict name. */
export function conflictCopyRevision(loser: Revision, loserPath: string): RevisionEntry {
  return revisionEntry({ ...loser, path: loserPath });
}

/** Among one peer's revisions of a path, the one its resolution rules make current. */
function remoteCandidate(records: readonly RevisionEntry[]): RevisionEntry {
  let best = records[0];
  if (best === undefined) throw new TypeError('no records');
  for (const r of records.slice(1)) {
    const res = resolveRevision(best, r);
    if (res.action === 'take-remote' || (res.action === 'conflict' && res.winner === 'remote')) best = r;
  }
  return best;
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
      if (l !== undefined && sameContent(l, r)) return l.mode === r.mode ? { kind: 'none' } : { kind: 'chmod', mode: r.mode };
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

/** What to do per path with `received`, decided against `store`'s heads; touches nothing. */
function planRemote(received: readonly RevisionEntry[], o: PlanOptions): { plans: PathPlan[]; skipped: string[] } {
  const { store, log } = o;
  const groups = new Map<string, RevisionEntry[]>();
  for (const e of received) groups.set(e.revision.path, [...(groups.get(e.revision.path) ?? []), e]);

  const plans: PathPlan[] = [];
  const skipped: string[] = [];
  for (const [p, records] of groups) {
    const local = store.head(p);
    const remote = remoteCandidate(records);
    const base = { path: p, records, local, copy: undefined, copyFetch: undefined };
    // Ignored here: the records are kept (the logs converge), the head and the disk stay.
    if (o.ignore?.ignores(p, remote.revision.kind === 'dir') === true) {
      plans.push({ ...base, head: undefined, action: { kind: 'none' } });
      continue;
    }
    const res = resolveRevision(local, remote);
    if (res.action === 'keep-local') {
      plans.push({ ...base, head: undefined, action: { kind: 'none' } });
      continue;
    }
    if (o.keepConcurrentLocal && local !== undefined && res.reason !== 'remote-newer') {
      skipped.push(p);
      continue;
    }
    if (res.action === 'take-remote') {
      const action = actionFor(local, remote);
      if (action === undefined) {
        log.warn('sync: a directory and a file meet at one path; left as is', { path: p });
        skipped.push(p);
        continue;
      }
      // The publisher would refuse it and fail the whole sync: one link out of the folder (fine
      // in the peer's share, as /etc/hostname) must not keep every other change from landing.
      if (action.kind === 'symlink' && !symlinkTargetIsConfined(p.split('/').length - 1, action.target)) {
        log.warn('sync: a symlink from the peer leads out of this folder; left as is', { path: p, target: action.target });
        skipped.push(p);
        continue;
      }
      plans.push({ ...base, head: remote, action });
      continue;
    }
    // A true conflict: both sides edited the path concurrently with different content.
    if (!isLiveFile(local) || !isLiveFile(remote)) {
      log.warn('sync: concurrent changes of different kinds at one path; left as is', { path: p });
      skipped.push(p);
      continue;
    }
    const copy = conflictCopyRevision(res.loser, res.loserPath);
    if (store.head(res.loserPath) !== undefined) {
      log.warn('sync: conflict copy name already taken; left as is', { path: p, copy: res.loserPath });
      skipped.push(p);
      continue;
    }
    if (res.winner === 'remote') {
      const action = actionFor(local, remote);
      if (action === undefined) throw new TypeError('a file replaced by a file always has an action');
      plans.push({ ...base, head: remote, action, copy: { entry: copy, fromLocal: true } });
    } else {
      const r = remote.revision;
      plans.push({
        ...base, head: undefined, action: { kind: 'none' }, copy: { entry: copy, fromLocal: false },
        copyFetch: { sourcePath: r.path, root: r.contentRoot, destPath: res.loserPath, mode: r.mode, mtimeMs: mtimeMsOf(r) },
      });
    }
  }
  return { plans, skipped };
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
  for (const plan of plans) {
    const fetched = plan.action.kind === 'fetch' ? plan.action.request : plan.copyFetch;
    const bytes = fetched === undefined ? 0 : (plan.head ?? plan.copy?.entry)?.revision.size ?? 0;
    const localLive = plan.local !== undefined && !plan.local.revision.deleted;
    if (plan.copy !== undefined) {
      changes.push({ path: plan.path, change: 'conflict', kind: 'file', bytes, copy: plan.copy.entry.revision.path });
      continue;
    }
    switch (plan.action.kind) {
      case 'none':
        continue; // the log moves, the disk already matches
      case 'delete':
        changes.push({ path: plan.path, change: 'delete', kind: plan.local?.revision.kind ?? 'file', bytes: 0 });
        continue;
      case 'chmod':
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
  const folderReal = await realpath(o.folder);
  const { plans, skipped } = planRemote(received, o);

  // 1. Content: fetch, and just before it is published keep what it replaces.
  const requests: FetchRequest[] = [];
  const planOfRequest = new Map<FetchRequest, PathPlan>();
  for (const plan of plans) {
    const req = plan.action.kind === 'fetch' ? plan.action.request : plan.copyFetch;
    if (req === undefined) continue;
    requests.push(req);
    planOfRequest.set(req, plan);
  }
  const outcome = await o.fetch(requests, async (delivered) => {
    for (const req of delivered) {
      const plan = planOfRequest.get(req);
      if (plan === undefined || plan.action.kind !== 'fetch' || !isLiveFile(plan.local)) continue;
      const abs = await confined(folderReal, plan.path);
      if (plan.copy?.fromLocal === true) {
        const copyAbs = await confined(folderReal, plan.copy.entry.revision.path);
        try {
          await link(abs, copyAbs);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'EEXIST') throw new ClawpeerError('FILE_EXISTS', `conflict copy ${copyAbs} exists already`, { cause: err });
          await copyFile(abs, copyAbs, fsConstants.COPYFILE_EXCL);
        }
      }
      await preserveInHistory(folderReal, abs, plan.local.revision.contentRoot, { move: false });
    }
  });
  const delivered = new Set(outcome.delivered);
  const done: PathPlan[] = [];
  for (const plan of plans) {
    const req = plan.action.kind === 'fetch' ? plan.action.request : plan.copyFetch;
    if (req !== undefined && !delivered.has(req)) {
      skipped.push(plan.path);
      continue;
    }
    done.push(plan);
  }

  // 2. Everything that needs no content: symlinks, directories, modes, deletions.
  const publisher = await Publisher.open({ shareRoot: folderReal, force: true, chunking: o.chunking });
  const dirRemovals: PathPlan[] = [];
  for (const plan of done) {
    const a = plan.action;
    switch (a.kind) {
      case 'none':
      case 'fetch':
        break;
      case 'chmod':
        await chmod(await confined(folderReal, plan.path), a.mode & 0o777).catch((err: unknown) => log.warn('sync: cannot set mode', { path: plan.path, error: (err as Error).message }));
        break;
      case 'mkdir':
        await publisher.makeDir(plan.path);
        await chmod(await confined(folderReal, plan.path), a.mode & 0o777);
        break;
      case 'symlink': {
        const abs = await confined(folderReal, plan.path);
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
    if (plan.head === undefined || plan.action.kind !== 'fetch') continue;
    const warm = publishedStat(folderReal, plan.head.revision, nowNs);
    if (warm !== undefined) published.set(plan, warm);
  }
  let applied = 0;
  store.write((w) => {
    for (const plan of done) {
      for (const r of plan.records) w.put(r);
      if (plan.head !== undefined) {
        w.setHead(plan.head.id);
        applied++;
        const warm = published.get(plan);
        if (warm !== undefined) w.setWarm(plan.path, warm);
      }
      if (plan.copy !== undefined) {
        w.put(plan.copy.entry);
        w.setHead(plan.copy.entry.id);
      }
    }
  });
  return { applied, conflicts: done.filter((p) => p.copy !== undefined).length, skipped, chunksReceived: outcome.chunksReceived };
}
