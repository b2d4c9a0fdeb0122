// Symlinks a publisher (publisher.ts) places into a share: the target must stay inside the share,
// and what is at the path now is decided by the existing-file policy (existing-policy.ts).
import { lstat, lutimes, readlink, realpath, rename, rm, symlink } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import path from 'node:path';
import { ClawpeerError, ioError } from '../errors.js';
import type { ExistingPolicy } from './publish-types.js';
import { refuseExisting, replaceOrKeep } from './existing-policy.js';
import { toSeconds } from './staged-file.js';
import { releaseTempName, tempNameFor } from './temp-files.js';
import { symlinkTargetIsConfined } from './tree-scan.js';

/** The share a symlink goes into, its existing-file policy, and how a replaced entry is kept. */
export interface SymlinkPlace {
  readonly shareRoot: string;
  readonly policy: ExistingPolicy;
  keepReplaced(relPath: string, finalPath: string): Promise<void>;
}

export function symlinkEscapes(rel: string, target: string): ClawpeerError {
  return new ClawpeerError(
    'PATH_INVALID',
    `symlink ${rel} -> ${JSON.stringify(target)} refused: its target leaves the share`,
  );
}

/**
 * The checks of placeSymlink in an existing directory `dirAbs`: the target stays in the share,
 * and what is at the path now.
 */
export async function symlinkVerdictIn(
  place: SymlinkPlace,
  rel: string,
  dirAbs: string,
  target: string,
  mtimeMs: number | undefined,
): Promise<'new' | 'identical' | 'replace' | 'kept'> {
  const dirReal = await realpath(dirAbs);
  const depth = path
    .relative(place.shareRoot, dirReal)
    .split(path.sep)
    .filter((s) => s !== '').length;
  if (!symlinkTargetIsConfined(depth, target)) throw symlinkEscapes(rel, target);
  const finalPath = path.join(dirAbs, path.posix.basename(rel));
  let st: Stats | undefined;
  try {
    st = await lstat(finalPath);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw ioError('inspect', finalPath, err);
  }
  if (st === undefined) return 'new';
  if (st.isSymbolicLink() && (await readlink(finalPath)) === target) return 'identical';
  if (st.isDirectory())
    throw new ClawpeerError(
      'FILE_EXISTS',
      `${finalPath} is a directory where a symlink should be (not replaced, even with --force)`,
    );
  return replaceOrKeep(
    place.policy,
    finalPath,
    st.isSymbolicLink() ? 'a symlink with another target' : 'a file',
    st.mtimeMs,
    mtimeMs ?? Date.now(),
  ) === 'keep'
    ? 'kept'
    : 'replace';
}

/**
 * Creates symlink `rel` -> `target` in the share's existing directory `dirAbs`. Refuses with
 * PATH_INVALID when the target could resolve outside the share (absolute, too many `..`, or `..`
 * after a name). An existing link with the same target is left alone ('identical'); anything
 * else there is FILE_EXISTS unless the existing-file policy replaces it ('replaced'), or keeps
 * it ('kept'); a directory: always FILE_EXISTS.
 */
export async function placeSymlink(
  place: SymlinkPlace,
  rel: string,
  dirAbs: string,
  target: string,
  mtimeMs: number | undefined,
): Promise<'created' | 'replaced' | 'identical' | 'kept'> {
  const finalPath = path.join(dirAbs, path.posix.basename(rel));
  const verdict = await symlinkVerdictIn(place, rel, dirAbs, target, mtimeMs);
  if (verdict === 'identical' || verdict === 'kept') return verdict;
  const tmp = path.join(dirAbs, tempNameFor(path.posix.basename(rel)));
  try {
    await symlink(target, tmp);
    if (mtimeMs !== undefined) await lutimes(tmp, new Date(), toSeconds(mtimeMs));
    if (place.policy === 'refuse') {
      // Hard-linking a symlink is not portable (macOS follows it): check-then-rename here.
      const again = await lstat(finalPath).then(
        () => true,
        () => false,
      );
      if (again) refuseExisting(finalPath, 'in the way');
    }
    if (verdict === 'replace') await place.keepReplaced(rel, finalPath);
    await rename(tmp, finalPath);
  } catch (err) {
    await rm(tmp, { force: true });
    throw ioError('create symlink', finalPath, err);
  } finally {
    releaseTempName(tmp);
  }
  return verdict === 'replace' ? 'replaced' : 'created';
}
