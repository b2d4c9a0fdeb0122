// The dialer's side of striping a session over several QUIC connections (feature join).
//
// A connection joins by sending, as the first message on its first stream and instead of a
// Hello, a SessionJoin: the session's id, the connection's number (1, 2, ...) and an HMAC of both
// under the session's join key (crypto/session-keys.ts joinProof). The listener checks it
// against the session, refuses a wrong, replayed or foreign one (listener/server.ts), and
// answers SessionJoined. No second handshake, no second authentication: TLS proved the same
// key, the proof shows the session's keys. Data streams then go over every connection
// (PeerSession.openDataStream), each connection its own congestion window.
//
// `--connections N` forces N (opened before the first request); `auto` starts with one and
// grows when a sender sees random loss (session/loss-watch.ts on this side, JoinWanted from the
// listener when it sends).
import { setMaxListeners } from 'node:events';
import { nodeIdFromPublicKey } from '../crypto/node-id.js';
import { joinProof } from '../crypto/session-keys.js';
import { ClawpeerError } from '../errors.js';
import type { Logger } from '../logger.js';
import { encodeControlFrame } from '../protocol/messages.js';
import type { Connection } from '../transport/types.js';
import { readLoneMessage } from './control-channel.js';
import { AUTO_MAX_CONNECTIONS } from './loss-watch.js';
import type { PeerSession } from './session.js';
import { withTimeout } from '../support/timeouts.js';

/** `--connections`: a fixed number (1 = one connection, as before) or automatic. */
export type ConnectionsMode = 'auto' | number;
/** The largest `--connections N` (the listener's cap on joins is one less). */
export const MAX_FORCED_CONNECTIONS = 16;

export interface JoinContext {
  /** A new transport connection to where the session's first one went (dialer.ts connectTransport). */
  readonly connect: () => Promise<Connection>;
  /** How messages name the peer. */
  readonly label: string;
  readonly handshakeTimeoutMs: number;
  readonly log: Logger;
  readonly signal?: AbortSignal;
}

/**
 * Opens one more connection to the session's peer and joins it to the session as number
 * `index`. Rejects (closing what it opened) when the listener refuses.
 */
export async function joinSession(session: PeerSession, index: number, ctx: JoinContext): Promise<Connection> {
  const conn = await ctx.connect();
  try {
    const proven = nodeIdFromPublicKey(conn.remotePublicKey);
    if (proven !== session.peerId)
      throw new ClawpeerError(
        'AUTH_FAILED',
        `the node reached for ${ctx.label} is ${proven}, not ${session.peerId}: not joining it to the session`,
      );
    const stream = await withTimeout(
      conn.openStream(),
      ctx.handshakeTimeoutMs,
      `opening the join stream to ${ctx.label}`,
      ctx.signal,
    );
    const join = encodeControlFrame({
      type: 'session-join',
      sessionId: session.sessionId,
      index,
      proof: joinProof(session.keys.joinKey, session.sessionId, index),
    });
    await withTimeout(stream.write(join), ctx.handshakeTimeoutMs, `sending the join to ${ctx.label}`, ctx.signal);
    const reply = await readLoneMessage(stream, ctx.handshakeTimeoutMs, ctx.signal);
    if (reply?.type !== 'session-joined' || reply.index !== index) {
      throw new ClawpeerError(
        'PROTOCOL',
        `${ctx.label} answered a join with ${reply === null ? 'nothing' : reply.type}, not session-joined ${index}`,
      );
    }
    session.addConnection(conn);
    return conn;
  } catch (err) {
    await conn.close('join failed', { linger: false }).catch(() => undefined);
    throw err;
  }
}

/**
 * Sets up `mode` on a session this side dialled. A number opens that many connections in all
 * now (the transfer then starts on all of them); `auto` lets a loss watch or the listener's
 * JoinWanted add them later, up to AUTO_MAX_CONNECTIONS. A peer without the join feature keeps
 * one connection. A join that fails is logged and ends the growth; the session goes on.
 */
export async function stripeSession(session: PeerSession, mode: ConnectionsMode, ctx: JoinContext): Promise<void> {
  if (mode === 1 || !session.caps.features.includes('join')) return;
  // Each join's connect and handshake waits on the signal: up to 15 at once are normal.
  if (ctx.signal !== undefined) setMaxListeners(0, ctx.signal);
  let nextIndex = 1;
  let failed = false;
  let growing: Promise<void> = Promise.resolve();
  const growTo = (target: number): Promise<void> => {
    growing = growing.then(async () => {
      const want = Math.min(target, mode === 'auto' ? AUTO_MAX_CONNECTIONS : mode) - session.connections().length;
      if (want <= 0 || failed) return;
      const joins = Array.from({ length: want }, () => joinSession(session, nextIndex++, ctx));
      const results = await Promise.allSettled(joins);
      const refused = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (refused !== undefined) {
        failed = true;
        ctx.log.warn('a connection could not join the session: going on with those it has', {
          peer: session.peerId,
          connections: session.connections().length,
          error: (refused.reason as Error).message,
        });
      } else {
        ctx.log.info('connections joined the session', {
          peer: session.peerId,
          connections: session.connections().length,
        });
      }
    });
    return growing;
  };
  if (mode === 'auto') {
    session.setConnectionsWanted((n) => void growTo(n));
    session.control.onJoinWanted = (n) => void growTo(n);
    return;
  }
  await growTo(mode);
}

/**
 * Runs `body` (a receiver taking data streams while nothing else reads the control stream: a
 * pull's data phase) with the control stream read meanwhile, so a listener's JoinWanted is
 * acted on during the transfer, not after it. Only on a session that may grow (auto mode). A
 * peer's Error read here stays in the channel (ControlChannel keeps it for the next receive).
 */
export async function hearingJoinHints<T>(session: PeerSession, body: () => Promise<T>): Promise<T> {
  if (!session.canAddConnections || !session.caps.features.includes('join')) return body();
  const stop = new AbortController();
  // Hints are taken inside receive(), which reads on; anything else returned here is not
  // expected while data flows, and the body's own failure will say what went wrong.
  const hearing = session.control.receive({ signal: stop.signal });
  hearing.catch(() => undefined);
  try {
    return await body();
  } finally {
    stop.abort();
    await hearing.catch(() => undefined);
  }
}
