// Bench results for people and machines: the JSON document (every condition recorded), a CSV of
// every run, and the human table (one row per setting, repeats folded into their median).
//
// Goals: a number never travels without its conditions (machine, cores, load averages, sizes,
// data type, settings, relay accuracy); a loud WARNING when the simulated link was off by more
// than the issue's thresholds; each row compared, as a ratio, with the baseline measured in the
// same bench (the first window/stream/connection value on the same link).
// Non-goals: I/O (the CLI prints and writes files), plotting (svg.ts). Pure functions of the
// runner's report.
import { LOSS_TOLERANCE_POINTS, RATE_TOLERANCE_PCT, RTT_TOLERANCE_PCT } from '../relay/accuracy.js';
import { formatImpairSpec } from '../relay/impair-spec.js';
import { describeWorkload, workloadBytes, workloadFiles, type BenchTransport } from './bench-plan.js';
import type { BenchRunnerReport, BenchRunResult, RelayCheckResult } from './bench-results.js';
import { SLOW_FILE_CREATE_MICROS, type BenchConditions } from './machine.js';
import { MIN_UDP_BUFFER_BYTES } from '../transport/udp-buffers.js';
import { median } from './stats.js';

export const DATA_TYPE = 'incompressible: random bytes, fresh for every run (the receiver cannot dedup them)';

/** One setting, its repeats folded: medians over the successful runs. */
export interface SummaryRow extends Pick<
  BenchRunResult,
  'transport' | 'link' | 'rttMs' | 'lossPct' | 'window' | 'streams' | 'connections' | 'sessionConnections'
> {
  readonly runs: number;
  /** Connections the sessions had at the end (median over runs): what 'auto' grew to. */
  readonly connectionsUsed: number | null;
  readonly failed: number;
  readonly goodputBitsPerSec: number | null;
  readonly dataGoodputBitsPerSec: number | null;
  readonly linkPct: number | null;
  readonly revisionsPerSec: number | null;
  readonly seconds: number | null;
  readonly pingMedianMs: number | null;
  readonly transportRttMs: number | null;
  /** Summed over connections. */
  readonly lostPackets: number | null;
  readonly congestionWindowBytes: number | null;
  readonly relayDroppedLoss: number | null;
  readonly relayDroppedQueue: number | null;
  /** Datagrams the kernel dropped at full UDP socket buffers during the run (any process on this machine). */
  readonly kernelUdpDrops: number | null;
  /** Sync workload: bytes spent finding the difference and round trips of the timed sync. */
  readonly reconcileBytes: number | null;
  readonly roundTrips: number | null;
  readonly wireBytes: number | null;
  /** goodput / the baseline row's goodput (same transport and link; first window, streams, connections). */
  readonly ratioToBaseline: number | null;
  readonly dataRatioToBaseline: number | null;
  readonly baseline: { readonly window: number; readonly streams: number; readonly connections: number };
}

export interface RelayAccuracySummary {
  readonly link: string;
  readonly ok: boolean;
  readonly placement: string;
  readonly rtt: {
    readonly configuredMs: number;
    readonly expectedMs: number;
    readonly measuredMs: number;
    readonly p99Ms: number;
    readonly errorPct: number | null;
    readonly ok: boolean;
  };
  readonly rate: {
    readonly configuredBitsPerSec: number;
    readonly measuredBitsPerSec: number;
    readonly errorPct: number;
    readonly ok: boolean;
  } | null;
  readonly loss: {
    readonly configuredPct: number;
    readonly measuredPct: number;
    readonly errorPoints: number;
    readonly ok: boolean;
  };
  readonly warnings: readonly string[];
}

export interface BenchJson {
  readonly tool: 'clawpeer bench';
  readonly startedAt: string;
  readonly wallSeconds: number;
  readonly conditions: BenchRunnerReport['conditions'];
  readonly workload: Record<string, unknown> & {
    readonly description: string;
    readonly dataType: string;
    readonly payloadBytes: number;
    readonly files: number;
  };
  readonly target: Record<string, unknown>;
  readonly settings: {
    readonly transports: BenchTransport[];
    readonly links: string[];
    readonly windows: number[];
    readonly streams: number[];
    readonly connections: number[];
    readonly sessionConnections: (number | 'auto')[];
    readonly repeat: number;
    readonly runs: number;
    /** Untimed bytes pushed per connection before each run (0: cold connections). */
    readonly warmupBytes: number;
  };
  readonly relayAccurate: boolean;
  readonly relayAccuracy: RelayAccuracySummary[];
  /** The relay thread's own forwarding latency, taken off each UDP link's RTT (relay-floor.ts). */
  readonly relayFloor: BenchRunnerReport['relayFloor'];
  readonly thresholds: { readonly rttPct: number; readonly ratePct: number; readonly lossPoints: number };
  readonly warnings: string[];
  readonly notes: string[];
  readonly remoteBase: string;
  readonly summary: SummaryRow[];
  readonly runs: BenchRunResult[];
}

const unique = <T>(xs: readonly T[]): T[] => [...new Set(xs)];

/** Median, or null for no samples (a setting whose runs all failed). */
function medianOrNull(xs: readonly number[]): number | null {
  return xs.length === 0 ? null : median(xs);
}

const round = (x: number | null, digits = 3): number | null =>
  x === null ? null : Math.round(x * 10 ** digits) / 10 ** digits;
const sum = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0);

function summarizeAccuracy(c: RelayCheckResult): RelayAccuracySummary {
  const r = c.report;
  return {
    link: c.link,
    ok: c.ok,
    placement: c.placement,
    rtt: {
      configuredMs: r.rtt.configuredMs,
      expectedMs: r.rtt.expectedMs,
      measuredMs: r.rtt.measuredMs,
      p99Ms: r.rtt.p99Ms,
      errorPct: r.rtt.errorPct,
      ok: r.rtt.ok,
    },
    rate:
      r.rate === null
        ? null
        : {
            configuredBitsPerSec: r.rate.configuredBitsPerSec,
            measuredBitsPerSec: r.rate.measuredBitsPerSec,
            errorPct: r.rate.errorPct,
            ok: r.rate.ok,
          },
    loss: {
      configuredPct: r.loss.configuredPct,
      measuredPct: r.loss.measuredPct,
      errorPoints: r.loss.errorPoints,
      ok: r.loss.ok,
    },
    warnings: r.warnings,
  };
}

/** One line per check: measured vs configured, for printing next to the results. */
export function describeAccuracy(a: RelayAccuracySummary): string {
  const parts = [
    `RTT ${a.rtt.measuredMs.toFixed(2)} ms vs ${a.rtt.expectedMs.toFixed(2)} expected (${a.rtt.errorPct === null ? 'n/a' : `${a.rtt.errorPct.toFixed(1)}%`} off)`,
  ];
  if (a.rate !== null)
    parts.push(
      `rate ${(a.rate.measuredBitsPerSec / 1e6).toFixed(2)} Mbit/s vs ${(a.rate.configuredBitsPerSec / 1e6).toFixed(2)} (${a.rate.errorPct.toFixed(1)}% off)`,
    );
  parts.push(
    `loss ${a.loss.measuredPct.toFixed(3)}% vs ${a.loss.configuredPct}% (${a.loss.errorPoints.toFixed(3)} points off)`,
  );
  return `relay self-check ${a.link}: ${a.ok ? 'ok' : 'INACCURATE'}: ${parts.join('; ')}`;
}

/** The loud line for a link off by more than the thresholds. */
export function inaccuracyWarning(a: RelayAccuracySummary): string {
  const bad: string[] = [];
  if (!a.rtt.ok)
    bad.push(
      `RTT off by ${a.rtt.errorPct === null ? `${Math.abs(a.rtt.measuredMs - a.rtt.expectedMs).toFixed(2)} ms` : `${a.rtt.errorPct.toFixed(1)}%`} (limit ${RTT_TOLERANCE_PCT}%)`,
    );
  if (a.rate !== null && !a.rate.ok)
    bad.push(`rate off by ${a.rate.errorPct.toFixed(1)}% (limit ${RATE_TOLERANCE_PCT}%)`);
  if (!a.loss.ok) bad.push(`loss off by ${a.loss.errorPoints.toFixed(3)} points (limit ${LOSS_TOLERANCE_POINTS})`);
  if (bad.length === 0) bad.push(...a.warnings);
  return `WARNING: relay inaccurate for ${a.link}: ${bad.join('; ')}; results on this link do not describe the configured link`;
}

const groupKey = (r: {
  transport: string;
  link: string;
  window: number;
  streams: number;
  connections: number;
  sessionConnections: number | 'auto';
}): string => `${r.transport}|${r.link}|${r.window}|${r.streams}|${r.connections}|${r.sessionConnections}`;

/** Folds repeats into one row per setting, in run order, with ratios to each link's baseline. */
export function summarize(report: BenchRunnerReport): SummaryRow[] {
  const groups = new Map<string, BenchRunResult[]>();
  for (const run of report.runs) {
    const k = groupKey(run);
    const g = groups.get(k);
    if (g === undefined) groups.set(k, [run]);
    else g.push(run);
  }
  const settings = report.plan.settings;
  const rows = [...groups.values()].map((runs) => {
    const ok = runs.filter((r) => r.ok);
    const first = runs[0];
    if (first === undefined) throw new TypeError('empty group');
    const pick = (f: (r: BenchRunResult) => number | null): number | null =>
      medianOrNull(ok.map(f).filter((x): x is number => x !== null));
    return {
      transport: first.transport,
      link: first.link,
      rttMs: first.rttMs,
      lossPct: first.lossPct,
      window: first.window,
      streams: first.streams,
      connections: first.connections,
      sessionConnections: first.sessionConnections,
      runs: runs.length,
      failed: runs.length - ok.length,
      connectionsUsed: round(
        pick((r) => r.connectionsUsed),
        1,
      ),
      goodputBitsPerSec: round(
        pick((r) => r.goodputBitsPerSec),
        0,
      ),
      dataGoodputBitsPerSec: round(
        pick((r) => r.dataGoodputBitsPerSec),
        0,
      ),
      linkPct: round(
        pick((r) => r.linkPct),
        2,
      ),
      revisionsPerSec: round(
        pick((r) => r.revisionsPerSec),
        2,
      ),
      seconds: round(pick((r) => r.seconds)),
      pingMedianMs: round(pick((r) => r.pingMs?.median ?? null)),
      transportRttMs: round(
        pick((r) => (r.transportRttMs.length === 0 ? null : sum(r.transportRttMs) / r.transportRttMs.length)),
      ),
      lostPackets: round(
        pick((r) => (r.lostPackets === null ? null : sum(r.lostPackets))),
        1,
      ),
      congestionWindowBytes: round(
        pick((r) => (r.congestionWindowBytes === null ? null : sum(r.congestionWindowBytes))),
        0,
      ),
      relayDroppedLoss: round(
        pick((r) => r.relay?.droppedLoss ?? null),
        1,
      ),
      relayDroppedQueue: round(
        pick((r) => r.relay?.droppedQueue ?? null),
        1,
      ),
      kernelUdpDrops: round(
        pick((r) => r.kernelUdpDrops),
        1,
      ),
      reconcileBytes: round(
        pick((r) => r.reconcileBytes),
        0,
      ),
      roundTrips: round(
        pick((r) => r.roundTrips),
        1,
      ),
      wireBytes: round(
        pick((r) => r.wireBytes),
        0,
      ),
    };
  });
  // Baseline per transport and link: the first value of each swept list (as planned).
  const setting0 = {
    window: unique(settings.map((s) => s.window))[0],
    streams: unique(settings.map((s) => s.streams))[0],
    connections: unique(settings.map((s) => s.connections))[0],
    sessionConnections: unique(settings.map((s) => s.sessionConnections))[0],
  };
  const baselineFor = (row: (typeof rows)[number]): (typeof rows)[number] | undefined =>
    rows.find(
      (r) =>
        r.transport === row.transport &&
        r.link === row.link &&
        r.window === setting0.window &&
        r.streams === setting0.streams &&
        r.connections === setting0.connections &&
        r.sessionConnections === setting0.sessionConnections,
    );
  return rows.map((row) => {
    const b = baselineFor(row);
    const ratio = (x: number | null, y: number | null | undefined): number | null =>
      x === null || y === null || y === undefined || y === 0 ? null : round(x / y);
    return {
      ...row,
      ratioToBaseline: ratio(row.goodputBitsPerSec, b?.goodputBitsPerSec),
      dataRatioToBaseline: ratio(row.dataGoodputBitsPerSec, b?.dataGoodputBitsPerSec),
      baseline: {
        window: setting0.window ?? row.window,
        streams: setting0.streams ?? row.streams,
        connections: setting0.connections ?? row.connections,
      },
    };
  });
}

/** The whole JSON document of `--json`. */
export function toBenchJson(report: BenchRunnerReport): BenchJson {
  const { plan } = report;
  const accuracy = report.relayChecks.map(summarizeAccuracy);
  const warnings = accuracy.filter((a) => !a.ok).map(inaccuracyWarning);
  for (const run of report.runs)
    if (!run.ok)
      warnings.push(
        `run ${run.index + 1} (${run.transport} ${run.link} W=${run.window} streams=${run.streams} conns=${run.connections}) failed: ${run.error ?? 'unknown'}`,
      );
  const kernelDrops = report.runs.reduce((a, r) => a + (r.kernelUdpDrops ?? 0), 0);
  if (kernelDrops > 0)
    warnings.push(
      `the kernel dropped ${kernelDrops} UDP datagrams at full socket buffers during the runs (machine-wide, not the relay's doing): losses beyond the configured link`,
    );
  if (report.runs.some((r) => r.chunksSkipped > 0))
    warnings.push('some runs moved less than their payload: the receiver already held chunks of the workload');
  const create = report.conditions.fileCreate;
  if (create !== null && create.medianMicros > SLOW_FILE_CREATE_MICROS) {
    warnings.push(
      `WARNING: creating a file under ${create.dir} takes ${create.medianMicros} µs (median; ~10 µs on a healthy disk): the simulated peer pays that per received file, so per-file results measure the disk (on ext4 without a journal, recently deleted files slow creates for 1-5 minutes); wait, or give --work-dir on another file system or directory`,
    );
  }
  const settings = plan.settings;
  return {
    tool: 'clawpeer bench',
    startedAt: report.startedAt,
    wallSeconds: report.wallSeconds,
    conditions: report.conditions,
    workload: {
      ...plan.workload,
      description: describeWorkload(plan.workload),
      dataType: DATA_TYPE,
      payloadBytes: workloadBytes(plan.workload),
      files: workloadFiles(plan.workload),
    },
    target:
      plan.target.kind === 'simulate'
        ? {
            kind: 'simulate',
            spec: formatImpairSpec(plan.target.spec),
            linkRateBitsPerSec: plan.linkRateBitsPerSec ?? null,
            relay: 'UDP relay on a worker thread (QUIC); TCP relay in-process (TCP)',
          }
        : { kind: 'peer', peer: plan.target.peer, addr: plan.target.addr ?? null },
    settings: {
      transports: unique(settings.map((s) => s.transport)),
      links: unique(settings.map((s) => s.link)),
      windows: unique(settings.map((s) => s.window)),
      streams: unique(settings.map((s) => s.streams)),
      connections: unique(settings.map((s) => s.connections)),
      sessionConnections: unique(settings.map((s) => s.sessionConnections)),
      repeat: Math.max(1, ...settings.map((s) => s.repeat + 1)),
      runs: settings.length,
      warmupBytes: plan.warmupBytes,
    },
    relayAccurate: report.relayAccurate,
    relayAccuracy: accuracy,
    relayFloor: report.relayFloor,
    thresholds: { rttPct: RTT_TOLERANCE_PCT, ratePct: RATE_TOLERANCE_PCT, lossPoints: LOSS_TOLERANCE_POINTS },
    warnings,
    notes: report.notes,
    remoteBase: report.remoteBase,
    summary: summarize(report),
    runs: report.runs,
  };
}

const mbit = (bps: number | null): string => (bps === null ? '-' : (bps / 1e6).toFixed(bps >= 1e7 ? 1 : 2));
const num = (x: number | null, digits = 1): string => (x === null ? '-' : x.toFixed(digits));

/** Pads columns to their widest cell; numbers right-aligned. */
export function formatColumns(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i < 2 ? c.padEnd(widths[i] ?? 0) : c.padStart(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

/** The human table: one row per setting. */
export function formatTable(json: BenchJson): string {
  const revisions = json.workload['kind'] === 'revisions' || json.workload['kind'] === 'revisions-seq';
  const sync = json.workload['kind'] === 'sync';
  const header = [
    'transport',
    'link',
    'W',
    'streams',
    'conns',
    'session conns',
    'goodput Mbit/s',
    '% link',
    'data-phase Mbit/s',
    ...(revisions ? ['rev/s'] : []),
    ...(sync ? ['sync s', 'reconcile B', 'round trips', 'wire KiB'] : []),
    'x baseline',
    'ping ms',
    'transport RTT ms',
    'lost pkts',
    'cwnd KiB',
    'relay drops loss/queue',
    'ok/runs',
  ];
  const rows = json.summary.map((r) => [
    r.transport,
    r.link,
    String(r.window),
    String(r.streams),
    String(r.connections),
    r.sessionConnections === 'auto' ? `auto (${num(r.connectionsUsed, 0)})` : String(r.sessionConnections),
    mbit(r.goodputBitsPerSec),
    num(r.linkPct),
    mbit(r.dataGoodputBitsPerSec),
    ...(revisions ? [num(r.revisionsPerSec)] : []),
    ...(sync
      ? [
          num(r.seconds, 3),
          num(r.reconcileBytes, 0),
          num(r.roundTrips, 1),
          r.wireBytes === null ? '-' : (r.wireBytes / 1024).toFixed(1),
        ]
      : []),
    r.ratioToBaseline === null ? '-' : `${r.ratioToBaseline.toFixed(2)}x`,
    num(r.pingMedianMs, 2),
    num(r.transportRttMs, 1),
    num(r.lostPackets, 0),
    r.congestionWindowBytes === null ? '-' : (r.congestionWindowBytes / 1024).toFixed(0),
    r.relayDroppedLoss === null ? '-' : `${num(r.relayDroppedLoss, 0)}/${num(r.relayDroppedQueue, 0)}`,
    `${r.runs - r.failed}/${r.runs}`,
  ]);
  const c = json.conditions;
  const lines = [
    `clawpeer bench: ${String(json.workload.description)}; ${json.workload.dataType}`,
    `machine: ${c.cpuModel}, ${c.cores} cores, node ${c.node}, ${c.os}; load average ${c.loadAverageStart.join(' ')} at start, ${c.loadAverageEnd.join(' ')} at end`,
    describeUdpBuffers(c.udpBuffers),
    ...(c.fileCreate === null
      ? []
      : [
          `file create: ${c.fileCreate.medianMicros} µs (median) under ${c.fileCreate.dir}, where the simulated peer writes`,
        ]),
    `baseline of "x baseline": W=${json.summary[0]?.baseline.window ?? '-'} streams=${json.summary[0]?.baseline.streams ?? '-'} conns=${json.summary[0]?.baseline.connections ?? '-'} on the same transport and link`,
    ...(json.relayFloor === null
      ? []
      : [
          `relay floor: ${json.relayFloor.compensationMs} ms per round trip (a relay thread delaying ${json.relayFloor.referenceRttMs} ms: ${json.relayFloor.relayedMs} ms; direct loopback ${json.relayFloor.directMs} ms), taken off each UDP link's RTT`,
        ]),
    ...json.relayAccuracy.map(describeAccuracy),
    '',
    formatColumns(header, rows),
  ];
  if (json.notes.length > 0) lines.push('', ...json.notes.map((n) => `note: ${n}`));
  if (json.warnings.length > 0) lines.push('', ...json.warnings);
  return lines.join('\n');
}

/** The socket-buffer line: QUIC's sockets ask for 4 MiB, and net.core.{r,w}mem_max clamp what they get. */
function describeUdpBuffers(b: BenchConditions['udpBuffers']): string {
  const kib = (n: number | null): string => (n === null ? 'unknown' : `${Math.round(n / 1024)} KiB`);
  const text = `UDP buffers: rmem_max ${kib(b.rmemMax)}, wmem_max ${kib(b.wmemMax)} (defaults ${kib(b.rmemDefault)}, ${kib(b.wmemDefault)})`;
  const small =
    (b.rmemMax !== null && b.rmemMax < MIN_UDP_BUFFER_BYTES) ||
    (b.wmemMax !== null && b.wmemMax < MIN_UDP_BUFFER_BYTES);
  return small
    ? `${text}: SMALL, the kernel clamps QUIC's socket buffers and bursts are dropped (see clawpeer doctor for the sysctl fix)`
    : text;
}

const CSV_COLUMNS = [
  'index',
  'repeat',
  'transport',
  'link',
  'rttMs',
  'lossPct',
  'window',
  'streams',
  'connections',
  'sessionConnections',
  'connectionsUsed',
  'ok',
  'error',
  'effectiveWindow',
  'effectiveStreams',
  'payloadBytes',
  'files',
  'seconds',
  'dataSeconds',
  'goodputBitsPerSec',
  'dataGoodputBitsPerSec',
  'linkPct',
  'revisionsPerSec',
  'pingMedianMs',
  'transportRttMs',
  'lostPackets',
  'congestionWindowBytes',
  'wireBytes',
  'chunksSent',
  'chunksSkipped',
  'relayDroppedLoss',
  'relayDroppedQueue',
  'kernelUdpDrops',
  'reconcileBytes',
  'roundTrips',
] as const;

function csvCell(v: unknown): string {
  if (v === null || v === undefined) return '';
  const s = Array.isArray(v)
    ? v.join(';')
    : typeof v === 'string'
      ? v
      : typeof v === 'number' || typeof v === 'boolean'
        ? String(v)
        : JSON.stringify(v);
  return /[",\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}

/** Every run as a CSV row (per-connection values joined by ';'), after a header line. */
export function toCsv(json: BenchJson): string {
  const rows = json.runs.map((r) => {
    const flat: Record<(typeof CSV_COLUMNS)[number], unknown> = {
      ...r,
      pingMedianMs: r.pingMs?.median ?? null,
      relayDroppedLoss: r.relay?.droppedLoss ?? null,
      relayDroppedQueue: r.relay?.droppedQueue ?? null,
    };
    return CSV_COLUMNS.map((c) => csvCell(flat[c])).join(',');
  });
  return [CSV_COLUMNS.join(','), ...rows].join('\n') + '\n';
}
