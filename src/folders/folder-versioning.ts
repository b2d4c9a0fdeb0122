// A shared folder's versioning policy (Syncthing's file versioning), applied after each sync that
// replaced or deleted content here: the folder service's `afterSync` hook. The policy itself is
// the core sync/versioning.ts; this takes the folder's lock and its resident revision log.
import { requireMarker, type ResidentFolders } from '../folder-sync/synced-folder.js';
import { FolderLock } from '../store/folder-lock.js';
import { applyVersioning } from '../store/sync-history.js';
import type { AfterFolderSync } from './folder-service.js';

/** How long versioning waits for the folder's lock (a sync running now applies it after itself). */
const VERSIONING_LOCK_WAIT_MS = 30_000;
/**
 * How often a folder's whole history is walked: after a sync only the paths that gained
 * revisions are (RevisionStore.gcWith 'touched', which walks all on a store object's first gc; a
 * walk of every path cost seconds per sync of a folder of 20,000 files); a policy by age
 * (trashcan, staggered) also drops versions of paths no sync touched as they age, hourly as
 * Syncthing's cleanup interval.
 */
export const FULL_VERSIONING_EVERY_MS = 3_600_000;

export function afterFolderSync(o: { readonly resident: ResidentFolders; readonly nodeId: string }): AfterFolderSync {
  return async ({ folder, policy, nowMs }) => {
    // Its disk gone since the sync (folder-markers.ts): the lock and the log would be made anew there.
    await requireMarker(folder.path);
    const lock = await FolderLock.acquire(folder.path, { waitMs: VERSIONING_LOCK_WAIT_MS });
    try {
      const store = await o.resident.stores.acquire(folder.path, o.nodeId);
      // A store object's first gc walks all by itself ('touched'); a policy by age, hourly too.
      const ageing = policy.kind !== 'keep-last';
      const due = ageing && nowMs - (store.fullGcAtMs ?? -Infinity) >= FULL_VERSIONING_EVERY_MS;
      await applyVersioning(store, folder.path, policy, nowMs, due ? 'all' : 'touched');
    } finally {
      await lock.release();
    }
  };
}
