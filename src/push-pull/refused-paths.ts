// The paths a push's listener or a pull's client may not write (support/path-refusal.ts: EACCES,
// EPERM, a name too long): left out while the rest lands, as rsync does, which then exits 23
// ("partial transfer"). Before, one such path failed the whole push or pull.
import { MAX_LISTED_DELETIONS, type RefusedPath } from '../protocol/messages.js';
import { escapeToShow } from '../format.js';
import { CappedList } from '../support/capped-list.js';
import { pathRefusal } from '../support/path-refusal.js';

/** The first MAX_LISTED_DELETIONS, as TransferDone lists them; `count` counts all. */
export class RefusedPaths extends CappedList<RefusedPath> {
  constructor() {
    super(MAX_LISTED_DELETIONS);
  }

  /**
   * ReceiverOptions.onRefused: the path (destination-relative) and its errno code. The path is
   * listed with its control and bidi characters escaped: the peer refuses them raw.
   */
  refuse(relPath: string, error: Error): RefusedPath {
    const refused = { path: escapeToShow(relPath), reason: pathRefusal(error) ?? 'EACCES' };
    this.add(refused);
    return refused;
  }

  /** TransferDone's and TransferResult's fields: none when nothing was refused. */
  fields(): { refused?: RefusedPath[]; refusedCount?: number } {
    return this.count === 0 ? {} : { refused: this.listed, refusedCount: this.count };
  }
}

/**
 * push --remove-source-files: whether the sent entry landing at `destPath` (share-relative)
 * must stay here because the listener did not write it. When the listener listed only some of
 * its refusals, every source stays: any of them may be one it did not list.
 */
export function refusedAtListener(done: {
  readonly refused?: readonly RefusedPath[];
  readonly refusedCount?: number;
}): ((destPath: string) => boolean) | undefined {
  const count = done.refusedCount ?? 0;
  if (count === 0) return undefined;
  const listed = done.refused ?? [];
  if (listed.length < count) return () => true;
  const paths = new Set(listed.map((r) => r.path));
  // Listed as RefusedPaths.refuse names them, escaped (a path that escapes alike stays too).
  return (destPath) => paths.has(escapeToShow(destPath));
}
