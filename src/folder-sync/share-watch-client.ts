// `sync --watch`'s ear on the peer: one session that asks the peer's listener to tell it when
// the share changes (WatchShare, feature 'watch'; share-watch-service.ts is the other side), so
// a change there starts a sync here at once instead of at the next --interval.
// Non-goals: syncing (the caller does, on its own sessions), retrying (the caller decides).

import type { Identity } from '../crypto/identity.js';
import { ClawpeerError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { NodeConfig } from '../home/config.js';
import { dialPeer } from '../session/dialer.js';
import type { PathSources } from '../reach/path-sources.js';
import type { ResolvedPeer } from '../home/peer-resolve.js';
import { expectMessage } from '../exchange/transfer-control.js';

/** How long the peer may take to confirm a watch, ms (it only resolves the share and subscribes). */
const WATCH_CONFIRM_TIMEOUT_MS = 30_000;

export interface WatchPeerShareOptions {
  readonly identity: Identity;
  readonly peer: ResolvedPeer;
  readonly config: NodeConfig;
  /** The ways to reach the peer (reach/path-sources.ts); default: its address alone. */
  readonly paths?: PathSources;
  readonly share: string;
  readonly log: Logger;
  readonly signal: AbortSignal;
  /** The peer confirmed the watch: changes from now on are told. */
  readonly onWatching?: () => void;
  /** Something in the share changed (a burst of changes is told once). */
  readonly onChange: () => void;
}

/**
 * Dials the peer and listens for changes of the share until the session ends: 'closed' when the
 * peer closed it, 'unsupported' (at once) when the peer's clawpeer cannot tell changes. Throws
 * when dialling fails, the peer refuses (an unknown or forbidden share), or `signal` aborts.
 */
export async function watchPeerShare(o: WatchPeerShareOptions): Promise<'closed' | 'unsupported'> {
  const session = await dialPeer({
    identity: o.identity,
    peer: o.peer,
    config: o.config,
    log: o.log,
    signal: o.signal,
    ...(o.paths === undefined ? {} : { paths: o.paths }),
  });
  try {
    if (!session.caps.features.includes('watch')) return 'unsupported';
    await session.control.send({ type: 'watch-share', share: o.share });
    const confirmed = await expectMessage(session, 'share-changed', 0, WATCH_CONFIRM_TIMEOUT_MS, o.signal);
    if (confirmed.seq !== 0 || confirmed.share !== o.share) {
      throw new ClawpeerError(
        'PROTOCOL',
        `peer ${session.peerId} answered a watch of ${JSON.stringify(o.share)} with change ${confirmed.seq} of ${JSON.stringify(confirmed.share)}`,
      );
    }
    o.onWatching?.();
    for (;;) {
      const msg = await session.control.receive({ signal: o.signal });
      if (msg === null) return 'closed';
      if (msg.type !== 'share-changed' || msg.share !== o.share) {
        throw new ClawpeerError(
          'PROTOCOL',
          `peer ${session.peerId} sent ${msg.type} on a share watch of ${JSON.stringify(o.share)}`,
        );
      }
      o.onChange();
    }
  } finally {
    await session.close('done').catch(() => undefined);
  }
}
