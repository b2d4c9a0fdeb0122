// Benchmark for relay/: how close the UDP impairment relay comes to the link it is told to
// simulate, over the matrix issue 5 benchmarks on (RTT 1/5/50/100 ms x rate 10/100 Mbit/s x
// loss 0/0.1/1%), and what it costs in CPU.
//
// Each setting: a fresh relay (on its own worker thread, as `bench --simulate` should run it, or
// in-process with placement 'in-process') in front of a local UDP echo, measured by
// relay/accuracy.ts (RTT median/p99 of spaced probes; delivered rate of a burst paced at 110%
// of the rate, timed at the echo; one-way loss over N numbered probes) against the thresholds
// of the issue (5% RTT and rate, 0.2 points loss). Baseline, same run: the relay with no
// impairment at all (its own forwarding latency, the floor under every RTT). CPU: the relay
// thread's event-loop active time (its CPU time, near enough) and process.cpuUsage() of the
// whole process (relay + probe + echo), both per second of wall time.
// Probe payloads are zero-filled (content is irrelevant to a relay that never reads it).
// Run: node .build-x/bench/relay-accuracy.js  (writes bench/results/relay-accuracy.json);
// main({ smoke: true }) runs one tiny setting and writes nothing.
import { arch, cpus, loadavg, platform, release } from 'node:os';
import { performance } from 'node:perf_hooks';
import type { AccuracyProbeOptions, AccuracyReport } from '../src/relay/accuracy.js';
import {
  LOSS_TOLERANCE_POINTS,
  probeRelayAccuracy,
  RATE_TOLERANCE_PCT,
  RTT_TOLERANCE_PCT,
  startUdpEcho,
} from '../src/relay/accuracy.js';
import { startUdpRelayWorker } from '../src/relay/relay-worker.js';
import { startUdpRelay } from '../src/relay/udp-relay.js';
import { runAsScript, writeJsonFile, writeResult } from './common.js';

export interface RelayAccuracyBenchOptions {
  /** One tiny setting: checks the benchmark runs; writes nothing unless outFile is set. */
  readonly smoke?: boolean;
  readonly outFile?: string;
  /** Where the relay runs (default 'worker'). */
  readonly placement?: 'worker' | 'in-process';
  readonly verbose?: boolean;
}

const RTTS_MS = [1, 5, 50, 100];
const RATES_MBIT = [10, 100];
const LOSSES_PCT = [0, 0.1, 1];

interface Setting {
  readonly spec: string;
  readonly report: AccuracyReport;
  readonly wallMs: number;
  readonly relayCpu: { readonly activeMs: number | null; readonly activePerSecond: number | null };
  readonly processCpu: { readonly userMs: number; readonly systemMs: number; readonly perSecond: number };
  readonly relayTiming: unknown;
  readonly relayCounters: unknown;
}

async function measure(
  spec: string,
  probe: Omit<AccuracyProbeOptions, 'spec' | 'relay' | 'echo'>,
  placement: 'worker' | 'in-process',
): Promise<Setting> {
  const echo = await startUdpEcho();
  try {
    const listen = { host: '127.0.0.1', port: 0 };
    const relay =
      placement === 'worker'
        ? await startUdpRelayWorker({ listen, target: echo.address, spec, seed: 1 })
        : await startUdpRelay({ listen, target: echo.address, spec, seed: 1 });
    try {
      const before = await relay.stats();
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      const report = await probeRelayAccuracy({ ...probe, spec, relay: relay.address, echo });
      const wallMs = performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      const after = await relay.stats();
      const active =
        'eventLoop' in after && 'eventLoop' in before ? after.eventLoop.activeMs - before.eventLoop.activeMs : null;
      return {
        spec,
        report,
        wallMs: Math.round(wallMs),
        relayCpu: {
          activeMs: active === null ? null : Math.round(active),
          activePerSecond: active === null ? null : round3(active / wallMs),
        },
        processCpu: {
          userMs: Math.round(cpu.user / 1000),
          systemMs: Math.round(cpu.system / 1000),
          perSecond: round3((cpu.user + cpu.system) / 1000 / wallMs),
        },
        relayTiming: after.timing,
        relayCounters: after.counters,
      };
    } finally {
      await relay.close();
    }
  } finally {
    await echo.close();
  }
}

const round3 = (x: number): number => Math.round(x * 1000) / 1000;

export async function main(options: RelayAccuracyBenchOptions = {}) {
  const smoke = options.smoke ?? false;
  const placement = options.placement ?? 'worker';
  const log = (s: string): void => {
    if (options.verbose === true) process.stderr.write(`relay-accuracy: ${s}\n`);
  };
  const probe = smoke
    ? { rttProbes: 10, rateDurationMs: 100, lossProbes: 200 }
    : { rttProbes: 200, rateDurationMs: 1000, lossProbes: 20_000 };
  const specs = smoke
    ? ['rtt=5ms,rate=10mbit,loss=1%']
    : RTTS_MS.flatMap((rtt) =>
        RATES_MBIT.flatMap((rate) => LOSSES_PCT.map((loss) => `rtt=${rtt}ms,rate=${rate}mbit,loss=${loss}%`)),
      );
  const loadBefore = loadavg();

  const baseline = await measure('none', { ...probe, lossProbes: Math.min(probe.lossProbes, 2000) }, placement);
  log(`baseline (no impairment): RTT median ${baseline.report.rtt.measuredMs} ms, p99 ${baseline.report.rtt.p99Ms} ms`);
  const settings: (Setting & { readonly rttRatioToExpected: number; readonly rttAboveBaselineMs: number })[] = [];
  for (const spec of specs) {
    const s = await measure(spec, probe, placement);
    const r = s.report;
    log(
      `${spec}: rtt ${r.rtt.measuredMs}/${r.rtt.expectedMs} ms (${r.rtt.errorPct}%), rate ${r.rate?.measuredBitsPerSec ?? '-'} (${r.rate?.errorPct ?? '-'}%), loss ${r.loss.measuredPct}% (${r.loss.errorPoints} pts) ${r.ok ? 'ok' : 'OFF'}; relay CPU ${s.relayCpu.activePerSecond ?? '-'}`,
    );
    settings.push({
      ...s,
      rttRatioToExpected: round3(r.rtt.measuredMs / r.rtt.expectedMs),
      rttAboveBaselineMs: round3(r.rtt.measuredMs - r.rtt.expectedMs - baseline.report.rtt.measuredMs),
    });
  }

  const result = {
    bench: 'relay-accuracy',
    date: new Date().toISOString(),
    smoke,
    conditions: {
      machine: cpus()[0]?.model ?? 'unknown',
      cores: cpus().length,
      node: process.version,
      platform: `${platform()}-${arch()} ${release()}`,
      loadAverageBefore: loadBefore.map(round3),
      loadAverageAfter: loadavg().map(round3),
      relayPlacement: placement,
      note: 'shared 2-core machine: other processes may run (see load averages); loopback only',
    },
    method: {
      thresholds: { rttPct: RTT_TOLERANCE_PCT, ratePct: RATE_TOLERANCE_PCT, lossPoints: LOSS_TOLERANCE_POINTS },
      probe,
      data: 'zero-filled UDP payloads: 64-byte RTT and loss probes, 1200-byte rate probes',
      rate: 'burst paced at 110% of the rate, delivered rate timed at the echo (first to last arrival)',
      loss: 'one-way, counted unique at the echo, probes paced at <= half the rate',
      baseline: 'same relay with no impairment: its own forwarding latency',
    },
    baseline: {
      spec: 'none',
      rttMedianMs: baseline.report.rtt.measuredMs,
      rttP99Ms: baseline.report.rtt.p99Ms,
      relayCpu: baseline.relayCpu,
    },
    summary: {
      settings: settings.length,
      ok: settings.filter((s) => s.report.ok).length,
      rttOk: settings.filter((s) => s.report.rtt.ok).length,
      rateOk: settings.filter((s) => s.report.rate?.ok ?? true).length,
      lossOk: settings.filter((s) => s.report.loss.ok).length,
    },
    settings,
  };

  if (!smoke || options.outFile !== undefined) {
    log(
      `wrote ${await (options.outFile === undefined ? writeResult('relay-accuracy', result) : writeJsonFile(options.outFile, result))}`,
    );
  }
  return result;
}

runAsScript(import.meta.url, async ({ smoke, has }) => {
  await main({ smoke, placement: has('--in-process') ? 'in-process' : 'worker', verbose: true });
});
