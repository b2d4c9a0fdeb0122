// A synthetic runner report, so report and SVG tests need no network and no clock.
import type { BenchPlan } from '../../src/benchkit/bench-plan.js';
import { planBench } from '../../src/benchkit/bench-plan.js';
import type { BenchRunnerReport, BenchRunResult, RelayCheckResult } from '../../src/benchkit/bench-results.js';
import type { AccuracyReport } from '../../src/relay/accuracy.js';

export function accuracy(link: string, ok: boolean): RelayCheckResult {
  const report: AccuracyReport = {
    spec: link,
    rtt: {
      configuredMs: 50,
      expectedMs: 50,
      measuredMs: ok ? 50.4 : 58,
      p99Ms: 52,
      minMs: 50,
      errorPct: ok ? 0.8 : 16,
      samples: 200,
      ok,
    },
    rate: {
      configuredBitsPerSec: 100e6,
      offeredBitsPerSec: 110e6,
      measuredBitsPerSec: 99.5e6,
      errorPct: 0.5,
      packets: 1000,
      ok: true,
    },
    loss: { configuredPct: 0, measuredPct: 0, errorPoints: 0, stddevPoints: 0, probes: 20000, ok: true },
    ok,
    warnings: [],
  };
  return { link, ok, report, placement: 'worker' };
}

/** Goodput of a run: proportional to the window, inversely to the RTT (a window-bound link). */
export function fakeRun(plan: BenchPlan, index: number, goodput: (w: number, rtt: number) => number): BenchRunResult {
  const s = plan.settings[index];
  if (s === undefined) throw new RangeError(`no setting ${index}`);
  const g = goodput(s.window, s.rttMs ?? 1);
  return {
    index,
    repeat: s.repeat,
    transport: s.transport,
    link: s.link,
    rttMs: s.rttMs ?? null,
    lossPct: s.lossPct ?? null,
    window: s.window,
    streams: s.streams,
    connections: s.connections,
    sessionConnections: s.sessionConnections,
    connectionsUsed: s.connections,
    ok: true,
    error: null,
    effectiveWindow: s.window,
    effectiveStreams: s.streams,
    payloadBytes: 409600,
    files: 100,
    seconds: (409600 * 8) / g,
    dataSeconds: (409600 * 8) / g / 2,
    goodputBitsPerSec: g,
    dataGoodputBitsPerSec: 2 * g,
    linkPct: (100 * g) / 100e6,
    revisionsPerSec: 100 / ((409600 * 8) / g),
    pingMs: { min: s.rttMs ?? 1, median: (s.rttMs ?? 1) + 1, max: (s.rttMs ?? 1) + 2, samples: 5 },
    transportRttMs: [s.rttMs ?? 1],
    lostPackets: [index % 3],
    congestionWindowBytes: [12_000 * s.window],
    wireBytes: 450_000,
    chunksSent: 100,
    chunksSkipped: 0,
    relay: { droppedLoss: 0, droppedQueue: 1, droppedOverflow: 0, forwarded: 500 },
    kernelUdpDrops: 0,
    reconcileBytes: null,
    roundTrips: null,
  };
}

export function fakeReport(
  options: { accurate?: boolean; repeat?: number; failIndex?: number } = {},
): BenchRunnerReport {
  const plan = planBench(
    {
      simulate: 'rtt=50ms,rate=100mbit',
      workload: 'revisions',
      window: '1,4,16',
      streams: '1',
      rtt: '1,5,50,100',
      repeat: options.repeat ?? 1,
    },
    { window: 32, streams: 4 },
    'fixture',
  );
  const runs = plan.settings.map((s) => {
    const r = fakeRun(plan, s.index, (w, rtt) => ((1e6 * w) / rtt) * (1 + s.repeat * 0.1));
    return s.index === options.failIndex ? { ...r, ok: false, error: 'TIMEOUT: no ack in 15000 ms' } : r;
  });
  return {
    conditions: {
      cpuModel: 'Test CPU',
      cores: 2,
      memGiB: 24,
      node: 'v20.0.0',
      os: 'linux test x64',
      date: '2026-01-01T00:00:00.000Z',
      loadAverage1m: 1.5,
      udpBuffers: { rmemMax: 4194304, wmemMax: 4194304, rmemDefault: 212992, wmemDefault: 212992 },
      heapGrowthPacing: true,
      loadAverageStart: [1.5, 1.2, 1],
      loadAverageEnd: [1.6, 1.3, 1.1],
      fileCreate: { dir: '/tmp', medianMicros: 12.5 },
    },
    plan,
    relayChecks: plan.links.map((l, i) =>
      accuracy(`rtt=${l.rttMs}ms,rate=100mbit`, options.accurate !== false || i !== 2),
    ),
    relayAccurate: options.accurate !== false,
    relayFloor: { directMs: 0.09, relayedMs: 20.41, referenceRttMs: 20, compensationMs: 0.32 },
    runs,
    remoteBase: plan.remoteBase,
    notes: ['a note'],
    startedAt: '2026-01-01T00:00:00.000Z',
    wallSeconds: 12.5,
  };
}
