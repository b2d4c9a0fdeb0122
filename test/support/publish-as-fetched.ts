// Publishes the content of sync fetch requests through a real Publisher with the apply's
// beforeReplace hook, as fetchContent's receiver does: for apply tests that fake the peer.
import { DEFAULT_CHUNKING } from '../../src/chunking/fastcdc.js';
import { manifestFromBytes } from '../../src/chunking/manifest.js';
import type { FetchRequest } from '../../src/folder-sync/sync-exchange.js';
import { Publisher } from '../../src/store/publisher.js';

/** Publishes `bytesOf(destPath)` at each request's path; a path already holding them is left (nothing renamed). */
export async function publishAsFetched(
  folder: string,
  requests: readonly FetchRequest[],
  bytesOf: (destPath: string) => Uint8Array,
  beforeReplace: ((relPath: string) => Promise<void>) | undefined,
): Promise<void> {
  const publisher = await Publisher.open({
    shareRoot: folder,
    force: true,
    chunking: DEFAULT_CHUNKING,
    fsync: 'none',
    ...(beforeReplace === undefined ? {} : { beforeReplace }),
  });
  for (const r of requests) {
    const bytes = bytesOf(r.destPath);
    const manifest = manifestFromBytes(bytes, DEFAULT_CHUNKING);
    const staged = await publisher.stageFile({ relPath: r.destPath, manifest, mode: r.mode, mtimeMs: r.mtimeMs });
    if (staged === 'identical') continue;
    if (typeof staged === 'string') throw new Error(`expected a staged file, got ${staged}`);
    for (const [i, c] of manifest.chunks.entries())
      await staged.writeChunk(i, bytes.subarray(c.offset, c.offset + c.length));
    await publisher.commit([staged]);
  }
}
