// A send-only folder's peer changes, for `clawpeer status` (Syncthing's "Out of Sync Items") and
// `folder override`: the paths whose newest version is a peer's, which this copy never takes. The
// mirror image of a receive-only folder's local changes (local-changes.ts).
//
// What counts: a head of a peer's (learnt at the end of a sync with it, either side running it:
// the records of its heads this side lacks, feature sync-peer-heads; not stored) that this node's
// head of the path has not seen: its version vector is newer than ours or concurrent with it, and
// it leaves something else at the path (the same bytes saved on both sides do not count; nor a
// deletion of what is not here).
//
// Kept per pair in memory (the last sync's report replaces the one before), checked against the
// folder's heads when status asks: a path this node changed since, or overrode, no longer counts.
import type { RevisionStore } from '../store/revision-store.js';
import { sameContent, type Revision, type RevisionEntry } from '../sync/revision.js';
import { compareVectors, mergeVectors, type VersionVector } from '../sync/version-vector.js';
import { isFolderPair, pairKey } from './pair-key.js';

/** How many of the paths `clawpeer status` lists (the count is of all). */
export const PEER_CHANGE_PATHS_SHOWN = 10;

export interface PeerChanges {
  /** How many paths the peers changed that this send-only copy does not take. */
  readonly peerChanges: number;
  /** The first of them, sorted, at most PEER_CHANGE_PATHS_SHOWN. */
  readonly peerChangePaths: readonly string[];
}

/** A path a peer changed, not taken here: what `folder override` must supersede. */
export interface PeerChange {
  readonly path: string;
  /** Every peer version of it seen here, merged: a revision whose vector dominates it wins everywhere. */
  readonly vector: VersionVector;
}

/** True when the peer's head `theirs` is a version `ours` (this node's head of the path) has not seen. */
export function isUntaken(theirs: Revision, ours: Revision | undefined): boolean {
  if (ours === undefined) return !theirs.deleted;
  if (sameContent(theirs, ours)) return false;
  const order = compareVectors(theirs.vector, ours.vector);
  return order === 'after' || order === 'concurrent';
}

/** Each pair's last report of the peer's heads this send-only side lacks. */
export class PeerChangeReports {
  readonly #byPair = new Map<string, readonly Revision[]>();

  /** The heads `peer` has of `folder` that this side lacked at the end of their last sync. */
  record(folder: string, peer: string, heads: readonly RevisionEntry[]): void {
    const key = pairKey(folder, peer);
    if (heads.length === 0) this.#byPair.delete(key);
    else
      this.#byPair.set(
        key,
        heads.map((e) => e.revision),
      );
  }

  /** Drops what was reported for `folder` (its config changed: a mode or peer set of before). */
  forget(folder: string): void {
    for (const key of [...this.#byPair.keys()]) if (isFolderPair(key, folder)) this.#byPair.delete(key);
  }

  /** The paths of `folder` its `peers` changed and this side has not taken, sorted. No store: none known. */
  changes(folder: string, peers: readonly string[], store: RevisionStore | undefined): PeerChange[] {
    if (store === undefined) return [];
    const byPath = new Map<string, VersionVector>();
    for (const peer of peers)
      for (const theirs of this.#byPair.get(pairKey(folder, peer)) ?? []) {
        if (!isUntaken(theirs, store.head(theirs.path)?.revision)) continue;
        const seen = byPath.get(theirs.path);
        byPath.set(theirs.path, seen === undefined ? theirs.vector : mergeVectors(seen, theirs.vector));
      }
    return [...byPath]
      .map(([path, vector]) => ({ path, vector }))
      .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }

  /** `changes` as `clawpeer status` counts and lists them. */
  of(folder: string, peers: readonly string[], store: RevisionStore | undefined): PeerChanges {
    const paths = this.changes(folder, peers, store).map((c) => c.path);
    return { peerChanges: paths.length, peerChangePaths: paths.slice(0, PEER_CHANGE_PATHS_SHOWN) };
  }
}
