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
//
// The connection and its streams, the tuning and the error mapping live in quinn-connection.ts.
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { type Identity, libp2pPrivateKeyProto } from '../crypto/identity.js';
import { ClawpeerError } from '../errors.js';
import { BoundedQueue } from './bounded-queue.js';
import { readNetCoreBytes } from './udp-buffers.js';
import { findUdpSocketFd, setUdpSocketBuffers } from './udp-socket-buffers.js';
import {
  loadQuinnNapi,
  quinnMaybeAvailable,
  type NativeClient,
  type NativeConnection,
  type NativeQuinnConfig,
  type NativeServer,
  type QuinnConfigInit,
  type QuinnNapi,
} from './quinn-napi.js';
import type {
  ConnectOptions,
  Connection,
  HostPort,
  ListenOptions,
  Listener,
  TransportBackend,
  TransportOptions,
} from './types.js';
import {
  log,
  type QuinnTuning,
  QUINN_TUNING_DEFAULTS,
  mapQuinnError,
  sleep,
  QuinnConnection,
} from './quinn-connection.js';

const DEFAULT_IDLE_TIMEOUT_MS = 30_000;
/** Handshake deadline: the idle timeout, but never more than this (a dead host costs at most this). */
const MAX_HANDSHAKE_TIMEOUT_MS = 10_000;
const DEFAULT_MAX_STREAMS = 256;
/** Backoff after an unexpected accept-loop error so a broken endpoint cannot spin a core. */
const ACCEPT_ERROR_BACKOFF_MS = 50;

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

function nativeConfig(
  napi: QuinnNapi,
  identity: Identity,
  opts: TransportOptions,
  tuning: QuinnTuning,
): NativeQuinnConfig {
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
  if (perIdentity === undefined) configCache.set(identity, (perIdentity = new Map<string, NativeQuinnConfig>()));
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
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new ClawpeerError('USAGE', `${what} port must be 0..65535, got ${port}`);
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
    return new QuinnListener(
      server,
      { host: address, port: server.port() },
      options.maxStreams ?? DEFAULT_MAX_STREAMS,
      this.#tuning,
    );
  }

  async connect(options: ConnectOptions): Promise<Connection> {
    checkPort(options.port, 'connect');
    const signal = options.signal;
    if (signal?.aborted === true)
      throw new ClawpeerError('ABORTED', 'connect aborted before it started', { cause: signal.reason });
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
        throw new ClawpeerError(
          'TIMEOUT',
          `${where}: no handshake within the timeout (nothing listening, UDP blocked, or host down)`,
          { cause: err },
        );
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
function raceAbort<T>(
  p: Promise<T>,
  signal: AbortSignal | undefined,
  timeoutMs: number,
  disposeLate: (late: T) => void,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let lost = false;
    const lose = (err: ClawpeerError): void => {
      lost = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      reject(err);
    };
    const onAbort = (): void =>
      lose(new ClawpeerError('ABORTED', 'connect aborted by its signal', { cause: signal?.reason }));
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
