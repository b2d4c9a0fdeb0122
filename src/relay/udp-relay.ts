// The UDP impairment relay: node:dgram sockets around the sans-I/O Impairment core.
//
// Goals: forward UDP between clients and one target through a simulated WAN link (the core
// decides drops and release times), with each client address (ip:port) given its own upstream
// socket so the target sees distinct flows and replies find their way back to the right client;
// release packets on time without busy-waiting (2 cores here: a spinning relay steals the CPU
// the endpoints under test need); bounded memory (flows capped and expired, the core's queues
// bounded); loopback only unless the caller explicitly allows remote addresses.
// Non-goals: the shaping model (impairment.ts); TCP (tcp-relay.ts); NAT-style port reuse.
//
// Driver rules (quinn's): after every receive, send what is due; after every send, re-arm the
// one timer for the core's next deadline. setTimeout has whole-ms granularity plus a small,
// steady lateness L (tracked online: a running median of the timers' measured lateness), so a
// packet due between two possible wake-ups is released at one of them, chosen at random so that
// its expected release is its due time (release-timing.ts: rounding to the nearer wake-up was
// biased for request-response traffic, whose due times all fall at one phase of the ms grid).
// A packet arriving to an empty relay is drawn for at once as well (the "now" of its arrival is
// a possible release too), so delays under one timer tick are simulated; a measured mean release
// error left over is cancelled by a small integral correction (ReleaseBias). Per-packet error is within about +-1 ms at mean zero, so medians and rates hold. Busy-waiting
// would be sharper but costs a core, which on 2 cores starves the endpoints under test
// (PLATFORM.md "Simulating a WAN here"). stats().timing records the achieved release error.
import dgram from 'node:dgram';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { performance } from 'node:perf_hooks';
import { ClawpeerError } from '../errors.js';
import type { Logger } from '../logger.js';
import { silentLogger } from '../logger.js';
import type { HostPort } from '../transport/types.js';
import type { ImpairSpec } from './impair-spec.js';
import { formatImpairSpec, parseImpairSpec } from './impair-spec.js';
import type { DuePacket, ImpairmentCounters } from './impairment.js';
import { Impairment } from './impairment.js';
import { dueHorizon, ReleaseBias, wakeDelayMs } from './release-timing.js';

/** Starting estimate of setTimeout's lateness beyond the whole ms asked for, ms (measured median here). */
export const INITIAL_TIMER_LATENESS_MS = 0.12;
/** Step of the running-median estimate of the lateness per wake-up, ms. */
const LATENESS_STEP_MS = 0.005;
/** Bounds of the lateness estimate, ms: a loaded loop must not teach the relay to fire 5 ms early. */
const MAX_TIMER_LATENESS_MS = 0.9;
/** Socket buffers asked for, bytes (the OS clamps to net.core.rmem_max / wmem_max: 4 MiB here). */
export const DEFAULT_SOCKET_BUFFER_BYTES = 4 << 20;
/** Most client flows at once (each holds one upstream socket); more are dropped and counted. */
export const DEFAULT_MAX_FLOWS = 1024;
/** A flow with no packet either way for this long is closed (its upstream socket freed), ms. */
export const DEFAULT_FLOW_IDLE_TIMEOUT_MS = 120_000;

export interface UdpRelayOptions {
  /** Where clients send; port 0 picks a free port (see UdpRelay.address). */
  readonly listen: HostPort;
  /** The server packets are forwarded to. */
  readonly target: HostPort;
  /** The impairment, parsed or as spec text (impair-spec.ts). */
  readonly spec: ImpairSpec | string;
  /** PRNG seed of the core: same seed, same drop and jitter sequence. Default 1. */
  readonly seed?: number;
  /** Allow non-loopback listen/target addresses (the CLI sets this for real use only). */
  readonly allowRemote?: boolean;
  readonly socketBufferBytes?: number;
  readonly maxFlows?: number;
  readonly flowIdleTimeoutMs?: number;
  /** Bytes the rate limiter adds per packet (28 = IPv4 + UDP headers). Default 0. */
  readonly perPacketOverheadBytes?: number;
  readonly logger?: Logger;
  /** Aborting closes the relay. */
  readonly signal?: AbortSignal;
}

export interface UdpRelayStats {
  /** The spec in canonical form. */
  readonly spec: string;
  readonly listen: HostPort;
  readonly target: HostPort;
  /** Open flows now; flows opened since start; packets from new clients dropped at maxFlows. */
  readonly flows: number;
  readonly flowsOpened: number;
  readonly flowsRejected: number;
  /** Packets on an upstream socket from anyone but the target (ignored). */
  readonly strayPackets: number;
  /** Packets whose flow closed while they were in flight (not sent). */
  readonly orphanedPackets: number;
  readonly sendErrors: number;
  /** The core's counters per direction. */
  readonly counters: ImpairmentCounters;
  readonly timing: {
    /** Current estimate of timer lateness beyond the whole ms asked for. */
    readonly timerLatenessMs: number;
    /** How far the release horizon is shifted to cancel the measured mean release error (ReleaseBias). */
    readonly releaseBiasMs: number;
    /** Timer callbacks run. */
    readonly wakeups: number;
    /** Send time minus model release time over all forwarded packets, ms (negative: early). */
    readonly releaseErrorMs: {
      readonly mean: number;
      readonly min: number;
      readonly max: number;
      readonly samples: number;
    };
  };
  /** What the OS granted (Linux reports double the usable size). */
  readonly socketBufferBytes: { readonly recv: number; readonly send: number };
}

export interface UdpRelay {
  /** The bound listen address (the real port when listen.port was 0). */
  readonly address: HostPort;
  stats(): UdpRelayStats;
  /** Closes every socket and drops packets in flight. Idempotent. */
  close(): Promise<void>;
}

interface Flow {
  readonly key: string;
  readonly client: HostPort;
  readonly upstream: dgram.Socket;
  lastActiveMs: number;
  closed: boolean;
}

/** 127.0.0.0/8, ::1, ::ffff:127.x.x.x and "localhost". */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase();
  if (h === 'localhost' || h === '::1' || h === '0:0:0:0:0:0:0:1') return true;
  const v4 = h.startsWith('::ffff:') ? h.slice(7) : h;
  return isIP(v4) === 4 && v4.startsWith('127.');
}

async function resolveHost(host: string, what: string): Promise<{ address: string; family: 4 | 6 }> {
  if (host.toLowerCase() === 'localhost') return { address: '127.0.0.1', family: 4 };
  const kind = isIP(host);
  if (kind === 4 || kind === 6) return { address: host, family: kind };
  try {
    const r = await lookup(host);
    return { address: r.address, family: r.family === 6 ? 6 : 4 };
  } catch (err) {
    throw new ClawpeerError('UNREACHABLE', `relay ${what} ${host}: cannot resolve`, { cause: err });
  }
}

function bindSocket(socket: dgram.Socket, host: string, port: number, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => {
      const code = err.code === 'EADDRINUSE' ? 'ADDRESS_IN_USE' : err.code === 'EADDRNOTAVAIL' ? 'USAGE' : 'IO';
      reject(
        new ClawpeerError(code, `relay cannot bind ${what} ${host}:${port}: ${err.code ?? err.message}`, {
          cause: err,
        }),
      );
    };
    socket.once('error', onError);
    socket.bind({ address: host, port, exclusive: true }, () => {
      socket.off('error', onError);
      resolve();
    });
  });
}

function setBuffers(socket: dgram.Socket, bytes: number): { recv: number; send: number } {
  // The OS clamps silently (Linux) or refuses (some BSDs): both are fine, we report what we got.
  try {
    socket.setRecvBufferSize(bytes);
    socket.setSendBufferSize(bytes);
  } catch {
    // keep the defaults
  }
  return { recv: socket.getRecvBufferSize(), send: socket.getSendBufferSize() };
}

/** Starts a relay: clients send to `address`, the target sees one source port per client. */
export async function startUdpRelay(options: UdpRelayOptions): Promise<UdpRelay> {
  const spec = typeof options.spec === 'string' ? parseImpairSpec(options.spec) : options.spec;
  const allowRemote = options.allowRemote ?? false;
  for (const [what, addr] of [
    ['listen', options.listen],
    ['target', options.target],
  ] as const) {
    if (!allowRemote && !isLoopbackHost(addr.host)) {
      throw new ClawpeerError(
        'USAGE',
        `relay ${what} address ${addr.host} is not loopback; only 127.0.0.1/::1 are allowed unless remote addresses are explicitly allowed`,
      );
    }
    if (!Number.isInteger(addr.port) || addr.port < 0 || addr.port > 65535 || (what === 'target' && addr.port === 0)) {
      throw new ClawpeerError('USAGE', `relay ${what} port ${addr.port} is invalid`);
    }
  }
  const relay = new UdpRelayDriver(
    spec,
    options,
    await resolveHost(options.listen.host, 'listen'),
    await resolveHost(options.target.host, 'target'),
  );
  await relay.start();
  return relay;
}

class UdpRelayDriver implements UdpRelay {
  readonly #core: Impairment<Flow>;
  readonly #spec: ImpairSpec;
  readonly #front: dgram.Socket;
  readonly #flows = new Map<string, Flow>();
  readonly #log: Logger;
  readonly #bufferBytes: number;
  readonly #maxFlows: number;
  readonly #idleMs: number;
  readonly #target: { address: string; family: 4 | 6; port: number };
  readonly #listenHost: string;
  readonly #requestedPort: number;
  readonly #allowRemote: boolean;
  readonly #signal: AbortSignal | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** Clock time the armed timer is expected to fire at; when it was armed and for how many whole ms. */
  #timerAt = Infinity;
  #armedAt = 0;
  #armedMs = 0;
  #latenessMs = INITIAL_TIMER_LATENESS_MS;
  readonly #bias = new ReleaseBias();
  #immediate: NodeJS.Immediate | undefined;
  #sweeper: NodeJS.Timeout | undefined;
  #closed = false;
  #closing: Promise<void> | undefined;
  #address: HostPort = { host: '', port: 0 };
  #buffers = { recv: 0, send: 0 };
  #flowsOpened = 0;
  #flowsRejected = 0;
  #stray = 0;
  #orphaned = 0;
  #sendErrors = 0;
  #wakeups = 0;
  #errSum = 0;
  #errMin = Infinity;
  #errMax = -Infinity;
  #errN = 0;

  constructor(
    spec: ImpairSpec,
    options: UdpRelayOptions,
    listen: { address: string; family: 4 | 6 },
    target: { address: string; family: 4 | 6 },
  ) {
    this.#spec = spec;
    this.#core = new Impairment<Flow>(spec, {
      seed: options.seed ?? 1,
      ...(options.perPacketOverheadBytes === undefined
        ? {}
        : { perPacketOverheadBytes: options.perPacketOverheadBytes }),
    });
    this.#log = (options.logger ?? silentLogger).child('relay');
    this.#bufferBytes = options.socketBufferBytes ?? DEFAULT_SOCKET_BUFFER_BYTES;
    this.#maxFlows = options.maxFlows ?? DEFAULT_MAX_FLOWS;
    this.#idleMs = options.flowIdleTimeoutMs ?? DEFAULT_FLOW_IDLE_TIMEOUT_MS;
    this.#target = { ...target, port: options.target.port };
    this.#listenHost = listen.address;
    this.#requestedPort = options.listen.port;
    this.#allowRemote = options.allowRemote ?? false;
    this.#signal = options.signal;
    this.#front = dgram.createSocket({ type: listen.family === 6 ? 'udp6' : 'udp4' });
  }

  get address(): HostPort {
    return this.#address;
  }

  async start(): Promise<void> {
    if (this.#signal?.aborted === true) throw new ClawpeerError('ABORTED', 'relay start aborted');
    try {
      await bindSocket(this.#front, this.#listenHost, this.#requestedPort, 'listen address');
    } catch (err) {
      this.#front.close();
      throw err;
    }
    const bound = this.#front.address();
    this.#address = { host: bound.address, port: bound.port };
    this.#buffers = setBuffers(this.#front, this.#bufferBytes);
    this.#front.on('message', (msg, rinfo) => this.#onClientPacket(msg, rinfo));
    this.#front.on('error', (err) => this.#onSocketError(err));
    this.#sweeper = setInterval(() => this.#sweepIdleFlows(), Math.max(1000, Math.min(10_000, this.#idleMs / 2)));
    this.#sweeper.unref();
    this.#signal?.addEventListener('abort', () => void this.close(), { once: true });
    this.#log.info('relay listening', {
      listen: `${this.#address.host}:${this.#address.port}`,
      target: `${this.#target.address}:${this.#target.port}`,
      spec: formatImpairSpec(this.#spec),
    });
  }

  #onSocketError(err: Error): void {
    // UDP sockets report asynchronous send failures here; the relay keeps running.
    this.#sendErrors++;
    this.#log.debug('socket error', { error: err.message });
  }

  readonly #onSent = (err: Error | null): void => {
    if (err !== null) this.#onSocketError(err);
  };

  #onClientPacket(msg: Buffer, rinfo: dgram.RemoteInfo): void {
    if (this.#closed) return;
    const now = performance.now();
    const key = `${rinfo.address}:${rinfo.port}`;
    let flow = this.#flows.get(key);
    if (flow === undefined) {
      flow = this.#openFlow(key, { host: rinfo.address, port: rinfo.port }, now);
      if (flow === undefined) return;
    }
    flow.lastActiveMs = now;
    this.#core.onPacket(now, msg, 'toServer', flow);
    this.#flushAndArm(this.#core.pendingPackets === 1);
  }

  #openFlow(key: string, client: HostPort, now: number): Flow | undefined {
    if (this.#flows.size >= this.#maxFlows) {
      if (this.#flowsRejected++ === 0)
        this.#log.warn('too many client flows: dropping packets from new clients', { maxFlows: this.#maxFlows });
      return undefined;
    }
    const family = this.#target.family;
    const upstream = dgram.createSocket({ type: family === 6 ? 'udp6' : 'udp4' });
    const flow: Flow = { key, client, upstream, lastActiveMs: now, closed: false };
    // Bound before the first send (dgram queues sends while binding); loopback unless remote targets are allowed.
    const host = this.#allowRemote ? (family === 6 ? '::' : '0.0.0.0') : family === 6 ? '::1' : '127.0.0.1';
    upstream.on('error', (err) => this.#onSocketError(err));
    upstream.bind({ address: host, port: 0 }, () => {
      if (!flow.closed) setBuffers(upstream, this.#bufferBytes);
    });
    upstream.on('message', (msg, rinfo) => {
      if (this.#closed || flow.closed) return;
      if (rinfo.port !== this.#target.port) {
        this.#stray++;
        return;
      }
      const t = performance.now();
      flow.lastActiveMs = t;
      this.#core.onPacket(t, msg, 'toClient', flow);
      this.#flushAndArm(this.#core.pendingPackets === 1);
    });
    this.#flows.set(key, flow);
    this.#flowsOpened++;
    this.#log.debug('flow opened', { client: key });
    return flow;
  }

  #closeFlow(flow: Flow): void {
    flow.closed = true;
    this.#flows.delete(flow.key);
    try {
      flow.upstream.close();
    } catch {
      // already closed
    }
  }

  #sweepIdleFlows(): void {
    const cutoff = performance.now() - this.#idleMs;
    for (const flow of this.#flows.values()) {
      if (flow.lastActiveMs < cutoff) {
        this.#log.debug('flow idle: closed', { client: flow.key });
        this.#closeFlow(flow);
      }
    }
  }

  /**
   * Sends what is due, then arms the one timer. With `dither` (at a timer wake-up, and when a
   * packet arrives to an otherwise empty relay) it also sends what the dithered horizon takes
   * (release-timing.ts). The lone arrival matters for delays under one timer tick (a 1 ms RTT
   * is 0.5 ms each way): without a draw at arrival the first chance to send was the next
   * wake-up, 1 + L ms later, and rtt=1ms measured 2.1-2.6 ms. Only a lone packet is drawn for at
   * arrival: a packet queued behind others would get a draw at every arrival, early on average.
   */
  #flushAndArm(dither: boolean): void {
    if (this.#closed) return;
    const now = performance.now();
    const due = this.#core.pollTransmit(
      dither ? dueHorizon(now, this.#latenessMs, Math.random, this.#bias.biasMs) : now,
    );
    for (const p of due) {
      this.#send(p, now);
      if (dither) this.#bias.observe(now - p.releaseAt);
    }
    this.#arm(now);
  }

  #send(p: DuePacket<Flow>, now: number): void {
    const flow = p.tag;
    if (flow.closed) {
      this.#orphaned++;
      return;
    }
    const err = now - p.releaseAt;
    this.#errSum += err;
    this.#errN++;
    if (err < this.#errMin) this.#errMin = err;
    if (err > this.#errMax) this.#errMax = err;
    if (p.direction === 'toServer') flow.upstream.send(p.bytes, this.#target.port, this.#target.address, this.#onSent);
    else this.#front.send(p.bytes, flow.client.port, flow.client.host, this.#onSent);
  }

  #arm(now: number): void {
    const next = this.#core.pollTimeout();
    if (next === undefined) {
      this.#clearTimer();
      return;
    }
    // The last possible wake-up before the deadline (release-timing.ts).
    const wholeMs = wakeDelayMs(next, now, this.#latenessMs);
    const fireAt = now + wholeMs + this.#latenessMs;
    // An armed timer that fires no later than needed stays: an early wake-up just polls and
    // re-arms, which is cheaper than clearTimeout + setTimeout on every packet at 10k packets/s.
    // (One up to 0.5 ms later used to stay too; with dithering that made releases late.)
    if ((this.#timer !== undefined || this.#immediate !== undefined) && this.#timerAt <= fireAt) return;
    this.#clearTimer();
    this.#timerAt = fireAt;
    if (next <= now) {
      // Due already (sends took long): the next loop turn, after pending I/O; never a spin.
      this.#immediate = setImmediate(this.#onTimer);
      return;
    }
    this.#armedAt = now;
    this.#armedMs = wholeMs;
    this.#timer = setTimeout(this.#onTimer, wholeMs);
  }

  #clearTimer(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    if (this.#immediate !== undefined) clearImmediate(this.#immediate);
    this.#timer = undefined;
    this.#immediate = undefined;
    this.#timerAt = Infinity;
  }

  readonly #onTimer = (): void => {
    if (this.#timer !== undefined) {
      // Running median of lateness: step towards each sample by a fixed amount.
      const late = performance.now() - this.#armedAt - this.#armedMs;
      this.#latenessMs += late > this.#latenessMs ? LATENESS_STEP_MS : -LATENESS_STEP_MS;
      this.#latenessMs = Math.min(MAX_TIMER_LATENESS_MS, Math.max(0, this.#latenessMs));
    }
    this.#timer = undefined;
    this.#immediate = undefined;
    this.#timerAt = Infinity;
    this.#wakeups++;
    this.#flushAndArm(true);
  };

  stats(): UdpRelayStats {
    return {
      spec: formatImpairSpec(this.#spec),
      listen: this.#address,
      target: { host: this.#target.address, port: this.#target.port },
      flows: this.#flows.size,
      flowsOpened: this.#flowsOpened,
      flowsRejected: this.#flowsRejected,
      strayPackets: this.#stray,
      orphanedPackets: this.#orphaned,
      sendErrors: this.#sendErrors,
      counters: this.#core.counters(),
      timing: {
        timerLatenessMs: Math.round(this.#latenessMs * 1000) / 1000,
        releaseBiasMs: Math.round(this.#bias.biasMs * 1000) / 1000,
        wakeups: this.#wakeups,
        releaseErrorMs: {
          mean: this.#errN === 0 ? 0 : this.#errSum / this.#errN,
          min: this.#errN === 0 ? 0 : this.#errMin,
          max: this.#errN === 0 ? 0 : this.#errMax,
          samples: this.#errN,
        },
      },
      socketBufferBytes: this.#buffers,
    };
  }

  close(): Promise<void> {
    if (this.#closing !== undefined) return this.#closing;
    this.#closed = true;
    this.#clearTimer();
    if (this.#sweeper !== undefined) clearInterval(this.#sweeper);
    this.#core.clear();
    for (const flow of [...this.#flows.values()]) this.#closeFlow(flow);
    this.#closing = new Promise<void>((resolve) => {
      try {
        this.#front.close(() => resolve());
      } catch {
        resolve(); // never bound
      }
    });
    this.#log.info('relay closed', { stats: this.stats().counters });
    return this.#closing;
  }
}
