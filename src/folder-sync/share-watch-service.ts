// The listener's side of WatchShare (feature 'watch'): a client's session asks to be told when
// a share changes, and gets a ShareChanged after each burst of changes for as long as the
// session lasts. This is how `sync --watch` on the other machine learns of changes here at once
// instead of at its next --interval poll (Syncthing's peers announce index updates the same way).
//
// The share's folder watcher is the listener's resident one (folder-sync/folder-watcher.ts: one inotify
// watch per directory, shared with the scan-skipping of syncs), or, without resident folders, one
// of this session's own. Our own publishes' temp files are not changes; their renames are.
// A share whose changes raise no events (a network file system) is confirmed all the same: the
// client's --interval still covers it.
// A receive-only shared folder is confirmed and then never told of.
// Non-goals: saying what changed (the client's sync reconciles), remembering changes across
// sessions (a client that reconnects syncs first).

import { ClawpeerError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { WatchShareMessage } from '../protocol/messages.js';
import { FolderWatcher } from './folder-watcher.js';
import { isTempFileName } from '../store/internal-names.js';
import { QuietTimer } from '../support/quiet-timer.js';
import type { PeerSession } from '../session/session.js';
import type { Share } from '../home/shares.js';
import type { ResidentFolders } from './synced-folder.js';

/** Quiet time after the last change before a ShareChanged goes out, ms (a copy raises several events per file). */
export const SHARE_CHANGED_QUIET_MS = 300;
/** Longest a ShareChanged waits under a steady stream of changes, ms. */
export const SHARE_CHANGED_MAX_DELAY_MS = 2_000;
/**
 * Longest the confirmation waits for the watcher to cover the share's tree, ms (one inotify
 * watch per directory: a large tree takes a while; the client's --interval covers what a
 * confirmation sent before that misses).
 */
export const WATCH_COVER_WAIT_MS = 10_000;
/** Shares one session may watch: each costs a subscription (and, without resident folders, a watcher). */
export const MAX_WATCHES_PER_SESSION = 16;

interface Watch {
  readonly stop: () => void;
  /** Resolves once the watcher covers the tree (or WATCH_COVER_WAIT_MS passed). */
  readonly covered: Promise<void>;
}

/** The share watches of one session; close() when the session ends. */
export class ShareWatches {
  readonly #session: PeerSession;
  readonly #log: Logger;
  readonly #resident: ResidentFolders | undefined;
  readonly #byShare = new Map<string, Watch>();

  constructor(session: PeerSession, options: { log: Logger; resident?: ResidentFolders }) {
    this.#session = session;
    this.#log = options.log;
    this.#resident = options.resident;
  }

  /** Shares watched: a session with any is not idle (its client waits for news). */
  get size(): number {
    return this.#byShare.size;
  }

  /** Starts watching `share` (already resolved and allowed for this peer) and confirms with seq 0. */
  async add(share: Share, request: WatchShareMessage): Promise<void> {
    if (!this.#byShare.has(share.dir)) {
      if (this.#byShare.size >= MAX_WATCHES_PER_SESSION) {
        throw new ClawpeerError('PROTOCOL', `a session may watch at most ${MAX_WATCHES_PER_SESSION} shares`);
      }
      this.#byShare.set(share.dir, this.#start(share, request.share));
      this.#log.info('peer watches a share', { peer: this.#session.peerId, share: share.name });
    }
    // Confirmed once changes are seen: a change the client makes right after would be missed.
    await this.#byShare.get(share.dir)?.covered;
    await this.#session.control.send({ type: 'share-changed', share: request.share, seq: 0 });
  }

  #start(share: Share, name: string): Watch {
    // A receive-only folder gives a peer nothing (sync-service.ts refuses every sync that would
    // take from it), so no change of it is news there: its local edits are not even told.
    if (share.receiveOnly === true) return { covered: Promise.resolve(), stop: () => undefined };
    const watcher = this.#resident?.watchers.forFolder(share.dir) ?? FolderWatcher.start(share.dir, { log: this.#log });
    const own = this.#resident === undefined ? watcher : undefined;
    let seq = 0;
    const notice = new QuietTimer(SHARE_CHANGED_QUIET_MS, SHARE_CHANGED_MAX_DELAY_MS, () => {
      this.#session.control.send({ type: 'share-changed', share: name, seq: ++seq }).catch(() => undefined); // the session is ending
    });
    const unsubscribe = watcher.subscribe((_dir, entry) => {
      if (entry === null || !isTempFileName(entry)) notice.poke();
    });
    let coverTimer: NodeJS.Timeout | undefined;
    const covered = Promise.race([
      watcher.whenIdle(),
      new Promise<void>((resolve) => (coverTimer = setTimeout(resolve, WATCH_COVER_WAIT_MS))),
    ]).finally(() => clearTimeout(coverTimer));
    return {
      covered,
      stop: () => {
        notice.cancel();
        clearTimeout(coverTimer);
        unsubscribe();
        own?.close();
      },
    };
  }

  close(): void {
    for (const w of this.#byShare.values()) w.stop();
    this.#byShare.clear();
  }
}
