// Starting one shared folder of the folder service (folder-service.ts): its directory made if
// missing (unless its `.clawpeer/` marker says a folder started here before is gone: its disk not
// mounted, folder-markers.ts), its marker kept, and its watcher, whose changes ask for a sync once
// they settle. A paused folder or one without peers is only listed.
import { realpath } from 'node:fs/promises';
import type { FolderConfig } from '../home/folders-config.js';
import type { FolderWatchers } from '../folder-sync/folder-watcher.js';
import { isTempFileName } from '../store/internal-names.js';
import { makeDirs } from '../support/make-dirs.js';
import { QuietTimer } from '../support/quiet-timer.js';
import type { ActiveFolder } from './folder-service-types.js';
import type { FolderMarkers } from './folder-markers.js';

/** Quiet time after a folder's last file-system event before it is synced, ms (a save raises several). */
export const LOCAL_CHANGE_QUIET_MS = 300;
/** Longest a sync waits under a steady stream of local changes, ms. */
export const LOCAL_CHANGE_MAX_DELAY_MS = 2_000;

export interface FolderActivation {
  readonly markers: FolderMarkers;
  /** The listener's folder watchers (ResidentFolders.watchers). */
  readonly watchers: FolderWatchers;
  /** A local change settled: the folder wants a sync with its peers. */
  readonly onChange: () => void;
}

/** Starts watching folder `f` (made if missing); its local changes call `onChange`. */
export async function activateFolder(
  f: FolderConfig,
  peerIds: string[],
  problem: string | undefined,
  o: FolderActivation,
): Promise<ActiveFolder> {
  const idle = { stop: () => undefined, pending: () => false };
  if (f.paused || peerIds.length === 0) return { config: f, peerIds, problem, ...idle };
  // Started here before and its marker gone (its disk not mounted?): not synced, not recreated.
  const gone = await o.markers.missing(f);
  if (gone !== undefined) return { config: f, peerIds: [], problem: gone, ...idle };
  let dir: string;
  try {
    await makeDirs(f.path);
    dir = await realpath(f.path);
    await o.markers.started(f, dir);
  } catch (err) {
    return { config: f, peerIds: [], problem: `${f.path} is not usable: ${(err as Error).message}`, ...idle };
  }
  const quiet = new QuietTimer(LOCAL_CHANGE_QUIET_MS, LOCAL_CHANGE_MAX_DELAY_MS, o.onChange);
  // Our own publishes' temp files are not changes; their renames are (a change a peer brought
  // here goes on to the other peers: A→B→C when A and C never meet).
  const unsubscribe = o.watchers.forFolder(dir).subscribe((_dir, name) => {
    if (name === null || !isTempFileName(name)) quiet.poke();
  });
  const stop = (): void => {
    quiet.cancel();
    unsubscribe();
    o.watchers.release(dir); // a folder removed from the config is no longer watched (unless a share's watch still uses it)
  };
  return { config: { ...f, path: dir }, peerIds, problem, stop, pending: () => quiet.pending };
}
