// Manifests a sync's scan just computed, kept for the rest of that sync so serving the peer's
// fetch does not chunk and hash the same files again (an initial sync of 10,000 files spent
// ~1 s doing exactly that).
//
// A cached manifest is used only while the file's stat (size, mtime to the ns, inode) still
// matches what the scan saw; anything else is a miss and the caller hashes. Bounded by the total
// number of chunks held, so a huge tree costs at most MAX_CACHED_CHUNKS entries.
//
// A hit also gives that stat and when the scan began hashing (before it took the stat), so the
// chunk reader may check the file by one fstat per chunk instead of hashing every chunk sent
// again (chunk-reader.ts ScannedAs; the racy-window rule is the reader's).
import { lstatSync } from 'node:fs';
import type { ChunkingParams } from '../chunking/fastcdc.js';
import type { FileManifest } from '../chunking/manifest.js';
import { manifestFromFile } from '../file-chunking/file-chunker.js';
import { fileKeyOf, msToNs, sameFileKey, type FileKey } from '../store/file-key.js';
import type { SourceFile } from './transfer-source.js';

/** Chunk references held at most (~100 bytes each). */
export const MAX_CACHED_CHUNKS = 1 << 20;

/** A manifest the scan computed, with what it knew of the file (chunk-reader.ts ScannedAs). */
export interface CachedManifest {
  readonly manifest: FileManifest;
  /** The stat the scan hashed the file with. */
  readonly key: FileKey;
  /** When the scan began, before it took `key`: undefined when not told (then the reader hashes). */
  readonly hashedAtNs?: bigint;
}

export class ManifestCache {
  readonly #byPath = new Map<string, CachedManifest>();
  #chunks = 0;

  /**
   * Remembers the manifest of `relPath` as hashed with this stat, by a scan that began at
   * `hashedAtNs` (no later than it took `stat`); ignored once the cache is full.
   */
  add(relPath: string, manifest: FileManifest, stat: FileKey, hashedAtNs?: bigint): void {
    if (this.#chunks + manifest.chunks.length > MAX_CACHED_CHUNKS || this.#byPath.has(relPath)) return;
    const key = { size: stat.size, mtimeNs: stat.mtimeNs, ino: stat.ino };
    this.#byPath.set(relPath, hashedAtNs === undefined ? { manifest, key } : { manifest, key, hashedAtNs });
    this.#chunks += manifest.chunks.length;
  }

  /** The manifest of `relPath` (at `absPath`) if the file is unchanged since it was hashed. */
  get(relPath: string, absPath: string): FileManifest | undefined {
    return this.lookup(relPath, absPath)?.manifest;
  }

  /** As get, with the stat the file was hashed with and when hashing began. */
  lookup(relPath: string, absPath: string): CachedManifest | undefined {
    const c = this.#byPath.get(relPath);
    if (c === undefined) return undefined;
    const st = lstatSync(absPath, { bigint: true, throwIfNoEntry: false });
    if (st === undefined || !st.isFile() || !sameFileKey(fileKeyOf(st), c.key)) return undefined;
    return c;
  }
}

/** The file at `localPath` to send as `c` says: checked by its key where the reader may trust it. */
export function sourceFileOf(localPath: string, c: CachedManifest): SourceFile {
  const { manifest, key, hashedAtNs } = c;
  return hashedAtNs === undefined
    ? { entryIndex: -1, localPath, manifest }
    : { entryIndex: -1, localPath, manifest, key, hashedAtNs };
}

/**
 * Hashes the regular file at `absPath` (undefined when it is something else) as push's scan
 * does: the clock read, then its stat, then its bytes. The stat and clock reading come back as
 * `key` and `hashedAtNs` only when the stat did not move while hashing (else the reader hashes).
 */
export async function hashKeyed(absPath: string, chunking: ChunkingParams): Promise<CachedManifest | undefined> {
  const hashedAtNs = msToNs(Date.now());
  const before = lstatSync(absPath, { bigint: true });
  if (!before.isFile()) return undefined;
  const key = fileKeyOf(before);
  const manifest = await manifestFromFile(absPath, chunking);
  const after = lstatSync(absPath, { bigint: true, throwIfNoEntry: false });
  const stable = after?.isFile() === true && sameFileKey(fileKeyOf(after), key) && manifest.size === key.size;
  return stable ? { manifest, key, hashedAtNs } : { manifest, key };
}
