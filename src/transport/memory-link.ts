// The in-memory transport's link model (memory.ts, whose header describes it): the conditions of
// a link, a seeded PRNG for its loss and jitter draws, and one direction of a connection, which
// schedules each event's arrival (delay, loss as a retransmission one RTO later, jitter,
// nothing overtaking within a stream, a close behind everything in flight).
import { ClawpeerError } from '../errors.js';
import type { Scheduler } from './scheduler.js';

export interface LinkConditions {
  /** One-way delay (ms). */
  readonly latencyMs: number;
  /** Probability in [0, 1) that a segment is lost (and arrives one rtoMs later per loss). */
  readonly lossRate: number;
  /** Retransmission timeout charged per loss (ms). */
  readonly rtoMs: number;
  /** Extra per-segment delay, uniform in [0, reorderJitterMs) (ms); reorders across streams. */
  readonly reorderJitterMs: number;
  /** Largest segment (bytes). */
  readonly segmentBytes: number;
  /** Per-stream flow-control window (bytes): unread bytes a writer may have outstanding. */
  readonly streamWindowBytes: number;
}

export const DEFAULT_LINK: LinkConditions = Object.freeze({
  latencyMs: 0,
  lossRate: 0,
  rtoMs: 200,
  reorderJitterMs: 0,
  segmentBytes: 16 * 1024,
  streamWindowBytes: 1024 * 1024,
});

/** Loss draws stop here: with lossRate < 1 more is astronomically unlikely, and it bounds the delay. */
const MAX_CONSECUTIVE_LOSSES = 32;
/** mulberry32: a tiny seeded PRNG so lossy/jittery runs are reproducible from a seed. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/** The conditions, checked (USAGE naming the bad value) and frozen. */
export function checkConditions(c: LinkConditions): LinkConditions {
  const bad = (what: string): never => {
    throw new ClawpeerError('USAGE', `memory link: ${what}`);
  };
  if (!(c.latencyMs >= 0)) bad(`latencyMs must be >= 0, got ${c.latencyMs}`);
  if (!(c.lossRate >= 0 && c.lossRate < 1)) bad(`lossRate must be in [0, 1), got ${c.lossRate}`);
  if (!(c.rtoMs > 0)) bad(`rtoMs must be > 0, got ${c.rtoMs}`);
  if (!(c.reorderJitterMs >= 0)) bad(`reorderJitterMs must be >= 0, got ${c.reorderJitterMs}`);
  if (!(Number.isInteger(c.segmentBytes) && c.segmentBytes > 0))
    bad(`segmentBytes must be a positive integer, got ${c.segmentBytes}`);
  if (!(Number.isInteger(c.streamWindowBytes) && c.streamWindowBytes > 0))
    bad(`streamWindowBytes must be a positive integer, got ${c.streamWindowBytes}`);
  return Object.freeze({ ...c });
}

/** What a direction needs of its network: the link, the PRNG and the clock. */
export interface LinkNetwork {
  readonly link: LinkConditions;
  readonly random: () => number;
  readonly scheduler: Scheduler;
}

// ---------------------------------------------------------------------------------------------
// One direction of a connection: delay, loss, jitter, per-stream ordering.

export class Direction {
  readonly #net: LinkNetwork;
  /** Latest scheduled arrival per stream id: within a stream, nothing overtakes. */
  readonly #streamTail = new Map<number, number>();
  /** Latest scheduled arrival of anything: a close travels behind it. */
  #tail = 0;

  constructor(net: LinkNetwork) {
    this.#net = net;
  }

  /** Schedules an ordered stream event (data or FIN). */
  sendOrdered(streamId: number, deliver: () => void): void {
    const { latencyMs, lossRate, rtoMs, reorderJitterMs } = this.#net.link;
    let losses = 0;
    while (lossRate > 0 && losses < MAX_CONSECUTIVE_LOSSES && this.#net.random() < lossRate) losses++;
    const jitter = reorderJitterMs > 0 ? this.#net.random() * reorderJitterMs : 0;
    const now = this.#net.scheduler.now();
    const arrival = Math.max(now + latencyMs + jitter + losses * rtoMs, this.#streamTail.get(streamId) ?? 0);
    this.#streamTail.set(streamId, arrival);
    this.#at(arrival, deliver);
  }

  /** Schedules an unordered control event (reset, credit) one latency from now. */
  sendControl(deliver: () => void): void {
    this.#at(this.#net.scheduler.now() + this.#net.link.latencyMs, deliver);
  }

  /** Schedules the connection close behind everything in flight. Returns its arrival time. */
  sendClose(deliver: () => void): number {
    const arrival = Math.max(this.#net.scheduler.now() + this.#net.link.latencyMs, this.#tail);
    this.#at(arrival, deliver);
    return arrival;
  }

  #at(arrival: number, deliver: () => void): void {
    this.#tail = Math.max(this.#tail, arrival);
    this.#net.scheduler.schedule(arrival - this.#net.scheduler.now(), deliver);
  }
}
