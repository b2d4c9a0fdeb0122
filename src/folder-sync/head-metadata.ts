// Gives a file the head's mode and mtime when a sync changed only those (the `chmod` action of
// sync-plan.ts), and says when the file may stand for that head although they could not be set.
//
// Why: a node that may write a file but not set its times or mode (owned by another user:
// utimes and chmod are EPERM; an immutable file; a file system that refuses either) kept the
// old ones on disk, and its next scan recorded them as an edit of its own, which every peer then
// took. One such node undid a peer's touch or chmod; two of them on one file traded revisions
// for good. As Syncthing does for file systems that cannot keep mtimes, what the disk kept is
// certified instead (a warm entry of the new head with the stat on disk): the scan sees nothing
// to record, and the head stays the one every peer has.
// Only a file the last scan certified (warm for the local head, whose bytes are the new head's:
// that is what `chmod` means) and that nothing touched since (same inode, size and, where the
// time could not be set, mtime; mode and time each either what was asked or what they were) is
// certified. When both were set as asked nothing is certified: the next scan hashes the file
// once, as after any sync. Left: a same-size write landing in the microseconds between the first
// lstat and a utimes that succeeds while chmod fails would pass for the head's bytes.
import { lstatSync, type BigIntStats } from 'node:fs';
import { chmod, lutimes } from 'node:fs/promises';
import type { Logger } from '../logger.js';
import { isRacy } from '../store/file-key.js';
import type { RevisionStore } from '../store/revision-store.js';
import { warmStatOf, type WarmStat } from '../store/revlog-format.js';
import { toSeconds } from '../store/staged-file.js';
import { floorMs } from '../sync/revision.js';

function lstatOf(abs: string): BigIntStats | undefined {
  try {
    return lstatSync(abs, { bigint: true, throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}

export interface HeadMetadata {
  /** The file on disk and its path in the folder (the warm index's key). */
  readonly abs: string;
  readonly relPath: string;
  /** The new head's permission bits, and its mtime in whole ms when it differs from the local head's. */
  readonly mode: number;
  readonly mtimeMs: number | undefined;
  readonly store: RevisionStore;
  readonly log: Logger;
  readonly nowNs: bigint;
}

/**
 * Sets mode and mtime; returns the stat to certify for the new head when one of them could not
 * be set (see the top of the file), else undefined.
 */
export async function setHeadMetadata(o: HeadMetadata): Promise<WarmStat | undefined> {
  const before = lstatOf(o.abs);
  // Not the file the head names (a link or directory put there since the scan): chmod follows a
  // link, out of the folder too. Left alone; the next scan records what is there.
  if (before?.isFile() !== true) {
    o.log.warn('sync: not a file here any more; its mode is left alone', { path: o.relPath });
    return undefined;
  }
  const scanned = !isRacy(before.mtimeNs, o.nowNs) && o.store.isWarm(o.relPath, warmStatOf(before));
  const modeSet = await chmod(o.abs, o.mode & 0o777).then(
    () => true,
    (err: unknown) => {
      o.log.warn('sync: cannot set mode', { path: o.relPath, error: (err as Error).message });
      return false;
    },
  );
  const mtimeMs = o.mtimeMs;
  const timeSet =
    mtimeMs === undefined ||
    (await lutimes(o.abs, new Date(), toSeconds(mtimeMs)).then(
      () => true,
      (err: unknown) => {
        o.log.warn('sync: cannot set mtime', { path: o.relPath, error: (err as Error).message });
        return false;
      },
    ));
  if (!scanned || (modeSet && timeSet)) return undefined;
  const after = lstatOf(o.abs);
  if (after?.isFile() !== true || after.ino !== before.ino || after.dev !== before.dev || after.size !== before.size)
    return undefined;
  const stat = warmStatOf(after);
  const modeAsExpected = stat.mode === (modeSet ? o.mode : warmStatOf(before).mode);
  const timeAsExpected =
    mtimeMs !== undefined && timeSet ? floorMs(after.mtimeNs) === mtimeMs : after.mtimeNs === before.mtimeNs;
  return modeAsExpected && timeAsExpected ? stat : undefined;
}
