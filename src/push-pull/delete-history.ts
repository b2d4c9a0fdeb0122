// --delete in a destination that is also a synced folder (a share a peer syncs, or a pull into a
// synced folder): a removed file whose content is still its path's recorded head is moved into
// the folder's history, as sync's own deletions are (sync-history.ts), so `restore` brings it
// back and a peer can still fetch it; the folder's next scan records the deletion. A file that
// changed since its last scan (not warm) is removed as it is: no revision holds that content,
// so history could not restore it anyway. The same keeper serves a file that --force or
// --update replaces there: a copy of a warm head stays in history (a hard link when it can).
// Non-goals: folders without a revision log (plain destinations keep rsync's semantics, and
// --backup is the way to keep what is replaced or removed there).
import { existsSync, lstatSync } from 'node:fs';
import path from 'node:path';
import { removeExtraneous, type Extraneous } from './extraneous.js';
import { INTERNAL_DIR_NAME } from '../store/internal-names.js';
import type { Keeper } from '../store/keeper.js';
import { RevisionStore } from '../store/revision-store.js';
import { REVLOG_DIR_NAME } from '../store/revlog-format.js';
import { preserveInHistory } from '../store/sync-history.js';
import { fileEntryOf } from '../store/tree-scan.js';

/** Keeps a file in the folder's history when a revision holds its content (moved when deleted, copied when replaced). */
export interface HistoryKeeper extends Keeper {
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
    async keep(rel, abs, how) {
      const head = store.liveHead(rel);
      if (head?.revision.kind !== 'file') return false;
      const st = lstatSync(abs, { bigint: true, throwIfNoEntry: false });
      if (st?.isFile() !== true || !store.isWarm(rel, fileEntryOf(rel, st))) return false;
      await preserveInHistory(root, abs, head.revision.contentRoot, { move: how === 'deleted' });
      return true;
    },
    close: () => store.close(),
  };
}

/**
 * removeExtraneous keeping what goes: as --backup's backups when given, else in `root`'s history
 * when a synced folder's revisions hold it (without `nodeId`, nothing is kept).
 */
export async function removeExtraneousKeeping(
  root: string,
  list: readonly Extraneous[],
  keep: { readonly backups?: Keeper | undefined; readonly nodeId?: string | undefined },
): Promise<Extraneous[]> {
  if (list.length === 0) return [];
  if (keep.backups !== undefined) return removeExtraneous(root, list, keep.backups);
  const keeper = keep.nodeId === undefined ? undefined : await historyKeeperFor(root, keep.nodeId);
  try {
    return await removeExtraneous(root, list, keeper);
  } finally {
    await keeper?.close();
  }
}
