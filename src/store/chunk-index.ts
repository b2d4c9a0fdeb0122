// What a receiver already holds: chunk id -> where those bytes are on disk in this share.
//
// Goals: answer a sender's manifest with only the chunks we lack, by indexing the chunks of
// every file in the share (through chunking/'s file chunker) and of the partial files an earlier,
// interrupted attempt left behind; keep a warm cache keyed by (path, size, mtimeNs, inode),
// persisted in `.clawpeer/index.bin`, so unchanged files are not re-hashed on the next run; and
// never let a stale entry poison a transfer: readChunk re-hashes the bytes it reads and drops the
// file's entries on a mismatch.
// Non-goals: the transfer plan (transfer/), watching the file system (a refresh rescans; the sync
// scanner will feed changes later), history of deleted content.
//
// Memory: ids and small records only, never chunk bytes: per chunk one map entry (a 32-char
// latin1 key plus a small object, ~100 bytes in V8), per file one record with its chunk list
// packed at 36 bytes per chunk. A 16 GiB share at the default 16 KiB average chunk is ~1 M chunks,
// ~130 MiB. A share much larger than that wants an on-disk hash table (not built yet).
//
// Racy entries: a cache entry is trusted only outside the racy window (file-key.ts).
//
// index.bin format (integers big-endian), version 1:
//   "CLAWIDX1" | u32 version | u32 minBytes | u32 avgBytes | u32 maxBytes | u8 normalization
//   | u32 fileCount | files... | 32-byte BLAKE3 of everything before it
//   file: u16 pathBytes | path | u64 size | u64 mtimeNs | u64 ino | f64 hashedAtMs | 32 root
//         | u32 chunkCount | chunkCount x (32 id | u32 length)
// A file that fails its check (torn write, other chunking parameters, other version) is ignored:
// the cache is rebuilt by hashing.

import { closeSync, lstatSync, openSync, readSync } from 'node:fs';
import { mkdir, readFile, realpath, stat } from 'node:fs/promises';
import type { BigIntStats } from 'node:fs';
import path from 'node:path';
import { ClawpeerError, isClawpeerError } from '../errors.js';
import { BLAKE3_OUT_BYTES, blake3, bytesEqual } from '../chunking/blake3.js';
import type { ChunkingParams } from '../chunking/fastcdc.js';
import { manifestFromFile } from '../file-chunking/file-chunker.js';
import type { FileManifest } from '../chunking/manifest.js';
import { isConfinedRealpath } from '../transfer/paths.js';
import { writeFileAtomic } from '../support/atomic-file.js';
import { fileKeyOf, isRacy, msToNs, sameFileKey, type FileKey } from './file-key.js';
import { INTERNAL_DIR_NAME, isInternalDirName, isInternalPath } from './internal-names.js';
import type { PartialStore } from './partial-store.js';
import { scanTree } from './tree-scan.js';

/** Name of the persisted index inside `.clawpeer/`. */
export const INDEX_FILE_NAME = 'index.bin';

const INDEX_MAGIC = Buffer.from('CLAWIDX1', 'latin1');
const INDEX_VERSION = 1;
const CHUNK_ENTRY_BYTES = BLAKE3_OUT_BYTES + 4;

/** Where a chunk's bytes are. */
export interface ChunkLocation {
  /** Path inside the share of the file holding it (for a partial: its data file's share path). */
  readonly relPath: string;
  readonly absPath: string;
  readonly offset: number;
  readonly length: number;
  readonly source: 'file' | 'partial';
}

interface FileRecord extends FileKey {
  readonly relPath: string;
  readonly absPath: string;
  readonly source: 'file' | 'partial';
  readonly hashedAtMs: number;
  readonly root: Uint8Array;
  /** Packed (32-byte id, u32 length) per chunk, in file order. */
  readonly chunks: Buffer;
}

interface Entry {
  readonly file: FileRecord;
  readonly offset: number;
  readonly length: number;
}

export interface ChunkIndexOptions {
  /** Share root (resolved with realpath here). */
  readonly shareRoot: string;
  /** The chunking the ids were made with; a cache made with other parameters is ignored. */
  readonly chunking: ChunkingParams;
  readonly partials?: PartialStore;
}

export interface RefreshStats {
  readonly files: number;
  /** Files hashed because the cache had no trustworthy entry for them. */
  readonly hashed: number;
  readonly chunks: number;
  readonly partialChunks: number;
}

function keyOf(id: Uint8Array): string {
  return Buffer.from(id.buffer, id.byteOffset, id.byteLength).toString('latin1');
}

function ioError(what: string, file: string, err: unknown): ClawpeerError {
  if (isClawpeerError(err)) return err;
  const detail = err instanceof Error ? err.message : String(err);
  return new ClawpeerError('IO', `cannot ${what} ${file}: ${detail}`, { cause: err });
}

/** A manifest's chunk list as a record stores it: (32-byte id, u32 length) per chunk. */
function packChunks(manifest: FileManifest): Buffer {
  const chunks = Buffer.alloc(manifest.chunks.length * CHUNK_ENTRY_BYTES);
  manifest.chunks.forEach((c, i) => {
    chunks.set(c.id, i * CHUNK_ENTRY_BYTES);
    chunks.writeUInt32BE(c.length, i * CHUNK_ENTRY_BYTES + BLAKE3_OUT_BYTES);
  });
  return chunks;
}

function trustworthy(rec: FileRecord, st: FileKey): boolean {
  return sameFileKey(rec, st) && !isRacy(st.mtimeNs, msToNs(rec.hashedAtMs));
}

/** Index of the chunks a share already holds. Build with ChunkIndex.open, then refresh(). */
export class ChunkIndex {
  readonly shareRoot: string;
  readonly indexPath: string;
  readonly #chunking: ChunkingParams;
  readonly #partials: PartialStore | undefined;
  readonly #files = new Map<string, FileRecord>();
  readonly #chunks = new Map<string, Entry>();
  /**
   * Other files holding a chunk #chunks has (a file copied or renamed in the share, the same
   * bytes in two files): when the file #chunks names is dropped, the next takes its place.
   * Before, the chunk was gone from the index while those files stayed, trusted, never hashed
   * again: after a rename its content travelled again at every transfer that wanted it.
   * Keyed by file, in the order they came: 100,000 files of the same bytes (a peer can land
   * them) are one add and one delete each, where a list searched at each was quadratic.
   */
  readonly #spares = new Map<string, Map<FileRecord, Entry>>();
  /** The records (also in #files) of partial-store chunks: refreshPartials replaces just these. */
  readonly #partialRecords = new Set<FileRecord>();
  /** Share-file records changed since the last load or save: a save would write something new. */
  #dirty = false;
  #saving: Promise<void> = Promise.resolve();
  /** Inode of the share's `.clawpeer/` once seen: a save never makes another one (the share moved, its disk unmounted). */
  #internalIno: bigint | undefined;

  private constructor(options: ChunkIndexOptions) {
    this.shareRoot = options.shareRoot;
    this.indexPath = path.join(options.shareRoot, INTERNAL_DIR_NAME, INDEX_FILE_NAME);
    this.#chunking = options.chunking;
    this.#partials = options.partials;
  }

  /** Opens the index, loading the persisted cache when it is intact and made with these parameters. */
  static async open(options: ChunkIndexOptions): Promise<ChunkIndex> {
    let shareRoot: string;
    try {
      shareRoot = await realpath(options.shareRoot);
    } catch (err) {
      throw ioError('open share', options.shareRoot, err);
    }
    const index = new ChunkIndex({ ...options, shareRoot });
    index.#internalIno = (await stat(path.dirname(index.indexPath), { bigint: true }).catch(() => undefined))?.ino;
    await index.#load();
    return index;
  }

  get fileCount(): number {
    return [...this.#files.values()].filter((f) => f.source === 'file').length;
  }

  get chunkCount(): number {
    return this.#chunks.size;
  }

  /** Where the chunk with this id is, if we hold it. */
  lookup(id: Uint8Array): ChunkLocation | undefined {
    const e = this.#chunks.get(keyOf(id));
    if (e === undefined) return undefined;
    return {
      relPath: e.file.relPath,
      absPath: e.file.absPath,
      offset: e.offset,
      length: e.length,
      source: e.file.source,
    };
  }

  has(id: Uint8Array): boolean {
    return this.#chunks.has(keyOf(id));
  }

  /**
   * The content root of `relPath` if the cache has a trustworthy entry for its current stat
   * (the publisher's identical-file check uses this to avoid re-hashing).
   */
  cachedRoot(relPath: string, st: BigIntStats): Uint8Array | undefined {
    const rec = this.#files.get(relPath);
    if (rec === undefined || rec.source !== 'file') return undefined;
    return trustworthy(rec, fileKeyOf(st)) ? rec.root : undefined;
  }

  /**
   * The chunk's bytes, read from where the index says and verified against `id`. Undefined when
   * we do not hold it, or when the bytes there no longer match (the file changed since it was
   * indexed): then every entry of that file is dropped, so the chunk is requested from the peer.
   */
  async readChunk(id: Uint8Array): Promise<Uint8Array | undefined> {
    const e = this.#chunks.get(keyOf(id));
    if (e === undefined) return undefined;
    const bytes = Buffer.alloc(e.length);
    let ok = false;
    try {
      // Synchronous: one chunk (at most maxBytes) from the page cache costs less than the
      // thread-pool round trips of awaited calls.
      const fd = openSync(e.file.absPath, 'r');
      try {
        let filled = 0;
        while (filled < e.length) {
          const bytesRead = readSync(fd, bytes, filled, e.length - filled, e.offset + filled);
          if (bytesRead === 0) break;
          filled += bytesRead;
        }
        ok = filled === e.length && bytesEqual(blake3(bytes), id);
      } finally {
        closeSync(fd);
      }
    } catch {
      ok = false; // vanished or unreadable: as stale as changed
    }
    if (ok) return bytes;
    // That file changed: another file holding the chunk, if any, answers the next ask.
    this.#dropFile(e.file);
    return undefined;
  }

  /** Which of `ids` we do not hold (the receiver's answer to a manifest), in input order. */
  missing(ids: readonly Uint8Array[]): Uint8Array[] {
    return ids.filter((id) => !this.#chunks.has(keyOf(id)));
  }

  /** True when a save would write something the persisted cache lacks. */
  get dirty(): boolean {
    return this.#dirty;
  }

  #dropFile(rec: FileRecord): void {
    if (rec.source === 'file') this.#dirty = true;
    else this.#partialRecords.delete(rec);
    if (this.#files.get(rec.relPath) === rec) this.#files.delete(rec.relPath);
    for (let at = 0; at < rec.chunks.length; at += CHUNK_ENTRY_BYTES) {
      const k = rec.chunks.subarray(at, at + BLAKE3_OUT_BYTES).toString('latin1');
      const spares = this.#spares.get(k);
      spares?.delete(rec);
      if (this.#chunks.get(k)?.file === rec) {
        const next = spares?.values().next().value;
        if (next === undefined) this.#chunks.delete(k);
        else {
          this.#chunks.set(k, next);
          spares?.delete(next.file);
        }
      }
      if (spares?.size === 0) this.#spares.delete(k);
    }
  }

  #addRecord(rec: FileRecord): void {
    const old = this.#files.get(rec.relPath);
    if (old !== undefined) this.#dropFile(old);
    if (rec.source === 'file') this.#dirty = true;
    this.#files.set(rec.relPath, rec);
    let offset = 0;
    for (let at = 0; at < rec.chunks.length; at += CHUNK_ENTRY_BYTES) {
      const k = rec.chunks.subarray(at, at + BLAKE3_OUT_BYTES).toString('latin1');
      const length = rec.chunks.readUInt32BE(at + BLAKE3_OUT_BYTES);
      const held = this.#chunks.get(k);
      if (held === undefined) this.#chunks.set(k, { file: rec, offset, length });
      else if (held.file !== rec) {
        const spares = this.#spares.get(k);
        if (spares === undefined) this.#spares.set(k, new Map([[rec, { file: rec, offset, length }]]));
        else if (!spares.has(rec)) spares.set(rec, { file: rec, offset, length });
      }
      offset += length;
    }
  }

  /**
   * Records a file just published (or otherwise known) with its manifest, so it is indexed
   * without hashing it again. `st` must be the file's stat after it reached its final path.
   */
  addFile(relPath: string, manifest: FileManifest, st: BigIntStats, hashedAtMs: number = Date.now()): void {
    this.#addRecord({
      relPath,
      absPath: path.join(this.shareRoot, ...relPath.split('/')),
      source: 'file',
      ...fileKeyOf(st),
      hashedAtMs,
      root: manifest.root,
      chunks: packChunks(manifest),
    });
  }

  /**
   * Rescans the share: files whose cache entry is trustworthy are kept, others are hashed,
   * vanished ones dropped; then the partial store's journaled chunks are added. Internal paths
   * (`.clawpeer/`, temp files) are never indexed as content. The caller saves (when `dirty`).
   */
  async refresh(options: { signal?: AbortSignal } = {}): Promise<RefreshStats> {
    const { signal } = options;
    const seen = new Set<string>();
    let files = 0;
    let hashed = 0;
    const walk = scanTree(this.shareRoot, {
      rootName: null,
      onIssue: () => undefined,
      skipDir: (rel) => isInternalDirName(rel),
      ...(signal === undefined ? {} : { signal }),
    });
    for await (const entry of walk) {
      if (entry.kind !== 'file' || isInternalPath(entry.relPath)) continue;
      // Under a name not NFC on disk: the index finds files by relPath, so it cannot offer its chunks.
      if (entry.localPath !== undefined) continue;
      files++;
      seen.add(entry.relPath);
      const key: FileKey = { size: entry.size, mtimeNs: entry.mtimeNs, ino: entry.ino };
      const rec = this.#files.get(entry.relPath);
      if (rec !== undefined && rec.source === 'file' && trustworthy(rec, key)) continue;
      hashed++;
      await this.#hashFile(entry.relPath, key, signal);
    }
    for (const rec of [...this.#files.values()]) {
      if (rec.source === 'file' && !seen.has(rec.relPath)) this.#dropFile(rec);
    }
    const partialChunks = await this.refreshPartials();
    return { files, hashed, chunks: this.#chunks.size, partialChunks };
  }

  /**
   * Re-reads the partial store only: the chunks interrupted transfers left behind (a rerun after
   * a kill resumes from them), without rescanning the share. Returns how many chunks it added.
   */
  async refreshPartials(): Promise<number> {
    // Only the partial records: this runs for every transfer, and the share may hold millions of files.
    for (const rec of [...this.#partialRecords]) this.#dropFile(rec);
    let partialChunks = 0;
    if (this.#partials !== undefined) {
      for (const p of await this.#partials.list()) {
        // A partial's chunks are not contiguous: one record per chunk, keyed by data path + offset.
        for (const c of p.chunks) {
          const chunks = Buffer.alloc(CHUNK_ENTRY_BYTES);
          chunks.set(c.id, 0);
          chunks.writeUInt32BE(c.length, BLAKE3_OUT_BYTES);
          const relPath = path.relative(this.shareRoot, p.dataPath).split(path.sep).join('/');
          const k = keyOf(c.id);
          if (this.#chunks.has(k)) continue;
          const rec: FileRecord = {
            relPath: `${relPath}#${c.offset}`,
            absPath: p.dataPath,
            source: 'partial',
            size: p.size,
            mtimeNs: 0n,
            ino: 0n,
            hashedAtMs: 0,
            root: p.root,
            chunks,
          };
          this.#files.set(rec.relPath, rec);
          this.#partialRecords.add(rec);
          this.#chunks.set(k, { file: rec, offset: c.offset, length: c.length });
          partialChunks++;
        }
      }
    }
    return partialChunks;
  }

  async #hashFile(relPath: string, key: FileKey, signal: AbortSignal | undefined): Promise<void> {
    const absPath = path.join(this.shareRoot, ...relPath.split('/'));
    const hashedAtMs = Date.now();
    let manifest: FileManifest;
    try {
      manifest = await manifestFromFile(absPath, this.#chunking, signal === undefined ? {} : { signal });
      // A file written while we read it is not indexed: its chunks may mix two versions.
      const after = fileKeyOf(lstatSync(absPath, { bigint: true }));
      if (!sameFileKey(after, key)) return;
    } catch (err) {
      if (isClawpeerError(err, 'ABORTED')) throw err;
      return; // unreadable or vanished: simply not indexed
    }
    this.#addRecord({
      relPath,
      absPath,
      source: 'file',
      ...key,
      hashedAtMs,
      root: manifest.root,
      chunks: packChunks(manifest),
    });
  }

  /**
   * Writes the cache of share files (not partials: their journals are their own record) when it
   * changed since the last load or save. Saves run one at a time, each writing the state as of
   * its start.
   */
  save(): Promise<void> {
    const run = this.#saving.catch(() => undefined).then(() => (this.#dirty ? this.#write() : undefined));
    this.#saving = run;
    return run;
  }

  async #write(): Promise<void> {
    this.#dirty = false;
    try {
      await this.#writeFile();
    } catch (err) {
      this.#dirty = true; // still unsaved: the next save tries again
      throw err;
    }
  }

  async #writeFile(): Promise<void> {
    const records = [...this.#files.values()].filter((f) => f.source === 'file');
    // One buffer, sized first and written in place (the digest too): three small buffers per
    // record and two whole copies made a save of 10,000 files cost ~0.1-0.2 s, once per transfer.
    const headerBytes = 8 + 4 + 4 * 3 + 1 + 4;
    let size = headerBytes;
    for (const rec of records)
      size += 2 + Buffer.byteLength(rec.relPath, 'utf8') + 8 * 3 + 8 + BLAKE3_OUT_BYTES + 4 + rec.chunks.length;
    const out = Buffer.allocUnsafe(size + BLAKE3_OUT_BYTES);
    let o = INDEX_MAGIC.copy(out, 0);
    o = out.writeUInt32BE(INDEX_VERSION, o);
    o = out.writeUInt32BE(this.#chunking.minBytes, o);
    o = out.writeUInt32BE(this.#chunking.avgBytes, o);
    o = out.writeUInt32BE(this.#chunking.maxBytes, o);
    o = out.writeUInt8(this.#chunking.normalization, o);
    o = out.writeUInt32BE(records.length, o);
    for (const rec of records) {
      const pathBytes = out.write(rec.relPath, o + 2, 'utf8');
      out.writeUInt16BE(pathBytes, o);
      o += 2 + pathBytes;
      o = out.writeBigUInt64BE(BigInt(rec.size), o);
      o = out.writeBigUInt64BE(rec.mtimeNs, o);
      o = out.writeBigUInt64BE(rec.ino, o);
      o = out.writeDoubleBE(rec.hashedAtMs, o);
      out.set(rec.root, o);
      o += BLAKE3_OUT_BYTES;
      o = out.writeUInt32BE(rec.chunks.length / CHUNK_ENTRY_BYTES, o);
      out.set(rec.chunks, o);
      o += rec.chunks.length;
    }
    if (o !== size) throw new TypeError(`chunk index encoder wrote ${o} bytes, planned ${size}`);
    out.set(blake3(out.subarray(0, size)), size);
    const dir = path.dirname(this.indexPath);
    try {
      // Not recursive: a share deleted under a running listener is not brought back by a save;
      // nor is the `.clawpeer/` of a share swapped for another directory (an empty mount point).
      if (this.#internalIno === undefined)
        await mkdir(dir, 0o700).catch((err: unknown) => {
          if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        });
      const ino = (await stat(dir, { bigint: true })).ino;
      if (ino !== (this.#internalIno ??= ino)) throw new Error(`${dir} is another directory than the one loaded`);
      const real = await realpath(dir);
      if (!isConfinedRealpath(this.shareRoot, real)) {
        throw new ClawpeerError('PATH_INVALID', `${dir} resolves to ${real}, outside the share ${this.shareRoot}`);
      }
    } catch (err) {
      throw ioError('create', dir, err);
    }
    await writeFileAtomic(this.indexPath, out, 0o600);
  }

  async #load(): Promise<void> {
    let bytes: Buffer;
    try {
      bytes = await readFile(this.indexPath);
    } catch {
      return; // no cache yet
    }
    if (bytes.length < BLAKE3_OUT_BYTES + 29) return;
    const body = bytes.subarray(0, bytes.length - BLAKE3_OUT_BYTES);
    if (!bytesEqual(blake3(body), bytes.subarray(body.length))) return;
    if (!body.subarray(0, 8).equals(INDEX_MAGIC) || body.readUInt32BE(8) !== INDEX_VERSION) return;
    const c = this.#chunking;
    if (
      body.readUInt32BE(12) !== c.minBytes ||
      body.readUInt32BE(16) !== c.avgBytes ||
      body.readUInt32BE(20) !== c.maxBytes ||
      body.readUInt8(24) !== c.normalization
    )
      return;
    const count = body.readUInt32BE(25);
    const records: FileRecord[] = [];
    let at = 29;
    try {
      for (let i = 0; i < count; i++) {
        const pathLen = body.readUInt16BE(at);
        at += 2;
        const relPath = body.subarray(at, at + pathLen).toString('utf8');
        at += pathLen;
        const size = Number(body.readBigUInt64BE(at));
        const mtimeNs = body.readBigUInt64BE(at + 8);
        const ino = body.readBigUInt64BE(at + 16);
        const hashedAtMs = body.readDoubleBE(at + 24);
        at += 32;
        const root = new Uint8Array(body.subarray(at, at + BLAKE3_OUT_BYTES));
        at += BLAKE3_OUT_BYTES;
        const n = body.readUInt32BE(at);
        at += 4;
        if (at + n * CHUNK_ENTRY_BYTES > body.length) return;
        const chunks = Buffer.from(body.subarray(at, at + n * CHUNK_ENTRY_BYTES));
        at += n * CHUNK_ENTRY_BYTES;
        if (isInternalPath(relPath)) continue;
        records.push({
          relPath,
          absPath: path.join(this.shareRoot, ...relPath.split('/')),
          source: 'file',
          size,
          mtimeNs,
          ino,
          hashedAtMs,
          root,
          chunks,
        });
      }
    } catch {
      return; // truncated despite the checksum (not ours): ignore the cache
    }
    for (const rec of records) this.#addRecord(rec);
    this.#dirty = false; // what was just loaded is what is on disk
  }
}
