// Removing a directory only when nothing is left in it (a sync's deletions, deepest first).
import { lstat, rmdir } from 'node:fs/promises';

/** Removes the directory at `abs` when it is one and empty (or gone): false when something is left in it. */
export async function removeDirIfEmpty(abs: string): Promise<boolean> {
  try {
    if ((await lstat(abs)).isDirectory()) await rmdir(abs);
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return true;
    if (code === 'ENOTEMPTY' || code === 'EEXIST') return false;
    throw err;
  }
}
