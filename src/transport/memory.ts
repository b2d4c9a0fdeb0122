// In-memory transport backend: connected pairs inside one process, for tests, in real time
// or on a VIRTUAL clock (quinn's test `Pair` idea), with a simple, documented link model.
//
// Goals: the TransportBackend semantics of the real backends (proven keys, QUIC stream
// numbering, accept-on-first-byte, FIN vs reset, per-stream flow control so backpressure is
// real, graceful close) plus deterministic network conditions for sans-I/O driver tests.
// Non-goals: byte-exact QUIC behaviour, congestion control, bandwidth limits, idle timeouts.
//
// Link model, per direction of a connection (all times in ms of the injected Scheduler):
// - A write is cut into segments of at most `segmentBytes`. A segment sent at t arrives at
//   t + latencyMs + jitter + k * rtoMs, where jitter is uniform in [0, reorderJitterMs) and
//   k counts consecutive losses (each independently with probability lossRate). Streams are
//   reliable, so loss is modelled as the delay of a retransmission one RTO later, not as
//   missing bytes.
// - Within one stream nothing is reordered: a segment never arrives before its predecessor
//   (head-of-line blocking, as in QUIC). Across streams, loss and jitter do reorder.
// - Flow control: a stream's writer may have at most streamWindowBytes not yet consumed by
//   the reader; the reader's consumption reaches the writer latencyMs later (MAX_STREAM_DATA).
// - RESET and connection close travel with latencyMs and no loss; a close is sent behind
//   everything already in flight, so data written before close() arrives first.
// - The handshake costs one round trip: the server sees the connection at latencyMs, the
//   client at 2 * latencyMs. Identities are handed over, not proven (this is a test double).
import { ClawpeerError } from '../errors.js';
import type { Identity } from '../crypto/identity.js';
import { BoundedQueue } from './bounded-queue.js';
import type {
  CloseInfo,
  ConnectOptions,
  Connection,
  DuplexStream,
  HostPort,
  ListenOptions,
  Listener,
  TransportBackend,
  TransportStats,
} from './types.js';
import { realTimeScheduler, type Scheduler } from './scheduler.js';
import { checkConditions, DEFAULT_LINK, Direction, seededRandom, type LinkConditions } from './memory-link.js';

export { DEFAULT_LINK, seededRandom, type LinkConditions } from './memory-link.js';

// ---------------------------------------------------------------------------------------------
// The network (its link model: memory-link.ts)

const DEFAULT_MAX_STREAMS = 256;
const DEFAULT_READ_BYTES = 256 * 1024;
const ACCEPT_QUEUE_CONNECTIONS = 16;
/** Ports handed out for port 0 (the IANA dynamic range). */
const EPHEMERAL_PORT_FIRST = 49152;
const EPHEMERAL_PORT_LAST = 65535;

export interface MemoryNetworkOptions {
  readonly scheduler?: Scheduler;
  readonly link?: Partial<LinkConditions>;
  /** Seed for loss and jitter draws (default 1). */
  readonly seed?: number;
}

/** The address space listeners bind in. Backends sharing a network can reach each other. */
export class MemoryNetwork {
  readonly scheduler: Scheduler;
  readonly link: LinkConditions;
  readonly random: () => number;
  readonly #listeners = new Map<string, MemoryListener>();
  #nextPort = EPHEMERAL_PORT_FIRST;

  constructor(options: MemoryNetworkOptions = {}) {
    this.scheduler = options.scheduler ?? realTimeScheduler;
    this.link = checkConditions({ ...DEFAULT_LINK, ...options.link });
    this.random = seededRandom(options.seed ?? 1);
  }

  /** @internal */
  bind(host: string, port: number, listener: (port: number) => MemoryListener): MemoryListener {
    if (port === 0) {
      for (let i = 0; i <= EPHEMERAL_PORT_LAST - EPHEMERAL_PORT_FIRST; i++) {
        const candidate = this.#nextPort;
        this.#nextPort = candidate === EPHEMERAL_PORT_LAST ? EPHEMERAL_PORT_FIRST : candidate + 1;
        if (!this.#listeners.has(`${host}:${candidate}`)) {
          port = candidate;
          break;
        }
      }
      if (port === 0) throw new ClawpeerError('ADDRESS_IN_USE', `memory network: no free port on ${host}`);
    }
    const key = `${host}:${port}`;
    if (this.#listeners.has(key)) throw new ClawpeerError('ADDRESS_IN_USE', `memory network: ${key} is already bound`);
    const l = listener(port);
    this.#listeners.set(key, l);
    return l;
  }

  /** @internal */
  unbind(host: string, port: number, l: MemoryListener): void {
    if (this.#listeners.get(`${host}:${port}`) === l) this.#listeners.delete(`${host}:${port}`);
  }

  /** @internal */
  lookup(host: string, port: number): MemoryListener | undefined {
    return this.#listeners.get(`${host}:${port}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Streams

interface Pending<T> {
  resolve(v: T): void;
  reject(e: unknown): void;
}

class MemoryStream implements DuplexStream {
  readonly id: number;
  readonly #side: MemorySide;
  // send half
  #sent = 0;
  #peerConsumed = 0;
  #creditWaiters: Pending<void>[] = [];
  #writeChain: Promise<void> = Promise.resolve();
  #finSent = false;
  #sendError: ClawpeerError | undefined;
  // receive half
  readonly #chunks: Uint8Array[] = [];
  #finReceived = false;
  #recvError: ClawpeerError | undefined;
  #reader: (Pending<Uint8Array | null> & { max: number }) | undefined;

  constructor(id: number, side: MemorySide) {
    this.id = id;
    this.#side = side;
  }

  write(data: Uint8Array): Promise<void> {
    const p = this.#writeChain.then(() => this.#writeNow(data));
    this.#writeChain = p.catch(() => {});
    return p;
  }

  async #writeNow(data: Uint8Array): Promise<void> {
    const { segmentBytes, streamWindowBytes } = this.#side.net.link;
    let off = 0;
    while (off < data.length) {
      this.#checkWritable();
      const credit = streamWindowBytes - (this.#sent - this.#peerConsumed);
      if (credit <= 0) {
        await new Promise<void>((resolve, reject) => this.#creditWaiters.push({ resolve, reject }));
        continue;
      }
      const n = Math.min(credit, segmentBytes, data.length - off);
      const segment = new Uint8Array(data.subarray(off, off + n)); // a copy (Buffer#slice is not): the caller may reuse `data` once write resolves
      off += n;
      this.#sent += n;
      this.#side.bytesSent += n;
      const peer = this.#side.peer;
      this.#side.out.sendOrdered(this.id, () => peer?.deliverData(this.id, segment));
    }
  }

  #checkWritable(): void {
    if (this.#sendError !== undefined) throw this.#sendError;
    if (this.#finSent) throw new ClawpeerError('PROTOCOL', `stream ${this.id}: write after finish()`);
    const gone = this.#side.goneError();
    if (gone !== undefined) throw gone;
  }

  async read(maxBytes = DEFAULT_READ_BYTES): Promise<Uint8Array | null> {
    if (this.#reader !== undefined) throw new ClawpeerError('PROTOCOL', `stream ${this.id}: concurrent read()`);
    const max = Math.max(1, Math.floor(maxBytes));
    const ready = this.#take(max);
    if (ready !== undefined) return ready;
    return new Promise((resolve, reject) => (this.#reader = { resolve, reject, max }));
  }

  /** Data, null at FIN, a thrown error, or undefined for "nothing yet". */
  #take(max: number): Uint8Array | null | undefined {
    if (this.#recvError !== undefined) throw this.#recvError;
    const head = this.#chunks[0];
    if (head !== undefined) {
      let out: Uint8Array;
      if (head.length <= max) {
        this.#chunks.shift();
        out = head;
      } else {
        out = head.subarray(0, max);
        this.#chunks[0] = head.subarray(max);
      }
      const n = out.length;
      const peer = this.#side.peer;
      this.#side.out.sendControl(() => peer?.deliverCredit(this.id, n));
      return out;
    }
    if (this.#finReceived) return null;
    const gone = this.#side.goneError();
    if (gone !== undefined) throw gone;
    return undefined;
  }

  #wakeReader(): void {
    const r = this.#reader;
    if (r === undefined) return;
    let v: Uint8Array | null | undefined;
    try {
      v = this.#take(r.max);
    } catch (err) {
      this.#reader = undefined;
      r.reject(err);
      return;
    }
    if (v === undefined) return;
    this.#reader = undefined;
    r.resolve(v);
  }

  finish(): Promise<void> {
    const p = this.#writeChain.then(() => {
      if (this.#finSent) return;
      this.#checkWritable();
      this.#finSent = true;
      const peer = this.#side.peer;
      this.#side.out.sendOrdered(this.id, () => peer?.deliverFin(this.id));
    });
    this.#writeChain = p.catch(() => {});
    return p;
  }

  reset(): void {
    if (this.#sendError?.code === 'ABORTED') return;
    const local = new ClawpeerError('ABORTED', `stream ${this.id}: reset() was called`);
    this.#failSend(local);
    this.#failRecv(local);
    const peer = this.#side.peer;
    this.#side.out.sendControl(() => peer?.deliverReset(this.id));
  }

  // events from the peer
  onData(segment: Uint8Array): void {
    if (this.#recvError !== undefined) return; // discarded after a reset
    this.#chunks.push(segment);
    this.#wakeReader();
  }

  onFin(): void {
    this.#finReceived = true;
    this.#wakeReader();
  }

  onCredit(n: number): void {
    this.#peerConsumed += n;
    for (const w of this.#creditWaiters.splice(0)) w.resolve();
  }

  onPeerReset(): void {
    this.#failRecv(new ClawpeerError('REMOTE', `stream ${this.id} reset by the peer`));
    if (!this.#finSent) this.#failSend(new ClawpeerError('REMOTE', `stream ${this.id} stopped by the peer`));
  }

  /** The connection is gone: unfinished reads and waiting writes fail; buffered data stays readable. */
  onConnectionGone(): void {
    for (const w of this.#creditWaiters.splice(0)) w.reject(this.#side.goneError());
    this.#wakeReader();
  }

  #failSend(err: ClawpeerError): void {
    this.#sendError ??= err;
    for (const w of this.#creditWaiters.splice(0)) w.reject(this.#sendError);
  }

  #failRecv(err: ClawpeerError): void {
    this.#recvError ??= err;
    this.#chunks.length = 0;
    this.#wakeReader();
  }
}

// ---------------------------------------------------------------------------------------------
// Connections

/** One end of a connection. */
class MemorySide implements Connection {
  readonly transport = 'memory' as const;
  readonly remotePublicKey: Uint8Array;
  readonly localAddress: HostPort;
  readonly remoteAddress: HostPort;
  readonly closed: Promise<CloseInfo>;
  readonly net: MemoryNetwork;
  readonly out: Direction;
  peer: MemorySide | undefined;
  bytesSent = 0;
  bytesReceived = 0;

  readonly #isClient: boolean;
  readonly #streams = new Map<number, MemoryStream>();
  readonly #accept: BoundedQueue<MemoryStream>;
  #nextStreamIndex = 0;
  #gone: { info: CloseInfo; error: ClawpeerError } | undefined;
  #closePromise: Promise<void> | undefined;
  #resolveClosed!: (info: CloseInfo) => void;

  constructor(init: {
    net: MemoryNetwork;
    isClient: boolean;
    remoteIdentity: Identity;
    local: HostPort;
    remote: HostPort;
    maxStreams: number;
  }) {
    this.net = init.net;
    this.out = new Direction(init.net);
    this.#isClient = init.isClient;
    this.remotePublicKey = new Uint8Array(init.remoteIdentity.publicKey);
    this.localAddress = init.local;
    this.remoteAddress = init.remote;
    this.#accept = new BoundedQueue(init.maxStreams);
    this.closed = new Promise((resolve) => (this.#resolveClosed = resolve));
  }

  goneError(): ClawpeerError | undefined {
    return this.#gone?.error;
  }

  async openStream(): Promise<DuplexStream> {
    const gone = this.goneError();
    if (gone !== undefined) throw gone;
    // QUIC numbering: client-initiated bidi streams are 4n, server-initiated 4n+1.
    const id = this.#nextStreamIndex++ * 4 + (this.#isClient ? 0 : 1);
    const s = new MemoryStream(id, this);
    this.#streams.set(id, s);
    return s;
  }

  acceptStream(options?: { signal?: AbortSignal }): Promise<DuplexStream | null> {
    return this.#accept.shift(options?.signal);
  }

  stats(): TransportStats {
    return { rttMs: 2 * this.net.link.latencyMs, bytesSent: this.bytesSent, bytesReceived: this.bytesReceived };
  }

  /** Graceful: the close travels behind all data in flight; resolves when the peer has it. */
  close(reason?: string): Promise<void> {
    this.#closePromise ??= new Promise<void>((resolve) => {
      if (this.#gone !== undefined) {
        resolve();
        return;
      }
      this.#markGone(true, reason);
      const peer = this.peer;
      this.out.sendClose(() => {
        peer?.onPeerClosed(reason);
        resolve();
      });
    });
    return this.#closePromise;
  }

  // events from the peer (scheduled by its Direction)
  #streamFor(id: number): MemoryStream | undefined {
    let s = this.#streams.get(id);
    if (s !== undefined || this.#gone !== undefined) return s;
    // A stream the peer opened becomes visible with its first byte or FIN.
    s = new MemoryStream(id, this);
    this.#streams.set(id, s);
    if (!this.#accept.push(s)) s.reset(); // accept queue full (peer exceeds maxStreams)
    return s;
  }

  deliverData(id: number, segment: Uint8Array): void {
    this.bytesReceived += segment.length;
    this.#streamFor(id)?.onData(segment);
  }

  deliverFin(id: number): void {
    this.#streamFor(id)?.onFin();
  }

  deliverCredit(id: number, n: number): void {
    this.#streams.get(id)?.onCredit(n);
  }

  deliverReset(id: number): void {
    this.#streams.get(id)?.onPeerReset();
  }

  onPeerClosed(reason: string | undefined): void {
    this.#markGone(false, reason ?? 'closed by the peer');
  }

  #markGone(local: boolean, reason: string | undefined): void {
    if (this.#gone !== undefined) return;
    const info: CloseInfo = reason === undefined ? { local } : { local, reason };
    const why = local ? 'closed locally' : `closed by the peer${reason === undefined ? '' : `: ${reason}`}`;
    this.#gone = { info, error: new ClawpeerError('CONNECTION_CLOSED', `memory connection ${why}`) };
    this.#accept.close();
    for (const s of this.#streams.values()) s.onConnectionGone();
    this.#resolveClosed(info);
  }
}

class MemoryListener implements Listener {
  readonly address: HostPort;
  readonly identity: Identity;
  readonly maxStreams: number;
  readonly #net: MemoryNetwork;
  readonly #queue = new BoundedQueue<MemorySide>(ACCEPT_QUEUE_CONNECTIONS);

  constructor(net: MemoryNetwork, address: HostPort, identity: Identity, maxStreams: number) {
    this.#net = net;
    this.address = address;
    this.identity = identity;
    this.maxStreams = maxStreams;
  }

  /** @internal A handshake reached us; false means refused (closed or backlog full). */
  offer(side: MemorySide): boolean {
    return this.#queue.push(side);
  }

  accept(options?: { signal?: AbortSignal }): Promise<Connection | null> {
    return this.#queue.shift(options?.signal);
  }

  async close(): Promise<void> {
    this.#net.unbind(this.address.host, this.address.port, this);
    for (const side of this.#queue.close()) void side.close('listener closed');
  }
}

// ---------------------------------------------------------------------------------------------
// Backend

export interface MemoryBackendOptions extends MemoryNetworkOptions {
  /** Share one network between backends so they can reach each other (default: a private one). */
  readonly network?: MemoryNetwork;
}

export class MemoryBackend implements TransportBackend {
  readonly name = 'memory' as const;
  readonly network: MemoryNetwork;
  #nextClientPort = EPHEMERAL_PORT_FIRST;

  constructor(options: MemoryBackendOptions = {}) {
    this.network = options.network ?? new MemoryNetwork(options);
  }

  available(): boolean {
    return true;
  }

  async listen(options: ListenOptions): Promise<Listener> {
    if (!Number.isInteger(options.port) || options.port < 0 || options.port > 65535) {
      throw new ClawpeerError('USAGE', `listen port must be 0..65535, got ${options.port}`);
    }
    const maxStreams = options.maxStreams ?? DEFAULT_MAX_STREAMS;
    return this.network.bind(
      options.host,
      options.port,
      (port) => new MemoryListener(this.network, { host: options.host, port }, options.identity, maxStreams),
    );
  }

  connect(options: ConnectOptions): Promise<Connection> {
    const net = this.network;
    const where = `memory connect to ${options.host}:${options.port}`;
    if (options.signal?.aborted === true)
      return Promise.reject(new ClawpeerError('ABORTED', `${where} aborted`, { cause: options.signal.reason }));
    return new Promise<Connection>((resolve, reject) => {
      const signal = options.signal;
      let settled = false;
      const onAbort = (): void => {
        settled = true;
        reject(new ClawpeerError('ABORTED', `${where} aborted`, { cause: signal?.reason }));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const finish = (fn: () => void): void => {
        signal?.removeEventListener('abort', onAbort);
        if (!settled) {
          settled = true;
          fn();
        }
      };
      const latency = net.link.latencyMs;
      // t = latency: the handshake reaches the listener (if any).
      net.scheduler.schedule(latency, () => {
        const listener = net.lookup(options.host, options.port);
        if (listener === undefined || settled) {
          net.scheduler.schedule(latency, () =>
            finish(() => reject(new ClawpeerError('UNREACHABLE', `${where}: nothing listens there`))),
          );
          return;
        }
        const clientAddr: HostPort = { host: options.host, port: this.#nextClientPort++ };
        if (this.#nextClientPort > EPHEMERAL_PORT_LAST) this.#nextClientPort = EPHEMERAL_PORT_FIRST;
        const client = new MemorySide({
          net,
          isClient: true,
          remoteIdentity: listener.identity,
          local: clientAddr,
          remote: listener.address,
          maxStreams: options.maxStreams ?? DEFAULT_MAX_STREAMS,
        });
        const server = new MemorySide({
          net,
          isClient: false,
          remoteIdentity: options.identity,
          local: listener.address,
          remote: clientAddr,
          maxStreams: listener.maxStreams,
        });
        client.peer = server;
        server.peer = client;
        const accepted = listener.offer(server);
        // t = 2 * latency: the handshake answer reaches the client.
        net.scheduler.schedule(latency, () => {
          if (!accepted) {
            finish(() =>
              reject(new ClawpeerError('UNREACHABLE', `${where}: refused (listener closed or backlog full)`)),
            );
            return;
          }
          if (settled) return void client.close('connect aborted'); // the server side learns it is gone
          finish(() => resolve(client));
        });
      });
    });
  }
}

export function memoryBackend(options?: MemoryBackendOptions): TransportBackend {
  return new MemoryBackend(options);
}
