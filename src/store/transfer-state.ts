// What a one-shot pull leaves in a plain destination folder, and taking it away again.
//
// A pull keeps its chunk index (`index.bin`) and resumable partials (`partial/`) under the
// destination's `.clawpeer/` while it runs, so an interrupted pull resumes. rsync and scp users
// do not expect state in their destination: once a pull completed and nothing partial is left,
// that directory goes, unless it holds more than a pull puts there (a synced folder's revision
// log or history, a lock, a listener's share state), which stays untouched.
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { INDEX_FILE_NAME } from './chunk-index.js';
import { INTERNAL_DIR_NAME } from './internal-names.js';

/** Entries of `.clawpeer/` that a pull makes (the chunk index, its atomic-write temp, partials). */
function pullMade(name: string): boolean {
  return (
    name === INDEX_FILE_NAME ||
    name === 'partial' ||
    name.startsWith(`${INDEX_FILE_NAME}.`) ||
    name.startsWith('.clawpeer-tmp-')
  );
}

/**
 * Removes `root/.clawpeer/` when it holds only what a pull makes and no partial is left.
 * True when it was removed (or was not there).
 */
export async function removePullState(root: string): Promise<boolean> {
  const dir = path.join(root, INTERNAL_DIR_NAME);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return true;
    throw err;
  }
  if (!names.every(pullMade)) return false;
  if (names.includes('partial') && (await readdir(path.join(dir, 'partial')).catch(() => ['?'])).length > 0)
    return false;
  await rm(dir, { recursive: true, force: true });
  return true;
}
