// `receive`: what an offer comes to before anything is pulled (the question it asks, the disk
// check): how many files and directories, how many bytes. A file named at a share's root has
// its size in the sender's root listing (offered-paths.ts); a directory's content takes one
// recursive listing of it, the walk its pull makes again: a listing carries every file's size,
// so no manifest needs to come first.
import type { PeerSession } from '../session/session.js';
import { listRemote } from './list-client.js';
import type { OfferedPath } from './offered-paths.js';

/** What a sender offers, counted: the names, the files and directories in all, their bytes. */
export interface OfferTotals {
  readonly paths: readonly string[];
  readonly files: number;
  readonly dirs: number;
  readonly bytes: number;
}

/** Counts `offered` (directories through a recursive listing each); symlinks inside are neither. */
export async function offerTotals(
  session: PeerSession,
  offered: readonly OfferedPath[],
  signal: AbortSignal,
): Promise<OfferTotals> {
  let files = 0;
  let dirs = 0;
  let bytes = 0;
  for (const o of offered) {
    if (o.kind === 'file') {
      files += 1;
      bytes += o.size;
      continue;
    }
    dirs += 1;
    for await (const batch of listRemote({ session, share: o.share, path: o.path, recursive: true, signal }))
      for (const e of batch.entries) {
        if (e.kind === 'file') {
          files += 1;
          bytes += e.size;
        } else if (e.kind === 'dir') dirs += 1;
      }
  }
  return { paths: offered.map((o) => o.path), files, dirs, bytes };
}
