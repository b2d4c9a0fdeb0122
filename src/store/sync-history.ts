// Content of earlier revisions of a synced folder, kept reachable until `gc`.
//
// Goals: when sync replaces or deletes a file, its old bytes stay on disk as a history blob
// `<folder>/.clawpeer/history/<content-root-hex>` (a hard link for a replaced file: the publisher
// renames a new inode over the path, so the old inode lives on under the blob name at no copy
// cost; a rename for a deleted file), so `restore` can bring any revision whose content it has
// back and a peer can still fetch it; one blob per content root, however many paths or
// revisions share it. `gc` drops blobs whose roots the revision store released.
// Non-goals: keeping content that was overwritten in place by a local program before any scan
// saw it (it is gone before clawpeer could act; `restore` then says so), deduplicating chunks
// across blobs (a blob is a whole file), the revision records themselves (revision-store.ts).
import { constants as fsConstants } from 'node:fs';
import { copyFile, link, lstat, mkdir, readdir, rename, rm, unlink } from 'node:fs/promises';
import path from 'node:path';
import { fromHex, toHex } from '../chunking/blake3.js';
import { ClawpeerError } from '../errors.js';
import { INTERNAL_DIR_NAME } from './internal-names.js';
import type { RevisionStore } from './revision-store.js';
import type { VersioningPolicy } from '../sync/versioning.js';

/** Directory of history blobs inside `.clawpeer/`. */
export const HISTORY_DIR_NAME = 'history';

export function historyDir(folder: string): string {
  return path.join(path.resolve(folder), INTERNAL_DIR_NAME, HISTORY_DIR_NAME);
}

/** Absolute path of the blob holding content `root`. */
export function historyBlobPath(folder: string, root: Uint8Array): string {
  return path.join(historyDir(folder), toHex(root));
}

function errno(err: unknown): string | undefined {
  return err instanceof Error ? (err as NodeJS.ErrnoException).code : undefined;
}

async function exists(p: string): Promise<boolean> {
  try {
    await lstat(p);
    return true;
  } catch (err) {
    if (errno(err) === 'ENOENT') return false;
    throw err;
  }
}

/**
 * Keeps the regular file at `absPath` (whose content is `root`) as a history blob before it is
 * replaced: hard link (copy where links are not supported). `move` renames instead (the path is
 * being deleted). Nothing happens when the blob exists already or the file is gone.
 */
export async function preserveInHistory(
  folder: string,
  absPath: string,
  root: Uint8Array,
  options: { move: boolean },
): Promise<void> {
  const blob = historyBlobPath(folder, root);
  try {
    const st = await lstat(absPath);
    if (!st.isFile()) return;
    // Not recursive: a folder swapped under its sync gets no `.clawpeer/` made, and its file stays.
    await mkdir(historyDir(folder), { mode: 0o700 }).catch((err: unknown) => {
      if (errno(err) !== 'EEXIST') throw new Error(`cannot make ${historyDir(folder)}: ${(err as Error).message}`);
    });
    if (await exists(blob)) {
      if (options.move) await unlink(absPath);
      return;
    }
    if (options.move) {
      await rename(absPath, blob);
      return;
    }
    try {
      await link(absPath, blob);
    } catch (err) {
      if (errno(err) === 'EEXIST') return;
      await copyFile(absPath, blob, fsConstants.COPYFILE_EXCL).catch((copyErr: unknown) => {
        if (errno(copyErr) !== 'EEXIST') throw copyErr; // a blob of this content is kept already
      });
    }
  } catch (err) {
    if (errno(err) === 'ENOENT') return;
    throw new ClawpeerError(
      'IO',
      `cannot keep ${absPath} in the folder's history: ${err instanceof Error ? err.message : String(err)}`,
      { cause: err },
    );
  }
}

/** Deletes the blobs of `roots` (released by RevisionStore.gc); returns how many were removed. */
export async function removeHistoryBlobs(folder: string, roots: readonly Uint8Array[]): Promise<number> {
  let removed = 0;
  for (const root of roots) {
    const blob = historyBlobPath(folder, root);
    if (await exists(blob)) {
      await rm(blob, { force: true });
      removed++;
    }
  }
  return removed;
}

/** Content roots that have a blob. */
export async function listHistoryRoots(folder: string): Promise<Uint8Array[]> {
  let names: string[];
  try {
    names = await readdir(historyDir(folder));
  } catch (err) {
    if (errno(err) === 'ENOENT') return [];
    throw err;
  }
  const out: Uint8Array[] = [];
  for (const name of names) {
    if (!/^[0-9a-f]{64}$/.test(name)) continue;
    out.push(fromHex(name, 32));
  }
  return out;
}

/**
 * Applies a folder's versioning policy at `nowMs`: drops the revisions it does not keep
 * (RevisionStore.gcWith; `scope` as it says) and the history blobs only they referenced. Run it
 * with the folder's lock held (as `clawpeer gc` does), e.g. after each sync of the folder.
 */
export async function applyVersioning(
  store: RevisionStore,
  folder: string,
  policy: VersioningPolicy,
  nowMs: number,
  scope: 'all' | 'touched' = 'all',
): Promise<{ removedRevisions: number; removedBlobs: number }> {
  const result = store.gcWith(policy, nowMs, scope);
  const removedBlobs = await removeHistoryBlobs(folder, result.releasedContentRoots);
  return { removedRevisions: result.removedRevisions, removedBlobs };
}
