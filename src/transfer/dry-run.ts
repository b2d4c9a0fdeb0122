// What a dry run reports (push/pull --dry-run): from the manifest and the receiver's plan (which
// files it would publish, which directories and symlinks it would create, which distinct chunks
// it lacks), what would change and the bytes that would travel. A chunk several files need
// travels once: it is counted for the first.
import { ClawpeerError } from '../errors.js';
import { bitmapBytes, bitmapGet, type ManifestEntry } from '../protocol/messages.js';
import { textToShow } from '../protocol/wire-helpers.js';
import { chunkKey } from './plan.js';
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

/** An identical file whose mtime or permissions would be set (rsync -a's .f..t / .f...p). */
export interface DryRunTouch {
  readonly path: string;
  readonly time: boolean;
  readonly perms: boolean;
}

/** The receiver's verdicts (bitmaps; see the Want message). */
export interface DryRunVerdicts {
  /** Over the file entries: set = would be published. */
  readonly publish: Uint8Array;
  /** Over the directory and symlink entries: set = would be created or replaced; undefined = not said. */
  readonly create?: Uint8Array | undefined;
  /** Over the file entries: set = identical, its mtime / permissions would be set; undefined = none (or not said). */
  readonly touchTime?: Uint8Array | undefined;
  readonly touchPerms?: Uint8Array | undefined;
}

export interface DryRunReport {
  /** Files that would be published (new or different), manifest order. */
  readonly files: readonly DryRunFile[];
  /** Identical files whose metadata would be set, manifest order. */
  readonly touched: readonly DryRunTouch[];
  /** Directories and symlinks that would be created or replaced, manifest order; undefined when the receiver did not say (an older one). */
  readonly others?: readonly DryRunOther[];
  readonly filesUnchanged: number;
  readonly chunksToSend: number;
  readonly bytesToSend: number;
}

/**
 * The report of `entries` given the receiver's Want and its verdicts. PROTOCOL when a bitmap does
 * not fit the manifest.
 */
export function dryRunReport(
  entries: readonly ManifestEntry[],
  want: WantInfo,
  verdicts: DryRunVerdicts,
): DryRunReport {
  const { publish, create, touchTime, touchPerms } = verdicts;
  const fileEntries = entries.filter((e) => e.kind === 'file');
  for (const [name, bitmap] of [
    ['publish', publish],
    ['touch-time', touchTime],
    ['touch-perms', touchPerms],
  ] as const) {
    if (bitmap !== undefined && bitmap.length !== bitmapBytes(fileEntries.length)) {
      throw new ClawpeerError(
        'PROTOCOL',
        `dry-run ${name} bitmap has ${bitmap.length} bytes for ${fileEntries.length} files`,
      );
    }
  }
  const otherEntries = entries.filter((e) => e.kind !== 'file');
  if (create !== undefined && create.length !== bitmapBytes(otherEntries.length)) {
    throw new ClawpeerError(
      'PROTOCOL',
      `dry-run create bitmap has ${create.length} bytes for ${otherEntries.length} directories and symlinks`,
    );
  }
  // No create bitmap: an older receiver that did not say, unless there is nothing to say (a
  // bitmap over no entries is empty, and an empty field does not travel).
  const others =
    create === undefined && otherEntries.length > 0
      ? undefined
      : otherEntries.flatMap((e, k): DryRunOther[] => {
          if (create === undefined || !bitmapGet(create, k)) return [];
          return [
            e.kind === 'symlink'
              ? // Shown to the user: a pull's target is the peer's free text, blanked.
                { path: e.path, kind: 'symlink', target: textToShow(e.linkTarget) }
              : { path: e.path, kind: 'dir' },
          ];
        });
  const lacking = lackingKeys(uniqueChunks(entries).keys, want);
  const counted = new Set<string>();
  const files: DryRunFile[] = [];
  const touched: DryRunTouch[] = [];
  let filesUnchanged = 0;
  let bytesToSend = 0;
  fileEntries.forEach((entry, k) => {
    if (!bitmapGet(publish, k)) {
      filesUnchanged++;
      const time = touchTime !== undefined && bitmapGet(touchTime, k);
      const perms = touchPerms !== undefined && bitmapGet(touchPerms, k);
      if (time || perms) touched.push({ path: entry.path, time, perms });
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
  return {
    files,
    touched,
    ...(others === undefined ? {} : { others }),
    filesUnchanged,
    chunksToSend: counted.size,
    bytesToSend,
  };
}
