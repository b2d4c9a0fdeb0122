// Reads chunk bytes from the sender's files, keeping a bounded set of files open, and checks
// each chunk against its id: a file that changed since it was hashed is reported, never sent
// as if it were the announced content.
// Memory: the caller passes the buffer to read into (one per data stream, reused for every
// chunk: the sealer consumes the bytes synchronously), so sending allocates nothing per chunk
// here; a fresh buffer per 256 KiB chunk cost a GiB of garbage per GiB sent.
// Speed: opens and reads are synchronous calls. An awaited read is a thread-pool round trip
// (~0.1 ms here) that costs more than copying a chunk (at most maxBytes, 1 MiB by default)
// from the page cache, and a tree of small files is one open and one read per file.
import { closeSync, openSync, readSync } from 'node:fs';
import { blake3, bytesEqual } from '../chunking/blake3.js';
import { ClawpeerError } from '../errors.js';

/** Open files kept for reuse; each unit of work reads one file, so a few per stream suffice. */
const MAX_OPEN_FILES = 64;

export class ChunkReader {
  readonly #fds = new Map<string, number>();

  /**
   * Reads `length` bytes at `offset` of `localPath` into `into` (at least `length` long; a new
   * buffer when omitted) and returns them as a view of it, after checking they hash to `id`.
   * The view is valid until the caller reuses `into`.
   */
  async read(localPath: string, offset: number, length: number, id: Uint8Array, into?: Buffer): Promise<Uint8Array> {
    if (into !== undefined && into.length < length) throw new RangeError(`read buffer of ${into.length} bytes cannot hold a ${length}-byte chunk`);
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
    if (done !== length || !bytesEqual(blake3(bytes), id)) {
      throw new ClawpeerError('IO', `${localPath} changed while being sent (bytes ${offset}..${offset + length} differ from when it was hashed); run the command again to send the new content`);
    }
    return bytes;
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
      throw new ClawpeerError('IO', `cannot open ${localPath}: ${(err as Error).message}`, { cause: err });
    }
    this.#fds.set(localPath, fd);
    return fd;
  }

  async close(): Promise<void> {
    for (const fd of this.#fds.values()) closeQuietly(fd);
    this.#fds.clear();
  }
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    // already closed: nothing to release
  }
}
