// Small-file atomic replace: write a temp file next to the target, fsync, rename.
// Readers see the old or the new content, never a torn one.
//
// The temp file is created exclusively (O_CREAT|O_EXCL, and O_NOFOLLOW) under a random name: a
// name someone else planted (a symlink to their own file, in a directory they can write) makes
// the open fail instead of handing them the content, which may be a private key.
import { randomBytes } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import { open, readdir, rename, unlink, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { ClawpeerError } from '../errors.js';
import { processAlive } from './process-alive.js';

/** open(2) flags for a new file that must not exist yet, not even as a symlink. */
export const EXCLUSIVE_CREATE_FLAGS =
  fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | (fsConstants.O_NOFOLLOW ?? 0);

/** A fresh, unguessable temp name next to `file`. */
export function tempPathFor(file: string): string {
  return `${file}.tmp-${process.pid}-${randomBytes(8).toString('hex')}`;
}

/** Creates `file`, which must not exist, with exactly `mode` (the umask may not widen or narrow it). */
export async function createExclusive(file: string, mode: number): Promise<FileHandle> {
  const handle = await open(file, EXCLUSIVE_CREATE_FLAGS, mode);
  try {
    await handle.chmod(mode); // the umask narrowed open()'s mode; the caller asked for this one
  } catch (err) {
    await handle.close().catch(() => undefined);
    throw err;
  }
  return handle;
}

export async function writeFileAtomic(file: string, data: string | Uint8Array, mode = 0o600): Promise<void> {
  // Random, not time-based: two writers in one millisecond must not share a temp file.
  const tmp = tempPathFor(file);
  let created = false;
  try {
    const handle = await createExclusive(tmp, mode);
    created = true;
    try {
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, file);
  } catch (err) {
    // Only a file we created is ours to remove: an EEXIST is someone else's.
    if (created) await unlink(tmp).catch(() => undefined);
    throw new ClawpeerError('IO', `cannot write ${file}: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * Removes the temp files `writeFileAtomic` left next to `file` when its writer died mid-write
 * (their names carry the writer's pid): a listener killed while writing a cache it rewrites
 * after every sync would otherwise leave one more each time. A live writer's are left alone.
 */
export async function removeDeadTemps(file: string): Promise<number> {
  const prefix = `${basename(file)}.tmp-`;
  let names: string[];
  try {
    names = await readdir(dirname(file));
  } catch {
    return 0; // no directory yet: nothing left behind
  }
  let removed = 0;
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    const m = /^(\d+)-[0-9a-f]{16}$/.exec(name.slice(prefix.length));
    if (m === null || processAlive(Number(m[1]))) continue;
    await unlink(join(dirname(file), name)).then(
      () => removed++,
      () => undefined,
    );
  }
  return removed;
}
