// The sending side's view of a local file or tree: scanned, chunked and hashed into the
// manifest entries a transfer announces, with where each file's bytes live on disk.
import { lstat } from 'node:fs/promises';
import path from 'node:path';
import { ClawpeerError } from '../errors.js';
import type { ChunkingParams } from '../chunking/fastcdc.js';
import { manifestFromFile } from '../file-chunking/file-chunker.js';
import type { FileManifest } from '../chunking/manifest.js';
import type { ManifestEntry, UnreadablePath } from '../protocol/messages.js';
import { belowTransferRoot, type ExcludeRules } from '../transfer/exclude.js';
import type { ModeChange } from '../transfer/chmod.js';
import { ancestorsOf } from '../transfer/file-list.js';
import { LOCAL_NAME_RULES } from '../transfer/paths.js';
import type { Logger } from '../logger.js';
import { msToNs, type FileKey } from '../store/file-key.js';
import { isInternalDirName, isTempFileName } from '../store/internal-names.js';
import { scanTree, type ScanTreeOptions } from '../store/tree-scan.js';
import { hasVanished } from '../support/path-refusal.js';
import { isUnreadable, relativeEntryPath, unreadableReason } from './unreadable-entries.js';

export interface SourceFile {
  readonly entryIndex: number;
  readonly localPath: string;
  readonly manifest: FileManifest;
  /** scanSource's: the file's key when it was scanned (before hashing), and when hashing began (source-removal.ts checks both). */
  readonly key?: FileKey;
  readonly hashedAtNs?: bigint;
}

export interface TransferSource {
  /** scanSource's: where entry `i` lives here (push --remove-source-files removes what was sent). */
  readonly localPathOf?: (entryIndex: number) => string;
  readonly entries: ManifestEntry[];
  /** Files by entry index (dirs and symlinks have none). */
  readonly files: Map<number, SourceFile>;
  readonly totalBytes: number;
}

export interface ScanSourceOptions {
  readonly chunking: ChunkingParams;
  /** `null`: list a directory's contents at the top level (pulling a whole share). */
  readonly rootName?: string | null;
  /** Paths (relative, as scanned) to leave out: the share's internal `.clawpeer` files. */
  readonly exclude?: (relPath: string) => boolean;
  /** The user's --exclude patterns, matched relative to the scanned directory (not entered when a directory matches). */
  readonly excludeRules?: ExcludeRules;
  /** --min-size / --max-size: regular files outside these bounds are left out (rsync's). */
  readonly sizes?: SizeRange;
  /** --chmod: the modes files and directories are announced with (transfer/chmod.ts). */
  readonly modeChange?: ModeChange;
  /** -L / --copy-unsafe-links: symlinks sent as what they point to (tree-scan.ts copyLinks). */
  readonly copyLinks?: 'all' | 'unsafe';
  /** With copyLinks: the real path followed links must stay inside (a listener's share; tree-scan.ts followWithin). */
  readonly followWithin?: string;
  readonly log: Logger;
  readonly signal?: AbortSignal;
  readonly onFileHashed?: (bytes: number) => void;
  /**
   * An entry below the scanned root that cannot be read (unreadable-entries.ts): left out and
   * told here, the scan goes on. Without it the first one fails the scan, as does the root.
   */
  readonly onUnreadable?: (entry: UnreadablePath) => void;
}

/** Bounds on the size of regular files sent (bytes, inclusive; rsync --min-size/--max-size); either may be absent. */
export interface SizeRange {
  readonly min?: number;
  readonly max?: number;
}

/** True when a file of `size` bytes lies outside `range`. */
export function outsideSizeRange(range: SizeRange | undefined, size: number): boolean {
  return (
    range !== undefined &&
    ((range.min !== undefined && size < range.min) || (range.max !== undefined && size > range.max))
  );
}

function packIds(manifest: FileManifest): { chunkIds: Uint8Array; chunkLengths: number[] } {
  const chunkIds = new Uint8Array(manifest.chunks.length * 32);
  manifest.chunks.forEach((c, i) => chunkIds.set(c.id, i * 32));
  return { chunkIds, chunkLengths: manifest.chunks.map((c) => c.length) };
}

/** Scans and hashes `localPath` (a file or a directory tree). Escaping symlinks, sockets, FIFOs and devices below it are skipped with a warning. */
export async function scanSource(localPath: string, options: ScanSourceOptions): Promise<TransferSource> {
  const absRoot = path.resolve(localPath);
  // relPaths start with the root's name (or, with rootName null, are inside the root).
  const base = options.rootName === null ? absRoot : path.dirname(absRoot);
  const out = newCollected();
  await collect(out, absRoot, { base, rulesOnWholePath: options.rootName === null }, options);
  return collected(out, underRoot(absRoot, options.rootName));
}

/**
 * Scans and hashes what a --files-from list names (file-list.ts; a push's here, a pull's on the
 * listener): each path is relative to `baseDir` and keeps that relative path (rsync's implied
 * --relative), a directory whole; the directories it lies in travel as directory entries
 * (rsync's implied dirs) with their own mode and mtime, whatever --exclude says of them.
 * --exclude rules match paths below `baseDir`. USAGE naming the path for one that does not
 * exist or lies below something that is not a directory (a symlink included), PATH_INVALID for
 * clawpeer's own state; messages name the base as `baseName` (a listener: its share and path,
 * never its local path).
 */
export async function scanListed(
  baseDir: string,
  relPaths: readonly string[],
  options: ScanSourceOptions,
  baseName = baseDir,
): Promise<TransferSource> {
  const base = path.resolve(baseDir);
  if (!(await lstat(base).catch(() => undefined))?.isDirectory())
    throw new ClawpeerError(
      'USAGE',
      `--files-from: ${baseName} is not a directory (the listed paths are relative to it)`,
    );
  const seen = new Set<string>();
  const out = newCollected(seen);
  // Each path is scanned once, and a path inside a listed directory that is walked whole not on
  // its own: a list repeating one big directory thousands of times walked it as often.
  const unique = [...new Set(relPaths)];
  const walkedWhole = new Set<string>();
  for (const rel of unique) {
    options.signal?.throwIfAborted();
    const st = await lstat(path.join(base, ...rel.split('/'))).catch(() => undefined);
    if (st?.isDirectory() === true && options.excludeRules?.excludes(rel, true) !== true) walkedWhole.add(rel);
  }
  for (const rel of unique) {
    if (rel.split('/').some((segment) => isInternalDirName(segment) || isTempFileName(segment))) {
      throw new ClawpeerError(
        'PATH_INVALID',
        `--files-from lists ${rel}: .clawpeer directories and temp files are clawpeer's own state, never sent`,
      );
    }
    if (ancestorsOf(rel).some((dir) => walkedWhole.has(dir))) continue;
    for (const dir of ancestorsOf(rel)) {
      if (seen.has(dir)) continue;
      const st = await lstat(path.join(base, ...dir.split('/'))).catch(() => undefined);
      if (st?.isDirectory() !== true)
        throw new ClawpeerError(
          'USAGE',
          `--files-from lists ${rel}, but ${dir} ${st === undefined ? 'does not exist' : 'is not a directory'} in ${baseName}`,
        );
      seen.add(dir);
      out.entries.push(dirEntry(dir, announcedMode(options, Number(st.mode), 'dir'), Math.floor(st.mtimeMs)));
    }
    const abs = path.join(base, ...rel.split('/'));
    const st = await lstat(abs).catch(() => undefined);
    if (st === undefined)
      throw new ClawpeerError('USAGE', `--files-from lists ${rel}, which does not exist in ${baseName}`);
    // As rsync: the rules see listed paths too, and a listed directory they exclude stays whole
    // (collect() checks the entries below a root, and a listed file, but not a root directory).
    if (st.isDirectory() && options.excludeRules?.excludes(rel, true) === true) continue;
    await collect(out, abs, { base, rulesOnWholePath: true, rootName: rel, symlinkTopDepth: 0 }, options);
  }
  return collected(out, (rel) => path.join(base, ...rel.split('/')));
}

interface Collected {
  readonly entries: ManifestEntry[];
  readonly files: Map<number, SourceFile>;
  /** Several roots (a files-from list): the entry paths so far, so a path is announced once. One root needs no such set (a million-file tree would pay ~100 MB for it). */
  readonly paths?: Set<string>;
  /** Entry index -> its path on disk, for the entries whose path there is not NFC (tree-scan localPath). */
  readonly onDisk: Map<number, string>;
  totalBytes: number;
}

const newCollected = (paths?: Set<string>): Collected => ({
  entries: [],
  files: new Map(),
  onDisk: new Map(),
  ...(paths === undefined ? {} : { paths }),
  totalBytes: 0,
});

function collected(out: Collected, localOf: (relPath: string) => string): TransferSource {
  const { entries, files, totalBytes, onDisk } = out;
  return { localPathOf: (i) => onDisk.get(i) ?? localOf(entries[i]?.path ?? ''), entries, files, totalBytes };
}

/**
 * Where an entry of a scan of `absRoot` is on disk: the root as it is there, then the names
 * below it. A root whose name is NFD on disk (Linux keeps a name's bytes; `send café.txt` typed
 * on a Mac) has an NFC relPath (transfer/paths.ts): rebuilding its path from that would name a
 * file that does not exist. `rootName` as tree-scan takes it (null: relPaths are inside the root).
 */
function underRoot(absRoot: string, rootName: string | null | undefined): (relPath: string) => string {
  const depth = rootName === null ? 0 : (rootName ?? path.basename(absRoot)).split('/').length;
  return (relPath) => path.join(absRoot, ...relPath.split('/').slice(depth));
}

/** The permission bits an entry is announced with: its own, through --chmod when given. */
function announcedMode(options: ScanSourceOptions, mode: number, kind: 'file' | 'dir'): number {
  const bits = mode & 0o777;
  return options.modeChange === undefined ? bits : options.modeChange(bits, kind);
}

function dirEntry(relPath: string, mode: number, mtimeMs: number): ManifestEntry {
  return {
    path: relPath,
    kind: 'dir',
    size: 0,
    mode,
    mtimeMs,
    linkTarget: '',
    root: new Uint8Array(0),
    chunkIds: new Uint8Array(0),
    chunkLengths: [],
  };
}

interface CollectPlan {
  /** The directory entry relPaths are relative to. */
  readonly base: string;
  /** The user's rules see whole relPaths (a directory's contents, a files-from list), not the part below the scanned root. */
  readonly rulesOnWholePath: boolean;
  /** relPath of the scanned root (tree-scan's rootName); default: options.rootName, then its base name. */
  readonly rootName?: string;
  readonly symlinkTopDepth?: number;
}

/** Scans and hashes `absRoot` into `out`, skipping paths already there. */
async function collect(out: Collected, absRoot: string, plan: CollectPlan, options: ScanSourceOptions): Promise<void> {
  const rules = options.excludeRules;
  const excluded = (rel: string, isDir: boolean): boolean =>
    rules !== undefined && rules.excludes(belowTransferRoot(rel, plan.rulesOnWholePath), isDir);
  const rootName = plan.rootName ?? options.rootName;
  const localOf = underRoot(absRoot, rootName);
  // What cannot be read is left out and the rest sent, when the caller names it; the root
  // itself still fails the scan: nothing else would be sent.
  const { onUnreadable } = options;
  const leaveOut = (local: string, error: Error): void => {
    if (onUnreadable === undefined || local === absRoot || !isUnreadable(error)) throw error;
    if (hasVanished(error)) {
      options.log.warn('skipping an entry that vanished while it was scanned', { path: local });
      return;
    }
    const rel = relativeEntryPath(plan.base, local);
    onUnreadable({ path: rel, error: unreadableReason(local, rel, error) });
  };
  // clawpeer's own state never travels: a synced folder's `.clawpeer/` (its revision log and
  // partials are about this machine) and temp files of a publish in progress.
  const scanOptions: ScanTreeOptions = {
    skipDir: (rel) => isInternalDirName(path.posix.basename(rel)) || excluded(rel, true),
    // rsync's "skipping non-regular file": one socket or FIFO in a tree does not stop the transfer.
    onSpecialSkipped: (local, what) => options.log.warn('skipping a non-regular file', { path: local, kind: what }),
    // As rsync: `aux.c` or `notes.` is sent from where it can be read (anywhere but Windows).
    nameRules: LOCAL_NAME_RULES,
    ...(rootName !== undefined ? { rootName } : {}),
    ...(plan.symlinkTopDepth !== undefined ? { symlinkTopDepth: plan.symlinkTopDepth } : {}),
    ...(options.copyLinks !== undefined ? { copyLinks: options.copyLinks } : {}),
    ...(options.followWithin !== undefined ? { followWithin: options.followWithin } : {}),
    ...(options.signal !== undefined ? { signal: options.signal } : {}),
    ...(onUnreadable === undefined ? {} : { onIssue: (issue) => leaveOut(issue.localPath, issue.error) }),
  };
  const { entries, files } = out;
  for await (const e of scanTree(absRoot, scanOptions)) {
    if (out.paths?.has(e.relPath) === true) continue;
    if (options.exclude?.(e.relPath) === true || isTempFileName(path.posix.basename(e.relPath))) continue;
    if (e.kind !== 'dir' && excluded(e.relPath, false)) continue;
    if (e.kind === 'file' && outsideSizeRange(options.sizes, e.size)) continue;
    const mtimeMs = Math.floor(e.mtimeMs);
    const mode = e.kind === 'symlink' ? e.mode & 0o777 : announcedMode(options, e.mode, e.kind);
    const index = entries.length;
    switch (e.kind) {
      case 'dir':
        entries.push(dirEntry(e.relPath, mode, mtimeMs));
        break;
      case 'symlink':
        if (e.linkEscapes === true) {
          // A listener's pull -L got here only for a link whose end is outside the share.
          const why =
            options.copyLinks !== undefined && options.followWithin !== undefined
              ? 'leads out of the share: not sent, not even with -L'
              : 'points outside the tree (--copy-unsafe-links sends what it points to)';
          options.log.warn(`skipping a symlink that ${why}`, { path: e.relPath, target: e.linkTarget ?? '' });
          continue;
        }
        entries.push({
          path: e.relPath,
          kind: 'symlink',
          size: 0,
          mode,
          mtimeMs,
          linkTarget: e.linkTarget ?? '',
          root: new Uint8Array(0),
          chunkIds: new Uint8Array(0),
          chunkLengths: [],
        });
        break;
      case 'file': {
        const local = e.localPath ?? localOf(e.relPath);
        const hashedAtNs = msToNs(Date.now());
        let manifest: FileManifest;
        try {
          manifest = await manifestFromFile(
            local,
            options.chunking,
            options.signal !== undefined ? { signal: options.signal } : {},
          );
        } catch (err) {
          if (!(err instanceof Error)) throw err;
          leaveOut(local, err);
          continue;
        }
        options.onFileHashed?.(manifest.size);
        files.set(entries.length, {
          entryIndex: entries.length,
          localPath: local,
          manifest,
          key: { size: e.size, mtimeNs: e.mtimeNs, ino: e.ino },
          hashedAtNs,
        });
        entries.push({
          path: e.relPath,
          kind: 'file',
          size: manifest.size,
          mode,
          mtimeMs,
          linkTarget: '',
          root: manifest.root,
          ...packIds(manifest),
        });
        out.totalBytes += manifest.size;
        break;
      }
      default: {
        const unreachable: never = e.kind;
        throw new ClawpeerError('INTERNAL', `unknown entry kind ${String(unreachable)}`);
      }
    }
    if (e.localPath !== undefined) out.onDisk.set(index, e.localPath);
    out.paths?.add(e.relPath);
  }
}

/**
 * Scans several local paths as one transfer (`push a b dir PEER:`): each lands under its own
 * name, as with rsync and scp. Two sources with the same name would land on each other: USAGE.
 */
export async function scanSources(localPaths: readonly string[], options: ScanSourceOptions): Promise<TransferSource> {
  const first = localPaths[0];
  if (localPaths.length === 1 && first !== undefined) return scanSource(first, options);
  const byName = new Map<string, string>();
  for (const p of localPaths) {
    const name = path.basename(path.resolve(p));
    const other = byName.get(name);
    if (other !== undefined)
      throw new ClawpeerError('USAGE', `${other} and ${p} would both land as ${name}: push them separately`);
    byName.set(name, p);
  }
  const parts: { offset: number; source: TransferSource }[] = [];
  const entries: ManifestEntry[] = [];
  const files = new Map<number, SourceFile>();
  let totalBytes = 0;
  for (const p of localPaths) {
    const source = await scanSource(p, options);
    const offset = entries.length;
    parts.push({ offset, source });
    entries.push(...source.entries);
    for (const [i, f] of source.files) files.set(offset + i, { ...f, entryIndex: offset + i });
    totalBytes += source.totalBytes;
  }
  const localPathOf = (i: number): string => {
    const part = parts.findLast((x) => x.offset <= i);
    const of = part?.source.localPathOf;
    if (part === undefined || of === undefined) throw new TypeError(`no source holds entry ${i}`);
    return of(i - part.offset);
  };
  return { localPathOf, entries, files, totalBytes };
}
