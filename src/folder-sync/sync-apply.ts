// Applies a peer's revisions to a synced folder: decide per path (sync-plan.ts: sync/conflict.ts
// pickHead, over the path's stored and received revisions, so the head never depends on arrival
// order), fetch the content that is needed, change the files, then record the new heads in one
// transaction.
//
// Goals: nothing a user wrote is lost: a file sync replaces or deletes is kept as a history
// blob first (sync-history.ts; renamed on the peer, it moves to its new name: local-moves.ts),
// a losing concurrent edit is kept beside the winner under its conflict name before the
// winner is published (a new inode, conflict-copy.ts: never a second name of the live file);
// both peers compute the same winner, the same conflict name and the
// same revision for the conflict copy (origin, vector and mtime of the losing revision), so
// their logs converge without another round. The copy is planned as one more incoming revision
// of its path, so the peer's record of the same copy (it settled the conflict in a sync killed
// before we did), our scan's record of a copy a killed sync left, or another file of that name
// are resolved by the same rules on both sides, never two writes of one path; the log only records what the
// folder holds: content is published first (staged, verified, renamed by TransferReceiver), and
// heads move in one store write afterwards. A sync that fails partway (a full disk, a lost
// connection) still records the conflict units that landed whole before it rethrows, so the next
// scan does not take them for local creations (wrong history, keep-last versions, traffic back).
// A kill between the two leaves them to the next scan, which records them as the peer's from a
// note written before the fetch (pending-landings.ts); else as local revisions with the same content.
// A path whose content the peer could not deliver is left out entirely (its records are not
// stored, so the next sync asks again), and with it the other paths of its conflict.
// Non-goals: the wire (sync-exchange.ts), choosing who applies (the mode, in the callers).
import { lstatSync, type BigIntStats } from 'node:fs';
import { chmod, lstat, readdir, realpath, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { ChunkingParams } from '../chunking/fastcdc.js';
import { ClawpeerError } from '../errors.js';
import type { RevisionEntry, Revision } from '../sync/revision.js';
import { floorMs } from '../sync/revision.js';
import { applyLocalMoves, confinedPath as confined } from '../exchange/local-moves.js';
import { writeOwnCopy } from './conflict-copy.js';
import { setHeadMetadata } from './head-metadata.js';
import { pathRefusal } from '../support/path-refusal.js';
import { removeDirIfEmpty } from '../support/remove-empty-dir.js';
import { isRacy, msToNs } from '../store/file-key.js';
import { Publisher } from '../store/publisher.js';
import { warmStatOf, type WarmStat } from '../store/revlog-format.js';
import type { FsyncPolicy } from '../store/publish-types.js';
import type { FetchOutcome, FetchRequest } from './sync-exchange.js';
import type { NoSpaceReport } from '../exchange/space-fit.js';
import { preserveInHistory } from '../store/sync-history.js';
import { dirTakesHeadMode, noteLandings } from './pending-landings.js';
import { crashPoint } from '../support/test-hooks.js';
import { isLiveFile, planRemote, renamesAmong, typeChangeOf, type PathPlan, type PlanOptions } from './sync-plan.js';
import { rescueUnscanned, unchangedSinceScan, unsyncedNames, unsyncedPath } from './unchanged-since-scan.js';

export { byPath, conflictCopyRevision, plannedChanges, type PlannedChange } from './sync-plan.js';

export interface ApplyOptions extends PlanOptions {
  readonly folder: string;
  readonly chunking: ChunkingParams;
  /**
   * Fetches content from the peer; calls `beforePublish` once it knows what will arrive, and has the
   * publisher call `beforeReplace` just before it renames a fetched file over its path (fetchContent's).
   */
  readonly fetch: (
    requests: readonly FetchRequest[],
    beforePublish: (delivered: readonly FetchRequest[]) => Promise<void>,
    beforeReplace: (relPath: string) => Promise<void>,
    /** Called for each file as it is published (fetchContent's onFilePublished), even if the fetch fails later. */
    onFilePublished: (relPath: string, st: BigIntStats) => void,
  ) => Promise<FetchOutcome>;
  /** --fsync and the folder pin's check (folder-pin.ts) for what needs no content; `fetch` applies them to files. */
  readonly fsync?: FsyncPolicy;
  readonly guard?: () => void;
}

export interface ApplyResult {
  /** Paths whose head moved to a remote revision. */
  readonly applied: number;
  /** Concurrent edits resolved with a conflict copy. */
  readonly conflicts: number;
  /** Paths left as they are this time (content not delivered, local concurrent edit kept, unsupported change). */
  readonly skipped: string[];
  /** Of `skipped`, the paths whose local edit a receive-only copy keeps (sync-plan.ts checkIdSet). */
  readonly kept: readonly string[];
  /** Chunks that travelled to us. */
  readonly chunksReceived: number;
  /** Of `skipped`, the files that did not fit on the disk (FetchOutcome.noSpace). */
  readonly noSpace?: NoSpaceReport;
  /** The conflict copies made here, by path, with the head each path had before (change-counts.ts counts them). */
  readonly copies: ReadonlyMap<string, RevisionEntry | undefined>;
}

/**
 * The warm stat of a file this sync just published as `rev` with mtime `setMs`, or undefined
 * when it cannot be certified: gone or replaced since, another mode on disk, modified within the
 * racy window (a local write right after the publish could hide behind an equal mtime), or
 * another mtime than the one set (a save in between whose mtime is not "now": a skewed clock, a
 * tool that keeps times; certified, its bytes would pass for `rev`'s and never be scanned).
 * `known`: the file's lstat taken just after its commit (FetchOutcome.published), else one now.
 * A save after that stat moves its mtime (or size, or inode) off the certified one, so the next
 * scan hashes it; only a same-size in-place rewrite that restores the mtime passes, as it
 * would after a stat taken here.
 */
function publishedStat(
  folderReal: string,
  rev: Revision,
  setMs: number,
  nowNs: bigint,
  known: BigIntStats | undefined,
): WarmStat | undefined {
  try {
    const st = known ?? lstatSync(path.join(folderReal, ...rev.path.split('/')), { bigint: true });
    const warm = warmStatOf(st);
    if (
      !st.isFile() ||
      isRacy(st.mtimeNs, nowNs) ||
      floorMs(st.mtimeNs) !== setMs ||
      warm.size !== rev.size ||
      warm.mode !== rev.mode
    )
      return undefined;
    return warm;
  } catch {
    return undefined;
  }
}

/**
 * The units of plans that put the peer's file or link where this node has a directory its ignore
 * rules leave out (never recorded: the plan sees no type change). The publisher would refuse to
 * replace the directory and fail the sync, and every later one (a peer's file `build`, our
 * ignored `build/`): such a path is left as is, with its conflict's unit.
 */
function unitsOverIgnoredDirs(folderReal: string, plans: readonly PathPlan[], o: PlanOptions): Set<number> {
  const units = new Set<number>();
  const ignore = o.ignore;
  if (ignore === undefined || ignore.patterns.length === 0) return units; // no rules: no look per received file
  for (const plan of plans) {
    const h = plan.head?.revision;
    if (h === undefined || h.deleted || h.kind === 'dir' || !ignore.ignores(plan.path, true)) continue;
    let isDir = false;
    try {
      isDir =
        lstatSync(path.join(folderReal, ...plan.path.split('/')), { throwIfNoEntry: false })?.isDirectory() === true;
    } catch {
      // Not there as a directory (ENOTDIR): nothing in the way.
    }
    if (!isDir || (plan.local?.revision.kind === 'dir' && !plan.local.revision.deleted)) continue;
    o.log.warn('sync: the peer has a file or link where an ignored directory is here; left as is', {
      path: plan.path,
    });
    units.add(plan.unit);
  }
  return units;
}

/**
 * The units of plans that turn a directory holding an entry the ignore rules leave out into a
 * file or link, when the rules would not leave it out once moved aside with the directory under
 * its unsynced name (`/config/secrets.yml`; `*.o` still would): the next scan would record the
 * ignored file and send it to the peer, which only had to replace `config` to get it. Such a
 * path is left as is (its deletions below still land). Walks the directory, not entering
 * ignored ones; only for a type change, and only when there are rules.
 */
async function unitsHoldingIgnored(
  folderReal: string,
  plans: readonly PathPlan[],
  o: PlanOptions,
): Promise<Set<number>> {
  const units = new Set<number>();
  const ignore = o.ignore;
  if (ignore === undefined || ignore.patterns.length === 0) return units;
  for (const plan of plans) {
    if (typeChangeOf(plan) !== 'from-dir') continue;
    // Any unsynced name differs from this one only in its time and tag.
    const aside = unsyncedPath(plan.path, 0n, o.store.nodeId);
    const dirs = [plan.path];
    for (let dir = dirs.pop(); dir !== undefined && !units.has(plan.unit); dir = dirs.pop()) {
      const entries = await readdir(path.join(folderReal, ...dir.split('/')), { withFileTypes: true }).catch(() => []);
      for (const e of entries) {
        const rel = `${dir}/${e.name}`;
        const isDir = e.isDirectory();
        if (!ignore.ignores(rel, isDir)) {
          if (isDir) dirs.push(rel);
          continue;
        }
        if (!ignore.ignores(`${aside}${rel.slice(plan.path.length)}`, isDir)) {
          o.log.warn('sync: a directory the peer replaced holds ignored files here; left as is', {
            path: plan.path,
            ignored: rel,
          });
          units.add(plan.unit);
          break;
        }
      }
    }
  }
  return units;
}

/** Plans and applies `received` (records the peer has and we lacked). */
export async function applyRemote(received: readonly RevisionEntry[], o: ApplyOptions): Promise<ApplyResult> {
  const { store, log } = o;
  crashPoint('sync-apply');
  const folderReal = await realpath(o.folder);
  const planned = planRemote(received, o);
  const { skipped } = planned;
  const inTheWay = unitsOverIgnoredDirs(folderReal, planned.plans, o);
  for (const u of await unitsHoldingIgnored(folderReal, planned.plans, o)) inTheWay.add(u);
  const plans: PathPlan[] = [];
  for (const p of planned.plans) {
    if (inTheWay.has(p.unit)) skipped.push(p.path);
    else plans.push(p);
  }

  // 1. Content: fetch; just before it is published, make the conflict copies of our own files
  // and keep in history what gets replaced. A conflict lands whole or not at all (its unit): if
  // the peer cannot deliver the content of one of its paths, none of them changes.
  const requests: FetchRequest[] = [];
  for (const plan of plans) if (plan.action.kind === 'fetch') requests.push(plan.action.request);
  const undeliveredUnits = (delivered: readonly FetchRequest[]): Set<number> => {
    const got = new Set(delivered);
    return new Set(plans.filter((p) => p.action.kind === 'fetch' && !got.has(p.action.request)).map((p) => p.unit));
  };
  // A file saved here since the scan is not replaced or deleted unseen: it moves aside
  // (unchanged-since-scan.ts), which the next scan records. Asked before each replacement.
  // Confined before anything moves: a directory on the way replaced by a link out of the folder
  // since the scan must not get a file out there moved aside (PATH_INVALID; the next scan
  // records the link). Only then: a received file's look costs one lstat, not a realpath too.
  const rescue = async (relPath: string, local: RevisionEntry | undefined): Promise<boolean> => {
    if (unchangedSinceScan(folderReal, relPath, local, store)) return false;
    await confined(folderReal, relPath);
    const aside = await rescueUnscanned(folderReal, relPath, local, store);
    if (aside !== undefined)
      log.info('sync: a file changed here since the scan; kept beside it', { path: relPath, copy: aside });
    return aside !== undefined;
  };
  // A path this node may not change (support/path-refusal.ts) is left, with the rest of its
  // conflict, for the next sync: its records are not stored below.
  const refusedUnits = new Set<number>();
  /** Plans whose change is on disk, but a fetch's (the receiver reports its files: `landed`). */
  const doneOnDisk = new Set<PathPlan>();
  const landed = new Map<string, BigIntStats>();
  /** The requests delivered, once the fetch returned. */
  let fetched: Set<FetchRequest> | undefined;
  const refusedHere = (plan: PathPlan, err: unknown): void => {
    if (pathRefusal(err) === undefined) throw err;
    log.warn('sync: cannot change a path here; left for the next sync', {
      path: plan.path,
      error: (err as Error).message,
    });
    refusedUnits.add(plan.unit);
  };
  /** Deletes a file or link the peer deleted (a file into history), unless it was saved since the scan. */
  const deleteEntry = async (plan: PathPlan): Promise<void> => {
    const local = plan.local?.revision;
    const abs = await confined(folderReal, plan.path);
    await rescue(plan.path, plan.local);
    if (local?.kind === 'file') await preserveInHistory(folderReal, abs, local.contentRoot, { move: true });
    else
      await unlink(abs).catch((err: unknown) => {
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      });
  };
  const removeEmptyDir = async (rel: string): Promise<boolean> => removeDirIfEmpty(await confined(folderReal, rel));
  // Type changes. A directory the peer turned into a file or link: the deletions below it land
  // first (deepest first), then it goes; what is still in it (files saved or made since the scan,
  // ignored ones, ones this node may not delete) moves aside with it under its unsynced name
  // (unchanged-since-scan.ts), which the next scan records as new paths: nothing lost, and the
  // peer's file lands. Before, the path was left as is and the folder never got in sync again.
  const clearedEarly = new Set<PathPlan>();
  const plannedPaths = new Set(plans.map((p) => p.path));
  const clearDir = async (plan: PathPlan, deletionsBelow: readonly PathPlan[]): Promise<void> => {
    const below = deletionsBelow
      .filter((x) => !clearedEarly.has(x))
      .sort((x, y) => y.path.split('/').length - x.path.split('/').length);
    for (const x of below) {
      clearedEarly.add(x);
      try {
        if (x.local?.revision.kind === 'dir') await removeEmptyDir(x.path);
        else await deleteEntry(x);
        doneOnDisk.add(x);
      } catch (err) {
        refusedHere(x, err);
      }
    }
    if (await removeEmptyDir(plan.path)) return;
    const abs = await confined(folderReal, plan.path);
    // Named after the directory's revision (its time and node), not this node: every device
    // still holding files of it that the peer never saw (say two that got a third's new file
    // in it before its replacement reached them) moves them aside to the same name, so they
    // meet there rather than as one copy per device.
    const dir = plan.local?.revision;
    const mtimeNs = dir?.mtimeNs ?? (await lstat(abs, { bigint: true })).mtimeNs;
    for (const aside of unsyncedNames(plan.path, mtimeNs, dir?.origin ?? store.nodeId)) {
      // Nor a name this sync puts the peer's entry at: the publisher would find a directory there.
      if (plannedPaths.has(aside)) continue;
      const asideAbs = path.join(path.dirname(abs), path.posix.basename(aside));
      if ((await lstat(asideAbs).catch(() => undefined)) !== undefined) continue;
      await rename(abs, asideAbs);
      log.info('sync: a directory the peer replaced still held files here; moved aside', {
        path: plan.path,
        copy: aside,
      });
      return;
    }
    throw new ClawpeerError('FILE_EXISTS', `${plan.path}: no free name to move this directory aside to`);
  };
  // A file or link the peer turned into a directory goes (a file into history, or aside if it
  // was saved since the scan) before anything lands below it.
  const clearNonDir = async (plan: PathPlan): Promise<void> => {
    const abs = await confined(folderReal, plan.path);
    const st = await lstat(abs).catch(() => undefined);
    if (st === undefined || st.isDirectory()) return;
    if (await rescue(plan.path, plan.local)) return;
    if (isLiveFile(plan.local))
      await preserveInHistory(folderReal, abs, plan.local.revision.contentRoot, { move: true });
    else await unlink(abs);
  };
  // Just before the publisher renames a fetched file over its path (the one look at it: a save
  // since the scan, even while the content was received, moves aside), then what is replaced goes
  // into history. Linked into history only now, not before the transfer: a save written in place
  // meanwhile would have changed the blob's bytes through the shared inode.
  const fetchedAt = new Map<string, PathPlan>();
  for (const plan of plans) if (plan.action.kind === 'fetch') fetchedAt.set(plan.action.request.destPath, plan);
  const beforeReplace = async (relPath: string): Promise<void> => {
    const plan = fetchedAt.get(relPath);
    if (plan === undefined) return;
    if (!(await rescue(relPath, plan.local)) && isLiveFile(plan.local))
      await preserveInHistory(folderReal, await confined(folderReal, relPath), plan.local.revision.contentRoot, {
        move: false,
      });
  };
  const beforePublish = async (delivered: readonly FetchRequest[]): Promise<void> => {
    const missing = undeliveredUnits(delivered);
    const landing = plans.filter((p) => !missing.has(p.unit));
    // Deepest first: a copy that lands where our own losing bytes are copied away goes after them.
    const copies = landing.filter((p) => p.action.kind === 'copy-local').sort((x, y) => y.depth - x.depth);
    // A copy is of our losing bytes as the scan recorded them. Edited in place since, they are
    // gone: the copy would hold other bytes under the loser's revision, which this node could then
    // never serve (peers ask for it at every sync: seed 1056). Nothing has landed yet: the sync
    // stops here, and the next one scans the edit first.
    for (const plan of copies) {
      if (plan.action.kind !== 'copy-local') continue;
      const from = plan.action.from;
      if (!unchangedSinceScan(folderReal, from, store.head(from), store))
        throw new ClawpeerError('FOLDER_BUSY', `${from} changed here during the sync; the sync is retried`);
    }
    // What lands below each type change, in one pass over the landing paths: one pass per type
    // change took a peer's 20,000 directories turned into files 27 s of CPU.
    const fromDir = landing.filter((p) => typeChangeOf(p) === 'from-dir');
    const toDir = plans.filter((p) => typeChangeOf(p) === 'to-dir');
    const changed = new Set([...fromDir, ...toDir].map((p) => p.path));
    const deletionsUnder = new Map<string, PathPlan[]>();
    const landsUnder = new Set<string>();
    if (changed.size > 0)
      for (const x of landing)
        for (let i = x.path.indexOf('/'); i !== -1; i = x.path.indexOf('/', i + 1)) {
          const dir = x.path.slice(0, i);
          if (!changed.has(dir)) continue;
          landsUnder.add(dir);
          if (x.action.kind !== 'delete') continue;
          const list = deletionsUnder.get(dir);
          if (list === undefined) deletionsUnder.set(dir, [x]);
          else list.push(x);
        }
    for (const plan of fromDir) await clearDir(plan, deletionsUnder.get(plan.path) ?? []);
    for (const plan of copies) {
      if (plan.action.kind !== 'copy-local') continue;
      const abs = await confined(folderReal, plan.path);
      if (!(await rescue(plan.path, plan.local)) && isLiveFile(plan.local))
        await preserveInHistory(folderReal, abs, plan.local.revision.contentRoot, { move: false });
      await writeOwnCopy(await confined(folderReal, plan.action.from), abs, plan.action.mode, plan.action.mtimeMs);
      doneOnDisk.add(plan);
    }
    if (copies.length > 0) crashPoint('conflict-copy');
    // After the copies: our losing file at such a path is copied away first. Cleared too when
    // only something below it lands (its own conflict waits for content that did not come).
    if (toDir.length > 0) {
      const landingUnits = new Set(landing.map((p) => p.unit));
      for (const plan of toDir) {
        if (landingUnits.has(plan.unit) || landsUnder.has(plan.path)) await clearNonDir(plan);
      }
    }
    // The paths the copies above were made from are checked now (their bytes are copied). A
    // fetched path is not: beforeReplace looks at it just before its rename, later than this
    // (one lstat per received file less, in a phase the peer spends waiting for our Want).
    for (const p of landing)
      if ((p.action.kind === 'delete' && !clearedEarly.has(p)) || p.action.kind === 'symlink')
        await rescue(p.path, p.local);
  };
  /** Files that could not take the head's mode or mtime: what they kept is certified for it. */
  const metadataKept = new Map<PathPlan, WarmStat>();
  const now = (): bigint => msToNs(Date.now());
  /**
   * A warm entry for each file of `plans` just published, so the next scan does not hash it
   * again; `stats`: the lstat of each fetched file right after its commit. Taken before the
   * write transaction: no file I/O while LMDB's lock is held.
   */
  const warmOf = (
    plans: readonly PathPlan[],
    stats: ReadonlyMap<string, BigIntStats> | undefined,
  ): Map<PathPlan, WarmStat> => {
    const nowNs = now();
    const warm = new Map<PathPlan, WarmStat>();
    for (const plan of plans) {
      const a = plan.action;
      if (plan.head === undefined || (a.kind !== 'fetch' && a.kind !== 'copy-local')) continue;
      const setMs = a.kind === 'fetch' ? a.request.mtimeMs : a.mtimeMs;
      const known = a.kind === 'fetch' ? stats?.get(plan.head.revision.path) : undefined;
      const st = publishedStat(folderReal, plan.head.revision, setMs, nowNs, known);
      if (st !== undefined) warm.set(plan, st);
    }
    return warm;
  };
  /** The log, in one transaction: every record of `plans`, the new heads, the copies, the warm entries. */
  const writeLog = (plans: readonly PathPlan[], warm: ReadonlyMap<PathPlan, WarmStat>): number => {
    let heads = 0;
    store.write((w) => {
      w.setLandings(undefined); // the note of what was to land (pending-landings.ts)
      for (const plan of plans) {
        for (const r of plan.records) w.put(r);
        if (plan.head !== undefined) {
          w.setHead(plan.head.id);
          heads++;
          const st = warm.get(plan);
          if (st !== undefined) w.setWarm(plan.path, st);
          const kept = metadataKept.get(plan);
          if (kept !== undefined) w.setWarm(plan.path, kept, { modeKept: true });
        }
      }
    });
    return heads;
  };
  /**
   * After a failure (a full disk, a lost connection, a peer that stops delivering): records the
   * conflict units whose every plan is on disk (its fetched files published, its copies made,
   * its other changes made, or nothing to do), so the next scan does not record their files as
   * this node's creations. A unit that changed nothing is left for the next sync, as before: a
   * failed sync passes nothing on to the other peers (folder-service.ts), the watcher's events
   * of the changed files do. If the log cannot be written either (the disk is full), the next
   * scan records the files, as before; the caller rethrows the first failure.
   */
  const recordLanded = (): void => {
    // A directory the publisher made for a file below: given the head's mode, as step 2 would
    // (a peer's umask may differ), it is what the scan would record.
    const dirThere = (p: PathPlan): boolean => {
      const a = p.action;
      const h = p.head?.revision;
      if (a.kind !== 'mkdir' || h === undefined) return false;
      return dirTakesHeadMode(folderReal, path.join(folderReal, ...p.path.split('/')), a.mode, h.mode);
    };
    // Once the fetch returned, every delivered file is in place (one already holding the bytes
    // is not reported as published).
    const isDone = (p: PathPlan): boolean =>
      p.action.kind === 'none' ||
      (p.action.kind === 'fetch'
        ? (fetched?.has(p.action.request) ?? landed.has(p.action.request.destPath))
        : doneOnDisk.has(p) || dirThere(p));
    const open = new Set(refusedUnits);
    const changed = new Set<number>();
    for (const p of plans) {
      if (!isDone(p)) open.add(p.unit);
      else if (p.action.kind !== 'none') changed.add(p.unit);
    }
    const whole = plans.filter((p) => changed.has(p.unit) && !open.has(p.unit));
    if (whole.length === 0 && !noted) return;
    try {
      writeLog(whole, warmOf(whole, landed)); // and clears the note of what was to land
      if (whole.length > 0) log.info('sync: failed partway; recorded what landed', { paths: whole.length });
    } catch (err) {
      log.warn('sync: cannot record what landed before the failure; the next scan records it', {
        error: (err as Error).message,
      });
    }
  };

  // Before anything lands: what a kill leaves published is the peer's to the next scan (pending-landings.ts).
  const noted = noteLandings(store, plans, log);
  let outcome: FetchOutcome;
  let settled: PathPlan[];
  try {
    // A file renamed on the peer lands by a rename of ours (exchange/local-moves.ts), not a copy.
    const moves = [...renamesAmong(plans)].flatMap(([to, from]) =>
      to.action.kind === 'fetch'
        ? [{ ...to.action.request, from: from.path, to: to.path, request: to.action.request, fromPlan: from }]
        : [],
    );
    const ready = (m: (typeof moves)[number]): boolean =>
      unchangedSinceScan(folderReal, m.from, m.fromPlan.local, store);
    const moved = new Map<FetchRequest, BigIntStats>();
    if (moves.length > 0) o.guard?.(); // the folder is still the one the sync opened (folder-pin.ts)
    for (const [m, st] of await applyLocalMoves(folderReal, moves, { fsync: o.fsync !== 'none', ready })) {
      moved.set(m.request, st);
      landed.set(m.to, st);
      clearedEarly.add(m.fromPlan); // its deletion is done
      doneOnDisk.add(m.fromPlan);
    }
    outcome = await o.fetch(
      requests.filter((r) => !moved.has(r)),
      (delivered) => beforePublish([...delivered, ...moved.keys()]),
      beforeReplace,
      (relPath, st) => landed.set(relPath, st),
    );
    const published = new Map(outcome.published ?? landed);
    for (const [r, st] of moved) published.set(r.destPath, st);
    outcome = { ...outcome, delivered: [...outcome.delivered, ...moved.keys()], published };
    fetched = new Set(outcome.delivered);
    const missing = undeliveredUnits(outcome.delivered);
    const done: PathPlan[] = [];
    for (const plan of plans) {
      if (missing.has(plan.unit)) skipped.push(plan.path);
      else done.push(plan);
    }

    // 2. Everything that needs no content: symlinks, directories, modes, deletions.
    const publisher = await Publisher.open({
      shareRoot: folderReal,
      force: true,
      chunking: o.chunking,
      ...(o.fsync === undefined ? {} : { fsync: o.fsync }),
      ...(o.guard === undefined ? {} : { guard: o.guard }),
    });
    const dirRemovals: PathPlan[] = [];
    const applyWithoutContent = async (plan: PathPlan): Promise<void> => {
      const a = plan.action;
      switch (a.kind) {
        case 'none':
        case 'fetch':
        case 'copy-local':
          return;
        case 'chmod': {
          const abs = await confined(folderReal, plan.path);
          const relPath = plan.path;
          const kept = await setHeadMetadata({
            abs,
            relPath,
            mode: a.mode,
            mtimeMs: a.mtimeMs,
            store,
            log,
            nowNs: now(),
          });
          if (kept !== undefined) metadataKept.set(plan, kept);
          break;
        }
        case 'mkdir':
          await publisher.makeDir(plan.path);
          await chmod(await confined(folderReal, plan.path), a.mode & 0o777);
          break;
        case 'symlink': {
          const abs = await confined(folderReal, plan.path);
          await rescue(plan.path, plan.local); // once more: the content fetch may have taken a while
          if (isLiveFile(plan.local))
            await preserveInHistory(folderReal, abs, plan.local.revision.contentRoot, { move: true });
          await publisher.makeSymlink(plan.path, a.target, a.mtimeMs);
          break;
        }
        case 'delete':
          if (clearedEarly.has(plan)) return;
          if (plan.local?.revision.kind === 'dir') {
            dirRemovals.push(plan); // done once removed, below
            return;
          }
          await deleteEntry(plan);
          break;
        default: {
          const never: never = a;
          throw new TypeError(`unknown action ${JSON.stringify(never)}`);
        }
      }
      doneOnDisk.add(plan);
    };
    for (const plan of done) await applyWithoutContent(plan).catch((err: unknown) => refusedHere(plan, err));
    // Deepest first, so a directory emptied by this sync goes after its contents. One that still
    // holds files this side has not synced stays; the next scan records it again.
    dirRemovals.sort((x, y) => y.path.split('/').length - x.path.split('/').length);
    for (const plan of dirRemovals)
      await removeEmptyDir(plan.path).then(
        () => doneOnDisk.add(plan),
        (err: unknown) => refusedHere(plan, err),
      );
    await publisher.flushDirs();
    settled = done.filter((plan) => !refusedUnits.has(plan.unit));
    for (const plan of done) if (refusedUnits.has(plan.unit)) skipped.push(plan.path);
  } catch (err) {
    recordLanded();
    throw err;
  }

  // 3. The log, in one transaction: every record of a settled path, the new heads, the copies,
  // and a warm entry for each file just published.
  const warm = warmOf(settled, outcome.published ?? landed);
  crashPoint('sync-log');
  const applied = writeLog(settled, warm);
  const copyPaths = new Set(settled.flatMap((p) => (p.copy === undefined ? [] : [p.copy.entry.revision.path])));
  return {
    copies: new Map(settled.filter((p) => copyPaths.has(p.path)).map((p) => [p.path, p.local])),
    applied,
    conflicts: settled.filter((p) => p.copy !== undefined).length,
    skipped,
    kept: planned.kept,
    chunksReceived: outcome.chunksReceived,
    ...(outcome.noSpace === undefined ? {} : { noSpace: outcome.noSpace }),
  };
}
