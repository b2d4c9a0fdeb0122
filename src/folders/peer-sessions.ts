// The folder service's sessions: one per peer, dialled when first needed and reused by every
// folder shared with that peer in turn (the scheduler runs one sync per peer at a time). A
// session that failed a sync, was closed by the peer (its idle timeout) or sat unused for
// IDLE_CLOSE_MS is closed and the next sync dials again.
import type { Identity } from '../crypto/identity.js';
import type { Logger } from '../logger.js';
import type { NodeConfig } from '../home/config.js';
import type { ResolvedPeer } from '../home/peer-resolve.js';
import { formatHostPort } from '../home/address.js';
import type { PathSources } from '../reach/path-sources.js';
import { dialPeer } from '../session/dialer.js';
import { pingPeer } from '../session/ping.js';
import type { ConnectedPeer } from '../session/listener-activity.js';
import type { PeerSession } from '../session/session.js';

/** A session no sync used for this long is closed (the listener's side closes idle ones after minutes too), ms. */
export const IDLE_CLOSE_MS = 120_000;
/** How long that ping may take, ms. */
const PING_TIMEOUT_MS = 2_000;

interface Held {
  readonly session: PeerSession;
  /** When its handshake completed, ms since the epoch. */
  readonly since: number;
  lastUsed: number;
  closed: boolean;
}

export class PeerSessions {
  readonly #held = new Map<string, Held>();
  readonly #o: {
    identity: Identity;
    config: NodeConfig;
    log: Logger;
    dialPaths?: (peer: ResolvedPeer) => Promise<PathSources>;
  };

  constructor(o: {
    identity: Identity;
    config: NodeConfig;
    log: Logger;
    dialPaths?: (peer: ResolvedPeer) => Promise<PathSources>;
  }) {
    this.#o = o;
  }

  /**
   * The open session to `peer` once it answered a ping, or a new one (dial errors are thrown).
   * The ping costs a round trip per sync and finds a peer killed since the last sync at once: a
   * sync sent into a dead session would hold the folder's lock until the transport's idle timeout.
   */
  async get(peer: ResolvedPeer, signal: AbortSignal): Promise<PeerSession> {
    const held = this.#held.get(peer.id);
    if (held !== undefined && !held.closed && (await answers(held.session, signal))) {
      held.lastUsed = Date.now();
      return held.session;
    }
    if (held !== undefined) await this.drop(peer.id);
    const paths = await this.#o.dialPaths?.(peer);
    const session = await dialPeer({
      identity: this.#o.identity,
      peer,
      config: this.#o.config,
      log: this.#o.log,
      signal,
      ...(paths === undefined ? {} : { paths }),
    });
    const entry: Held = { session, since: Date.now(), lastUsed: Date.now(), closed: false };
    this.#held.set(peer.id, entry);
    const gone = (): void => {
      entry.closed = true;
      if (this.#held.get(peer.id) === entry) this.#held.delete(peer.id);
    };
    void session.connection.closed.then(gone, gone);
    return session;
  }

  /** Notes that a sync just used the session to `peerId` (for closing idle ones). */
  used(peerId: string): void {
    const held = this.#held.get(peerId);
    if (held !== undefined) held.lastUsed = Date.now();
  }

  /** Closes the session to `peerId` (after a failed sync: its control stream may be mid-exchange). */
  async drop(peerId: string): Promise<void> {
    const held = this.#held.get(peerId);
    if (held === undefined) return;
    this.#held.delete(peerId);
    held.closed = true;
    await held.session.close('done').catch(() => undefined);
  }

  /** Closes the sessions unused since `nowMs - IDLE_CLOSE_MS`, except `busy` peers'. */
  async closeIdle(nowMs: number, busy: ReadonlySet<string>): Promise<void> {
    for (const [id, held] of [...this.#held]) {
      if (!busy.has(id) && nowMs - held.lastUsed >= IDLE_CLOSE_MS) await this.drop(id);
    }
  }

  /** The sessions open now, as `status` lists connected peers (`dialed`: this side dialled them). */
  connected(): ConnectedPeer[] {
    return [...this.#held]
      .filter(([, held]) => !held.closed)
      .map(([id, { session, since }]) => ({
        id,
        addr: formatHostPort(session.connection.remoteAddress),
        transport: session.connection.transport,
        since,
        path: session.path(),
        rttMs: Math.round(session.rttMs() * 1000) / 1000,
        dialed: true,
      }));
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.#held.keys()].map((id) => this.drop(id)));
  }
}

/** True when the peer answers a ping on `session` in time. */
async function answers(session: PeerSession, signal: AbortSignal): Promise<boolean> {
  try {
    for await (const _ of pingPeer(session, { count: 1, intervalMs: 0, timeoutMs: PING_TIMEOUT_MS, signal }))
      return true;
    return false;
  } catch {
    return false;
  }
}
