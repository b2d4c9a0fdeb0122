// Connecting to a paired peer: dial the transport (auto: QUIC, then TLS over TCP), check the
// proven key is the pinned one before anything else, then run the client handshake.
import type { Identity } from '../crypto/identity.js';
import { nodeIdFromPublicKey } from '../crypto/node-id.js';
import { ClawpeerError } from '../errors.js';
import type { Logger } from '../logger.js';
import { backendByName } from '../transport/backends.js';
import type { Connection, DuplexStream, HostPort, TransportName } from '../transport/types.js';
import { formatHostPort } from '../home/address.js';
import { localCapabilities } from './chunk-compression.js';
import type { NodeConfig } from '../home/config.js';
import { clientHandshake } from './control-channel.js';
import type { ResolvedPeer } from '../home/peer-resolve.js';
import { PeerSession } from './session.js';
import { withTimeout } from '../support/timeouts.js';
import { addressSource, type PathSources } from '../reach/path-sources.js';
import { raceDial, type DialRaceWinner } from './dial-race.js';
import { stripeSession, type ConnectionsMode } from './session-join.js';

export interface DialOptions {
  readonly identity: Identity;
  readonly peer: ResolvedPeer;
  readonly config: NodeConfig;
  readonly log: Logger;
  readonly signal?: AbortSignal;
  /** The ways to try (reach/path-sources.ts pathSourcesFor); default: the peer's address alone. */
  readonly paths?: PathSources;
  /**
   * QUIC connections the session stripes its data over (session-join.ts): a number, or 'auto'
   * (one, more when a sender sees random loss). Default 1. Only on a path dialled straight to
   * the peer (lan, direct, mapped): a punched or relayed path's forwarder carries one connection.
   */
  readonly connections?: ConnectionsMode;
}

/** Where and how to connect, before any peer is known (pair join connects to a key it learns). */
export interface ConnectOptions {
  readonly identity: Identity;
  readonly address: HostPort;
  /** How messages name the other side. */
  readonly label: string;
  readonly config: NodeConfig;
  readonly log: Logger;
  readonly signal?: AbortSignal;
}

/** Failures worth another transport: the path did not work, not the peer refusing us. */
function isPathFailure(err: unknown): boolean {
  return (
    err instanceof ClawpeerError &&
    (err.code === 'UNREACHABLE' || err.code === 'TIMEOUT' || err.code === 'TRANSPORT_UNAVAILABLE')
  );
}

async function connectWith(name: TransportName, options: ConnectOptions, timeoutMs: number): Promise<Connection> {
  const backend = await backendByName(name);
  const { host, port } = options.address;
  // The connect timeout bounds only the connect: the connection keeps the configured idle
  // timeout, so a link that drops for a few seconds mid-transfer does not end it.
  const deadline = AbortSignal.timeout(timeoutMs);
  const signal = options.signal === undefined ? deadline : AbortSignal.any([options.signal, deadline]);
  try {
    return await backend.connect({
      host,
      port,
      identity: options.identity,
      idleTimeoutMs: options.config.idleTimeoutMs,
      keepAliveMs: options.config.keepAliveMs,
      maxStreams: options.config.maxStreams,
      signal,
    });
  } catch (err) {
    if (deadline.aborted && options.signal?.aborted !== true) {
      throw new ClawpeerError(
        'TIMEOUT',
        `${name} connect to ${formatHostPort(options.address)} timed out after ${timeoutMs} ms`,
        { cause: err },
      );
    }
    throw err;
  }
}

/** The transport connection (auto: QUIC, then TLS over TCP); the key it proves is the caller's to check. */
export async function connectTransport(options: ConnectOptions): Promise<Connection> {
  const { config, log } = options;
  const where = formatHostPort(options.address);
  if (config.transport !== 'auto') return connectWith(config.transport, options, config.connectTimeoutMs);
  try {
    return await connectWith('quic', options, config.connectTimeoutMs);
  } catch (quicErr) {
    if (!isPathFailure(quicErr)) throw quicErr;
    log.info('QUIC did not connect, trying TLS over TCP', { addr: where, error: (quicErr as Error).message });
    try {
      return await connectWith('tcp', options, config.connectTimeoutMs);
    } catch (tcpErr) {
      if (!isPathFailure(tcpErr)) throw tcpErr;
      throw new ClawpeerError(
        (tcpErr as ClawpeerError).code,
        `peer ${options.label} unreachable at ${where}: QUIC: ${(quicErr as Error).message}; TCP: ${(tcpErr as Error).message}`,
        { cause: tcpErr },
      );
    }
  }
}

/**
 * The first stream of a new connection, within the handshake's deadline: opening waits for the
 * peer's stream credit, which a stalled or hostile peer may never give (the connect and the
 * handshake each have their own deadline; this wait had none).
 */
export function openControlStream(
  conn: Connection,
  timeoutMs: number,
  label: string,
  signal?: AbortSignal,
): Promise<DuplexStream> {
  return withTimeout(conn.openStream(), timeoutMs, `opening the control stream to ${label}`, signal);
}

/**
 * The connection came up but the handshake on it timed out or broke: typically a listener
 * killed (or restarted) just as we connected, whose dead connection says nothing over QUIC.
 */
function isUnansweredHandshake(err: unknown): boolean {
  return (
    err instanceof ClawpeerError &&
    (err.code === 'TIMEOUT' || err.code === 'CONNECTION_CLOSED') &&
    err.wire === undefined
  );
}

/** A connection that passed the handshake with the pinned peer, not yet a session (the race may drop it). */
interface Handshaken {
  readonly conn: Connection;
  readonly handshake: Awaited<ReturnType<typeof clientHandshake>>;
}

/**
 * Connects and handshakes with the pinned peer: through the ways `paths` offers, raced
 * (dial-race.ts), or at its one address when no paths are given (bench, doctor). The session
 * reports the path its connection takes, and frees what the path holds once it is gone.
 */
export async function dialPeer(options: DialOptions): Promise<PeerSession> {
  const { peer } = options;
  const paths =
    options.paths ??
    (peer.address !== undefined
      ? { sources: [addressSource('direct', peer.address, 'direct')], release: () => undefined }
      : undefined);
  if (paths === undefined) {
    throw new ClawpeerError(
      'USAGE',
      `no address for peer ${peer.name} (${peer.id}): pass --addr HOST:PORT or re-pair with --addr`,
    );
  }
  let won: DialRaceWinner<Handshaken>;
  try {
    won = await raceDial<Handshaken>({
      peer,
      sources: paths.sources,
      attempt: (candidate, signal) => dialAddress(options, candidate.address, signal),
      // Closed as a session is (control stream finished first): the listener sees a peer leave, not a failure.
      discard: ({ conn, handshake }) => new PeerSession(conn, handshake).close('another path won'),
      log: options.log,
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    });
  } catch (err) {
    paths.release();
    throw err;
  }
  const { candidate, value } = won;
  const wonOn = candidate.path();
  paths.connected?.(wonOn, candidate.address, value.conn.stats().rttMs);
  const session = new PeerSession(value.conn, value.handshake, {
    path: () => candidate.path(),
    ...(candidate.relay === undefined ? {} : { relay: candidate.relay }),
    onGone: () => {
      // A relayed connection that moved to a punched hole is remembered as punched.
      const endedOn = candidate.path();
      if (endedOn !== wonOn) paths.connected?.(endedOn, candidate.address);
      candidate.release();
      paths.release();
    },
  });
  const mode = options.connections ?? 1;
  const kind = candidate.path();
  if (mode !== 1 && value.conn.transport === 'quic' && (kind === 'direct' || kind === 'lan' || kind === 'mapped')) {
    const { config, log } = options;
    try {
      await stripeSession(session, mode, {
        connect: () =>
          connectTransport({
            identity: options.identity,
            address: candidate.address,
            label: peer.name,
            config: { ...config, transport: 'quic' },
            log,
            ...(options.signal === undefined ? {} : { signal: options.signal }),
          }),
        label: peer.name,
        handshakeTimeoutMs: config.handshakeTimeoutMs,
        log,
        ...(options.signal === undefined ? {} : { signal: options.signal }),
      });
    } catch (err) {
      await session.close('dial aborted').catch(() => undefined);
      throw err;
    }
  }
  return session;
}

/**
 * One address: when the connection comes up and the handshake on it is never answered (a
 * listener that stopped or restarted just then), it dials once more: nothing was asked of the
 * peer yet, and a restarted listener answers a new connection.
 */
async function dialAddress(options: DialOptions, address: HostPort, signal: AbortSignal): Promise<Handshaken> {
  let first: unknown;
  try {
    return await dialOnce(options, address, signal);
  } catch (err) {
    if (!(err instanceof HandshakeFailure) || !isUnansweredHandshake(err.cause) || signal.aborted)
      throw err instanceof HandshakeFailure ? err.cause : err;
    first = err.cause;
  }
  options.log.info(
    'the peer did not answer the handshake; dialling once more (a listener that just stopped or restarted?)',
    { peer: options.peer.name, error: (first as Error).message },
  );
  try {
    return await dialOnce(options, address, signal);
  } catch (err) {
    const cause = err instanceof HandshakeFailure ? err.cause : err;
    if (!(err instanceof HandshakeFailure) || !isUnansweredHandshake(cause)) throw cause;
    const c = cause as ClawpeerError;
    throw new ClawpeerError(
      c.code,
      `peer ${options.peer.name} at ${formatHostPort(address)} took the connection but did not answer the handshake, twice: ${c.message}`,
      { cause },
    );
  }
}

/** A failure after the transport connected (the caller may dial again); `cause` is what to report. */
class HandshakeFailure extends Error {
  constructor(override readonly cause: unknown) {
    super('handshake failed');
  }
}

async function dialOnce(options: DialOptions, address: HostPort, signal: AbortSignal): Promise<Handshaken> {
  const { peer, config } = options;
  const connecting = connectTransport({
    identity: options.identity,
    address,
    label: peer.name,
    config,
    log: options.log,
    signal,
  });
  // Loading the zstd binding takes ~10 ms and blocks: do it while the transport handshake is in
  // flight rather than before the Hello (a failed connect leaves it loaded, which is harmless).
  const caps = new Promise((resolve) => setImmediate(resolve)).then(() => localCapabilities(config.compression));
  caps.catch(() => undefined); // awaited below once connected; a failed connect ignores it
  const conn = await connecting;
  try {
    const provenId = nodeIdFromPublicKey(conn.remotePublicKey);
    if (provenId !== peer.id) {
      throw new ClawpeerError(
        'AUTH_FAILED',
        `the node at ${formatHostPort(address)} is ${provenId}, not ${peer.name} (${peer.id}); refusing to talk to it`,
      );
    }
    const stream = await openControlStream(conn, config.handshakeTimeoutMs, peer.name, signal);
    const handshake = await clientHandshake(stream, {
      identity: options.identity,
      expectedRemoteKey: peer.publicKey,
      caps: await caps,
      timeoutMs: config.handshakeTimeoutMs,
      signal,
    });
    return { conn, handshake };
  } catch (err) {
    await conn.close().catch(() => undefined);
    throw new HandshakeFailure(err);
  }
}
