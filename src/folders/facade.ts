// What the CLI's `folder` commands use: the `folders` of config.json and the folder log. Light to
// import: the folder service itself runs in the listener (listener/home-listener.ts).
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { INTERNAL_DIR_NAME } from '../store/internal-names.js';
export {
  checkFolderId,
  DEFAULT_FOLDER_INTERVAL_S,
  DEFAULT_VERSIONING,
  editFolders,
  FOLDER_INTERVAL_LIMITS_S,
  FOLDER_MODES,
  loadFolders,
  overlappingFolder,
  versioningProblem,
  type FolderConfig,
  type FolderMode,
} from '../home/folders-config.js';
export { findPeer, PeerStore, type PeerEntry } from '../home/peer-store.js';
export type { FolderLogEntry } from './folder-log.js';

/** Folder offers of paired peers (folder-offers.ts), loaded when `folder list` runs. */
export async function folderOffersModule(): Promise<typeof import('./folder-offers.js')> {
  return import('./folder-offers.js');
}

/** The folder log's entries (folder-log.ts), loaded when `folder log` runs. */
export async function folderLogModule(): Promise<typeof import('./folder-log.js')> {
  return import('./folder-log.js');
}

/**
 * Makes the `.clawpeer/` marker of the folder at `dir` (and the folder) when missing: `folder
 * add`'s part of folder-markers.ts, kept here so the CLI loads nothing of the sync for it.
 */
export async function makeFolderMarker(dir: string): Promise<void> {
  await mkdir(path.join(dir, INTERNAL_DIR_NAME), { recursive: true });
}
