// `sync --watch`: sync a folder with a peer's share now, then after every burst of local changes
// (debounced), whenever the peer says its share changed, and every interval, until the signal.
// The folder's watcher and log stay open across the syncs, as a listener keeps them: a sync
// skips the scan when nothing changed, or looks at just the changed files (synced-folder.ts).
// A retryable failure waits for the next change or interval; any other ends the watch.
// Non-goals: running one sync and printing it (the caller's `syncOnce`), option parsing (cli/).
// Light to import (the facade re-exports it): the watch modules load when called.
import { ClawpeerError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { NodeConfig } from '../home/config.js';
import type { PeerTarget } from '../reach/dial-paths.js';
import type { SyncModeName } from '../protocol/messages.js';
import type { ResidentFolders } from './synced-folder.js';

/** Quiet time after the last file-system event before --watch syncs, ms. */
export const WATCH_DEBOUNCE_MS = 500;
/** --watch also syncs this often without local events or the peer's notices (an older peer tells none), ms (default of --interval). */
export const WATCH_INTERVAL_MS = 30_000;
/** After the peer's change notices stop (its listener restarted, the link dropped), --watch asks again this often, ms. */
const PEER_WATCH_RETRY_MS = 10_000;

export interface SyncWhileWatchingOptions {
  readonly dir: string;
  readonly share: string;
  readonly mode: SyncModeName;
  readonly config: NodeConfig;
  /** Between syncs when nothing changed here and the peer told of no change, ms. */
  readonly intervalMs: number;
  /** The folder's watcher and the retry warnings log here. */
  readonly log: Logger;
  /** The peer's change notices log here. */
  readonly peerLog: Logger;
  readonly signal: AbortSignal;
  /** Who we are, the peer, and the ways to reach it (fresh for each dial). */
  selfAndPeer(): Promise<PeerTarget>;
  /** One sync (and its report); `resident` is the watched folder, for syncWithPeer. */
  syncOnce(resident: ResidentFolders): Promise<void>;
}

/** Syncs, then again on each change here or there and every interval, until `signal` aborts. */
export async function syncWhileWatching(o: SyncWhileWatchingOptions): Promise<void> {
  let dirty = false;
  let wake: (() => void) | undefined;
  const stopWatchingPeer = new AbortController();
  const peerWatch =
    o.mode === 'send-only'
      ? Promise.resolve()
      : followPeerChanges({
          selfAndPeer: () => o.selfAndPeer(),
          config: o.config,
          share: o.share,
          log: o.peerLog,
          signal: AbortSignal.any([o.signal, stopWatchingPeer.signal]),
          onChange: () => {
            dirty = true;
            wake?.();
          },
        });
  const watched = await watchLocalFolder({
    dir: o.dir,
    log: o.log,
    debounceMs: WATCH_DEBOUNCE_MS,
    onChange: () => (dirty = true),
    onSettled: () => wake?.(),
  });
  try {
    while (!o.signal.aborted) {
      dirty = false;
      try {
        await o.syncOnce(watched.folders);
      } catch (err) {
        if (o.signal.aborted) break;
        if (!(err instanceof ClawpeerError) || !err.retryable) throw err;
        o.log.warn('sync failed; retrying at the next change or interval', { error: err.message });
      }
      if (dirty) continue;
      await waitFor(o.intervalMs, o.signal, (w) => (wake = w));
      wake = undefined;
    }
  } finally {
    await watched.close();
    stopWatchingPeer.abort();
    await peerWatch;
  }
}

/** Resolves after `ms`, or at once when `signal` aborts or `wake` is called. */
function waitFor(ms: number, signal: AbortSignal, onWake: (wake: () => void) => void): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    onWake(done);
  });
}

/**
 * Keeps a watch on the peer's share (share-watch-client.ts) while --watch runs, so its changes
 * start a sync at once; --interval stays the fallback. A watch that ends is asked for again
 * every PEER_WATCH_RETRY_MS, and a renewed one starts a sync (changes in between were not told).
 * A peer whose clawpeer cannot tell changes is asked once. Never throws.
 */
async function followPeerChanges(o: {
  selfAndPeer: () => Promise<PeerTarget>;
  config: NodeConfig;
  share: string;
  log: Logger;
  signal: AbortSignal;
  onChange: () => void;
}): Promise<void> {
  let lost = false;
  while (!o.signal.aborted) {
    try {
      const { watchPeerShare } = await import('./share-watch-client.js');
      const { identity, peer, paths } = await o.selfAndPeer();
      const outcome = await watchPeerShare({
        identity,
        peer,
        paths,
        config: o.config,
        share: o.share,
        log: o.log,
        signal: o.signal,
        onChange: o.onChange,
        onWatching: () => {
          if (lost) o.onChange();
          o.log.debug('the peer tells this process when its share changes', { share: o.share });
        },
      });
      if (outcome === 'unsupported') {
        o.log.info(
          'the peer cannot tell when its share changes (an older clawpeer): its changes arrive every --interval',
        );
        return;
      }
    } catch (err) {
      if (o.signal.aborted) return;
      o.log.debug("watching the peer's share failed; its changes arrive every --interval until a retry works", {
        error: (err as Error).message,
      });
    }
    lost = true;
    await waitFor(PEER_WATCH_RETRY_MS, o.signal, () => undefined);
  }
}

/** A local folder watched for `sync --watch`: its watcher and log stay open across syncs. */
export interface WatchedFolder {
  /** Hand to syncWithPeer as `resident`: a sync then skips the scan when nothing changed. */
  readonly folders: ResidentFolders;
  /** Stops watching and closes the folder's log. */
  close(): Promise<void>;
}

/**
 * Creates `dir` if needed and watches it (folder-watcher.ts; one watch per directory). Every
 * change calls `onChange` at once and `onSettled` once changes have been quiet for
 * `debounceMs`. Publisher temp files are our own sync's, not changes; .clawpeer is not watched.
 */
export async function watchLocalFolder(o: {
  readonly dir: string;
  readonly log: Logger;
  readonly debounceMs: number;
  onChange(): void;
  onSettled(): void;
}): Promise<WatchedFolder> {
  const [{ makeDirs }, { QuietTimer }, { isTempFileName }, { realpath }, { ResidentFolders: Folders }] =
    await Promise.all([
      import('../support/make-dirs.js'),
      import('../support/quiet-timer.js'),
      import('../store/internal-names.js'),
      import('node:fs/promises'),
      import('./synced-folder.js'),
    ]);
  await makeDirs(o.dir);
  // A plain debounce: a quiet timer without a longest delay.
  const debounce = new QuietTimer(o.debounceMs, Infinity, () => o.onSettled());
  const folders = new Folders({ log: o.log });
  const stop = folders.watchers.forFolder(await realpath(o.dir)).subscribe((_dir: string, name: string | null) => {
    if (name !== null && isTempFileName(name)) return;
    o.onChange();
    debounce.poke();
  });
  return {
    folders,
    close: async () => {
      debounce.cancel();
      stop();
      await folders.close();
    },
  };
}
