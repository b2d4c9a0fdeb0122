// A file written over time whose descriptor is open only while it is used: staged files over
// 1 MiB (store/staged-file.ts temp files, store/partial-store.ts data files and journals).
//
// Why: a transfer stages every file before a chunk travels, and each such file held its
// descriptor(s) until published, so a sync of N large files needed N-2N descriptors at once:
// 25,000 photos failed with EMFILE at a hard limit of 20,000, every retry. Now a process-wide
// pool keeps at most stagingHandleCap() of them open; the least recently used idle one is closed
// when another needs opening, and reopened (by path, without O_CREAT or O_EXCL, not following a
// symlink, checked to be the same file) when next used. A handle is never closed while an
// operation on it runs (`use` pins it). Writes in the page cache survive a close: an fsync on
// the reopened descriptor writes them, and reports a writeback error no descriptor saw.
// In the common case (fewer files than the cap) nothing is ever closed early or reopened.
import { constants, fstatSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { shareOfOpenFileLimit } from './open-file-limit.js';

/**
 * Open staged files' descriptors, at most: an eighth of the open-file limit, 4 to 1,024. A
 * quarter goes to the commit batches (exchange/commit-queue.ts), the rest to the process's own
 * (~25: sockets, LMDB, stdio) and what a transfer opens briefly: at `ulimit -n 64` a quarter here
 * too ran out (a partial's data file, EMFILE, 3 runs in 4 under load).
 */
export const stagingHandleCap = (): number => shareOfOpenFileLimit({ divideBy: 8, min: 4, max: 1024 });

/** Reopen flags: read/write, or append-only (a journal). Never creates; never follows a symlink. */
const NOFOLLOW = constants.O_NOFOLLOW ?? 0;
export const REOPEN_READ_WRITE = constants.O_RDWR | NOFOLLOW;
export const REOPEN_APPEND = constants.O_WRONLY | constants.O_APPEND | NOFOLLOW;

/** The open ReopenableFiles, least recently used first. */
export class HandlePool {
  readonly #open = new Set<ReopenableFile>();
  readonly #defaultCap: () => number;
  #cap: () => number;
  #capValue = 0;
  #capReadMs = -Infinity;

  /** `cap`: re-read at most once a second (a listener's limit can be lowered while it runs). */
  constructor(cap: () => number = stagingHandleCap) {
    this.#defaultCap = cap;
    this.#cap = cap;
  }

  /** @internal tests: a fixed cap; undefined restores the default. */
  setCap(cap: number | undefined): void {
    this.#cap = cap === undefined ? this.#defaultCap : () => cap;
    this.#capReadMs = -Infinity;
  }

  /** Descriptors open now (tests). */
  get openCount(): number {
    return this.#open.size;
  }

  get cap(): number {
    const now = Date.now();
    if (now - this.#capReadMs >= 1000) {
      this.#capValue = this.#cap();
      this.#capReadMs = now;
    }
    return this.#capValue;
  }

  /** Closes idle files until `n` more can open within the cap (before opening files to take over). */
  makeRoom(n: number): Promise<void> {
    return this.openCount + n > this.cap ? this.trim(this.cap - n) : Promise.resolve();
  }

  /** @internal marks `file` open and most recently used. */
  touch(file: ReopenableFile): void {
    this.#open.delete(file);
    this.#open.add(file);
  }

  /** @internal */
  forget(file: ReopenableFile): void {
    this.#open.delete(file);
  }

  /** @internal Closes idle files, least recently used first, until at most `keep` are open; awaits the closes. */
  async trim(keep: number): Promise<void> {
    const closing: Promise<void>[] = [];
    let over = this.#open.size - keep;
    for (const f of this.#open) {
      if (over <= 0) break;
      const done = f.evict();
      if (done === undefined) continue; // in use
      closing.push(done);
      over--;
    }
    await Promise.all(closing);
  }
}

/** The pool of staged files' descriptors (one per process: the limit is the process's). */
export const stagingHandles = new HandlePool();

export class ReopenableFile {
  readonly path: string;
  readonly #flags: number;
  readonly #pool: HandlePool;
  /** The file's identity when created: a reopen must find the same file at the path. */
  readonly #dev: number;
  readonly #ino: number;
  #handle: FileHandle | undefined;
  #opening: Promise<FileHandle> | undefined;
  #closing: Promise<void> | undefined;
  /** An early close failed (it may report a lost write): the next use throws it. */
  #closeError: Error | undefined;
  #pins = 0;
  #disposed = false;

  /** Takes over `handle`, open on `path`; `reopenFlags` say how to open it again. */
  constructor(path: string, handle: FileHandle, reopenFlags: number, pool: HandlePool = stagingHandles) {
    this.path = path;
    this.#flags = reopenFlags;
    this.#pool = pool;
    const st = fstatSync(handle.fd);
    this.#dev = st.dev;
    this.#ino = st.ino;
    this.#handle = handle;
    pool.touch(this);
    if (pool.openCount > pool.cap) void pool.trim(pool.cap);
  }

  /** True while a descriptor is open (tests). */
  get isOpen(): boolean {
    return this.#handle !== undefined;
  }

  /** Runs `fn` with an open handle (reopening the file if it was closed); it stays open meanwhile. */
  async use<T>(fn: (handle: FileHandle) => Promise<T>): Promise<T> {
    if (this.#disposed) throw new TypeError(`${this.path} is closed`);
    this.#pins++;
    try {
      const handle = this.#handle ?? (await (this.#opening ??= this.#reopen()));
      this.#pool.touch(this);
      return await fn(handle);
    } finally {
      this.#pins--;
    }
  }

  async #reopen(): Promise<FileHandle> {
    try {
      await this.#closing;
      if (this.#closeError !== undefined) throw this.#closeError;
      await this.#pool.trim(this.#pool.cap - 1);
      const handle = await open(this.path, this.#flags);
      const st = fstatSync(handle.fd);
      if (st.dev !== this.#dev || st.ino !== this.#ino) {
        await handle.close();
        throw Object.assign(new Error(`${this.path} was replaced by another file while it was staged`), {
          code: 'ESTALE',
        });
      }
      this.#handle = handle;
      this.#pool.touch(this);
      return handle;
    } finally {
      this.#opening = undefined;
    }
  }

  /**
   * @internal (the pool) Closes the descriptor if it is idle; undefined when it is in use or
   * opening. The file can be used again (reopened).
   */
  evict(): Promise<void> | undefined {
    const handle = this.#handle;
    if (handle === undefined || this.#pins > 0 || this.#opening !== undefined) return undefined;
    this.#handle = undefined;
    this.#pool.forget(this);
    this.#closing = handle.close().catch((err: unknown) => {
      this.#closeError ??= err instanceof Error ? err : new Error(String(err));
    });
    return this.#closing;
  }

  /** Closes the descriptor for good (after an operation in flight ends); `use` refuses afterwards. */
  async dispose(): Promise<void> {
    if (this.#disposed) return;
    this.#disposed = true;
    await this.#opening?.catch(() => undefined);
    const handle = this.#handle;
    this.#handle = undefined;
    this.#pool.forget(this);
    await this.#closing;
    await handle?.close();
  }
}
