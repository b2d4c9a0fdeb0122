// Atomic publish of received files into a share: no partial file ever appears at a final path,
// nothing is written outside the share, and an existing different file is not replaced unless
// forced.
//
// Goals: a file is assembled in a staging file (a temp file in its destination directory, or a
// resumable partial from partial-store.ts), chunk by chunk at any offset and in any order; once
// complete it gets its mode and mtime, is fsync'd and renamed (or hard-linked, for no-clobber)
// into place; directories get their mode and mtime last, deepest first, after their contents.
// Many small files are committed as a batch: one parallel round of fsyncs, then the renames,
// then one fsync per distinct directory (bcmr measured 10,000 x 64 KiB going from 24.75 s to
// 3.58 s by batching alone).
// Non-goals: choosing which chunks to fetch (transfer/), reading local copies of chunks
// (chunk-index.ts), the network, path syntax (paths.ts normalises; this module confines).
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
// Confinement. Every directory on the way to a final path is checked: created ones are made by us
// (no symlink follows), existing ones are realpath'd and must stay inside the share root
// (isConfinedRealpath), so a symlinked directory inside the share cannot redirect a write. Temp
// files are created with O_EXCL (never through an existing link); the final step renames or
// links, which replace a symlink at the final path rather than follow it. Limit: a local user
// racing us by swapping a checked directory for a symlink between check and rename is not
// defended against (Node has no openat/renameat); peers cannot do that, as they only write
// through this module.
//
// Resource use: a staged temp file holds one open descriptor (a partial, two) until commit or
// abort. Small files (IN_MEMORY_MAX_BYTES, not resumable) hold no descriptor: they are assembled
// in memory once their first chunk arrives and written to their temp file at commit with
// synchronous calls in slices of WRITE_OUT_SLICE_MS (each awaited call is a thread-pool round
// trip and a wake-up, which made a tree of small files cost ~1 ms per file before its fsync);
// the driver commits in batches, which bounds that memory.
//
// Holes. An all-zero chunk of a file staged on disk is not written: a partial's data file is
// sized when created, a temp file at commit, so the file keeps a hole there and takes the space
// of its data, as cp --sparse=auto and rsync -S leave sparse files (reading a hole gives the
// zeros the chunk's BLAKE3 was checked against). In-memory files are written whole.

import { randomInt } from 'node:crypto';
import { chmod, copyFile, lstat, lutimes, open, readdir, readlink, realpath, rename, rm, symlink, utimes } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import { closeSync, constants as fsConstants, fchmodSync, fstatSync, fsync, futimesSync, linkSync, lstatSync, mkdirSync, openSync, realpathSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { promisify } from 'node:util';
import type { BigIntStats, Stats } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { ClawpeerError, isClawpeerError } from '../errors.js';
import { blake3, bytesEqual, toHex } from '../chunking/blake3.js';
import type { ChunkingParams } from '../chunking/fastcdc.js';
import { manifestFromFile } from '../file-chunking/file-chunker.js';
import { verifyManifest } from '../chunking/manifest.js';
import type { FileManifest } from '../chunking/manifest.js';
import { isConfinedRealpath, normalizeSharePath } from '../transfer/paths.js';
import { Backups, type BackupPlan } from './backups.js';
import { forEachBounded } from '../support/for-each-bounded.js';
import type { Keeper } from './keeper.js';
import { processAlive } from '../support/process-alive.js';
import { syncDir } from './partial-store.js';
import { isInternalPath, isTempFileName, TEMP_FILE_PREFIX } from './internal-names.js';
import type { Partial, PartialStore } from './partial-store.js';
import { scanTree, symlinkTargetIsConfined } from './tree-scan.js';

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
 * fsyncs in flight at once during a batch commit: one per thread of the pool
 * bin/thread-pool.cjs sizes, so they share journal commits.
 */
export const COMMIT_FSYNC_CONCURRENCY = 32;
/**
 * A commit creates its in-memory files' temp files with synchronous calls and lets the event
 * loop run after each slice of this many ms (so acks of chunks already written go out). On the
 * thread pool, each of the four calls per file cost a wake-up of a pool thread, and that doubled
 * the CPU a file cost (4 KiB files here: 310-800 us against 75-400 us synchronous; the spread is
 * ext4's inode allocator after many deletions); a batch in one go blocked the loop 29-121 ms.
 */
const WRITE_OUT_SLICE_MS = 2;
/**
 * A file-backed staging file starts writing back its data (a background fdatasync) each time
 * this much more was written to it. Without it the kernel held a large file's pages dirty until
 * the commit's fsync, which then wrote the whole file while the sender waited: 1.5-2.7 s for
 * 1 GiB on this machine's disk. Early writeback overlaps the disk with the network.
 */
export const EARLY_WRITEBACK_BYTES = 64 << 20;
/** Permission bits a peer may set: rwx for user/group/other; never setuid, setgid or sticky. */
export const PUBLISH_MODE_MASK = 0o777;
const NAME_MAX_BYTES = 255;
const TEMP_RANDOM_BYTES = 6;

/** A file to publish, as announced by the sender. */
export interface PublishFile {
  /** Relative path inside the share (normalised again here). */
  readonly relPath: string;
  /** The expected content; its root is what gets published. */
  readonly manifest: FileManifest;
  /** Permission bits (masked with PUBLISH_MODE_MASK). */
  readonly mode: number;
  readonly mtimeMs: number;
}

export interface PublishDir {
  readonly relPath: string;
  readonly mode: number;
  readonly mtimeMs: number;
}

/** Given a path's current stat, its content root if known without hashing (a warm index). */
export type KnownRootLookup = (relPath: string, st: BigIntStats) => Uint8Array | undefined;

/**
 * What happens to a different file or symlink already at a final path (directories in the way
 * are always refused): 'refuse' (FILE_EXISTS, the default), 'replace' (--force), 'keep' it
 * (rsync's --ignore-existing), or replace it unless it is newer than the incoming one by mtime
 * ('update', rsync's --update).
 */
export type ExistingPolicy = 'refuse' | 'replace' | 'keep' | 'update';

export interface PublisherOptions {
  /** Share root directory (resolved with realpath here). */
  readonly shareRoot: string;
  readonly readOnly?: boolean;
  /** Replace existing different files (never directories): the 'replace' policy. */
  readonly force?: boolean;
  /** What to do with a different existing file; overrides `force`. Default: 'replace' with force, else 'refuse'. */
  readonly existing?: ExistingPolicy;
  /** The negotiated chunking: needed to compute the root of an existing file. */
  readonly chunking: ChunkingParams;
  /** Where resumable files are staged; without it every file stages as a temp file. */
  readonly partials?: PartialStore;
  readonly knownRoot?: KnownRootLookup;
  /** Limits for manifests from the peer (verifyManifest). */
  readonly maxChunkBytes?: number;
  readonly maxChunkCount?: number;
  readonly signal?: AbortSignal;
  /** Override EARLY_WRITEBACK_BYTES (tests). */
  readonly earlyWritebackBytes?: number;
  /** --backup: what a replaced file or symlink is kept as; the transfer lands at `destBase` (root-relative, '' = the root). */
  readonly backup?: { readonly plan: BackupPlan; readonly destBase: string };
  /** Without a backup: what keeps a file before it is replaced (a synced folder's history). */
  readonly keeper?: Keeper;
  /** Told of each identical file whose mtime or permissions stageFile set (--itemize). */
  readonly onMetadataSet?: (relPath: string, set: MetadataSet) => void;
}

function ioError(what: string, file: string, err: unknown): ClawpeerError {
  if (isClawpeerError(err)) return err;
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOSPC' || code === 'EDQUOT') {
    return new ClawpeerError('IO', `cannot ${what} ${file}: the disk is full`, { cause: err });
  }
  if (code === 'EROFS') return new ClawpeerError('IO', `cannot ${what} ${file}: the file system is read-only`, { cause: err });
  const detail = err instanceof Error ? err.message : String(err);
  return new ClawpeerError('IO', `cannot ${what} ${file}: ${detail}`, { cause: err });
}

// The 12 hex digits need to be unique, not secret: a random start per process, then a counter
// (6 random bytes per name cost ~1% of receiving 10,000 small files in randomFillSync). O_EXCL
// still refuses a name that exists.
const TEMP_SERIAL_MODULUS = 2 ** (TEMP_RANDOM_BYTES * 8);
let tempSerial = randomInt(TEMP_SERIAL_MODULUS - 1); // randomInt takes ranges below 2^48

/**
 * `.clawpeer-tmp-p<pid>-<12 hex>-<basename>`, with the basename cut so the name fits NAME_MAX.
 * The pid names the writing process, so a sweep can tell a dead writer's leftovers from a live
 * transfer's files at once instead of waiting for them to age (removeStaleTempFiles).
 */
export function tempNameFor(baseName: string, pid = process.pid): string {
  tempSerial = (tempSerial + 1) % TEMP_SERIAL_MODULUS;
  const prefix = `${TEMP_FILE_PREFIX}p${pid}-${tempSerial.toString(16).padStart(TEMP_RANDOM_BYTES * 2, '0')}-`;
  let base = baseName;
  while (Buffer.byteLength(prefix + base, 'utf8') > NAME_MAX_BYTES) base = Array.from(base).slice(0, -1).join('');
  return prefix + base;
}

function symlinkEscapes(rel: string, target: string): ClawpeerError {
  return new ClawpeerError('PATH_INVALID', `symlink ${rel} -> ${JSON.stringify(target)} refused: its target leaves the share`);
}

/** --update's rule: what is here is newer, by whole milliseconds (timestamps travel in ms). */
function newerHere(existingMtimeMs: number, incomingMtimeMs: number): boolean {
  return Math.floor(existingMtimeMs) > Math.floor(incomingMtimeMs);
}

/**
 * Whole milliseconds as the seconds utimes takes. ms / 1000 alone is a double up to ~120 ns off
 * (its ulp is ~240 ns now), and libuv truncates to nanoseconds: half the mtimes set landed 1 ns
 * below the millisecond, and a whole second read back as the one before (X.999999999 for X+1).
 * Half a microsecond more always lands inside the millisecond given.
 */
function toSeconds(ms: number): number {
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
  readonly #handle: FileHandle | undefined;
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
    handle: FileHandle | 'memory',
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
    this.#handle = handle === 'memory' ? undefined : handle;
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
    return this.#handle === undefined && this.#partial === undefined;
  }

  /** @internal the temp file or partial data file (not for in-memory files) */
  get handle(): FileHandle {
    if (this.#handle === undefined) throw new TypeError(`${this.relPath} is assembled in memory`);
    return this.#handle;
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
    if (this.#handle !== undefined) {
      await this.#handle.close();
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
      throw new ClawpeerError('HASH_MISMATCH', `chunk ${list[0]} of ${this.relPath} has ${bytes.length} bytes, expected ${first.length}`);
    }
    const id = blake3(bytes);
    if (!bytesEqual(id, first.id)) {
      throw new ClawpeerError('HASH_MISMATCH', `chunk ${list[0]} of ${this.relPath} hashes to ${toHex(id)}, expected ${toHex(first.id)}`);
    }
    // A chunk of zeros in a file staged on disk is left as a hole (cp --sparse=auto, rsync -S):
    // a VM image or database file takes the space its data does, not its size.
    const zeros = (this.#partial !== undefined || this.#handle !== undefined) && isAllZeros(bytes);
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
      } else if (this.#handle === undefined) {
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
          let done = 0;
          while (done < bytes.length) {
            const { bytesWritten } = await this.#handle.write(bytes, done, bytes.length - done, chunk.offset + done);
            done += bytesWritten;
          }
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
    const handle = this.#handle;
    if (handle === undefined) return;
    this.#unsyncedBytes += bytes;
    if (this.#unsyncedBytes < this.#writebackEvery || this.#writeback !== undefined) return;
    this.#unsyncedBytes = 0;
    // A failed fsync is reported once and may clear the error: keep it, so the commit cannot
    // succeed on a later fsync after data was lost.
    this.#writeback = handle
      .datasync()
      .catch((err: unknown) => {
        this.#writebackError ??= err;
      })
      .finally(() => {
        this.#writeback = undefined;
      });
  }

  /** @internal A temp file with holes at its end is short until this sets its size (before its metadata: truncating sets the mtime). */
  async fillOutHoles(): Promise<void> {
    if (!this.#holes || this.#handle === undefined) return;
    try {
      await this.#handle.truncate(this.manifest.size);
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
    await this.#writeback; // never fails (its error is kept); the handle closes after it
    if (this.#partial !== undefined) {
      if (options.keepPartial ?? true) await this.#partial.close().catch(() => undefined);
      else await this.#partial.discard();
      return;
    }
    this.#memory = undefined;
    if (this.#handle === undefined && !this.#wroteOut) return; // nothing on disk yet
    await this.closeStaging().catch(() => undefined);
    await rm(this.stagingPath, { force: true });
  }

  /** @internal */
  markCommitted(): void {
    this.#state = 'committed';
  }
}

/** What is set on an identical file (rsync -i's t and p). */
export interface MetadataSet {
  readonly time: boolean;
  readonly perms: boolean;
}

type Existing = { kind: 'absent' } | { kind: 'identical'; mode: number; mtimeMs: number; atime: Date } | { kind: 'different'; what: string; mtimeMs: number };

/** Publishes files, symlinks and directory metadata into one share. */
export class Publisher {
  readonly shareRoot: string;
  readonly #options: PublisherOptions;
  readonly #policy: ExistingPolicy;
  // Directories (absolute) already checked to be real and confined, so a batch of 10,000 files in
  // one directory realpaths it once.
  readonly #checkedDirs = new Set<string>();
  // Directories whose entries changed since their last fsync.
  readonly #dirtyDirs = new Set<string>();
  readonly #open = new Set<StagedFile>();
  /** --backup's keeper (backups.ts), which --delete uses too; undefined without the option. */
  readonly backups: Backups | undefined;
  readonly #keeper: Keeper | undefined;

  private constructor(shareRoot: string, options: PublisherOptions) {
    this.shareRoot = shareRoot;
    this.#options = options;
    this.#policy = options.existing ?? (options.force === true ? 'replace' : 'refuse');
    this.#checkedDirs.add(shareRoot);
    const backup = options.backup;
    this.backups = backup === undefined ? undefined : new Backups(backup.plan, backup.destBase, { dirAt: (relDir) => this.#confinedDir(relDir, true), tempName: tempNameFor });
    this.#keeper = this.backups ?? options.keeper;
  }

  /** Before a file or symlink at `finalPath` is replaced: the backup, or the keeper's copy. */
  async #keepReplaced(relPath: string, finalPath: string): Promise<void> {
    await this.#keeper?.keep(relPath, finalPath, 'replaced');
  }

  /** Opens a publisher. SHARE_READ_ONLY for a read-only share; IO when the root is unusable. */
  static async open(options: PublisherOptions): Promise<Publisher> {
    if (options.readOnly === true) {
      throw new ClawpeerError('SHARE_READ_ONLY', `share ${options.shareRoot} is read-only: refusing to write into it`);
    }
    let root: string;
    try {
      // Synchronous, as the directory checks: two awaited calls took 2.7-3.7 ms before a push.
      root = realpathSync.native(options.shareRoot);
      if (!statSync(root).isDirectory()) throw new ClawpeerError('IO', `share root ${options.shareRoot} is not a directory`);
    } catch (err) {
      throw ioError('open share', options.shareRoot, err);
    }
    return new Publisher(root, options);
  }

  #checkAborted(): void {
    const signal = this.#options.signal;
    if (signal?.aborted === true) throw new ClawpeerError('ABORTED', 'publish aborted', { cause: signal.reason });
  }

  /** Normalises and refuses internal names. */
  #normalize(relPath: string): string {
    const rel = normalizeSharePath(relPath);
    if (isInternalPath(rel)) throw new ClawpeerError('PATH_INVALID', `path ${JSON.stringify(relPath)} refused: it names clawpeer's own state`);
    return rel;
  }

  /**
   * Makes sure the directory `relDir` ('' = share root) exists as a real directory inside the
   * share, creating missing levels when `create`, and returns its absolute path. Synchronous
   * metadata calls: a few us each, while an awaited one is a thread-pool round trip that on a
   * busy host took milliseconds, paid per new directory before the first chunk.
   */
  #confinedDir(relDir: string, create: boolean): string {
    const abs = this.#walkDir(relDir, create ? 'create' : 'require');
    if (abs === undefined) throw new TypeError(`${relDir}: a directory walk that creates or requires returned nothing`);
    return abs;
  }

  /**
   * The walk of #confinedDir. `probe` creates nothing: it returns undefined at the first missing
   * level (all below it would be new), and refuses what is in the way as `create` would.
   */
  #walkDir(relDir: string, mode: 'create' | 'require' | 'probe'): string | undefined {
    const create = mode === 'create';
    let abs = this.shareRoot;
    if (relDir === '') return abs;
    let fresh = false;
    for (const segment of relDir.split('/')) {
      const parentAbs = abs;
      abs = path.join(abs, segment);
      if (this.#checkedDirs.has(abs)) continue;
      fresh = true;
      let st: Stats | undefined;
      try {
        st = lstatSync(abs, { throwIfNoEntry: false });
      } catch (err) {
        throw ioError('inspect', abs, err);
      }
      if (st === undefined) {
        if (mode === 'probe') return undefined;
        if (!create) throw new ClawpeerError('IO', `directory ${abs} does not exist`);
        try {
          mkdirSync(abs);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw ioError('create directory', abs, err);
          // Lost a race with another writer: start over and inspect what is there now.
          return this.#walkDir(relDir, mode);
        }
        this.#dirtyDirs.add(parentAbs);
        this.#checkedDirs.add(abs);
        continue;
      }
      if (st.isSymbolicLink()) {
        let real: string;
        try {
          real = realpathSync.native(abs);
        } catch (err) {
          throw new ClawpeerError('PATH_INVALID', `${relDir} refused: ${abs} is a symlink that does not resolve`, { cause: err });
        }
        if (!isConfinedRealpath(this.shareRoot, real)) {
          throw new ClawpeerError('PATH_INVALID', `${relDir} refused: ${abs} is a symlink to ${real}, outside the share`);
        }
        if (!statSync(real).isDirectory()) {
          throw new ClawpeerError('FILE_EXISTS', `${abs} is a symlink to a non-directory where a directory should be`);
        }
      } else if (!st.isDirectory()) {
        throw new ClawpeerError('FILE_EXISTS', `${abs} is a file where a directory should be (not replaced, even with --force)`);
      }
      this.#checkedDirs.add(abs);
    }
    if (fresh) {
      // Belt and braces, once per new directory: however we got here, it resolves inside the share.
      let real: string;
      try {
        real = realpathSync.native(abs);
      } catch (err) {
        throw ioError('resolve', abs, err);
      }
      if (!isConfinedRealpath(this.shareRoot, real)) {
        throw new ClawpeerError('PATH_INVALID', `${relDir} refused: it resolves to ${real}, outside the share`);
      }
    }
    return abs;
  }

  /**
   * Checks, creating nothing, that directory `relPath` could be made (dry runs): throws what
   * makeDir would; true when it exists already.
   */
  probeDir(relPath: string): boolean {
    this.#checkAborted();
    return this.#walkDir(this.#normalize(relPath), 'probe') !== undefined;
  }

  /** Creates directory `relPath` (and missing parents) inside the share. */
  async makeDir(relPath: string): Promise<void> {
    this.#checkAborted();
    this.#confinedDir(this.#normalize(relPath), true);
  }

  async #rootOf(rel: string, abs: string): Promise<Uint8Array> {
    const st = await lstat(abs, { bigint: true });
    const known = this.#options.knownRoot?.(rel, st);
    if (known !== undefined) return known;
    const manifest = await manifestFromFile(abs, this.#options.chunking, this.#options.signal === undefined ? {} : { signal: this.#options.signal });
    return manifest.root;
  }

  async #existing(rel: string, abs: string, manifest: FileManifest): Promise<Existing> {
    let st: Stats | undefined;
    try {
      st = lstatSync(abs, { throwIfNoEntry: false }); // synchronous: one per staged file
    } catch (err) {
      throw ioError('inspect', abs, err);
    }
    if (st === undefined) return { kind: 'absent' };
    if (st.isDirectory()) {
      throw new ClawpeerError('FILE_EXISTS', `${abs} is a directory where a file should be (not replaced, even with --force)`);
    }
    const { mtimeMs } = st;
    if (!st.isFile()) return { kind: 'different', what: st.isSymbolicLink() ? 'a symlink' : 'a special file', mtimeMs };
    if (st.size !== manifest.size) return { kind: 'different', what: `a different file (${st.size} bytes, incoming ${manifest.size})`, mtimeMs };
    const root = await this.#rootOf(rel, abs);
    return bytesEqual(root, manifest.root) ? { kind: 'identical', mode: st.mode & PUBLISH_MODE_MASK, mtimeMs, atime: st.atime } : { kind: 'different', what: 'a file with different content', mtimeMs };
  }

  /**
   * The policy's answer for something different at `abs` (modified at `existingMtimeMs`) where
   * an entry modified at `incomingMtimeMs` should go: replace it or keep it; 'refuse' throws.
   * 'update' keeps only what is newer, by whole milliseconds (timestamps travel in ms).
   */
  #replaceOrKeep(abs: string, what: string, existingMtimeMs: number, incomingMtimeMs: number): 'replace' | 'keep' {
    switch (this.#policy) {
      case 'refuse':
        return this.#refuseExisting(abs, what);
      case 'replace':
        return 'replace';
      case 'keep':
        return 'keep';
      case 'update':
        return newerHere(existingMtimeMs, incomingMtimeMs) ? 'keep' : 'replace';
    }
  }

  /** What to do about what is at `abs` for a file modified at `incomingMtimeMs`: the policy's answer for a different one. */
  #outcome(existing: Existing, abs: string, incomingMtimeMs: number): 'new' | 'identical' | 'kept' | 'replace' {
    if (existing.kind === 'absent') return 'new';
    if (existing.kind === 'identical') return 'identical';
    return this.#replaceOrKeep(abs, existing.what, existing.mtimeMs, incomingMtimeMs) === 'keep' ? 'kept' : 'replace';
  }

  /**
   * What stageFile would do with `file`, creating nothing: 'new', 'identical' (no content to
   * write; `metadata`: the mtime or permissions it would set), 'replace' or 'kept' (the
   * existing-file policy); throws what stageFile would (FILE_EXISTS, PATH_INVALID, PROTOCOL).
   * For dry runs.
   */
  async verdict(file: PublishFile): Promise<{ outcome: 'new' | 'identical' | 'replace' | 'kept'; metadata?: MetadataSet }> {
    const { rel, relDir } = this.#checkedFile(file);
    const dirAbs = this.#walkDir(relDir, 'probe');
    if (dirAbs === undefined) return { outcome: 'new' };
    const finalPath = path.join(dirAbs, path.posix.basename(rel));
    const existing = await this.#existing(rel, finalPath, file.manifest);
    const metadata = existing.kind === 'identical' ? this.#metadataToSet(existing, file) : undefined;
    return { outcome: this.#outcome(existing, finalPath, file.mtimeMs), ...(metadata === undefined ? {} : { metadata }) };
  }

  /**
   * An identical file whose mode or mtime differs from the incoming entry's gets them, as rsync -a
   * updates the permissions and times of a file it does not copy. The policies that keep existing
   * files say otherwise: --ignore-existing touches nothing, --update nothing newer here. What
   * would be set; nothing is (dry runs ask this, stageFile then sets it).
   */
  #metadataToSet(existing: Extract<Existing, { kind: 'identical' }>, file: PublishFile): MetadataSet | undefined {
    if (this.#policy === 'keep') return undefined;
    if (this.#policy === 'update' && newerHere(existing.mtimeMs, file.mtimeMs)) return undefined;
    const perms = existing.mode !== (file.mode & PUBLISH_MODE_MASK);
    // Within a millisecond is the same time: mtimes travel in whole ms, and one set from a
    // double number of seconds (futimes) can land a nanosecond below the ms it was given.
    const time = Math.abs(existing.mtimeMs - file.mtimeMs) >= 1;
    return perms || time ? { time, perms } : undefined;
  }

  /** Sets what #metadataToSet says on an identical file; what was set. */
  #refreshMetadata(abs: string, existing: Extract<Existing, { kind: 'identical' }>, file: PublishFile): MetadataSet | undefined {
    const plan = this.#metadataToSet(existing, file);
    if (plan === undefined) return undefined;
    // Through a descriptor opened without following links: the path was a regular file when it
    // was hashed, and a link put there since must not lead the change out of the share.
    let fd: number | undefined;
    for (const access of [fsConstants.O_RDONLY, fsConstants.O_WRONLY]) {
      try {
        fd = openSync(abs, access | fsConstants.O_NOFOLLOW);
        break;
      } catch {
        // Not readable (mode 0o200): try writable; a file we can do neither with keeps its metadata.
      }
    }
    if (fd === undefined) return undefined;
    try {
      if (!fstatSync(fd).isFile()) return undefined;
      if (plan.perms) fchmodSync(fd, file.mode & PUBLISH_MODE_MASK);
      if (plan.time) futimesSync(fd, existing.atime, toSeconds(file.mtimeMs));
      return plan;
    } catch (err) {
      throw ioError('set metadata of', abs, err);
    } finally {
      closeSync(fd);
    }
  }

  /** What stageFile and verdict check first: not aborted, a path inside the share, a sane manifest. */
  #checkedFile(file: PublishFile): { rel: string; relDir: string } {
    this.#checkAborted();
    const rel = this.#normalize(file.relPath);
    verifyManifest(file.manifest, {
      maxChunkBytes: this.#options.maxChunkBytes ?? this.#options.chunking.maxBytes,
      maxChunkCount: this.#options.maxChunkCount ?? Number.MAX_SAFE_INTEGER,
    });
    return { rel, relDir: path.posix.dirname(rel) === '.' ? '' : path.posix.dirname(rel) };
  }

  #refuseExisting(abs: string, what: string): never {
    throw new ClawpeerError('FILE_EXISTS', `${abs} exists and is ${what}: not replaced (use --force, --update or --ignore-existing)`);
  }

  /**
   * Starts assembling a file. Returns 'identical' when the destination already holds identical
   * content (same size and root), 'kept' when the existing-file policy keeps a different one:
   * nothing to do. Throws FILE_EXISTS for a different existing file the policy refuses or a
   * directory in the way, PATH_INVALID for a path outside the share, PROTOCOL / HASH_MISMATCH
   * for a malformed manifest. `resumable` stages in the partial store (when the publisher has
   * one), so received chunks survive a crash.
   */
  async stageFile(file: PublishFile, options: { resumable?: boolean } = {}): Promise<StagedFile | 'identical' | 'kept'> {
    const { rel, relDir } = this.#checkedFile(file);
    const dirAbs = this.#confinedDir(relDir, true);
    const finalPath = path.join(dirAbs, path.posix.basename(rel));
    const existing = await this.#existing(rel, finalPath, file.manifest);
    const outcome = this.#outcome(existing, finalPath, file.mtimeMs);
    if (existing.kind === 'identical') {
      const set = this.#refreshMetadata(finalPath, existing, file);
      if (set !== undefined) this.#options.onMetadataSet?.(rel, set);
    }
    if (outcome === 'identical' || outcome === 'kept') return outcome;

    const normalized = { ...file, relPath: rel };
    const partials = this.#options.partials;
    let staged: StagedFile;
    if (options.resumable === true && partials !== undefined) {
      const partial = await partials.openPartial(
        { relPath: rel, root: file.manifest.root, size: file.manifest.size },
        this.#options.signal === undefined ? {} : { signal: this.#options.signal },
      );
      staged = new StagedFile(normalized, finalPath, partial.dataPath, partial.dataHandle, partial, this.#options.earlyWritebackBytes);
    } else if (file.manifest.size <= IN_MEMORY_MAX_BYTES) {
      staged = new StagedFile(normalized, finalPath, path.join(dirAbs, tempNameFor(path.posix.basename(rel))), 'memory', undefined);
    } else {
      const stagingPath = path.join(dirAbs, tempNameFor(path.posix.basename(rel)));
      let handle: FileHandle;
      try {
        // 'wx': O_EXCL, so the temp name never follows or reuses an existing entry.
        handle = await open(stagingPath, 'wx', 0o600);
      } catch (err) {
        throw ioError('create a temp file for', finalPath, err);
      }
      try {
        await handle.truncate(file.manifest.size);
      } catch (err) {
        await handle.close().catch(() => undefined);
        await rm(stagingPath, { force: true });
        throw ioError('allocate', finalPath, err);
      }
      staged = new StagedFile(normalized, finalPath, stagingPath, handle, undefined, this.#options.earlyWritebackBytes);
    }
    staged.replaces = outcome === 'replace';
    this.#open.add(staged);
    return staged;
  }

  /**
   * Publishes complete staged files as one batch: mode and mtime set on each open file, all
   * fsync'd (COMMIT_FSYNC_CONCURRENCY at a time), then each moved to its final path, then one
   * fsync per directory touched. Without force, a file that appeared at a final path since
   * staging is still not replaced (hard link = atomic no-clobber); if it is identical, the
   * staged copy is dropped. On error the failing file's staging is discarded (a partial is
   * kept) and the first error is thrown after the rest of the batch is published.
   */
  async commit(files: readonly StagedFile[]): Promise<void> {
    this.#checkAborted();
    for (const f of files) {
      if (f.state !== 'open') throw new TypeError(`${f.relPath} is already ${f.state}`);
      if (!f.complete) throw new TypeError(`${f.relPath} is not complete: ${f.missingChunks().length} chunks missing`);
    }
    const failed = new Map<StagedFile, unknown>();
    const atime = new Date();
    let sliceStart = performance.now();
    for (const f of files) {
      if (!f.inMemory) continue;
      try {
        f.writeOut(atime);
      } catch (err) {
        failed.set(f, err);
      }
      if (performance.now() - sliceStart >= WRITE_OUT_SLICE_MS) {
        await new Promise((resolve) => setImmediate(resolve));
        sliceStart = performance.now();
      }
    }
    await forEachBounded(files, COMMIT_FSYNC_CONCURRENCY, async (f) => {
      if (failed.has(f)) return;
      try {
        if (f.inMemory) {
          await f.syncStaging();
        } else {
          await f.settleWriteback();
          await f.fillOutHoles();
          await f.handle.chmod(f.mode);
          await f.handle.utimes(atime, toSeconds(f.mtimeMs));
          await f.handle.sync();
        }
      } catch (err) {
        failed.set(f, ioError('sync', f.finalPath, err));
      }
    }).catch(() => undefined);

    for (const f of files) {
      if (failed.has(f)) continue;
      try {
        await this.#moveIntoPlace(f);
      } catch (err) {
        failed.set(f, err);
      }
    }
    for (const [f] of failed) await f.discard();
    for (const f of files) this.#open.delete(f);
    await this.flushDirs();
    for (const f of files) {
      if (failed.has(f)) continue;
      await f.partial?.finishPromotion();
    }
    const first = failed.values().next();
    if (first.done !== true) throw first.value;
  }

  async #moveIntoPlace(f: StagedFile): Promise<void> {
    let source = f.stagingPath;
    const finalDir = path.dirname(f.finalPath);
    // Closing before the rename: metadata and data are synced, and Windows cannot rename open files.
    await f.closeStaging();
    const dropSource = async (): Promise<void> => {
      if (f.partial !== undefined) await f.partial.discard();
      else await rm(source, { force: true });
    };

    // The directory operations are synchronous: they are metadata calls of a few µs, and a batch
    // places its files one after the other, so awaited calls cost a thread-pool round trip each.
    // What is at the final path now (it may have appeared since staging): the policy decides again.
    const settle = async (): Promise<'replace' | 'done'> => {
      const outcome = this.#outcome(await this.#existing(f.relPath, f.finalPath, f.manifest), f.finalPath, f.mtimeMs);
      if (outcome !== 'identical' && outcome !== 'kept') return 'replace';
      await dropSource();
      return 'done';
    };
    const place = async (): Promise<void> => {
      if (this.#policy === 'replace') {
        await this.#keepReplaced(f.relPath, f.finalPath);
        renameSync(source, f.finalPath);
        return;
      }
      try {
        linkSync(source, f.finalPath); // fails with EEXIST instead of replacing: atomic no-clobber
        unlinkSync(source);
        return;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EXDEV') throw err;
        // EEXIST: something is there. Otherwise no hard links here (FAT, some network file
        // systems): check, then rename.
        if ((await settle()) === 'replace') {
          await this.#keepReplaced(f.relPath, f.finalPath);
          await rename(source, f.finalPath);
        }
      }
    };

    try {
      try {
        await place();
      } catch (err) {
        // A partial on another file system than its destination (a mount inside the share):
        // copy it next to the destination, sync, and place the copy.
        if ((err as NodeJS.ErrnoException).code !== 'EXDEV' || f.partial === undefined) throw err;
        const copy = path.join(finalDir, tempNameFor(path.basename(f.finalPath)));
        await copyFile(f.partial.dataPath, copy, fsConstants.COPYFILE_EXCL);
        const h = await open(copy, 'r+');
        try {
          await h.chmod(f.mode);
          await h.utimes(new Date(), toSeconds(f.mtimeMs));
          await h.sync();
        } finally {
          await h.close();
        }
        source = copy;
        try {
          await place();
        } finally {
          await rm(copy, { force: true });
        }
      }
    } catch (err) {
      throw ioError('publish', f.finalPath, err);
    }
    if (f.partial !== undefined) this.#dirtyDirs.add(path.dirname(f.partial.dataPath));
    this.#dirtyDirs.add(finalDir);
    f.markCommitted();
  }

  /**
   * Creates symlink `relPath` -> `target`. Refuses with PATH_INVALID when the target could
   * resolve outside the share (absolute, too many `..`, or `..` after a name). An existing link
   * with the same target is left alone ('identical'); anything else there is FILE_EXISTS unless
   * the existing-file policy replaces it ('replaced'), or keeps it ('kept'); a directory: always
   * FILE_EXISTS.
   */
  async makeSymlink(relPath: string, target: string, mtimeMs?: number): Promise<'created' | 'replaced' | 'identical' | 'kept'> {
    this.#checkAborted();
    const rel = this.#normalize(relPath);
    const relDir = path.posix.dirname(rel) === '.' ? '' : path.posix.dirname(rel);
    const dirAbs = this.#confinedDir(relDir, true);
    const finalPath = path.join(dirAbs, path.posix.basename(rel));
    const verdict = await this.#symlinkVerdict(rel, dirAbs, target, mtimeMs);
    if (verdict === 'identical' || verdict === 'kept') return verdict;
    const tmp = path.join(dirAbs, tempNameFor(path.posix.basename(rel)));
    try {
      await symlink(target, tmp);
      if (mtimeMs !== undefined) await lutimes(tmp, new Date(), toSeconds(mtimeMs));
      if (this.#policy === 'refuse') {
        // Hard-linking a symlink is not portable (macOS follows it): check-then-rename here.
        const again = await lstat(finalPath).then(() => true, () => false);
        if (again) this.#refuseExisting(finalPath, 'in the way');
      }
      if (verdict === 'replace') await this.#keepReplaced(rel, finalPath);
      await rename(tmp, finalPath);
    } catch (err) {
      await rm(tmp, { force: true });
      throw ioError('create symlink', finalPath, err);
    }
    this.#dirtyDirs.add(dirAbs);
    return verdict === 'replace' ? 'replaced' : 'created';
  }

  /**
   * What makeSymlink would do, creating nothing (dry runs): 'new', 'identical', 'replace' or
   * 'kept'; throws what it would (PATH_INVALID, FILE_EXISTS).
   */
  async symlinkVerdict(relPath: string, target: string, mtimeMs?: number): Promise<'new' | 'identical' | 'replace' | 'kept'> {
    this.#checkAborted();
    const rel = this.#normalize(relPath);
    const relDir = path.posix.dirname(rel) === '.' ? '' : path.posix.dirname(rel);
    const dirAbs = this.#walkDir(relDir, 'probe');
    if (dirAbs === undefined) {
      // The directory would be made: the link's depth is its path's.
      if (!symlinkTargetIsConfined(relDir === '' ? 0 : relDir.split('/').length, target)) throw symlinkEscapes(rel, target);
      return 'new';
    }
    return this.#symlinkVerdict(rel, dirAbs, target, mtimeMs);
  }

  /** The checks of makeSymlink in an existing directory `dirAbs`: the target stays in the share, and what is at the path now. */
  async #symlinkVerdict(rel: string, dirAbs: string, target: string, mtimeMs: number | undefined): Promise<'new' | 'identical' | 'replace' | 'kept'> {
    const dirReal = await realpath(dirAbs);
    const depth = path.relative(this.shareRoot, dirReal).split(path.sep).filter((s) => s !== '').length;
    if (!symlinkTargetIsConfined(depth, target)) throw symlinkEscapes(rel, target);
    const finalPath = path.join(dirAbs, path.posix.basename(rel));
    let st: Stats | undefined;
    try {
      st = await lstat(finalPath);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw ioError('inspect', finalPath, err);
    }
    if (st === undefined) return 'new';
    if (st.isSymbolicLink() && (await readlink(finalPath)) === target) return 'identical';
    if (st.isDirectory()) throw new ClawpeerError('FILE_EXISTS', `${finalPath} is a directory where a symlink should be (not replaced, even with --force)`);
    return this.#replaceOrKeep(finalPath, st.isSymbolicLink() ? 'a symlink with another target' : 'a file', st.mtimeMs, mtimeMs ?? Date.now()) === 'keep' ? 'kept' : 'replace';
  }

  /**
   * Sets mode and mtime of directories after their contents are in place (a directory's mtime
   * changes with every entry added, and a read-only mode would block adding them), deepest
   * first, then fsyncs each.
   */
  async setDirMetadata(dirs: readonly PublishDir[]): Promise<void> {
    this.#checkAborted();
    const resolved: { abs: string; depth: number; dir: PublishDir }[] = [];
    for (const dir of dirs) {
      const rel = this.#normalize(dir.relPath);
      resolved.push({ abs: this.#confinedDir(rel, false), depth: rel.split('/').length, dir });
    }
    resolved.sort((a, b) => b.depth - a.depth);
    for (const { abs, dir } of resolved) {
      try {
        await chmod(abs, dir.mode & PUBLISH_MODE_MASK);
        await utimes(abs, new Date(), toSeconds(dir.mtimeMs));
      } catch (err) {
        throw ioError('set metadata of', abs, err);
      }
      this.#dirtyDirs.add(abs);
    }
    await this.flushDirs();
  }

  /** fsyncs every directory whose entries changed since the last flush, once each. */
  async flushDirs(): Promise<void> {
    const dirs = [...this.#dirtyDirs];
    this.#dirtyDirs.clear();
    await forEachBounded(dirs, COMMIT_FSYNC_CONCURRENCY, syncDir);
  }

  /** Discards every staged file not yet committed (temp files deleted, partials kept). */
  async abort(): Promise<void> {
    const open = [...this.#open];
    this.#open.clear();
    for (const f of open) await f.discard();
  }
}

/** Temp files untouched for this long are leftovers of a killed process: 1 hour. */
export const STALE_TEMP_AGE_MS = 3600 * 1000;

export interface StaleTempOptions {
  readonly nowMs: number;
  /** Only files whose status changed at least this long ago (default STALE_TEMP_AGE_MS). */
  readonly minAgeMs?: number;
  readonly signal?: AbortSignal;
}

/**
 * Deletes the `.clawpeer-tmp-*` files anywhere in the share that no live transfer can own (a
 * process killed mid-publish leaves them; resumable transfers keep their bytes in the partial
 * store instead): those whose name carries the pid of a process no longer running on this host,
 * and any whose status changed more than `minAgeMs` before `nowMs`. ctime, not mtime, measures
 * the age: the publisher sets a temp file's mtime to the sender's (possibly years old) just
 * before renaming it, while ctime moves with every write and cannot be set back.
 * Residual risk, accepted: a writer on another host or in another pid namespace sharing the
 * directory (a network file system, a volume shared by containers) looks dead; its transfer then
 * fails at commit and a rerun completes (nothing wrong is ever published). A dead writer's pid
 * reused by a live process only delays the cleanup to the age rule. Returns how many were removed.
 */
export async function removeStaleTempFiles(shareRoot: string, options: StaleTempOptions): Promise<number> {
  let removed = 0;
  const scan = scanTree(shareRoot, { rootName: null, onIssue: () => undefined, ...(options.signal === undefined ? {} : { signal: options.signal }) });
  for await (const entry of scan) {
    if (entry.kind === 'dir' || !isTempFileName(path.posix.basename(entry.relPath))) continue;
    if (removeTempFileIfStale(path.join(shareRoot, ...entry.relPath.split('/')), options)) removed++;
  }
  return removed;
}

/**
 * Sweeps stale temp files where a transfer into `root` that lands at `relPath` stages its files:
 * the directory that holds `relPath` (its own entries only, not the subtrees of its other
 * entries) and, when `relPath` is a directory, everything under it. `relPath` '' sweeps all of
 * `root`. A missing `root` or `relPath` is nothing to sweep. Returns how many were removed.
 */
export async function removeStaleTempFilesAt(root: string, relPath: string, options: StaleTempOptions): Promise<number> {
  const rel = relPath === '' ? '' : normalizeSharePath(relPath);
  const isDir = async (p: string): Promise<boolean> => (await lstat(p).catch(() => undefined))?.isDirectory() === true;
  if (rel === '') return (await isDir(root)) ? removeStaleTempFiles(root, options) : 0;
  const segments = rel.split('/');
  const parent = path.join(root, ...segments.slice(0, -1));
  let removed = 0;
  for (const name of await readdir(parent).catch(() => [] as string[])) {
    if (isTempFileName(name) && removeTempFileIfStale(path.join(parent, name), options)) removed++;
  }
  const target = path.join(root, ...segments);
  if (await isDir(target)) removed += await removeStaleTempFiles(target, options);
  return removed;
}

/** The writer's pid in a temp file name (tempNameFor), or undefined for names without one. */
export function tempFileOwnerPid(name: string): number | undefined {
  const m = TEMP_OWNER_PID.exec(name);
  const pid = m?.[1] === undefined ? Number.NaN : Number(m[1]);
  return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
}

const TEMP_OWNER_PID = new RegExp(`^${TEMP_FILE_PREFIX.replace(/[.]/g, '\\.')}p(\\d{1,10})-[0-9a-f]{${TEMP_RANDOM_BYTES * 2}}-`);

/**
 * Unlinks `abs` (a temp file or link, never a directory) if its writer is gone or it is old
 * enough; true when removed. Synchronous: the sync scanner calls it mid-walk.
 */
export function removeTempFileIfStale(abs: string, options: StaleTempOptions): boolean {
  try {
    const st = lstatSync(abs);
    if (st.isDirectory()) return false;
    const owner = tempFileOwnerPid(path.basename(abs));
    const ownerGone = owner !== undefined && !processAlive(owner);
    if (!ownerGone && options.nowMs - st.ctimeMs < (options.minAgeMs ?? STALE_TEMP_AGE_MS)) return false;
    unlinkSync(abs);
    return true;
  } catch {
    return false; // gone already, or not ours to delete
  }
}
