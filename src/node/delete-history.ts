// --delete in a destination that is also a synced folder (a share a peer syncs, or a pull into a
// synced folder): a removed file whose content is still its path's recorded head is moved into
// the folder's history, as sync's own deletions are (sync-history.ts), so `restore` brings it
// back and a peer can still fetch it; the folder's next scan records the deletion. A file that
// changed since its last scan (not warm) is removed as it is: no revision holds that content,
// so history could not restore it anyway. Non-goals: folders without a revision log (plain
// destinations keep rsync's semantics), files replaced by --force.
import { existsSync, lstatSync } from 'node:fs';
import path from 'node:path';
import { removeExtraneous, type Extraneous } from './extraneous.js';
import { INTERNAL_DIR_NAME } from './internal-names.js';
import { REVLOG_DIR_NAME, RevisionStore } from './revision-store.js';
import { preserveInHistory } from './sync-history.js';
import { fileEntryOf } from './tree-scan.js';

export interface HistoryKeeper {
  /** Moves the file at `abs` (root-relative `rel`) into the folder's history if a revision holds its content; false if not (the caller removes it). */
  keep(rel: string, abs: string): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * The keeper for destination `root`, or undefined when `root` is not a synced folder's root (no
 * revision log there). `nodeId` is this node's (the log is only read here).
 */
export async function historyKeeperFor(root: string, nodeId: string): Promise<HistoryKeeper | undefined> {
  if (!existsSync(path.join(root, INTERNAL_DIR_NAME, REVLOG_DIR_NAME))) return undefined;
  const store = await RevisionStore.open(root, { nodeId });
  return {
    async keep(rel, abs) {
      const head = store.liveHead(rel);
      if (head?.revision.kind !== 'file') return false;
      const st = lstatSync(abs, { bigint: true, throwIfNoEntry: false });
      if (st?.isFile() !== true || !store.isWarm(rel, fileEntryOf(rel, st))) return false;
      await preserveInHistory(root, abs, head.revision.contentRoot, { move: true });
      return true;
    },
    close: () => store.close(),
  };
}

/** removeExtraneous, keeping in `root`'s history what a synced folder's revisions hold (without `nodeId`, nothing is kept). */
export async function removeExtraneousKeepingHistory(root: string, list: readonly Extraneous[], nodeId: string | undefined): Promise<Extraneous[]> {
  if (list.length === 0) return [];
  const keeper = nodeId === undefined ? undefined : await historyKeeperFor(root, nodeId);
  try {
    return await removeExtraneous(root, list, keeper);
  } finally {
    await keeper?.close();
  }
}
