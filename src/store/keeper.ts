// What a transfer keeps of a file before it replaces or removes it: a backup (backups.ts, rsync's
// --backup) or, in a synced folder, the folder's history (delete-history.ts). The publisher asks
// before it renames over an existing file or symlink, --delete before it removes one.

export interface Keeper {
  /**
   * Keeps what is at `abs` (`rel` relative to the destination root, '/'-separated) before it is
   * `replaced` (a copy stays) or `deleted` (it is moved away). False when nothing was kept: the
   * caller then replaces or removes it as it is.
   */
  keep(rel: string, abs: string, how: 'replaced' | 'deleted'): Promise<boolean>;
}

/**
 * Whose revision log keeps what a transfer replaces in a synced folder (delete-history.ts): this
 * node's id when the transfer may replace (--force, --update) and makes no backups of its own,
 * else undefined. Here, free of imports, so a pull decides before it loads the revision log.
 */
export function replacedHistoryNode(o: {
  readonly force: boolean;
  readonly existing?: string | undefined;
  readonly backup?: unknown;
  readonly nodeId?: string | undefined;
}): string | undefined {
  return o.backup === undefined && (o.force || o.existing === 'update') ? o.nodeId : undefined;
}
