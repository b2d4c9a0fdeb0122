// TLS-over-TCP fallback transport, for networks that block UDP: mutual TLS 1.3 (node:tls)
// carrying the mux of mux-session.ts.
//
// Each side presents a self-signed certificate whose subject key IS its Ed25519 identity key
// (x509.ts), so the TLS handshake (CertificateVerify) proves possession of that key. Chain
// validation is off (rejectUnauthorized: false); instead every peer certificate must be
// Ed25519 and self-signed by the key it carries, and that raw key becomes remotePublicKey.
// Anything else is AUTH_FAILED and the socket is destroyed.
// Non-goals: deciding whether the key is trusted (the node layer pins against the paired set),
// SNI/hostnames, session resumption.
import { isIP, type AddressInfo } from 'node:net';
import * as tls from 'node:tls';
import type { Identity } from '../crypto/identity.js';
import { createSelfSignedCertificate, ed25519KeyFromSelfSignedCertificate } from '../crypto/x509.js';
import { ClawpeerError, isClawpeerError } from '../errors.js';
import { DEFAULT_IDLE_TIMEOUT_MS, MuxSession, type MuxSessionOptions } from './mux-session.js';
import type {
  CloseInfo,
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

/** ALPN id of this wire protocol; a peer speaking anything else fails the handshake. */
export const TLS_ALPN_PROTOCOL = 'clawpeer-mux/1';
/** Authenticated connections waiting for accept(); more are closed at once (bounded queue). */
export const MAX_PENDING_CONNECTIONS = 64;

interface Credentials {
  readonly key: string;
  readonly cert: string;
}

/** One certificate per identity per process: signing is cheap, but there is no reason to repeat it. */
const credentialCache = new WeakMap<Identity, Credentials>();

function credentialsFor(identity: Identity): Credentials {
  let creds = credentialCache.get(identity);
  if (creds === undefined) {
    const key = identity.privateKeyObject.export({ format: 'pem', type: 'pkcs8' });
    creds = {
      key: typeof key === 'string' ? key : key.toString('utf8'),
      cert: createSelfSignedCertificate(identity).pem,
    };
    credentialCache.set(identity, creds);
  }
  return creds;
}

const TLS_VERSION_OPTIONS = { minVersion: 'TLSv1.3', maxVersion: 'TLSv1.3' } as const;

function sessionOptions(options: TransportOptions, initiator: boolean): MuxSessionOptions {
  return {
    initiator,
    ...(options.idleTimeoutMs !== undefined && { idleTimeoutMs: options.idleTimeoutMs }),
    ...(options.keepAliveMs !== undefined && { keepAliveMs: options.keepAliveMs }),
    ...(options.maxStreams !== undefined && { maxStreams: options.maxStreams }),
  };
}

/** The peer's proven Ed25519 key, or AUTH_FAILED; also checks the negotiated ALPN and version. */
function authenticatePeer(socket: tls.TLSSocket, who: string): Uint8Array {
  const protocol = socket.getProtocol();
  if (protocol !== 'TLSv1.3')
    throw new ClawpeerError('AUTH_FAILED', `${who} negotiated ${protocol ?? 'no TLS version'}, expected TLSv1.3`);
  if (socket.alpnProtocol !== TLS_ALPN_PROTOCOL) {
    throw new ClawpeerError(
      'AUTH_FAILED',
      `${who} does not speak ${TLS_ALPN_PROTOCOL} (ALPN: ${String(socket.alpnProtocol)})`,
    );
  }
  try {
    return ed25519KeyFromSelfSignedCertificate(socket.getPeerX509Certificate());
  } catch (err) {
    if (isClawpeerError(err)) throw new ClawpeerError('AUTH_FAILED', `${who}: ${err.message}`, { cause: err });
    throw err;
  }
}

function hostPort(host: string | undefined, port: number | undefined): HostPort {
  return { host: host ?? '', port: port ?? 0 };
}

const formatHostPort = (host: string, port: number): string =>
  isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`;

/** Maps a socket/TLS error during connect to our codes, naming the address. */
function connectError(err: unknown, target: string): ClawpeerError {
  if (isClawpeerError(err)) return err;
  const code = (err as NodeJS.ErrnoException | undefined)?.code ?? '';
  const detail = err instanceof Error ? err.message : String(err);
  switch (code) {
    case 'ECONNREFUSED':
      return new ClawpeerError('UNREACHABLE', `cannot connect to ${target}: connection refused (nothing listening?)`, {
        cause: err,
      });
    case 'ETIMEDOUT':
      return new ClawpeerError('TIMEOUT', `connecting to ${target} timed out`, { cause: err });
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new ClawpeerError('UNREACHABLE', `cannot resolve the host of ${target}`, { cause: err });
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
    case 'EADDRNOTAVAIL':
    case 'ECONNRESET':
    case 'EPIPE':
      return new ClawpeerError('UNREACHABLE', `cannot connect to ${target}: ${code}`, { cause: err });
    default:
      if (code.startsWith('ERR_SSL') || code.startsWith('ERR_TLS')) {
        return new ClawpeerError('AUTH_FAILED', `TLS handshake with ${target} failed: ${detail}`, { cause: err });
      }
      return new ClawpeerError('UNREACHABLE', `cannot connect to ${target}: ${detail}`, { cause: err });
  }
}

class TlsConnection implements Connection {
  readonly transport = 'tcp' as const;
  readonly remotePublicKey: Uint8Array;
  readonly remoteAddress: HostPort;
  readonly localAddress: HostPort;
  readonly closed: Promise<CloseInfo>;
  readonly #session: MuxSession;

  constructor(socket: tls.TLSSocket, remotePublicKey: Uint8Array, options: MuxSessionOptions) {
    socket.setNoDelay(true); // PING/PONG and small frames must not wait for Nagle
    this.remotePublicKey = remotePublicKey;
    this.remoteAddress = hostPort(socket.remoteAddress, socket.remotePort);
    this.localAddress = hostPort(socket.localAddress, socket.localPort);
    this.#session = new MuxSession(socket, options);
    this.closed = this.#session.closed;
  }

  openStream(): Promise<DuplexStream> {
    return this.#session.openStream();
  }

  acceptStream(options?: { signal?: AbortSignal }): Promise<DuplexStream | null> {
    return this.#session.acceptStream(options);
  }

  stats(): TransportStats {
    return this.#session.stats();
  }

  close(reason?: string): Promise<void> {
    return this.#session.close(reason);
  }
}

async function connect(options: ConnectOptions): Promise<Connection> {
  const target = formatHostPort(options.host, options.port);
  if (options.signal?.aborted === true) throwAborted(options.signal, target);
  const { key, cert } = credentialsFor(options.identity);
  const timeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
  const socket = tls.connect({
    host: options.host,
    port: options.port,
    key,
    cert,
    ...TLS_VERSION_OPTIONS,
    ALPNProtocols: [TLS_ALPN_PROTOCOL],
    rejectUnauthorized: false, // we check the self-signed certificate ourselves (authenticatePeer)
    checkServerIdentity: () => undefined, // no hostnames: the identity is the key
  });
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new ClawpeerError('TIMEOUT', `connecting to ${target} timed out after ${timeoutMs} ms`)),
        timeoutMs,
      );
      const onAbort = (): void =>
        reject(new ClawpeerError('ABORTED', `connect to ${target} aborted`, { cause: options.signal?.reason }));
      const cleanup = (): void => {
        clearTimeout(timer);
        options.signal?.removeEventListener('abort', onAbort);
        socket.off('secureConnect', onSecure);
        socket.off('error', onError);
        socket.off('close', onClose);
      };
      const onSecure = (): void => {
        cleanup();
        resolve();
      };
      const onError = (err: Error): void => {
        cleanup();
        reject(connectError(err, target));
      };
      const onClose = (): void => {
        cleanup();
        reject(new ClawpeerError('UNREACHABLE', `${target} closed the connection during the TLS handshake`));
      };
      socket.once('secureConnect', onSecure);
      socket.once('error', onError);
      socket.once('close', onClose);
      options.signal?.addEventListener('abort', onAbort, { once: true });
    });
    const remoteKey = authenticatePeer(socket, `server ${target}`);
    return new TlsConnection(socket, remoteKey, sessionOptions(options, true));
  } catch (err) {
    socket.destroy();
    throw connectError(err, target);
  }
}

function throwAborted(signal: AbortSignal, target: string): never {
  throw new ClawpeerError('ABORTED', `connect to ${target} aborted`, { cause: signal.reason });
}

class TlsListener implements Listener {
  readonly address: HostPort;
  readonly #server: tls.Server;
  readonly #queue: TlsConnection[] = [];
  readonly #waiters = new Set<(c: TlsConnection | null) => void>();
  #closed = false;

  constructor(server: tls.Server, options: ListenOptions) {
    this.#server = server;
    const addr = server.address() as AddressInfo;
    this.address = { host: addr.address, port: addr.port };
    const session = sessionOptions(options, false);
    server.on('secureConnection', (socket: tls.TLSSocket) => {
      let remoteKey: Uint8Array;
      try {
        remoteKey = authenticatePeer(
          socket,
          `client ${formatHostPort(socket.remoteAddress ?? '?', socket.remotePort ?? 0)}`,
        );
      } catch (err) {
        if (!isClawpeerError(err)) throw err;
        socket.destroy(); // AUTH_FAILED costs that socket only
        return;
      }
      const conn = new TlsConnection(socket, remoteKey, session);
      if (this.#closed || this.#queue.length >= MAX_PENDING_CONNECTIONS) {
        void conn.close(this.#closed ? 'listener closed' : 'too many connections waiting to be accepted');
        return;
      }
      const [waiter] = this.#waiters;
      if (waiter !== undefined) {
        this.#waiters.delete(waiter);
        waiter(conn);
      } else {
        this.#queue.push(conn);
        // A queued connection that dies before accept() is dropped from the queue.
        void conn.closed.then(() => {
          const i = this.#queue.indexOf(conn);
          if (i >= 0) this.#queue.splice(i, 1);
        });
      }
    });
    // Garbage, plain TCP probes, failed or timed-out handshakes: that socket is gone, the listener stays.
    server.on('tlsClientError', (_err: Error, socket: tls.TLSSocket) => socket.destroy());
    server.on('error', () => {
      // After listen() succeeded, server errors are per-connection accept failures (e.g. EMFILE); keep listening.
    });
  }

  accept(options?: { signal?: AbortSignal }): Promise<Connection | null> {
    const queued = this.#queue.shift();
    if (queued !== undefined) return Promise.resolve(queued);
    if (this.#closed) return Promise.resolve(null);
    const signal = options?.signal;
    return new Promise((resolve, reject) => {
      const abortError = (): ClawpeerError => new ClawpeerError('ABORTED', 'accept aborted', { cause: signal?.reason });
      if (signal?.aborted === true) {
        reject(abortError());
        return;
      }
      const onAbort = (): void => {
        this.#waiters.delete(waiter);
        reject(abortError());
      };
      const waiter = (c: TlsConnection | null): void => {
        signal?.removeEventListener('abort', onAbort);
        resolve(c);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiters.add(waiter);
    });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // Stops accepting now; established connections live on until they are closed themselves.
    this.#server.close();
    for (const w of this.#waiters) w(null);
    this.#waiters.clear();
    const pending = this.#queue.splice(0);
    await Promise.all(pending.map((c) => c.close('listener closed')));
  }
}

async function listen(options: ListenOptions): Promise<Listener> {
  const { key, cert } = credentialsFor(options.identity);
  const server = tls.createServer({
    key,
    cert,
    ...TLS_VERSION_OPTIONS,
    ALPNProtocols: [TLS_ALPN_PROTOCOL],
    requestCert: true,
    rejectUnauthorized: false, // we check the self-signed client certificate ourselves
    handshakeTimeout: options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS,
  });
  await new Promise<void>((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => {
      const target = formatHostPort(options.host, options.port);
      reject(
        err.code === 'EADDRINUSE'
          ? new ClawpeerError('ADDRESS_IN_USE', `cannot listen on ${target}: address already in use`, { cause: err })
          : new ClawpeerError('UNREACHABLE', `cannot listen on ${target}: ${err.code ?? err.message}`, { cause: err }),
      );
    };
    server.once('error', onError);
    server.listen({ host: options.host, port: options.port }, () => {
      server.off('error', onError);
      resolve();
    });
  });
  return new TlsListener(server, options);
}

export const tlsBackend: TransportBackend = {
  name: 'tcp',
  available: () => true,
  listen,
  connect,
};
