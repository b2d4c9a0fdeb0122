// Resumable partial files: received, verified chunks survive a SIGKILL of the receiver.
//
// Goals: while a file is in flight its bytes live in a data file under the share's hidden
// `.clawpeer/partial/` directory, next to an append-only journal of the chunks (offset, length,
// BLAKE3 id) written into it; a later attempt for the same (path, content root) reopens both and
// asks only for chunks the journal does not list. A partial is never at a final path: it reaches
// one only through the publisher's atomic rename (promote). Stale partials (too old, or for a
// root the sender no longer offers) are discarded.
// Non-goals: deciding which chunks to request (transfer/), publishing (publisher.ts), holding
// chunk bytes in memory.
//
// Durability: a journal record is appended (one write, no fsync) right after its chunk's bytes
// are written, so a SIGKILL (page cache survives) loses nothing; `flush()` fsyncs the data file,
// then the journal, at batch boundaries, against power loss. A torn or reordered tail after a
// power loss is harmless twice over: each record carries a check value, so parsing stops at the
// first bad record, and a resumed partial re-reads and re-hashes every journaled chunk before
// trusting it (on by default), so a record whose data never reached the disk is dropped.
//
// Descriptors: data file and journal are open only while used (support/reopenable-file.ts: a
// bounded pool closes idle ones and reopens them on demand), so 25,000 partials need no 50,000.
//
// Journal format (all integers big-endian):
//   header: "CLAWPART" | u32 version=1 | u64 size | 32 root | u16 pathBytes | path (UTF-8) | u32 check
//   record: u64 offset | u32 length | 32 id | u32 check                       (48 bytes each)
//   check = first 4 bytes of BLAKE3 over the preceding bytes of that header/record.

import { closeSync, existsSync, fsync, mkdirSync, openSync, readdirSync, realpathSync } from 'node:fs';
import { promisify } from 'node:util';
import { open, rm, stat, truncate, unlink } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { ClawpeerError } from '../errors.js';
import { readBounded } from '../support/read-bounded.js';
import { BLAKE3_OUT_BYTES, blake3, bytesEqual, toHex } from '../chunking/blake3.js';
import { isConfinedRealpath } from '../transfer/paths.js';
import { REOPEN_APPEND, REOPEN_READ_WRITE, ReopenableFile, stagingHandles } from '../support/reopenable-file.js';
import { INTERNAL_DIR_NAME } from './internal-names.js';

/** Partials untouched for this long are stale: 7 days. */
export const DEFAULT_PARTIAL_MAX_AGE_MS = 7 * 24 * 3600 * 1000;

const JOURNAL_MAGIC = Buffer.from('CLAWPART', 'latin1');
const JOURNAL_VERSION = 1;
const CHECK_BYTES = 4;
/** Bytes of one journal record: u64 offset + u32 length + 32-byte id + u32 check. */
export const JOURNAL_RECORD_BYTES = 8 + 4 + BLAKE3_OUT_BYTES + CHECK_BYTES;
// A header is at most magic + version + size + root + pathLen + 4096-byte path + check.
const MAX_HEADER_BYTES = 8 + 4 + 8 + BLAKE3_OUT_BYTES + 2 + 4096 + CHECK_BYTES;
const DATA_SUFFIX = '.data';
const JOURNAL_SUFFIX = '.journal';
/** fsync on the thread pool: it waits on the disk. */
const fsyncAsync = promisify(fsync);

/** A chunk the journal says is in the data file. */
export interface PartialChunk {
  readonly offset: number;
  readonly length: number;
  readonly id: Uint8Array;
}

/** What a resumed or new partial is for. */
export interface PartialTarget {
  /** Normalised relative path of the final file. */
  readonly relPath: string;
  /** Manifest root of the content being assembled. */
  readonly root: Uint8Array;
  readonly size: number;
}

export interface PartialInfo extends PartialTarget {
  readonly dataPath: string;
  readonly journalPath: string;
  readonly chunks: readonly PartialChunk[];
  /** Last modification of the journal, ms since the epoch. */
  readonly touchedMs: number;
}

function checkOf(bytes: Uint8Array): Uint8Array {
  return blake3(bytes).subarray(0, CHECK_BYTES);
}

function ioError(what: string, file: string, err: unknown): ClawpeerError {
  const e = err as NodeJS.ErrnoException;
  if (e.code === 'ENOSPC') {
    return new ClawpeerError('IO', `cannot ${what} ${file}: the disk is full`, { cause: err });
  }
  const detail = err instanceof Error ? err.message : String(err);
  return new ClawpeerError('IO', `cannot ${what} ${file}: ${detail}`, { cause: err });
}

function encodeHeader(target: PartialTarget): Buffer {
  const pathBytes = Buffer.from(target.relPath, 'utf8');
  const body = Buffer.alloc(8 + 4 + 8 + BLAKE3_OUT_BYTES + 2 + pathBytes.length);
  let at = JOURNAL_MAGIC.copy(body, 0);
  at = body.writeUInt32BE(JOURNAL_VERSION, at);
  at = body.writeBigUInt64BE(BigInt(target.size), at);
  at += Buffer.from(target.root).copy(body, at);
  at = body.writeUInt16BE(pathBytes.length, at);
  pathBytes.copy(body, at);
  return Buffer.concat([body, checkOf(body)]);
}

/** Parses a header; undefined when it is torn or not ours. Returns the header length too. */
function decodeHeader(bytes: Buffer): { target: PartialTarget; length: number } | undefined {
  const fixed = 8 + 4 + 8 + BLAKE3_OUT_BYTES + 2;
  if (bytes.length < fixed + CHECK_BYTES) return undefined;
  if (!bytes.subarray(0, 8).equals(JOURNAL_MAGIC) || bytes.readUInt32BE(8) !== JOURNAL_VERSION) return undefined;
  const size = bytes.readBigUInt64BE(12);
  const root = new Uint8Array(bytes.subarray(20, 20 + BLAKE3_OUT_BYTES));
  const pathLen = bytes.readUInt16BE(20 + BLAKE3_OUT_BYTES);
  const end = fixed + pathLen;
  if (bytes.length < end + CHECK_BYTES) return undefined;
  if (!bytesEqual(checkOf(bytes.subarray(0, end)), bytes.subarray(end, end + CHECK_BYTES))) return undefined;
  if (size > BigInt(Number.MAX_SAFE_INTEGER)) return undefined;
  const relPath = bytes.subarray(fixed, end).toString('utf8');
  return { target: { relPath, root, size: Number(size) }, length: end + CHECK_BYTES };
}

function encodeRecord(chunk: PartialChunk): Buffer {
  const rec = Buffer.alloc(JOURNAL_RECORD_BYTES);
  let at = rec.writeBigUInt64BE(BigInt(chunk.offset), 0);
  at = rec.writeUInt32BE(chunk.length, at);
  at += Buffer.from(chunk.id.buffer, chunk.id.byteOffset, chunk.id.byteLength).copy(rec, at);
  Buffer.from(checkOf(rec.subarray(0, at))).copy(rec, at);
  return rec;
}

/**
 * Parses records after the header: stops at the first torn or corrupt one. Returns the chunks
 * and the byte length of the good prefix (where the next append must go).
 */
function decodeRecords(bytes: Buffer, size: number): { chunks: PartialChunk[]; goodBytes: number } {
  const chunks: PartialChunk[] = [];
  let at = 0;
  while (at + JOURNAL_RECORD_BYTES <= bytes.length) {
    const rec = bytes.subarray(at, at + JOURNAL_RECORD_BYTES);
    const body = rec.subarray(0, JOURNAL_RECORD_BYTES - CHECK_BYTES);
    if (!bytesEqual(checkOf(body), rec.subarray(JOURNAL_RECORD_BYTES - CHECK_BYTES))) break;
    const offset = Number(rec.readBigUInt64BE(0));
    const length = rec.readUInt32BE(8);
    if (length === 0 || offset + length > size) break;
    chunks.push({ offset, length, id: new Uint8Array(rec.subarray(12, 12 + BLAKE3_OUT_BYTES)) });
    at += JOURNAL_RECORD_BYTES;
  }
  return { chunks, goodBytes: at };
}

/**
 * One in-progress file: a data file (positional writes) and its journal, each reopened when
 * used after the pool closed it. Created by PartialStore.openPartial. Chunk writes may come in
 * any order and concurrently.
 */
export class Partial implements PartialTarget {
  readonly relPath: string;
  readonly root: Uint8Array;
  readonly size: number;
  readonly dataPath: string;
  readonly journalPath: string;
  readonly #data: ReopenableFile;
  readonly #journal: ReopenableFile;
  #closed = false;
  // offset -> chunk: what the journal lists (one chunk per offset; chunks never overlap).
  readonly #chunks = new Map<number, PartialChunk>();

  /** False when this attempt created it: a refused transfer removes what it created (resumed ones stay). */
  readonly resumed: boolean;

  /** @internal use PartialStore.openPartial */
  constructor(
    target: PartialTarget,
    dataPath: string,
    journalPath: string,
    data: FileHandle,
    journal: FileHandle,
    chunks: readonly PartialChunk[],
    resumed = false,
  ) {
    this.resumed = resumed;
    this.relPath = target.relPath;
    this.root = target.root;
    this.size = target.size;
    this.dataPath = dataPath;
    this.journalPath = journalPath;
    this.#data = new ReopenableFile(dataPath, data, REOPEN_READ_WRITE);
    this.#journal = new ReopenableFile(journalPath, journal, REOPEN_APPEND);
    for (const c of chunks) this.#chunks.set(c.offset, c);
  }

  /** Chunks already written and journaled (verified on resume unless that was turned off). */
  get chunks(): PartialChunk[] {
    return [...this.#chunks.values()].sort((a, b) => a.offset - b.offset);
  }

  /** True when the chunk with this id is journaled at this offset. */
  has(offset: number, id: Uint8Array): boolean {
    const c = this.#chunks.get(offset);
    return c !== undefined && bytesEqual(c.id, id);
  }

  /** The data file, for the staged file's writeback and the publisher's fsync/metadata calls. */
  get dataFile(): ReopenableFile {
    return this.#data;
  }

  /**
   * Writes a chunk's bytes at `chunk.offset` and journals it. The caller has verified that the
   * bytes hash to `chunk.id` (the publisher does). Throws ClawpeerError IO (ENOSPC says so).
   */
  async write(chunk: PartialChunk, bytes: Uint8Array): Promise<void> {
    if (bytes.length !== chunk.length)
      throw new TypeError(`chunk at ${chunk.offset} of ${this.relPath} is ${chunk.length} bytes, not ${bytes.length}`);
    this.#checkFits(chunk);
    try {
      await this.#data.use(async (data) => {
        let done = 0;
        while (done < bytes.length) {
          const { bytesWritten } = await data.write(bytes, done, bytes.length - done, chunk.offset + done);
          done += bytesWritten;
        }
      });
    } catch (err) {
      throw ioError('write', this.relPath, err);
    }
    await this.#record(chunk);
  }

  /**
   * Journals an all-zero chunk without writing it: the data file was sized when it was created,
   * so the hole there reads as the zeros (a sparse file keeps its holes, as with cp and rsync -S).
   */
  async recordZeros(chunk: PartialChunk): Promise<void> {
    this.#checkFits(chunk);
    await this.#record(chunk);
  }

  #checkFits(chunk: PartialChunk): void {
    if (chunk.offset + chunk.length > this.size)
      throw new TypeError(`chunk at ${chunk.offset}+${chunk.length} does not fit ${this.relPath} (${this.size} bytes)`);
  }

  /** Journals `chunk` as held (once). */
  async #record(chunk: PartialChunk): Promise<void> {
    if (this.has(chunk.offset, chunk.id)) return;
    try {
      // Opened to append: one record per call, appended atomically.
      await this.#journal.use((journal) => journal.write(encodeRecord(chunk)));
    } catch (err) {
      throw ioError('journal', this.relPath, err);
    }
    this.#chunks.set(chunk.offset, chunk);
  }

  /** fsync data, then journal: after this, everything journaled survives a power loss. */
  async flush(): Promise<void> {
    try {
      await this.#data.use((h) => h.sync());
      await this.#journal.use((h) => h.sync());
    } catch (err) {
      throw ioError('sync', this.relPath, err);
    }
  }

  /** Flushes and closes; the partial stays on disk for a later attempt. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    try {
      await this.#data.use((h) => h.sync());
      await this.#journal.use((h) => h.sync());
    } finally {
      await this.#data.dispose();
      await this.#journal.dispose();
    }
  }

  /**
   * Closes the handles without fsync (the publisher already synced the data) and forgets the
   * journal: called once the data file has been renamed to its final path.
   */
  async finishPromotion(): Promise<void> {
    await this.#data.dispose();
    await this.#journal.dispose();
    await unlink(this.journalPath).catch(() => undefined);
  }

  /** Closes and deletes both files. */
  async discard(): Promise<void> {
    await this.#data.dispose().catch(() => undefined);
    await this.#journal.dispose().catch(() => undefined);
    await rm(this.dataPath, { force: true });
    await rm(this.journalPath, { force: true });
  }
}

export interface OpenPartialOptions {
  /** Re-read and re-hash journaled chunks before trusting them. Default true. */
  readonly verify?: boolean;
  readonly signal?: AbortSignal;
}

/** The `.clawpeer/partial/` directory of one share. */
export class PartialStore {
  readonly shareRoot: string;
  readonly dir: string;

  private constructor(shareRoot: string, dir: string) {
    this.shareRoot = shareRoot;
    this.dir = dir;
  }

  /**
   * Opens (creating) `<shareRoot>/.clawpeer/partial/`. Refuses with PATH_INVALID when that
   * directory resolves outside the share (a planted symlink must not redirect our writes).
   * `makeInternalDir: false` (a synced folder): `.clawpeer/` is not made, IO (ENOENT) without it.
   */
  static async open(shareRoot: string, o: { makeInternalDir?: boolean } = {}): Promise<PartialStore> {
    let rootReal: string;
    let dirReal: string;
    const dir = path.join(shareRoot, INTERNAL_DIR_NAME, 'partial');
    // Synchronous metadata calls, as in #names: each awaited one is a thread-pool round trip,
    // which on a busy host cost more than the call (milliseconds before every transfer).
    try {
      rootReal = realpathSync.native(shareRoot);
      if (o.makeInternalDir !== false) mkdirSync(dir, { recursive: true, mode: 0o700 });
      else if (!existsSync(dir)) mkdirSync(dir, { mode: 0o700 });
      dirReal = realpathSync.native(dir);
    } catch (err) {
      throw ioError('create', dir, err);
    }
    if (!isConfinedRealpath(rootReal, dirReal)) {
      throw new ClawpeerError('PATH_INVALID', `${dir} resolves to ${dirReal}, outside the share ${rootReal}`);
    }
    return new PartialStore(rootReal, dirReal);
  }

  #baseName(target: Pick<PartialTarget, 'relPath' | 'root'>): string {
    return `${this.#pathKey(target.relPath)}-${toHex(target.root)}`;
  }

  #pathKey(relPath: string): string {
    return toHex(blake3(Buffer.from(relPath, 'utf8')).subarray(0, 16));
  }

  /**
   * Opens the partial for `target`, resuming one left by an earlier attempt (its journaled
   * chunks, verified unless `verify: false`, are in `chunks`) or creating an empty one.
   * Partials for the same path with another root are discarded: that content is no longer wanted.
   */
  async openPartial(target: PartialTarget, options: OpenPartialOptions = {}): Promise<Partial> {
    if (target.root.length !== BLAKE3_OUT_BYTES) throw new TypeError('partial root must be 32 bytes');
    if (!Number.isSafeInteger(target.size) || target.size < 0) throw new TypeError(`bad size ${target.size}`);
    const base = this.#baseName(target);
    const dataPath = path.join(this.dir, base + DATA_SUFFIX);
    const journalPath = path.join(this.dir, base + JOURNAL_SUFFIX);

    // Other roots for the same path: stale.
    const prefix = this.#pathKey(target.relPath) + '-';
    for (const name of this.#names()) {
      if (name.startsWith(prefix) && !name.startsWith(base + '.')) await rm(path.join(this.dir, name), { force: true });
    }

    let chunks: PartialChunk[] = [];
    let resumed = false;
    try {
      const existing = await this.#readJournal(journalPath, target.size);
      if (
        existing !== undefined &&
        existing.target.relPath === target.relPath &&
        bytesEqual(existing.target.root, target.root) &&
        existing.target.size === target.size
      ) {
        const dataSize = await stat(dataPath).then(
          (s) => s.size,
          () => -1,
        );
        if (dataSize === target.size) {
          resumed = true;
          chunks = existing.chunks;
          // Cut a torn tail off so new records follow the last good one.
          if (existing.goodLength < existing.fileLength) await truncate(journalPath, existing.goodLength);
        }
      }
    } catch (err) {
      throw ioError('read', journalPath, err);
    }

    let data: FileHandle | undefined;
    let journal: FileHandle | undefined;
    await stagingHandles.makeRoom(2);
    try {
      if (resumed) {
        data = await open(dataPath, 'r+');
        if (options.verify ?? true) chunks = await verifyChunks(data, chunks, options.signal);
        journal = await open(journalPath, 'a');
      } else {
        await rm(journalPath, { force: true });
        // Made anew and exclusively: whatever was at the name (a symlink included) is not followed.
        await rm(dataPath, { force: true });
        data = await open(dataPath, 'wx+', 0o600);
        // Sized up front: positional writes land anywhere, and a resumed data file of the wrong
        // size is recognisably not ours.
        await data.truncate(target.size);
        await data.sync();
        journal = await open(journalPath, 'a', 0o600);
        await journal.write(encodeHeader(target));
        await journal.sync();
        await syncDir(this.dir);
      }
    } catch (err) {
      await data?.close().catch(() => undefined);
      await journal?.close().catch(() => undefined);
      if (err instanceof ClawpeerError) throw err;
      throw ioError('open partial for', target.relPath, err);
    }
    return new Partial(target, dataPath, journalPath, data, journal, chunks, resumed);
  }

  /** True when a partial for exactly this path and root is on disk (an attempt to resume), without opening it. */
  holds(target: Pick<PartialTarget, 'relPath' | 'root'>): boolean {
    return existsSync(path.join(this.dir, this.#baseName(target) + DATA_SUFFIX));
  }

  /** How many partials are on disk (journals, parsed or not): what the per-share budget counts. */
  count(): number {
    return this.#names().filter((n) => n.endsWith(JOURNAL_SUFFIX)).length;
  }

  #names(): string[] {
    try {
      return readdirSync(this.dir); // synchronous: one small directory, read before every transfer
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw ioError('list', this.dir, err);
    }
  }

  async #readJournal(
    journalPath: string,
    maxSize: number,
  ): Promise<{ target: PartialTarget; chunks: PartialChunk[]; goodLength: number; fileLength: number } | undefined> {
    let bytes: Buffer;
    try {
      // A journal lists at most one record per chunk; chunks are >= 1 byte, so size bounds it.
      bytes = await readBounded(journalPath, MAX_HEADER_BYTES + (maxSize + 1) * JOURNAL_RECORD_BYTES);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    const header = decodeHeader(bytes);
    if (header === undefined) return undefined;
    const { chunks, goodBytes } = decodeRecords(bytes.subarray(header.length), header.target.size);
    return { target: header.target, chunks, goodLength: header.length + goodBytes, fileLength: bytes.length };
  }

  /** Every partial on disk (journals whose header parses), for the chunk index and for cleanup. */
  async list(): Promise<PartialInfo[]> {
    const out: PartialInfo[] = [];
    for (const name of this.#names()) {
      if (!name.endsWith(JOURNAL_SUFFIX)) continue;
      const journalPath = path.join(this.dir, name);
      const dataPath = journalPath.slice(0, -JOURNAL_SUFFIX.length) + DATA_SUFFIX;
      try {
        const st = await stat(journalPath);
        const parsed = await this.#readJournal(journalPath, Number.MAX_SAFE_INTEGER / JOURNAL_RECORD_BYTES);
        if (parsed === undefined) continue;
        out.push({ ...parsed.target, dataPath, journalPath, chunks: parsed.chunks, touchedMs: st.mtimeMs });
      } catch {
        continue; // vanished or unreadable: not usable for resume, discardStale will see it
      }
    }
    return out.sort((a, b) => (a.relPath < b.relPath ? -1 : a.relPath > b.relPath ? 1 : 0));
  }

  /**
   * Deletes partials not touched for `maxAgeMs` (default 7 days) as of `nowMs`, partials whose
   * journal does not parse, data files without a journal, and those `keep` returns false for.
   * Returns the number of partials removed.
   */
  async discardStale(options: {
    nowMs: number;
    maxAgeMs?: number;
    keep?: (target: PartialTarget) => boolean;
  }): Promise<number> {
    const maxAgeMs = options.maxAgeMs ?? DEFAULT_PARTIAL_MAX_AGE_MS;
    const live = new Set<string>();
    let removed = 0;
    for (const p of await this.list()) {
      const stale = options.nowMs - p.touchedMs > maxAgeMs || (options.keep !== undefined && !options.keep(p));
      if (stale) {
        await rm(p.dataPath, { force: true });
        await rm(p.journalPath, { force: true });
        removed++;
      } else {
        live.add(path.basename(p.journalPath, JOURNAL_SUFFIX));
      }
    }
    for (const name of this.#names()) {
      const base = name.endsWith(DATA_SUFFIX)
        ? name.slice(0, -DATA_SUFFIX.length)
        : name.endsWith(JOURNAL_SUFFIX)
          ? name.slice(0, -JOURNAL_SUFFIX.length)
          : undefined;
      if (base === undefined || live.has(base)) continue;
      await rm(path.join(this.dir, name), { force: true });
      if (name.endsWith(JOURNAL_SUFFIX)) removed++;
    }
    return removed;
  }
}

/** Keeps the journaled chunks whose bytes in the data file still hash to their id. */
async function verifyChunks(
  data: FileHandle,
  chunks: readonly PartialChunk[],
  signal: AbortSignal | undefined,
): Promise<PartialChunk[]> {
  const good: PartialChunk[] = [];
  let buf = Buffer.alloc(0);
  for (const c of chunks) {
    if (signal?.aborted === true)
      throw new ClawpeerError('ABORTED', 'resume verification aborted', { cause: signal.reason });
    if (buf.length < c.length) buf = Buffer.alloc(c.length);
    const view = buf.subarray(0, c.length);
    let filled = 0;
    while (filled < c.length) {
      const { bytesRead } = await data.read(view, filled, c.length - filled, c.offset + filled);
      if (bytesRead === 0) break;
      filled += bytesRead;
    }
    if (filled === c.length && bytesEqual(blake3(view), c.id)) good.push(c);
  }
  return good;
}

/**
 * fsync a directory so a rename or create in it is durable (no-op where unsupported). Opening
 * and closing it are synchronous (microseconds); only the fsync, which waits on the disk, goes to
 * the thread pool: every commit syncs its directories, and each awaited call was a wake-up.
 */
export async function syncDir(dir: string): Promise<void> {
  let fd: number | undefined;
  try {
    fd = openSync(dir, 'r');
    await fsyncAsync(fd);
  } catch (err) {
    // Windows cannot open directories; some file systems refuse fsync on them.
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EISDIR' && code !== 'EPERM' && code !== 'EINVAL' && code !== 'ENOTSUP' && code !== 'EACCES') {
      throw ioError('sync directory', dir, err);
    }
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
