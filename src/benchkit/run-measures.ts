// What a bench run measures besides its time (runner.ts): application pings, the QUIC
// connections' RTT, losses and congestion windows, the relay's drop counters, kernel UDP drops.
import type { PeerSession } from '../session/session.js';
import { pingPeer } from '../session/ping.js';
import type { ImpairmentCounters } from '../relay/impairment.js';
import { udpBufferDrops } from '../transport/udp-buffers.js';
import type { BenchRunSetting } from './bench-plan.js';
import type { BenchRunResult, RelayRunCounters } from './bench-results.js';
import type { LinkHandle } from './bench-environment.js';

/** Pings over the control channel before each push: the application-level RTT. */
export const PING_COUNT = 5;
export const round3 = (x: number): number => Math.round(x * 1000) / 1000;

export async function pingMs(session: PeerSession, idleTimeoutMs: number, signal: AbortSignal): Promise<number[]> {
  const out: number[] = [];
  for await (const p of pingPeer(session, { count: PING_COUNT, intervalMs: 0, timeoutMs: idleTimeoutMs, signal }))
    out.push(p.rttMs);
  return out;
}

export function summarizePings(ms: number[]): BenchRunResult['pingMs'] {
  if (ms.length === 0) return null;
  const s = [...ms].sort((a, b) => a - b);
  const mid = s.length >> 1;
  const median = s.length % 2 === 1 ? (s[mid] ?? 0) : ((s[mid - 1] ?? 0) + (s[mid] ?? 0)) / 2;
  return { min: round3(s[0] ?? 0), median: round3(median), max: round3(s[s.length - 1] ?? 0), samples: s.length };
}

export function connectionsOf(sessions: readonly PeerSession[]): number {
  return sessions.reduce((n, s) => n + s.connections().length, 0);
}

/** Goodput as % of the simulated link's rate; null without a rate. */
export function linkPctOf(goodputBitsPerSec: number, setting: BenchRunSetting): number | null {
  const rate = setting.spec?.rateBitsPerSec;
  return rate === undefined ? null : round3((100 * goodputBitsPerSec) / rate);
}

/** What the connections and the relay saw over a run (read at its end). */
export async function linkMeasures(
  sessions: readonly PeerSession[],
  pings: number[],
  countersBefore: ImpairmentCounters | undefined,
  link: LinkHandle,
  dropsBefore: number | null,
): Promise<
  Pick<
    BenchRunResult,
    'pingMs' | 'transportRttMs' | 'lostPackets' | 'congestionWindowBytes' | 'relay' | 'kernelUdpDrops'
  >
> {
  const stats = sessions.flatMap((s) => s.connections().map((c) => c.stats()));
  const countersAfter = await link.counters();
  const dropsAfter = udpBufferDrops();
  const lost = stats.map((s) => s.lostPackets);
  const cwnd = stats.map((s) => s.congestionWindowBytes);
  return {
    pingMs: summarizePings(pings),
    transportRttMs: stats.map((s) => round3(s.rttMs)),
    lostPackets: lost.every((x): x is number => x !== undefined) ? lost : null,
    congestionWindowBytes: cwnd.every((x): x is number => x !== undefined) ? cwnd : null,
    relay:
      countersBefore === undefined || countersAfter === undefined
        ? null
        : diffCounters(sumCounters(countersBefore), sumCounters(countersAfter)),
    kernelUdpDrops: dropsBefore === null || dropsAfter === null ? null : dropsAfter - dropsBefore,
  };
}

/** A relay's drop and forward counters over both directions. */
export function sumCounters(c: ImpairmentCounters): RelayRunCounters {
  const a = c.toServer,
    b = c.toClient;
  return {
    droppedLoss: a.droppedLoss + b.droppedLoss,
    droppedQueue: a.droppedQueue + b.droppedQueue,
    droppedOverflow: a.droppedOverflow + b.droppedOverflow,
    forwarded: a.forwarded + b.forwarded,
  };
}

export function diffCounters(a: RelayRunCounters, b: RelayRunCounters): RelayRunCounters {
  return {
    droppedLoss: b.droppedLoss - a.droppedLoss,
    droppedQueue: b.droppedQueue - a.droppedQueue,
    droppedOverflow: b.droppedOverflow - a.droppedOverflow,
    forwarded: b.forwarded - a.forwarded,
  };
}
