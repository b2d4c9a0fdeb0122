// Change notices from peers whose copy of a folder is a plain share (`listen --share`, no folder
// service there). Such a peer never syncs a change of its copy here by itself, say one another
// device synced into it (an always-on hub's), so the folder would learn of it only at its next
// interval. For those pairs the folder asks the peer to tell it of changes (WatchShare,
// share-watch-client.ts) and syncs at once on each, as `sync --watch` does.
//
// Which pairs: one this node synced with whose peer did not say the share is a folder its folder
// service keeps (SyncAccept's kept_folder; sync-service.ts). A peer too old to say is watched
// until it runs a sync of the folder here itself (then it has a folder service). A copy that
// takes nothing from the peer (send-only here) needs no watch; the folder service asks none.
// Each watch holds a session of its own, so at most MAX_WATCHES_PER_PEER per peer (the peer's
// connection budget); one that ends or fails is started again after a backoff (RETRY_MS doubling
// to RETRY_MAX_MS), one the peer cannot serve (an older clawpeer) is not. A watch that starts
// also syncs: a change made before it was confirmed raised no notice.
// Non-goals: syncing (the folder service's schedule does), watching a peer that was never reached.

import type { Identity } from '../crypto/identity.js';
import type { NodeConfig } from '../home/config.js';
import { resolvePeer, type ResolvedPeer } from '../home/peer-resolve.js';
import type { PeerStore } from '../home/peer-store.js';
import type { Logger } from '../logger.js';
import type { PathSources } from '../reach/path-sources.js';
import { watchPeerShare } from '../folder-sync/share-watch-client.js';
import { isFolderPair, isPeerPair, pairKey, pairOf } from './pair-key.js';

/** First wait before a watch that ended is started again, ms; doubled each time to RETRY_MAX_MS. */
const RETRY_MS = 5_000;
const RETRY_MAX_MS = 300_000;
/** Watches (each a session) at most per peer. */
export const MAX_WATCHES_PER_PEER = 8;

/** What the watches dial with (the folder service's options). */
export interface PeerShareWatchesOptions {
  readonly identity: Identity;
  readonly config: NodeConfig;
  readonly log: Logger;
  readonly peers: PeerStore;
  readonly dialPaths?: (peer: ResolvedPeer) => Promise<PathSources>;
}

interface Watch {
  readonly stop: AbortController;
  timer: NodeJS.Timeout | undefined;
}

export class PeerShareWatches {
  readonly #o: PeerShareWatchesOptions;
  /** The peer's copy of a folder changed (or a watch of it started): sync the pair. */
  readonly #onChange: (folder: string, peerId: string) => void;
  readonly #watches = new Map<string, Watch>();
  /** Pairs whose peer ran a sync of the folder here: it syncs its changes itself. */
  readonly #selfSyncing = new Set<string>();
  #closed = false;

  constructor(o: PeerShareWatchesOptions, onChange: (folder: string, peerId: string) => void) {
    this.#o = o;
    this.#onChange = onChange;
  }

  /** This node synced `folder` with `peerId`, whose share is no kept folder: watch it (once). */
  synced(folder: string, peerId: string): void {
    const key = pairKey(folder, peerId);
    if (this.#closed || this.#selfSyncing.has(key) || this.#watches.has(key)) return;
    const peerWatches = [...this.#watches.keys()].filter((k) => isPeerPair(k, peerId)).length;
    if (peerWatches >= MAX_WATCHES_PER_PEER) return;
    const watch: Watch = { stop: new AbortController(), timer: undefined };
    this.#watches.set(key, watch);
    void this.#run(folder, peerId, watch, RETRY_MS);
  }

  /** `peerId` ran a sync of `folder` here: a folder service there syncs its changes itself; no watch. */
  selfSyncing(folder: string, peerId: string): void {
    const key = pairKey(folder, peerId);
    this.#selfSyncing.add(key);
    this.#end(key);
  }

  /** `folder` was removed or changed: its watches end (a sync after starts them again). */
  forget(folder: string): void {
    for (const key of [...this.#watches.keys()]) if (isFolderPair(key, folder)) this.#end(key);
    for (const key of [...this.#selfSyncing]) if (isFolderPair(key, folder)) this.#selfSyncing.delete(key);
  }

  /** The pairs watched now, as [folder, peer]. */
  watched(): [string, string][] {
    return [...this.#watches.keys()].map(pairOf);
  }

  close(): void {
    this.#closed = true;
    for (const key of [...this.#watches.keys()]) this.#end(key);
  }

  #end(key: string): void {
    const watch = this.#watches.get(key);
    if (watch === undefined) return;
    this.#watches.delete(key);
    clearTimeout(watch.timer);
    watch.stop.abort();
  }

  /** One watch session; when it ends, the next after `retryMs` (unless the watch was ended). */
  async #run(folder: string, peerId: string, watch: Watch, retryMs: number): Promise<void> {
    const log = this.#o.log.child('folders');
    let next = retryMs;
    try {
      const peer = await resolvePeer(this.#o.peers, peerId, undefined);
      const paths = await this.#o.dialPaths?.(peer);
      const ended = await watchPeerShare({
        identity: this.#o.identity,
        peer,
        config: this.#o.config,
        share: folder,
        log,
        signal: watch.stop.signal,
        ...(paths === undefined ? {} : { paths }),
        onWatching: () => {
          next = RETRY_MS; // it worked: a later end starts over from the first wait
          log.info("watching the peer's copy for changes (it runs no folder service of its own)", {
            folder,
            peer: peerId,
          });
          this.#onChange(folder, peerId);
        },
        onChange: () => this.#onChange(folder, peerId),
      });
      if (ended === 'unsupported') {
        log.info("the peer's clawpeer tells no changes: its copy is synced at the folder's interval", {
          folder,
          peer: peerId,
        });
        return; // stays in #watches: not tried again until the folder changes
      }
    } catch (err) {
      if (watch.stop.signal.aborted) return;
      log.debug("watch of the peer's copy failed; trying again", {
        folder,
        peer: peerId,
        error: (err as Error).message,
      });
    }
    if (watch.stop.signal.aborted || this.#watches.get(pairKey(folder, peerId)) !== watch) return;
    watch.timer = setTimeout(() => void this.#run(folder, peerId, watch, Math.min(next * 2, RETRY_MAX_MS)), next);
    watch.timer.unref();
  }
}
