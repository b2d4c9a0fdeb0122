// The one transport interface every backend implements (quinn QUIC, TLS-over-TCP, node:quic,
// in-memory). Backends prove the peer's Ed25519 key during their own handshake and expose it
// as `remotePublicKey`; they do NOT decide whether that key is trusted. Pinning against the
// paired set is the node layer's job and happens before any application byte is processed.
import type { Identity } from '../crypto/identity.js';

export type TransportName = 'quic' | 'tcp' | 'node-quic' | 'memory';

export interface HostPort {
  readonly host: string;
  readonly port: number;
}

export interface TransportStats {
  /** Smoothed round-trip time as the transport measures it, in milliseconds. */
  readonly rttMs: number;
  /** Bytes the connection has put on / taken off the wire (incl. transport overhead when known). */
  readonly bytesSent: number;
  readonly bytesReceived: number;
  /** Packets the transport declared lost (quinn: path.lost_packets), since the connection began. */
  readonly lostPackets?: number;
  /** UDP datagrams sent since the connection began (quinn: udp_tx.datagrams). */
  readonly sentPackets?: number;
  readonly congestionWindowBytes?: number;
}

/** A reliable, ordered, bidirectional byte stream inside a connection. */
export interface DuplexStream {
  readonly id: number;
  /**
   * Resolves once the bytes are accepted (this is the backpressure). Do not mutate `data` before;
   * once it resolves the caller may reuse it (the write coalescer joins frames in one buffer).
   */
  write(data: Uint8Array): Promise<void>;
  /** Next bytes (at most `maxBytes`), or null at the peer's FIN. Rejects on reset/connection loss. */
  read(maxBytes?: number): Promise<Uint8Array | null>;
  /** Half-close: send FIN after everything written so far. */
  finish(): Promise<void>;
  /** Abort both directions now. */
  reset(): void;
}

export interface CloseInfo {
  /** True when this side called close(). */
  readonly local: boolean;
  readonly reason?: string;
}

export interface CloseOptions {
  /**
   * false: the peer's application has already acknowledged everything this side sent (a done
   * message came back), so waiting for the transport to see its tail acknowledged buys nothing.
   * Only quinn waits (its close linger, 30-80 ms at the end of every command here); the other
   * transports ignore this. Default true.
   */
  readonly linger?: boolean;
}

export interface Connection {
  readonly transport: TransportName;
  /** The peer's Ed25519 public key (32 bytes), proven by the transport handshake. */
  readonly remotePublicKey: Uint8Array;
  readonly remoteAddress: HostPort;
  readonly localAddress: HostPort;
  openStream(): Promise<DuplexStream>;
  /** The next stream the peer opened, or null once the connection is closed. */
  acceptStream(options?: { signal?: AbortSignal }): Promise<DuplexStream | null>;
  stats(): TransportStats;
  /** Close gracefully (data already acknowledged by the application is delivered). Idempotent. */
  close(reason?: string, options?: CloseOptions): Promise<void>;
  /** Settles when the connection is gone, for whatever reason. Never rejects. */
  readonly closed: Promise<CloseInfo>;
}

export interface Listener {
  readonly address: HostPort;
  /** The next authenticated inbound connection, or null once the listener is closed. */
  accept(options?: { signal?: AbortSignal }): Promise<Connection | null>;
  close(): Promise<void>;
}

export interface TransportOptions {
  /** Idle timeout; also bounds how long a connect to a dead host waits. */
  readonly idleTimeoutMs?: number;
  readonly keepAliveMs?: number;
  readonly maxStreams?: number;
}

export interface ListenOptions extends TransportOptions {
  readonly host: string;
  readonly port: number;
  readonly identity: Identity;
}

export interface ConnectOptions extends TransportOptions {
  readonly host: string;
  readonly port: number;
  readonly identity: Identity;
  readonly signal?: AbortSignal;
}

export interface TransportBackend {
  readonly name: TransportName;
  /** False when this runtime cannot run the backend (e.g. node:quic absent). */
  available(): boolean;
  listen(options: ListenOptions): Promise<Listener>;
  connect(options: ConnectOptions): Promise<Connection>;
}
