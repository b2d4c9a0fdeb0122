// The listening node: accepts connections on every configured transport, pins the proven key
// against the paired set as soon as the transport has proven it (before reading any byte of the
// connection), runs the server handshake, checks the pinning again, then serves the peer's
// requests. One misbehaving peer costs only its own connection.
// Admission budgets (README "Limits"):
// - paired keys: maxConnections in total and maxConnectionsPerPeer per key; one over a cap is
//   told why (wire Error BUSY) and closed. Only paired keys count here, so no flood of unknown
//   keys can take a paired peer's room.
// - unpaired keys: refused at once (NOT_PAIRED) unless a pairing invite (long or short code) is
//   open; then at most MAX_PREAUTH_CONNECTIONS at a time may present an invite's proof, or run a
//   short code's PAKE (code-pairing.ts), within PREAUTH_TIMEOUT_MS for their first message.
// - refusals are told why on the control stream only MAX_PENDING_REFUSALS at a time (per kind);
//   beyond that a refused connection is closed at once, so a flood costs no state.
// `pair remove` (the pair file changing) drops the peer's sessions and its connections still in
// their handshake; each request is checked against the pair list too.
import { setMaxListeners } from 'node:events';
import { nodeIdFromPublicKey } from '../crypto/node-id.js';
import type { Identity } from '../crypto/identity.js';
import { ClawpeerError, WIRE_ERRORS } from '../errors.js';
import type { Logger } from '../logger.js';
import { encodeControlFrame } from '../protocol/messages.js';
import { backendByName } from '../transport/backends.js';
import type { Connection, HostPort, Listener, TransportName } from '../transport/types.js';
import type { PathKind } from '../reach/paths.js';
import { formatHostPort } from '../home/address.js';
import type { NodeConfig } from '../home/config.js';
import { localCapabilities } from '../session/chunk-compression.js';
import { serverHandshakeOrTake } from '../session/control-channel.js';
import { freshRead } from '../support/fresh-read.js';
import { type InviteStore } from '../home/pair-invite.js';
import { CodeInviteStore } from '../home/code-invites.js';
import { InvitePairing } from './invite-pairing.js';
import { SessionJoins } from './session-joins.js';
import { holdOpenNameplates, type NameplateHolder } from './nameplate-holder.js';
import type { NameplateDirectory } from '../pairing/nameplate-directory.js';
import type { PeerStore } from '../home/peer-store.js';
import type { ConnectedPeer } from '../session/listener-activity.js';
import { PeerSession } from '../session/session.js';
import type { Share } from '../home/shares.js';
import { ThrottledWarnings } from '../support/throttled-log.js';
import { silenceWindowMs, silentAmong } from './silent-connections.js';
import { settledWithin, withTimeout } from '../support/timeouts.js';
import { watchFile } from '../support/watch-file.js';

export interface ServerOptions {
  readonly identity: Identity;
  readonly peers: PeerStore;
  /** Open pairing invites: while one is open, an unpaired key may pair with its code (pair-invite.ts). */
  readonly invites?: InviteStore;
  /** Open short-code invites (code-invites.ts); default: those in the long invites' directory. */
  readonly codeInvites?: CodeInviteStore;
  /**
   * Where the nameplates of open short-code invites are announced while they are open (LAN
   * discovery, the rendezvous: ops/nameplate-directories.ts nameplateDirectories()); default none.
   */
  readonly nameplateDirectories?: readonly NameplateDirectory[];
  readonly shares: readonly Share[];
  readonly host: string;
  readonly port: number;
  readonly config: NodeConfig;
  readonly log: Logger;
  /**
   * The path of a connection quinn sees from `remote`: forwarded (punched, relayed) connections
   * all come from 127.0.0.1 through the traversal socket (reach/listener-reach.ts pathOf).
   */
  readonly pathOf?: (remote: HostPort) => PathKind | undefined;
}

/** Serves one authenticated session until it ends; the server owns closing the connection. */
export type SessionHandler = (session: PeerSession, signal: AbortSignal) => Promise<void>;

export interface BoundTransport {
  readonly transport: TransportName;
  readonly host: string;
  readonly port: number;
}

/** After a parting Error, how long the peer gets to read it and close before we cut it off. */
const PARTING_GRACE_MS = 2_000;
const PORT_RETRIES = 8; // port 0 with auto: QUIC's random UDP port may be taken on TCP
/** Longest an over-cap connection is kept to tell it why, ms (then it is cut off). */
const REFUSAL_TIMEOUT_MS = 2_000;
/**
 * Over-cap connections of paired keys being told why at once; beyond this they are closed
 * without a reason, so a flood of connections costs at most this many pending refusals.
 */
export const MAX_PENDING_REFUSALS = 64;
/**
 * Refused connections of unpaired keys being told why at once (NOT_PAIRED, or BUSY over the
 * pre-auth budget), each for at most UNPAIRED_REFUSAL_TIMEOUT_MS; beyond this they are closed
 * at once with the reason as the close reason. Few and short: a held connection's transport
 * state stays in memory until the garbage collector finds its wrapper, and a flood of fresh
 * keys is all refusals (64 held for 2-4 s each took a flooded listener from 75 to 115 MB).
 */
export const MAX_PENDING_UNPAIRED_REFUSALS = 16;
/** How long a refused unpaired connection has to open its control stream and hear why, ms. */
export const UNPAIRED_REFUSAL_TIMEOUT_MS = 1_000;
/**
 * Unpaired connections served at once while a pairing invite is open (each may present the
 * invite's proof); more are refused with BUSY. They never count toward maxConnections.
 */
export const MAX_PREAUTH_CONNECTIONS = 8;
/**
 * How long an unpaired connection, while an invite is open, has to open its control stream and
 * send its PairRequest, ms (at most --handshake-timeout). A joiner sends it at once.
 */
export const PREAUTH_TIMEOUT_MS = 5_000;

type RefusalKind = 'paired' | 'unpaired';

/** Per kind: how many refusals are told why at once, and how long each may take. */
const REFUSAL_POLICY: Readonly<
  Record<RefusalKind, { readonly max: number; readonly timeoutMs: number; readonly awaitPeerClose: boolean }>
> = {
  paired: { max: MAX_PENDING_REFUSALS, timeoutMs: REFUSAL_TIMEOUT_MS, awaitPeerClose: true },
  unpaired: { max: MAX_PENDING_UNPAIRED_REFUSALS, timeoutMs: UNPAIRED_REFUSAL_TIMEOUT_MS, awaitPeerClose: false },
};

export class NodeServer {
  readonly #listeners: Listener[];
  readonly #options: ServerOptions;
  readonly #handler: SessionHandler;
  /** Admitted connections of paired keys, with the proven peer id (those being refused are not counted). */
  readonly #connections = new Map<Connection, string>();
  /** Admitted connections per paired peer id. */
  readonly #perPeer = new Map<string, number>();
  /** Unpaired connections that may redeem an open invite (MAX_PREAUTH_CONNECTIONS). */
  readonly #preauth = new Set<Connection>();
  readonly #pendingRefusals: Record<RefusalKind, number> = { paired: 0, unpaired: 0 };
  /** Authenticated sessions by peer id, so unpairing a peer can drop it at once. */
  readonly #sessions = new Map<PeerSession, { readonly peerId: string; readonly since: number }>();
  /** Sessions more connections may join (session-joins.ts). */
  readonly #joins = new SessionJoins();
  /** The paired ids, read afresh for each question but shared by questions asked at once. */
  readonly #pairedIds: () => Promise<ReadonlySet<string>>;
  readonly #invitesOpen: () => Promise<boolean>;
  readonly #codeInvites: CodeInviteStore | undefined;
  readonly #nameplates: NameplateHolder | undefined;
  readonly #pairing: InvitePairing;
  /** Refusals of unpaired keys: a flood of them must not flood the log. */
  readonly #unpairedWarnings: ThrottledWarnings;
  #pairWatch: { close(): void } | undefined;
  readonly #tasks = new Set<Promise<void>>();
  readonly #stop = new AbortController();
  readonly bound: readonly BoundTransport[];

  private constructor(listeners: Listener[], bound: BoundTransport[], options: ServerOptions, handler: SessionHandler) {
    this.#listeners = listeners;
    this.bound = bound;
    this.#options = options;
    this.#handler = handler;
    // Every connection waiting for its control stream listens on it: many at once are normal.
    setMaxListeners(0, this.#stop.signal);
    this.#pairedIds = freshRead(async () => new Set((await options.peers.list()).map((p) => p.id)));
    const invites = options.invites;
    const codeInvites = options.codeInvites ?? (invites === undefined ? undefined : new CodeInviteStore(invites.dir));
    this.#codeInvites = codeInvites;
    const { identity, peers, log } = options;
    this.#pairing = new InvitePairing({ identity, peers, log, codeInvites, bound, signal: this.#stop.signal });
    const directories = options.nameplateDirectories ?? [];
    this.#nameplates =
      codeInvites === undefined || directories.length === 0
        ? undefined
        : holdOpenNameplates({ codeInvites, directories, log: options.log });
    this.#invitesOpen = freshRead(
      async () => ((await invites?.hasOpen()) ?? false) || ((await codeInvites?.hasOpen()) ?? false),
    );
    this.#unpairedWarnings = new ThrottledWarnings(options.log, 'connections of unpaired keys refused');
    for (const l of listeners) this.#track(this.#acceptLoop(l));
    this.#pairWatch = watchFile(options.peers.file, () => void this.#dropUnpaired());
  }

  static async start(options: ServerOptions, handler: SessionHandler): Promise<NodeServer> {
    const names: TransportName[] = options.config.transport === 'auto' ? ['quic', 'tcp'] : [options.config.transport];
    const transportOptions = {
      host: options.host,
      identity: options.identity,
      idleTimeoutMs: options.config.idleTimeoutMs,
      keepAliveMs: options.config.keepAliveMs,
      maxStreams: options.config.maxStreams,
    };
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
        const bound = listeners.map((l, i) => ({
          transport: names[i] ?? 'quic',
          host: l.address.host,
          port: l.address.port,
        }));
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
    return [...this.#sessions].map(([session, { peerId, since }]) => ({
      id: peerId,
      addr: formatHostPort(session.connection.remoteAddress),
      transport: session.connection.transport,
      since,
      path: session.path(),
      rttMs: Math.round(session.rttMs() * 1000) / 1000,
    }));
  }

  /** Stops accepting, asks every session to finish, and cuts what is left after the grace period. */
  async close(): Promise<void> {
    this.#stop.abort();
    this.#pairWatch?.close();
    await this.#nameplates?.close();
    this.#unpairedWarnings.close();
    await Promise.all(this.#listeners.map((l) => l.close().catch(() => undefined)));
    const graceful = Promise.all(
      [...this.#connections.keys(), ...this.#preauth].map((c) =>
        c.close('listener shutting down').catch(() => undefined),
      ),
    );
    // Bounded by the grace period; the timer is cleared so an idle listener exits at once.
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, this.#options.config.shutdownGraceMs)));
    await Promise.race([Promise.all([graceful, ...this.#tasks]), grace]);
    clearTimeout(timer);
  }

  /**
   * Re-reads the pair list and drops every session whose peer is no longer paired, and every
   * admitted connection of such a peer still in its handshake (a stalled Hello must not outlive
   * its pairing: it would get a session after the drop).
   */
  async #dropUnpaired(): Promise<void> {
    if (this.#connections.size === 0) return;
    let paired: ReadonlySet<string>;
    try {
      paired = await this.#pairedIds();
    } catch (err) {
      this.#options.log.warn('cannot re-read the pair list', { error: (err as Error).message });
      return;
    }
    const inSession = new Set([...this.#sessions.keys()].flatMap((s) => s.connections()));
    for (const [conn, peerId] of this.#connections) {
      if (paired.has(peerId) || inSession.has(conn)) continue;
      this.#options.log.warn('peer unpaired: closing its connection before its handshake completed', {
        id: peerId,
        addr: formatHostPort(conn.remoteAddress),
      });
      void conn.close('unpaired', { linger: false }).catch(() => undefined);
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
      // Not awaited: a slow pair-file read must not hold up the transport's accept queue.
      this.#track(this.#admit(conn));
    }
  }

  /**
   * Pins the key the transport proved, before anything is read from the connection: a paired
   * key is admitted within the paired caps; an unpaired one is refused at once, unless an
   * invite is open and the pre-auth budget has room.
   */
  async #admit(conn: Connection): Promise<void> {
    const { log } = this.#options;
    const peerId = nodeIdFromPublicKey(conn.remotePublicKey);
    let paired: boolean;
    let open = false;
    try {
      paired = (await this.#pairedIds()).has(peerId);
      if (!paired)
        open = await this.#invitesOpen().catch((err: unknown) => {
          log.warn('cannot read the pairing invites: none taken', { error: (err as Error).message });
          return false;
        });
    } catch (err) {
      log.warn('cannot read the pair list: connection refused', { id: peerId, error: (err as Error).message });
      await conn.close('the listener cannot read its pair list', { linger: false }).catch(() => undefined);
      return;
    }
    if (this.#stop.signal.aborted) {
      await conn.close('listener shutting down', { linger: false }).catch(() => undefined);
      return;
    }
    if (paired) return this.#admitPaired(conn, peerId);
    if (peerId === this.#options.identity.nodeId) {
      // Our own key: `clawpeer doctor` of this home checking that its listener holds the port
      // (the transport handshake told it so). Nothing to refuse or log.
      await conn.close('a node does not serve itself', { linger: false }).catch(() => undefined);
      return;
    }
    if (!open) {
      this.#refuse(conn, peerId, 'unpaired', 'NOT_PAIRED', this.#notPairedMessage(peerId));
      return;
    }
    if (this.#preauth.size >= MAX_PREAUTH_CONNECTIONS) {
      this.#refuse(
        conn,
        peerId,
        'unpaired',
        'BUSY',
        `too many unpaired connections at once while a pairing invite is open (at most ${MAX_PREAUTH_CONNECTIONS}); retry in a moment`,
      );
      return;
    }
    this.#preauth.add(conn);
    try {
      await this.#servePairing(conn, peerId);
    } finally {
      this.#preauth.delete(conn);
      await conn.close().catch(() => undefined);
    }
  }

  async #admitPaired(conn: Connection, peerId: string): Promise<void> {
    let refusal = this.#overCap(peerId);
    // Over its cap, connections of a peer that died may be what fills it: those silent are closed.
    if (refusal !== undefined && (await this.#closeSilent(peerId)) > 0) refusal = this.#overCap(peerId);
    if (refusal !== undefined) {
      this.#refuse(conn, peerId, 'paired', 'BUSY', refusal);
      return;
    }
    this.#connections.set(conn, peerId);
    this.#perPeer.set(peerId, (this.#perPeer.get(peerId) ?? 0) + 1);
    try {
      await this.#serveConnection(conn, peerId);
    } finally {
      this.#uncount(conn);
    }
  }

  /** Takes an admitted connection off the counts (once: a silent one is taken off when closed). */
  #uncount(conn: Connection): void {
    const peerId = this.#connections.get(conn);
    if (peerId === undefined || !this.#connections.delete(conn)) return;
    const left = (this.#perPeer.get(peerId) ?? 1) - 1;
    if (left > 0) this.#perPeer.set(peerId, left);
    else this.#perPeer.delete(peerId);
  }

  /**
   * Over its own cap, closes `peerId`'s QUIC connections that hear nothing for a keep-alive
   * interval and more (silent-connections.ts), and returns how many; the newcomer waits that long
   * before it is admitted or refused. Only the peer's own: another peer's connection is never
   * closed to make room. Only QUIC: a killed process's TCP connection is reset by its kernel at
   * once, and the TCP mux pings on a coarser tick, so a live idle one could look silent.
   */
  async #closeSilent(peerId: string): Promise<number> {
    if ((this.#perPeer.get(peerId) ?? 0) < this.#options.config.maxConnectionsPerPeer) return 0;
    const candidates = [...this.#connections]
      .filter(([c, id]) => id === peerId && c.transport !== 'tcp')
      .map(([c]) => c);
    const windowMs = silenceWindowMs(this.#options.config);
    const silent = await silentAmong(candidates, windowMs, this.#stop.signal);
    for (const c of silent) {
      const id = this.#connections.get(c);
      if (id === undefined) continue; // it ended meanwhile
      this.#uncount(c);
      this.#options.log.info('closed a connection that heard nothing: its peer is presumed gone', {
        id,
        addr: formatHostPort(c.remoteAddress),
        silentMs: windowMs,
      });
      void c.close(`nothing heard for ${windowMs} ms`).catch(() => undefined);
    }
    return silent.length;
  }

  #notPairedMessage(peerId: string): string {
    return `node ${peerId} is not paired with ${this.#options.identity.nodeId}; its owner can run: clawpeer pair add ${peerId} --name <NAME>`;
  }

  /** Why a new connection from paired `peerId` may not be admitted now, or undefined. */
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
   * Tells a refused connection why on the control stream it opens (wire Error `code`: BUSY,
   * retry later; NOT_PAIRED), then closes it; it is logged once. Bounded in time and in number
   * per kind (REFUSAL_POLICY: beyond, closed at once with the reason as the close reason).
   */
  #refuse(conn: Connection, peerId: string, kind: RefusalKind, code: 'BUSY' | 'NOT_PAIRED', reason: string): void {
    const where = formatHostPort(conn.remoteAddress);
    const fields = { id: peerId, addr: where, transport: conn.transport, reason };
    if (kind === 'paired') this.#options.log.warn('refused connection over the cap', fields);
    else if (code === 'NOT_PAIRED') this.#unpairedWarnings.warn('rejected unpaired peer', fields);
    else this.#unpairedWarnings.warn('refused unpaired connection over the pre-auth budget', fields);
    const policy = REFUSAL_POLICY[kind];
    if (this.#pendingRefusals[kind] >= policy.max) {
      void conn.close(reason, { linger: false }).catch(() => undefined);
      return;
    }
    this.#pendingRefusals[kind]++;
    const tell = async (): Promise<void> => {
      const stream = await withTimeout(
        conn.acceptStream({ signal: this.#stop.signal }),
        policy.timeoutMs,
        `control stream from ${peerId} at ${where}`,
      );
      if (stream === null) return;
      await withTimeout(
        stream.write(encodeControlFrame({ type: 'error', code: WIRE_ERRORS[code].wire, message: reason })),
        policy.timeoutMs,
        'sending the refusal',
      );
      await stream.finish().catch(() => undefined);
      // The close below still delivers what was written (QUIC lingers for its acks; the TCP
      // mux sends its GOAWAY after it).
      if (policy.awaitPeerClose) await settledWithin(conn.closed, policy.timeoutMs);
    };
    this.#track(
      tell()
        .catch(() => undefined)
        .finally(() => {
          this.#pendingRefusals[kind]--;
          return conn.close(reason).catch(() => undefined);
        }),
    );
  }

  /**
   * An unpaired key while an invite is open: its control stream and one message within
   * PREAUTH_TIMEOUT_MS; a PairRequest that proves the invite pins it, anything else is refused
   * with NOT_PAIRED.
   */
  async #servePairing(conn: Connection, peerId: string): Promise<void> {
    const { log, config } = this.#options;
    const invites = this.#options.invites;
    if (invites === undefined && this.#codeInvites === undefined) return;
    const where = formatHostPort(conn.remoteAddress);
    const timeoutMs = Math.min(PREAUTH_TIMEOUT_MS, config.handshakeTimeoutMs);
    try {
      const stream = await withTimeout(
        conn.acceptStream({ signal: this.#stop.signal }),
        timeoutMs,
        `control stream from ${peerId} at ${where}`,
      );
      if (stream === null) return;
      const refusal = await this.#pairing.pairByInvite(conn, stream, invites, timeoutMs);
      if (refusal === undefined) return; // paired by invite just now
      this.#unpairedWarnings.warn('rejected unpaired peer', { id: peerId, addr: where, transport: conn.transport });
      const message = refusal === 'not-paired' ? this.#notPairedMessage(peerId) : refusal;
      await withTimeout(
        stream.write(encodeControlFrame({ type: 'error', code: WIRE_ERRORS.NOT_PAIRED.wire, message })),
        1_000,
        'sending NOT_PAIRED',
      ).catch(() => undefined);
      await stream.finish().catch(() => undefined);
    } catch (err) {
      if (!(err instanceof ClawpeerError)) {
        log.error('internal error pairing a peer', {
          id: peerId,
          addr: where,
          stack: (err as Error).stack ?? String(err),
        });
        return;
      }
      if (!this.#stop.signal.aborted)
        this.#unpairedWarnings.warn('unpaired connection dropped before it paired', {
          id: peerId,
          addr: where,
          code: err.code,
          error: err.message,
        });
    }
  }

  /** A paired key's connection: the handshake, the pinning checked again, then its requests. */
  async #serveConnection(conn: Connection, peerId: string): Promise<void> {
    const { log, config, identity } = this.#options;
    const where = formatHostPort(conn.remoteAddress);
    const stillPaired = async (): Promise<boolean> => (await this.#pairedIds()).has(peerId);
    try {
      const stream = await withTimeout(
        conn.acceptStream({ signal: this.#stop.signal }),
        config.handshakeTimeoutMs,
        `control stream from ${peerId} at ${where}`,
      );
      if (stream === null) return;
      const invites = this.#options.invites;
      const handshake = await serverHandshakeOrTake(
        stream,
        {
          identity,
          expectedRemoteKey: conn.remotePublicKey,
          caps: localCapabilities(config.compression),
          timeoutMs: config.handshakeTimeoutMs,
          signal: this.#stop.signal,
        },
        async (first) => {
          if (first.type === 'session-join') {
            await this.#joins.serve(conn, stream, first, peerId, log);
            return true;
          }
          return invites === undefined ? false : this.#pairing.confirmPairing(conn, stream, invites, first);
        },
      );
      if (handshake === null) return; // a retried pairing, answered; or a joined connection, gone
      // Pinned at admission, but the handshake may have taken seconds: a `pair remove` in
      // between must not let it in (the drop may have missed it while it had no session).
      if (!(await stillPaired())) {
        log.warn('peer unpaired during its handshake: refused', { id: peerId, addr: where, transport: conn.transport });
        await settledWithin(
          handshake.channel.sendError('NOT_PAIRED', `node ${peerId} was unpaired by ${identity.nodeId}`),
          REFUSAL_TIMEOUT_MS,
        );
        await settledWithin(handshake.channel.close(), REFUSAL_TIMEOUT_MS);
        return;
      }
      const pathOf = this.#options.pathOf;
      const session = new PeerSession(conn, handshake, {
        stillPaired,
        ...(pathOf === undefined ? {} : { path: () => pathOf(conn.remoteAddress) ?? 'direct' }),
      });
      this.#sessions.set(session, { peerId, since: Date.now() });
      const unjoinable = this.#joins.register(session, log);
      log.info('peer connected', { id: peerId, addr: where, transport: conn.transport, version: session.version });
      try {
        await this.#handler(session, this.#stop.signal);
      } finally {
        unjoinable();
        this.#sessions.delete(session);
      }
      log.info('peer disconnected', { id: peerId, addr: where });
    } catch (err) {
      if (!(err instanceof ClawpeerError)) {
        // A bug, not the peer's fault: log it loudly with its stack, but keep serving others.
        log.error('internal error serving peer', {
          id: peerId,
          addr: where,
          stack: (err as Error).stack ?? String(err),
        });
        return;
      }
      if (this.#stop.signal.aborted) return;
      // A peer whose user pressed Ctrl-C did nothing wrong: its partial transfer waits for a rerun.
      // Nor did one whose user declined what `send` offers.
      if (err.code === 'INTERRUPTED' || err.code === 'DECLINED')
        log.info('peer stopped', { id: peerId, addr: where, reason: err.message });
      else log.warn('peer session failed', { id: peerId, addr: where, code: err.code, error: err.message });
    } finally {
      await conn.close().catch(() => undefined);
    }
  }
}
