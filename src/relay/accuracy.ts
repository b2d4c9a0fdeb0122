// Relay self-check: measures a running UDP relay with real packets and compares what it does
// with what it was configured to do, so every simulated benchmark can print how far its "WAN"
// was from the one it claims (issue 5: off by more than 5% in RTT or rate, or by more than 0.2
// points in loss, must be said loudly).
//
// Goals: three short phases through the relay to a local echo, each isolating one property:
//  1. RTT: small probes, spaced so they never queue behind each other, echoed back; a trimmed mean and
//     p99 of the round trip. Expected = rtt + the probe's serialisation time at the rate, both
//     ways (0.1 ms at 10 Mbit/s for 64 bytes: 10% of a 1 ms RTT, so it must be counted).
//  2. rate: a paced burst at 110% of the configured rate, one way; the delivered rate is timed
//     at the echo from the first to the last arrival (the queue overflows by design: the extra
//     10% keeps the link busy the whole time).
//  3. loss: N numbered probes one way, paced at half the rate (no queue drops), counted unique
//     at the echo; compared per direction with the configured loss.
// Non-goals: checking jitter shape, reorder or duplication (the unit tests cover the model;
// this checks the real-time driver); any traffic off loopback.
import dgram from 'node:dgram';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { ClawpeerError } from '../errors.js';
import type { HostPort } from '../transport/types.js';
import type { ImpairSpec } from './impair-spec.js';
import { formatImpairSpec, parseImpairSpec, resolveQueueLimit } from './impair-spec.js';
import type { UdpRelayOptions, UdpRelayStats } from './udp-relay.js';
import { startUdpRelay } from './udp-relay.js';

/** Thresholds from issue 5. */
export const RTT_TOLERANCE_PCT = 5;
export const RATE_TOLERANCE_PCT = 5;
export const LOSS_TOLERANCE_POINTS = 0.2;
/** With no configured delay a relative error means nothing: this absolute one applies, ms. */
export const ZERO_RTT_TOLERANCE_MS = 0.5;

/** Probe layout: kind (1 byte), phase (1 byte), sequence (u32 big-endian), padding. */
const PROBE_HEADER_BYTES = 6;
/** Share of RTT samples dropped from each end before averaging. */
const RTT_TRIM = 0.1;
const KIND_ECHO = 1;
const KIND_COUNT = 2;
export const RTT_PROBE_BYTES = 64;
export const LOSS_PROBE_BYTES = 64;
export const RATE_PROBE_BYTES = 1200;
/** The rate phase offers this multiple of the configured rate. */
export const RATE_OFFERED_FACTOR = 1.1;
/** Most packets per second any phase sends: keeps the probe from eating the relay's core (2 cores). */
const MAX_PROBE_PPS = 20_000;
/** Loss probes per second at most: enough for 20k probes in 4 s, light enough for a loaded relay. */
const MAX_LOSS_PROBE_PPS = 5_000;
/** Longest wait for a phase's packets to stop arriving, ms. */
const MAX_SETTLE_MS = 5_000;
/** Unmeasured echo probes sent first (a new flow and a cold JIT are slow for the first few packets). */
const WARMUP_PROBES = 20;
/** A tally holds at most this many distinct sequence numbers. */
const MAX_TALLY_SEQS = 1 << 20;

export interface EchoTally {
  /** Distinct sequence numbers seen. */
  unique: number;
  /** All packets, duplicates included. */
  packets: number;
  bytes: number;
  firstAtMs: number;
  lastAtMs: number;
  firstBytes: number;
}

/** A UDP echo on loopback: echoes KIND_ECHO probes, counts KIND_COUNT ones per phase. */
export interface UdpEcho {
  readonly address: HostPort;
  /** The tally of a phase so far (a copy). */
  peekTally(phase: number): EchoTally;
  /** Takes (and forgets) the tally of a phase. */
  takeTally(phase: number): EchoTally;
  close(): Promise<void>;
}

export async function startUdpEcho(host = '127.0.0.1'): Promise<UdpEcho> {
  const socket = dgram.createSocket(host.includes(':') ? 'udp6' : 'udp4');
  const tallies = new Map<number, { t: EchoTally; seen: Set<number> }>();
  socket.on('message', (msg, rinfo) => {
    if (msg.length < PROBE_HEADER_BYTES) return;
    const kind = msg[0];
    if (kind === KIND_ECHO) {
      socket.send(msg, rinfo.port, rinfo.address);
      return;
    }
    if (kind !== KIND_COUNT) return;
    const now = performance.now();
    const phase = msg[1] ?? 0;
    let entry = tallies.get(phase);
    if (entry === undefined) {
      entry = {
        t: { unique: 0, packets: 0, bytes: 0, firstAtMs: now, lastAtMs: now, firstBytes: msg.length },
        seen: new Set(),
      };
      tallies.set(phase, entry);
    }
    const seq = msg.readUInt32BE(2);
    entry.t.packets++;
    entry.t.bytes += msg.length;
    entry.t.lastAtMs = now;
    if (!entry.seen.has(seq) && entry.seen.size < MAX_TALLY_SEQS) {
      entry.seen.add(seq);
      entry.t.unique++;
    }
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(0, host, () => {
      socket.off('error', reject);
      resolve();
    });
  });
  try {
    socket.setRecvBufferSize(4 << 20);
    socket.setSendBufferSize(4 << 20);
  } catch {
    // clamped or refused: fine
  }
  const a = socket.address();
  return {
    address: { host: a.address, port: a.port },
    peekTally(phase) {
      const e = tallies.get(phase);
      return e === undefined
        ? { unique: 0, packets: 0, bytes: 0, firstAtMs: 0, lastAtMs: 0, firstBytes: 0 }
        : { ...e.t };
    },
    takeTally(phase) {
      const e = tallies.get(phase);
      tallies.delete(phase);
      return e?.t ?? { unique: 0, packets: 0, bytes: 0, firstAtMs: 0, lastAtMs: 0, firstBytes: 0 };
    },
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}

export interface AccuracyProbeOptions {
  /** What the relay was configured with. */
  readonly spec: ImpairSpec | string;
  /** The relay's listen address; its target must be `echo.address`. */
  readonly relay: HostPort;
  readonly echo: UdpEcho;
  /** RTT probes (default 200) and their spacing (default 2 ms, more under jitter). */
  readonly rttProbes?: number;
  readonly rttProbeIntervalMs?: number;
  /** Rate phase length, ms (default 1000). */
  readonly rateDurationMs?: number;
  /** Loss probes (default 20000: the 0.2-point check at 1% loss is then ~3 standard deviations wide). */
  readonly lossProbes?: number;
  readonly signal?: AbortSignal;
}

export interface AccuracyReport {
  readonly spec: string;
  readonly rtt: {
    readonly configuredMs: number;
    /** configured + the probe's serialisation time both ways. */
    readonly expectedMs: number;
    /** Mean of the RTT samples without the lowest and highest RTT_TRIM of them. */
    readonly measuredMs: number;
    readonly p99Ms: number;
    readonly minMs: number;
    /** |measured - expected| / expected, percent; null when nothing is expected (rtt 0). */
    readonly errorPct: number | null;
    readonly samples: number;
    readonly ok: boolean;
  };
  /** Null when no rate is configured. */
  readonly rate: {
    readonly configuredBitsPerSec: number;
    readonly offeredBitsPerSec: number;
    readonly measuredBitsPerSec: number;
    readonly errorPct: number;
    readonly packets: number;
    readonly ok: boolean;
  } | null;
  readonly loss: {
    readonly configuredPct: number;
    readonly measuredPct: number;
    readonly errorPoints: number;
    /** One standard deviation of the measurement, points (binomial). */
    readonly stddevPoints: number;
    readonly probes: number;
    readonly ok: boolean;
  };
  readonly ok: boolean;
  readonly warnings: string[];
}

let nextPhase = 1;
const allocPhase = (): number => {
  nextPhase = (nextPhase % 255) + 1;
  return nextPhase;
};

function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
}

/** Mean of sorted `values` without the lowest and highest `trim` share of them (NaN when empty). */
export function trimmedMean(sorted: readonly number[], trim: number): number {
  const cut = Math.floor(sorted.length * trim);
  const kept = sorted.slice(cut, sorted.length - cut);
  return kept.length === 0 ? NaN : kept.reduce((a, b) => a + b, 0) / kept.length;
}

function probe(kind: number, phase: number, seq: number, bytes: number): Buffer {
  const b = Buffer.alloc(bytes);
  b[0] = kind;
  b[1] = phase;
  b.writeUInt32BE(seq >>> 0, 2);
  return b;
}

/** Sends `count` packets at `pps`, catching up after each ~1 ms timer tick (no busy-wait). */
async function paced(
  count: number,
  pps: number,
  send: (i: number) => void,
  signal: AbortSignal | undefined,
): Promise<void> {
  const start = performance.now();
  let sent = 0;
  while (sent < count) {
    if (signal?.aborted === true) throw new ClawpeerError('ABORTED', 'relay accuracy probe aborted');
    const due = Math.min(count, Math.floor(((performance.now() - start) * pps) / 1000) + 1);
    while (sent < due) send(sent++);
    if (sent < count) await sleep(Math.max(1, Math.min(50, 1000 / pps)));
  }
}

const round3 = (x: number): number => Math.round(x * 1000) / 1000;

/** Measures a running relay (see the module comment for the three phases). */
export async function probeRelayAccuracy(options: AccuracyProbeOptions): Promise<AccuracyReport> {
  const spec = typeof options.spec === 'string' ? parseImpairSpec(options.spec) : options.spec;
  const { echo, relay, signal } = options;
  const warnings: string[] = [];
  const client = dgram.createSocket(relay.host.includes(':') ? 'udp6' : 'udp4');
  await new Promise<void>((resolve) => client.bind(0, relay.host.includes(':') ? '::1' : '127.0.0.1', resolve));
  try {
    client.setRecvBufferSize(4 << 20);
    client.setSendBufferSize(4 << 20);
  } catch {
    // clamped or refused: fine
  }
  const send = (b: Buffer): void => client.send(b, relay.port, relay.host);
  const rate = spec.rateBitsPerSec;
  const serialisationMs = (bytes: number): number => (rate === undefined ? 0 : (bytes * 8000) / rate);
  const oneWayMaxMs = spec.rttMs / 2 + (spec.jitterDistribution === 'normal' ? 3 : 1) * spec.jitterMs;

  try {
    // --- 0. warm-up: opens the relay's flow for this client and lets the JIT settle; not measured.
    const warmPhase = allocPhase();
    for (let i = 0; i < WARMUP_PROBES; i++) {
      send(probe(KIND_ECHO, warmPhase, i, RTT_PROBE_BYTES));
      await sleep(2);
    }
    await sleep(Math.min(1000, 2 * oneWayMaxMs + 20));

    // --- 1. RTT ----------------------------------------------------------------------------------
    const rttProbes = options.rttProbes ?? 200;
    const interval = options.rttProbeIntervalMs ?? Math.max(2, 2 * spec.jitterMs, 4 * serialisationMs(RTT_PROBE_BYTES));
    const phase = allocPhase();
    const sentAt = new Float64Array(rttProbes);
    const rtts: number[] = [];
    const onReply = (msg: Buffer): void => {
      const now = performance.now();
      if (msg.length < PROBE_HEADER_BYTES || msg[0] !== KIND_ECHO || msg[1] !== phase) return;
      const seq = msg.readUInt32BE(2);
      const t0 = sentAt[seq];
      if (t0 !== undefined && t0 > 0) {
        rtts.push(now - t0);
        sentAt[seq] = 0; // a duplicate is not a second sample
      }
    };
    client.on('message', onReply);
    await paced(
      rttProbes,
      1000 / interval,
      (i) => {
        sentAt[i] = performance.now();
        send(probe(KIND_ECHO, phase, i, RTT_PROBE_BYTES));
      },
      signal,
    );
    const expectedReplies = Math.round(rttProbes * (1 - spec.lossPct / 100) ** 2);
    const deadline = performance.now() + 2 * oneWayMaxMs + 200;
    while (rtts.length < expectedReplies && performance.now() < deadline) await sleep(5);
    await sleep(Math.min(50, 2 * oneWayMaxMs + 5)); // stragglers
    client.off('message', onReply);
    rtts.sort((a, b) => a - b);
    const expectedMs = spec.rttMs + 2 * serialisationMs(RTT_PROBE_BYTES);
    // A trimmed mean, not the median: the relay dithers each release between the two whole-ms
    // wake-ups around its due time (release-timing.ts), so a delay's error takes two values whose
    // mean is zero but whose median is whichever is likelier (4.81 or 5.43 ms for 5 ms). QUIC's
    // smoothed RTT is a mean too. Trimming keeps a loaded loop's multi-ms outliers out.
    const centre = trimmedMean(rtts, RTT_TRIM);
    const rttErrorPct = expectedMs > 0 ? (100 * Math.abs(centre - expectedMs)) / expectedMs : null;
    const rttOk =
      rtts.length > 0 &&
      (rttErrorPct === null
        ? Math.abs(centre - expectedMs) <= ZERO_RTT_TOLERANCE_MS
        : rttErrorPct <= RTT_TOLERANCE_PCT);
    if (rtts.length < rttProbes / 4) warnings.push(`only ${rtts.length} of ${rttProbes} RTT probes came back`);

    // --- 2. rate ---------------------------------------------------------------------------------
    let rateReport: AccuracyReport['rate'] = null;
    if (rate !== undefined) {
      const ratePhase = allocPhase();
      const durationMs = options.rateDurationMs ?? 1000;
      const offered = rate * RATE_OFFERED_FACTOR;
      const pps = offered / (RATE_PROBE_BYTES * 8);
      const count = Math.max(20, Math.round((pps * durationMs) / 1000));
      if (pps > MAX_PROBE_PPS)
        warnings.push(
          `rate check offers ${Math.round(pps)} packets/s, above the ${MAX_PROBE_PPS} the probe paces reliably`,
        );
      await paced(count, pps, (i) => send(probe(KIND_COUNT, ratePhase, i, RATE_PROBE_BYTES)), signal);
      await settle(echo, ratePhase, oneWayMaxMs + resolveQueueDrainMs(spec));
      const t = echo.takeTally(ratePhase);
      const spanMs = t.lastAtMs - t.firstAtMs;
      const measured = spanMs > 0 ? ((t.bytes - t.firstBytes) * 8000) / spanMs : 0;
      const errorPct = (100 * Math.abs(measured - rate)) / rate;
      rateReport = {
        configuredBitsPerSec: rate,
        offeredBitsPerSec: Math.round(offered),
        measuredBitsPerSec: Math.round(measured),
        errorPct: round3(errorPct),
        packets: t.packets,
        ok: errorPct <= RATE_TOLERANCE_PCT,
      };
      if (t.packets < 20) warnings.push(`rate check: only ${t.packets} packets arrived`);
    }

    // --- 3. loss ---------------------------------------------------------------------------------
    const lossPhase = allocPhase();
    const lossProbes = options.lossProbes ?? 20_000;
    const lossPps = Math.min(
      MAX_LOSS_PROBE_PPS,
      rate === undefined ? MAX_LOSS_PROBE_PPS : (0.5 * rate) / (LOSS_PROBE_BYTES * 8),
    );
    await paced(lossProbes, lossPps, (i) => send(probe(KIND_COUNT, lossPhase, i, LOSS_PROBE_BYTES)), signal);
    await settle(echo, lossPhase, oneWayMaxMs);
    const lt = echo.takeTally(lossPhase);
    const measuredPct = (100 * (lossProbes - lt.unique)) / lossProbes;
    const p = spec.lossPct / 100;
    const stddevPoints = 100 * Math.sqrt((Math.max(p, 1 / lossProbes) * (1 - p)) / lossProbes);
    const errorPoints = Math.abs(measuredPct - spec.lossPct);
    if (3 * stddevPoints > LOSS_TOLERANCE_POINTS) {
      warnings.push(
        `loss check with ${lossProbes} probes has a standard deviation of ${stddevPoints.toFixed(3)} points: too few to resolve ${LOSS_TOLERANCE_POINTS} points reliably`,
      );
    }

    const report: AccuracyReport = {
      spec: formatImpairSpec(spec),
      rtt: {
        configuredMs: spec.rttMs,
        expectedMs: round3(expectedMs),
        measuredMs: round3(centre),
        p99Ms: round3(percentile(rtts, 0.99)),
        minMs: round3(rtts[0] ?? NaN),
        errorPct: rttErrorPct === null ? null : round3(rttErrorPct),
        samples: rtts.length,
        ok: rttOk,
      },
      rate: rateReport,
      loss: {
        configuredPct: spec.lossPct,
        measuredPct: round3(measuredPct),
        errorPoints: round3(errorPoints),
        stddevPoints: round3(stddevPoints),
        probes: lossProbes,
        ok: errorPoints <= LOSS_TOLERANCE_POINTS,
      },
      ok: false,
      warnings,
    };
    const ok = report.rtt.ok && (report.rate?.ok ?? true) && report.loss.ok;
    if (!report.rtt.ok)
      warnings.push(
        `RELAY INACCURATE: RTT ${report.rtt.measuredMs} ms measured vs ${report.rtt.expectedMs} ms expected (${report.rtt.errorPct ?? '-'}% off, limit ${RTT_TOLERANCE_PCT}%)`,
      );
    if (report.rate !== null && !report.rate.ok)
      warnings.push(
        `RELAY INACCURATE: rate ${report.rate.measuredBitsPerSec} bit/s measured vs ${report.rate.configuredBitsPerSec} configured (${report.rate.errorPct}% off, limit ${RATE_TOLERANCE_PCT}%)`,
      );
    if (!report.loss.ok)
      warnings.push(
        `RELAY INACCURATE: loss ${report.loss.measuredPct}% measured vs ${report.loss.configuredPct}% configured (${report.loss.errorPoints} points off, limit ${LOSS_TOLERANCE_POINTS})`,
      );
    return { ...report, ok };
  } finally {
    await new Promise<void>((resolve) => client.close(() => resolve()));
  }
}

/**
 * Waits until a phase's packets stop arriving: nothing new for 100 ms after at least the
 * expected delay; a relay running behind (loaded machine) is waited for, up to MAX_SETTLE_MS.
 */
async function settle(echo: UdpEcho, phase: number, expectedDelayMs: number): Promise<void> {
  const start = performance.now();
  await sleep(expectedDelayMs + 20);
  let last = echo.peekTally(phase).packets;
  let quietSince = performance.now();
  while (performance.now() - quietSince < 100 && performance.now() - start < MAX_SETTLE_MS) {
    await sleep(10);
    const now = echo.peekTally(phase).packets;
    if (now !== last) {
      last = now;
      quietSince = performance.now();
    }
  }
}

/** Time for a full default-or-configured queue to drain at the rate, ms (0 without a rate). */
function resolveQueueDrainMs(spec: ImpairSpec): number {
  const rate = spec.rateBitsPerSec;
  const q = resolveQueueLimit(spec);
  if (rate === undefined || q === undefined) return 0;
  const bytes = 'bytes' in q ? q.bytes : q.packets * RATE_PROBE_BYTES;
  return Math.min(10_000, (bytes * 8000) / rate);
}

export interface RelayAccuracyCheck {
  readonly report: AccuracyReport;
  /** The relay's own stats at the end (release timing, counters). */
  readonly relayStats: UdpRelayStats;
}

/** Starts an echo and an in-process relay with `spec` in front of it, probes, closes both. */
export async function checkRelayAccuracy(
  spec: ImpairSpec | string,
  options: Omit<AccuracyProbeOptions, 'spec' | 'relay' | 'echo'> & Pick<UdpRelayOptions, 'seed'> = {},
): Promise<RelayAccuracyCheck> {
  const echo = await startUdpEcho();
  try {
    const relay = await startUdpRelay({
      listen: { host: '127.0.0.1', port: 0 },
      target: echo.address,
      spec,
      ...(options.seed === undefined ? {} : { seed: options.seed }),
    });
    try {
      const report = await probeRelayAccuracy({ ...options, spec, relay: relay.address, echo });
      return { report, relayStats: relay.stats() };
    } finally {
      await relay.close();
    }
  } finally {
    await echo.close();
  }
}
