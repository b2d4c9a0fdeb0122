// Manifests a sync's scan just computed, kept for the rest of that sync so serving the peer's
// fetch does not chunk and hash the same files again (an initial sync of 10,000 files spent
// ~1 s doing exactly that).
//
// A cached manifest is used only while the file's stat (size, mtime to the ns, inode) still
// matches what the scan saw; anything else is a miss and the caller hashes. Bounded by the total
// number of chunks held, so a huge tree costs at most MAX_CACHED_CHUNKS entries.
import { lstatSync } from 'node:fs';
import type { FileManifest } from '../chunking/manifest.js';
import { fileKeyOf, sameFileKey, type FileKey } from '../store/file-key.js';

/** Chunk references held at most (~100 bytes each). */
export const MAX_CACHED_CHUNKS = 1 << 20;

interface Cached {
  readonly manifest: FileManifest;
  /** The stat the scan hashed the file with. */
  readonly key: FileKey;
}

export class ManifestCache {
  readonly #byPath = new Map<string, Cached>();
  #chunks = 0;

  /** Remembers the manifest of `relPath` as hashed with this stat; ignored once the cache is full. */
  add(relPath: string, manifest: FileManifest, stat: FileKey): void {
    if (this.#chunks + manifest.chunks.length > MAX_CACHED_CHUNKS || this.#byPath.has(relPath)) return;
    this.#byPath.set(relPath, { manifest, key: { size: stat.size, mtimeNs: stat.mtimeNs, ino: stat.ino } });
    this.#chunks += manifest.chunks.length;
  }

  /** The manifest of `relPath` (at `absPath`) if the file is unchanged since it was hashed. */
  get(relPath: string, absPath: string): FileManifest | undefined {
    const c = this.#byPath.get(relPath);
    if (c === undefined) return undefined;
    const st = lstatSync(absPath, { bigint: true, throwIfNoEntry: false });
    if (st === undefined || !st.isFile() || !sameFileKey(fileKeyOf(st), c.key)) return undefined;
    return c.manifest;
  }
}
