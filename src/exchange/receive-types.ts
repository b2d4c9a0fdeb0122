// What a TransferReceiver (transfer-receive.ts) is given and what it reports: its options and
// destination, the plan it answers the sender with, a dry run's verdicts, and the stats of a
// finished receive.
import type { BigIntStats } from 'node:fs';
import type { ChunkingParams } from '../chunking/fastcdc.js';
import type { Logger } from '../logger.js';
import type { CreatedEntry, ManifestEntry, PublishedFile, UpdatedFile } from '../protocol/messages.js';
import type { DataStreamRouter } from '../session/data-stream-router.js';
import type { PeerSession } from '../session/session.js';
import type { BackupPlan } from '../store/backups.js';
import type { ChunkIndexPool } from '../store/chunk-index-pool.js';
import type { Keeper } from '../store/keeper.js';
import type { ExistingPolicy, FsyncPolicy } from '../store/publish-types.js';
import type { SharePathRules } from '../transfer/paths.js';
import type { NoSpaceReport } from './space-fit.js';

export interface Destination {
  /** Root directory writes are confined to (a share, or the local target of a pull). */
  readonly root: string;
  readonly readOnly: boolean;
  /** Where inside the root the entries land ('' = the root itself). */
  readonly basePath: string;
  /** How errors name it (a listener's share: `share NAME`, not its local path). Default: the root. */
  readonly name?: string;
}

export interface ReceivePlan {
  /** Bitmap over the distinct chunks, set = wanted from the peer. */
  readonly lacking: Uint8Array;
  readonly uniqueCount: number;
  /** The payload bytes of the wanted chunks: what the peer sends (progress). */
  readonly lackingBytes: number;
}

/** What a transfer would do (dryRun): nothing was written. */
export interface DryRunPlan extends ReceivePlan {
  /** Bitmap over the file entries, in manifest order: set = would be published (new or different). */
  readonly publish: Uint8Array;
  /** Bitmap over the directory and symlink entries, in manifest order: set = would be created or replaced. */
  readonly create: Uint8Array;
  /** Bitmaps over the file entries: set = identical, its mtime / permissions would be set (rsync -a's .f..t / .f...p). */
  readonly touchTime: Uint8Array;
  readonly touchPerms: Uint8Array;
  /** Files that would be published, and their bytes. */
  readonly files: number;
  readonly bytes: number;
  readonly filesUnchanged: number;
  /** Different files already there that the existing-file policy would keep. */
  readonly filesKept: number;
}

export interface ReceiveStats {
  readonly files: number;
  /** With itemize: the files published (destination-relative), in publish order. */
  readonly published?: readonly PublishedFile[];
  /** With itemize: the directories and symlinks created (a symlink also when replaced), in that order. */
  readonly created?: readonly CreatedEntry[];
  /** With itemize: identical files whose mtime or permissions were set. */
  readonly updated?: readonly UpdatedFile[];
  readonly bytes: number;
  readonly chunksReceived: number;
  readonly chunksSkipped: number;
  /** Early chunks that arrived although we held them already (dropped, not written). */
  readonly chunksDropped: number;
  /** Chunks that arrived zstd-compressed (a subset of chunksReceived). */
  readonly chunksCompressed: number;
  readonly filesUnchanged: number;
  /** Different files (and symlinks) already there that the existing-file policy kept. */
  readonly filesKept: number;
}

export interface ReceiverOptions {
  readonly session: PeerSession;
  readonly router: DataStreamRouter;
  readonly transferId: number;
  readonly entries: readonly ManifestEntry[];
  readonly destination: Destination;
  readonly force: boolean;
  /** What to do with different files already there; overrides force (publisher.ts). */
  readonly existing?: ExistingPolicy;
  readonly chunking: ChunkingParams;
  readonly signal: AbortSignal;
  readonly log: Logger;
  readonly onChunkWritten?: (bytes: number) => void;
  /** Told the number of files published so far, after each commit batch (progress). */
  readonly onPublished?: (files: number) => void;
  /**
   * Told each file just published: its share path and its lstat right after the commit batch
   * (the one the chunk index records), so a caller that certifies it need not stat it again.
   */
  readonly onFilePublished?: (relPath: string, st: BigIntStats) => void;
  /**
   * A synced folder's fetch: a file whose staging this node refuses (support/path-refusal.ts:
   * EACCES, EPERM, a name too long) is left out and told here, and the rest goes on; without
   * it such a file fails the transfer, as a push or pull should.
   */
  readonly onRefused?: (relPath: string, error: Error) => void;
  /**
   * Push and pull: the names this node may create (LOCAL_NAME_RULES). A peer's names are then
   * checked without Windows' rules, which the publisher applies per path (onRefused). Default:
   * every name must be portable, or the manifest is refused whole (a synced folder).
   */
  readonly nameRules?: SharePathRules;
  /**
   * A synced folder's fetch: the files that do not fit on the disk (keeping its 1% free) are
   * left out (space-fit.ts takeWhatFits, in entry order) and told here once, before anything is
   * requested, and the rest goes on; without it a transfer that does not fit is refused whole
   * (IO), as a push or pull is.
   */
  readonly onNoSpace?: (report: NoSpaceReport) => void;
  /** A listener's in-memory chunk indexes; without it the share's index is loaded and saved here. */
  readonly indexes?: ChunkIndexPool;
  /** --itemize: remember each file published (ReceiveStats.published). */
  readonly itemize?: boolean;
  /** --backup: replaced files are kept so (backups.ts); without it, `keeper` may keep them (a synced folder's history). */
  readonly backup?: BackupPlan;
  readonly keeper?: Keeper;
  /** A synced folder's check that it is still the directory its sync opened (exchange/folder-pin.ts; PublisherOptions.guard). */
  readonly guard?: () => void;
  /** A synced folder's last look at a path before a file is renamed over it (PublisherOptions.beforeReplace). */
  readonly beforeReplace?: (relPath: string, finalPath: string) => Promise<void>;
  /** --fsync: batch (the default) or none (publisher.ts). */
  readonly fsync?: FsyncPolicy;
}
