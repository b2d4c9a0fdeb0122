// A file being assembled for publishing (StagedFile): in a temp file beside its final name, in a
// resumable partial, or in memory; chunk by chunk at any offset and in any order, each chunk's
// BLAKE3 checked as it is written. Publisher (publisher.ts) stages and commits it.
//
// Content verification, and why it needs no re-read. A file's root hash commits to its ordered
// (chunk id, length) list (chunking/manifest.ts), so "the file matches the root" is equivalent to
// "the manifest's chunk list hashes to the root, and the bytes at each position hash to that
// position's id". The first is checked once when staging begins (verifyManifest: 36 bytes hashed
// per chunk); the second as each chunk is written (BLAKE3 of the chunk in memory, 4-6 GiB/s
// native); commit refuses a file with any position unwritten. Re-reading the staged file to hash
// it again would double the disk traffic to guard only against the disk returning other bytes
// than were written, which fsync's contract already covers.
//
// Resource use: a staged temp file (a partial: data file and journal) holds a descriptor only
// while it is used: a process-wide pool keeps a bounded number open, closing idle ones and
// reopening them on demand (support/reopenable-file.ts), so a transfer of 25,000 large files
// needs no 25,000 descriptors. The temp name stays claimed (created with O_EXCL at staging; a
// reopen finds the same file or fails). Small files (IN_MEMORY_MAX_BYTES, not resumable) hold
// no descriptor: they are assembled in memory once their first chunk arrives and written to
// their temp file at commit with synchronous calls in slices of WRITE_OUT_SLICE_MS (each
// awaited call is a thread-pool round trip and a wake-up, which made a tree of small files cost
// ~1 ms per file before its fsync); the driver commits in batches, which bounds that memory.
//
// Holes. An all-zero chunk of a file staged on disk is not written: a partial's data file is
// sized when created, a temp file at commit, so the file keeps a hole there and takes the space
// of its data, as cp --sparse=auto and rsync -S leave sparse files (reading a hole gives the
// zeros the chunk's BLAKE3 was checked against). In-memory files are written whole.

import { rm, type FileHandle } from 'node:fs/promises';
import { REOPEN_READ_WRITE, ReopenableFile } from '../support/reopenable-file.js';
import { closeSync, fchmodSync, fsync, futimesSync, openSync, writeSync } from 'node:fs';
import { promisify } from 'node:util';
import { ClawpeerError, ioError } from '../errors.js';
import { blake3, bytesEqual, toHex } from '../chunking/blake3.js';
import type { FileManifest } from '../chunking/manifest.js';
import type { Partial } from './partial-store.js';
import type { PublishFile } from './publish-types.js';
import { releaseTempName } from './temp-files.js';

const ZEROS = Buffer.alloc(64 << 10);

/** True when every byte is 0 (memcmp against a zero page; random data stops at its first bytes). */
export function isAllZeros(bytes: Uint8Array): boolean {
  for (let at = 0; at < bytes.length; at += ZEROS.length) {
    const n = Math.min(ZEROS.length, bytes.length - at);
    if (Buffer.compare(bytes.subarray(at, at + n), ZEROS.subarray(0, n)) !== 0) return false;
  }
  return true;
}

/** Files up to this size that are not resumable are assembled in memory (see the header). */
export const IN_MEMORY_MAX_BYTES = 1 << 20;
const fsyncAsync = promisify(fsync);

/**
 * A file-backed staging file starts writing back its data (a background fdatasync) each time
 * this much more was written to it. Without it the kernel held a large file's pages dirty until
 * the commit's fsync, which then wrote the whole file while the sender waited: 1.5-2.7 s for
 * 1 GiB on this machine's disk. Early writeback overlaps the disk with the network.
 */
export const EARLY_WRITEBACK_BYTES = 64 << 20;
/** Permission bits a peer may set: rwx for user/group/other; never setuid, setgid or sticky. */
export const PUBLISH_MODE_MASK = 0o777;

/**
 * Whole milliseconds as the seconds utimes takes. ms / 1000 alone is a double up to ~120 ns off
 * (its ulp is ~240 ns now), and libuv truncates to nanoseconds: half the mtimes set landed 1 ns
 * below the millisecond, and a whole second read back as the one before (X.999999999 for X+1).
 * Half a microsecond more always lands inside the millisecond given.
 */
export function toSeconds(ms: number): number {
  return ms / 1000 + 5e-7;
}

/**
 * A file being assembled. Write every chunk (any order, concurrently), then hand it to
 * Publisher.commit; or discard it.
 */
export class StagedFile {
  readonly relPath: string;
  /** Absolute final path. */
  readonly finalPath: string;
  readonly manifest: FileManifest;
  readonly mode: number;
  readonly mtimeMs: number;
  /** Where the bytes are assembled (a temp file in the final directory, or a partial's data file). */
  readonly stagingPath: string;
  /** The temp file or partial data file; undefined while assembled in memory. */
  readonly #file: ReopenableFile | undefined;
  /** In-memory assembly: the bytes (allocated at the first chunk), then the temp file's fd at commit. */
  #memory: Buffer | undefined;
  #fd: number | undefined;
  /** An in-memory file's temp file exists (writeOut ran). */
  #wroteOut = false;
  readonly #partial: Partial | undefined;
  /** A different file or symlink was at the final path when it was staged (--itemize says `replaced`). */
  replaces = false;
  readonly #written: Uint8Array;
  #missing: number;
  #state: 'open' | 'committed' | 'discarded' = 'open';
  /** Early writeback (EARLY_WRITEBACK_BYTES): bytes since the last one, the one in flight, its failure. */
  readonly #writebackEvery: number;
  #unsyncedBytes = 0;
  #writeback: Promise<void> | undefined;
  #writebackError: unknown;
  /** A temp file's all-zero chunks were left unwritten (fillOutHoles sets its size). */
  #holes = false;

  /** @internal created by Publisher.stageFile */
  constructor(
    file: PublishFile & { relPath: string },
    finalPath: string,
    stagingPath: string,
    /** The temp file, open (taken over); 'partial': the partial's data file. */
    handle: FileHandle | 'memory' | 'partial',
    partial: Partial | undefined,
    writebackEvery = EARLY_WRITEBACK_BYTES,
  ) {
    this.#writebackEvery = writebackEvery;
    this.relPath = file.relPath;
    this.finalPath = finalPath;
    this.manifest = file.manifest;
    this.mode = file.mode & PUBLISH_MODE_MASK;
    this.mtimeMs = file.mtimeMs;
    this.stagingPath = stagingPath;
    if (handle === 'partial') {
      if (partial === undefined) throw new TypeError(`${file.relPath}: no partial given`);
      this.#file = partial.dataFile;
    } else {
      this.#file = handle === 'memory' ? undefined : new ReopenableFile(stagingPath, handle, REOPEN_READ_WRITE);
    }
    this.#partial = partial;
    this.#written = new Uint8Array(file.manifest.chunks.length);
    this.#missing = file.manifest.chunks.length;
    if (partial !== undefined) {
      file.manifest.chunks.forEach((c, i) => {
        if (partial.has(c.offset, c.id)) this.#markWritten(i);
      });
    }
  }

  /** True when the staging file is a resumable partial (kept on abort). */
  get resumable(): boolean {
    return this.#partial !== undefined;
  }

  get complete(): boolean {
    return this.#missing === 0;
  }

  /** @internal */
  get state(): 'open' | 'committed' | 'discarded' {
    return this.#state;
  }

  /** @internal */
  get partial(): Partial | undefined {
    return this.#partial;
  }

  /** True when assembled in memory (no file exists until commit). */
  get inMemory(): boolean {
    return this.#file === undefined;
  }

  /** @internal Runs `fn` with the temp file or partial data file open (not for in-memory files). */
  withHandle<T>(fn: (handle: FileHandle) => Promise<T>): Promise<T> {
    if (this.#file === undefined) throw new TypeError(`${this.relPath} is assembled in memory`);
    return this.#file.use(fn);
  }

  /** True while the temp file or partial data file has a descriptor open (tests). */
  get descriptorOpen(): boolean {
    return this.#file?.isOpen ?? this.#fd !== undefined;
  }

  /**
   * @internal Commit, in-memory files: creates the temp file (O_EXCL), writes the bytes, sets
   * mode and mtime. Synchronous: the caller slices a batch (commit). The caller writes the whole
   * batch out before it fsyncs any (syncStaging): creating files while other fsyncs force
   * journal commits made each create wait.
   */
  writeOut(atime: Date): void {
    const bytes = this.#memory ?? Buffer.alloc(0);
    try {
      this.#fd = openSync(this.stagingPath, 'wx', 0o600);
      this.#wroteOut = true;
      let done = 0;
      while (done < bytes.length) done += writeSync(this.#fd, bytes, done, bytes.length - done, done);
      fchmodSync(this.#fd, this.mode);
      futimesSync(this.#fd, atime, toSeconds(this.mtimeMs));
    } catch (err) {
      throw ioError('write', this.relPath, err);
    }
    this.#memory = undefined;
  }

  /** @internal fsyncs an in-memory file's temp file after writeOut. */
  async syncStaging(): Promise<void> {
    if (this.#fd === undefined) throw new TypeError(`${this.relPath} was not written out`);
    await fsyncAsync(this.#fd);
  }

  /** @internal Closes the staging file before it is renamed into place. */
  async closeStaging(): Promise<void> {
    if (this.#partial !== undefined) return;
    if (this.#file !== undefined) {
      await this.#file.dispose();
      return;
    }
    const fd = this.#fd;
    this.#fd = undefined;
    if (fd !== undefined) closeSync(fd);
  }

  /** Chunk positions (indices into manifest.chunks) not written yet, ascending. */
  missingChunks(): number[] {
    const out: number[] = [];
    for (let i = 0; i < this.#written.length; i++) if (this.#written[i] === 0) out.push(i);
    return out;
  }

  isWritten(index: number): boolean {
    return this.#written[index] === 1;
  }

  #markWritten(index: number): void {
    if (this.#written[index] === 0) {
      this.#written[index] = 1;
      this.#missing--;
    }
  }

  /**
   * Verifies `bytes` against the id of the chunk at each position in `indices` (all must name
   * the same id) and writes them there. A small file assembled in memory may keep a reference
   * to `bytes` until it is committed: callers must not reuse that buffer. Throws HASH_MISMATCH
   * naming the file and position (the driver aborts the file), IO for write failures (a full
   * disk says so).
   */
  async writeChunk(indices: number | readonly number[], bytes: Uint8Array): Promise<void> {
    if (this.#state !== 'open') throw new TypeError(`${this.relPath} is already ${this.#state}`);
    const list = typeof indices === 'number' ? [indices] : indices;
    if (list.length === 0) return;
    const first = this.manifest.chunks[list[0]!];
    if (first === undefined) throw new RangeError(`${this.relPath} has no chunk ${list[0]}`);
    if (bytes.length !== first.length) {
      throw new ClawpeerError(
        'HASH_MISMATCH',
        `chunk ${list[0]} of ${this.relPath} has ${bytes.length} bytes, expected ${first.length}`,
      );
    }
    const id = blake3(bytes);
    if (!bytesEqual(id, first.id)) {
      throw new ClawpeerError(
        'HASH_MISMATCH',
        `chunk ${list[0]} of ${this.relPath} hashes to ${toHex(id)}, expected ${toHex(first.id)}`,
      );
    }
    // A chunk of zeros in a file staged on disk is left as a hole (cp --sparse=auto, rsync -S):
    // a VM image or database file takes the space its data does, not its size.
    const zeros = this.#file !== undefined && isAllZeros(bytes);
    for (const index of list) {
      const chunk = this.manifest.chunks[index];
      if (chunk === undefined) throw new RangeError(`${this.relPath} has no chunk ${index}`);
      if (chunk.length !== first.length || !bytesEqual(chunk.id, first.id)) {
        throw new TypeError(`chunk positions ${list[0]} and ${index} of ${this.relPath} hold different chunks`);
      }
      if (zeros) {
        // Not written: the partial's data file was sized when created, a temp file is at commit.
        if (this.#partial !== undefined) await this.#partial.recordZeros(chunk);
        else this.#holes = true;
      } else if (this.#partial !== undefined) {
        await this.#partial.write(chunk, bytes);
      } else if (this.#file === undefined) {
        if (this.manifest.chunks.length === 1) {
          // The chunk is the whole file: keep the caller's bytes (they are not reused) rather
          // than copy them; 10,000 small files made ~600 MB of copies and GC otherwise.
          this.#memory = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
        } else {
          this.#memory ??= Buffer.allocUnsafe(this.manifest.size);
          this.#memory.set(bytes, chunk.offset);
        }
      } else {
        try {
          await this.#file.use(async (handle) => {
            let done = 0;
            while (done < bytes.length) {
              const { bytesWritten } = await handle.write(bytes, done, bytes.length - done, chunk.offset + done);
              done += bytesWritten;
            }
          });
        } catch (err) {
          throw ioError('write', this.relPath, err);
        }
      }
      this.#markWritten(index);
      if (!zeros) this.#noteWritten(bytes.length);
    }
  }

  /**
   * File-backed staging only: starts a background fdatasync once EARLY_WRITEBACK_BYTES more were
   * written (one at a time).
   */
  #noteWritten(bytes: number): void {
    if (this.#file === undefined) return;
    this.#unsyncedBytes += bytes;
    if (this.#unsyncedBytes < this.#writebackEvery || this.#writeback !== undefined) return;
    this.#unsyncedBytes = 0;
    // A failed fsync is reported once and may clear the error: keep it, so the commit cannot
    // succeed on a later fsync after data was lost.
    this.#writeback = this.writeBack()
      .catch((err: unknown) => {
        this.#writebackError ??= err;
      })
      .finally(() => {
        this.#writeback = undefined;
      });
  }

  /** @internal One early writeback: fdatasync of the staging file (tests replace it to count or fail). */
  writeBack(): Promise<void> {
    return this.withHandle((h) => h.datasync());
  }

  /** @internal A temp file with holes at its end is short until this sets its size (before its metadata: truncating sets the mtime). */
  async fillOutHoles(): Promise<void> {
    if (!this.#holes || this.#file === undefined) return;
    try {
      await this.#file.use((h) => h.truncate(this.manifest.size));
    } catch (err) {
      throw ioError('write', this.relPath, err);
    }
  }

  /** @internal Waits for a writeback in flight; throws IO if any early writeback failed. */
  async settleWriteback(): Promise<void> {
    await this.#writeback;
    if (this.#writebackError !== undefined) throw ioError('sync', this.relPath, this.#writebackError);
  }

  /**
   * Makes what was written so far survive a power loss (a resumable partial fsyncs data, then
   * journal). Call at batch boundaries (e.g. every few MiB or on ack-window turns), not per
   * chunk: a SIGKILL loses nothing even without it. No-op for a temp file, which is not resumed.
   */
  async flush(): Promise<void> {
    await this.#partial?.flush();
  }

  /**
   * Drops the staged file: a temp file is deleted; a resumable partial is closed and kept for
   * the next attempt (pass `keepPartial: false` to delete it too, e.g. after HASH_MISMATCH).
   */
  async discard(options: { keepPartial?: boolean } = {}): Promise<void> {
    if (this.#state !== 'open') return;
    this.#state = 'discarded';
    releaseTempName(this.stagingPath);
    await this.#writeback; // never fails (its error is kept); the handle closes after it
    if (this.#partial !== undefined) {
      if (options.keepPartial ?? true) await this.#partial.close().catch(() => undefined);
      else await this.#partial.discard();
      return;
    }
    this.#memory = undefined;
    if (this.#file === undefined && !this.#wroteOut) return; // nothing on disk yet
    await this.closeStaging().catch(() => undefined);
    await rm(this.stagingPath, { force: true });
  }

  /** @internal */
  markCommitted(): void {
    this.#state = 'committed';
    releaseTempName(this.stagingPath);
  }
}
