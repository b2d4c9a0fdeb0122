// A shared folder's versioning policy (Syncthing's file versioning), applied after each sync that
// replaced or deleted content here: the folder service's `afterSync` hook. The policy itself is
// the core sync/versioning.ts; this takes the folder's lock and its resident revision log.
import { requireMarker, type ResidentFolders } from '../folder-sync/synced-folder.js';
import { FolderLock } from '../store/folder-lock.js';
import { applyVersioning } from '../store/sync-history.js';
import type { AfterFolderSync } from './folder-service.js';

/** How long versioning waits for the folder's lock (a sync running now applies it after itself). */
const VERSIONING_LOCK_WAIT_MS = 30_000;

export function afterFolderSync(o: { readonly resident: ResidentFolders; readonly nodeId: string }): AfterFolderSync {
  return async ({ folder, policy, nowMs }) => {
    // Its disk gone since the sync (folder-markers.ts): the lock and the log would be made anew there.
    await requireMarker(folder.path);
    const lock = await FolderLock.acquire(folder.path, { waitMs: VERSIONING_LOCK_WAIT_MS });
    try {
      const store = await o.resident.stores.acquire(folder.path, o.nodeId);
      await applyVersioning(store, folder.path, policy, nowMs);
    } finally {
      await lock.release();
    }
  };
}
