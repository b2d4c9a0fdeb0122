// Small-file atomic replace: write a temp file next to the target, fsync, rename.
// Readers see the old or the new content, never a torn one.
import { randomBytes } from 'node:crypto';
import { open, rename, unlink } from 'node:fs/promises';
import { ClawpeerError } from '../errors.js';

export async function writeFileAtomic(file: string, data: string | Uint8Array, mode = 0o644): Promise<void> {
  // Random, not time-based: two writers in one millisecond must not share a temp file.
  const tmp = `${file}.tmp-${process.pid}-${randomBytes(6).toString('hex')}`;
  try {
    const handle = await open(tmp, 'w', mode);
    try {
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(tmp, file);
  } catch (err) {
    await unlink(tmp).catch(() => undefined);
    throw new ClawpeerError('IO', `cannot write ${file}: ${(err as Error).message}`, { cause: err });
  }
}
