// What the command line uses of folder sync: a whole sync with a peer (sync-with-peer.ts), the
// control socket of this home's listener (resident-protocol.ts), --watch's loop (sync-watch.ts:
// the folder's watcher, the peer's change notices), a folder's history (log, restore, gc) and the
// types a report needs. Light to import (`sync` handed to a listener loads little else): the
// sync modules load when called.
import type { SyncWithPeerOptions } from './sync-with-peer.js';
import type { SyncFolderResult } from './sync-client.js';
import type {
  collectFolderGarbage as CollectFolderGarbage,
  folderLog as FolderLog,
  restoreRevision as RestoreRevision,
} from './folder-history.js';

export { loadSyncIgnore } from './sync-ignore.js';
export { syncWhileWatching, WATCH_INTERVAL_MS, type SyncWhileWatchingOptions } from './sync-watch.js';
export type { LogRow, LogWhat, Restored, RestoreOptions } from './folder-history.js';
export {
  controlSocketPath,
  type ListenerStatus,
  type ResidentSyncReply,
  type ResidentSyncRequest,
  type OverrideReport,
  type OverrideRequest,
  type RevertReport,
  type RevertRequest,
  type RevertedPath,
  type StatusRequest,
} from './resident-protocol.js';
export type { SyncDryRun, SyncFolderResult } from './sync-client.js';
export { MAX_NO_SPACE_PATHS, noSpaceText, type NoSpaceReport } from '../exchange/space-fit.js';
export type { PlannedChange } from './sync-apply.js';
export type { ResidentFolders } from './synced-folder.js';
export type { SyncModeName } from '../protocol/messages.js';
export type { TransferProgress } from '../transfer/transfer-progress.js';

/** Dials the peer, syncs the folder with its share, closes (sync-with-peer.ts). */
export async function syncWithPeer(o: SyncWithPeerOptions): Promise<SyncFolderResult> {
  const { syncWithPeer: sync } = await import('./sync-with-peer.js');
  return sync(o);
}

/** `log`: the kept revisions of a synced folder, newest first (folder-history.ts). */
export async function folderLog(...args: Parameters<typeof FolderLog>): ReturnType<typeof FolderLog> {
  return (await import('./folder-history.js')).folderLog(...args);
}

/** `restore`: an earlier revision back, recorded as a new edit (folder-history.ts). */
export async function restoreRevision(...args: Parameters<typeof RestoreRevision>): ReturnType<typeof RestoreRevision> {
  return (await import('./folder-history.js')).restoreRevision(...args);
}

/** `gc`: old revisions and the history content only they referenced dropped (folder-history.ts). */
export async function collectFolderGarbage(
  ...args: Parameters<typeof CollectFolderGarbage>
): ReturnType<typeof CollectFolderGarbage> {
  return (await import('./folder-history.js')).collectFolderGarbage(...args);
}

export { parseVersioning, type VersioningPolicy } from '../sync/versioning.js';
