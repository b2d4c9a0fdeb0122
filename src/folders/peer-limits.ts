// What a peer's copy of a shared folder refuses, learnt from its refusals (folder-service.ts):
// a send-only copy there takes no changes (SHARE_READ_ONLY), a receive-only one gives none (the
// receive-only refusal). The pair's syncs then run narrowed to what can still move. Forgotten
// when the peer comes online again: its copies may have changed mode while it was away.
import { isClawpeerError } from '../errors.js';
import type { FolderConfig, FolderMode } from '../home/folders-config.js';
import type { Logger } from '../logger.js';
import { RECEIVE_ONLY_REFUSAL } from '../folder-sync/sync-service.js';
import { isPeerPair, pairKey } from './pair-key.js';

/** The mode a sync with a peer runs in, given what the peer's copy refused (undefined: nothing can move). */
function narrowed(mode: FolderMode, peerTakes: boolean, peerGives: boolean): FolderMode | undefined {
  const sends = mode !== 'receive-only' && peerTakes;
  const receives = mode !== 'send-only' && peerGives;
  return sends && receives ? 'two-way' : sends ? 'send-only' : receives ? 'receive-only' : undefined;
}

export class PeerLimits {
  /** Per pair: the peer's copy takes no changes (send-only there) or gives none (receive-only there). */
  readonly #limits = new Map<string, { takes: boolean; gives: boolean }>();

  /** The peer came online: learn its copies' modes again from its refusals. */
  forgetPeer(peerId: string): void {
    for (const key of [...this.#limits.keys()]) if (isPeerPair(key, peerId)) this.#limits.delete(key);
  }

  /** The mode the pair's syncs run in (undefined: nothing can move). */
  modeFor(f: FolderConfig, peer: string): FolderMode | undefined {
    const limits = this.#limits.get(pairKey(f.id, peer));
    return limits === undefined ? f.mode : narrowed(f.mode, limits.takes, limits.gives);
  }

  /** Learns from a failed sync's error; true when it narrowed the pair's mode (retry at once, narrowed). */
  learn(err: unknown, f: FolderConfig, peerId: string, log: Logger): boolean {
    const key = pairKey(f.id, peerId);
    const limits = this.#limits.get(key) ?? { takes: true, gives: true };
    if (isClawpeerError(err, 'SHARE_READ_ONLY') && limits.takes) {
      this.#limits.set(key, { ...limits, takes: false });
      log.info("the peer's copy takes no changes (send-only there): only receiving from it", {
        folder: f.id,
        peer: peerId,
      });
      return true;
    }
    if (isClawpeerError(err, 'SHARE_FORBIDDEN') && err.message.includes(RECEIVE_ONLY_REFUSAL) && limits.gives) {
      this.#limits.set(key, { ...limits, gives: false });
      log.info("the peer's copy sends no changes (receive-only there): only sending to it", {
        folder: f.id,
        peer: peerId,
      });
      return true;
    }
    return false;
  }
}
