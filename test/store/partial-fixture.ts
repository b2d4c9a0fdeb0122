// Test fixture: what an interrupted transfer leaves in a share's partial store.
import type { ChunkingParams } from '../../src/chunking/fastcdc.js';
import { manifestFromBytes, type ChunkRef } from '../../src/chunking/manifest.js';
import type { PartialStore } from '../../src/store/partial-store.js';

/** Leaves chunk `index` of `bytes` (and only it) in a closed partial for `relPath`; returns that chunk. */
export async function leavePartialChunk(
  partials: PartialStore,
  relPath: string,
  bytes: Uint8Array,
  params: ChunkingParams,
  index: number,
): Promise<{ chunk: ChunkRef; chunks: readonly ChunkRef[] }> {
  const m = manifestFromBytes(bytes, params);
  const chunk = m.chunks[index];
  if (chunk === undefined) throw new RangeError(`${relPath} has no chunk ${index}`);
  const p = await partials.openPartial({ relPath, root: m.root, size: m.size });
  await p.write(chunk, bytes.subarray(chunk.offset, chunk.offset + chunk.length));
  await p.close();
  return { chunk, chunks: m.chunks };
}
