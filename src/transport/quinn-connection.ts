// One QUIC connection and its streams on the quinn binding (QuinnConnection, QuinnStream), made by
// quinn.ts's backend; with the tuning knobs and the one place the binding's errors are mapped.
import { debuglog } from 'node:util';
import { publicKeyFromNodeId } from '../crypto/node-id.js';
import { ClawpeerError, type LocalErrorCode } from '../errors.js';
import { BoundedQueue } from './bounded-queue.js';
import { Counter32 } from './counter32.js';
import type { NativeConnection, NativeConnectionStats, NativeStream } from './quinn-napi.js';
import type { CloseInfo, CloseOptions, Connection, DuplexStream, HostPort, TransportStats } from './types.js';

export const log = debuglog('clawpeer:transport:quinn');

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

/** read() default and cap: the binding allocates `maxBytes` per call (64–256 KiB is the sweet spot). */
const DEFAULT_READ_BYTES = 256 * 1024;
const MAX_READ_BYTES = 1024 * 1024;
/** How often a connection reads its byte counters to widen them (a 32-bit wrap needs 4 GiB in that time). */
const COUNTER_SAMPLE_MS = 1_000;
/** Linger polling period and the minimum quiet time that counts as "sent and acknowledged". */
const LINGER_POLL_MS = 5;
const LINGER_QUIET_MIN_MS = 25; // >= quinn's default max_ack_delay (25 ms)

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

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

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
      if (this.#resetLocally)
        throw new ClawpeerError('ABORTED', `stream ${this.id}: read after reset()`, { cause: err });
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

export class QuinnConnection implements Connection {
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
    const reason = this.#closing
      ? this.#closeReason
      : err === undefined
        ? 'closed by the peer'
        : typeof err === 'string'
          ? err
          : err instanceof Error
            ? String(err)
            : JSON.stringify(err);
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
      sentPackets: s.udpTxDatagrams,
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
