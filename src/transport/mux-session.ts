// Stream multiplexer over one reliable byte pipe (a TLS socket): the DuplexStream and
// connection semantics of transport/types.ts, built on the frames of mux-codec.ts.
//
// Goals: many independent streams over one socket (yamux / HTTP/2 style); per-stream
// credit-based flow control so a stream nobody reads stalls only its own writer and buffers at
// most its receive window; write() that resolves only when the peer's window had room and the
// socket took the bytes; RTT from PING/PONG; keep-alive and idle timeout; graceful close
// (GOAWAY, then the socket's end) and hard failure on any protocol violation.
// Non-goals: authentication (the TLS layer proves keys), a connection-level window (memory is
// bounded by maxStreams x streamWindowBytes instead), stream priorities.
import type { Duplex } from 'node:stream';
import { performance } from 'node:perf_hooks';
import { ClawpeerError, isClawpeerError } from '../errors.js';
import {
  FrameDecoder,
  FrameType,
  GoAwayCode,
  MAX_DATA_FRAME_BYTES,
  MAX_STREAM_ID,
  PING_PAYLOAD_BYTES,
  ResetCode,
  encodeFrame,
  type MuxFrame,
} from './mux-codec.js';
import type { CloseInfo, DuplexStream, TransportStats } from './types.js';
import {
  INITIAL_WINDOW_BYTES,
  MAX_SEND_CREDIT_BYTES,
  MuxStream,
  type Waiter,
  violationGoAwayCodes,
} from './mux-stream.js';

/**
 * Default receive window per stream (4 MiB): enough for ~80 MiB/s per stream at 50 ms RTT.
 * The receiver raises the peer's credit from INITIAL_WINDOW_BYTES to this right after OPEN.
 */
export const DEFAULT_STREAM_WINDOW_BYTES = 4 * 1024 * 1024;
export const DEFAULT_MAX_STREAMS = 128;
export const DEFAULT_IDLE_TIMEOUT_MS = 30_000;
export const DEFAULT_KEEP_ALIVE_MS = 10_000;
/** How long close() waits for the peer to end its side before destroying the socket (ms). */
const CLOSE_LINGER_MS = 2_000;
/** Timer granularity floor for idle/keep-alive checks (ms). */
const MIN_TICK_MS = 10;

export interface MuxSessionOptions {
  /** True on the connecting side: it opens odd stream ids, the accepting side even ones. */
  readonly initiator: boolean;
  readonly idleTimeoutMs?: number;
  /** PING interval (ms); 0 disables keep-alive pings after the first (RTT) ping. */
  readonly keepAliveMs?: number;
  readonly maxStreams?: number;
  readonly streamWindowBytes?: number;
  /** Largest DATA payload accepted from the peer (bytes). */
  readonly maxDataFrameBytes?: number;
}

type SessionState = 'open' | 'closing' | 'closed';

const closedError = (message: string, cause?: unknown): ClawpeerError =>
  new ClawpeerError('CONNECTION_CLOSED', message, cause === undefined ? undefined : { cause });

/** Rejects with ABORTED when `signal` fires; the returned cleanup removes the listener. */
function onAbort(signal: AbortSignal | undefined, reject: (err: unknown) => void, what: string): () => void {
  if (signal === undefined) return () => {};
  const listener = (): void => reject(new ClawpeerError('ABORTED', `${what} aborted`, { cause: signal.reason }));
  if (signal.aborted) {
    listener();
    return () => {};
  }
  signal.addEventListener('abort', listener, { once: true });
  return () => signal.removeEventListener('abort', listener);
}

export class MuxSession {
  readonly closed: Promise<CloseInfo>;
  readonly #socket: Duplex;
  readonly #initiator: boolean;
  readonly #idleTimeoutMs: number;
  readonly #keepAliveMs: number;
  readonly #maxStreams: number;
  readonly #streamWindowBytes: number;
  readonly #decoder: FrameDecoder;
  readonly #streams = new Map<number, MuxStream>();
  #nextLocalId: number;
  /** Highest id the peer opened; OPEN ids must increase. */
  #lastPeerId = 0;
  #localCount = 0;
  #peerCount = 0;
  readonly #acceptQueue: MuxStream[] = [];
  readonly #acceptWaiters = new Set<Waiter<MuxStream | null>>();
  readonly #openWaiters = new Set<Waiter<void>>();
  #state: SessionState = 'open';
  /** Why the session failed (for pending and later operations); set once. */
  #error: ClawpeerError | undefined;
  #resolveClosed!: (info: CloseInfo) => void;
  #closePromise: Promise<void> | undefined;
  #closeInfo: CloseInfo | undefined;
  #remoteGoAway: { code: number; reason: string } | undefined;
  #socketClosed = false;
  #waitSocketClose: Promise<void>;
  // Stats and timers.
  #bytesSent = 0;
  #bytesReceived = 0;
  #srttMs: number | undefined;
  #pingNonce = 0n;
  #pingOutstanding: { nonce: bigint; sentAtMs: number } | undefined;
  #lastPingAtMs = 0;
  #lastReceiveAtMs: number;
  #timer: NodeJS.Timeout | undefined;

  constructor(socket: Duplex, options: MuxSessionOptions) {
    this.#socket = socket;
    this.#initiator = options.initiator;
    this.#idleTimeoutMs = options.idleTimeoutMs ?? DEFAULT_IDLE_TIMEOUT_MS;
    this.#keepAliveMs = options.keepAliveMs ?? DEFAULT_KEEP_ALIVE_MS;
    this.#maxStreams = options.maxStreams ?? DEFAULT_MAX_STREAMS;
    this.#streamWindowBytes = options.streamWindowBytes ?? DEFAULT_STREAM_WINDOW_BYTES;
    if (this.#streamWindowBytes < INITIAL_WINDOW_BYTES || this.#streamWindowBytes > MAX_SEND_CREDIT_BYTES) {
      throw new RangeError(
        `streamWindowBytes must be ${INITIAL_WINDOW_BYTES}..${MAX_SEND_CREDIT_BYTES}, got ${this.#streamWindowBytes}`,
      );
    }
    if (!(this.#maxStreams >= 1)) throw new RangeError(`maxStreams must be >= 1, got ${this.#maxStreams}`);
    if (!(this.#idleTimeoutMs > 0)) throw new RangeError(`idleTimeoutMs must be > 0, got ${this.#idleTimeoutMs}`);
    this.#decoder = new FrameDecoder(options.maxDataFrameBytes ?? MAX_DATA_FRAME_BYTES);
    this.#nextLocalId = options.initiator ? 1 : 2;
    this.#lastReceiveAtMs = performance.now();
    this.closed = new Promise((resolve) => {
      this.#resolveClosed = resolve;
    });
    this.#waitSocketClose = new Promise((resolve) => socket.once('close', () => resolve()));

    socket.on('data', (chunk: Buffer) => this.#onData(chunk));
    socket.on('end', () => this.#onEnd());
    socket.on('error', (err: Error) => this.#onSocketError(err));
    socket.on('close', () => this.#onSocketClose());

    // First RTT sample right away from the accepting side, whose session starts only once TLS
    // (client certificate included) is done. The initiator's session starts before the peer has
    // checked its certificate, so its first ping would time that check, not the path: it pings
    // when the peer's first PING arrives instead (see #onFrame).
    if (!this.#initiator) this.#sendPing();
    this.#armTimer();
  }

  stats(): TransportStats {
    return { rttMs: this.#srttMs ?? 0, bytesSent: this.#bytesSent, bytesReceived: this.#bytesReceived };
  }

  async openStream(): Promise<DuplexStream> {
    for (;;) {
      this.#throwIfNotOpen('openStream');
      if (this.#localCount < this.#maxStreams) break;
      // QUIC-like: wait for one of our streams to end rather than have the peer refuse it.
      await new Promise<void>((resolve, reject) => {
        const waiter: Waiter<void> = { resolve, reject };
        this.#openWaiters.add(waiter);
      });
    }
    const id = this.#nextLocalId;
    if (id > MAX_STREAM_ID)
      throw new ClawpeerError('PROTOCOL', 'mux: stream ids exhausted on this connection; reconnect');
    this.#nextLocalId += 2;
    const stream = new MuxStream(this, id, this.#streamWindowBytes);
    this.#streams.set(id, stream);
    this.#localCount++;
    this.sendFrame({ type: FrameType.OPEN, streamId: id });
    this.#grantInitialWindow(id);
    return stream;
  }

  acceptStream(options?: { signal?: AbortSignal }): Promise<DuplexStream | null> {
    const queued = this.#acceptQueue.shift();
    if (queued !== undefined) return Promise.resolve(queued);
    if (this.#state !== 'open' || this.#remoteGoAway !== undefined) return Promise.resolve(null);
    return new Promise((resolve, reject) => {
      const waiter: Waiter<MuxStream | null> = {
        resolve: (v) => {
          cleanup();
          resolve(v);
        },
        reject: (e) => {
          cleanup();
          reject(e);
        },
      };
      const cleanup = onAbort(
        options?.signal,
        (err) => {
          this.#acceptWaiters.delete(waiter);
          reject(err);
        },
        'acceptStream',
      );
      if (options?.signal?.aborted === true) return;
      this.#acceptWaiters.add(waiter);
    });
  }

  /** Graceful: GOAWAY, flush what the socket holds, end it, wait for the peer's end. Idempotent. */
  close(reason?: string): Promise<void> {
    if (this.#closePromise !== undefined) return this.#closePromise;
    this.#closePromise = (async () => {
      if (this.#state === 'open') {
        this.#state = 'closing';
        this.#closeInfo = reason === undefined ? { local: true } : { local: true, reason };
        this.sendFrame({ type: FrameType.GOAWAY, code: GoAwayCode.NORMAL, reason: reason ?? '' });
        this.#failStreams(closedError(`connection closed locally${reason === undefined ? '' : `: ${reason}`}`));
        if (!this.#socket.writableEnded) this.#socket.end();
        const linger = setTimeout(() => this.#socket.destroy(), CLOSE_LINGER_MS);
        linger.unref();
        await this.#waitSocketClose;
        clearTimeout(linger);
      }
      await this.closed;
    })();
    return this.#closePromise;
  }

  // ---- sending ------------------------------------------------------------------------------

  /** Writes one control frame (fire and forget; dropped once the socket is ending). */
  sendFrame(frame: MuxFrame): void {
    if (this.#socket.writableEnded || this.#socket.destroyed) return;
    const parts = encodeFrame(frame);
    this.#write(parts, undefined);
  }

  /**
   * Writes one DATA frame. Settles once the socket has handed the bytes on (so the caller may
   * reuse its buffer): this is the socket-level backpressure.
   */
  sendData(streamId: number, payload: Uint8Array): Promise<void> {
    return new Promise((resolve, reject) => {
      if (this.#error !== undefined) {
        reject(this.#error);
        return;
      }
      if (this.#socket.writableEnded || this.#socket.destroyed) {
        reject(closedError('connection closed'));
        return;
      }
      const parts = encodeFrame({ type: FrameType.DATA, streamId, payload });
      this.#write(parts, (err) => {
        if (err === null || err === undefined) resolve();
        else reject(this.#error ?? closedError('connection lost while writing', err));
      });
    });
  }

  #write(parts: Uint8Array[], done: ((err: Error | null | undefined) => void) | undefined): void {
    const socket = this.#socket;
    if (parts.length > 1) socket.cork();
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i] as Uint8Array;
      this.#bytesSent += part.length;
      if (i === parts.length - 1 && done !== undefined) socket.write(part, done);
      else socket.write(part);
    }
    if (parts.length > 1) socket.uncork();
  }

  #grantInitialWindow(streamId: number): void {
    const extra = this.#streamWindowBytes - INITIAL_WINDOW_BYTES;
    if (extra > 0) this.sendFrame({ type: FrameType.WINDOW_UPDATE, streamId, increment: extra });
  }

  #sendPing(): void {
    if (this.#pingOutstanding !== undefined || this.#state !== 'open') return;
    this.#pingNonce++;
    const payload = new Uint8Array(PING_PAYLOAD_BYTES);
    new DataView(payload.buffer).setBigUint64(0, this.#pingNonce);
    const now = performance.now();
    this.#pingOutstanding = { nonce: this.#pingNonce, sentAtMs: now };
    this.#lastPingAtMs = now;
    this.sendFrame({ type: FrameType.PING, payload });
  }

  // ---- receiving ----------------------------------------------------------------------------

  #onData(chunk: Buffer): void {
    this.#bytesReceived += chunk.length;
    this.#lastReceiveAtMs = performance.now();
    if (this.#state === 'closed') return;
    this.#decoder.push(chunk);
    try {
      for (;;) {
        const result = this.#decoder.next();
        if (result.kind === 'need-more') return;
        if (this.#state !== 'open') continue; // closing: drain and drop
        if (result.kind === 'data') this.#onDataPiece(result.streamId, result.bytes);
        else this.#onFrame(result.frame);
      }
    } catch (err) {
      if (!isClawpeerError(err)) throw err; // a bug, not the peer's fault
      this.#fail(err, violationGoAwayCodes.get(err) ?? GoAwayCode.PROTOCOL_ERROR);
    }
  }

  /** The stream a frame names, undefined for one that already ended (late frames are normal). */
  #streamFor(streamId: number, what: string): MuxStream | undefined {
    const stream = this.#streams.get(streamId);
    if (stream !== undefined) return stream;
    const local = (streamId % 2 === 1) === this.#initiator;
    const seen = local ? streamId < this.#nextLocalId : streamId <= this.#lastPeerId;
    if (!seen)
      throw new ClawpeerError('PROTOCOL', `mux: ${what} on stream ${streamId}, which was never opened`, {
        wire: 'PROTOCOL',
      });
    return undefined;
  }

  #onDataPiece(streamId: number, bytes: Uint8Array): void {
    this.#streamFor(streamId, 'DATA')?.onData(bytes);
  }

  #onFrame(frame: Exclude<MuxFrame, { type: typeof FrameType.DATA }>): void {
    switch (frame.type) {
      case FrameType.OPEN:
        this.#onOpen(frame.streamId);
        return;
      case FrameType.FIN:
        this.#streamFor(frame.streamId, 'FIN')?.onFin();
        return;
      case FrameType.RESET:
        this.#streamFor(frame.streamId, 'RESET')?.onReset(frame.code);
        return;
      case FrameType.WINDOW_UPDATE:
        this.#streamFor(frame.streamId, 'WINDOW_UPDATE')?.onCredit(frame.increment);
        return;
      case FrameType.PING:
        this.sendFrame({ type: FrameType.PONG, payload: frame.payload });
        if (this.#srttMs === undefined) this.#sendPing(); // our first sample, on a path now known to be up
        return;
      case FrameType.PONG:
        this.#onPong(frame.payload);
        return;
      case FrameType.GOAWAY:
        this.#remoteGoAway = { code: frame.code, reason: frame.reason };
        // No new streams from either side; the peer ends the socket next.
        for (const w of this.#acceptWaiters) w.resolve(null);
        this.#acceptWaiters.clear();
        return;
      default: {
        const unknown: never = frame;
        throw new TypeError(`unhandled frame ${String(unknown)}`);
      }
    }
  }

  #onOpen(streamId: number): void {
    if ((streamId % 2 === 1) === this.#initiator) {
      throw new ClawpeerError('PROTOCOL', `mux: peer opened stream ${streamId}, an id of our parity`, {
        wire: 'PROTOCOL',
      });
    }
    if (streamId <= this.#lastPeerId) {
      throw new ClawpeerError(
        'PROTOCOL',
        `mux: peer reopened stream ${streamId} (ids must increase; last was ${this.#lastPeerId})`,
        { wire: 'PROTOCOL' },
      );
    }
    this.#lastPeerId = streamId;
    if (this.#peerCount >= this.#maxStreams || this.#remoteGoAway !== undefined) {
      this.sendFrame({ type: FrameType.RESET, streamId, code: ResetCode.REFUSED });
      return;
    }
    const stream = new MuxStream(this, streamId, this.#streamWindowBytes);
    this.#streams.set(streamId, stream);
    this.#peerCount++;
    this.#grantInitialWindow(streamId);
    const [waiter] = this.#acceptWaiters;
    if (waiter !== undefined) {
      this.#acceptWaiters.delete(waiter);
      waiter.resolve(stream);
    } else {
      this.#acceptQueue.push(stream); // bounded: it holds only counted peer streams (<= maxStreams)
    }
  }

  #onPong(payload: Uint8Array): void {
    const outstanding = this.#pingOutstanding;
    if (outstanding === undefined) return;
    const nonce = new DataView(payload.buffer, payload.byteOffset, payload.length).getBigUint64(0);
    if (nonce !== outstanding.nonce) return; // a stale or unsolicited PONG: ignore
    this.#pingOutstanding = undefined;
    const sampleMs = Math.max(0, performance.now() - outstanding.sentAtMs);
    // RFC 6298 smoothing (alpha = 1/8).
    this.#srttMs = this.#srttMs === undefined ? sampleMs : this.#srttMs + (sampleMs - this.#srttMs) / 8;
  }

  #onEnd(): void {
    // The peer ended its side (after a GOAWAY when it closed gracefully).
    const reason = this.#remoteGoAway?.reason;
    this.#terminate(
      this.#closeInfo ?? (reason === undefined || reason === '' ? { local: false } : { local: false, reason }),
      closedError(`connection closed by the peer${reason === undefined || reason === '' ? '' : `: ${reason}`}`),
    );
  }

  #onSocketError(err: Error): void {
    const code = (err as NodeJS.ErrnoException).code;
    const reason = `connection lost: ${code ?? err.message}`;
    this.#terminate(this.#closeInfo ?? { local: false, reason }, closedError(reason, err));
  }

  #onSocketClose(): void {
    this.#socketClosed = true;
    this.#terminate(this.#closeInfo ?? { local: false, reason: 'connection lost' }, closedError('connection lost'));
  }

  // ---- failure and teardown -----------------------------------------------------------------

  /** A peer violation or timeout: tell the peer why (best effort), then drop the connection. */
  #fail(err: ClawpeerError, goAwayCode: number): void {
    if (this.#state === 'closed') return;
    this.sendFrame({ type: FrameType.GOAWAY, code: goAwayCode, reason: err.message });
    this.#terminate({ local: false, reason: err.message }, err);
  }

  #terminate(info: CloseInfo, err: ClawpeerError): void {
    if (this.#state === 'closed') return;
    this.#state = 'closed';
    this.#error ??= err;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#failStreams(this.#error);
    // The socket closes by itself after end (allowHalfOpen false); settle `closed` when it has.
    void this.#waitSocketClose.then(() => this.#resolveClosed(info));
    if (!this.#socketClosed && !this.#socket.writableEnded) this.#socket.end();
    if (!this.#socketClosed) {
      const linger = setTimeout(() => this.#socket.destroy(), CLOSE_LINGER_MS);
      linger.unref();
    }
  }

  #failStreams(err: ClawpeerError): void {
    this.#error ??= err;
    for (const stream of this.#streams.values()) stream.onConnectionClosed(err);
    this.#streams.clear();
    for (const s of this.#acceptQueue) s.onConnectionClosed(err);
    this.#acceptQueue.length = 0;
    for (const w of this.#acceptWaiters) w.resolve(null);
    this.#acceptWaiters.clear();
    for (const w of this.#openWaiters) w.reject(err);
    this.#openWaiters.clear();
  }

  #throwIfNotOpen(what: string): void {
    if (this.#state !== 'open') throw this.#error ?? closedError(`${what}: connection is closed`);
    if (this.#remoteGoAway !== undefined)
      throw closedError(
        `${what}: the peer is closing the connection${this.#remoteGoAway.reason === '' ? '' : `: ${this.#remoteGoAway.reason}`}`,
      );
  }

  // ---- timers -------------------------------------------------------------------------------

  #armTimer(): void {
    const keepAlive = this.#keepAliveMs > 0 ? this.#keepAliveMs : Number.POSITIVE_INFINITY;
    const tickMs = Math.max(MIN_TICK_MS, Math.min(keepAlive, this.#idleTimeoutMs / 4));
    this.#timer = setTimeout(() => this.#onTick(), tickMs);
    this.#timer.unref(); // the socket keeps the process alive while the connection is open
  }

  #onTick(): void {
    if (this.#state !== 'open') return;
    const now = performance.now();
    const idleMs = now - this.#lastReceiveAtMs;
    if (idleMs >= this.#idleTimeoutMs) {
      this.#fail(
        new ClawpeerError(
          'TIMEOUT',
          `no data from the peer for ${Math.round(idleMs)} ms (idle timeout ${this.#idleTimeoutMs} ms)`,
        ),
        GoAwayCode.IDLE_TIMEOUT,
      );
      return;
    }
    if (this.#keepAliveMs > 0 && now - this.#lastPingAtMs >= this.#keepAliveMs) this.#sendPing();
    this.#armTimer();
  }

  // ---- called by MuxStream ------------------------------------------------------------------

  /** Forgets a stream whose both directions ended (or that was reset). */
  streamEnded(stream: MuxStream): void {
    if (this.#streams.get(stream.id) !== stream) return;
    this.#streams.delete(stream.id);
    if ((stream.id % 2 === 1) === this.#initiator) {
      this.#localCount--;
      const [waiter] = this.#openWaiters;
      if (waiter !== undefined) {
        this.#openWaiters.delete(waiter);
        waiter.resolve();
      }
    } else {
      this.#peerCount--;
      const i = this.#acceptQueue.indexOf(stream);
      if (i >= 0) this.#acceptQueue.splice(i, 1);
    }
  }
}
