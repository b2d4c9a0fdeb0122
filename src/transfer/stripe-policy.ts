// When a session should stripe its data over more QUIC connections: the automatic policy of
// `--connections auto`, as a sans-I/O core fed with the transport's counters (time comes in).
//
// Why: quinn's congestion control is a fixed CUBIC, which reads every lost packet as congestion.
// Under random loss (Wi-Fi, long paths) one connection stays near the Mathis bound
// (rate ~ MSS / (RTT * sqrt(p))): 17% of a 50 ms / 100 Mbit/s link at 0.1% loss, 2% at 1%
// (bench/results/bench-loss-connections.json). N connections have N congestion windows.
// Striping must not happen when the loss is congestion: then more connections only take the
// link from others and fill the queue further.
//
// The rule: loss with the RTT near its minimum is random loss (a full bottleneck queue, the
// other cause of loss, shows as RTT above the minimum by the queue's delay); after each such
// observation, multiply the connections by `growthFactor` (at most every `growEveryMs`, up to
// `maxConnections`): 1, 4, 12 by default. Each step waits for a loss sample outside a hold, and
// the joined connections' slow starts overshoot the queue (a hold), so few large steps reach the
// connections the loss calls for sooner: with doubling, 12 came 3-9 s into a 64 MiB transfer at
// 0.1% loss, a third of it. Loss with an inflated RTT means the connections together fill the
// link (or one is in slow start's overshoot): no growth for `congestionHoldMs` (or
// `congestionHoldRtts` round trips, if longer) after it, so the tail of the same episode,
// detected once the queue drained (within a few round trips), is not taken for random loss.
// (Not for good: the first RTT samples of a connection can read high before its minimum is
// known.)
// Never on paths under `minRttMs` (LAN, loopback): CUBIC recovers within microseconds there, and
// loss on them is a full buffer, not the medium.
// Non-goals: shrinking (connections idle at the end of a transfer cost nothing), I/O.

export interface LinkSample {
  /** Caller's clock, ms. */
  readonly atMs: number;
  /** Smoothed RTT of the session's first connection now, ms. */
  readonly rttMs: number;
  /** Lost packets, summed over the session's connections (monotonic per connection). */
  readonly lostPackets: number;
  /** Sent packets, summed likewise. */
  readonly sentPackets: number;
  /** Connections the session has now. */
  readonly connections: number;
}

export interface StripePolicyOptions {
  /** Connections in all, the first included. */
  readonly maxConnections: number;
  /** Paths with a smaller minimum RTT never stripe. */
  readonly minRttMs?: number;
  /** Loss counts as random while the RTT is at most minRtt * rttInflation + rttSlackMs. */
  readonly rttInflation?: number;
  readonly rttSlackMs?: number;
  /** Before the first growth: at least this many packets lost, at this rate of those sent. */
  readonly minLostPackets?: number;
  readonly minLossRate?: number;
  /** Between two growths (the new connections' slow start needs a few round trips). */
  readonly growEveryMs?: number;
  /** Each growth multiplies the connections by this (capped at maxConnections). */
  readonly growthFactor?: number;
  /** After loss with an inflated RTT, how long no loss counts as random: the longer of these. */
  readonly congestionHoldMs?: number;
  readonly congestionHoldRtts?: number;
}

export const STRIPE_POLICY_DEFAULTS = {
  minRttMs: 5,
  rttInflation: 1.5,
  rttSlackMs: 5,
  minLostPackets: 2,
  minLossRate: 0.0002,
  growEveryMs: 500,
  growthFactor: 4,
  congestionHoldMs: 1_000,
  congestionHoldRtts: 20,
} as const;

export type StripeVerdict =
  { readonly kind: 'grow'; readonly connections: number; readonly lossRate: number } | { readonly kind: 'hold' };

export class StripePolicy {
  readonly #o: Required<StripePolicyOptions>;
  #minRtt = Number.POSITIVE_INFINITY;
  #previous: LinkSample | undefined;
  #lost = 0;
  #sent = 0;
  #wanted = 1;
  #lastGrowAt = Number.NEGATIVE_INFINITY;
  #congestedAt = Number.NEGATIVE_INFINITY;
  #congestionEvents = 0;

  constructor(options: StripePolicyOptions) {
    if (!Number.isInteger(options.maxConnections) || options.maxConnections < 1)
      throw new RangeError(`maxConnections must be a positive integer, got ${options.maxConnections}`);
    this.#o = { ...STRIPE_POLICY_DEFAULTS, ...options };
  }

  /** Samples whose loss came with a full queue (congestion, not the medium). */
  get congestionEvents(): number {
    return this.#congestionEvents;
  }

  /** Connections asked for so far (1 until the first growth). */
  get wanted(): number {
    return this.#wanted;
  }

  /** Feeds one reading; says how many connections to have when it is time to grow. */
  sample(s: LinkSample): StripeVerdict {
    if (s.rttMs > 0) this.#minRtt = Math.min(this.#minRtt, s.rttMs);
    const prev = this.#previous;
    this.#previous = s;
    if (prev === undefined) return { kind: 'hold' };
    // A connection that closed takes its counters with it: never count backwards.
    const lost = Math.max(0, s.lostPackets - prev.lostPackets);
    const sent = Math.max(0, s.sentPackets - prev.sentPackets);
    this.#sent += sent;
    if (lost === 0) return { kind: 'hold' };
    this.#lost += lost;
    const o = this.#o;
    const limit = this.#minRtt * o.rttInflation + o.rttSlackMs;
    if (s.rttMs > limit || prev.rttMs > limit) {
      this.#congestedAt = s.atMs;
      this.#congestionEvents++;
      return { kind: 'hold' };
    }
    if (s.atMs - this.#congestedAt < Math.max(o.congestionHoldMs, o.congestionHoldRtts * this.#minRtt))
      return { kind: 'hold' };
    const lossRate = this.#sent === 0 ? 0 : this.#lost / this.#sent;
    if (this.#minRtt < o.minRttMs || this.#lost < o.minLostPackets || lossRate < o.minLossRate) return { kind: 'hold' };
    const have = Math.max(this.#wanted, s.connections);
    if (have >= o.maxConnections || s.atMs - this.#lastGrowAt < o.growEveryMs) return { kind: 'hold' };
    this.#wanted = Math.min(o.maxConnections, Math.max(have + 1, Math.round(have * o.growthFactor)));
    this.#lastGrowAt = s.atMs;
    return { kind: 'grow', connections: this.#wanted, lossRate };
  }
}
