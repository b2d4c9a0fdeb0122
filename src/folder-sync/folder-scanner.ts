// Turns the state of a shared folder on disk into local revisions in its revision log.
//
// Goals: one pass over the tree (tree-scan.ts; or, when a folder watcher vouches that only some
// files changed, over just those: `onlyChanged`) that records a new local revision for every path
// that was added or changed since the last scan and a tombstone for every path that vanished;
// unchanged files are recognised by the warm index (size + mtimeNs + inode + device, certified
// for the current head) and never re-hashed, so a no-op rescan of a big tree reads metadata only;
// changes are committed in batches (one transaction per `batchSize` changes, one in all for a
// typical scan; tombstones in one more, after the walk's changes), so a crash leaves whole
// batches. Ignored paths (sync-ignore.ts: the folder's .clawpeerignore, loaded by the caller)
// are neither entered nor recorded, and a head under one is not tombstoned: ignoring a path
// is not deleting it. A change is recorded on the version this node last had on disk
// (RevisionWriter.recordScanned), not on the peers' revisions a sync stored while the path was
// ignored: an edit made meanwhile meets theirs as a conflict. Before anything else it stores
// the peer's records of files a sync killed mid-transfer had published (pending-landings.ts),
// so they are not taken for this node's.
// Non-goals: watching (the driver rescans on events), applying remote revisions (the sync
// driver), hashing in parallel.
//
// What counts as a change: a new path; another kind; a file's content root; a symlink's target;
// permission bits; a file's mtime (to the ms: the precision a sync sets, sync/revision.ts isMtimeOf).
// A touch, or a rewrite with the same bytes, is a revision of the same content with the new time,
// so peers take the time too, as rsync -a and Syncthing keep mtimes. Without it, a file written
// and then given its time (tar, cp -p, rsync into the folder) kept the time of the write on every
// other node when a scan ran between the two steps (convergence seed 20076).
// A directory's mtime moves with its entries, so directories change on kind and mode only.
//
// Safety rules:
//   - Racily clean files (modified within `racyWindowMs` of the scan, the file system's
//     timestamp granularity can hide a second write) are hashed but not certified warm, so the
//     next scan hashes them again.
//   - A file that changes while it is hashed (size, mtime or inode differ after) is skipped and
//     counted `unstable`; the next scan picks it up.
//   - Paths under anything the walk could not read (an unreadable directory, a file that failed
//     to hash) are never tombstoned: an I/O error must not become a deletion that propagates to
//     every peer.
//   - The `.clawpeer` directory and publisher temp files (isInternalPath) are never recorded.
//     Temp files a killed publish left (writer gone, or status unchanged for STALE_TEMP_AGE_MS)
//     are removed on the way, so a sync walks the tree once.
//
// Speed: a no-op scan is one lstat and one LMDB read per file (the warm entry:
// RevisionStore.isWarm, keyed without hashing the path); no record is decoded unless something
// changed. Vanished paths: when the walk saw as many paths with a live head as the store counts
// live heads, every live head was seen and nothing vanished (the common case: no per-path work).
// Otherwise the seen paths are compared with every head's path key, decoding only the heads
// the walk did not see.

import { lstatSync, type BigIntStats } from 'node:fs';
import path from 'node:path';
import { bytesEqual } from '../chunking/blake3.js';
import type { ChunkingParams } from '../chunking/fastcdc.js';
import { manifestFromFile } from '../file-chunking/file-chunker.js';
import type { FileManifest } from '../chunking/manifest.js';
import { ClawpeerError, isClawpeerError } from '../errors.js';
import { isConflictPath } from '../sync/conflict.js';
import { isMtimeOf, type RevisionEntry } from '../sync/revision.js';
import { splitHardLink } from './conflict-copy.js';
import { fileKeyOf, isRacy, RACY_WINDOW_MS, sameFileKey } from '../store/file-key.js';
import { isInternalDirName, isInternalPath, isTempFileName } from '../store/internal-names.js';
import { removeTempFileIfStale, STALE_TEMP_AGE_MS } from '../store/temp-files.js';
import { RevisionStore } from '../store/revision-store.js';
import type { RevisionDraft } from '../store/revision-store.js';
import type { WarmStat } from '../store/revlog-format.js';
import { recoverLandings } from './pending-landings.js';
import { syncIgnoreFrom, type SyncIgnore } from './sync-ignore.js';
import { fileEntryOf, scanTreeBatches } from '../store/tree-scan.js';
import type { TreeEntry, TreeScanIssue } from '../store/tree-scan.js';
import { wallClockMs } from '../support/test-hooks.js';
import { normalizeSharePath } from '../transfer/paths.js';

/** Changes committed per transaction: bounds the memory of pending drafts (~300 bytes each). */
export const DEFAULT_SCAN_BATCH_CHANGES = 1000;

export interface ScanFolderOptions {
  /** Chunking parameters of the folder's content roots (must match what peers use). */
  readonly chunking: ChunkingParams;
  /** Time of the scan, ns since the epoch (tombstone mtimes, racy check). Default: now. */
  readonly nowNs?: bigint;
  /** Files modified less than this before `nowNs` are not certified warm. Default RACY_WINDOW_MS (2 s). */
  readonly racyWindowMs?: number;
  /** Temp files whose status is older than this are removed. Default STALE_TEMP_AGE_MS. */
  readonly staleTempAgeMs?: number;
  /** Changes per transaction. Default DEFAULT_SCAN_BATCH_CHANGES. */
  readonly batchChanges?: number;
  /**
   * Told about every file it hashed whose stat did not move meanwhile (a sync reuses the
   * manifest), with that stat and when the scan began (the earlier of `nowNs` and the real
   * clock): before it took the stat, so the moment the racy-window rule may take as when hashing
   * began (chunk-reader.ts ScannedAs).
   */
  readonly onHashed?: (relPath: string, manifest: FileManifest, stat: WarmStat, hashedAtNs: bigint) => void;
  /** Told about entries that cannot be recorded; without it the first such problem is thrown. */
  readonly onIssue?: (issue: TreeScanIssue) => void;
  /**
   * Told about each name that was not NFC on disk and has been renamed to its NFC form (a
   * folder's paths are its names on disk, and paths travel in NFC; Syncthing's autoNormalize).
   */
  readonly onRenamedToNfc?: (from: string, to: string) => void;
  /** The folder's ignore rules (loadSyncIgnore). Default: nothing is ignored but the ignore file. */
  readonly ignore?: SyncIgnore;
  /**
   * The paths a folder watcher saw named in events since the last complete scan began, when it
   * vouches that nothing else changed (folder-watcher.ts). If each is a plain file change (a
   * regular file edited, chmod'ed or new in a recorded directory; a recorded file or symlink
   * gone), only they are looked at; anything else (a directory, a symlink now, a hard-linked
   * file, an ignored path such as the ignore file) means the whole walk, as without this option.
   */
  readonly onlyChanged?: readonly string[];
  readonly signal?: AbortSignal;
  /** Runs before paths the walk did not see are recorded deleted: throws when the folder was swapped (folder-pin.ts). */
  readonly beforeTombstones?: () => void;
}

export interface ScanFolderResult {
  /** Paths with a new revision and no live head before (new, or back after a deletion). */
  readonly added: number;
  /** Paths whose live head changed (content, kind or mode). */
  readonly changed: number;
  /** Tombstones recorded. */
  readonly deleted: number;
  /** Paths seen and left as they were. */
  readonly unchanged: number;
  /** Files that changed while being hashed (not recorded; the next scan retries). */
  readonly unstable: number;
  /** Bytes read to compute content roots. */
  readonly hashedBytes: number;
  /** Transactions committed. */
  readonly commits: number;
  /** Stale publisher temp files removed. */
  readonly removedTempFiles: number;
}

interface PendingChange {
  readonly draft: RevisionDraft | undefined; // undefined: warm index update only
  readonly relPath: string;
  readonly warm: WarmStat | undefined;
}

const NS_PER_MS = 1_000_000n;
const NO_ROOT = new Uint8Array(0);

function statOf(e: Pick<TreeEntry, 'size' | 'mtimeNs' | 'ino' | 'dev' | 'mode'>): WarmStat {
  return { size: e.size, mtimeNs: e.mtimeNs, ino: e.ino, dev: e.dev, mode: e.mode };
}

/** True when `relPath` is `prefix` or inside it. */
function isUnder(relPath: string, prefix: string): boolean {
  return prefix === '' || relPath === prefix || relPath.startsWith(prefix + '/');
}

/** `rel`'s lstat, or 'gone' (ENOENT, ENOTDIR), or 'unreadable' (any other error). */
function lstatOrGone(root: string, rel: string): BigIntStats | 'gone' | 'unreadable' {
  try {
    return lstatSync(path.join(root, ...rel.split('/')), { bigint: true, throwIfNoEntry: false }) ?? 'gone';
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOTDIR' ? 'gone' : 'unreadable';
  }
}

/** True when `rel` is a path a revision may have, spelled as the walk spells it (transfer/paths.ts). */
function isSharePath(rel: string): boolean {
  try {
    return normalizeSharePath(rel) === rel;
  } catch {
    return false;
  }
}

/** What the named paths of a watcher amount to, when each is a plain file change (namedChanges). */
interface NamedChanges {
  /** Regular files (edited, or new in a recorded directory) to look at. */
  readonly present: TreeEntry[];
  /** Recorded files and symlinks that are gone. */
  readonly gone: RevisionEntry[];
}

/**
 * `paths` as plain file changes: each is now a regular file with one link, in the root or a
 * recorded directory, where no directory or symlink was recorded (edited, or new); or it is
 * gone and was a recorded file or symlink (or nothing). Undefined as soon as one is anything
 * else (a directory, a symlink now, an ignored or internal path, an unreadable one, a name no
 * path may have): the whole walk then. A file with other hard links changes under their names too, and only the name
 * written through raised the event: the walk finds the others.
 */
function namedChanges(
  root: string,
  paths: readonly string[],
  store: RevisionStore,
  ignore: SyncIgnore,
): NamedChanges | undefined {
  const present: TreeEntry[] = [];
  const gone: RevisionEntry[] = [];
  for (const rel of new Set(paths)) {
    if (rel === '' || ignore.ignores(rel, false) || ignore.ignores(rel, true)) return undefined;
    // A name the walk would refuse (a control character, a trailing dot) is its to report as an
    // issue: taken as it is, its revision was refused by the log and the whole sync failed.
    if (!isSharePath(rel)) return undefined;
    if (isInternalPath(rel)) {
      // A publish's temp file that is gone again (renamed into place, and that name is named
      // too) holds nothing to record; one still there may be a killed publish's, for the walk to sweep.
      if (isTempFileName(path.posix.basename(rel)) && lstatOrGone(root, rel) === 'gone') continue;
      return undefined;
    }
    const st = lstatOrGone(root, rel);
    if (st === 'unreadable') return undefined; // never a deletion
    const head = store.liveHead(rel);
    if (st === 'gone') {
      if (head?.revision.kind === 'dir') return undefined; // its contents went too: the walk tombstones them
      if (head !== undefined) gone.push(head);
      continue;
    }
    if (!st.isFile() || st.nlink !== 1n) return undefined;
    if (head !== undefined && head.revision.kind !== 'file') return undefined;
    const parent = rel.includes('/') ? rel.slice(0, rel.lastIndexOf('/')) : '';
    if (parent !== '' && store.liveHead(parent)?.revision.kind !== 'dir') return undefined;
    present.push(fileEntryOf(rel, st));
  }
  return { present, gone };
}

/**
 * Scans `folder` and records its changes in `store` as revisions made by `store.nodeId`.
 * Throws ClawpeerError IO when the folder cannot be read, ABORTED on the signal, and (without
 * `onIssue`) the first entry problem.
 */
export async function scanFolder(
  store: RevisionStore,
  folder: string,
  options: ScanFolderOptions,
): Promise<ScanFolderResult> {
  const root = path.resolve(folder);
  const nowNs = options.nowNs ?? BigInt(wallClockMs()) * NS_PER_MS;
  // For onHashed: before this scan took any stat, on the clock that stamps mtimes (not a skewed one).
  const realNowNs = BigInt(Date.now()) * NS_PER_MS;
  const hashedAtNs = nowNs < realNowNs ? nowNs : realNowNs;
  const racyWindowMs = options.racyWindowMs ?? RACY_WINDOW_MS;
  const batchChanges = options.batchChanges ?? DEFAULT_SCAN_BATCH_CHANGES;
  if (!Number.isSafeInteger(batchChanges) || batchChanges < 1)
    throw new ClawpeerError('USAGE', `batchChanges must be a positive integer, got ${batchChanges}`);
  const { signal } = options;
  // What a sync killed mid-transfer had published is the peer's, not this node's (pending-landings.ts).
  await recoverLandings(store, root, options.chunking, nowNs);

  let added = 0;
  let changed = 0;
  let deleted = 0;
  let unchanged = 0;
  let unstable = 0;
  let hashedBytes = 0;
  let commits = 0;
  let removedTempFiles = 0;
  const staleTempAgeMs = options.staleTempAgeMs ?? STALE_TEMP_AGE_MS;
  const nowMs = Number(nowNs / NS_PER_MS);
  const seenPaths: string[] = []; // every path walked (not internal ones)
  let liveSeen = 0; // of those, the paths with a live head once the walk has recorded its changes
  const unreadable: string[] = []; // relative paths under which nothing may be tombstoned
  let pending: PendingChange[] = [];

  const report = (issue: TreeScanIssue): void => {
    const rel = path.relative(root, issue.localPath).split(path.sep).join('/');
    unreadable.push(rel.startsWith('..') ? '' : rel);
    if (options.onIssue === undefined) throw issue.error;
    options.onIssue(issue);
  };

  const flush = (): void => {
    if (pending.length === 0) return;
    const batch = pending;
    pending = [];
    store.write((w) => {
      for (const change of batch) {
        if (change.draft !== undefined) w.recordScanned(change.draft);
        if (change.warm !== undefined) w.setWarm(change.relPath, change.warm);
      }
    });
    commits++;
  };
  const enqueue = (change: PendingChange): void => {
    pending.push(change);
    if (pending.length >= batchChanges) flush();
  };
  const certify = (e: TreeEntry): WarmStat | undefined =>
    isRacy(e.mtimeNs, nowNs, racyWindowMs) ? undefined : statOf(e);

  const ignore = options.ignore ?? syncIgnoreFrom([]);
  // A log with no revision at all (a folder's first scan) has no heads and no warm entries: its
  // paths need not be looked up one by one (two LMDB reads and two path hashes per file).
  const noHeads = store.idSet().size === 0;
  /** Records what changed about one walked entry (nothing, for an unchanged one). */
  const visit = async (walked: TreeEntry): Promise<void> => {
    let entry = walked;
    const rel = entry.relPath;
    if (entry.kind !== 'dir' && ignore.matches(rel, false)) return;
    if (isInternalPath(rel)) {
      const isTemp = entry.kind === 'file' && isTempFileName(path.posix.basename(rel));
      if (isTemp && removeTempFileIfStale(path.join(root, ...rel.split('/')), { nowMs, minAgeMs: staleTempAgeMs }))
        removedTempFiles++;
      return;
    }
    seenPaths.push(rel);
    // A conflict copy that is a second name of another file (the live file it was linked from,
    // by a sync of older versions killed while settling the conflict) would change whenever that
    // file is written: it gets an inode of its own before it is looked at.
    if (entry.kind === 'file' && isConflictPath(rel)) {
      const abs = path.join(root, ...rel.split('/'));
      try {
        if (await splitHardLink(abs)) entry = fileEntryOf(rel, lstatSync(abs, { bigint: true }));
      } catch (err) {
        report({
          localPath: abs,
          error: new ClawpeerError(
            'IO',
            `cannot give conflict copy ${abs} a file of its own: ${(err as Error).message}`,
            { cause: err },
          ),
        });
        return;
      }
    }
    if (entry.kind === 'file' && !noHeads && store.isWarm(rel, entry)) {
      // an entry is its own WarmStat
      unchanged++;
      liveSeen++; // a warm entry is certified for a live head
      return;
    }
    const live = noHeads ? undefined : store.liveHead(rel);
    if (live !== undefined) liveSeen++; // an added path counts once its revision is queued
    const base = { path: rel, kind: entry.kind, mode: entry.mode, mtimeNs: entry.mtimeNs, deleted: false } as const;

    if (entry.kind === 'file') {
      const sameMeta = live !== undefined && live.revision.kind === 'file' && live.revision.mode === entry.mode;
      const abs = path.join(root, ...rel.split('/'));
      let contentRoot: Uint8Array;
      try {
        const manifest = await manifestFromFile(abs, options.chunking, {
          sizeHint: entry.size, // the walk's lstat: no fstat for a small file
          ...(signal === undefined ? {} : { signal }),
        });
        hashedBytes += manifest.size;
        const after = lstatSync(abs, { bigint: true });
        const stable = manifest.size === entry.size && sameFileKey(fileKeyOf(after), entry);
        if (!stable) {
          unstable++;
          return;
        }
        contentRoot = manifest.root;
        options.onHashed?.(rel, manifest, statOf(entry), hashedAtNs);
      } catch (err) {
        // The file vanished or became unreadable mid-scan: an issue, never a deletion.
        const errno =
          !isClawpeerError(err) && err instanceof Error && typeof (err as NodeJS.ErrnoException).code === 'string';
        if (!isClawpeerError(err, 'IO') && !errno) throw err;
        const error = isClawpeerError(err)
          ? err
          : new ClawpeerError('IO', `cannot read ${abs}: ${err.message}`, { cause: err });
        report({ localPath: abs, error });
        return;
      }
      if (sameMeta && bytesEqual(live.revision.contentRoot, contentRoot) && isMtimeOf(entry.mtimeNs, live.revision)) {
        unchanged++;
        const warm = certify(entry);
        if (warm !== undefined) enqueue({ draft: undefined, relPath: rel, warm });
        return;
      }
      if (live === undefined) {
        added++;
        liveSeen++;
      } else {
        changed++;
      }
      enqueue({
        draft: { ...base, contentRoot, size: entry.size, linkTarget: '' },
        relPath: rel,
        warm: certify(entry),
      });
      return;
    }

    const target = entry.kind === 'symlink' ? (entry.linkTarget ?? '') : '';
    const same =
      live !== undefined &&
      live.revision.kind === entry.kind &&
      live.revision.mode === entry.mode &&
      live.revision.linkTarget === target;
    if (same) {
      unchanged++;
      return;
    }
    if (live === undefined) {
      added++;
      liveSeen++;
    } else {
      changed++;
    }
    enqueue({
      draft: { ...base, contentRoot: NO_ROOT, size: entry.kind === 'symlink' ? entry.size : 0, linkTarget: target },
      relPath: rel,
      warm: undefined,
    });
  };

  const tombstone = (rev: RevisionEntry['revision']): void => {
    deleted++;
    enqueue({
      draft: {
        path: rev.path,
        kind: rev.kind,
        contentRoot: NO_ROOT,
        size: 0,
        mode: rev.mode,
        mtimeNs: nowNs,
        deleted: true,
        linkTarget: '',
      },
      relPath: rev.path,
      warm: undefined,
    });
  };

  // Only the paths a watcher saw change, when each is a plain file change: nothing else in the
  // tree can have changed, and nothing else vanished.
  const named = options.onlyChanged === undefined ? undefined : namedChanges(root, options.onlyChanged, store, ignore);
  if (named !== undefined) {
    for (const entry of named.present) await visit(entry);
    if (named.gone.length > 0) options.beforeTombstones?.();
    for (const head of named.gone) tombstone(head.revision);
    flush();
    return { added, changed, deleted, unchanged, unstable, hashedBytes, commits, removedTempFiles };
  }
  const skipDir = (rel: string): boolean => isInternalDirName(rel) || ignore.matches(rel, true);
  const walk = scanTreeBatches(root, {
    rootName: null,
    onIssue: report,
    renameToNfc: options.onRenamedToNfc ?? (() => undefined),
    skipDir,
    ...(signal === undefined ? {} : { signal }),
  });
  for await (const batch of walk) for (const entry of batch) await visit(entry);

  // Everything with a live head that the walk did not see is gone, unless it lies under
  // something the walk could not read. The walk's own changes are committed first, so the
  // store's count of live heads includes the paths it added.
  flush();
  if (store.liveHeadCount() === liveSeen)
    return { added, changed, deleted, unchanged, unstable, hashedBytes, commits, removedTempFiles };
  options.beforeTombstones?.(); // an empty directory swapped in: its files are not deleted on the peers
  const seen = new Set(seenPaths.map((rel) => RevisionStore.pathKeyOf(rel)));
  for (const key of store.headPathKeys()) {
    if (seen.has(key)) continue;
    const rev = store.headByKey(key)?.revision;
    if (rev === undefined || rev.deleted || isInternalPath(rev.path)) continue;
    if (unreadable.some((prefix) => isUnder(rev.path, prefix))) continue;
    if (ignore.ignores(rev.path, rev.kind === 'dir')) continue;
    tombstone(rev);
  }
  flush();
  return { added, changed, deleted, unchanged, unstable, hashedBytes, commits, removedTempFiles };
}
