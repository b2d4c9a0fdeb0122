// The identity (device and inode) of a synced folder's directory and of its `.clawpeer/`, taken
// when a sync opens the folder. A sync works by paths: when the folder's directory is swapped
// while it runs (`mv docs docs-old; mkdir docs`, a disk unmounted lazily), every path names the
// new directory, and a sync going on would publish the peer's files there and make its
// `.clawpeer/` again, after which the folder counts as present and is fetched anew, whole, into
// the new directory. Writers check the pin before they write (the publisher before a commit
// batch's write-out and again before its renames, and before each directory or symlink it
// makes; the receiver before it opens its partials; the scan before it records deletions), so
// the sync stops with `gone()` (synced-folder.ts: the marker-missing error) instead.
// Non-goals: a swap between a check and the writes after it (within one batch's renames; the
// next check stops the sync), and files staged in the old directory before the swap (their
// temp files are left there for the sweep of stale temp files).
import { lstatSync, type BigIntStats } from 'node:fs';
import path from 'node:path';
import { ioError } from '../errors.js';
import { INTERNAL_DIR_NAME } from '../store/internal-names.js';

interface Identity {
  readonly dev: bigint;
  readonly ino: bigint;
}

/** Device and inode of `p` (not followed), undefined when it is not there or not a directory; IO for another failure (EACCES). */
function dirIdentity(p: string): Identity | undefined {
  let st: BigIntStats | undefined;
  try {
    st = lstatSync(p, { bigint: true, throwIfNoEntry: false });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOTDIR') return undefined;
    throw ioError('inspect', p, err);
  }
  return st?.isDirectory() === true ? { dev: st.dev, ino: st.ino } : undefined;
}

const same = (a: Identity | undefined, b: Identity): boolean => a !== undefined && a.dev === b.dev && a.ino === b.ino;

/** A synced folder's directory and its `.clawpeer/` as a sync opened them. */
export class FolderPin {
  readonly dir: string;
  readonly #root: Identity;
  readonly #internal: Identity;
  readonly #gone: () => Error;

  private constructor(dir: string, root: Identity, internal: Identity, gone: () => Error) {
    this.dir = dir;
    this.#root = root;
    this.#internal = internal;
    this.#gone = gone;
  }

  /** Pins the folder at `dir` as it is now; throws `gone()` when it has no `.clawpeer/` directory, IO when it cannot look. */
  static take(dir: string, gone: () => Error): FolderPin {
    const root = dirIdentity(dir);
    const internal = dirIdentity(path.join(dir, INTERNAL_DIR_NAME));
    if (root === undefined || internal === undefined) throw gone();
    return new FolderPin(dir, root, internal, gone);
  }

  /** True when `dir` or its `.clawpeer/` is no longer the directory pinned (gone, another one, unreadable now). */
  moved(): boolean {
    try {
      return (
        !same(dirIdentity(this.dir), this.#root) ||
        !same(dirIdentity(path.join(this.dir, INTERNAL_DIR_NAME)), this.#internal)
      );
    } catch {
      return true; // its path unreadable since the sync opened it (EACCES on the way): not that folder either
    }
  }

  /** Throws `gone()` when the folder moved (two lstat calls): before a write by path. */
  check(): void {
    if (this.moved()) throw this.#gone();
  }

  /** The error to throw for `err`, a sync's failure: `gone()` when the folder moved meanwhile (an ENOENT of a path in it, say). */
  failure(err: unknown): unknown {
    return this.moved() ? this.#gone() : err;
  }
}
