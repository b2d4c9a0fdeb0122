// Writing a conflict copy as a file of its own, and splitting one that shares its inode.
//
// Goals: a conflict copy never shares an inode with the live file it came from: the live file
// may be appended to in place (by the user, or a program), and a shared inode would change the
// "kept" loser with it; that happened when a copy was made as a hard link and the sync was
// killed before the live name got its new inode. So the copy is a new inode (reflink where the
// file system has it, else a byte copy) written under a temp name, fsynced, and renamed into
// place, so a kill at any point leaves either no copy or a whole one (the temp file is swept by
// the next scan, folder-scanner.ts). Non-goals: deciding which revision loses (sync/conflict.ts),
// recording the copy (sync-apply.ts).
import { constants } from 'node:fs';
import { copyFile, lstat, open, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { ClawpeerError } from '../errors.js';
import { syncDir } from '../store/partial-store.js';
import { releaseTempName, tempNameFor } from '../store/temp-files.js';
import { toSeconds } from '../store/staged-file.js';

/**
 * Copies the file at `from` to `to` (replacing what is there) as a new inode with `mode` and
 * `mtimeMs`; the copy is on disk (file and directory entry fsynced) when this returns. IO on failure.
 */
export async function writeOwnCopy(from: string, to: string, mode: number, mtimeMs: number): Promise<void> {
  const dir = path.dirname(to);
  const tmp = path.join(dir, tempNameFor(path.basename(to)));
  try {
    // FICLONE: a reflink where supported (no bytes copied), otherwise a plain copy. EXCL: the temp
    // name is never followed through a link someone put there (as every state file is created).
    await copyFile(from, tmp, constants.COPYFILE_FICLONE | constants.COPYFILE_EXCL);
    const h = await open(tmp, constants.O_RDWR | constants.O_NOFOLLOW);
    try {
      await h.chmod(mode & 0o777);
      await h.utimes(new Date(), toSeconds(mtimeMs));
      await h.sync();
    } finally {
      await h.close();
    }
    await rename(tmp, to);
    await syncDir(dir);
  } catch (err) {
    await rm(tmp, { force: true });
    throw new ClawpeerError('IO', `cannot write ${to} as a copy of ${from}: ${(err as Error).message}`, { cause: err });
  } finally {
    releaseTempName(tmp);
  }
}

/**
 * Gives the file at `abs` an inode of its own when it has other names (same bytes, mode and
 * mtime); returns true when it split one. A conflict copy the old code made as a hard link of
 * its live file is healed so before anything else reads it.
 */
export async function splitHardLink(abs: string): Promise<boolean> {
  const st = await lstat(abs);
  if (!st.isFile() || st.nlink <= 1) return false;
  await writeOwnCopy(abs, abs, st.mode & 0o7777, st.mtimeMs);
  return true;
}
