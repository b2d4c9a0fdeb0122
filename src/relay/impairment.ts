// The WAN impairment core: decides for each packet whether it is dropped and when it leaves.
//
// Goals: a faithful, reproducible model of one bottleneck link in each direction, with the
// stages in the order a real path applies them: random loss, then the rate limiter (a FIFO
// with a bounded queue, tail drop, serialisation at the link rate), then propagation delay
// (rtt/2 each way) plus jitter, then optional duplication. Sans-I/O in the quinn-proto style:
// no sockets, no timers, no clock; `now` (ms, any monotonic origin, fractional) comes in as an
// argument, the driver asks `pollTimeout()` when to wake and `pollTransmit(now)` what is due.
// Seeded PRNGs (one stream per direction and per stage) make every run reproducible, and keep
// one stage's randomness independent of whether another stage is enabled.
// Non-goals: sockets and timer lateness (udp-relay.ts releases early to cancel the latter),
// per-flow fairness (all flows of a direction share one link, as on a real bottleneck),
// modelling headers (the rate applies to payload bytes plus `perPacketOverheadBytes`).
//
// Model details, per direction (client->server and server->client are independent pipes):
// - loss: each packet is dropped with probability lossPct/100 (Bernoulli, no bursts).
// - rate: the link serialises one packet at a time; a packet arriving at `now` starts at
//   max(now, when the previous one finished) and takes (bytes + overhead) * 8 / rate. The queue
//   holds every accepted packet that has not finished serialising (the one on the wire
//   included); a packet that would push it over the limit is dropped (tail drop) and counted in
//   droppedQueue, apart from random loss. An empty queue always takes a packet, so a limit
//   smaller than one packet slows the link rather than cutting it.
// - delay: release = departure + rtt/2 + jitter, jitter uniform in [-j, +j] or normal with
//   standard deviation j clipped at +-3j; the delay never goes below 0. Jitter never reorders:
//   release = max(computed, previous release), so the mean delay rises slightly above rtt/2
//   under jitter (by well under j at packet spacings below j), as on a real FIFO path.
// - reorder (netem semantics): a fraction reorderPct/100 of packets skip the delay and leave at
//   their departure time, overtaking the packets still in flight. `reordered` counts the ones
//   that did overtake something.
// - duplicate: a fraction duplicatePct/100 of packets are delivered twice, back to back, after
//   the bottleneck (the copy costs no link time). `forwarded` counts copies too.
// Both delay lanes (the ordered one and the reorder one) have non-decreasing release times, so
// each is a FIFO and nothing here needs a heap. Memory is bounded: the rate queue by its limit,
// the delay line by `maxDelayLineBytes` (beyond it packets are dropped as droppedOverflow; with
// a rate limit the delay line holds at most rate * delay and this never triggers).
import type { ImpairSpec } from './impair-spec.js';
import { resolveQueueLimit } from './impair-spec.js';

export type Direction = 'toServer' | 'toClient';
export const DIRECTIONS: readonly Direction[] = ['toServer', 'toClient'];

/** Default bound on bytes waiting in the delay line of one direction: 64 MiB. */
export const DEFAULT_MAX_DELAY_LINE_BYTES = 64 << 20;
/** Normal jitter is clipped at this many standard deviations, so the delay has hard bounds. */
export const NORMAL_JITTER_CLIP_SIGMAS = 3;

export interface ImpairmentOptions {
  /** PRNG seed (any 32-bit integer); the same seed and input give the same drops and delays. */
  readonly seed?: number;
  /** Bytes added to every packet for the rate limiter (28 = IPv4 + UDP headers); default 0. */
  readonly perPacketOverheadBytes?: number;
  /** Bound on bytes in one direction's delay line; default DEFAULT_MAX_DELAY_LINE_BYTES. */
  readonly maxDelayLineBytes?: number;
}

/** What happened to a packet handed to onPacket. */
export type PacketFate = 'queued' | 'lost' | 'queueFull' | 'overflow';

export interface DuePacket<T> {
  readonly bytes: Uint8Array;
  readonly direction: Direction;
  /** The caller's tag from onPacket (e.g. the flow the packet belongs to). */
  readonly tag: T;
  /** When the model releases it, ms; <= the `now` it was polled with. */
  readonly releaseAt: number;
}

export interface PipeCounters {
  /** Packets handed to onPacket. */
  received: number;
  /** Packets released by pollTransmit, duplicates included. */
  forwarded: number;
  /** Random loss. */
  droppedLoss: number;
  /** Tail drop at the rate limiter's full queue. */
  droppedQueue: number;
  /** Dropped because the delay line was at maxDelayLineBytes. */
  droppedOverflow: number;
  /** Extra copies made. */
  duplicated: number;
  /** Packets that overtook at least one packet still in flight. */
  reordered: number;
  bytesReceived: number;
  bytesForwarded: number;
}

export type ImpairmentCounters = Readonly<Record<Direction, Readonly<PipeCounters>>>;

// --- PRNG ---------------------------------------------------------------------------------------

/** splitmix32 step: spreads a seed into well-mixed 32-bit words for sfc32's state. */
function splitmix32(state: { x: number }): number {
  state.x = (state.x + 0x9e3779b9) | 0;
  let z = state.x;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}

/**
 * sfc32 (Chris Doty-Humphrey's small fast counting PRNG): passes PractRand to terabytes, 32-bit
 * integer ops only. Returns uniform numbers in [0, 1) with 32 random bits. `stream` selects an
 * independent sequence for the same seed.
 */
export function createPrng(seed: number, stream = 0): () => number {
  const s = { x: (seed ^ Math.imul(stream + 1, 0x632be5ab)) | 0 };
  let a = splitmix32(s);
  let b = splitmix32(s);
  let c = splitmix32(s);
  let d = splitmix32(s) | 1;
  const next = (): number => {
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
  for (let i = 0; i < 12; i++) next(); // discard the warm-up outputs
  return next;
}

// --- FIFO ---------------------------------------------------------------------------------------

/** Array-backed FIFO with a moving head: O(1) amortised push/shift, compacts when half is dead. */
class Fifo<E> {
  #items: E[] = [];
  #head = 0;

  get length(): number {
    return this.#items.length - this.#head;
  }
  peek(): E | undefined {
    return this.#items[this.#head];
  }
  peekLast(): E | undefined {
    return this.#items.length > this.#head ? this.#items[this.#items.length - 1] : undefined;
  }
  push(e: E): void {
    this.#items.push(e);
  }
  shift(): E | undefined {
    if (this.#head >= this.#items.length) return undefined;
    const e = this.#items[this.#head++];
    if (this.#head >= 1024 && this.#head * 2 >= this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    return e;
  }
  clear(): void {
    this.#items = [];
    this.#head = 0;
  }
}

// --- one direction ------------------------------------------------------------------------------

interface InFlight<T> {
  readonly bytes: Uint8Array;
  readonly tag: T;
  readonly releaseAt: number;
}

interface Serialising {
  readonly departAt: number;
  readonly wireBytes: number;
}

const PRNG_STREAM = { loss: 0, jitter: 1, reorder: 2, duplicate: 3 } as const;

class Pipe<T> {
  readonly counters: PipeCounters = {
    received: 0,
    forwarded: 0,
    droppedLoss: 0,
    droppedQueue: 0,
    droppedOverflow: 0,
    duplicated: 0,
    reordered: 0,
    bytesReceived: 0,
    bytesForwarded: 0,
  };
  /** Ordered lane (delay + jitter, clamped monotonic) and reorder lane (no delay). */
  readonly ordered = new Fifo<InFlight<T>>();
  readonly fast = new Fifo<InFlight<T>>();
  readonly #backlog = new Fifo<Serialising>();
  #backlogBytes = 0;
  #linkFreeAt = -Infinity;
  #lastOrderedRelease = -Infinity;
  #delayLineBytes = 0;
  #lastNow = -Infinity;
  readonly #rand: Readonly<Record<keyof typeof PRNG_STREAM, () => number>>;

  constructor(
    readonly spec: ImpairSpec,
    private readonly queueLimit: { readonly bytes: number } | { readonly packets: number } | undefined,
    private readonly overheadBytes: number,
    private readonly maxDelayLineBytes: number,
    seed: number,
    directionIndex: number,
  ) {
    const stream = (s: number): (() => number) => createPrng(seed, directionIndex * 8 + s);
    this.#rand = {
      loss: stream(PRNG_STREAM.loss),
      jitter: stream(PRNG_STREAM.jitter),
      reorder: stream(PRNG_STREAM.reorder),
      duplicate: stream(PRNG_STREAM.duplicate),
    };
  }

  /** Bytes accepted by the rate limiter that have not finished serialising at `now`. */
  backlogBytes(now: number): number {
    this.#drainBacklog(now);
    return this.#backlogBytes;
  }

  get delayLineBytes(): number {
    return this.#delayLineBytes;
  }

  #drainBacklog(now: number): void {
    for (let head = this.#backlog.peek(); head !== undefined && head.departAt <= now; head = this.#backlog.peek()) {
      this.#backlog.shift();
      this.#backlogBytes -= head.wireBytes;
    }
  }

  onPacket(nowIn: number, bytes: Uint8Array, tag: T): PacketFate {
    // A clock that steps back would break the FIFO invariants: treat it as standing still.
    const now = Math.max(nowIn, this.#lastNow);
    this.#lastNow = now;
    const c = this.counters;
    c.received++;
    c.bytesReceived += bytes.length;
    const spec = this.spec;

    if (spec.lossPct > 0 && this.#rand.loss() * 100 < spec.lossPct) {
      c.droppedLoss++;
      return 'lost';
    }

    if (this.#delayLineBytes + bytes.length > this.maxDelayLineBytes) {
      c.droppedOverflow++;
      return 'overflow';
    }

    let departAt = now;
    const rate = spec.rateBitsPerSec;
    if (rate !== undefined) {
      this.#drainBacklog(now);
      const wireBytes = bytes.length + this.overheadBytes;
      const limit = this.queueLimit;
      const full =
        this.#backlog.length > 0 &&
        limit !== undefined &&
        ('bytes' in limit ? this.#backlogBytes + wireBytes > limit.bytes : this.#backlog.length + 1 > limit.packets);
      if (full) {
        c.droppedQueue++;
        return 'queueFull';
      }
      departAt = Math.max(now, this.#linkFreeAt) + (wireBytes * 8000) / rate;
      this.#linkFreeAt = departAt;
      this.#backlog.push({ departAt, wireBytes });
      this.#backlogBytes += wireBytes;
    }

    let lane = this.ordered;
    let releaseAt: number;
    if (spec.reorderPct > 0 && this.#rand.reorder() * 100 < spec.reorderPct) {
      lane = this.fast;
      releaseAt = departAt;
      if (this.#lastOrderedRelease > releaseAt && this.ordered.length > 0) c.reordered++;
    } else {
      let delay = spec.rttMs / 2;
      if (spec.jitterMs > 0) delay += spec.jitterMs * this.#jitterUnit();
      releaseAt = Math.max(departAt + Math.max(0, delay), this.#lastOrderedRelease);
      this.#lastOrderedRelease = releaseAt;
    }
    lane.push({ bytes, tag, releaseAt });
    this.#delayLineBytes += bytes.length;

    if (spec.duplicatePct > 0 && this.#rand.duplicate() * 100 < spec.duplicatePct) {
      lane.push({ bytes, tag, releaseAt });
      this.#delayLineBytes += bytes.length;
      c.duplicated++;
    }
    return 'queued';
  }

  /** A jitter sample in units of jitterMs: uniform in [-1, 1], or N(0, 1) clipped at +-3. */
  #jitterUnit(): number {
    const r = this.#rand.jitter;
    if (this.spec.jitterDistribution === 'uniform') return 2 * r() - 1;
    // Box-Muller; 1 - r() is in (0, 1], so the log is finite.
    const z = Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());
    return Math.max(-NORMAL_JITTER_CLIP_SIGMAS, Math.min(NORMAL_JITTER_CLIP_SIGMAS, z));
  }

  /** Takes the head of a lane (which the caller found due). */
  take(lane: Fifo<InFlight<T>>): InFlight<T> | undefined {
    const p = lane.shift();
    if (p === undefined) return undefined;
    this.#delayLineBytes -= p.bytes.length;
    this.counters.forwarded++;
    this.counters.bytesForwarded += p.bytes.length;
    return p;
  }

  clear(): void {
    this.ordered.clear();
    this.fast.clear();
    this.#backlog.clear();
    this.#backlogBytes = 0;
    this.#delayLineBytes = 0;
  }
}

// --- the two-direction core ---------------------------------------------------------------------

/**
 * The impairment of one link, both directions. `T` is an opaque tag carried with each packet
 * (the UDP relay passes its flow, so one shared link serves every client).
 */
export class Impairment<T = undefined> {
  readonly spec: ImpairSpec;
  readonly #pipes: Readonly<Record<Direction, Pipe<T>>>;

  constructor(spec: ImpairSpec, options: ImpairmentOptions = {}) {
    const overhead = options.perPacketOverheadBytes ?? 0;
    const maxDelayLine = options.maxDelayLineBytes ?? DEFAULT_MAX_DELAY_LINE_BYTES;
    if (!Number.isInteger(overhead) || overhead < 0 || overhead > 1024) {
      throw new RangeError(`perPacketOverheadBytes must be an integer 0..1024, got ${overhead}`);
    }
    if (!(maxDelayLine > 0)) throw new RangeError(`maxDelayLineBytes must be > 0, got ${maxDelayLine}`);
    const seed = options.seed ?? 1;
    const queue = resolveQueueLimit(spec);
    this.spec = spec;
    this.#pipes = {
      toServer: new Pipe<T>(spec, queue, overhead, maxDelayLine, seed, 0),
      toClient: new Pipe<T>(spec, queue, overhead, maxDelayLine, seed, 1),
    };
  }

  /** A packet arrived at `now` (ms) travelling in `direction`. The core keeps `bytes` until release: do not reuse it. */
  onPacket(
    now: number,
    bytes: Uint8Array,
    direction: Direction,
    ...[tag]: T extends undefined ? [tag?: T] : [tag: T]
  ): PacketFate {
    return this.#pipes[direction].onPacket(now, bytes, tag as T);
  }

  /** Every packet due at `now` (release time <= now), in release order across both directions. */
  pollTransmit(now: number): DuePacket<T>[] {
    const out: DuePacket<T>[] = [];
    for (;;) {
      let best: { pipe: Pipe<T>; lane: Pipe<T>['ordered']; direction: Direction; at: number } | undefined;
      for (const direction of DIRECTIONS) {
        const pipe = this.#pipes[direction];
        for (const lane of [pipe.fast, pipe.ordered]) {
          const head = lane.peek();
          if (head !== undefined && head.releaseAt <= now && (best === undefined || head.releaseAt < best.at)) {
            best = { pipe, lane, direction, at: head.releaseAt };
          }
        }
      }
      if (best === undefined) return out;
      const p = best.pipe.take(best.lane);
      if (p !== undefined) out.push({ bytes: p.bytes, direction: best.direction, tag: p.tag, releaseAt: p.releaseAt });
    }
  }

  /** When the next packet is due (ms, same clock as `now`), or undefined when nothing is in flight. */
  pollTimeout(): number | undefined {
    let at: number | undefined;
    for (const direction of DIRECTIONS) {
      const pipe = this.#pipes[direction];
      for (const lane of [pipe.fast, pipe.ordered]) {
        const head = lane.peek();
        if (head !== undefined && (at === undefined || head.releaseAt < at)) at = head.releaseAt;
      }
    }
    return at;
  }

  /** Bytes waiting for (or on) the link in `direction` at `now`: the rate limiter's queue. */
  queuedBytes(direction: Direction, now: number): number {
    return this.#pipes[direction].backlogBytes(now);
  }

  /** Bytes accepted in `direction` and not yet released (rate queue and delay line). */
  inFlightBytes(direction: Direction): number {
    return this.#pipes[direction].delayLineBytes;
  }

  /** Number of packets accepted and not yet released, both directions. */
  get pendingPackets(): number {
    let n = 0;
    for (const d of DIRECTIONS) n += this.#pipes[d].ordered.length + this.#pipes[d].fast.length;
    return n;
  }

  /** Copies of the counters of both directions. */
  counters(): ImpairmentCounters {
    return { toServer: { ...this.#pipes.toServer.counters }, toClient: { ...this.#pipes.toClient.counters } };
  }

  /** Forgets every packet in flight (the relay is closing). Counters stay. */
  clear(): void {
    for (const d of DIRECTIONS) this.#pipes[d].clear();
  }
}
