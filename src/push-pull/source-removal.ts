// push --remove-source-files (rsync's): once the listener has everything published, the files
// and symlinks the push sent are removed here, so a push moves them. Directories stay, as with
// rsync.
//
// Only what was sent goes: a file is removed only while it is still the version that was hashed
// and sent (same size, mtime and inode as when it was scanned). A file modified so close to its
// scan that a second write could have kept its key (racy, file-key.ts) is hashed again and must
// still have the sent root. A symlink must still point where it did. Anything else is kept and
// reported as changed: removing it would lose the change. A check-then-unlink race with a local
// writer remains, as in rsync.
import { lstat, readlink, unlink } from 'node:fs/promises';
import { lstatSync } from 'node:fs';
import { bytesEqual } from '../chunking/blake3.js';
import type { ChunkingParams } from '../chunking/fastcdc.js';
import { manifestFromFile } from '../file-chunking/file-chunker.js';
import { ClawpeerError } from '../errors.js';
import { fileKeyOf, isRacy, sameFileKey } from '../store/file-key.js';
import type { SourceFile, TransferSource } from '../exchange/transfer-source.js';

export interface SourceRemoval {
  /** Entry paths removed, in manifest order. */
  readonly removed: string[];
  /** Entry paths kept because they changed since they were sent (or could not be checked). */
  readonly changed: string[];
}

/** True when `file` on disk is still the version scanned and sent. */
async function stillAsSent(
  file: SourceFile,
  chunking: ChunkingParams,
  signal: AbortSignal | undefined,
): Promise<boolean> {
  const { key, hashedAtNs } = file;
  if (key === undefined || hashedAtNs === undefined) return false;
  const st = lstatSync(file.localPath, { bigint: true, throwIfNoEntry: false });
  if (st?.isFile() !== true || !sameFileKey(fileKeyOf(st), key)) return false;
  if (!isRacy(key.mtimeNs, hashedAtNs)) return true;
  const again = await manifestFromFile(file.localPath, chunking, signal === undefined ? {} : { signal });
  const after = lstatSync(file.localPath, { bigint: true, throwIfNoEntry: false });
  return bytesEqual(again.root, file.manifest.root) && after !== undefined && sameFileKey(fileKeyOf(after), key);
}

/** Removes the files and symlinks of `source` that are still as they were sent. */
export async function removeSentSources(
  source: TransferSource,
  chunking: ChunkingParams,
  signal?: AbortSignal,
  /** Entry paths to keep: the listener did not write them (refused-paths.ts). */
  notWritten?: (entryPath: string) => boolean,
): Promise<SourceRemoval> {
  const { localPathOf } = source;
  if (localPathOf === undefined) throw new TypeError('removeSentSources needs a scanned source (scanSource)');
  const removed: string[] = [];
  const changed: string[] = [];
  for (const [i, entry] of source.entries.entries()) {
    if (entry.kind === 'dir' || notWritten?.(entry.path) === true) continue;
    const local = localPathOf(i);
    let same: boolean;
    try {
      if (entry.kind === 'file') {
        const file = source.files.get(i);
        same = file !== undefined && (await stillAsSent(file, chunking, signal));
      } else {
        same = (await lstat(local)).isSymbolicLink() && (await readlink(local)) === entry.linkTarget;
      }
    } catch (err) {
      if (signal?.aborted === true) throw err;
      same = false; // vanished or unreadable: nothing to remove, and nothing to claim
    }
    if (!same) {
      changed.push(entry.path);
      continue;
    }
    try {
      await unlink(local);
    } catch (err) {
      throw new ClawpeerError('IO', `cannot remove the sent source ${local}: ${(err as Error).message}`, {
        cause: err,
      });
    }
    removed.push(entry.path);
  }
  return { removed, changed };
}
