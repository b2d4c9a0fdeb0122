// How a receiver (transfer-receive.ts) reads an announced manifest: where each entry lands
// under the destination (confined, normalised, never twice, never a .clawpeer name), and a file
// entry as a chunking manifest (offsets from its chunk lengths).
import path from 'node:path';
import { ClawpeerError } from '../errors.js';
import type { ChunkRef, FileManifest } from '../chunking/manifest.js';
import type { ManifestEntry } from '../protocol/messages.js';
import { normalizeSharePath, type SharePathRules } from '../transfer/paths.js';
import { DEFAULT_PLAN_LIMITS } from '../transfer/plan.js';
import { chunkIdAt } from '../transfer/chunk-order.js';
import { isInternalPath } from '../store/internal-names.js';

/**
 * Maps announced entry paths to confined paths under the destination; refuses anything odd.
 * `rules` may leave Windows' name rules to the publisher (push and pull: per path, on Windows).
 */
export function destinationPaths(
  entries: readonly ManifestEntry[],
  basePath: string,
  rules: SharePathRules = {},
): string[] {
  if (entries.length > DEFAULT_PLAN_LIMITS.maxFiles)
    throw new ClawpeerError(
      'PROTOCOL',
      `transfer announces ${entries.length} entries, more than ${DEFAULT_PLAN_LIMITS.maxFiles}`,
    );
  const seen = new Set<string>();
  return entries.map((e) => {
    const rel = normalizeSharePath(e.path, rules);
    const full = basePath === '' ? rel : normalizeSharePath(path.posix.join(basePath, rel), rules);
    if (isInternalPath(full))
      throw new ClawpeerError(
        'PATH_INVALID',
        `refusing to write ${JSON.stringify(e.path)}: .clawpeer names are reserved for clawpeer's own files`,
      );
    if (seen.has(full)) throw new ClawpeerError('PROTOCOL', `path ${JSON.stringify(e.path)} is announced twice`);
    seen.add(full);
    return full;
  });
}

/** The chunking manifest of an announced file: offsets from its chunk lengths, checked against its size. */
export function chunkingManifest(entry: ManifestEntry): FileManifest {
  const chunks: ChunkRef[] = [];
  let offset = 0;
  entry.chunkLengths.forEach((length, i) => {
    chunks.push({ offset, length, id: chunkIdAt(entry, i) });
    offset += length;
  });
  if (offset !== entry.size)
    throw new ClawpeerError(
      'PROTOCOL',
      `${entry.path}: chunk lengths add up to ${offset}, but the size is ${entry.size}`,
    );
  return { size: entry.size, chunks, root: entry.root };
}
