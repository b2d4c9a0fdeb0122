// QUIC transport backend on quinn (Rust), through the N-API binding inside
// @chainsafe/libp2p-quic 2.1.1 used standalone, without libp2p. The primary backend.
//
// Goals: adapt the binding's promise API to the TransportBackend interface; prove the peer's
// Ed25519 key (libp2p TLS profile: the peer id in remoteMultiaddr() is what TLS proved);
// keep the server's handshakes moving with a permanent accept loop feeding a bounded queue;
// map the binding's error strings to ClawpeerError codes in one place; close gracefully
// (see QuinnConnection.close); leave no native handle behind so the process can exit.
// Non-goals: trust decisions (the node layer pins keys), datagrams, migration, congestion
// control choice (the binding fixes CUBIC), 0-RTT.
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { debuglog } from 'node:util';
import type { Identity } from '../crypto/identity.js';
import { libp2pPrivateKeyProto } from '../crypto/identity.js';
import { publicKeyFromNodeId } from '../crypto/node-id.js';
import { ClawpeerError, type LocalErrorCode } from '../errors.js';
import { BoundedQueue } from './bounded-queue.js';
import { Counter32 } from './counter32.js';
import { readNetCoreBytes } from './udp-buffers.js';
import { findUdpSocketFd, setUdpSocketBuffers } from './udp-socket-buffers.js';
import {
  loadQuinnNapi,
  quinnMaybeAvailable,
  type NativeClient,
  type NativeConnection,
  type NativeConnectionStats,
  type NativeQuinnConfig,
  type NativeServer,
  type NativeStream,
  type QuinnConfigInit,
  type QuinnNapi,
} from './quinn-napi.js';
import type {
  CloseInfo,
  CloseOptions,
  ConnectOptions,
  Connection,
  DuplexStream,
  HostPort,
  ListenOptions,
  Listener,
  TransportBackend,
  TransportOptions,
  TransportStats,
} from './types.js';

const log = debuglog('clawpeer:transport:quinn');

/** Tuning knobs beyond TransportOptions. Times in ms, sizes in bytes. */
export interface QuinnTuning {
  /** Per-stream receive window. Bounds what one stream buffers for a slow reader. */
  readonly streamWindowBytes: number;
  /** Per-connection receive window (all streams together). */
  readonly connectionWindowBytes: number;
  /** UDP SO_RCVBUF/SO_SNDBUF request; Linux clamps it to net.core.rmem_max/wmem_max. */
  readonly udpBufferBytes: number;
  /** Upper bound on how long close() waits for written data to be acknowledged. */
  readonly closeLingerMaxMs: number;
  /** Authenticated connections waiting for Listener.accept(); beyond it handshakes stall. */
  readonly acceptQueueConnections: number;
}

// 16 MiB per stream covers the bandwidth-delay product of ~1.3 Gbit/s at 100 ms RTT; a peer
// that stops reading pins at most 32 MiB per connection in our receive buffers.
export const QUINN_TUNING_DEFAULTS: QuinnTuning = Object.freeze({
  streamWindowBytes: 16 * 1024 * 1024,
  connectionWindowBytes: 32 * 1024 * 1024,
  udpBufferBytes: 4 * 1024 * 1024, // rmem_max on this kind of host; asking more is clamped
  closeLingerMaxMs: 2_000,
  acceptQueueConnections: 16,
});

const DEFAULT_IDLE_TIMEOUT_MS = 30_000;
/** Handshake deadline: the idle timeout, but never more than this (a dead host costs at most this). */
const MAX_HANDSHAKE_TIMEOUT_MS = 10_000;
const DEFAULT_MAX_STREAMS = 256;
/** read() default and cap: the binding allocates `maxBytes` per call (64–256 KiB is the sweet spot). */
const DEFAULT_READ_BYTES = 256 * 1024;
const MAX_READ_BYTES = 1024 * 1024;
/** How often a connection reads its byte counters to widen them (a 32-bit wrap needs 4 GiB in that time). */
const COUNTER_SAMPLE_MS = 1_000;
/** Linger polling period and the minimum quiet time that counts as "sent and acknowledged". */
const LINGER_POLL_MS = 5;
const LINGER_QUIET_MIN_MS = 25; // >= quinn's default max_ack_delay (25 ms)
/** Backoff after an unexpected accept-loop error so a broken endpoint cannot spin a core. */
const ACCEPT_ERROR_BACKOFF_MS = 50;

/** Native error text -> our code. First match wins; checked once, here, nowhere else. */
const NATIVE_ERROR_CODES: readonly (readonly [RegExp, LocalErrorCode])[] = [
  [/address already in use|os error 98\b/i, 'ADDRESS_IN_USE'],
  [/timed out/i, 'TIMEOUT'],
  [/stream reset by peer|stopped by peer/i, 'REMOTE'],
  [/INVALID_PRIVATE_KEY|CERTIFICATE_GENERATION|NO_INITIAL_CIPHER_SUITE/, 'IDENTITY_CORRUPT'],
  [/certificate|handshake failed|crypto|tls/i, 'AUTH_FAILED'],
  [/unreachable|os error (101|113|99)\b|cannot assign|invalid remote address|no route/i, 'UNREACHABLE'],
  [/closed|connection lost|reset by peer|endpoint stopping|aborted|cids exhausted/i, 'CONNECTION_CLOSED'],
];

/** Maps a rejection from the binding to a ClawpeerError; programming errors pass through untouched. */
export function mapQuinnError(err: unknown, what: string): Error {
  if (err instanceof ClawpeerError) return err;
  if (err instanceof TypeError || err instanceof RangeError || err instanceof SyntaxError) return err;
  const text = err instanceof Error ? err.message : String(err);
  const code = NATIVE_ERROR_CODES.find(([re]) => re.test(text))?.[1] ?? 'CONNECTION_CLOSED';
  return new ClawpeerError(code, `${what}: ${text}`, { cause: err });
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Caches native configs per identity: building one generates the TLS certificate. */
const configCache = new WeakMap<Identity, Map<string, NativeQuinnConfig>>();

function idleTimeoutMsOf(opts: TransportOptions): number {
  const idleTimeoutMs = opts.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  if (!(idleTimeoutMs > 0)) throw new ClawpeerError('USAGE', `idleTimeoutMs must be > 0, got ${idleTimeoutMs}`);
  return idleTimeoutMs;
}

function handshakeTimeoutMs(opts: TransportOptions): number {
  return Math.min(idleTimeoutMsOf(opts), MAX_HANDSHAKE_TIMEOUT_MS);
}

function nativeConfig(napi: QuinnNapi, identity: Identity, opts: TransportOptions, tuning: QuinnTuning): NativeQuinnConfig {
  const idleTimeoutMs = idleTimeoutMsOf(opts);
  // Keep-alive below a third of the idle timeout so one lost PING does not kill an idle link.
  const keepAliveMs = Math.min(opts.keepAliveMs ?? Math.floor(idleTimeoutMs / 3), Math.floor(idleTimeoutMs / 3));
  const init: Omit<QuinnConfigInit, 'privateKeyProto'> = {
    handshakeTimeout: handshakeTimeoutMs(opts),
    maxIdleTimeout: idleTimeoutMs,
    keepAliveInterval: Math.max(1, keepAliveMs),
    maxConcurrentStreamLimit: opts.maxStreams ?? DEFAULT_MAX_STREAMS,
    maxStreamData: tuning.streamWindowBytes,
    maxConnectionData: tuning.connectionWindowBytes,
    receiveBufferSize: tuning.udpBufferBytes,
    sendBufferSize: tuning.udpBufferBytes,
  };
  const key = JSON.stringify(init);
  let perIdentity = configCache.get(identity);
  if (perIdentity === undefined) configCache.set(identity, (perIdentity = new Map()));
  let config = perIdentity.get(key);
  if (config === undefined) {
    try {
      config = new napi.QuinnConfig({ ...init, privateKeyProto: libp2pPrivateKeyProto(identity) });
    } catch (err) {
      throw mapQuinnError(err, 'building the QUIC config from the node identity');
    }
    perIdentity.set(key, config);
  }
  return config;
}

const MULTIADDR = /^\/(ip4|ip6)\/([^/]+)\/udp\/(\d+)\/quic-v1\/p2p\/([1-9A-HJ-NP-Za-km-z]+)$/;

/** The proven peer key and address from the binding's remote multiaddr; AUTH_FAILED if absent. */
function parseRemote(native: NativeConnection): { publicKey: Uint8Array; address: HostPort } {
  const text = native.remoteMultiaddr();
  const m = MULTIADDR.exec(text);
  if (m === null) throw new ClawpeerError('AUTH_FAILED', `QUIC peer address carries no proven peer id: ${text}`);
  let publicKey: Uint8Array;
  try {
    publicKey = publicKeyFromNodeId(m[4] ?? '');
  } catch (cause) {
    throw new ClawpeerError('AUTH_FAILED', `QUIC peer proved a key that is not Ed25519: ${text}`, { cause });
  }
  return { publicKey, address: { host: m[2] ?? '', port: Number(m[3]) } };
}

async function resolveHost(host: string): Promise<{ address: string; family: 4 | 6 }> {
  const v = isIP(host);
  if (v === 4 || v === 6) return { address: host, family: v };
  try {
    const r = await lookup(host);
    return { address: r.address, family: r.family === 6 ? 6 : 4 };
  } catch (cause) {
    throw new ClawpeerError('UNREACHABLE', `cannot resolve host ${JSON.stringify(host)}`, { cause });
  }
}

class QuinnStream implements DuplexStream {
  readonly id: number;
  readonly #native: NativeStream;
  readonly #conn: QuinnConnection;
  #resetLocally = false;

  constructor(native: NativeStream, id: number, conn: QuinnConnection) {
    this.#native = native;
    this.id = id;
    this.#conn = conn;
  }

  async write(data: Uint8Array): Promise<void> {
    if (this.#resetLocally) throw new ClawpeerError('ABORTED', `stream ${this.id}: write after reset()`);
    if (data.length === 0) return;
    this.#conn.pendingWrites++;
    try {
      await this.#native.write(data);
    } catch (err) {
      throw mapQuinnError(err, `stream ${this.id} write`);
    } finally {
      this.#conn.pendingWrites--;
    }
  }

  async read(maxBytes = DEFAULT_READ_BYTES): Promise<Uint8Array | null> {
    if (this.#resetLocally) throw new ClawpeerError('ABORTED', `stream ${this.id}: read after reset()`);
    const n = Math.max(1, Math.min(Math.floor(maxBytes), MAX_READ_BYTES));
    try {
      return await this.#native.read(n);
    } catch (err) {
      if (this.#resetLocally) throw new ClawpeerError('ABORTED', `stream ${this.id}: read after reset()`, { cause: err });
      throw mapQuinnError(err, `stream ${this.id} read`);
    }
  }

  async finish(): Promise<void> {
    try {
      await this.#native.finishWrite();
    } catch (err) {
      throw mapQuinnError(err, `stream ${this.id} finish`);
    }
  }

  reset(): void {
    if (this.#resetLocally) return;
    this.#resetLocally = true;
    // Both directions: RESET_STREAM so the peer's read fails, STOP_SENDING so its writes do.
    this.#native.resetWrite().catch((err: unknown) => log('stream %d resetWrite: %s', this.id, String(err)));
    this.#native.stopRead().catch((err: unknown) => log('stream %d stopRead: %s', this.id, String(err)));
  }
}

class QuinnConnection implements Connection {
  readonly transport = 'quic' as const;
  readonly remotePublicKey: Uint8Array;
  readonly remoteAddress: HostPort;
  readonly localAddress: HostPort;
  readonly closed: Promise<CloseInfo>;
  /** Writes handed to quinn and not yet buffered; close() waits for them (bounded). */
  pendingWrites = 0;

  readonly #native: NativeConnection;
  readonly #isServer: boolean;
  readonly #streams: BoundedQueue<QuinnStream>;
  readonly #tuning: QuinnTuning;
  #closing = false;
  #gone = false;
  /** The binding's byte counters are 32-bit: widened here, sampled often enough never to miss a wrap. */
  readonly #txBytes: Counter32;
  readonly #rxBytes: Counter32;
  readonly #sampler: NodeJS.Timeout;
  #closeReason: string | undefined;
  #closePromise: Promise<void> | undefined;

  constructor(
    native: NativeConnection,
    init: { isServer: boolean; localAddress: HostPort; maxStreams: number; tuning: QuinnTuning; onGone: () => void },
  ) {
    const remote = parseRemote(native);
    this.#native = native;
    this.#isServer = init.isServer;
    this.remotePublicKey = remote.publicKey;
    this.remoteAddress = remote.address;
    this.localAddress = init.localAddress;
    this.#tuning = init.tuning;
    this.#streams = new BoundedQueue(init.maxStreams);
    const first = native.stats();
    this.#txBytes = new Counter32(first.udpTxBytes);
    this.#rxBytes = new Counter32(first.udpRxBytes);
    this.#sampler = setInterval(() => this.#sampleBytes(), COUNTER_SAMPLE_MS);
    this.#sampler.unref();
    this.closed = native.closed().then(
      (): CloseInfo => this.#closeInfo(undefined),
      (err: unknown): CloseInfo => this.#closeInfo(err),
    );
    void this.closed.then(() => {
      clearInterval(this.#sampler);
      this.#gone = true;
      this.#streams.close();
      init.onGone();
    });
    void this.#inboundStreamLoop();
  }

  #closeInfo(err: unknown): CloseInfo {
    const reason = this.#closing ? this.#closeReason : err === undefined ? 'closed by the peer' : String(err);
    return reason === undefined ? { local: this.#closing } : { local: this.#closing, reason };
  }

  /** QUIC stream id from the binding's per-initiator index: client-initiated bidi 4n, server 4n+1. */
  #streamId(index: string, locallyOpened: boolean): number {
    const byServer = locallyOpened === this.#isServer;
    return Number(index) * 4 + (byServer ? 1 : 0);
  }

  async #inboundStreamLoop(): Promise<void> {
    for (;;) {
      await this.#streams.waitForRoom();
      if (this.#streams.closed) return;
      let native: NativeStream;
      try {
        native = await this.#native.inboundStream();
      } catch (err) {
        log('inbound stream loop ends: %s', String(err)); // the connection is gone; `closed` settles
        return;
      }
      const stream = new QuinnStream(native, this.#streamId(native.id(), false), this);
      if (!this.#streams.push(stream)) stream.reset();
    }
  }

  async openStream(): Promise<DuplexStream> {
    if (this.#closing) throw new ClawpeerError('CONNECTION_CLOSED', 'openStream on a connection that is closing');
    try {
      const native = await this.#native.outboundStream();
      return new QuinnStream(native, this.#streamId(native.id(), true), this);
    } catch (err) {
      throw mapQuinnError(err, 'openStream');
    }
  }

  acceptStream(options?: { signal?: AbortSignal }): Promise<DuplexStream | null> {
    return this.#streams.shift(options?.signal);
  }

  #sampleBytes(): void {
    let s: NativeConnectionStats;
    try {
      s = this.#native.stats();
    } catch {
      return; // connection already gone: the totals stay as last read
    }
    this.#txBytes.update(s.udpTxBytes);
    this.#rxBytes.update(s.udpRxBytes);
  }

  stats(): TransportStats {
    const s = this.#native.stats();
    return {
      rttMs: this.#native.rtt(),
      bytesSent: this.#txBytes.update(s.udpTxBytes),
      bytesReceived: this.#rxBytes.update(s.udpRxBytes),
      lostPackets: s.pathLostPackets,
      congestionWindowBytes: s.pathCwnd,
    };
  }

  /**
   * Graceful close. Guarantees, in order: (1) no new streams are accepted or opened; (2) for up
   * to closeLingerMaxMs, writes already handed to write() finish buffering and quinn gets to
   * send and have acknowledged everything buffered, FIN included — "acknowledged" by the
   * peer's QUIC stack, not read by its application, so data a peer never reads is still lost;
   * (3) then CONNECTION_CLOSE. What the peer already received stays readable after the close.
   * Only an application-level ack proves delivery; the node layer does that before closing.
   */
  close(reason?: string, options?: CloseOptions): Promise<void> {
    this.#closePromise ??= (async () => {
      this.#closing = true;
      this.#closeReason = reason;
      this.#streams.close();
      if (!this.#gone) {
        if (options?.linger !== false) await this.#linger();
        this.#native.abort();
      }
      await this.closed;
    })();
    return this.#closePromise;
  }

  /**
   * Waits until the connection has been quiet long enough for its tail to be acknowledged.
   * quinn's binding exposes no "all data acked" signal, so this watches counters: no datagram
   * sent for a quiet period of max(25 ms, 2 RTT + 25 ms) and at least one ACK received since
   * the last send, or three quiet periods with no ACK (everything was acknowledged earlier: a
   * lost tail would have been retransmitted by then). Bounded by closeLingerMaxMs.
   */
  async #linger(): Promise<void> {
    const deadline = performance.now() + this.#tuning.closeLingerMaxMs;
    let prev = this.#native.stats();
    let acksBeforeLastSend = prev.frameRxAcks;
    let lastSendAt = performance.now();
    while (performance.now() < deadline && !this.#gone) {
      await sleep(LINGER_POLL_MS);
      let s: NativeConnectionStats;
      try {
        s = this.#native.stats();
      } catch {
        return; // connection already gone
      }
      const now = performance.now();
      if (s.udpTxBytes !== prev.udpTxBytes) {
        lastSendAt = now;
        acksBeforeLastSend = prev.frameRxAcks;
      }
      prev = s;
      if (this.pendingWrites > 0) continue;
      const quietMs = Math.max(LINGER_QUIET_MIN_MS, 2 * this.#native.rtt() + LINGER_QUIET_MIN_MS);
      const quietFor = now - lastSendAt;
      if (quietFor >= quietMs && s.frameRxAcks > acksBeforeLastSend) return;
      if (quietFor >= 3 * quietMs) return;
    }
    log('close linger hit its %d ms bound; aborting with data possibly unacknowledged', this.#tuning.closeLingerMaxMs);
  }
}

class QuinnListener implements Listener {
  readonly address: HostPort;
  readonly #server: NativeServer;
  readonly #queue: BoundedQueue<QuinnConnection>;
  readonly #live = new Set<QuinnConnection>();
  readonly #maxStreams: number;
  readonly #tuning: QuinnTuning;
  #closed = false;
  #serverAborted: Promise<void> | undefined;

  constructor(server: NativeServer, address: HostPort, maxStreams: number, tuning: QuinnTuning) {
    this.#server = server;
    this.address = address;
    this.#maxStreams = maxStreams;
    this.#tuning = tuning;
    this.#queue = new BoundedQueue(tuning.acceptQueueConnections);
    void this.#acceptLoop();
  }

  // The server completes handshakes only while inboundConnection() is pending, so this loop
  // keeps one pending at all times, except while the accept queue is full (backpressure: new
  // handshakes then stall and time out on the dialler's side).
  async #acceptLoop(): Promise<void> {
    for (;;) {
      await this.#queue.waitForRoom();
      if (this.#serverAborted !== undefined) return;
      let native: NativeConnection;
      try {
        native = await this.#server.inboundConnection();
      } catch (err) {
        if (this.#serverAborted !== undefined) return;
        const e = mapQuinnError(err, 'accept');
        if (e instanceof ClawpeerError && e.code === 'TIMEOUT') continue; // a stale handshake attempt
        log('accept loop error: %s', String(err));
        await sleep(ACCEPT_ERROR_BACKOFF_MS);
        continue;
      }
      if (this.#closed) {
        native.abort(); // listener closed while its endpoint lingers for live connections
        continue;
      }
      let conn: QuinnConnection;
      try {
        conn = new QuinnConnection(native, {
          isServer: true,
          localAddress: this.address,
          maxStreams: this.#maxStreams,
          tuning: this.#tuning,
          onGone: () => this.#onGone(conn),
        });
      } catch (err) {
        log('refusing inbound connection: %s', String(err));
        native.abort();
        continue;
      }
      this.#live.add(conn);
      if (!this.#queue.push(conn)) void conn.close('listener closed');
    }
  }

  #onGone(conn: QuinnConnection): void {
    this.#live.delete(conn);
    if (this.#closed && this.#live.size === 0) void this.#abortServer();
  }

  #abortServer(): Promise<void> {
    this.#serverAborted ??= this.#server.abort().catch((err: unknown) => log('server abort: %s', String(err)));
    return this.#serverAborted;
  }

  accept(options?: { signal?: AbortSignal }): Promise<Connection | null> {
    return this.#queue.shift(options?.signal);
  }

  /**
   * Stops accepting: pending and later accept() return null, connections nobody accepted yet
   * are closed. Connections already accepted stay up (as with a TCP listener); the UDP endpoint
   * they share is released when the last of them closes.
   */
  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      for (const conn of this.#queue.close()) void conn.close('listener closed');
    }
    if (this.#live.size === 0) await this.#abortServer();
  }
}

function checkPort(port: number, what: string): void {
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ClawpeerError('USAGE', `${what} port must be 0..65535, got ${port}`);
}

/**
 * Gives the server's socket the buffer size its config asked for, which the binding does not
 * apply to a Server (udp-socket-buffers.ts). Skipped where the kernel's defaults are already as
 * large; a failure is logged and the listener keeps the defaults.
 */
async function applyServerSocketBuffers(port: number, family: 4 | 6, bytes: number): Promise<void> {
  let defaults: number[];
  try {
    defaults = [readNetCoreBytes('rmem_default'), readNetCoreBytes('wmem_default')];
  } catch {
    return; // no /proc (not Linux): nothing to find the socket by either
  }
  if (defaults.every((d) => d >= bytes)) return;
  const fd = findUdpSocketFd(port);
  if (fd === undefined) {
    log('no descriptor found for the server socket on port %d: it keeps the default buffers', port);
    return;
  }
  try {
    const sizes = await setUdpSocketBuffers(fd, family, bytes);
    log('server socket buffers on port %d: recv %d, send %d', port, sizes.recv, sizes.send);
  } catch (err) {
    log('server socket on port %d keeps the default buffers: %s', port, (err as Error).message);
  }
}

export class QuinnBackend implements TransportBackend {
  readonly name = 'quic' as const;
  readonly #tuning: QuinnTuning;

  constructor(tuning: Partial<QuinnTuning> = {}) {
    this.#tuning = Object.freeze({ ...QUINN_TUNING_DEFAULTS, ...tuning });
  }

  available(): boolean {
    return quinnMaybeAvailable();
  }

  async listen(options: ListenOptions): Promise<Listener> {
    checkPort(options.port, 'listen');
    const napi = await loadQuinnNapi();
    const { address, family } = await resolveHost(options.host);
    const config = nativeConfig(napi, options.identity, options, this.#tuning);
    let server: NativeServer;
    try {
      server = new napi.Server(config, address, options.port);
    } catch (err) {
      throw mapQuinnError(err, `listening on udp ${address}:${options.port}`);
    }
    await applyServerSocketBuffers(server.port(), family, this.#tuning.udpBufferBytes);
    return new QuinnListener(server, { host: address, port: server.port() }, options.maxStreams ?? DEFAULT_MAX_STREAMS, this.#tuning);
  }

  async connect(options: ConnectOptions): Promise<Connection> {
    checkPort(options.port, 'connect');
    const signal = options.signal;
    if (signal?.aborted === true) throw new ClawpeerError('ABORTED', 'connect aborted before it started', { cause: signal.reason });
    const napi = await loadQuinnNapi();
    const { address, family } = await resolveHost(options.host);
    const config = nativeConfig(napi, options.identity, options, this.#tuning);
    // One UDP endpoint per outbound connection: the connection owns it and releases it on close,
    // so nothing native outlives the connection and the process can exit.
    let client: NativeClient;
    try {
      client = new napi.Client(config, family === 6 ? 1 : 0);
    } catch (err) {
      throw mapQuinnError(err, `opening a UDP socket for ${address}`);
    }
    const where = `QUIC connect to ${address}:${options.port}`;
    const dialing = client.outboundConnection(address, options.port);
    // quinn's own handshake timeout overshoots (~3x for 1 s here); this deadline makes
    // idleTimeoutMs the real bound on a connect to a dead host.
    const handshakeMs = handshakeTimeoutMs(options);
    let native: NativeConnection;
    try {
      native = await raceAbort(dialing, signal, handshakeMs, (late) => late.abort());
    } catch (err) {
      client.abort(); // also ends a handshake still in flight after an abort
      const e = mapQuinnError(err, where);
      if (e instanceof ClawpeerError && e.code === 'TIMEOUT') {
        throw new ClawpeerError('TIMEOUT', `${where}: no handshake within the timeout (nothing listening, UDP blocked, or host down)`, { cause: err });
      }
      throw e;
    }
    try {
      return new QuinnConnection(native, {
        isServer: false,
        // The binding does not report the client socket's port; 0 means "ephemeral, unknown".
        localAddress: { host: family === 6 ? '::' : '0.0.0.0', port: 0 },
        maxStreams: options.maxStreams ?? DEFAULT_MAX_STREAMS,
        tuning: this.#tuning,
        onGone: () => client.abort(),
      });
    } catch (err) {
      native.abort();
      client.abort();
      throw err;
    }
  }
}

/**
 * Races `p` against `signal` (ABORTED) and a `timeoutMs` deadline (TIMEOUT); if either wins,
 * a late result is handed to `disposeLate`.
 */
function raceAbort<T>(p: Promise<T>, signal: AbortSignal | undefined, timeoutMs: number, disposeLate: (late: T) => void): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let lost = false;
    const lose = (err: ClawpeerError): void => {
      lost = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      reject(err);
    };
    const onAbort = (): void => lose(new ClawpeerError('ABORTED', 'connect aborted by its signal', { cause: signal?.reason }));
    const timer = setTimeout(() => lose(new ClawpeerError('TIMEOUT', `timed out after ${timeoutMs} ms`)), timeoutMs);
    if (signal?.aborted === true) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        if (lost) disposeLate(v);
        else resolve(v);
      },
      (err: unknown) => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        if (!lost) reject(err);
      },
    );
  });
}

export function quinnBackend(tuning?: Partial<QuinnTuning>): TransportBackend {
  return new QuinnBackend(tuning);
}
