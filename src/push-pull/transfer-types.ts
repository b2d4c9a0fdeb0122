// What push and pull (transfer-client.ts) are given and what they report.
import type { Logger } from '../logger.js';
import type { CreatedEntry, PublishedFile, RefusedPath, UnreadablePath, UpdatedFile } from '../protocol/messages.js';
import type { ExcludeRules } from '../transfer/exclude.js';
import type { BackupPlan } from '../store/backups.js';
import type { ModeChange } from '../transfer/chmod.js';
import type { DryRunReport } from '../transfer/dry-run.js';
import type { FsyncPolicy } from '../store/publish-types.js';
import type { PeerSession } from '../session/session.js';
import type { SizeRange } from '../exchange/transfer-source.js';
import type { TransferProgress } from '../transfer/transfer-progress.js';

export interface TransferOptions {
  readonly session: PeerSession;
  readonly share: string;
  readonly remotePath: string;
  readonly localPath: string;
  /** push: every local path sent, each landing under its own name (default: localPath alone). */
  readonly sources?: readonly string[];
  /** --files-from: these paths each land at their relative path; a push's are relative to localPath (a directory, transfer-source.ts scanListed), a pull's to remotePath (the listener lists them). */
  readonly filesFrom?: readonly string[];
  /** --min-size / --max-size: files outside the bounds are left out (a push here, a pull by the listener). */
  readonly sizes?: SizeRange;
  /** -L / --copy-unsafe-links: symlinks sent as what they point to (all, or only those leading out of the tree). */
  readonly copyLinks?: 'all' | 'unsafe';
  /** --chmod: the modes files and directories land with (a push announces them so, a pull applies them to the listener's). */
  readonly modeChange?: ModeChange;
  readonly force: boolean;
  readonly streams: number;
  readonly window: number;
  readonly idleTimeoutMs: number;
  readonly log: Logger;
  readonly signal: AbortSignal;
  readonly onProgress?: (p: TransferProgress) => void;
  /** Files and directories to leave out (--exclude): a push applies them, a pull sends them to the listener. */
  readonly excludeRules?: ExcludeRules;
  /** --bwlimit, bytes per second: a push caps its own sending, a pull asks the listener to cap its. */
  readonly bwlimit?: number;
  /** --dry-run: plan only; the receiving side writes nothing and no chunk travels. */
  readonly dryRun?: boolean;
  /** --delete: once all is published, remove what the transferred directories hold beyond the source (extraneous.ts). */
  readonly delete?: boolean;
  /** --ignore-existing ('keep') or --update: what the receiver does with different files already there (never with force). */
  readonly existing?: 'keep' | 'update';
  /** push --remove-source-files: once the listener has published everything, remove the sent files and symlinks (source-removal.ts). */
  readonly removeSourceFiles?: boolean;
  /** This node's id: a pull into a synced folder keeps what --delete removes and --force or --update replaces in the folder's history (delete-history.ts). */
  readonly nodeId?: string;
  /** --backup, --backup-dir, --suffix: keep what is replaced or removed (backups.ts); a push asks the listener. */
  readonly backup?: BackupPlan;
  /** --max-delete (with --delete): when more than this many paths would be removed, none is. */
  readonly maxDelete?: number;
  /** --itemize: the result lists the files published (a push asks the listener). */
  readonly itemize?: boolean;
  /** Pull to standard output: the remote path must be one regular file, checked on its manifest before any chunk is asked for. */
  readonly singleFile?: boolean;
  /** --fsync: `none` publishes without fsync (a push asks the listener, which needs 'fsync-none'). */
  readonly fsync?: FsyncPolicy;
}

export interface TransferResult {
  readonly files: number;
  readonly bytes: number;
  /** Bytes that crossed the connection (both directions, transport overhead included). */
  readonly wireBytes: number;
  readonly chunksSent: number;
  readonly chunksSkipped: number;
  /** Of chunksSent, those that travelled zstd-compressed. */
  readonly chunksCompressed: number;
  readonly streams: number;
  readonly window: number;
  readonly seconds: number;
  /** A dry run's plan (files, chunks and bytes are then what would be, and nothing was written). */
  readonly dryRun?: DryRunReport;
  /**
   * --delete: the paths removed (in a dry run: that would be), each directory after its contents;
   * relative to the share for a push (its listener lists at most MAX_LISTED_DELETIONS), to the
   * local directory for a pull.
   */
  readonly deleted?: readonly string[];
  /** How many were removed, all of them. */
  readonly deletedCount?: number;
  /** --ignore-existing / --update: different files and symlinks already there that were kept (in a dry run: would be). */
  readonly filesKept?: number;
  /** push --remove-source-files: sent files and symlinks removed here (in a dry run: that would be). */
  readonly sourceRemoved?: number;
  /** ... and those kept because they changed (or vanished) since they were sent. */
  readonly sourceChanged?: readonly string[];
  /** --backup: files and symlinks backed up before they were replaced or removed. */
  readonly filesBackedUp?: number;
  /** --max-delete: how many paths --delete would have removed, when more than the cap (none was). */
  readonly deletesOverLimit?: number;
  /** --itemize: the files published (share-relative for a push, whose listener lists at most MAX_LISTED_PUBLISHED; LOCAL-relative for a pull). */
  readonly published?: readonly PublishedFile[];
  /** --itemize: the directories and symlinks created, listed as `published` is. */
  readonly created?: readonly CreatedEntry[];
  /** --itemize: identical files whose mtime or permissions were set, listed as `published` is. */
  readonly updated?: readonly UpdatedFile[];
  /**
   * Paths the receiver may not write (the listener for a push, this node for a pull), with their
   * errno code: left out, the rest published (the CLI exits 23, rsync's partial transfer). The
   * first MAX_LISTED_DELETIONS, share-relative for a push and LOCAL-relative for a pull.
   */
  readonly refused?: readonly RefusedPath[];
  /** All of them (>= refused.length). */
  readonly refusedCount?: number;
  /**
   * Entries below the source the sender (this node for a push, the listener for a pull) could
   * not read, with why: left out, the rest sent (exit 23), and --delete skipped (as rsync's).
   * The first MAX_LISTED_DELETIONS, relative as the sent entries are.
   */
  readonly unreadable?: readonly UnreadablePath[];
  /** All of them (>= unreadable.length). */
  readonly unreadableCount?: number;
}
