// What the command line uses of folder sync: a whole sync with a peer (sync-with-peer.ts), the
// control socket of this home's listener (resident-protocol.ts), the --watch pieces (a local
// folder's watcher, the peer's change notices), a folder's history (log, restore, gc) and the
// types a report needs. Light to import (`sync` handed to a listener loads little else): the
// sync modules load when called.
import type { Logger } from '../logger.js';
import type { ResidentFolders } from './synced-folder.js';
import type { SyncWithPeerOptions } from './sync-with-peer.js';
import type { SyncFolderResult } from './sync-client.js';
import type { WatchPeerShareOptions } from './share-watch-client.js';
import type { collectFolderGarbage as CollectFolderGarbage, folderLog as FolderLog, restoreRevision as RestoreRevision } from './folder-history.js';

export { loadSyncIgnore } from './sync-ignore.js';
export type { LogRow, LogWhat, Restored, RestoreOptions } from './folder-history.js';
export { controlSocketPath, type ListenerStatus, type ResidentSyncReply, type ResidentSyncRequest, type StatusRequest } from './resident-protocol.js';
export type { SyncDryRun, SyncFolderResult } from './sync-client.js';
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
export async function collectFolderGarbage(...args: Parameters<typeof CollectFolderGarbage>): ReturnType<typeof CollectFolderGarbage> {
  return (await import('./folder-history.js')).collectFolderGarbage(...args);
}

/** Holds a watch on the peer's share until `signal` (share-watch-client.ts). */
export async function watchPeerShare(o: WatchPeerShareOptions): Promise<'closed' | 'unsupported'> {
  const { watchPeerShare: watch } = await import('./share-watch-client.js');
  return watch(o);
}

/** A local folder watched for `sync --watch`: its watcher and log stay open across syncs. */
export interface WatchedFolder {
  /** Hand to syncWithPeer as `resident`: a sync then skips the scan when nothing changed. */
  readonly folders: ResidentFolders;
  /** Stops watching and closes the folder's log. */
  close(): Promise<void>;
}

/**
 * Creates `dir` if needed and watches it (folder-watcher.ts; one watch per directory). Every
 * change calls `onChange` at once and `onSettled` once changes have been quiet for
 * `debounceMs`. Publisher temp files are our own sync's, not changes; .clawpeer is not watched.
 */
export async function watchLocalFolder(o: { readonly dir: string; readonly log: Logger; readonly debounceMs: number; onChange(): void; onSettled(): void }): Promise<WatchedFolder> {
  const [{ makeDirs }, { QuietTimer }, { isTempFileName }, { realpath }, { ResidentFolders: Folders }] = await Promise.all([
    import('../support/make-dirs.js'), import('../support/quiet-timer.js'), import('../store/internal-names.js'), import('node:fs/promises'), import('./synced-folder.js'),
  ]);
  await makeDirs(o.dir);
  // A plain debounce: a quiet timer without a longest delay.
  const debounce = new QuietTimer(o.debounceMs, Infinity, () => o.onSettled());
  const folders = new Folders({ log: o.log });
  const stop = folders.watchers.forFolder(await realpath(o.dir)).subscribe((_dir: string, name: string | null) => {
    if (name !== null && isTempFileName(name)) return;
    o.onChange();
    debounce.poke();
  });
  return {
    folders,
    close: async () => {
      debounce.cancel();
      stop();
      await folders.close();
    },
  };
}
export { parseVersioning, type VersioningPolicy } from '../sync/versioning.js';
