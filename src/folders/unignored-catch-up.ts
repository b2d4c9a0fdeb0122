// Paths a folder's `.clawpeerignore` no longer ignores get the peers' versions that arrived while
// they were ignored (Syncthing pulls a path as soon as it is unignored).
//
// While a path is ignored, a sync stores the peers' revisions of it (the logs converge) but keeps
// the head and the disk as they were (sync-plan.ts). Once the rule goes, both nodes hold the same
// revisions, so no sync brings anything: the old file stayed here for good, a file the peers
// added never came, one they deleted stayed, and `status` said in-sync with the roots equal.
//
// After each completed sync of the folder (in its turn), the rules are compared with the ones
// this ran with last (`.clawpeer/ignore-applied.json`). When they changed, each path the old
// rules ignored and the new ones do not, whose head here is older than the head its stored
// revisions pick (pickHead, as a sync would), is brought to that head: what is on disk moves to
// `.clawpeer/unignored/<time>/<path>` (never deleted), the head's file is fetched by content from
// the folder's peers (as `folder revert` does, folder-revert.ts) or the directory, link or
// deletion made, and the head moves. An edit made here while the path was ignored is recorded by
// the scan on the version this node last had on disk (RevisionWriter.recordScanned), so it is
// concurrent with the peers' edits stored meanwhile: when it wins, the head stays and the syncs
// bring the peers' copy of the loser; when it loses (or is a deletion, which an edit beats), no
// sync would bring anything, so it is settled here: the head's file is kept as its conflict
// copy (the very revision the peers record for it) before the peers' version takes its place.
// A path where another device's losing edit has no copy yet is left to the syncs. A directory
// the peers removed goes only once empty. The new rules are recorded once every such path is
// done; a fetch that fails leaves them for the next sync.
import { lstat, mkdir, realpath, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../logger.js';
import { BLAKE3_OUT_BYTES, bytesEqual, toHex } from '../chunking/blake3.js';
import { manifestFromFile } from '../file-chunking/file-chunker.js';
import { writeOwnCopy } from '../folder-sync/conflict-copy.js';
import { defaultFolderChunking } from '../folder-sync/folder-history.js';
import { loadSyncIgnore, parseIgnoreFile, syncIgnoreFrom, type SyncIgnore } from '../folder-sync/sync-ignore.js';
import { openSyncedFolder, type SyncedFolder } from '../folder-sync/synced-folder.js';
import { conflictCopyRevision } from '../folder-sync/sync-plan.js';
import { removeDirIfEmpty } from '../support/remove-empty-dir.js';
import { writeFileAtomic } from '../support/atomic-file.js';
import { readBounded } from '../support/read-bounded.js';
import { INTERNAL_DIR_NAME, isInternalPath } from '../store/internal-names.js';
import type { RevisionStore } from '../store/revision-store.js';
import { preserveInHistory } from '../store/sync-history.js';
import { pickHead } from '../sync/conflict.js';
import { mtimeMsOf, type RevisionEntry } from '../sync/revision.js';
import type { ActiveFolder, FolderServiceOptions } from './folder-service-types.js';
import { confined, copiedIn, depth, gather, moveAside, place, type PathRevert } from './folder-revert.js';

/** The rules this ran with last, under the folder's .clawpeer/. */
const APPLIED_FILE_NAME = 'ignore-applied.json';
/** Where what was on disk at a caught-up path goes, under .clawpeer/. */
export const UNIGNORED_DIR_NAME = 'unignored';
const LOCK_WAIT_MS = 30_000;

export interface CatchUpReport {
  /** Paths brought to the peers' head. */
  readonly paths: readonly string[];
  /** Where the local versions went, when something was there. */
  readonly keptIn?: string;
}

/** The record's size at most: more than any ignore file's patterns (sync-ignore.ts reads 4 MiB). */
const MAX_APPLIED_BYTES = 8 << 20;

/** Where folder `dir` keeps the rules the catch-up ran with last. */
export const ignoreAppliedFile = (dir: string): string => path.join(dir, INTERNAL_DIR_NAME, APPLIED_FILE_NAME);

/**
 * The patterns recorded last in `file`; undefined when none were (a folder this never ran on),
 * or the file is no regular file of JSON within the cap: a FIFO in its place blocked the read
 * (and a thread of libuv's pool) until a writer came, hanging the folder's syncs.
 */
export async function appliedPatterns(file: string): Promise<string[] | undefined> {
  try {
    const parsed = JSON.parse((await readBounded(file, MAX_APPLIED_BYTES)).toString('utf8')) as {
      patterns?: unknown;
    } | null;
    return Array.isArray(parsed?.patterns) ? parsed.patterns.map(String) : undefined;
  } catch {
    return undefined;
  }
}

const isLiveDir = (e: PathRevert['before']): boolean =>
  e !== undefined && !e.revision.deleted && e.revision.kind === 'dir';

const sameHead = (a: PathRevert['before'], b: PathRevert['after']): boolean =>
  a === b || (a !== undefined && b !== undefined && toHex(a.id) === toHex(b.id));

/** A path to bring to the head its revisions pick; `copy`: the head here lost a conflict, kept under this revision. */
interface CatchUpPath extends PathRevert {
  readonly copy?: RevisionEntry;
}

/** The paths the old rules ignored and the new do not, each with the head its revisions pick. */
function planCatchUp(store: RevisionStore, before: SyncIgnore, now: SyncIgnore): CatchUpPath[] {
  const ids = store.allIds();
  const seen = new Set<string>();
  const out: CatchUpPath[] = [];
  const copied = copiedIn(store);
  for (let at = 0; at < ids.length; at += BLAKE3_OUT_BYTES) {
    const r = store.get(ids.subarray(at, at + BLAKE3_OUT_BYTES))?.revision;
    if (r === undefined || seen.has(r.path)) continue;
    seen.add(r.path);
    const isDir = r.kind === 'dir';
    if (isInternalPath(r.path) || !before.ignores(r.path, isDir) || now.ignores(r.path, isDir)) continue;
    const pick = pickHead(store.history(r.path), copied);
    const head = store.head(r.path);
    if (pick === undefined || sameHead(head, pick.head)) continue;
    // Another device's losing edit not kept as a copy yet: the syncs settle it first.
    if (pick.losers.some((l) => !sameHead(head, l.loser) && !copied(l.loser))) continue;
    // The head here lost to the peers' (an edit made here while ignored, concurrent with theirs,
    // scanned since: folder-scanner.ts builds it on what this node had on disk). No sync brings
    // the peers' again (the logs hold both), so it is settled here as a sync would: the head's
    // bytes kept under their conflict name (the revision the peers record for it too), theirs here.
    const lost = pick.losers.find((l) => sameHead(head, l.loser));
    if (pick.head.revision.deleted && (head === undefined || head.revision.deleted)) continue;
    const copy = lost === undefined ? undefined : conflictCopyRevision(lost.loser.revision, lost.loserPath);
    out.push({ path: r.path, before: head, after: pick.head, withdrawn: [], ...(copy === undefined ? {} : { copy }) });
  }
  return out;
}

/**
 * Keeps the file at `p`'s path, the head that lost, as its conflict copy: a copy of its own at the
 * copy's path, checked to hold the head's bytes, recorded as the copy's head (unless recorded
 * before: a sync brought the peers' copy of it), then the file itself into history (it lives on
 * as the copy). False, with nothing moved, when the file is not the head's any more or the copy's
 * path is taken: it goes to the unignored directory then, as any other.
 */
async function keepAsConflictCopy(
  folderReal: string,
  folder: SyncedFolder,
  p: CatchUpPath,
  signal: AbortSignal,
): Promise<boolean> {
  const head = p.before?.revision;
  const copy = p.copy;
  if (head === undefined || copy === undefined) return false;
  const abs = await confined(folderReal, p.path, 'skip');
  const st = abs === undefined ? undefined : await lstat(abs).catch(() => undefined);
  if (abs === undefined || st === undefined || !st.isFile()) return false;
  const holds = async (file: string): Promise<boolean> =>
    bytesEqual((await manifestFromFile(file, defaultFolderChunking(), { signal })).root, head.contentRoot);
  if (folder.store.has(copy.id)) {
    // Its copy came from the peers: this file goes to history only if it is the head's bytes.
    if (!(await holds(abs))) return false;
  } else {
    const to = await confined(folderReal, copy.revision.path, 'skip');
    if (to === undefined || (await lstat(to).catch(() => undefined)) !== undefined) return false;
    await writeOwnCopy(abs, to, head.mode, mtimeMsOf(head));
    if (!(await holds(to))) {
      await rm(to, { force: true });
      return false;
    }
    folder.store.write((w) => {
      w.put(copy);
      w.setHead(copy.id);
    });
  }
  // Unchanged since: the bytes copied (or hashed) are the ones that go to history.
  const now = await lstat(abs).catch(() => undefined);
  if (now === undefined || now.ino !== st.ino || now.size !== st.size || now.mtimeMs !== st.mtimeMs) return false;
  await preserveInHistory(folderReal, abs, head.contentRoot, { move: true });
  return true;
}

/**
 * Brings the paths the folder's ignore rules no longer ignore to the peers' heads (see the top);
 * undefined when the rules did not change since the last call. Run in the folder's turn.
 */
export async function catchUpUnignored(o: {
  readonly service: FolderServiceOptions;
  readonly active: ActiveFolder;
  /** The peer to ask first (the one just synced with). */
  readonly peerId: string;
  readonly signal: AbortSignal;
}): Promise<CatchUpReport | undefined> {
  const f = o.active.config;
  const appliedFile = ignoreAppliedFile(f.path);
  const now = await loadSyncIgnore(f.path);
  const old = await appliedPatterns(appliedFile);
  const record = (patterns: readonly string[]): Promise<void> =>
    writeFileAtomic(appliedFile, `${JSON.stringify({ patterns })}\n`);
  if (old !== undefined && JSON.stringify(old) === JSON.stringify(now.patterns)) return undefined;
  if (old === undefined || old.length === 0) {
    await record(now.patterns); // nothing was ignored before (but the file itself): nothing to catch up
    return undefined;
  }
  const before = syncIgnoreFrom(parseIgnoreFile(old.join('\n')));
  const log = o.service.log.child('folders');
  const folder = await openSyncedFolder(f.path, {
    requireMarker: true,
    nodeId: o.service.identity.nodeId,
    chunking: defaultFolderChunking(),
    lockWaitMs: LOCK_WAIT_MS,
    log,
    signal: o.signal,
    resident: o.service.resident,
  });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const incoming = path.join(f.path, INTERNAL_DIR_NAME, `unignored-incoming-${stamp}`);
  try {
    const changed = planCatchUp(folder.store, before, folder.ignore);
    if (changed.length === 0) {
      await record(folder.ignore.patterns);
      return { paths: [] };
    }
    const folderReal = await realpath(f.path);
    await mkdir(incoming, { recursive: true, mode: 0o700 });
    const peers = [o.peerId, ...o.active.peerIds.filter((p) => p !== o.peerId)];
    // Throws when no peer could be asked: nothing changed, the next sync tries again.
    const lacking = await gather(
      { service: o.service, folderId: f.id, signal: o.signal },
      folder,
      changed,
      incoming,
      peers,
    );
    const todo = changed.filter((p) => !lacking.has(p.path));
    // A directory that goes (deleted by the peers, or now their file or link) goes only once
    // empty: a file made in it here since (its own new path) is not moved out of the folder.
    const going = todo.filter((p) => isLiveDir(p.before) && !isLiveDir(p.after));
    const rest = todo.filter((p) => !going.includes(p));
    const setHeads = (paths: readonly PathRevert[]): void =>
      folder.store.write((w) => {
        for (const p of paths) if (p.after !== undefined) w.setHead(p.after.id);
      });
    o.service.resident.watchers.forFolder(folder.dir).distrust();
    // The conflict copies first: a kill after leaves the head here, its copy recorded, to redo.
    const copied = new Set<CatchUpPath>();
    for (const p of rest) if (await keepAsConflictCopy(folderReal, folder, p, o.signal)) copied.add(p);
    setHeads(rest);
    const keptIn = path.join(folderReal, INTERNAL_DIR_NAME, UNIGNORED_DIR_NAME, stamp);
    let kept = false;
    for (const p of [...rest].sort((a, b) => depth(b.path) - depth(a.path)))
      if (!copied.has(p)) kept = (await moveAside(folderReal, p, keptIn)) || kept;
    const nowNs = BigInt(Date.now()) * 1_000_000n;
    for (const p of [...rest].sort((a, b) => depth(a.path) - depth(b.path)))
      await place(folderReal, folder.store, p, incoming, nowNs);
    const gone: PathRevert[] = [];
    for (const p of [...going].sort((a, b) => depth(b.path) - depth(a.path))) {
      const abs = await confined(folderReal, p.path, 'skip');
      if (abs === undefined) continue;
      if (!(await removeDirIfEmpty(abs))) {
        log.info('a directory the peers removed holds files here; kept', { folder: f.id, path: p.path });
        continue;
      }
      setHeads([p]);
      await place(folderReal, folder.store, p, incoming, nowNs);
      gone.push(p);
    }
    const done = [...rest, ...gone];
    if (lacking.size === 0) await record(folder.ignore.patterns);
    log.info('paths no longer ignored now hold the peers versions', {
      folder: f.id,
      paths: done.length,
      ...(lacking.size === 0 ? {} : { lacking: lacking.size }),
      ...(kept ? { keptIn } : {}),
    });
    return { paths: done.map((p) => p.path), ...(kept ? { keptIn } : {}) };
  } finally {
    await rm(incoming, { recursive: true, force: true }).catch(() => undefined);
    await folder.close();
  }
}

/** catchUpUnignored for the folder service, after a completed sync: a failure is logged (the next sync tries again), never thrown. */
export async function catchUpQuietly(
  o: Parameters<typeof catchUpUnignored>[0] & { readonly log: Logger },
): Promise<void> {
  try {
    await catchUpUnignored(o);
  } catch (err) {
    o.log.warn('paths no longer ignored keep their old versions for now', {
      folder: o.active.config.id,
      error: (err as Error).message,
    });
  }
}
