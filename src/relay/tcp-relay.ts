// A TCP-level delay and rate relay, for comparing clawpeer's TLS-over-TCP fallback with QUIC
// through an equivalent link (issue 5, goal 4).
//
// Goals: each accepted connection is forwarded to the target over a new TCP connection; the
// bytes of each direction go through the same Impairment core as the UDP relay (one shared
// link per direction: rate with a bounded queue, then rtt/2 + jitter), cut into pieces of at
// most PIECE_BYTES so the rate applies smoothly. Nothing is ever dropped: where the UDP relay
// tail-drops, this relay stops reading (TCP flow control pushes back to the sender), so the
// queue limit bounds memory and adds the same queueing delay.
// Non-goals, stated in every result that uses it: packet LOSS, reordering and duplication
// cannot be modelled here. The relay terminates TCP on both sides, so each side's kernel
// retransmits and acknowledges locally over loopback; a dropped byte range would simply
// corrupt the stream. Such specs are refused with a USAGE error. (For loss with TCP, use
// netem or nftables on a real kernel; see PLATFORM.md.) Also: the relay's own loopback TCP
// connections have their own congestion control, so the end-to-end sender sees the relay's
// buffering, not a real path's ACK clock; treat results as "delay + rate", nothing more.
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { ClawpeerError } from '../errors.js';
import type { Logger } from '../logger.js';
import { silentLogger } from '../logger.js';
import type { HostPort } from '../transport/types.js';
import type { ImpairSpec } from './impair-spec.js';
import { formatImpairSpec, MAX_QUEUE_BYTES, parseImpairSpec, resolveQueueLimit } from './impair-spec.js';
import type { Direction, ImpairmentCounters } from './impairment.js';
import { Impairment } from './impairment.js';
import { dueHorizon, ReleaseBias, wakeDelayMs } from './release-timing.js';
import { INITIAL_TIMER_LATENESS_MS, isLoopbackHost } from './udp-relay.js';

/** Largest piece the byte stream is cut into, bytes: 4 KiB is 0.33 ms at 100 Mbit/s. */
export const PIECE_BYTES = 4096;
/** Most bytes a direction may hold (queue + delay line) before the relay stops reading: 32 MiB. */
export const DEFAULT_MAX_BUFFERED_BYTES = 32 << 20;
export const DEFAULT_MAX_CONNECTIONS = 256;
/** Queue limit given in packets counts as this many bytes each (an Ethernet MTU). */
const PACKET_BYTES_EQUIVALENT = 1500;

export interface TcpRelayOptions {
  readonly listen: HostPort;
  readonly target: HostPort;
  /** Delay, jitter and rate only: loss, reorder and dup are refused. */
  readonly spec: ImpairSpec | string;
  readonly seed?: number;
  readonly allowRemote?: boolean;
  readonly maxConnections?: number;
  /** Per direction, across connections: without a rate this caps throughput at maxBufferedBytes / (rtt / 2). */
  readonly maxBufferedBytes?: number;
  readonly logger?: Logger;
  readonly signal?: AbortSignal;
}

export interface TcpRelayStats {
  readonly spec: string;
  readonly connections: number;
  readonly connectionsAccepted: number;
  readonly connectionsRejected: number;
  readonly connectFailures: number;
  /** Times a source was paused because the link's queue or buffers were full. */
  readonly pauses: number;
  readonly counters: ImpairmentCounters;
  /** Always present in results: what this relay cannot do. */
  readonly limitation: string;
}

export interface TcpRelay {
  readonly address: HostPort;
  stats(): TcpRelayStats;
  close(): Promise<void>;
}

export const TCP_RELAY_LIMITATION =
  'TCP-level relay: models delay, jitter and rate only; it cannot model packet loss, reordering or duplication (TCP is terminated and retransmitted locally on both sides)';

interface Side {
  readonly socket: net.Socket;
  /** Pieces read from this socket not yet written to the other side. */
  pending: number;
  ended: boolean;
  paused: boolean;
  closed: boolean;
}

interface Conn {
  readonly id: number;
  readonly client: Side;
  readonly server: Side;
  closed: boolean;
}

interface Tag {
  readonly conn: Conn;
}

function refuseLossy(spec: ImpairSpec): void {
  const bad = [
    spec.lossPct > 0 ? `loss=${spec.lossPct}%` : '',
    spec.reorderPct > 0 ? `reorder=${spec.reorderPct}%` : '',
    spec.duplicatePct > 0 ? `dup=${spec.duplicatePct}%` : '',
  ].filter((s) => s !== '');
  if (bad.length > 0) {
    throw new ClawpeerError(
      'USAGE',
      `the TCP relay cannot model packet loss, reordering or duplication (${bad.join(', ')}): TCP is terminated on both sides of the relay, so dropping bytes would corrupt the stream instead of causing retransmissions; use the UDP relay, or delay/jitter/rate only`,
    );
  }
}

export async function startTcpRelay(options: TcpRelayOptions): Promise<TcpRelay> {
  const spec = typeof options.spec === 'string' ? parseImpairSpec(options.spec) : options.spec;
  refuseLossy(spec);
  for (const [what, addr] of [
    ['listen', options.listen],
    ['target', options.target],
  ] as const) {
    if (options.allowRemote !== true && !isLoopbackHost(addr.host)) {
      throw new ClawpeerError(
        'USAGE',
        `relay ${what} address ${addr.host} is not loopback; only 127.0.0.1/::1 are allowed unless remote addresses are explicitly allowed`,
      );
    }
  }
  const relay = new TcpRelayDriver(spec, options);
  await relay.listen();
  return relay;
}

class TcpRelayDriver implements TcpRelay {
  readonly #spec: ImpairSpec;
  readonly #options: TcpRelayOptions;
  readonly #core: Impairment<Tag>;
  readonly #server: net.Server;
  readonly #conns = new Set<Conn>();
  readonly #log: Logger;
  readonly #queueLimitBytes: number;
  readonly #maxBuffered: number;
  readonly #maxConnections: number;
  #address: HostPort = { host: '', port: 0 };
  #timer: NodeJS.Timeout | undefined;
  #timerAt = Infinity;
  readonly #bias = new ReleaseBias();
  #nextId = 1;
  #accepted = 0;
  #rejected = 0;
  #connectFailures = 0;
  #pauses = 0;
  #closing: Promise<void> | undefined;

  constructor(spec: ImpairSpec, options: TcpRelayOptions) {
    this.#spec = spec;
    this.#options = options;
    const q = resolveQueueLimit(spec);
    this.#queueLimitBytes = q === undefined ? Infinity : 'bytes' in q ? q.bytes : q.packets * PACKET_BYTES_EQUIVALENT;
    this.#maxBuffered = options.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
    this.#maxConnections = options.maxConnections ?? DEFAULT_MAX_CONNECTIONS;
    // The core never drops here: its queue is set beyond anything the driver lets in (the
    // driver pauses reading at the real limit) and its delay line is unbounded for the same reason.
    const coreSpec: ImpairSpec =
      spec.rateBitsPerSec === undefined ? spec : { ...spec, queue: { unit: 'bytes', bytes: MAX_QUEUE_BYTES } };
    this.#core = new Impairment<Tag>(coreSpec, { seed: options.seed ?? 1, maxDelayLineBytes: Infinity });
    this.#log = (options.logger ?? silentLogger).child('tcp-relay');
    this.#server = net.createServer({ allowHalfOpen: true }, (socket) => this.#onAccept(socket));
  }

  get address(): HostPort {
    return this.#address;
  }

  listen(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.#server.once('error', (err: NodeJS.ErrnoException) => {
        const code = err.code === 'EADDRINUSE' ? 'ADDRESS_IN_USE' : 'IO';
        reject(
          new ClawpeerError(
            code,
            `tcp relay cannot listen on ${this.#options.listen.host}:${this.#options.listen.port}: ${err.code ?? err.message}`,
            { cause: err },
          ),
        );
      });
      this.#server.listen({ host: this.#options.listen.host, port: this.#options.listen.port, exclusive: true }, () => {
        const a = this.#server.address();
        if (a !== null && typeof a === 'object') this.#address = { host: a.address, port: a.port };
        this.#options.signal?.addEventListener('abort', () => void this.close(), { once: true });
        resolve();
      });
    });
  }

  #onAccept(clientSocket: net.Socket): void {
    if (this.#closing !== undefined || this.#conns.size >= this.#maxConnections) {
      this.#rejected++;
      clientSocket.destroy();
      return;
    }
    this.#accepted++;
    clientSocket.setNoDelay(true);
    const serverSocket = net.connect({
      host: this.#options.target.host,
      port: this.#options.target.port,
      allowHalfOpen: true,
    });
    serverSocket.setNoDelay(true);
    const conn: Conn = {
      id: this.#nextId++,
      client: { socket: clientSocket, pending: 0, ended: false, paused: false, closed: false },
      server: { socket: serverSocket, pending: 0, ended: false, paused: false, closed: false },
      closed: false,
    };
    this.#conns.add(conn);
    serverSocket.once('connect', () => this.#log.debug('connection forwarded', { id: conn.id }));
    this.#wire(conn, conn.client, 'toServer');
    this.#wire(conn, conn.server, 'toClient');
  }

  #wire(conn: Conn, from: Side, direction: Direction): void {
    const to = direction === 'toServer' ? conn.server : conn.client;
    from.socket.on('data', (chunk: Buffer) => {
      const now = performance.now();
      for (let at = 0; at < chunk.length; at += PIECE_BYTES) {
        this.#core.onPacket(now, chunk.subarray(at, Math.min(chunk.length, at + PIECE_BYTES)), direction, { conn });
        from.pending++;
      }
      if (this.#congested(direction, now) || to.socket.writableLength > this.#maxBuffered) this.#pause(from);
      this.#flushAndArm();
    });
    from.socket.on('end', () => {
      from.ended = true;
      if (from.pending === 0) to.socket.end();
    });
    to.socket.on('drain', () => this.#resumeIfRoom(performance.now()));
    from.socket.on('error', (err: NodeJS.ErrnoException) => {
      if (direction === 'toClient' && err.code === 'ECONNREFUSED') this.#connectFailures++;
      this.#log.debug('socket error', { id: conn.id, error: err.message });
    });
    // A socket closes once both its halves are done; data it sent may still be in the delay line,
    // so only an abrupt close (error, reset) tears the other side down at once.
    from.socket.on('close', (hadError: boolean) => {
      from.closed = true;
      if (hadError || (conn.client.closed && conn.server.closed)) this.#closeConn(conn);
    });
  }

  #congested(direction: Direction, now: number): boolean {
    return (
      this.#core.queuedBytes(direction, now) > this.#queueLimitBytes ||
      this.#core.inFlightBytes(direction) > this.#maxBuffered
    );
  }

  #pause(side: Side): void {
    if (side.paused) return;
    side.paused = true;
    side.socket.pause();
    this.#pauses++;
  }

  #resumeIfRoom(now: number): void {
    for (const conn of this.#conns) {
      for (const [side, direction, to] of [
        [conn.client, 'toServer', conn.server],
        [conn.server, 'toClient', conn.client],
      ] as const) {
        if (side.paused && !this.#congested(direction, now) && to.socket.writableLength <= this.#maxBuffered) {
          side.paused = false;
          side.socket.resume();
        }
      }
    }
  }

  #closeConn(conn: Conn): void {
    if (conn.closed) return;
    conn.closed = true;
    this.#conns.delete(conn);
    conn.client.socket.destroy();
    conn.server.socket.destroy();
  }

  #flushAndArm(atWakeUp = false): void {
    if (this.#closing !== undefined) return;
    const now = performance.now();
    // Same release rule as the UDP relay (release-timing.ts): what is due, and at a timer
    // wake-up what the dithered horizon takes.
    for (const p of this.#core.pollTransmit(
      atWakeUp ? dueHorizon(now, INITIAL_TIMER_LATENESS_MS, Math.random, this.#bias.biasMs) : now,
    )) {
      if (atWakeUp) this.#bias.observe(now - p.releaseAt);
      const conn = p.tag.conn;
      if (conn.closed) continue;
      const [from, to] = p.direction === 'toServer' ? [conn.client, conn.server] : [conn.server, conn.client];
      from.pending--;
      to.socket.write(p.bytes);
      if (from.ended && from.pending === 0) to.socket.end();
    }
    this.#resumeIfRoom(now);
    const next = this.#core.pollTimeout();
    if (next === undefined) return;
    const wholeMs = wakeDelayMs(next, now, INITIAL_TIMER_LATENESS_MS);
    const fireAt = now + wholeMs;
    if (this.#timer !== undefined && this.#timerAt <= fireAt) return;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timerAt = fireAt;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#timerAt = Infinity;
      this.#flushAndArm(true);
    }, wholeMs);
  }

  stats(): TcpRelayStats {
    return {
      spec: formatImpairSpec(this.#spec),
      connections: this.#conns.size,
      connectionsAccepted: this.#accepted,
      connectionsRejected: this.#rejected,
      connectFailures: this.#connectFailures,
      pauses: this.#pauses,
      counters: this.#core.counters(),
      limitation: TCP_RELAY_LIMITATION,
    };
  }

  close(): Promise<void> {
    this.#closing ??= new Promise<void>((resolve) => {
      if (this.#timer !== undefined) clearTimeout(this.#timer);
      this.#timer = undefined;
      this.#core.clear();
      for (const conn of [...this.#conns]) this.#closeConn(conn);
      this.#server.close(() => resolve());
    });
    return this.#closing;
  }
}
