// What a dry run reports (push/pull --dry-run): from the manifest and the receiver's plan (which
// files it would publish, which directories and symlinks it would create, which distinct chunks
// it lacks), what would change and the bytes that would travel. A chunk several files need
// travels once: it is counted for the first.
import { ClawpeerError } from '../errors.js';
import { bitmapBytes, bitmapGet, type ManifestEntry } from '../protocol/messages.js';
import { chunkKey } from '../transfer/plan.js';
import { chunkIdAt, lackingKeys, uniqueChunks, type WantInfo } from './chunk-order.js';

export interface DryRunFile {
  readonly path: string;
  /** The file's size. */
  readonly bytes: number;
  /** Chunk bytes that would travel for it. */
  readonly sendBytes: number;
}

/** A directory or symlink that would be created (or a symlink replaced). */
export interface DryRunOther {
  readonly path: string;
  readonly kind: 'dir' | 'symlink';
  /** Symlinks: the target. */
  readonly target?: string;
}

export interface DryRunReport {
  /** Files that would be published (new or different), manifest order. */
  readonly files: readonly DryRunFile[];
  /** Directories and symlinks that would be created or replaced, manifest order; undefined when the receiver did not say (an older one). */
  readonly others?: readonly DryRunOther[];
  readonly filesUnchanged: number;
  readonly chunksToSend: number;
  readonly bytesToSend: number;
}

/**
 * The report of `entries` given the receiver's Want, `publish` (bitmap over the file entries,
 * set = would be published) and `create` (over the directory and symlink entries, set = would be
 * created or replaced; undefined: not said). PROTOCOL when a bitmap does not fit the manifest.
 */
export function dryRunReport(entries: readonly ManifestEntry[], want: WantInfo, publish: Uint8Array, create?: Uint8Array): DryRunReport {
  const fileEntries = entries.filter((e) => e.kind === 'file');
  if (publish.length !== bitmapBytes(fileEntries.length)) {
    throw new ClawpeerError('PROTOCOL', `dry-run publish bitmap has ${publish.length} bytes for ${fileEntries.length} files`);
  }
  const otherEntries = entries.filter((e) => e.kind !== 'file');
  if (create !== undefined && create.length !== bitmapBytes(otherEntries.length)) {
    throw new ClawpeerError('PROTOCOL', `dry-run create bitmap has ${create.length} bytes for ${otherEntries.length} directories and symlinks`);
  }
  // No create bitmap: an older receiver that did not say, unless there is nothing to say (a
  // bitmap over no entries is empty, and an empty field does not travel).
  const others = create === undefined && otherEntries.length > 0 ? undefined : otherEntries.flatMap((e, k): DryRunOther[] => {
    if (create === undefined || !bitmapGet(create, k)) return [];
    return [e.kind === 'symlink' ? { path: e.path, kind: 'symlink', target: e.linkTarget } : { path: e.path, kind: 'dir' }];
  });
  const lacking = lackingKeys(uniqueChunks(entries).keys, want);
  const counted = new Set<string>();
  const files: DryRunFile[] = [];
  let filesUnchanged = 0;
  let bytesToSend = 0;
  fileEntries.forEach((entry, k) => {
    if (!bitmapGet(publish, k)) {
      filesUnchanged++;
      return;
    }
    let sendBytes = 0;
    entry.chunkLengths.forEach((length, c) => {
      const key = chunkKey(chunkIdAt(entry, c));
      if (!lacking.has(key) || counted.has(key)) return;
      counted.add(key);
      sendBytes += length;
    });
    bytesToSend += sendBytes;
    files.push({ path: entry.path, bytes: entry.size, sendBytes });
  });
  return { files, ...(others === undefined ? {} : { others }), filesUnchanged, chunksToSend: counted.size, bytesToSend };
}
