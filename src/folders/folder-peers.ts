// Which peers each folder of config.json syncs with now, and why one is left out: a peer named
// in `with` that is not paired, a folder whose id a `listen --share` share already has, or one
// inside another (or holding one): the outer folder's scan would send the inner one's
// .clawpeer/ state to its peers as content (the later one in the file is left out).
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { overlappingFolder, type FolderConfig } from '../home/folders-config.js';
import { findPeer, type PeerEntry } from '../home/peer-store.js';

export interface ResolvedFolder {
  readonly f: FolderConfig;
  /** Its peers as node ids (none when the folder is left out). */
  readonly peerIds: string[];
  /** What status shows as the folder's problem, if any. */
  readonly problem: string | undefined;
}

/** Each folder by id with its peers now; `foreign`: the names of shares not the folder service's. */
export async function resolveFolderPeers(
  folders: readonly FolderConfig[],
  pairs: readonly PeerEntry[],
  foreign: ReadonlySet<string>,
): Promise<Map<string, ResolvedFolder>> {
  const real = await Promise.all(
    folders.map(async (f) => ({ ...f, path: await realpath(f.path).catch(() => path.resolve(f.path)) })),
  );
  const overlaps = new Map<string, FolderConfig>();
  real.forEach((f, i) => {
    const other = overlappingFolder(real.slice(0, i), f.path);
    if (other !== undefined) overlaps.set(f.id, other);
  });
  return new Map(
    folders.map((f) => {
      const peerIds: string[] = [];
      const problems: string[] = [];
      for (const p of f.with) {
        const entry = findPeer(pairs, p);
        if (entry === undefined) problems.push(`${p} is not a paired peer`);
        else peerIds.push(entry.id);
      }
      if (foreign.has(f.id))
        problems.push(
          `a share named ${f.id} is served already (listen --share): the folder is neither served nor synced`,
        );
      const other = overlaps.get(f.id);
      if (other !== undefined)
        problems.push(
          `it overlaps folder ${other.id} (${other.path}), one inside the other: the folder is neither served nor synced`,
        );
      return [
        f.id,
        {
          f,
          peerIds: foreign.has(f.id) || other !== undefined ? [] : peerIds,
          problem: problems.length === 0 ? undefined : problems.join('; '),
        },
      ];
    }),
  );
}
