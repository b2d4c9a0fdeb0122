// Reads chunk bytes from the sender's files, keeping a bounded set of files open, and checks
// that the file did not change since it was hashed: a changed file is reported, never sent as if
// it were the announced content.
// Hash once: a file the scan keyed (size, mtime to the ns, inode; store/file-key.ts) outside the
// racy window is checked by one fstat per chunk against that key instead of hashing the chunk
// again (BLAKE3 of every byte sent, ~0.2-0.3 s of CPU per GiB here). Other files (no key, or
// modified too shortly before they were hashed for the key to vouch for them, or whose key moved
// since: a touch or an append leaves the bytes sent as they were) are hashed as before. A push
// keys its files from its scan, a sync's serving side from its folder scan's manifest cache or
// its own hashing of the file (manifest-cache.ts). Either way the receiver verifies every
// chunk's BLAKE3 before it writes or acks it, so this check only gives the clear error early;
// it is never what guards the content.
// Memory: the caller passes the buffer to read into (one per data stream, reused for every
// chunk: the sealer consumes the bytes synchronously), so sending allocates nothing per chunk
// here; a fresh buffer per 256 KiB chunk cost a GiB of garbage per GiB sent.
// Speed: opens and reads are synchronous calls. An awaited read is a thread-pool round trip
// (~0.1 ms here) that costs more than copying a chunk (at most maxBytes, 1 MiB by default)
// from the page cache, and a tree of small files is one open and one read per file.
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { blake3, bytesEqual } from '../chunking/blake3.js';
import { ClawpeerError } from '../errors.js';
import { fileKeyOf, isRacy, sameFileKey, type FileKey } from '../store/file-key.js';

/** What the scan knew of a file: its key before hashing, and when hashing began (SourceFile). */
export interface ScannedAs {
  readonly key?: FileKey;
  readonly hashedAtNs?: bigint;
}

/** In the error of a file that changed while it was being sent: a race with a writer, not a fault of this side. */
export const CHANGED_WHILE_SENT = 'changed while being sent';

/** Open files kept for reuse; each unit of work reads one file, so a few per stream suffice. */
const MAX_OPEN_FILES = 64;

export class ChunkReader {
  readonly #fds = new Map<string, number>();

  /**
   * Reads `length` bytes at `offset` of `localPath` into `into` (at least `length` long; a new
   * buffer when omitted) and returns them as a view of it, after checking the file is as it was
   * hashed: by its key when `scanned` vouches for it, else by hashing the bytes against `id`.
   * The view is valid until the caller reuses `into`.
   */
  async read(
    localPath: string,
    offset: number,
    length: number,
    id: Uint8Array,
    into?: Buffer,
    scanned?: ScannedAs,
  ): Promise<Uint8Array> {
    if (into !== undefined && into.length < length)
      throw new RangeError(`read buffer of ${into.length} bytes cannot hold a ${length}-byte chunk`);
    const fd = this.#fd(localPath);
    const bytes = into === undefined ? Buffer.allocUnsafe(length) : into.subarray(0, length);
    let done = 0;
    try {
      while (done < length) {
        const bytesRead = readSync(fd, bytes, done, length - done, offset + done);
        if (bytesRead === 0) break;
        done += bytesRead;
      }
    } catch (err) {
      throw new ClawpeerError('IO', `cannot read ${localPath}: ${(err as Error).message}`, { cause: err });
    }
    if (done !== length || !this.#unchanged(fd, localPath, bytes, id, scanned)) {
      throw new ClawpeerError(
        'IO',
        `${localPath} ${CHANGED_WHILE_SENT} (bytes ${offset}..${offset + length} differ from when it was hashed); run the command again to send the new content`,
      );
    }
    return bytes;
  }

  /** True when the file still has the key it was hashed with (trusted keys only), else when the bytes hash to `id`. */
  #unchanged(
    fd: number,
    localPath: string,
    bytes: Uint8Array,
    id: Uint8Array,
    scanned: ScannedAs | undefined,
  ): boolean {
    const { key, hashedAtNs } = scanned ?? {};
    if (key !== undefined && hashedAtNs !== undefined && !isRacy(key.mtimeNs, hashedAtNs)) {
      let st;
      try {
        st = fstatSync(fd, { bigint: true });
      } catch (err) {
        throw new ClawpeerError('IO', `cannot stat ${localPath}: ${(err as Error).message}`, { cause: err });
      }
      if (sameFileKey(fileKeyOf(st), key)) return true;
      // The key moved (a touch, an append, a rewrite): the bytes decide, as for an unkeyed file.
      // A file touched since the scan is still served, and one whose bytes changed is caught.
    }
    return bytesEqual(blake3(bytes), id);
  }

  #fd(localPath: string): number {
    const cached = this.#fds.get(localPath);
    if (cached !== undefined) {
      // Refresh its place in the LRU order.
      this.#fds.delete(localPath);
      this.#fds.set(localPath, cached);
      return cached;
    }
    if (this.#fds.size >= MAX_OPEN_FILES) {
      const [oldest, fd] = this.#fds.entries().next().value as [string, number];
      this.#fds.delete(oldest);
      closeQuietly(fd);
    }
    let fd: number;
    try {
      fd = openSync(localPath, 'r');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if ((code !== 'EMFILE' && code !== 'ENFILE') || this.#fds.size === 0) throw openError(localPath, err);
      // At the open-file limit (ulimit -n 64 was reached with 64 kept here: every sync of a tree
      // of more files failed): give back the files kept for reuse, all idle, and try once more.
      for (const kept of this.#fds.values()) closeQuietly(kept);
      this.#fds.clear();
      try {
        fd = openSync(localPath, 'r');
      } catch (again) {
        throw openError(localPath, again);
      }
    }
    this.#fds.set(localPath, fd);
    return fd;
  }

  async close(): Promise<void> {
    for (const fd of this.#fds.values()) closeQuietly(fd);
    this.#fds.clear();
  }
}

function openError(localPath: string, err: unknown): ClawpeerError {
  return new ClawpeerError('IO', `cannot open ${localPath}: ${(err as Error).message}`, { cause: err });
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // already closed: nothing to release
  }
}
