// The directories on the way to a published path: each level is created by us (no symlink
// follows) or checked to be a real directory, or a symlink to one, whose realpath stays inside the
// share. Publisher and Backups reach the share's directories only through here.
import { lstatSync, mkdirSync, realpathSync, statSync, type Stats } from 'node:fs';
import path from 'node:path';
import { ClawpeerError, ioError } from '../errors.js';
import { isConfinedRealpath } from '../transfer/paths.js';

/** Confined directory walks under one share root, remembering what it has checked. */
export class ConfinedDirs {
  readonly #root: string;
  // Directories (absolute) already checked to be real and confined, so a batch of 10,000 files in
  // one directory realpaths it once.
  readonly #checked = new Set<string>();
  // The publisher's directories whose entries changed since their last fsync: a new directory
  // dirties its parent.
  readonly #dirty: Set<string>;
  // Directories (absolute) this walk made, empty then, and the names in them handed out since.
  readonly #made = new Set<string>();
  readonly #named = new Set<string>();

  readonly #beforeCreate: (() => void) | undefined;

  /** `beforeCreate` runs before each directory is made (PublisherOptions.guard). */
  constructor(shareRoot: string, dirty: Set<string>, beforeCreate?: () => void) {
    this.#root = shareRoot;
    this.#dirty = dirty;
    this.#beforeCreate = beforeCreate;
    this.#checked.add(shareRoot);
  }

  /**
   * Makes sure the directory `relDir` ('' = share root) exists as a real directory inside the
   * share, creating missing levels when `create`, and returns its absolute path. Synchronous
   * metadata calls: a few us each, while an awaited one is a thread-pool round trip that on a
   * busy host took milliseconds, paid per new directory before the first chunk. `shared`: its
   * caller puts names in it that name() does not hear of (backups), so none is known free.
   */
  dir(relDir: string, create: boolean, shared = false): string {
    const abs = this.walk(relDir, create ? 'create' : 'require');
    if (abs === undefined) throw new TypeError(`${relDir}: a directory walk that creates or requires returned nothing`);
    if (shared) this.#made.delete(abs);
    return abs;
  }

  /**
   * Hands out path `abs` in its directory `dirAbs`; true when it is known free: the name's first
   * use in a directory this walk made. Anything there then was put since by another writer, which
   * only the commit can find anyway (a no-clobber link, or the policy's look and beforeReplace).
   */
  name(dirAbs: string, abs: string): boolean {
    if (!this.#made.has(dirAbs) || this.#made.has(abs) || this.#named.has(abs)) return false;
    this.#named.add(abs);
    return true;
  }

  /**
   * The walk of dir(). `probe` creates nothing: it returns undefined at the first missing
   * level (all below it would be new), and refuses what is in the way as `create` would.
   */
  walk(relDir: string, mode: 'create' | 'require' | 'probe'): string | undefined {
    const create = mode === 'create';
    let abs = this.#root;
    if (relDir === '') return abs;
    let fresh = false;
    for (const segment of relDir.split('/')) {
      const parentAbs = abs;
      abs = path.join(abs, segment);
      if (this.#checked.has(abs)) continue;
      fresh = true;
      let st: Stats | undefined;
      try {
        st = lstatSync(abs, { throwIfNoEntry: false });
      } catch (err) {
        throw ioError('inspect', abs, err);
      }
      if (st === undefined) {
        if (mode === 'probe') return undefined;
        if (!create) throw new ClawpeerError('IO', `directory ${abs} does not exist`);
        this.#beforeCreate?.();
        try {
          mkdirSync(abs);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw ioError('create directory', abs, err);
          // Lost a race with another writer: start over and inspect what is there now.
          return this.walk(relDir, mode);
        }
        this.#dirty.add(parentAbs);
        this.#checked.add(abs);
        this.#made.add(abs);
        continue;
      }
      if (st.isSymbolicLink()) {
        let real: string;
        try {
          real = realpathSync.native(abs);
        } catch (err) {
          throw new ClawpeerError('PATH_INVALID', `${relDir} refused: ${abs} is a symlink that does not resolve`, {
            cause: err,
          });
        }
        if (!isConfinedRealpath(this.#root, real)) {
          throw new ClawpeerError(
            'PATH_INVALID',
            `${relDir} refused: ${abs} is a symlink to ${real}, outside the share`,
          );
        }
        if (!statSync(real).isDirectory()) {
          throw new ClawpeerError('FILE_EXISTS', `${abs} is a symlink to a non-directory where a directory should be`);
        }
      } else if (!st.isDirectory()) {
        throw new ClawpeerError(
          'FILE_EXISTS',
          `${abs} is a file where a directory should be (not replaced, even with --force)`,
        );
      }
      this.#checked.add(abs);
    }
    if (fresh) {
      // Belt and braces, once per new directory: however we got here, it resolves inside the share.
      let real: string;
      try {
        real = realpathSync.native(abs);
      } catch (err) {
        throw ioError('resolve', abs, err);
      }
      if (!isConfinedRealpath(this.#root, real)) {
        throw new ClawpeerError('PATH_INVALID', `${relDir} refused: it resolves to ${real}, outside the share`);
      }
    }
    return abs;
  }
}
