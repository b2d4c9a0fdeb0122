// What a publish is given and reports: the files and directories to publish, the policy for
// an existing file, the publisher's options, and the metadata set on an identical file.

import type { BigIntStats } from 'node:fs';
import type { ChunkingParams } from '../chunking/fastcdc.js';
import type { FileManifest } from '../chunking/manifest.js';
import type { SharePathRules } from '../transfer/paths.js';
import type { BackupPlan } from './backups.js';
import type { Keeper } from './keeper.js';
import type { PartialStore } from './partial-store.js';

/** A file to publish, as announced by the sender. */
export interface PublishFile {
  /** Relative path inside the share (normalised again here). */
  readonly relPath: string;
  /** The expected content; its root is what gets published. */
  readonly manifest: FileManifest;
  /** Permission bits (masked with PUBLISH_MODE_MASK). */
  readonly mode: number;
  readonly mtimeMs: number;
}

export interface PublishDir {
  readonly relPath: string;
  readonly mode: number;
  readonly mtimeMs: number;
}

/** Given a path's current stat, its content root if known without hashing (a warm index). */
export type KnownRootLookup = (relPath: string, st: BigIntStats) => Uint8Array | undefined;

/**
 * What happens to a different file or symlink already at a final path (directories in the way
 * are always refused): 'refuse' (FILE_EXISTS, the default), 'replace' (--force), 'keep' it
 * (rsync's --ignore-existing), or replace it unless it is newer than the incoming one by mtime
 * ('update', rsync's --update).
 */
export type ExistingPolicy = 'refuse' | 'replace' | 'keep' | 'update';

/** How published files are made durable (see PublisherOptions.fsync). */
export type FsyncPolicy = 'batch' | 'none';
export const FSYNC_POLICIES: readonly FsyncPolicy[] = ['batch', 'none'];

export interface PublisherOptions {
  /** Share root directory (resolved with realpath here). */
  readonly shareRoot: string;
  /** A synced folder's check that it is still the directory its sync opened (exchange/folder-pin.ts): throws when not. Run before each commit batch and each directory or symlink made. */
  readonly guard?: () => void;
  readonly readOnly?: boolean;
  /** Replace existing different files (never directories): the 'replace' policy. */
  readonly force?: boolean;
  /** What to do with a different existing file; overrides `force`. Default: 'replace' with force, else 'refuse'. */
  readonly existing?: ExistingPolicy;
  /** The negotiated chunking: needed to compute the root of an existing file. */
  readonly chunking: ChunkingParams;
  /** Where resumable files are staged; without it every file stages as a temp file. */
  readonly partials?: PartialStore;
  readonly knownRoot?: KnownRootLookup;
  /** Limits for manifests from the peer (verifyManifest). */
  readonly maxChunkBytes?: number;
  readonly maxChunkCount?: number;
  readonly signal?: AbortSignal;
  /**
   * `batch` (the default): every published file and the directories it lands in are fsynced, in
   * batches, before the transfer reports them done. `none` (--fsync=none, what rsync and scp do):
   * renames stay atomic, nothing is fsynced, so a power loss may lose or empty files published
   * in the last seconds.
   */
  readonly fsync?: FsyncPolicy;
  /** Override EARLY_WRITEBACK_BYTES (tests). */
  readonly earlyWritebackBytes?: number;
  /** --backup: what a replaced file or symlink is kept as; the transfer lands at `destBase` (root-relative, '' = the root). */
  readonly backup?: { readonly plan: BackupPlan; readonly destBase: string };
  /** Without a backup: what keeps a file before it is replaced (a synced folder's history). */
  readonly keeper?: Keeper;
  /**
   * Called just before a staged file is renamed over its final path (`relPath` relative to the
   * share, `finalPath` absolute), whatever is there: a synced folder's apply moves a file saved
   * since its scan aside here (unchanged-since-scan.ts), closing the window of the content
   * transfer. Push and pull pass none.
   */
  readonly beforeReplace?: (relPath: string, finalPath: string) => Promise<void>;
  /** Told of each identical file whose mtime or permissions stageFile set (--itemize). */
  readonly onMetadataSet?: (relPath: string, set: MetadataSet) => void;
  /**
   * A synced folder's fetch: a file commit could not write because this node may not
   * (support/path-refusal.ts) is discarded and told here instead of failing the commit.
   */
  readonly onRefused?: (relPath: string, error: Error) => void;
  /**
   * The name rules paths to write are checked by (transfer/paths.ts). Default: portable names (a
   * synced folder). Push and pull pass LOCAL_NAME_RULES: Windows' rules on Windows alone, where
   * such a path is refused (onRefused) and the rest lands.
   */
  readonly nameRules?: SharePathRules;
  /** Told of each mode or mtime an identical file could not take (EPERM and the like); the transfer goes on. */
  readonly onMetadataRefused?: (relPath: string, what: 'mode' | 'mtime', error: Error) => void;
}

/** What is set on an identical file (rsync -i's t and p). */
export interface MetadataSet {
  readonly time: boolean;
  readonly perms: boolean;
}
