// A pinned, handshaken connection to one peer: the transport connection, the control channel,
// the negotiated version and capabilities, and the session keys for the data plane.
import { DataOpener, DataSealer } from '../protocol/aead.js';
import { nodeIdFromPublicKey } from '../crypto/node-id.js';
import type { SessionKeys } from '../crypto/session-keys.js';
import { ClawpeerError, isInterruption } from '../errors.js';
import type { FeatureName, SessionCapabilities } from '../protocol/capabilities.js';
import type { CloseOptions, Connection, DuplexStream, TransportName } from '../transport/types.js';
import { SESSION_ID_BYTES } from '../protocol/message-types.js';
import type { ControlChannel, ControlHandshakeResult } from './control-channel.js';
import { settledWithin, withTimeout } from '../support/timeouts.js';
import type { PathKind } from '../reach/paths.js';

/** How long close() waits for the control stream's queued writes and FIN before closing the connection anyway. */
export const CONTROL_CLOSE_MAX_MS = 5_000;
/** After a failure that is the connection going away, how long to look for the peer's parting Error. */
export const PEER_REASON_WAIT_MS = 1_000;

export class PeerSession {
  readonly peerId: string;
  readonly version: number;
  readonly caps: SessionCapabilities;
  readonly keys: SessionKeys;
  readonly control: ControlChannel;
  /** Seals our DATA frames / opens the peer's: one key per direction for the whole session. */
  readonly sealer: DataSealer;
  readonly opener: DataOpener;
  /** Names the session to connections joining it (SessionJoin): the first half of TH(Hello, Welcome). */
  readonly sessionId: Uint8Array;
  #nextDataStreamId = 1;
  #nextTransferId = 1;
  /** Connections that joined the session after the first (session-join.ts), in join order. */
  readonly #joined: Connection[] = [];
  readonly #connectionWatchers = new Set<(conn: Connection) => void>();
  /** What to do when a sender here sees random loss and wants this many connections in all. */
  #connectionsWanted: ((connections: number) => void) | undefined;
  #askedForMore = false;
  readonly #stillPaired: (() => Promise<boolean>) | undefined;
  readonly #path: () => PathKind;
  readonly #relay: string | undefined;

  constructor(
    readonly connection: Connection,
    handshake: ControlHandshakeResult,
    options: {
      readonly stillPaired?: () => Promise<boolean>;
      /** How the connection reaches the peer (default 'direct'): a forwarded one may move from relayed to punched. */
      readonly path?: () => PathKind;
      /** The rendezvous relaying the connection (HOST:PORT), if it started relayed: named when it is lost. */
      readonly relay?: string;
      /** Frees what the path holds (a forwarder, a rendezvous client) once the connection is gone. */
      readonly onGone?: () => void;
    } = {},
  ) {
    this.#stillPaired = options.stillPaired;
    this.#path = options.path ?? (() => 'direct');
    this.#relay = options.relay;
    if (options.onGone !== undefined) {
      const gone = options.onGone;
      void connection.closed.then(() => gone());
    }
    this.peerId = nodeIdFromPublicKey(handshake.remotePublicKey);
    this.version = handshake.version;
    this.caps = handshake.caps;
    this.keys = handshake.keys;
    this.control = handshake.channel;
    this.sessionId = handshake.transcriptHash.slice(0, SESSION_ID_BYTES);
    // The joined connections live as long as the first: when it goes, the session is over.
    void connection.closed.then(() => {
      for (const c of this.#joined.splice(0)) void c.close('session over', { linger: false }).catch(() => undefined);
    });
    this.sealer = new DataSealer(this.keys.suite, this.keys.sendKey);
    this.opener = new DataOpener(this.keys.suite, this.keys.receiveKey);
  }

  /**
   * The listener's side: whether the peer's key is still pinned here, asked before each of its
   * requests (a `pair remove` then refuses the next one even if the drop missed this session).
   * Always true for a session we dialled.
   */
  stillPaired(): Promise<boolean> {
    return this.#stillPaired === undefined ? Promise.resolve(true) : this.#stillPaired();
  }

  /** Every connection of the session now: the first (control stream), then those that joined. */
  connections(): readonly Connection[] {
    return [this.connection, ...this.#joined];
  }

  /**
   * Adds a connection that joined this session (its join was proven: session-join.ts). Its data
   * streams belong to the session, sealed under the session's keys with session-wide stream ids.
   * It leaves the session when it closes.
   */
  addConnection(conn: Connection): void {
    this.#joined.push(conn);
    void conn.closed.then(() => {
      const at = this.#joined.indexOf(conn);
      if (at >= 0) this.#joined.splice(at, 1);
    });
    for (const watch of [...this.#connectionWatchers]) watch(conn);
  }

  /** Calls `watch` with each connection that joins from now on, until the returned function is called. */
  onConnection(watch: (conn: Connection) => void): () => void {
    this.#connectionWatchers.add(watch);
    return () => this.#connectionWatchers.delete(watch);
  }

  /** The connection data stream `slot` goes over (modulo how many there are): slot 0 is the first. */
  dataConnection(slot: number): Connection {
    const all = this.connections();
    return all[slot % all.length] ?? this.connection;
  }

  /** Opens a data stream on connection `slot` (see dataConnection). */
  openDataStream(slot: number): Promise<DuplexStream> {
    return this.dataConnection(slot).openStream();
  }

  /**
   * Who acts when a sender on this session sees random loss (session/loss-watch.ts): the dialer
   * opens more connections, a listener asks the client to (JoinWanted). Unset: nobody does.
   */
  setConnectionsWanted(handler: ((connections: number) => void) | undefined): void {
    this.#connectionsWanted = handler;
  }

  /** True when wantConnections() reaches someone who may add connections. */
  get canAddConnections(): boolean {
    return this.#connectionsWanted !== undefined;
  }

  /** A sender asks for `connections` in all (see setConnectionsWanted). */
  wantConnections(connections: number): void {
    if (this.#connectionsWanted === undefined) return;
    this.#askedForMore ||= connections > 1;
    this.#connectionsWanted(connections);
  }

  /** True once the session has more than one connection, or a sender asked for more. */
  get stripes(): boolean {
    return this.#askedForMore || this.connections().length > 1;
  }

  /** A fresh id for a data stream we open: it is the stream part of every AEAD nonce on it. */
  allocateDataStreamId(): number {
    if (this.#nextDataStreamId > 0xffff_ffff) throw new TypeError('data stream ids exhausted for this session');
    return this.#nextDataStreamId++;
  }

  allocateTransferId(): number {
    return this.#nextTransferId++;
  }

  /**
   * While the work runs: when `signal` aborts for SIGINT/SIGTERM (an INTERRUPTED or TERMINATED
   * reason, cli/context.ts), the peer is told at once, before the aborted work resets its data
   * streams, so its log says `what` was interrupted here rather than that a stream broke. Returns
   * the disposer.
   */
  tellPeerIfInterrupted(signal: AbortSignal, what: string): () => void {
    const onAbort = (): void => {
      const reason: unknown = signal.reason;
      if (!isInterruption(reason)) return;
      this.control.sendError('CANCELLED', `the ${what} was ${reason.message} on the other side`).catch(() => undefined);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    return () => signal.removeEventListener('abort', onAbort);
  }

  /**
   * A failure that is only the connection going away (a write that found it closed) may have a
   * reason the peer sent just before hanging up: its Error on the control stream. That reason
   * when it is there within `waitMs`, else `err` itself. Why: a listener refusing a request
   * sends an Error and closes while this side may still be writing; "connection lost" would
   * hide "share X refuses ...". A connection lost on a relayed path names the relay: it is the
   * third machine that may have gone away, and the user would not guess it from "stream 0 read".
   */
  async reasonFor(err: unknown, waitMs = PEER_REASON_WAIT_MS): Promise<unknown> {
    if (!(err instanceof ClawpeerError) || err.wire !== undefined) return err;
    if (err.code !== 'CONNECTION_CLOSED' && err.code !== 'REMOTE') return this.#throughRelay(err);
    try {
      await withTimeout(this.control.receive(), waitMs, "reading the peer's parting message");
    } catch (peer) {
      if (peer instanceof ClawpeerError && peer.wire !== undefined) return peer;
    }
    return this.#throughRelay(err);
  }

  /** `err`, naming the relay when the connection was lost (closed or silent) on a relayed path. */
  #throughRelay(err: ClawpeerError): ClawpeerError {
    if (this.#relay === undefined || this.#path() !== 'relayed') return err;
    if (err.code !== 'CONNECTION_CLOSED' && err.code !== 'TIMEOUT') return err;
    return new ClawpeerError(
      err.code,
      `${err.message} (the connection went through the relay at ${this.#relay}, a relayed path: the relay was lost, or the peer behind it)`,
      { cause: err },
    );
  }

  /**
   * USAGE unless the peer announced `feature`: an option whose request an older peer would
   * ignore (exclude, a rate limit, a dry run) is refused before it is asked, not carried out
   * without it. `cannot` says what the peer cannot do, `instead` what the user may do.
   */
  requireFeature(feature: FeatureName, cannot: string, instead: string): void {
    if (!this.caps.features.includes(feature))
      throw new ClawpeerError('USAGE', `peer ${this.peerId} ${cannot} (an older clawpeer): ${instead}`);
  }

  /** The path the connection takes now (reach/paths.ts): lan, direct, mapped, punched or relayed. */
  path(): PathKind {
    return this.#path();
  }

  /** The transport's smoothed round-trip time now, in ms. */
  rttMs(): number {
    return this.connection.stats().rttMs;
  }

  get transport(): TransportName {
    return this.connection.transport;
  }

  /** Finishes the control stream and closes the connection (see CloseOptions for `linger`). */
  async close(reason = 'done', options?: CloseOptions): Promise<void> {
    // Bounded: our last control write and FIN wait on the transport, and a peer that stopped
    // reading must not keep the command (or a listener's session) alive; closing the
    // connection then fails what is still queued.
    await settledWithin(this.control.close(), CONTROL_CLOSE_MAX_MS);
    // Data went over every connection and was acknowledged by the application: no linger needed.
    await Promise.all(this.#joined.splice(0).map((c) => c.close(reason, { linger: false }).catch(() => undefined)));
    await this.connection.close(reason, options);
  }
}

/** The effective capabilities as short strings, for `ping` output and logs. */
export function describeCapabilities(caps: SessionCapabilities): string[] {
  const c = caps.chunking;
  return [
    `aead:${caps.aeadSuite}`,
    ...caps.compression.map((x) => `compression:${x}`),
    `chunking:${c.minBytes}/${c.avgBytes}/${c.maxBytes}`,
    `window:${caps.maxWindowChunks}`,
    `streams:${caps.maxStreams}`,
    `frame:${caps.maxFrameBytes}`,
    ...caps.features,
  ];
}
