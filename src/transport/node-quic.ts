// QUIC transport backend on Node's own `node:quic` (ngtcp2), for runtimes built with it.
//
// UNTESTED HERE: no official Node binary has node:quic yet (process.features.quic is
// undefined on Node 20.20 and false on 26.x, see PLATFORM.md). This adapter is written against
// the documented API shape of Node 23.8–24 (quic.listen(onsession, options) -> QuicEndpoint,
// quic.connect(address, options) -> QuicSession, session.onstream,
// session.createBidirectionalStream(), stream.readable as a WHATWG ReadableStream) and
// feature-detects everything it touches. When available() is false, listen/connect throw
// TRANSPORT_UNAVAILABLE and the compliance suite skips. When a runtime ships node:quic, run
// test/transport/node-quic.test.ts there first: expect to fix details of the API shape.
//
// Identity: both sides present the self-signed Ed25519 certificate of crypto/x509.ts (the
// same one the TLS backend uses; subject key = node key), chain validation is off and the
// peer certificate must be self-signed by the key it carries, which becomes remotePublicKey.
// Non-goals: HTTP/3, datagrams, unidirectional streams, session tickets/0-RTT.
import { X509Certificate } from 'node:crypto';
import { createSelfSignedCertificate, ed25519KeyFromSelfSignedCertificate } from '../crypto/x509.js';
import { ClawpeerError } from '../errors.js';
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

/** ALPN of clawpeer over raw QUIC streams (the quinn backend speaks the libp2p profile instead). */
export const NODE_QUIC_ALPN = 'clawpeer/1';
const DEFAULT_IDLE_TIMEOUT_MS = 30_000;
const DEFAULT_MAX_STREAMS = 256;
const DEFAULT_READ_BYTES = 256 * 1024;
const ACCEPT_QUEUE_CONNECTIONS = 16;

// Structural types for the parts of node:quic we use (@types/node 20 has none).
interface QuicSocketAddress {
  readonly address: string;
  readonly port: number;
}
interface QuicStreamLike {
  readonly id: bigint | number;
  readonly readable: ReadableStream<Uint8Array>;
  readonly writable?: WritableStream<Uint8Array>;
  destroy(error?: unknown): void;
}
interface QuicSessionLike {
  onstream: ((stream: QuicStreamLike) => void) | undefined;
  readonly opened?: Promise<unknown>;
  readonly closed: Promise<void>;
  readonly path?: { readonly local: QuicSocketAddress; readonly remote: QuicSocketAddress };
  readonly peerCertificate?: Uint8Array | X509Certificate;
  readonly stats: {
    readonly smoothedRtt?: bigint | number;
    readonly bytesSent?: bigint | number;
    readonly bytesReceived?: bigint | number;
  };
  createBidirectionalStream(options?: object): Promise<QuicStreamLike>;
  close(): Promise<void>;
  destroy(error?: unknown): void;
}
interface QuicEndpointLike {
  readonly address: QuicSocketAddress | undefined;
  close(): Promise<void>;
}
interface NodeQuicModule {
  listen(onsession: (session: QuicSessionLike) => void, options: object): Promise<QuicEndpointLike>;
  connect(address: string, options: object): Promise<QuicSessionLike>;
}

function builtinQuic(): NodeQuicModule | undefined {
  const features = process.features as { quic?: boolean };
  if (features.quic !== true) return undefined;
  const getBuiltin = (process as { getBuiltinModule?: (id: string) => unknown }).getBuiltinModule;
  const mod = typeof getBuiltin === 'function' ? getBuiltin('node:quic') : undefined;
  const m = mod as Partial<NodeQuicModule> | undefined;
  return typeof m?.listen === 'function' && typeof m.connect === 'function' ? (m as NodeQuicModule) : undefined;
}

function unavailable(): ClawpeerError {
  return new ClawpeerError(
    'TRANSPORT_UNAVAILABLE',
    `this Node ${process.version} has no node:quic (process.features.quic is ${String((process.features as { quic?: boolean }).quic)}); use the quic (quinn) or tcp backend`,
  );
}

const num = (v: bigint | number | undefined): number => (v === undefined ? 0 : Number(v));

function tlsOptions(identity: ListenOptions['identity'], idleTimeoutMs: number, maxStreams: number): object {
  const cert = createSelfSignedCertificate(identity);
  return {
    alpn: NODE_QUIC_ALPN,
    keys: [identity.privateKeyObject],
    certs: [cert.pem],
    verifyClient: true, // ask for the client certificate; we verify it ourselves
    rejectUnauthorized: false, // self-signed by design; checked in authenticate()
    transportParams: { maxIdleTimeout: idleTimeoutMs, initialMaxStreamsBidi: maxStreams },
  };
}

function authenticate(session: QuicSessionLike): Uint8Array {
  const cert = session.peerCertificate;
  if (cert === undefined) throw new ClawpeerError('AUTH_FAILED', 'node:quic peer presented no certificate');
  return ed25519KeyFromSelfSignedCertificate(cert instanceof X509Certificate ? cert : new X509Certificate(cert));
}

class NodeQuicStream implements DuplexStream {
  readonly id: number;
  readonly #stream: QuicStreamLike;
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array> | undefined;
  #pending: Uint8Array | undefined;

  constructor(stream: QuicStreamLike) {
    this.#stream = stream;
    this.id = Number(stream.id);
    this.#reader = stream.readable.getReader();
    this.#writer = stream.writable?.getWriter();
  }

  async write(data: Uint8Array): Promise<void> {
    if (this.#writer === undefined)
      throw new ClawpeerError('TRANSPORT_UNAVAILABLE', 'this node:quic stream has no writable side');
    try {
      await this.#writer.ready;
      await this.#writer.write(new Uint8Array(data)); // a copy (Buffer#slice is not): the caller may reuse `data` once we resolve
    } catch (cause) {
      throw new ClawpeerError('CONNECTION_CLOSED', `node:quic stream ${this.id} write failed`, { cause });
    }
  }

  async read(maxBytes = DEFAULT_READ_BYTES): Promise<Uint8Array | null> {
    let chunk = this.#pending;
    this.#pending = undefined;
    if (chunk === undefined) {
      try {
        const r = await this.#reader.read();
        if (r.done) return null;
        chunk = r.value;
      } catch (cause) {
        throw new ClawpeerError('CONNECTION_CLOSED', `node:quic stream ${this.id} read failed`, { cause });
      }
    }
    if (chunk.length > maxBytes) {
      this.#pending = chunk.subarray(maxBytes);
      return chunk.subarray(0, maxBytes);
    }
    return chunk;
  }

  async finish(): Promise<void> {
    try {
      await this.#writer?.close();
    } catch (cause) {
      throw new ClawpeerError('CONNECTION_CLOSED', `node:quic stream ${this.id} finish failed`, { cause });
    }
  }

  reset(): void {
    this.#stream.destroy(new ClawpeerError('ABORTED', `stream ${this.id} reset`));
  }
}

class NodeQuicConnection implements Connection {
  readonly transport = 'node-quic' as const;
  readonly remotePublicKey: Uint8Array;
  readonly remoteAddress: HostPort;
  readonly localAddress: HostPort;
  readonly closed: Promise<CloseInfo>;
  readonly #session: QuicSessionLike;
  readonly #streams: BoundedQueue<NodeQuicStream>;
  #closing = false;
  #reason: string | undefined;

  constructor(session: QuicSessionLike, remotePublicKey: Uint8Array, maxStreams: number) {
    this.#session = session;
    this.remotePublicKey = remotePublicKey;
    this.remoteAddress = { host: session.path?.remote.address ?? '', port: session.path?.remote.port ?? 0 };
    this.localAddress = { host: session.path?.local.address ?? '', port: session.path?.local.port ?? 0 };
    this.#streams = new BoundedQueue(maxStreams);
    session.onstream = (s) => {
      if (!this.#streams.push(new NodeQuicStream(s))) s.destroy();
    };
    this.closed = session.closed.then(
      () => this.#info(),
      (err: unknown) => this.#info(String(err)),
    );
    void this.closed.then(() => this.#streams.close());
  }

  #info(peerReason?: string): CloseInfo {
    const reason = this.#closing ? this.#reason : peerReason;
    return reason === undefined ? { local: this.#closing } : { local: this.#closing, reason };
  }

  async openStream(): Promise<DuplexStream> {
    if (this.#closing) throw new ClawpeerError('CONNECTION_CLOSED', 'openStream on a closing connection');
    try {
      return new NodeQuicStream(await this.#session.createBidirectionalStream());
    } catch (cause) {
      throw new ClawpeerError('CONNECTION_CLOSED', 'node:quic openStream failed', { cause });
    }
  }

  acceptStream(options?: { signal?: AbortSignal }): Promise<DuplexStream | null> {
    return this.#streams.shift(options?.signal);
  }

  stats(): TransportStats {
    const s = this.#session.stats;
    // smoothedRtt is reported in nanoseconds.
    return { rttMs: num(s.smoothedRtt) / 1e6, bytesSent: num(s.bytesSent), bytesReceived: num(s.bytesReceived) };
  }

  /** session.close() is graceful in node:quic: open streams finish before the session ends. */
  async close(reason?: string): Promise<void> {
    if (!this.#closing) {
      this.#closing = true;
      this.#reason = reason;
      this.#streams.close();
      await this.#session.close().catch(() => {});
    }
    await this.closed;
  }
}

class NodeQuicListener implements Listener {
  readonly address: HostPort;
  readonly #endpoint: QuicEndpointLike;
  readonly #queue: BoundedQueue<NodeQuicConnection>;

  constructor(endpoint: QuicEndpointLike, queue: BoundedQueue<NodeQuicConnection>, requested: HostPort) {
    this.#endpoint = endpoint;
    this.#queue = queue;
    this.address = {
      host: endpoint.address?.address ?? requested.host,
      port: endpoint.address?.port ?? requested.port,
    };
  }

  accept(options?: { signal?: AbortSignal }): Promise<Connection | null> {
    return this.#queue.shift(options?.signal);
  }

  async close(): Promise<void> {
    for (const c of this.#queue.close()) void c.close('listener closed');
    await this.#endpoint.close().catch(() => {});
  }
}

export class NodeQuicBackend implements TransportBackend {
  readonly name = 'node-quic' as const;

  available(): boolean {
    return builtinQuic() !== undefined;
  }

  async listen(options: ListenOptions): Promise<Listener> {
    const quic = builtinQuic();
    if (quic === undefined) throw unavailable();
    const maxStreams = options.maxStreams ?? DEFAULT_MAX_STREAMS;
    const queue = new BoundedQueue<NodeQuicConnection>(ACCEPT_QUEUE_CONNECTIONS);
    const onsession = (session: QuicSessionLike): void => {
      void (async () => {
        try {
          await session.opened;
          const conn = new NodeQuicConnection(session, authenticate(session), maxStreams);
          if (!queue.push(conn)) await conn.close('accept queue full or listener closed');
        } catch {
          session.destroy();
        }
      })();
    };
    const endpoint = await quic.listen(onsession, {
      endpoint: { address: `${options.host}:${options.port}` },
      ...tlsOptions(options.identity, options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS, maxStreams),
    });
    return new NodeQuicListener(endpoint, queue, { host: options.host, port: options.port });
  }

  async connect(options: ConnectOptions): Promise<Connection> {
    const quic = builtinQuic();
    if (quic === undefined) throw unavailable();
    if (options.signal?.aborted === true) throw new ClawpeerError('ABORTED', 'connect aborted before it started');
    const maxStreams = options.maxStreams ?? DEFAULT_MAX_STREAMS;
    const idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
    const where = `node:quic connect to ${options.host}:${options.port}`;
    const session = await quic
      .connect(`${options.host}:${options.port}`, tlsOptions(options.identity, idleTimeoutMs, maxStreams))
      .catch((cause: unknown) => {
        throw new ClawpeerError('UNREACHABLE', `${where} failed`, { cause });
      });
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        session.opened,
        new Promise((_, reject) => {
          timer = setTimeout(
            () => reject(new ClawpeerError('TIMEOUT', `${where}: no handshake within ${idleTimeoutMs} ms`)),
            idleTimeoutMs,
          );
        }),
        new Promise((_, reject) =>
          options.signal?.addEventListener('abort', () => reject(new ClawpeerError('ABORTED', `${where} aborted`)), {
            once: true,
          }),
        ),
      ]);
      return new NodeQuicConnection(session, authenticate(session), maxStreams);
    } catch (err) {
      session.destroy();
      throw err instanceof ClawpeerError ? err : new ClawpeerError('UNREACHABLE', `${where} failed`, { cause: err });
    } finally {
      clearTimeout(timer);
    }
  }
}

export function nodeQuicBackend(): TransportBackend {
  return new NodeQuicBackend();
}
