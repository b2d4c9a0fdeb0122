// The directories and symlinks of a receive (transfer-receive.ts): directories made before the
// files stage, symlinks and directory metadata set once the files are in. With onRefused (a
// push's listener, a pull, a synced folder's fetch) a directory or symlink this node may not
// write (support/path-refusal.ts) is told and left, and the rest goes on; what lies under a
// refused directory is refused in turn when it is staged, and its metadata is not set.
import type { CreatedEntry, ManifestEntry } from '../protocol/messages.js';
import { textToShow } from '../protocol/wire-helpers.js';
import type { Publisher } from '../store/publisher.js';
import type { PublishDir } from '../store/publish-types.js';
import { pathRefusal } from '../support/path-refusal.js';

type OnRefused = ((relPath: string, error: Error) => void) | undefined;

/** Runs `step` for `rel`; a refusal is told and false returned, when the caller takes refusals. */
async function unlessRefused(rel: string, onRefused: OnRefused, step: () => Promise<unknown>): Promise<boolean> {
  try {
    await step();
    return true;
  } catch (err) {
    if (onRefused === undefined || pathRefusal(err) === undefined) throw err;
    onRefused(rel, err as Error);
    return false;
  }
}

/** Makes directory `rel`; false when it was refused (then it is added to `refusedDirs`). */
export async function makeReceivedDir(
  publisher: Publisher,
  rel: string,
  onRefused: OnRefused,
  refusedDirs: Set<string>,
): Promise<boolean> {
  const made = await unlessRefused(rel, onRefused, () => publisher.makeDir(rel));
  if (!made) refusedDirs.add(rel);
  return made;
}

export interface TreeTally {
  readonly kept: () => void;
  readonly created: (entry: CreatedEntry) => void;
}

/** Once the files are published: the symlinks, then the directories' modes and mtimes (deepest first). */
export async function finishReceivedTree(
  publisher: Publisher,
  entries: readonly ManifestEntry[],
  paths: readonly string[],
  refusedDirs: ReadonlySet<string>,
  onRefused: OnRefused,
  tally: TreeTally,
): Promise<void> {
  const dirs: PublishDir[] = [];
  for (const [i, entry] of entries.entries()) {
    const rel = paths[i] ?? '';
    if (entry.kind === 'symlink') {
      let made: Awaited<ReturnType<Publisher['makeSymlink']>> | undefined;
      await unlessRefused(rel, onRefused, async () => {
        made = await publisher.makeSymlink(rel, entry.linkTarget, entry.mtimeMs);
      });
      if (made === 'kept') tally.kept();
      // Listed for the user to read (a pull's -i, a push's TransferDone): a target is the
      // sender's free text, its control and bidi characters blanked.
      else if (made === 'created' || made === 'replaced')
        tally.created({
          path: rel,
          kind: 'symlink',
          target: textToShow(entry.linkTarget),
          replaced: made === 'replaced',
        });
    } else if (entry.kind === 'dir' && !refusedDirs.has(rel))
      dirs.push({ relPath: rel, mode: entry.mode, mtimeMs: entry.mtimeMs });
  }
  await publisher.setDirMetadata(dirs);
  await publisher.flushDirs();
}
