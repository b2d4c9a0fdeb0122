// A directory's entry names, [] when it does not exist yet (an invites/ no command has made).
import { readdir } from 'node:fs/promises';
import { ClawpeerError } from '../errors.js';

/** Names in `dir`; [] when it is missing; IO naming the directory otherwise. */
export async function listDirOrEmpty(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw new ClawpeerError('IO', `cannot list ${dir}: ${(err as Error).message}`, { cause: err });
  }
}
