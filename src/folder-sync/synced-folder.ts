// A folder opened for one sync: its lock held, its revision log open, its disk state scanned.
//
// Goals: the one way both the client and the listener start a sync, so both hold the folder
// lock for the whole exchange (no second sync, scan or restore interleaves) and both reconcile
// a log that matches the disk as of the scan. A resident node passes its folder watcher: when
// nothing changed since the last scan began, the log still matches the disk and the scan is
// skipped; when the changes were plain file changes, only those paths are looked at
// (folder-watcher.ts). A resident node also keeps what each folder's last scan could not record
// (UnsyncableEntries), for `clawpeer status`, and logs such an entry once, not at every scan.
// Non-goals: the watching itself, the --watch loop (the CLI).
import { lstat, mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { ChunkingParams } from '../chunking/fastcdc.js';
import type { FileManifest } from '../chunking/manifest.js';
import { ClawpeerError } from '../errors.js';
import type { Logger } from '../logger.js';
import { scanFolder, type ScanFolderResult } from './folder-scanner.js';
import { FolderWatchers } from './folder-watcher.js';
import { RevisionStorePool } from '../store/revision-store-pool.js';
import { FolderLock } from '../store/folder-lock.js';
import { ManifestCache } from '../exchange/manifest-cache.js';
import { relativeEntryPath, unsyncableReason } from '../exchange/unreadable-entries.js';
import { loadSyncIgnore, type SyncIgnore } from './sync-ignore.js';
import { RevisionStore } from '../store/revision-store.js';
import { INTERNAL_DIR_NAME } from '../store/internal-names.js';
import type { WarmStat } from '../store/revlog-format.js';
import { hasVanished } from '../support/path-refusal.js';
import { FolderPin } from '../exchange/folder-pin.js';

export interface SyncedFolder {
  readonly dir: string;
  readonly store: RevisionStore;
  /** The scan's counts; undefined when the watcher vouched that nothing changed (no scan ran). */
  readonly scan: ScanFolderResult | undefined;
  /** Manifests the scan computed, for serving the peer's fetch without hashing again. */
  readonly manifests: ManifestCache;
  /** The folder's ignore rules (its .clawpeerignore): what this side neither records nor applies. */
  readonly ignore: SyncIgnore;
  /** Entries the scan could not read or name: left out of this sync (empty when no scan ran). */
  readonly unreadable: readonly UnreadableEntry[];
  /** The folder's directory and `.clawpeer/` as opened: a sync checks it before it writes (folder-pin.ts). */
  readonly pin: FolderPin;
  /** Closes the log and releases the lock. */
  close(): Promise<void>;
}

/**
 * An entry the scan left out: its path (relative, control and bidi characters escaped: `a\#012b`;
 * a name that is not UTF-8 shows its bytes escaped), why, and why in a few words that do not
 * name it (exchange/unreadable-entries.ts `unsyncableReason`: "name has a control character").
 */
export interface UnreadableEntry {
  readonly path: string;
  readonly error: string;
  readonly reason: string;
}

/** Entries of an UnsyncableEntries log line (the rest are counted). */
const LOGGED_ENTRIES = 10;

/** Paths kept per folder and reason, the first in path order (the count is of all): a folder of a million bad names holds 100. */
export const UNSYNCABLE_PATHS_KEPT = 100;

/** The entries a folder's scan left out for one reason: how many, and the first UNSYNCABLE_PATHS_KEPT paths, sorted. */
export interface UnsyncableReason {
  readonly reason: string;
  readonly count: number;
  readonly paths: readonly string[];
}

/**
 * Per folder, the entries its last scan could not record (a name with a control character, a
 * file it may not read): never synced, so `clawpeer status` names them, as Syncthing lists a
 * folder's failed items. A scan that left one out is vouched for by no watcher, so the next
 * scan walks the whole folder and finds them all again: each scan's list replaces the last.
 * Kept per reason, counted and capped (UNSYNCABLE_PATHS_KEPT): it lives as long as the listener.
 */
export class UnsyncableEntries {
  readonly #byFolder = new Map<string, readonly UnsyncableReason[]>();

  /**
   * Records what a scan of `dir` left out; returns the entries its previous scan did not. Of a
   * reason whose paths were capped then, one that sorts after the last kept path may have been
   * among those only counted: it is not returned (logged once as new, not at every scan).
   */
  scanned(dir: string, entries: readonly UnreadableEntry[]): UnreadableEntry[] {
    const before = new Map((this.#byFolder.get(dir) ?? []).map((g) => [g.reason, { ...g, kept: new Set(g.paths) }]));
    const byReason = new Map<string, string[]>();
    for (const e of entries) {
      const paths = byReason.get(e.reason) ?? [];
      paths.push(e.path);
      byReason.set(e.reason, paths);
    }
    if (entries.length === 0) this.#byFolder.delete(dir);
    else
      this.#byFolder.set(
        dir,
        [...byReason].map(([reason, paths]) => ({
          reason,
          count: paths.length,
          paths: paths.sort().slice(0, UNSYNCABLE_PATHS_KEPT),
        })),
      );
    return entries.filter((e) => {
      const was = before.get(e.reason);
      if (was === undefined) return true;
      if (was.kept.has(e.path)) return false;
      const last = was.paths[was.paths.length - 1];
      return was.count === was.paths.length || last === undefined || e.path < last;
    });
  }

  /** What the last scan of `dir` left out, per reason (none before its first scan). */
  of(dir: string): readonly UnsyncableReason[] {
    return this.#byFolder.get(dir) ?? [];
  }
}

// A shared folder's marker is its `.clawpeer/` directory (folders/folder-markers.ts says when it
// is required): a folder that lost it is opened by no sync, so nothing is fetched into it.
/** What a missing marker's error says; recognised by it (`isMarkerMissing`). */
const MARKER_MISSING = 'has no .clawpeer/ directory any more';

/** Whether the folder at `dir` holds its marker. Only a clear "not there" counts as missing. */
export async function markerPresent(dir: string): Promise<boolean> {
  try {
    return (await lstat(path.join(dir, INTERNAL_DIR_NAME))).isDirectory();
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code !== 'ENOENT' && code !== 'ENOTDIR';
  }
}

/** Why a started folder whose marker is gone is not synced, and what to do. */
export function markerMissingText(dir: string): string {
  return (
    `${dir} ${MARKER_MISSING} (its disk not mounted? the folder deleted or moved?): not synced, so nothing ` +
    `is fetched into it or deleted on its peers; mount its disk, or sync it anew from its peers with ` +
    `\`mkdir ${path.join(dir, INTERNAL_DIR_NAME)}\``
  );
}

export const isMarkerMissing = (err: unknown): boolean =>
  err instanceof ClawpeerError && err.code === 'IO' && err.message.includes(MARKER_MISSING);

/** Throws the missing-marker error (IO) when the folder at `dir` lacks its marker. */
export async function requireMarker(dir: string): Promise<void> {
  if (!(await markerPresent(dir))) throw new ClawpeerError('IO', markerMissingText(dir));
}

export interface OpenSyncedFolderOptions {
  readonly nodeId: string;
  readonly chunking: ChunkingParams;
  /** How long to wait for another sync of the folder to finish, ms. */
  readonly lockWaitMs: number;
  readonly log: Logger;
  readonly signal?: AbortSignal;
  /** Keep the manifests the scan computes (only a side that will serve the peer's fetch needs them). */
  readonly cacheManifests?: boolean;
  /** Told about every file the scan hashed (progress). */
  readonly onHashed?: (relPath: string, manifest: FileManifest) => void;
  /** Create the folder when missing (the client's side). */
  readonly create?: boolean;
  /** A shared folder of a listener: refused (IO, `isMarkerMissing`) when its `.clawpeer/` is gone, before anything is made. */
  readonly requireMarker?: boolean;
  /** A long-lived process's folder state: the scan is skipped when the folder's watcher vouches nothing changed, and the log stays open between syncs. */
  readonly resident?: ResidentFolders;
  /** Called while the folder's lock is held by another sync, before each wait (FolderLock's onHeld). */
  readonly onLockHeld?: () => void;
  /**
   * Runs once the folder's lock is held, before the log is opened and the folder scanned: a
   * client asks the peer for the sync here, so a second sync of a folder that waits for (or
   * fails on) the lock has not displaced the running one at the peer, and the peer's side still
   * prepares while this side scans. A throw releases the lock.
   */
  readonly afterLock?: () => Promise<void>;
}

/** What a long-lived process (a listener) keeps per synced folder between syncs: its watcher, its open log, what it cannot sync. */
export class ResidentFolders {
  readonly watchers: FolderWatchers;
  readonly stores = new RevisionStorePool();
  readonly unsyncable = new UnsyncableEntries();

  constructor(o: { log: Logger }) {
    this.watchers = new FolderWatchers(o);
  }

  async close(): Promise<void> {
    this.watchers.close();
    await this.stores.close();
  }
}

export async function openSyncedFolder(dir: string, o: OpenSyncedFolderOptions): Promise<SyncedFolder> {
  const gone = (): ClawpeerError => new ClawpeerError('IO', markerMissingText(dir));
  // A listener's folder is pinned before its lock, whose file is then made only in the pinned
  // `.clawpeer/`: a folder swapped while this sync waits for the lock is not taken for it.
  let pin = o.requireMarker === true ? FolderPin.take(dir, gone) : undefined;
  if (o.create === true) {
    try {
      await mkdir(dir, { recursive: true });
    } catch (err) {
      throw new ClawpeerError('IO', `cannot create ${dir}: ${(err as Error).message}`, { cause: err });
    }
  }
  const ignore = await loadSyncIgnore(dir); // before the lock: a malformed file fails at once
  const lock = await FolderLock.acquire(dir, {
    waitMs: o.lockWaitMs,
    ...(o.signal === undefined ? {} : { signal: o.signal }),
    ...(o.onLockHeld === undefined ? {} : { onHeld: o.onLockHeld }),
    ...(pin === undefined ? {} : { makeDir: false }),
  }).catch((err: unknown) => {
    throw pin?.failure(err) ?? err;
  });
  const resident = o.resident;
  // A resident process's log stays open in its pool for the next sync.
  const closeStore = async (s: RevisionStore): Promise<void> => (resident === undefined ? s.close() : undefined);
  let store: RevisionStore | undefined;
  try {
    await o.afterLock?.();
    pin?.check(); // the lock file went into the pinned `.clawpeer/`, and the store opens there
    // The scan also removes old temp files of a publish killed mid-way (they are not content).
    store =
      resident === undefined
        ? await RevisionStore.open(dir, { nodeId: o.nodeId })
        : await resident.stores.acquire(dir, o.nodeId);
    const opened = store;
    pin?.check(); // else pinned now: the store made its `.clawpeer/` if it was missing (a new folder)
    const pinned = (pin ??= FolderPin.take(dir, gone));
    opened.recordSyncingNode(); // so `restore` finds the node from the folder, without --home
    const manifests = new ManifestCache();
    const close = async (): Promise<void> => {
      await closeStore(opened);
      await lock.release();
    };
    const watcher = resident?.watchers.forFolder(dir);
    if (watcher?.canSkipScan() === true) {
      o.log.debug('scan skipped: the folder watcher saw no change since the last scan', { folder: dir });
      return { dir, store: opened, scan: undefined, manifests, ignore, unreadable: [], pin: pinned, close };
    }
    const onlyChanged = watcher?.changedSinceScan(); // before scanStarting, which starts the next list
    const scanEnded = watcher?.scanStarting();
    const unreadable: UnreadableEntry[] = [];
    let vouched = true; // no issue: the watcher may vouch for what this scan saw
    const scan = await scanFolder(opened, dir, {
      chunking: o.chunking,
      ignore,
      beforeTombstones: () => pinned.check(),
      ...(onlyChanged === undefined ? {} : { onlyChanged }),
      onRenamedToNfc: (from, to) =>
        o.log.warn('renamed a name that was not NFC on disk to its NFC form (names travel in NFC)', { from, to }),
      onHashed: (rel: string, manifest: FileManifest, stat: WarmStat, hashedAtNs: bigint) => {
        // With when the scan began: serving the fetch checks the file by its stat, not by hashing again.
        if (o.cacheManifests === true) manifests.add(rel, manifest, stat, hashedAtNs);
        o.onHashed?.(rel, manifest);
      },
      onIssue: (issue) => {
        vouched = false;
        // Gone since it was listed: a race the next scan settles (rsync's "vanished", a warning).
        const vanished = hasVanished(issue.error);
        if (!vanished)
          unreadable.push({
            path: relativeEntryPath(dir, issue.localPath) || '.',
            error: issue.error.message,
            reason: unsyncableReason(issue.error),
          });
        // A listener says it once per entry (below), not at every scan of the folder.
        if (vanished || resident === undefined)
          o.log.warn('sync: cannot read an entry; it is left out of this sync', {
            path: issue.localPath,
            error: issue.error.message,
          });
      },
      ...(o.signal === undefined ? {} : { signal: o.signal }),
    });
    // Entries left unrecorded (changing while hashed, unreadable) must be looked at again.
    scanEnded?.(scan.unstable === 0 && vouched);
    const fresh = resident?.unsyncable.scanned(dir, unreadable) ?? [];
    if (fresh.length > 0)
      o.log.warn('entries that cannot be synced: left out of every sync until fixed', {
        folder: dir,
        count: fresh.length,
        entries: fresh
          .slice(0, LOGGED_ENTRIES)
          .map((e) => `${e.path} (${e.reason})`)
          .join(', '),
        ...(fresh.length > LOGGED_ENTRIES ? { more: fresh.length - LOGGED_ENTRIES } : {}),
      });
    return { dir, store: opened, scan, manifests, ignore, unreadable, pin: pinned, close };
  } catch (err) {
    if (store !== undefined) await closeStore(store);
    await lock.release();
    throw pin?.failure(err) ?? err;
  }
}
