// --backup, --backup-dir and --suffix (rsync's): a file or symlink that a transfer replaces
// (--force, --update) or removes (--delete) is first kept under a backup name: beside it with
// the suffix ('~' by default), or under a backup directory with the same relative path (and the
// suffix, empty by default there). An older backup of the same file is replaced, as rsync does.
//
// Goals: a backup is complete before the original goes (a replaced file is hard-linked, then
// the new one renamed over it; a removed one is renamed), so no moment loses both; the backup
// directory is created inside the destination root only, never through a symlink that leads out
// of it (the publisher's confined directory walk); --delete never removes backups (the suffix's
// files, the backup directory: rsync protects the suffix the same way).
// Non-goals: backups of directories (a directory is never replaced, and --delete removes only
// empty ones); dry runs (they list what would change, not what would be backed up).
import { constants as fsConstants } from 'node:fs';
import { copyFile, link, lstat, readlink, rename, rm, symlink, unlink } from 'node:fs/promises';
import path from 'node:path';
import { ClawpeerError } from '../errors.js';
import { normalizeSharePath } from '../transfer/paths.js';
import { isInternalPath } from './internal-names.js';
import type { Keeper } from './keeper.js';
import { releaseTempName } from './temp-files.js';

/** rsync's default suffix when there is no backup directory. */
export const DEFAULT_BACKUP_SUFFIX = '~';
const MAX_SUFFIX_BYTES = 64;

export interface BackupPlan {
  /** Appended to the backup's name ('' only with a directory). */
  readonly suffix: string;
  /** The backup directory relative to the destination directory, normalized; absent: beside each file. */
  readonly dir?: string;
}

/**
 * The plan for --backup-dir `dir` and --suffix `suffix` (either may be absent), checked: USAGE
 * naming what is wrong (a peer's request is checked by the same rules: the listener maps it to
 * PROTOCOL). The directory is a relative path that stays inside the destination.
 */
export function backupPlan(dir: string | undefined, suffix: string | undefined): BackupPlan {
  const s = suffix ?? (dir === undefined || dir === '' ? DEFAULT_BACKUP_SUFFIX : '');
  // eslint-disable-next-line no-control-regex -- control characters are what it refuses
  if (s.includes('/') || s.includes('\\') || /[\0-\x1f]/.test(s))
    throw new ClawpeerError('USAGE', `--suffix ${JSON.stringify(s)}: no slashes or control characters`);
  if (Buffer.byteLength(s) > MAX_SUFFIX_BYTES)
    throw new ClawpeerError('USAGE', `--suffix is longer than ${MAX_SUFFIX_BYTES} bytes`);
  if (dir === undefined || dir === '') {
    if (s === '')
      throw new ClawpeerError('USAGE', 'an empty --suffix needs --backup-dir: the backup would be the file itself');
    return { suffix: s };
  }
  let normalized: string;
  try {
    normalized = normalizeSharePath(dir.replace(/(.)\/+$/, '$1')); // 'old/' as a shell completes it
  } catch (err) {
    throw new ClawpeerError(
      'USAGE',
      `--backup-dir ${JSON.stringify(dir)} must be a relative path inside the destination: ${(err as Error).message}`,
    );
  }
  if (isInternalPath(normalized))
    throw new ClawpeerError('USAGE', `--backup-dir ${JSON.stringify(dir)} names clawpeer's own state`);
  return { suffix: s, dir: normalized };
}

/** The destination-root-relative path of `plan`'s directory for a transfer landing at `destBase` ('' = the root). */
export function backupDirOf(plan: BackupPlan, destBase: string): string | undefined {
  if (plan.dir === undefined) return undefined;
  return destBase === '' ? plan.dir : `${destBase}/${plan.dir}`;
}

/** What --delete must spare with `plan`: the backup directory and what is in it, or (without one) files named with the suffix. */
export function backupProtection(plan: BackupPlan, destBase: string): (rel: string, isDir: boolean) => boolean {
  const dir = backupDirOf(plan, destBase);
  if (dir !== undefined) return (rel) => rel === dir || rel.startsWith(`${dir}/`);
  return (rel, isDir) => !isDir && rel.endsWith(plan.suffix);
}

/** How the publisher lends its directory walk and temp names (publisher.ts owns both). */
export interface BackupPlace {
  /** A destination-root-relative directory as an absolute path, created inside the root (never through a link out of it). */
  readonly dirAt: (relDir: string) => string;
  /** A temp file name for `baseName` in the same directory (swept as the publisher's own if left behind). */
  readonly tempName: (baseName: string) => string;
}

/** The backups of one transfer into a destination where transfers land at `destBase`. */
export class Backups implements Keeper {
  /** Files and symlinks backed up so far. */
  count = 0;
  readonly #plan: BackupPlan;
  readonly #destBase: string;
  readonly #place: BackupPlace;

  constructor(plan: BackupPlan, destBase: string, place: BackupPlace) {
    this.#plan = plan;
    this.#destBase = destBase;
    this.#place = place;
  }

  async keep(rel: string, abs: string, how: 'replaced' | 'deleted'): Promise<boolean> {
    const st = await lstat(abs).catch(() => undefined);
    if (st === undefined || !(st.isFile() || st.isSymbolicLink())) return false;
    const target = this.#targetOf(rel, abs);
    const tmp = path.join(path.dirname(target), this.#place.tempName(path.basename(target)));
    try {
      if (how === 'deleted') await moveTo(abs, target, tmp, st.isSymbolicLink());
      else await copyTo(abs, target, tmp, st.isSymbolicLink());
    } catch (err) {
      if (err instanceof ClawpeerError) throw err;
      throw new ClawpeerError('IO', `cannot back up ${abs} as ${target}: ${(err as Error).message}`, { cause: err });
    } finally {
      releaseTempName(tmp);
    }
    this.count++;
    return true;
  }

  /** Where the backup of `rel` goes: beside it, or under the backup directory at its path below the destination. */
  #targetOf(rel: string, abs: string): string {
    const dir = backupDirOf(this.#plan, this.#destBase);
    if (dir === undefined) return abs + this.#plan.suffix;
    const below = this.#destBase === '' ? rel : rel.slice(this.#destBase.length + 1);
    const relDir = path.posix.dirname(`${dir}/${below}`);
    return path.join(this.#place.dirAt(relDir), path.posix.basename(below) + this.#plan.suffix);
  }
}

/** Renames `abs` to `target` (replacing an older backup); across file systems, copies and removes. */
async function moveTo(abs: string, target: string, tmp: string, isLink: boolean): Promise<void> {
  try {
    await rename(abs, target);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EXDEV') throw err;
    await copyTo(abs, target, tmp, isLink);
    await unlink(abs);
  }
}

/** Leaves a copy of `abs` at `target` by way of `tmp` (an older backup is replaced atomically): a hard link, else a copy. */
async function copyTo(abs: string, target: string, tmp: string, isLink: boolean): Promise<void> {
  try {
    try {
      await link(abs, tmp); // Linux links a symlink itself, not its target
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'EXDEV' && code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw err;
      if (isLink) await symlink(await readlink(abs), tmp);
      else await copyFile(abs, tmp, fsConstants.COPYFILE_EXCL);
    }
    await rename(tmp, target);
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
}
