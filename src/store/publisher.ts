// Atomic publish of received files into a share. Invariants: no partial file ever appears at a
// final path, nothing is written outside the share (confined-dirs.ts checks every directory on the
// way), and an existing different file is not replaced unless forced. How and why: ARCHITECTURE.md,
// "Publishing into a share". Parts: staged-file.ts (a file being assembled), publish-types.ts
// (options and inputs), temp-files.ts (temp names and the stale temp sweep), existing-policy.ts
// (what to do about what is at a final path), publish-symlinks.ts (symlinks).

import { chmod, copyFile, lstat, open, rename, rm, utimes, type FileHandle } from 'node:fs/promises';
import {
  closeSync,
  constants as fsConstants,
  fchmodSync,
  fstatSync,
  futimesSync,
  linkSync,
  lstatSync,
  openSync,
  realpathSync,
  renameSync,
  statSync,
  unlinkSync,
  type Stats,
} from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { ClawpeerError, ioError } from '../errors.js';
import { bytesEqual } from '../chunking/blake3.js';
import { manifestFromFile } from '../file-chunking/file-chunker.js';
import { verifyManifest, type FileManifest } from '../chunking/manifest.js';
import { normalizeSharePath } from '../transfer/paths.js';
import { Backups } from './backups.js';
import { forEachBounded } from '../support/for-each-bounded.js';
import type { Keeper } from './keeper.js';
import { syncDir } from './partial-store.js';
import { isInternalPath } from './internal-names.js';
import { symlinkTargetIsConfined } from './tree-scan.js';
import { metadataToSet, outcomeOf, type Existing } from './existing-policy.js';
import { placeSymlink, symlinkEscapes, symlinkVerdictIn, type SymlinkPlace } from './publish-symlinks.js';
import { releaseTempName, tempNameFor } from './temp-files.js';
import { ConfinedDirs } from './confined-dirs.js';
import type { PublishFile, PublishDir, ExistingPolicy, PublisherOptions, MetadataSet } from './publish-types.js';
import { pathRefusal } from '../support/path-refusal.js';
import { stagingHandles } from '../support/reopenable-file.js';
import { IN_MEMORY_MAX_BYTES, PUBLISH_MODE_MASK, toSeconds, StagedFile } from './staged-file.js';

/**
 * fsyncs in flight at once during a batch commit: one per thread of the pool
 * bin/thread-pool.cjs sizes, so they share journal commits.
 */
export const COMMIT_FSYNC_CONCURRENCY = 32;
/**
 * A commit creates its in-memory files' temp files with synchronous calls and lets the event
 * loop run after each slice of this many ms (so acks of chunks already written go out). On the
 * thread pool, each of the four calls per file cost a wake-up of a pool thread, and that doubled
 * the CPU a file cost (4 KiB files here: 310-800 us against 75-400 us synchronous; the spread is
 * ext4's inode allocator after many deletions); a batch in one go blocked the loop 29-121 ms.
 */
const WRITE_OUT_SLICE_MS = 2;
/** Errors of fchmod/futimes that mean "this file may not take it", not a failing disk. */
const METADATA_REFUSED = new Set(['EPERM', 'EACCES', 'EROFS', 'ENOTSUP', 'EOPNOTSUPP']);

/** Publishes files, symlinks and directory metadata into one share. */
export class Publisher {
  readonly shareRoot: string;
  readonly #options: PublisherOptions;
  readonly #policy: ExistingPolicy;
  // Directories whose entries changed since their last fsync.
  readonly #dirtyDirs = new Set<string>();
  readonly #dirs: ConfinedDirs;
  readonly #open = new Set<StagedFile>();
  /** --backup's keeper (backups.ts), which --delete uses too; undefined without the option. */
  readonly backups: Backups | undefined;
  readonly #keeper: Keeper | undefined;
  readonly #fsync: boolean;
  /** fsync calls made (files and directories): what --fsync=none saves. */
  fsyncs = 0;
  readonly #symlinkPlace: SymlinkPlace;

  private constructor(shareRoot: string, options: PublisherOptions) {
    this.shareRoot = shareRoot;
    this.#options = options;
    this.#policy = options.existing ?? (options.force === true ? 'replace' : 'refuse');
    this.#dirs = new ConfinedDirs(shareRoot, this.#dirtyDirs, options.guard);
    const backup = options.backup;
    this.backups =
      backup === undefined
        ? undefined
        : new Backups(backup.plan, backup.destBase, {
            dirAt: (relDir) => this.#dirs.dir(relDir, true, true),
            tempName: tempNameFor,
          });
    this.#keeper = this.backups ?? options.keeper;
    this.#fsync = options.fsync !== 'none';
    this.#symlinkPlace = { shareRoot, policy: this.#policy, keepReplaced: (rel, abs) => this.#keepReplaced(rel, abs) };
  }

  /** Before a file or symlink at `finalPath` is replaced: the backup, or the keeper's copy. */
  async #keepReplaced(relPath: string, finalPath: string): Promise<void> {
    await this.#keeper?.keep(relPath, finalPath, 'replaced');
  }

  /** Just before a staged file is renamed over `finalPath`: the caller's last look (beforeReplace), then #keepReplaced. */
  async #beforeRename(relPath: string, finalPath: string): Promise<void> {
    await this.#options.beforeReplace?.(relPath, finalPath);
    await this.#keepReplaced(relPath, finalPath);
  }

  /** Opens a publisher. SHARE_READ_ONLY for a read-only share; IO when the root is unusable. */
  static async open(options: PublisherOptions): Promise<Publisher> {
    if (options.readOnly === true) {
      throw new ClawpeerError('SHARE_READ_ONLY', `share ${options.shareRoot} is read-only: refusing to write into it`);
    }
    let root: string;
    try {
      // Synchronous, as the directory checks: two awaited calls took 2.7-3.7 ms before a push.
      root = realpathSync.native(options.shareRoot);
      if (!statSync(root).isDirectory())
        throw new ClawpeerError('IO', `share root ${options.shareRoot} is not a directory`);
    } catch (err) {
      throw ioError('open share', options.shareRoot, err);
    }
    return new Publisher(root, options);
  }

  #checkAborted(): void {
    const signal = this.#options.signal;
    if (signal?.aborted === true) throw new ClawpeerError('ABORTED', 'publish aborted', { cause: signal.reason });
  }

  /** Without fsync there is no commit-time flush for early writeback to shorten. */
  #earlyWritebackBytes(): number | undefined {
    return this.#fsync ? this.#options.earlyWritebackBytes : Number.POSITIVE_INFINITY;
  }

  /** Normalises and refuses internal names. */
  #normalize(relPath: string): string {
    const rel = normalizeSharePath(relPath, this.#options.nameRules);
    if (isInternalPath(rel))
      throw new ClawpeerError('PATH_INVALID', `path ${JSON.stringify(relPath)} refused: it names clawpeer's own state`);
    return rel;
  }

  /**
   * Checks, creating nothing, that directory `relPath` could be made (dry runs): throws what
   * makeDir would; true when it exists already.
   */
  probeDir(relPath: string): boolean {
    this.#checkAborted();
    return this.#dirs.walk(this.#normalize(relPath), 'probe') !== undefined;
  }

  /** Creates directory `relPath` (and missing parents) inside the share. */
  async makeDir(relPath: string): Promise<void> {
    this.#checkAborted();
    this.#dirs.dir(this.#normalize(relPath), true);
  }

  async #rootOf(rel: string, abs: string): Promise<Uint8Array> {
    const st = await lstat(abs, { bigint: true });
    const known = this.#options.knownRoot?.(rel, st);
    if (known !== undefined) return known;
    const manifest = await manifestFromFile(
      abs,
      this.#options.chunking,
      this.#options.signal === undefined ? {} : { signal: this.#options.signal },
    );
    return manifest.root;
  }

  async #existing(rel: string, abs: string, manifest: FileManifest): Promise<Existing> {
    let st: Stats | undefined;
    try {
      st = lstatSync(abs, { throwIfNoEntry: false }); // synchronous: one per staged file
    } catch (err) {
      throw ioError('inspect', abs, err);
    }
    if (st === undefined) return { kind: 'absent' };
    if (st.isDirectory()) {
      throw new ClawpeerError(
        'FILE_EXISTS',
        `${abs} is a directory where a file should be (not replaced, even with --force)`,
      );
    }
    const { mtimeMs } = st;
    if (!st.isFile()) return { kind: 'different', what: st.isSymbolicLink() ? 'a symlink' : 'a special file', mtimeMs };
    if (st.size !== manifest.size)
      return { kind: 'different', what: `a different file (${st.size} bytes, incoming ${manifest.size})`, mtimeMs };
    const root = await this.#rootOf(rel, abs);
    return bytesEqual(root, manifest.root)
      ? { kind: 'identical', mode: st.mode & PUBLISH_MODE_MASK, mtimeMs, atime: st.atime }
      : { kind: 'different', what: 'a file with different content', mtimeMs };
  }

  /** What to do about what is at `abs` for a file modified at `incomingMtimeMs` (final-path-verdicts.ts). */
  #outcome(existing: Existing, abs: string, incomingMtimeMs: number): 'new' | 'identical' | 'kept' | 'replace' {
    return outcomeOf(this.#policy, existing, abs, incomingMtimeMs);
  }

  #metadataToSet(existing: Extract<Existing, { kind: 'identical' }>, file: PublishFile): MetadataSet | undefined {
    return metadataToSet(this.#policy, existing, file);
  }

  /**
   * What stageFile would do with `file`, creating nothing: 'new', 'identical' (no content to
   * write; `metadata`: the mtime or permissions it would set), 'replace' or 'kept' (the
   * existing-file policy); throws what stageFile would (FILE_EXISTS, PATH_INVALID, PROTOCOL).
   * For dry runs.
   */
  async verdict(
    file: PublishFile,
  ): Promise<{ outcome: 'new' | 'identical' | 'replace' | 'kept'; metadata?: MetadataSet }> {
    const { rel, relDir } = this.#checkedFile(file);
    const dirAbs = this.#dirs.walk(relDir, 'probe');
    if (dirAbs === undefined) return { outcome: 'new' };
    const finalPath = path.join(dirAbs, path.posix.basename(rel));
    const existing = await this.#existing(rel, finalPath, file.manifest);
    const metadata = existing.kind === 'identical' ? this.#metadataToSet(existing, file) : undefined;
    return {
      outcome: this.#outcome(existing, finalPath, file.mtimeMs),
      ...(metadata === undefined ? {} : { metadata }),
    };
  }

  /** Sets what #metadataToSet says on an identical file; what was set. */
  #refreshMetadata(
    abs: string,
    rel: string,
    existing: Extract<Existing, { kind: 'identical' }>,
    file: PublishFile,
  ): MetadataSet | undefined {
    const plan = this.#metadataToSet(existing, file);
    if (plan === undefined) return undefined;
    // Through a descriptor opened without following links: the path was a regular file when it
    // was hashed, and a link put there since must not lead the change out of the share.
    let fd: number | undefined;
    for (const access of [fsConstants.O_RDONLY, fsConstants.O_WRONLY]) {
      try {
        fd = openSync(abs, access | fsConstants.O_NOFOLLOW);
        break;
      } catch {
        // Not readable (mode 0o200): try writable; a file we can do neither with keeps its metadata.
      }
    }
    if (fd === undefined) return undefined;
    try {
      if (!fstatSync(fd).isFile()) return undefined;
      const perms =
        plan.perms && this.#setMetadata(abs, rel, 'mode', () => fchmodSync(fd, file.mode & PUBLISH_MODE_MASK));
      const time =
        plan.time &&
        this.#setMetadata(abs, rel, 'mtime', () => futimesSync(fd, existing.atime, toSeconds(file.mtimeMs)));
      return perms || time ? { perms, time } : undefined;
    } finally {
      closeSync(fd);
    }
  }

  /**
   * Runs one metadata change of an identical file; false when the file may not take it (another
   * user's file, an immutable one, a file system without it): as rsync, the transfer goes on
   * with a warning (onMetadataRefused) rather than fail for a time or a mode. Other errors throw.
   */
  #setMetadata(abs: string, rel: string, what: 'mode' | 'mtime', set: () => void): boolean {
    try {
      set();
      return true;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === undefined || !METADATA_REFUSED.has(code)) throw ioError('set metadata of', abs, err);
      this.#options.onMetadataRefused?.(rel, what, err as Error);
      return false;
    }
  }

  /** What stageFile and verdict check first: not aborted, a path inside the share, a sane manifest. */
  #checkedFile(file: PublishFile): { rel: string; relDir: string } {
    this.#checkAborted();
    const rel = this.#normalize(file.relPath);
    verifyManifest(file.manifest, {
      maxChunkBytes: this.#options.maxChunkBytes ?? this.#options.chunking.maxBytes,
      maxChunkCount: this.#options.maxChunkCount ?? Number.MAX_SAFE_INTEGER,
    });
    return { rel, relDir: path.posix.dirname(rel) === '.' ? '' : path.posix.dirname(rel) };
  }

  /**
   * Starts assembling a file. Returns 'identical' when the destination already holds identical
   * content (same size and root), 'kept' when the existing-file policy keeps a different one:
   * nothing to do. Throws FILE_EXISTS for a different existing file the policy refuses or a
   * directory in the way, PATH_INVALID for a path outside the share, PROTOCOL / HASH_MISMATCH
   * for a malformed manifest. `resumable` stages in the partial store (when the publisher has
   * one), so received chunks survive a crash.
   */
  async stageFile(
    file: PublishFile,
    options: { resumable?: boolean } = {},
  ): Promise<StagedFile | 'identical' | 'kept'> {
    const { rel, relDir } = this.#checkedFile(file);
    const dirAbs = this.#dirs.dir(relDir, true);
    const finalPath = path.join(dirAbs, path.posix.basename(rel));
    // In a directory made here, a name's first use needs no look (a fresh share: one lstat less a file).
    const existing: Existing = this.#dirs.name(dirAbs, finalPath)
      ? { kind: 'absent' }
      : await this.#existing(rel, finalPath, file.manifest);
    const outcome = this.#outcome(existing, finalPath, file.mtimeMs);
    if (existing.kind === 'identical') {
      const set = this.#refreshMetadata(finalPath, rel, existing, file);
      if (set !== undefined) this.#options.onMetadataSet?.(rel, set);
    }
    if (outcome === 'identical' || outcome === 'kept') return outcome;

    const normalized = { ...file, relPath: rel };
    const partials = this.#options.partials;
    let staged: StagedFile;
    if (options.resumable === true && partials !== undefined) {
      const partial = await partials.openPartial(
        { relPath: rel, root: file.manifest.root, size: file.manifest.size },
        this.#options.signal === undefined ? {} : { signal: this.#options.signal },
      );
      staged = new StagedFile(normalized, finalPath, partial.dataPath, 'partial', partial, this.#earlyWritebackBytes());
    } else if (file.manifest.size <= IN_MEMORY_MAX_BYTES) {
      staged = new StagedFile(
        normalized,
        finalPath,
        path.join(dirAbs, tempNameFor(path.posix.basename(rel))),
        'memory',
        undefined,
      );
    } else {
      const stagingPath = path.join(dirAbs, tempNameFor(path.posix.basename(rel)));
      let handle: FileHandle;
      await stagingHandles.makeRoom(1);
      try {
        // 'wx': O_EXCL, so the temp name never follows or reuses an existing entry.
        handle = await open(stagingPath, 'wx', 0o600);
      } catch (err) {
        releaseTempName(stagingPath);
        throw ioError('create a temp file for', finalPath, err);
      }
      try {
        await handle.truncate(file.manifest.size);
      } catch (err) {
        await handle.close().catch(() => undefined);
        await rm(stagingPath, { force: true });
        releaseTempName(stagingPath);
        throw ioError('allocate', finalPath, err);
      }
      staged = new StagedFile(normalized, finalPath, stagingPath, handle, undefined, this.#earlyWritebackBytes());
    }
    staged.replaces = outcome === 'replace';
    this.#open.add(staged);
    return staged;
  }

  /**
   * Publishes complete staged files as one batch: mode and mtime set on each open file, all
   * fsync'd (COMMIT_FSYNC_CONCURRENCY at a time), then each moved to its final path, then one
   * fsync per directory touched. Without force, a file that appeared at a final path since
   * staging is still not replaced (hard link = atomic no-clobber); if it is identical, the
   * staged copy is dropped. On error the failing file's staging is discarded (a partial is
   * kept) and the first error is thrown after the rest of the batch is published.
   */
  async commit(files: readonly StagedFile[]): Promise<void> {
    this.#checkAborted();
    this.#options.guard?.(); // once per batch: its files are renamed by path into the folder
    for (const f of files) {
      if (f.state !== 'open') throw new TypeError(`${f.relPath} is already ${f.state}`);
      if (!f.complete) throw new TypeError(`${f.relPath} is not complete: ${f.missingChunks().length} chunks missing`);
    }
    const failed = new Map<StagedFile, unknown>();
    const atime = new Date();
    let sliceStart = performance.now();
    for (const f of files) {
      if (!f.inMemory) continue;
      try {
        f.writeOut(atime);
      } catch (err) {
        failed.set(f, err);
      }
      if (performance.now() - sliceStart >= WRITE_OUT_SLICE_MS) {
        await new Promise((resolve) => setImmediate(resolve));
        sliceStart = performance.now();
      }
    }
    await forEachBounded(files, COMMIT_FSYNC_CONCURRENCY, async (f) => {
      if (failed.has(f)) return;
      try {
        if (f.inMemory) {
          if (this.#fsync) {
            await f.syncStaging();
            this.fsyncs++;
          }
        } else {
          await f.settleWriteback();
          await f.fillOutHoles();
          await f.withHandle(async (h) => {
            await h.chmod(f.mode);
            await h.utimes(atime, toSeconds(f.mtimeMs));
            if (this.#fsync) {
              await h.sync();
              this.fsyncs++;
            }
          });
        }
      } catch (err) {
        failed.set(f, ioError('sync', f.finalPath, err));
      }
    }).catch(() => undefined);
    this.#options.guard?.(); // again after the fsyncs, which take milliseconds: the renames go by path
    for (const f of files) {
      if (failed.has(f)) continue;
      try {
        await this.#moveIntoPlace(f);
      } catch (err) {
        failed.set(f, err);
      }
    }
    for (const [f] of failed) await f.discard();
    for (const f of files) this.#open.delete(f);
    await this.flushDirs();
    for (const f of files) {
      if (failed.has(f)) continue;
      await f.partial?.finishPromotion();
    }
    // A file this node may not write (onRefused) is told and left discarded; any other failure throws.
    const onRefused = this.#options.onRefused;
    for (const [f, err] of failed) {
      if (onRefused === undefined || pathRefusal(err) === undefined) throw err;
      onRefused(f.relPath, err as Error);
    }
  }

  async #moveIntoPlace(f: StagedFile): Promise<void> {
    let source = f.stagingPath;
    const finalDir = path.dirname(f.finalPath);
    // Closing before the rename: metadata and data are synced, and Windows cannot rename open files.
    await f.closeStaging();
    const dropSource = async (): Promise<void> => {
      if (f.partial !== undefined) await f.partial.discard();
      else await rm(source, { force: true });
    };

    // The directory operations are synchronous: they are metadata calls of a few µs, and a batch
    // places its files one after the other, so awaited calls cost a thread-pool round trip each.
    // What is at the final path now (it may have appeared since staging): the policy decides again.
    const settle = async (): Promise<'replace' | 'done'> => {
      const outcome = this.#outcome(await this.#existing(f.relPath, f.finalPath, f.manifest), f.finalPath, f.mtimeMs);
      if (outcome !== 'identical' && outcome !== 'kept') return 'replace';
      await dropSource();
      return 'done';
    };
    const place = async (): Promise<void> => {
      if (this.#policy === 'replace') {
        await this.#beforeRename(f.relPath, f.finalPath);
        renameSync(source, f.finalPath);
        return;
      }
      try {
        linkSync(source, f.finalPath); // fails with EEXIST instead of replacing: atomic no-clobber
        unlinkSync(source);
        return;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EXDEV') throw err;
        // EEXIST: something is there. Otherwise no hard links here (FAT, some network file
        // systems): check, then rename.
        if ((await settle()) === 'replace') {
          await this.#beforeRename(f.relPath, f.finalPath);
          await rename(source, f.finalPath);
        }
      }
    };

    try {
      try {
        await place();
      } catch (err) {
        // A partial on another file system than its destination (a mount inside the share):
        // copy it next to the destination, sync, and place the copy.
        if ((err as NodeJS.ErrnoException).code !== 'EXDEV' || f.partial === undefined) throw err;
        const copy = path.join(finalDir, tempNameFor(path.basename(f.finalPath)));
        await copyFile(f.partial.dataPath, copy, fsConstants.COPYFILE_EXCL);
        const h = await open(copy, 'r+');
        try {
          await h.chmod(f.mode);
          await h.utimes(new Date(), toSeconds(f.mtimeMs));
          await h.sync();
        } finally {
          await h.close();
        }
        source = copy;
        try {
          await place();
        } finally {
          await rm(copy, { force: true });
          releaseTempName(copy);
        }
      }
    } catch (err) {
      throw ioError('publish', f.finalPath, err);
    }
    if (f.partial !== undefined) this.#dirtyDirs.add(path.dirname(f.partial.dataPath));
    this.#dirtyDirs.add(finalDir);
    f.markCommitted();
  }

  /**
   * Creates symlink `relPath` -> `target`. Refuses with PATH_INVALID when the target could
   * resolve outside the share (absolute, too many `..`, or `..` after a name). An existing link
   * with the same target is left alone ('identical'); anything else there is FILE_EXISTS unless
   * the existing-file policy replaces it ('replaced'), or keeps it ('kept'); a directory: always
   * FILE_EXISTS.
   */
  async makeSymlink(
    relPath: string,
    target: string,
    mtimeMs?: number,
  ): Promise<'created' | 'replaced' | 'identical' | 'kept'> {
    this.#checkAborted();
    this.#options.guard?.();
    const rel = this.#normalize(relPath);
    const relDir = path.posix.dirname(rel) === '.' ? '' : path.posix.dirname(rel);
    const dirAbs = this.#dirs.dir(relDir, true);
    this.#dirs.name(dirAbs, path.join(dirAbs, path.posix.basename(rel))); // used: a later file there is looked at
    const made = await placeSymlink(this.#symlinkPlace, rel, dirAbs, target, mtimeMs);
    if (made === 'created' || made === 'replaced') this.#dirtyDirs.add(dirAbs);
    return made;
  }

  /**
   * What makeSymlink would do, creating nothing (dry runs): 'new', 'identical', 'replace' or
   * 'kept'; throws what it would (PATH_INVALID, FILE_EXISTS).
   */
  async symlinkVerdict(
    relPath: string,
    target: string,
    mtimeMs?: number,
  ): Promise<'new' | 'identical' | 'replace' | 'kept'> {
    this.#checkAborted();
    const rel = this.#normalize(relPath);
    const relDir = path.posix.dirname(rel) === '.' ? '' : path.posix.dirname(rel);
    const dirAbs = this.#dirs.walk(relDir, 'probe');
    if (dirAbs === undefined) {
      // The directory would be made: the link's depth is its path's.
      if (!symlinkTargetIsConfined(relDir === '' ? 0 : relDir.split('/').length, target))
        throw symlinkEscapes(rel, target);
      return 'new';
    }
    return symlinkVerdictIn(this.#symlinkPlace, rel, dirAbs, target, mtimeMs);
  }

  /**
   * Sets mode and mtime of directories after their contents are in place (a directory's mtime
   * changes with every entry added, and a read-only mode would block adding them), deepest
   * first, then fsyncs each.
   */
  async setDirMetadata(dirs: readonly PublishDir[]): Promise<void> {
    this.#checkAborted();
    const resolved: { abs: string; depth: number; dir: PublishDir }[] = [];
    for (const dir of dirs) {
      const rel = this.#normalize(dir.relPath);
      resolved.push({ abs: this.#dirs.dir(rel, false), depth: rel.split('/').length, dir });
    }
    resolved.sort((a, b) => b.depth - a.depth);
    for (const { abs, dir } of resolved) {
      try {
        await chmod(abs, dir.mode & PUBLISH_MODE_MASK);
        await utimes(abs, new Date(), toSeconds(dir.mtimeMs));
      } catch (err) {
        // A directory this node may not change (onRefused, an immutable one): told, the rest goes on.
        const onRefused = this.#options.onRefused;
        if (onRefused === undefined || pathRefusal(err) === undefined) throw ioError('set metadata of', abs, err);
        onRefused(dir.relPath, ioError('set metadata of', abs, err));
        continue;
      }
      this.#dirtyDirs.add(abs);
    }
    await this.flushDirs();
  }

  /** fsyncs every directory whose entries changed since the last flush, once each. */
  async flushDirs(): Promise<void> {
    const dirs = [...this.#dirtyDirs];
    this.#dirtyDirs.clear();
    if (!this.#fsync) return;
    this.fsyncs += dirs.length;
    await forEachBounded(dirs, COMMIT_FSYNC_CONCURRENCY, syncDir);
  }

  /** Discards every staged file not yet committed (temp files deleted, partials kept). */
  async abort(): Promise<void> {
    const open = [...this.#open];
    this.#open.clear();
    for (const f of open) await f.discard();
  }
}
