// A receiver's check that a transfer fits on its disk before it writes anything: a transfer that
// cannot fit is refused up front with the numbers, instead of failing with ENOSPC after hours
// and leaving the disk full for everything else. As Syncthing's minDiskFree (default 1%), a
// margin of the file system stays free. Space is counted as the bytes still to write (chunks an
// interrupted attempt journaled are not counted again); files being replaced are not credited,
// since old and new both exist until the rename.
import { statfs } from 'node:fs/promises';
import { ClawpeerError } from '../errors.js';
import { human } from '../format.js';
import { TEST_HOOKS } from '../support/test-hooks.js';

/** The fraction of the file system a transfer must leave free. */
export const MIN_FREE_FRACTION = 0.01;

export interface FileSystemSpace {
  /** Bytes an unprivileged writer may still use (statfs bavail x bsize). */
  readonly availableBytes: number;
  /** The file system's size (blocks x bsize). */
  readonly totalBytes: number;
}

/** Why writing `needBytes` more would not fit in `space` (keeping the margin), or undefined if it fits. */
export function spaceShortfall(
  needBytes: number,
  space: FileSystemSpace,
  minFreeFraction = MIN_FREE_FRACTION,
): string | undefined {
  const keep = Math.ceil(space.totalBytes * minFreeFraction);
  if (needBytes + keep <= space.availableBytes) return undefined;
  return `it writes ${human(needBytes)} and ${human(space.availableBytes)} are free, of which ${human(keep)} (${minFreeFraction * 100}% of the file system) stay free`;
}

export async function fileSystemSpace(dir: string): Promise<FileSystemSpace> {
  const st = await statfs(dir);
  const real = { availableBytes: st.bavail * st.bsize, totalBytes: st.blocks * st.bsize };
  // Tests pretend a nearly full disk (test-hooks.ts); never more room than there is.
  const fake = TEST_HOOKS.freeBytes;
  return fake === undefined
    ? real
    : { availableBytes: Math.min(fake, real.availableBytes), totalBytes: real.totalBytes };
}

/**
 * Throws IO naming `where` when `needBytes` more would not fit in `dir`'s file system. A file
 * system that cannot say (statfs unsupported) is not checked: the writes report ENOSPC then.
 */
export async function ensureFreeSpace(dir: string, needBytes: number, where: string): Promise<void> {
  if (needBytes <= 0) return;
  let space: FileSystemSpace;
  try {
    space = await fileSystemSpace(dir);
  } catch {
    return;
  }
  const short = spaceShortfall(needBytes, space);
  if (short !== undefined) throw new ClawpeerError('IO', `not enough disk space in ${where}: ${short}`);
}

/** True when `needBytes` more fit in `dir`'s file system (keeping the margin), or it cannot say. */
export async function fitsFreeSpace(dir: string, needBytes: number): Promise<boolean> {
  if (needBytes <= 0) return true;
  const space = await fileSystemSpace(dir).catch(() => undefined);
  return space === undefined || spaceShortfall(needBytes, space) === undefined;
}
