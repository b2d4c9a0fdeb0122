// Hand-written types for, and the loader of, the quinn binding inside @chainsafe/libp2p-quic
// 2.1.1 (the package ships `any` for these). Only the members the adapter uses are typed; the
// shapes were read from the package's own dist/src/*.js and checked against the native
// module's exported names. The native classes are not in the package `exports`, so napi.js
// is loaded from next to the package entry (see PLATFORM.md).
//
// Non-goals: the libp2p wrapper classes, endpoint stats, anything not used by quinn.ts.
import { ClawpeerError } from '../errors.js';

/** Config fields the native QuinnConfig requires (all are mandatory; times in ms, sizes in bytes). */
export interface QuinnConfigInit {
  /** libp2p protobuf Ed25519 private key: 0x08 0x01 0x12 0x40 || seed || pub. */
  readonly privateKeyProto: Uint8Array;
  readonly handshakeTimeout: number;
  readonly maxIdleTimeout: number;
  readonly keepAliveInterval: number;
  readonly maxConcurrentStreamLimit: number;
  readonly maxStreamData: number;
  readonly maxConnectionData: number;
  /** UDP socket SO_RCVBUF / SO_SNDBUF; the kernel clamps to net.core.rmem_max / wmem_max. */
  readonly receiveBufferSize: number;
  readonly sendBufferSize: number;
}

export type NativeQuinnConfig = object;

/** The native connection statistics (quinn ConnectionStats, flattened). pathRtt is in ms. */
export interface NativeConnectionStats {
  readonly udpTxBytes: number;
  readonly udpRxBytes: number;
  readonly udpTxDatagrams: number;
  readonly frameRxAcks: number;
  readonly pathRtt: number;
  readonly pathCwnd: number;
  readonly pathLostPackets: number;
}

export interface NativeStream {
  /** Decimal text of the stream index among streams its initiator opened (0, 1, 2, ...). */
  id(): string;
  /** Up to `maxBytes` (allocated per call), or null at FIN. */
  read(maxBytes: number): Promise<Uint8Array | null>;
  /** Resolves once quinn has buffered `data`: this is the backpressure. */
  write(data: Uint8Array): Promise<void>;
  /** Sends FIN after buffered data; resolves at once, not when acknowledged. */
  finishWrite(): Promise<void>;
  /** RESET_STREAM on the send side. */
  resetWrite(): Promise<void>;
  /** STOP_SENDING on the receive side. */
  stopRead(): Promise<void>;
}

export interface NativeConnection {
  id(): string | number;
  /** Multiaddr text: /ip4/<ip>/udp/<port>/quic-v1/p2p/<peer id proven by TLS>. */
  remoteMultiaddr(): string;
  inboundStream(): Promise<NativeStream>;
  outboundStream(): Promise<NativeStream>;
  /** Smoothed RTT in ms. */
  rtt(): number;
  stats(): NativeConnectionStats;
  /** Resolves when the connection is gone, whichever side ended it. */
  closed(): Promise<void>;
  /** Immediate CONNECTION_CLOSE; unsent and unacknowledged stream data is dropped. */
  abort(): void;
}

export interface NativeServer {
  port(): number;
  /** Completes the next handshake; handshakes only progress while one of these is pending. */
  inboundConnection(): Promise<NativeConnection>;
  abort(): Promise<void>;
}

export interface NativeClient {
  outboundConnection(host: string, port: number): Promise<NativeConnection>;
  abort(): void;
}

/** SocketFamily in the binding: 0 = IPv4, 1 = IPv6. */
export type NativeSocketFamily = 0 | 1;

export interface QuinnNapi {
  QuinnConfig: new (init: QuinnConfigInit) => NativeQuinnConfig;
  Server: new (config: NativeQuinnConfig, host: string, port: number) => NativeServer;
  Client: new (config: NativeQuinnConfig, family: NativeSocketFamily) => NativeClient;
}

const PACKAGE = '@chainsafe/libp2p-quic';
let loading: Promise<QuinnNapi> | undefined;
let loadFailure: unknown;

/** True unless loading the binding has already failed or the package cannot be resolved. */
export function quinnMaybeAvailable(): boolean {
  if (loadFailure !== undefined) return false;
  try {
    import.meta.resolve(PACKAGE);
    return true;
  } catch {
    return false;
  }
}

/** Loads the native classes once; TRANSPORT_UNAVAILABLE with the reason if this platform has none. */
export function loadQuinnNapi(): Promise<QuinnNapi> {
  loading ??= (async () => {
    try {
      const url = new URL('./napi.js', import.meta.resolve(PACKAGE));
      const mod = (await import(url.href)) as Partial<QuinnNapi>;
      if (
        typeof mod.QuinnConfig !== 'function' ||
        typeof mod.Server !== 'function' ||
        typeof mod.Client !== 'function'
      ) {
        throw new Error(`${url.href} does not export QuinnConfig, Server and Client (is ${PACKAGE} pinned to 2.1.1?)`);
      }
      return mod as QuinnNapi;
    } catch (cause) {
      loadFailure = cause;
      throw new ClawpeerError(
        'TRANSPORT_UNAVAILABLE',
        `the quinn QUIC binding from ${PACKAGE} could not be loaded on ${process.platform}-${process.arch}: ${String(cause)}`,
        { cause },
      );
    }
  })();
  return loading;
}
