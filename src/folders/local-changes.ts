// A receive-only folder's local changes, for `clawpeer status` (Syncthing's "Local Additions"):
// the paths whose version here is this node's own and which the folder's peers do not have, so
// its syncs keep them and never send them (a peer's later change of such a path is left as is).
//
// What counts: a path whose live head here is a revision this node made (a file or directory
// edited or added here) that a peer lacked at the end of this node's last sync with it (the sync's
// `localOnly`, sync-client.ts). A local deletion does not count: it is not kept, the next change
// of the path at a peer lands here. Nor does a revision that came from another peer and that
// this peer lacks (passed on from A, B never had it): it is not a change made here.
//
// Computed from what each pair's last sync reported, checked against the folder's heads when
// status asks (a path deleted or replaced by a peer's version since no longer counts); no scan.
// A path changed here since the last sync shows at the next one (a local change starts one).
import { toHex } from '../chunking/blake3.js';
import type { SyncFolderResult } from '../folder-sync/sync-client.js';
import type { RevisionStore } from '../store/revision-store.js';
import { isFolderPair, pairKey } from './pair-key.js';

/** How many of the paths `clawpeer status` lists (the count is of all). */
export const LOCAL_CHANGE_PATHS_SHOWN = 10;

export interface LocalChanges {
  /** How many paths changed here are kept and not sent. */
  readonly localChanges: number;
  /** The first of them, sorted, at most LOCAL_CHANGE_PATHS_SHOWN. */
  readonly localChangePaths: readonly string[];
}

/**
 * What a peer lacked at the end of this node's last sync with it, for `folder revert`
 * (folder-revert.ts): the ids of the revisions here it lacked (hex), and this node's counter
 * then (a revision made here with a higher one came after that sync: the peer lacks it too).
 */
export interface PeerLacking {
  readonly ids: ReadonlySet<string>;
  readonly localCounter: number;
}

/** Why a peer's last sync of a folder since the listener started was refused there: it has no such folder, or paused it. */
export type PeerAbsence = 'removed' | 'paused';

/** Each pair's last report of the paths whose revision here its peer lacks (receive-only syncs). */
export class LocalChangeReports {
  readonly #byPair = new Map<string, readonly string[]>();
  readonly #lacking = new Map<string, PeerLacking>();
  /** The pairs whose peer answered its last sync since the listener started that it has no such folder, or paused it. */
  readonly #absent = new Map<string, PeerAbsence>();

  /** What the last sync of `folder` with `peer` left unsent (its `localOnly`, and what it says the peer lacks). */
  record(folder: string, peer: string, r: Pick<SyncFolderResult, 'localOnly' | 'lacking'>): void {
    const key = pairKey(folder, peer);
    if (r.localOnly.length === 0) this.#byPair.delete(key);
    else this.#byPair.set(key, r.localOnly);
    this.#absent.delete(key);
    if (r.lacking === undefined) this.#lacking.delete(key);
    else this.#lacking.set(key, { ids: new Set(r.lacking.ids.map(toHex)), localCounter: r.lacking.localCounter });
  }

  /**
   * The peer refused this node's sync of `folder`: it has no such folder (SHARE_UNKNOWN: not added
   * there, or removed) or paused it (SHARE_PAUSED). What it lacked at an earlier sync is dropped:
   * its copy now is none this node syncs with (`folder revert` neither waits for it nor asks it
   * for bytes). The paths kept for `status` stay: they are still this node's own and unsent.
   */
  refused(folder: string, peer: string, why: PeerAbsence): void {
    const key = pairKey(folder, peer);
    this.#lacking.delete(key);
    this.#absent.set(key, why);
  }

  /** The peer ran a sync of `folder` here: it has the folder (again), and is no longer known as absent. */
  present(folder: string, peer: string): void {
    this.#absent.delete(pairKey(folder, peer));
  }

  /** Why `peer` refused its last sync of `folder` since the listener started (undefined: it did not). */
  absence(folder: string, peer: string): PeerAbsence | undefined {
    return this.#absent.get(pairKey(folder, peer));
  }

  /** What `peer` lacked at its last sync of `folder` since the listener started (undefined: none yet). */
  lacking(folder: string, peer: string): PeerLacking | undefined {
    return this.#lacking.get(pairKey(folder, peer));
  }

  /** Drops what was reported for `folder` (its config changed: a mode or peer set of before). */
  forget(folder: string): void {
    for (const key of [...this.#byPair.keys()]) if (isFolderPair(key, folder)) this.#byPair.delete(key);
    for (const key of [...this.#lacking.keys()]) if (isFolderPair(key, folder)) this.#lacking.delete(key);
    for (const key of [...this.#absent.keys()]) if (isFolderPair(key, folder)) this.#absent.delete(key);
  }

  /**
   * The local changes of `folder` with its `peers` now: the reported paths whose head in `store`
   * is still live and made by `nodeId`. No store (not synced since the listener started): none known.
   */
  of(folder: string, peers: readonly string[], store: RevisionStore | undefined, nodeId: string): LocalChanges {
    const paths = new Set<string>();
    for (const peer of peers) for (const p of this.#byPair.get(pairKey(folder, peer)) ?? []) paths.add(p);
    const kept: string[] = [];
    for (const p of paths) {
      const head = store?.head(p);
      if (head !== undefined && !head.revision.deleted && head.revision.origin === nodeId) kept.push(p);
    }
    kept.sort();
    return { localChanges: kept.length, localChangePaths: kept.slice(0, LOCAL_CHANGE_PATHS_SHOWN) };
  }
}
