// What each sync of a shared folder changed, and each `folder revert` or `folder override` of it, kept in the home
// (`folder-log.jsonl`, one JSON object a line) for `clawpeer folder log ID`. Bounded: once it holds more than
// MAX_LOG_ENTRIES + MAX_LOG_SLACK lines it is rewritten (atomically) with the newest
// MAX_LOG_ENTRIES. A line that does not parse (a write cut by a crash) is skipped on reading.
import { appendFile, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { PathChange } from '../folder-sync/change-counts.js';
import type { OverrideReport, RevertedPath, RevertReport } from '../folder-sync/resident-protocol.js';
import { ClawpeerError } from '../errors.js';
import { writeFileAtomic } from '../support/atomic-file.js';

export const FOLDER_LOG_NAME = 'folder-log.jsonl';
/** Entries kept (all folders together). */
export const MAX_LOG_ENTRIES = 1000;
/** Lines appended beyond the cap before the file is trimmed (one rewrite per this many syncs). */
const MAX_LOG_SLACK = 200;
/** A revert's paths kept in its entry: as many as a sync's (change-counts.ts MAX_LISTED_CHANGES, not imported: `folder log` stays light). */
export const MAX_LOGGED_REVERT_PATHS = 100;

/** One sync (entries written before reverts were logged have no `kind`). */
export interface FolderSyncLogEntry {
  readonly kind?: 'sync';
  /** End of the sync, ms since the epoch. */
  readonly time: number;
  readonly folder: string;
  /** The peer's node id, and its pair name here. */
  readonly peer: string;
  readonly peerName?: string;
  /** Who started it: this node's folder service ('here') or the peer ('peer'). */
  readonly by: 'here' | 'peer';
  /** The mode it ran in (of the side that started it). */
  readonly mode?: string;
  /** Revisions taken from the peer. */
  readonly received: number;
  /** What they changed here: files (and directories, symlinks) added, changed, deleted. */
  readonly added: number;
  readonly changed: number;
  readonly deleted: number;
  /** Those changes by path, the first MAX_LISTED_CHANGES (absent in entries logged before paths were). */
  readonly paths?: readonly PathChange[];
  /** Revisions the peer took from here. */
  readonly sent: number;
  readonly conflicts: number;
  /** Paths left as they were (a local edit in a receive-only folder, content not delivered). */
  readonly skipped: number;
  readonly bytes: number;
  readonly seconds: number;
}

/** One `folder revert` that took local changes back (folders/folder-revert.ts). */
export interface FolderRevertLogEntry {
  readonly kind: 'revert';
  /** When it ended, ms since the epoch. */
  readonly time: number;
  readonly folder: string;
  /** Paths put back to the peers' version, and the local revisions withdrawn from the log. */
  readonly reverted: number;
  readonly withdrawn: number;
  /** Where the local versions were moved (`.clawpeer/reverted/<time>/`; absent: nothing was on disk to keep). */
  readonly keptIn?: string;
  /** The reverted paths, the first MAX_LOGGED_REVERT_PATHS. */
  readonly paths: readonly RevertedPath[];
}

/** One `folder override` that made this send-only copy's versions the newest (folders/folder-override.ts). */
export interface FolderOverrideLogEntry {
  readonly kind: 'override';
  /** When it ended, ms since the epoch. */
  readonly time: number;
  readonly folder: string;
  /** Paths whose version here now wins. */
  readonly overridden: number;
  /** Those paths, the first MAX_LOGGED_REVERT_PATHS. */
  readonly paths: OverrideReport['paths'];
}

export type FolderLogEntry = FolderSyncLogEntry | FolderRevertLogEntry | FolderOverrideLogEntry;

/** The entry of an override ended at `time`; undefined for a dry run or one with nothing to override. */
export function overrideLogEntry(r: OverrideReport, time: number): FolderOverrideLogEntry | undefined {
  if (r.dryRun || r.paths.length === 0) return undefined;
  return {
    kind: 'override',
    time,
    folder: r.folder,
    overridden: r.paths.length,
    paths: r.paths.slice(0, MAX_LOGGED_REVERT_PATHS),
  };
}

/** The entry of a revert ended at `time`; undefined for a dry run or one with nothing to take back. */
export function revertLogEntry(r: RevertReport, time: number): FolderRevertLogEntry | undefined {
  if (r.dryRun || r.paths.length + r.withdrawn === 0) return undefined;
  return {
    kind: 'revert',
    time,
    folder: r.folder,
    reverted: r.paths.length,
    withdrawn: r.withdrawn,
    ...(r.keptIn === undefined ? {} : { keptIn: r.keptIn }),
    paths: r.paths.slice(0, MAX_LOGGED_REVERT_PATHS),
  };
}

export class FolderLog {
  readonly file: string;
  #lines: number | undefined;
  #queue: Promise<void> = Promise.resolve();

  constructor(homeDir: string) {
    this.file = path.join(homeDir, FOLDER_LOG_NAME);
  }

  /** Appends `entry` (writes queue behind each other; a failure is the caller's to log). */
  append(entry: FolderLogEntry): Promise<void> {
    const next = this.#queue.then(() => this.#append(entry));
    this.#queue = next.catch(() => undefined);
    return next;
  }

  async #append(entry: FolderLogEntry): Promise<void> {
    this.#lines ??= (await readLines(this.file)).length;
    await appendFile(this.file, JSON.stringify(entry) + '\n', { mode: 0o600 });
    this.#lines++;
    if (this.#lines > MAX_LOG_ENTRIES + MAX_LOG_SLACK) {
      const keep = (await readLines(this.file)).slice(-MAX_LOG_ENTRIES);
      await writeFileAtomic(this.file, keep.map((l) => l + '\n').join(''), 0o600);
      this.#lines = keep.length;
    }
  }
}

/** The entries of the log in the home at `homeDir`, oldest first; only `folder`'s when given. */
export async function readFolderLog(homeDir: string, folder?: string): Promise<FolderLogEntry[]> {
  const out: FolderLogEntry[] = [];
  for (const line of await readLines(path.join(homeDir, FOLDER_LOG_NAME))) {
    try {
      const e = JSON.parse(line) as FolderLogEntry;
      if (
        typeof e.folder === 'string' &&
        typeof e.time === 'number' &&
        hasPathList(e) &&
        (folder === undefined || e.folder === folder)
      )
        out.push(e);
    } catch {
      // a line cut by a crash: skipped
    }
  }
  return out;
}

/**
 * Whether `e`'s paths are what `folder log` prints: a list of entries each with a string path
 * (a revert's and an override's always; a sync's when present). A line edited or damaged otherwise is skipped, not
 * the command's crash.
 */
function hasPathList(e: FolderLogEntry): boolean {
  const paths: unknown = e.paths;
  if (paths === undefined) return e.kind !== 'revert' && e.kind !== 'override';
  return (
    Array.isArray(paths) &&
    paths.every(
      (p: unknown) => typeof p === 'object' && p !== null && typeof (p as { path?: unknown }).path === 'string',
    )
  );
}

async function readLines(file: string): Promise<string[]> {
  try {
    return (await readFile(file, 'utf8')).split('\n').filter((l) => l !== '');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new ClawpeerError('IO', `cannot read ${file}: ${(err as Error).message}`, { cause: err });
  }
}
