// The listening node: accepts connections on every configured transport, pins the proven key
// against the paired set BEFORE reading any application message, runs the server handshake,
// then serves the peer's requests. One misbehaving peer costs only its own connection.
// Connections are capped in total (maxConnections) and per peer key (maxConnectionsPerPeer): one
// over a cap is told why with a wire Error on its control stream and closed; the others go on.
import { nodeIdFromPublicKey } from '../crypto/node-id.js';
import type { Identity } from '../crypto/identity.js';
import { ClawpeerError, WIRE_ERRORS } from '../errors.js';
import type { Logger } from '../logger.js';
import { encodeControlFrame, type ControlMessage } from '../protocol/messages.js';
import { backendByName } from '../transport/backends.js';
import type { Connection, DuplexStream, Listener, TransportName } from '../transport/types.js';
import { formatHostPort } from './address.js';
import type { NodeConfig } from './config.js';
import { localCapabilities } from './chunk-compression.js';
import { readLoneMessage, serverHandshakeOrTake } from './control-channel.js';
import { pairProof, pickPeerName, proofMatches, suggestedName, type InviteStore } from './pair-invite.js';
import type { PeerStore } from './peer-store.js';
import { PeerSession } from './session.js';
import type { Share } from './shares.js';
import { settledWithin, withTimeout } from './timeouts.js';
import { watchFile } from './watch-file.js';

export interface ServerOptions {
  readonly identity: Identity;
  readonly peers: PeerStore;
  /** Open pairing invites: while one is open, an unpaired key may pair with its code (pair-invite.ts). */
  readonly invites?: InviteStore;
  readonly shares: readonly Share[];
  readonly host: string;
  readonly port: number;
  readonly config: NodeConfig;
  readonly log: Logger;
}

/** Serves one authenticated session until it ends; the server owns closing the connection. */
export type SessionHandler = (session: PeerSession, signal: AbortSignal) => Promise<void>;

export interface BoundTransport {
  readonly transport: TransportName;
  readonly host: string;
  readonly port: number;
}

/** A paired peer's session, as `clawpeer status` shows it. */
export interface ConnectedPeer {
  readonly id: string;
  readonly addr: string;
  readonly transport: TransportName;
  /** When its handshake completed, ms since the epoch. */
  readonly since: number;
}

/** After a parting Error, how long the peer gets to read it and close before we cut it off. */
const PARTING_GRACE_MS = 2_000;
const PORT_RETRIES = 8; // port 0 with auto: QUIC's random UDP port may be taken on TCP
/** Longest an over-cap connection is kept to tell it why, ms (then it is cut off). */
const REFUSAL_TIMEOUT_MS = 2_000;
/**
 * Over-cap connections being told why at once; beyond this they are closed without a reason, so
 * a flood of connections costs at most this many pending refusals.
 */
const MAX_PENDING_REFUSALS = 64;

export class NodeServer {
  readonly #listeners: Listener[];
  readonly #options: ServerOptions;
  readonly #handler: SessionHandler;
  /** Admitted connections (those being refused are not counted). */
  readonly #connections = new Set<Connection>();
  /** Admitted connections per peer id (the key the transport proved; paired or not). */
  readonly #perPeer = new Map<string, number>();
  #pendingRefusals = 0;
  /** Authenticated sessions by peer id, so unpairing a peer can drop it at once. */
  readonly #sessions = new Map<PeerSession, { readonly peerId: string; readonly since: number }>();
  #pairWatch: { close(): void } | undefined;
  readonly #tasks = new Set<Promise<void>>();
  readonly #stop = new AbortController();
  readonly bound: readonly BoundTransport[];

  private constructor(listeners: Listener[], bound: BoundTransport[], options: ServerOptions, handler: SessionHandler) {
    this.#listeners = listeners;
    this.bound = bound;
    this.#options = options;
    this.#handler = handler;
    for (const l of listeners) this.#track(this.#acceptLoop(l));
    this.#pairWatch = watchFile(options.peers.file, () => void this.#dropUnpaired());
  }

  static async start(options: ServerOptions, handler: SessionHandler): Promise<NodeServer> {
    const names: TransportName[] = options.config.transport === 'auto' ? ['quic', 'tcp'] : [options.config.transport];
    const transportOptions = { host: options.host, identity: options.identity, idleTimeoutMs: options.config.idleTimeoutMs, keepAliveMs: options.config.keepAliveMs, maxStreams: options.config.maxStreams };
    for (let attempt = 0; ; attempt++) {
      const listeners: Listener[] = [];
      try {
        let port = options.port;
        for (const name of names) {
          const backend = await backendByName(name);
          const listener = await backend.listen({ ...transportOptions, port });
          listeners.push(listener);
          port = listener.address.port; // the other transports take the same port number
        }
        const bound = listeners.map((l, i) => ({ transport: names[i] ?? 'quic', host: l.address.host, port: l.address.port }));
        return new NodeServer(listeners, bound, options, handler);
      } catch (err) {
        await Promise.all(listeners.map((l) => l.close().catch(() => undefined)));
        const inUse = err instanceof ClawpeerError && err.code === 'ADDRESS_IN_USE';
        if (!(inUse && options.port === 0 && listeners.length > 0 && attempt < PORT_RETRIES)) throw err;
      }
    }
  }

  get port(): number {
    return this.bound[0]?.port ?? 0;
  }

  /** The authenticated sessions now, oldest first (`clawpeer status`). */
  connectedPeers(): ConnectedPeer[] {
    return [...this.#sessions].map(([session, { peerId, since }]) => ({ id: peerId, addr: formatHostPort(session.connection.remoteAddress), transport: session.connection.transport, since }));
  }

  /** Stops accepting, asks every session to finish, and cuts what is left after the grace period. */
  async close(): Promise<void> {
    this.#stop.abort();
    this.#pairWatch?.close();
    await Promise.all(this.#listeners.map((l) => l.close().catch(() => undefined)));
    const graceful = Promise.all([...this.#connections].map((c) => c.close('listener shutting down').catch(() => undefined)));
    // Bounded by the grace period; the timer is cleared so an idle listener exits at once.
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, this.#options.config.shutdownGraceMs)));
    await Promise.race([Promise.all([graceful, ...this.#tasks]), grace]);
    clearTimeout(timer);
  }

  /** Re-reads the pair list and drops every session whose peer is no longer paired. */
  async #dropUnpaired(): Promise<void> {
    if (this.#sessions.size === 0) return;
    let paired: Set<string>;
    try {
      paired = new Set((await this.#options.peers.list()).map((p) => p.id));
    } catch (err) {
      this.#options.log.warn('cannot re-read the pair list', { error: (err as Error).message });
      return;
    }
    for (const [session, { peerId }] of this.#sessions) {
      if (paired.has(peerId)) continue;
      this.#sessions.delete(session);
      this.#options.log.warn('peer unpaired: dropping its connection', { id: peerId });
      // Tell it why, give it a moment to read that and hang up itself, then cut it off.
      void session.control
        .sendError('NOT_PAIRED', `node ${peerId} was unpaired by ${this.#options.identity.nodeId}`)
        .catch(() => undefined)
        .then(() => settledWithin(session.connection.closed, PARTING_GRACE_MS))
        .finally(() => void session.connection.close('unpaired').catch(() => undefined));
    }
  }

  #track(task: Promise<void>): void {
    this.#tasks.add(task);
    void task.finally(() => this.#tasks.delete(task));
  }

  async #acceptLoop(listener: Listener): Promise<void> {
    for (;;) {
      let conn: Connection | null;
      try {
        conn = await listener.accept({ signal: this.#stop.signal });
      } catch (err) {
        if (this.#stop.signal.aborted) return;
        this.#options.log.warn('accept failed', { error: (err as Error).message });
        continue;
      }
      if (conn === null) return;
      const c = conn;
      const peerId = nodeIdFromPublicKey(c.remotePublicKey);
      const refusal = this.#overCap(peerId);
      if (refusal !== undefined) {
        this.#refuse(c, peerId, refusal);
        continue;
      }
      this.#connections.add(c);
      this.#perPeer.set(peerId, (this.#perPeer.get(peerId) ?? 0) + 1);
      this.#track(
        this.#serveConnection(c).finally(() => {
          this.#connections.delete(c);
          const left = (this.#perPeer.get(peerId) ?? 1) - 1;
          if (left > 0) this.#perPeer.set(peerId, left);
          else this.#perPeer.delete(peerId);
        }),
      );
    }
  }

  /** Why a new connection from `peerId` may not be admitted now, or undefined. */
  #overCap(peerId: string): string | undefined {
    const { maxConnections, maxConnectionsPerPeer } = this.#options.config;
    const mine = this.#perPeer.get(peerId) ?? 0;
    if (mine >= maxConnectionsPerPeer) {
      return `too many connections from node ${peerId}: ${mine} open, at most ${maxConnectionsPerPeer} per peer; close some and retry`;
    }
    if (this.#connections.size >= maxConnections) {
      return `too many connections: ${this.#connections.size} open, at most ${maxConnections}; retry later`;
    }
    return undefined;
  }

  /**
   * Tells an over-cap connection why on the control stream it opens (wire Error BUSY: retry
   * later), then closes it. Bounded in time
   * (REFUSAL_TIMEOUT_MS) and in number (MAX_PENDING_REFUSALS: beyond, closed at once).
   */
  #refuse(conn: Connection, peerId: string, reason: string): void {
    const { log } = this.#options;
    const where = formatHostPort(conn.remoteAddress);
    log.warn('refused connection over the cap', { id: peerId, addr: where, transport: conn.transport, reason });
    if (this.#pendingRefusals >= MAX_PENDING_REFUSALS) {
      void conn.close(reason).catch(() => undefined);
      return;
    }
    this.#pendingRefusals++;
    const tell = async (): Promise<void> => {
      const stream = await withTimeout(conn.acceptStream({ signal: this.#stop.signal }), REFUSAL_TIMEOUT_MS, `control stream from ${peerId} at ${where}`);
      if (stream === null) return;
      await withTimeout(stream.write(encodeControlFrame({ type: 'error', code: WIRE_ERRORS.BUSY.wire, message: reason })), REFUSAL_TIMEOUT_MS, 'sending the refusal');
      await stream.finish().catch(() => undefined);
      await settledWithin(conn.closed, REFUSAL_TIMEOUT_MS);
    };
    this.#track(
      tell()
        .catch(() => undefined)
        .finally(() => {
          this.#pendingRefusals--;
          return conn.close(reason).catch(() => undefined);
        }),
    );
  }

  /**
   * An unpaired key's one message while an invite is open. A PairRequest whose proof matches an
   * open invite pins the key and is answered with our proof (undefined: done); anything else is
   * refused (the refusal text, or 'not-paired' for the usual one).
   */
  async #pairByInvite(conn: Connection, stream: DuplexStream, invites: InviteStore): Promise<string | undefined> {
    const { log, config, identity, peers } = this.#options;
    const peerId = nodeIdFromPublicKey(conn.remotePublicKey);
    const request = await readLoneMessage(stream, config.handshakeTimeoutMs, this.#stop.signal).catch(() => null);
    if (request?.type !== 'pair-request') return 'not-paired';
    const redeemed = await invites.redeem((secret) => proofMatches(pairProof(secret, 'joiner', identity.publicKey, conn.remotePublicKey), request.proof));
    if (redeemed === undefined) return `node ${peerId} is not paired with ${identity.nodeId}: the invite code was not accepted (wrong, used or expired)`;
    // Chosen with peers.json locked: redemptions at the same moment must not pick one name.
    const { entry } = await peers.add(peerId, (taken) => pickPeerName([redeemed.name, request.name], peerId, taken));
    const { name } = entry;
    // Told at warn level, which a listener prints by default: a new key got in.
    log.warn('paired by invite', { id: peerId, name, addr: formatHostPort(conn.remoteAddress) });
    await this.#acceptPairing(conn, stream, redeemed.secret);
    return undefined;
  }

  /**
   * A paired key's PairRequest instead of a Hello: the joiner of an invite we redeemed for it,
   * retrying because our PairAccept never reached it. Its proof must match that used invite (for
   * its own key); then it gets our proof again. False: not such a retry (the handshake refuses it).
   */
  async #confirmPairing(conn: Connection, stream: DuplexStream, invites: InviteStore, request: ControlMessage): Promise<boolean> {
    if (request.type !== 'pair-request') return false;
    const { identity, log } = this.#options;
    const used = await invites
      .confirm((secret) => proofMatches(pairProof(secret, 'joiner', identity.publicKey, conn.remotePublicKey), request.proof))
      .catch(() => undefined);
    if (used === undefined) return false;
    // Warn level, as 'paired by invite': someone used the invite's code.
    log.warn('pairing by invite confirmed again (the joiner retried)', { id: nodeIdFromPublicKey(conn.remotePublicKey), addr: formatHostPort(conn.remoteAddress) });
    await this.#acceptPairing(conn, stream, used.secret);
    return true;
  }

  /** Sends our PairAccept (our proof of the invite's secret) and lets the joiner close. */
  async #acceptPairing(conn: Connection, stream: DuplexStream, secret: Uint8Array): Promise<void> {
    const { identity } = this.#options;
    await withTimeout(stream.write(encodeControlFrame({ type: 'pair-accept', proof: pairProof(secret, 'inviter', identity.publicKey, conn.remotePublicKey), name: suggestedName() })), 1_000, 'sending PairAccept').catch(() => undefined);
    await stream.finish().catch(() => undefined);
    await settledWithin(conn.closed, REFUSAL_TIMEOUT_MS); // the joiner closes once it has read it
  }

  async #serveConnection(conn: Connection): Promise<void> {
    const { log, config, identity, peers } = this.#options;
    const peerId = nodeIdFromPublicKey(conn.remotePublicKey);
    const where = formatHostPort(conn.remoteAddress);
    try {
      const stream = await withTimeout(conn.acceptStream({ signal: this.#stop.signal }), config.handshakeTimeoutMs, `control stream from ${peerId} at ${where}`);
      if (stream === null) return;
      // Pinning comes first: an unpaired key gets a wire error and nothing else is read, unless
      // an invite is open: then its one message may be a PairRequest with the invite's proof.
      if (!(await peers.isPaired(peerId))) {
        const invites = this.#options.invites;
        const open = invites === undefined ? false : await invites.hasOpen().catch((err: unknown) => {
          log.warn('cannot read the pairing invites: none taken', { error: (err as Error).message });
          return false;
        });
        const refusal = open && invites !== undefined ? await this.#pairByInvite(conn, stream, invites) : 'not-paired';
        if (refusal === undefined) return; // paired by invite just now
        log.warn('rejected unpaired peer', { id: peerId, addr: where, transport: conn.transport });
        const message = refusal === 'not-paired' ? `node ${peerId} is not paired with ${identity.nodeId}; its owner can run: clawpeer pair add ${peerId} --name <NAME>` : refusal;
        await withTimeout(stream.write(encodeControlFrame({ type: 'error', code: WIRE_ERRORS.NOT_PAIRED.wire, message })), 1_000, 'sending NOT_PAIRED').catch(() => undefined);
        await stream.finish().catch(() => undefined);
        return;
      }
      const invites = this.#options.invites;
      const handshake = await serverHandshakeOrTake(
        stream,
        { identity, expectedRemoteKey: conn.remotePublicKey, caps: localCapabilities(config.compression), timeoutMs: config.handshakeTimeoutMs, signal: this.#stop.signal },
        invites === undefined ? undefined : (first) => this.#confirmPairing(conn, stream, invites, first),
      );
      if (handshake === null) return; // a retried pairing, answered
      const session = new PeerSession(conn, handshake);
      this.#sessions.set(session, { peerId, since: Date.now() });
      log.info('peer connected', { id: peerId, addr: where, transport: conn.transport, version: session.version });
      try {
        await this.#handler(session, this.#stop.signal);
      } finally {
        this.#sessions.delete(session);
      }
      log.info('peer disconnected', { id: peerId, addr: where });
    } catch (err) {
      if (!(err instanceof ClawpeerError)) {
        // A bug, not the peer's fault: log it loudly with its stack, but keep serving others.
        log.error('internal error serving peer', { id: peerId, addr: where, stack: (err as Error).stack ?? String(err) });
        return;
      }
      if (this.#stop.signal.aborted) return;
      // A peer whose user pressed Ctrl-C did nothing wrong: its partial transfer waits for a rerun.
      if (err.code === 'INTERRUPTED') log.info('peer stopped', { id: peerId, addr: where, reason: err.message });
      else log.warn('peer session failed', { id: peerId, addr: where, code: err.code, error: err.message });
    } finally {
      await conn.close().catch(() => undefined);
    }
  }
}
