// A receiver's dry run (transfer-receive.ts dryRun): the verdicts prepare() would reach and the
// chunks it would want, from the destination's chunk index and publisher, writing nothing.
import { bitmapSet, newBitmap, type ManifestEntry } from '../protocol/messages.js';
import { chunkKey } from '../transfer/plan.js';
import { bitmapFromKeys, chunkIdAt, uniqueChunks } from '../transfer/chunk-order.js';
import type { ChunkIndex } from '../store/chunk-index.js';
import type { Publisher } from '../store/publisher.js';
import type { DryRunPlan } from './receive-types.js';
import { chunkingManifest } from './receive-entries.js';

export interface DryRunInput {
  readonly entries: readonly ManifestEntry[];
  /** Where each entry lands under the share root (receive-entries.ts destinationPaths). */
  readonly paths: readonly string[];
  readonly basePath: string;
  readonly index: ChunkIndex;
  readonly publisher: Publisher;
}

/**
 * A dry run's plan, writing nothing at the destination: which files would be published (new or
 * different; FILE_EXISTS, PATH_INVALID and SHARE_READ_ONLY as prepare() would throw them) and
 * which chunks would be asked for: those of the files to publish that no file of the
 * destination holds. Unlike prepare(), chunks of interrupted earlier transfers (partials) and
 * stale index entries are not counted, so the estimate errs high.
 */
export async function planDryRun(o: DryRunInput): Promise<DryRunPlan> {
  const { entries, paths, basePath, index, publisher } = o;
  if (basePath !== '') publisher.probeDir(basePath);
  const fileCount = entries.filter((e) => e.kind === 'file').length;
  const publish = newBitmap(fileCount);
  const touchTime = newBitmap(fileCount);
  const touchPerms = newBitmap(fileCount);
  const create = newBitmap(entries.length - fileCount);
  let otherIndex = 0;
  const wanted = new Set<string>();
  let files = 0;
  let bytes = 0;
  let filesUnchanged = 0;
  let filesKept = 0;
  let fileIndex = 0;
  let lackingBytes = 0;
  for (const [i, entry] of entries.entries()) {
    const rel = paths[i] ?? '';
    if (entry.kind !== 'file') {
      const o = otherIndex++;
      const verdict =
        entry.kind === 'dir'
          ? publisher.probeDir(rel)
            ? 'identical'
            : 'new'
          : await publisher.symlinkVerdict(rel, entry.linkTarget, entry.mtimeMs);
      if (verdict === 'new' || verdict === 'replace') bitmapSet(create, o);
      else if (verdict === 'kept') filesKept++;
      continue;
    }
    const k = fileIndex++;
    const { outcome, metadata } = await publisher.verdict({
      relPath: rel,
      manifest: chunkingManifest(entry),
      mode: entry.mode,
      mtimeMs: entry.mtimeMs,
    });
    if (metadata?.time === true) bitmapSet(touchTime, k);
    if (metadata?.perms === true) bitmapSet(touchPerms, k);
    if (outcome === 'identical' || outcome === 'kept') {
      if (outcome === 'identical') filesUnchanged++;
      else filesKept++;
      continue;
    }
    bitmapSet(publish, k);
    files++;
    bytes += entry.size;
    for (let c = 0; c < entry.chunkLengths.length; c++) {
      const id = chunkIdAt(entry, c);
      const key = chunkKey(id);
      if (index.has(id) || wanted.has(key)) continue;
      wanted.add(key);
      lackingBytes += entry.chunkLengths[c] ?? 0;
    }
  }
  const { keys } = uniqueChunks(entries);
  return {
    lacking: bitmapFromKeys(keys, wanted),
    uniqueCount: keys.length,
    lackingBytes,
    publish,
    touchTime,
    touchPerms,
    create,
    files,
    bytes,
    filesUnchanged,
    filesKept,
  };
}
