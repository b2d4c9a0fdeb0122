// The listener's side of connections joining a session (feature join; the dialer's side and the
// message flow are in session/session-join.ts). A join is checked, in this order, against:
// the session it names (one of this listener's live sessions with the feature), the key TLS
// proved on the new connection (the session's peer), the connection number (1..MAX_JOINS_PER_SESSION),
// the proof (HMAC under the session's join key, compared in constant time), and the numbers
// used already (each once: a replayed join is refused). Any failure is told to the joiner as an
// Error (AUTH_FAILED, or BUSY over the cap) and costs only that connection.
import { joinProof, joinProofMatches } from '../crypto/session-keys.js';
import { ClawpeerError, WIRE_ERRORS, type WireErrorCode } from '../errors.js';
import type { Logger } from '../logger.js';
import { encodeControlFrame, type SessionJoinMessage } from '../protocol/messages.js';
import type { PeerSession } from '../session/session.js';
import { settledWithin, withTimeout } from '../support/timeouts.js';
import type { Connection, DuplexStream } from '../transport/types.js';

/** Connections that may join one session (16 in all with the first): README "Limits". */
export const MAX_JOINS_PER_SESSION = 15;
/** How long a refused joiner has to read why before its connection is closed, ms. */
const JOIN_REFUSAL_LINGER_MS = 2_000;

interface Joinable {
  readonly session: PeerSession;
  readonly used: Set<number>;
}

export class SessionJoins {
  readonly #sessions = new Map<string, Joinable>();

  /**
   * Makes `session` joinable (when its peer announced the feature) and lets a loss watch on it
   * ask the client for connections (JoinWanted). Returns the function that ends both.
   */
  register(session: PeerSession, log: Logger): () => void {
    if (!session.caps.features.includes('join')) return () => undefined;
    const key = Buffer.from(session.sessionId).toString('hex');
    this.#sessions.set(key, { session, used: new Set() });
    let asked = 1;
    session.setConnectionsWanted((connections) => {
      if (connections <= asked) return;
      asked = connections;
      session.control
        .send({ type: 'join-wanted', connections })
        .catch((err: unknown) => log.debug('could not ask for connections', { error: (err as Error).message }));
    });
    return () => {
      this.#sessions.delete(key);
      session.setConnectionsWanted(undefined);
    };
  }

  /**
   * Serves a SessionJoin that came first on `conn` (from the paired `peerId`): joins it and
   * holds until the connection is gone, or refuses it with a clear error.
   */
  async serve(
    conn: Connection,
    stream: DuplexStream,
    join: SessionJoinMessage,
    peerId: string,
    log: Logger,
  ): Promise<void> {
    let joinable: Joinable;
    try {
      joinable = this.#check(join, peerId);
    } catch (err) {
      const e = err as ClawpeerError;
      log.warn('refused a connection joining a session', {
        id: peerId,
        index: join.index,
        code: e.code,
        error: e.message,
      });
      await refuse(stream, e.code === 'PEER_BUSY' ? 'BUSY' : 'AUTH_FAILED', e.message);
      await settledWithin(conn.closed, JOIN_REFUSAL_LINGER_MS);
      return;
    }
    joinable.used.add(join.index);
    joinable.session.addConnection(conn);
    log.info('a connection joined the session', {
      id: peerId,
      index: join.index,
      connections: joinable.session.connections().length,
    });
    await withTimeout(
      stream.write(encodeControlFrame({ type: 'session-joined', index: join.index })),
      JOIN_REFUSAL_LINGER_MS,
      'sending SessionJoined',
    ).catch(() => undefined);
    await conn.closed; // the session closes it when it ends, or the peer does
  }

  #check(join: SessionJoinMessage, peerId: string): Joinable {
    const key = Buffer.from(join.sessionId).toString('hex');
    const joinable = this.#sessions.get(key);
    if (joinable === undefined)
      throw new ClawpeerError(
        'AUTH_FAILED',
        `join refused: no session ${key} open here (it ended, or it is another node's)`,
      );
    const { session, used } = joinable;
    if (session.peerId !== peerId)
      throw new ClawpeerError('AUTH_FAILED', `join refused: session ${key} is not node ${peerId}'s`);
    if (!Number.isInteger(join.index) || join.index < 1 || join.index > MAX_JOINS_PER_SESSION) {
      throw new ClawpeerError(
        'PEER_BUSY',
        `join refused: connection number ${join.index} is outside 1..${MAX_JOINS_PER_SESSION} (at most ${MAX_JOINS_PER_SESSION + 1} connections per session)`,
      );
    }
    if (!joinProofMatches(joinProof(session.keys.joinKey, session.sessionId, join.index), join.proof)) {
      throw new ClawpeerError(
        'AUTH_FAILED',
        `join refused: the proof for connection ${join.index} of session ${key} does not verify (not made with this session's keys)`,
      );
    }
    if (used.has(join.index))
      throw new ClawpeerError(
        'AUTH_FAILED',
        `join refused: connection ${join.index} of session ${key} joined already (a replayed join)`,
      );
    return joinable;
  }
}

async function refuse(stream: DuplexStream, code: WireErrorCode, message: string): Promise<void> {
  await withTimeout(
    stream.write(encodeControlFrame({ type: 'error', code: WIRE_ERRORS[code].wire, message })),
    1_000,
    `sending ${code}`,
  ).catch(() => undefined);
  await stream.finish().catch(() => undefined);
}
