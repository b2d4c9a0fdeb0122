// The traversal socket: one user-space UDP socket (node:dgram) that owns a node's public port
// for NAT traversal. quinn owns its own sockets, a quinn Server cannot dial and a Client cannot
// accept, so a QUIC listener behind NAT would never open a mapping by itself. This socket does
// it instead: it talks to the rendezvous (register, lookup, connect, relay), punches (PING/PONG)
// and carries QUIC datagrams to and from the local quinn endpoints through forwarders, one
// loopback UDP socket per remote:
//   listener side: datagrams from remote R (or relay session T) go out of forwarder F(R) to the
//     local quinn server, which answers F(R); F(R) sends that out of this socket to R (or wraps
//     it for the relay). quinn sees the connection as coming from F(R)'s 127.0.0.1 address, so
//     pathOf(F(R)) tells the server which path it was.
//   dial side: the quinn Client connects to F's loopback address; F learns the client's address
//     from its first packet and everything flows as above.
// A forwarder carries both directions from its first packet and is reused for every datagram
// of its remote (a forwarder recreated per datagram looks to quinn like a peer changing address
// and stalls the connection); each dial candidate has its own, released only by that candidate.
// Classification: isTraversalMessage (type bits AND magic), never the first byte alone.
// Relay to direct, mid-connection: quinn's server here refuses client migration (the binding
// sets migration(false)), so the move is done below quinn, where it sees nothing change. A
// relayed forwarder keeps its loopback port and its relay header; once a hole to the peer is
// open it sends those same framed datagrams straight to the peer's traversal socket instead of
// the relay (moveTo). The peer's socket finds its forwarder by the token as before and, seeing
// the token arrive from a punched address it has heard PING/PONG from, moves its own forwarder
// there too. Both paths deliver to the same forwarder meanwhile, so nothing in flight is lost.
import dgram from 'node:dgram';
import { isIPv6 } from 'node:net';
import type { Logger } from '../logger.js';
import {
  decodeTraversal,
  encodeTraversal,
  isTraversalMessage,
  RELAY_DATA_HEADER_BYTES,
  relayDataHeader,
  RELAY_TOKEN_BYTES,
  TRAVERSAL_TYPES,
  type TraversalMessage,
} from '../protocol/rendezvous-wire.js';
import type { HostPort } from '../transport/types.js';
import type { PathKind } from './paths.js';
import { bindUdp, closeUdp, setUdpBuffers } from './udp.js';

/** Where a forwarder's datagrams go: straight to a peer's traversal socket, or through a relay session. */
export type ForwardRoute =
  | { readonly kind: 'direct'; readonly remote: HostPort }
  | { readonly kind: 'relay'; readonly server: HostPort; readonly token: Uint8Array };

export interface Forwarder {
  /** The loopback address quinn talks to (dial side: connect here). */
  readonly address: HostPort;
  readonly route: ForwardRoute;
  /** 'punched' or 'relayed'; a relayed forwarder becomes 'punched' once moved to a hole. */
  readonly path: PathKind;
  /** Relay route only: send through a punched hole to `remote` from now on (same loopback port). */
  moveTo(remote: HostPort): void;
  close(): void;
}

export type TraversalHandler = (message: TraversalMessage, from: HostPort) => void;

const SOCKET_BUFFER_BYTES = 4 * 1024 * 1024;
/** Datagrams held for a forwarder whose socket is still binding. */
const MAX_QUEUED = 256;
/** A listener-side forwarder nobody sent through for this long is closed, ms. */
const DEFAULT_FORWARDER_IDLE_MS = 5 * 60_000;
const SWEEP_EVERY_MS = 10_000;
/** A relay session moves only to an address that sent a PING or PONG this recently, ms. */
const HEARD_FOR_MS = 60_000;
const MAX_HEARD = 1024;

const hostPortKey = (a: HostPort): string => `d|${a.host}|${a.port}`;
const tokenKey = (t: Uint8Array): string => `r|${Buffer.from(t).toString('hex')}`;
const routeKey = (r: ForwardRoute): string => (r.kind === 'direct' ? hostPortKey(r.remote) : tokenKey(r.token));

/** Hops a short-lived punch lives: past this side's NAT (hop 1), not to the peer's. */
export const SHORT_PUNCH_TTL = 2;
/** The TTL datagrams leave with otherwise (Linux's default). */
const DEFAULT_TTL = 64;

/** One loopback socket between a local quinn endpoint and a remote (or relay session). */
class ForwarderSocket implements Forwarder {
  readonly socket: dgram.Socket;
  readonly route: ForwardRoute;
  readonly key: string;
  /** A relay route moved to a punched hole: framed datagrams go straight here. */
  moved: HostPort | undefined;
  readonly side: 'listen' | 'dial';
  /** Where datagrams from the network go: the quinn server (listen side) or the client once known. */
  local: HostPort | undefined;
  lastActiveMs = Date.now();
  #bound = false;
  /** connect()ed to `local`: sends skip the per-datagram address lookup. */
  #connected = false;
  /** connect() is under way: datagrams wait for it (one sent with an address just then is lost: EISCONN). */
  #connecting = false;
  #closed = false;
  #queue: Uint8Array[] = [];
  address: HostPort = { host: '127.0.0.1', port: 0 };
  readonly #header: Uint8Array | undefined;
  readonly #owner: TraversalSocket;

  constructor(
    owner: TraversalSocket,
    route: ForwardRoute,
    side: 'listen' | 'dial',
    loopback: string,
    local: HostPort | undefined,
  ) {
    this.#owner = owner;
    this.route = route;
    this.side = side;
    this.key = routeKey(route);
    this.local = local;
    this.#header = route.kind === 'relay' ? relayDataHeader(route.token) : undefined;
    this.socket = dgram.createSocket(isIPv6(loopback) ? 'udp6' : 'udp4');
    setUdpBuffersLater(this.socket);
    this.socket.on('message', (msg, rinfo) => this.#fromLocal(msg, rinfo));
    this.socket.on('error', () => undefined);
    this.address = { host: loopback, port: 0 };
  }

  get path(): PathKind {
    return this.route.kind === 'direct' || this.moved !== undefined ? 'punched' : 'relayed';
  }

  moveTo(remote: HostPort): void {
    if (this.route.kind !== 'relay' || this.#closed) return;
    this.moved = { host: remote.host, port: remote.port };
  }

  async bind(): Promise<void> {
    await bindUdp(this.socket, this.address.host, 0, 'traversal forwarder');
    setUdpBuffers(this.socket, SOCKET_BUFFER_BYTES);
    this.address = { host: this.address.host, port: this.socket.address().port };
    this.#bound = true;
    this.#owner.bound(this);
    if (this.local !== undefined) this.#connect(this.local);
    else this.#flush();
  }

  #flush(): void {
    const queued = this.#queue;
    this.#queue = [];
    for (const d of queued) this.toLocal(d);
  }

  /** A datagram from the network, for the local quinn endpoint. */
  toLocal(payload: Uint8Array): void {
    if (this.#closed) return;
    this.lastActiveMs = Date.now();
    if (!this.#bound || this.local === undefined || this.#connecting) {
      if (this.#queue.length < MAX_QUEUED) this.#queue.push(payload);
      return;
    }
    if (this.#connected) this.socket.send(payload);
    else this.socket.send(payload, this.local.port, this.local.host);
  }

  #connect(to: HostPort): void {
    this.#connecting = true;
    const onError = (): void => done(false);
    const done = (connected: boolean): void => {
      if (!this.#connecting) return;
      this.socket.off('error', onError);
      this.#connecting = false;
      this.#connected = connected && !this.#closed;
      this.#flush();
    };
    this.socket.once('error', onError);
    try {
      this.socket.connect(to.port, to.host, () => done(true));
    } catch {
      done(false); // stays unconnected: sends name the address
    }
  }

  #fromLocal(msg: Buffer, rinfo: dgram.RemoteInfo): void {
    if (this.#closed) return;
    if (this.side === 'dial') {
      // The quinn Client's socket: learnt from its first packet, then everything queued for it goes.
      if (this.local === undefined || this.local.port !== rinfo.port || this.local.host !== rinfo.address) {
        if (this.#connected || this.#connecting) return; // bound to the client already: the kernel filters, so not reached
        this.local = { host: rinfo.address, port: rinfo.port };
        this.#connect(this.local);
      }
    } else if (this.local !== undefined && (rinfo.port !== this.local.port || rinfo.address !== this.local.host)) {
      return; // only the local quinn server speaks through a listener-side forwarder
    }
    this.lastActiveMs = Date.now();
    const r = this.route;
    if (r.kind === 'direct') this.#owner.sendRaw(msg, r.remote);
    else this.#owner.sendRaw([this.#header as Uint8Array, msg], this.moved ?? r.server);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#queue = [];
    this.#owner.forget(this);
    void closeUdp(this.socket);
  }
}

function setUdpBuffersLater(socket: dgram.Socket): void {
  socket.once('listening', () => setUdpBuffers(socket, SOCKET_BUFFER_BYTES));
}

export interface TraversalSocketOptions {
  /** Bind address: 0.0.0.0 (or ::) to be reachable; 127.0.0.1 in tests. */
  readonly host: string;
  /** 0: any free port. */
  readonly port: number;
  readonly log: Logger;
  /** Listener-side forwarders idle this long are closed, ms. */
  readonly forwarderIdleMs?: number;
}

export class TraversalSocket {
  readonly #socket: dgram.Socket;
  readonly #log: Logger;
  readonly #handlers = new Set<TraversalHandler>();
  /** Forwarders by route ('d|host|port' or 'r|token'). */
  readonly #forwarders = new Map<string, ForwarderSocket>();
  /** Listener-side forwarders by their loopback port, for pathOf. */
  readonly #byLocalPort = new Map<number, ForwarderSocket>();
  /** Relay tokens whose inbound datagrams start a listener-side forwarder. */
  readonly #acceptedRelays = new Map<string, ForwardRoute>();
  /** Addresses that sent a PING or PONG, and when: where a relay session may move. */
  readonly #heard = new Map<string, number>();
  #inbound: HostPort | undefined;
  #sweeper: NodeJS.Timeout;
  #closed = false;
  readonly #idleMs: number;
  readonly counters = { quicIn: 0, traversalIn: 0, dropped: 0, moved: 0 };

  private constructor(socket: dgram.Socket, o: TraversalSocketOptions) {
    this.#socket = socket;
    this.#log = o.log;
    this.#idleMs = o.forwarderIdleMs ?? DEFAULT_FORWARDER_IDLE_MS;
    socket.on('message', (msg, rinfo) => this.#onMessage(msg, rinfo));
    socket.on('error', (err) => this.#log.debug('traversal socket error', { error: err.message }));
    this.#sweeper = setInterval(() => this.#sweep(), SWEEP_EVERY_MS);
    this.#sweeper.unref();
  }

  static async open(o: TraversalSocketOptions): Promise<TraversalSocket> {
    const socket = dgram.createSocket(isIPv6(o.host) ? 'udp6' : 'udp4');
    await bindUdp(socket, o.host, o.port, 'traversal socket');
    setUdpBuffers(socket, SOCKET_BUFFER_BYTES);
    return new TraversalSocket(socket, o);
  }

  get address(): HostPort {
    const a = this.#socket.address();
    return { host: a.address, port: a.port };
  }

  /** Listens for traversal messages (PING is answered here already); returns the unsubscribe. */
  on(handler: TraversalHandler): () => void {
    this.#handlers.add(handler);
    return () => this.#handlers.delete(handler);
  }

  send(message: TraversalMessage, to: HostPort): void {
    this.sendRaw(encodeTraversal(message), to);
  }

  /**
   * A punch that opens this side's NAT mapping and dies a hop later, before the peer's NAT.
   * Why: when a peer's punch reaches a Linux NAT before that side has sent its own, the NAT
   * records the inbound flow, and the side's own punch, leaving later, collides with it and is
   * given another source port: the hole opens where the peer is not sending (port-restricted on
   * both sides went relayed in the lab). Short-lived punches first make each NAT's mapping exist
   * before the other side's full punches arrive. The TTL is the socket's for an instant: a QUIC
   * datagram forwarded in that instant may die too (QUIC resends it).
   */
  sendShortLived(message: TraversalMessage, to: HostPort, ttl = SHORT_PUNCH_TTL): void {
    if (this.#closed) return;
    try {
      this.#socket.setTTL(ttl);
    } catch {
      this.send(message, to);
      return; // no TTL control: a full punch is still a punch
    }
    this.#socket.send(encodeTraversal(message), to.port, to.host, () => {
      try {
        this.#socket.setTTL(DEFAULT_TTL);
      } catch {
        // closed meanwhile
      }
    });
  }

  sendRaw(bytes: Uint8Array | Uint8Array[], to: HostPort): void {
    if (this.#closed) return;
    // No callback: a failed send is emitted as 'error' (logged at debug); one closure per datagram is not free.
    this.#socket.send(bytes, to.port, to.host);
  }

  /** Listener side: QUIC datagrams from unknown remotes go to this quinn server through their own forwarder. */
  serveInbound(quinn: HostPort): void {
    this.#inbound = quinn;
  }

  /** Listener side: datagrams of this relay session go to the quinn server too. */
  acceptRelay(server: HostPort, token: Uint8Array): void {
    this.#acceptedRelays.set(tokenKey(token), { kind: 'relay', server, token: token.slice() });
  }

  /** Dial side: a loopback address for the quinn Client whose datagrams take `route`. */
  async openDialForwarder(route: ForwardRoute): Promise<Forwarder> {
    const key = routeKey(route);
    const old = this.#forwarders.get(key);
    // A second dial to the same remote through the same socket replaces the old route's entry;
    // the old forwarder stays open for its own connection until its candidate releases it.
    const f = new ForwarderSocket(this, route, 'dial', loopbackFor(route), undefined);
    this.#forwarders.set(key, f);
    try {
      await f.bind();
    } catch (err) {
      f.close();
      if (old !== undefined) this.#forwarders.set(key, old);
      throw err;
    }
    return f;
  }

  /** The path of a connection the local quinn server sees from `remote` (a forwarder's loopback address). */
  pathOf(remote: HostPort): PathKind | undefined {
    const f = this.#byLocalPort.get(remote.port);
    return f !== undefined && f.address.host === normalizeLoopback(remote.host, f.address.host) ? f.path : undefined;
  }

  /** Called by a forwarder once bound, before it passes on anything: pathOf knows it from the first packet. */
  bound(f: ForwarderSocket): void {
    if (f.side === 'listen' && this.#forwarders.get(f.key) === f) this.#byLocalPort.set(f.address.port, f);
  }

  /** Called by a forwarder as it closes. */
  forget(f: ForwarderSocket): void {
    if (this.#forwarders.get(f.key) === f) this.#forwarders.delete(f.key);
    if (this.#byLocalPort.get(f.address.port) === f) this.#byLocalPort.delete(f.address.port);
  }

  #onMessage(msg: Buffer, rinfo: dgram.RemoteInfo): void {
    const from = { host: rinfo.address, port: rinfo.port };
    if (isTraversalMessage(msg)) {
      if (msg[0] === TRAVERSAL_TYPES.relayData) {
        if (msg.length < RELAY_DATA_HEADER_BYTES) return;
        const key = tokenKey(msg.subarray(5, 5 + RELAY_TOKEN_BYTES));
        const payload = msg.subarray(RELAY_DATA_HEADER_BYTES);
        const f = this.#forwarders.get(key) ?? this.#listenForwarder(key, this.#acceptedRelays.get(key));
        if (f === undefined) {
          this.counters.dropped++;
          return;
        }
        if (f.route.kind === 'relay' && !sameHostPort(from, f.route.server) && !sameHostPort(from, f.moved))
          this.#maybeMove(f, from);
        f.toLocal(payload);
        return;
      }
      this.counters.traversalIn++;
      let m: TraversalMessage;
      try {
        m = decodeTraversal(msg);
      } catch (err) {
        this.#log.debug('dropped a malformed traversal message', {
          from: `${from.host}:${from.port}`,
          error: (err as Error).message,
        });
        return;
      }
      if (m.type === 'ping') this.send({ type: 'pong', nonce: m.nonce }, from);
      if (m.type === 'ping' || m.type === 'pong') this.#hear(from);
      for (const h of this.#handlers) h(m, from);
      return;
    }
    this.counters.quicIn++;
    const key = hostPortKey(from);
    const f = this.#forwarders.get(key) ?? this.#listenForwarder(key, { kind: 'direct', remote: from });
    if (f === undefined) this.counters.dropped++;
    else f.toLocal(msg);
  }

  /** A relay session's datagrams came straight from `from`: the peer moved it to a hole; follow if we punched with it. */
  #maybeMove(f: ForwarderSocket, from: HostPort): void {
    const heard = this.#heard.get(hostPortKey(from));
    // Not heard from: still delivered (it carries the token, as relayed ones do), but replies stay on the relay.
    if (heard === undefined || Date.now() - heard > HEARD_FOR_MS) return;
    f.moveTo(from);
    this.counters.moved++;
    this.#log.debug('a relayed connection moved to a punched path', {
      to: `${from.host}:${from.port}`,
      via: f.address.port,
    });
  }

  #hear(from: HostPort): void {
    const key = hostPortKey(from);
    this.#heard.delete(key);
    this.#heard.set(key, Date.now());
    if (this.#heard.size > MAX_HEARD) this.#heard.delete(this.#heard.keys().next().value as string);
  }

  /** The listener-side forwarder for a new remote: made once, registered before it binds, so every later datagram reuses it. */
  #listenForwarder(key: string, route: ForwardRoute | undefined): ForwarderSocket | undefined {
    const quinn = this.#inbound;
    if (quinn === undefined || route === undefined || this.#closed) return undefined;
    const loopback = loopbackOf(quinn.host);
    const f = new ForwarderSocket(this, route, 'listen', loopback, { host: loopback, port: quinn.port });
    this.#forwarders.set(key, f);
    f.bind().then(
      () => this.#log.debug('forwarding a new remote to the listener', { path: f.path, via: f.address.port }),
      (err: unknown) => {
        this.#log.warn('cannot open a traversal forwarder', { error: (err as Error).message });
        f.close();
      },
    );
    return f;
  }

  #sweep(): void {
    const now = Date.now();
    for (const f of this.#forwarders.values())
      if (f.side === 'listen' && now - f.lastActiveMs > this.#idleMs) f.close();
    for (const [k, at] of this.#heard) if (now - at > HEARD_FOR_MS) this.#heard.delete(k);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#sweeper);
    for (const f of [...this.#forwarders.values()]) f.close();
    this.#handlers.clear();
    await closeUdp(this.#socket);
  }
}

/** The loopback address a forwarder to `host` (the quinn server's bind address) binds. */
function loopbackOf(host: string): string {
  return isIPv6(host) && host !== '::ffff:127.0.0.1' ? '::1' : '127.0.0.1';
}

function loopbackFor(_route: ForwardRoute): string {
  return '127.0.0.1';
}

function sameHostPort(a: HostPort, b: HostPort | undefined): boolean {
  return b !== undefined && a.port === b.port && a.host === b.host;
}

function normalizeLoopback(host: string, expected: string): string {
  return host === '::ffff:127.0.0.1' && expected === '127.0.0.1' ? expected : host;
}
