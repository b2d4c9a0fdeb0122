// Which files of a synced folder's fetch land when they do not all fit on the disk (Syncthing's
// "insufficient space" per file): a sync that refused everything for one file too big (a 10 GB
// video) never synced the small documents beside it either, at every retry. The rule is the
// simplest one that lets small files after a big one land: in the fetch's order, each file that
// still fits in what is left of the room is taken, each that does not is skipped (left for the
// next sync, which tries it again once space is freed). A push keeps its all-or-nothing check.
import { lstatSync } from 'node:fs';
import path from 'node:path';
import { count, human, UNSAFE_TEXT } from '../format.js';
import {
  MAX_ENTRY_PATH_BYTES,
  MAX_NO_SPACE_PATHS_LISTED,
  type ManifestEntry,
  type SyncNoSpace,
} from '../protocol/messages.js';
import { LONE_SURROGATE } from '../protocol/wire-limits.js';
import { UINT32_MAX } from '../protocol/wire-helpers.js';
import { ensureFreeSpace, fileSystemSpace, fitsFreeSpace, MIN_FREE_FRACTION } from '../store/free-space.js';
import type { PartialStore } from '../store/partial-store.js';

/**
 * For each of `sizes` (bytes each file still has to write, in order), whether it is taken: it
 * fits in `room` minus what the files taken before it write. Never more than `room` in all.
 */
export function takeWhatFits(sizes: readonly number[], room: number): boolean[] {
  let left = Math.max(0, room);
  return sizes.map((size) => {
    if (size > left) return false;
    left -= size;
    return true;
  });
}

/** The files of a fetch that did not fit on the disk, and the numbers behind it. */
export interface NoSpaceReport {
  /** Destination paths left for the next sync, in order (the wire and status keep MAX_NO_SPACE_PATHS). */
  readonly paths: readonly string[];
  /** How many files were left out in all (`paths` may be cut short on the wire). */
  readonly files: number;
  /** Bytes those files would have written. */
  readonly needBytes: number;
  /** Bytes free on the disk when it was checked. */
  readonly freeBytes: number;
  /** Of `freeBytes`, the margin that stays free (1% of the file system). */
  readonly keepBytes: number;
}

/** Paths a NoSpaceReport names on the wire and in a CLI's record: enough to name, bounded. */
export const MAX_NO_SPACE_PATHS = MAX_NO_SPACE_PATHS_LISTED;

/**
 * SyncDone's `noSpace` for `r` (nothing when none): its first paths that may be shown (a name
 * with a control or bidi character is counted, not listed: the wire refuses it).
 */
export function noSpaceToTell(r: NoSpaceReport | undefined): { noSpace?: SyncNoSpace } {
  if (r === undefined) return {};
  const showable = (p: string): boolean =>
    !UNSAFE_TEXT.test(p) && !LONE_SURROGATE.test(p) && Buffer.byteLength(p) <= MAX_ENTRY_PATH_BYTES;
  const paths = r.paths.filter(showable).slice(0, MAX_NO_SPACE_PATHS);
  // A peer's manifest may declare files of up to 2^53-1 bytes each: their sum, past what the
  // wire carries, made the SyncDone fail to encode and the whole sync with it. Said as the most.
  const most = (n: number, max: number): number => Math.min(Math.max(0, n), max);
  const bytes = (n: number): number => most(n, Number.MAX_SAFE_INTEGER);
  return {
    noSpace: {
      files: most(r.files, UINT32_MAX),
      needBytes: bytes(r.needBytes),
      freeBytes: bytes(r.freeBytes),
      keepBytes: bytes(r.keepBytes),
      paths,
    },
  };
}

/** "3 files (12.0 MiB) do not fit ... : a.bin, b.bin, ..." for a log line, the CLI or status. */
export function noSpaceText(r: NoSpaceReport, where: string): string {
  const named = r.paths.slice(0, 2).join(', ') + (r.files > 2 ? ', ...' : '');
  return (
    `not enough disk space ${where} for ${count(r.files, 'file')} (${human(r.needBytes)} needed, ` +
    `${human(r.freeBytes)} free, of which ${human(r.keepBytes)} stay free): ${named}`
  );
}

/**
 * Picks, stage by stage, what of a synced folder's fetch fits in its folder's disk, and keeps
 * what it left out for the report. When everything fits, everything is taken: the same answer
 * as free-space.ts ensureFreeSpace's, which a push keeps using.
 */
export class SpaceShortage {
  readonly #paths: string[] = [];
  #files = 0;
  #needBytes = 0;
  #freeBytes = 0;
  #keepBytes = 0;

  /**
   * Of `items` (each still writing `bytesOf` bytes, in order), the ones taken (takeWhatFits over
   * `dir`'s room now); the rest are recorded as left out. A file system that cannot say how much
   * is free (statfs unsupported) takes everything: its writes report ENOSPC then.
   */
  async pick<T>(
    dir: string,
    items: readonly T[],
    bytesOf: (item: T) => number,
    pathOf: (item: T) => string,
  ): Promise<Set<T>> {
    const space = await fileSystemSpace(dir).catch(() => undefined);
    if (space === undefined) return new Set(items);
    const keep = Math.ceil(space.totalBytes * MIN_FREE_FRACTION);
    const taken = takeWhatFits(items.map(bytesOf), space.availableBytes - keep);
    const out = new Set<T>();
    items.forEach((item, i) => {
      if (taken[i] === true) {
        out.add(item);
        return;
      }
      this.#files++;
      this.#needBytes += bytesOf(item);
      this.#paths.push(pathOf(item));
    });
    if (out.size < items.length) {
      this.#freeBytes = space.availableBytes;
      this.#keepBytes = keep;
    }
    return out;
  }

  /** What was left out, or undefined when everything fitted. */
  report(): NoSpaceReport | undefined {
    if (this.#files === 0) return undefined;
    return {
      paths: this.#paths,
      files: this.#files,
      needBytes: this.#needBytes,
      freeBytes: this.#freeBytes,
      keepBytes: this.#keepBytes,
    };
  }
}

/** What checkDeclaredSpace looks at: the destination, the manifest's entries and where each lands. */
export interface DeclaredFiles {
  readonly root: string;
  readonly name?: string;
  readonly entries: readonly ManifestEntry[];
  /** Each entry's destination path, relative to `root`. */
  readonly paths: readonly string[];
  readonly partials: PartialStore;
}

/**
 * A receiver's first check, on the manifest's declared sizes: IO (no room) when its files cannot
 * fit even counting none that is already here or partly received (those may need nothing), so a
 * lying manifest (thousands of huge files) creates nothing; the receiver checks again with what
 * staging found is really missing. With `shortage` (a synced folder's fetch) nothing throws:
 * returns the entries (by index) left out, on the same counts.
 */
export async function checkDeclaredSpace(d: DeclaredFiles, shortage: SpaceShortage | undefined): Promise<Set<number>> {
  let declared = 0;
  for (const e of d.entries) if (e.kind === 'file') declared += e.size;
  if (await fitsFreeSpace(d.root, declared)) return new Set();
  const least: { i: number; size: number }[] = [];
  for (const [i, e] of d.entries.entries()) {
    if (e.kind !== 'file') continue;
    const rel = d.paths[i] ?? '';
    const here =
      d.partials.holds({ relPath: rel, root: e.root }) ||
      lstatSync(path.join(d.root, ...rel.split('/')), { throwIfNoEntry: false }) !== undefined;
    least.push({ i, size: here ? 0 : e.size });
  }
  if (shortage !== undefined) {
    const fits = await shortage.pick(
      d.root,
      least,
      (f) => f.size,
      (f) => d.paths[f.i] ?? '',
    );
    return new Set(least.filter((f) => !fits.has(f)).map((f) => f.i));
  }
  const total = least.reduce((sum, f) => sum + f.size, 0);
  await ensureFreeSpace(d.root, total, d.name ?? d.root);
  return new Set();
}
