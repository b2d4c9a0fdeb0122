// What --delete removes (rsync's --delete): the entries of the destination's copies of the
// source's directories that the source does not have.
//
// Goals: a transfer that mirrors a directory leaves its copy equal to it. Only directories the
// source lists are looked in (a pushed file, or the siblings of a pushed directory, are never
// touched); nothing outside the destination root is looked at (a directory reached through a
// symlink is not walked); clawpeer's own state (`.clawpeer` at any depth, publisher temp files)
// and what the transfer's exclude patterns match are never removed, nor anything inside them,
// so a directory holding a protected entry stays. Directories come after their contents: the
// list is the order to delete in, and what a dry run shows.
// With --backup what goes is kept as a backup (backups.ts), and a destination that is a synced
// folder keeps what it can in its history (delete-history.ts): the caller passes the keeper.
// Non-goals: a transfer that failed (the callers remove only after everything was published).
import type { Dirent } from 'node:fs';
import { lstat, readdir, realpath, rmdir, unlink } from 'node:fs/promises';
import path from 'node:path';
import { ClawpeerError } from '../errors.js';
import { belowTransferRoot, type ExcludeRules } from '../transfer/exclude.js';
import { isConfinedRealpath } from '../transfer/paths.js';
import { isInternalDirName, isTempFileName } from '../store/internal-names.js';
import type { Keeper } from '../store/keeper.js';

export interface Extraneous {
  /** Relative to the destination root, '/'-separated. */
  readonly path: string;
  readonly kind: 'file' | 'dir' | 'symlink';
}

export interface ExtraneousOptions {
  /** The destination root (a share, or a pull's local directory). */
  readonly root: string;
  /** Directories (relative to the root) whose entries the source lists in full. */
  readonly dirs: readonly string[];
  /** Every path (relative to the root) the source has. */
  readonly keep: ReadonlySet<string>;
  /** Paths (relative to the root) never removed, nor what is inside them: the exclude patterns. */
  readonly protect?: (relPath: string, isDir: boolean) => boolean;
}

const joinRel = (dir: string, name: string): string => (dir === '' ? name : `${dir}/${name}`);

/** A directory's entries by name; an IO error naming it when it cannot be listed. */
async function listDir(abs: string): Promise<Dirent[]> {
  try {
    return (await readdir(abs, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : 1));
  } catch (err) {
    throw new ClawpeerError('IO', `cannot list ${abs} (--delete): ${(err as Error).message}`, { cause: err });
  }
}

/** The entries to remove, each directory after its contents. */
export async function findExtraneous(o: ExtraneousOptions): Promise<Extraneous[]> {
  const rootReal = await realpath(o.root);
  const out: Extraneous[] = [];
  const spared = (rel: string, name: string, isDir: boolean): boolean =>
    isInternalDirName(name) || isTempFileName(name) || o.protect?.(rel, isDir) === true;
  /** Adds everything under `rel` (a directory not in the source); true when all of it goes, the directory too. */
  const collect = async (rel: string, abs: string): Promise<boolean> => {
    let whole = true;
    for (const d of await listDir(abs)) {
      const childRel = joinRel(rel, d.name);
      if (spared(childRel, d.name, d.isDirectory())) {
        whole = false;
        continue;
      }
      if (d.isDirectory()) whole = (await collect(childRel, path.join(abs, d.name))) && whole;
      else out.push({ path: childRel, kind: d.isSymbolicLink() ? 'symlink' : 'file' });
    }
    if (whole) out.push({ path: rel, kind: 'dir' });
    return whole;
  };
  for (const dir of [...new Set(o.dirs)].sort()) {
    const abs = path.join(rootReal, ...dir.split('/').filter((s) => s !== ''));
    let real: string;
    try {
      real = await realpath(abs);
    } catch {
      continue; // not there: nothing in it to remove
    }
    // A symlink on the way (or out of the root): not the directory the source describes.
    if (
      real !== abs ||
      !isConfinedRealpath(rootReal, real) ||
      (await lstat(real).catch(() => undefined))?.isDirectory() !== true
    )
      continue;
    for (const d of await listDir(real)) {
      const rel = joinRel(dir, d.name);
      if (o.keep.has(rel) || spared(rel, d.name, d.isDirectory())) continue;
      if (d.isDirectory()) await collect(rel, path.join(real, d.name));
      else out.push({ path: rel, kind: d.isSymbolicLink() ? 'symlink' : 'file' });
    }
  }
  return out;
}

/**
 * Removes `list` (from findExtraneous) in order and returns what it removed. An entry already
 * gone, or a directory something appeared in meanwhile, is left out; any other failure is an IO
 * error naming the path (what was removed before it stays removed).
 */
export async function removeExtraneous(
  root: string,
  list: readonly Extraneous[],
  keeper?: Keeper,
): Promise<Extraneous[]> {
  const rootReal = await realpath(root);
  const removed: Extraneous[] = [];
  for (const e of list) {
    const abs = path.join(rootReal, ...e.path.split('/'));
    try {
      if (e.kind === 'dir') await rmdir(abs);
      else if (keeper === undefined || !(await keeper.keep(e.path, abs, 'deleted'))) await unlink(abs);
      removed.push(e);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' || code === 'ENOTEMPTY' || code === 'EEXIST') continue;
      throw new ClawpeerError('IO', `cannot remove ${abs} (--delete): ${(err as Error).message}`, { cause: err });
    }
  }
  return removed;
}

export interface TransferExtraneousOptions {
  /** The destination root, and where in it the transfer lands ('' = the root). */
  readonly root: string;
  readonly basePath: string;
  /** The manifest's entries and where each lands (TransferReceiver.destinationPaths), in order. */
  readonly entries: readonly { readonly kind: string }[];
  readonly destPaths: readonly string[];
  /** The source was a directory's contents (a pull of a whole share): basePath itself is its copy. */
  readonly contentsOnly: boolean;
  /** The transfer's exclude patterns: what they match is never removed. */
  readonly exclude?: ExcludeRules;
  /** Also never removed (root-relative paths): --backup's files (backups.ts). */
  readonly spare?: (relPath: string, isDir: boolean) => boolean;
}

/** --max-delete: how many `list` holds when that is more than `max` allows (then none of it goes), else undefined. */
export function overMaxDelete(list: readonly unknown[], max: number | undefined): number | undefined {
  return max !== undefined && list.length > max ? list.length : undefined;
}

/** What --delete removes after one transfer: its directories' entries beyond its own. */
export function transferExtraneous(o: TransferExtraneousOptions): Promise<Extraneous[]> {
  const dirs = o.destPaths.filter((_, i) => o.entries[i]?.kind === 'dir');
  if (o.contentsOnly) dirs.push(o.basePath);
  const rules = o.exclude;
  // The patterns see paths as when the source was scanned (transfer-source.ts): without the base path.
  const excluded =
    rules === undefined
      ? undefined
      : (rel: string, isDir: boolean): boolean => {
          const inner = belowTransferRoot(o.basePath === '' ? rel : rel.slice(o.basePath.length + 1), o.contentsOnly);
          return inner !== '' && rules.excludes(inner, isDir);
        };
  const spare = o.spare;
  const protect =
    spare === undefined
      ? excluded
      : excluded === undefined
        ? spare
        : (rel: string, isDir: boolean): boolean => spare(rel, isDir) || excluded(rel, isDir);
  return findExtraneous({
    root: o.root,
    dirs,
    keep: new Set(o.destPaths),
    ...(protect === undefined ? {} : { protect }),
  });
}
