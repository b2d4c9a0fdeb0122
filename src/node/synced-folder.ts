// A folder opened for one sync: its lock held, its revision log open, its disk state scanned.
//
// Goals: the one way both the client and the listener start a sync, so both hold the folder
// lock for the whole exchange (no second sync, scan or restore interleaves) and both reconcile
// a log that matches the disk as of the scan. Non-goals: watching for changes (the CLI).
import { mkdir } from 'node:fs/promises';
import type { ChunkingParams } from '../chunking/fastcdc.js';
import type { FileManifest } from '../chunking/manifest.js';
import { ClawpeerError } from '../errors.js';
import type { Logger } from '../logger.js';
import { scanFolder, type ScanFolderResult } from './folder-scanner.js';
import { FolderLock } from './folder-lock.js';
import { ManifestCache } from './manifest-cache.js';
import { RevisionStore, type WarmStat } from './revision-store.js';

export interface SyncedFolder {
  readonly dir: string;
  readonly store: RevisionStore;
  readonly scan: ScanFolderResult;
  /** Manifests the scan computed, for serving the peer's fetch without hashing again. */
  readonly manifests: ManifestCache;
  /** Closes the log and releases the lock. */
  close(): Promise<void>;
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
}

export async function openSyncedFolder(dir: string, o: OpenSyncedFolderOptions): Promise<SyncedFolder> {
  if (o.create === true) {
    try {
      await mkdir(dir, { recursive: true });
    } catch (err) {
      throw new ClawpeerError('IO', `cannot create ${dir}: ${(err as Error).message}`, { cause: err });
    }
  }
  const lock = await FolderLock.acquire(dir, { waitMs: o.lockWaitMs, ...(o.signal === undefined ? {} : { signal: o.signal }) });
  let store: RevisionStore | undefined;
  try {
    // The scan also removes old temp files of a publish killed mid-way (they are not content).
    store = await RevisionStore.open(dir, { nodeId: o.nodeId });
    const manifests = new ManifestCache();
    const scan = await scanFolder(store, dir, {
      chunking: o.chunking,
      onHashed: (rel: string, manifest: FileManifest, stat: WarmStat) => {
        if (o.cacheManifests === true) manifests.add(rel, manifest, stat);
        o.onHashed?.(rel, manifest);
      },
      onIssue: (issue) => o.log.warn('sync: cannot read an entry; it is left out of this sync', { path: issue.localPath, error: issue.error.message }),
      ...(o.signal === undefined ? {} : { signal: o.signal }),
    });
    const opened = store;
    return {
      dir, store: opened, scan, manifests,
      close: async () => {
        await opened.close();
        await lock.release();
      },
    };
  } catch (err) {
    await store?.close();
    await lock.release();
    throw err;
  }
}
