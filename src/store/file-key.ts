// A file version's identity on disk, known without reading it: size, mtime to the nanosecond and
// inode. Unchanged key = unchanged content, except inside the racy window.
//
// Racy entries (git's "racily clean" problem): a file modified within the file system's
// timestamp granularity of when it was hashed can keep size and mtime. A key is trusted only
// when the file's mtime is at least RACY_WINDOW_MS older than the moment it was hashed (or
// certified). One rule, used by the chunk index, the folder scanner, the sync's publish
// bookkeeping and the manifest cache.
import type { BigIntStats } from 'node:fs';

/** Files modified less than this before they were hashed are not trusted by their key: 2 s. */
export const RACY_WINDOW_MS = 2000;
const NS_PER_MS = 1_000_000n;

export interface FileKey {
  readonly size: number;
  readonly mtimeNs: bigint;
  readonly ino: bigint;
}

export function fileKeyOf(st: BigIntStats): FileKey {
  return { size: Number(st.size), mtimeNs: st.mtimeNs, ino: st.ino };
}

/** Same size, mtime and inode: the same file version (outside the racy window). */
export function sameFileKey(a: FileKey, b: FileKey): boolean {
  return a.size === b.size && a.mtimeNs === b.mtimeNs && a.ino === b.ino;
}

/** True when a file with this mtime may still change without its key changing, as of `atNs`. */
export function isRacy(mtimeNs: bigint, atNs: bigint, windowMs: number = RACY_WINDOW_MS): boolean {
  return mtimeNs + BigInt(Math.round(windowMs * 1e6)) > atNs;
}

/** `Date.now()`-style milliseconds as nanoseconds, for isRacy. */
export function msToNs(ms: number): bigint {
  return BigInt(Math.round(ms)) * NS_PER_MS;
}
