// `clawpeer bench --simulate` end to end, as a user runs it (the real CLI as a spawned process,
// through test/e2e/cli-harness.ts): the JSON document's structure, the
// SVG's structure, CSV output, and usage errors. Timings are not asserted (shared, loaded CI).
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { runCli, type CliResult } from '../e2e/cli-harness.js';
import { findAll, parseXml } from '../benchkit/xml.js';

const RUN_TIMEOUT_MS = 60_000;

function bench(args: readonly string[]): Promise<CliResult> {
  return runCli(['bench', ...args], { timeoutMs: RUN_TIMEOUT_MS });
}

const work = await mkdtemp(path.join(tmpdir(), 'clawpeer-bench-e2e-'));
t.teardown(() => rm(work, { recursive: true, force: true }));

t.test('--simulate --json --svg: one JSON object with every condition, and a chart', async (t) => {
  const svgFile = path.join(work, 'chart.svg');
  const r = await bench([
    '--simulate',
    'rtt=10ms,rate=50mbit',
    '--size',
    '256KiB',
    '--window',
    '1,4',
    '--streams',
    '1',
    '--json',
    '--svg',
    svgFile,
    '--work-dir',
    work,
  ]);
  t.equal(r.code, 0, r.stderr);
  const lines = r.stdout.trim().split('\n');
  t.equal(lines.length, 1, 'one JSON object on stdout, nothing else');
  const json = JSON.parse(lines[0] ?? '{}') as Record<string, unknown>;
  t.match(json, {
    event: 'bench',
    tool: 'clawpeer bench',
    conditions: {
      cpuModel: String,
      cores: Number,
      node: process.version,
      loadAverageStart: Array,
      loadAverageEnd: Array,
      fileCreate: { dir: work, medianMicros: Number },
    },
    workload: { kind: 'large', bytes: 262144, payloadBytes: 262144, dataType: /incompressible/ },
    target: { kind: 'simulate', spec: 'rtt=10ms,rate=50mbit', linkRateBitsPerSec: 50e6 },
    settings: { transports: ['quic'], windows: [1, 4], streams: [1], connections: [1], runs: 2 },
    relayAccurate: Boolean,
    relayFloor: { directMs: Number, relayedMs: Number, referenceRttMs: 20, compensationMs: Number },
    thresholds: { rttPct: 5, ratePct: 5, lossPoints: 0.2 },
  });
  const accuracy = json['relayAccuracy'] as Record<string, unknown>[];
  t.equal(accuracy.length, 1);
  t.match(accuracy[0], {
    link: 'rtt=10ms,rate=50mbit',
    ok: Boolean,
    rtt: { configuredMs: 10, measuredMs: Number },
    rate: { configuredBitsPerSec: 50e6, measuredBitsPerSec: Number },
    loss: { configuredPct: 0 },
  });
  t.equal(json['relayAccurate'], accuracy[0]?.['ok']);
  if (json['relayAccurate'] === false)
    t.match(r.stderr, /WARNING: relay inaccurate for rtt=10ms,rate=50mbit/, 'an inaccurate relay is said on stderr');
  const runs = json['runs'] as Record<string, unknown>[];
  t.equal(runs.length, 2);
  for (const [i, run] of runs.entries()) {
    t.match(run, {
      ok: true,
      error: null,
      transport: 'quic',
      window: [1, 4][i],
      streams: 1,
      connections: 1,
      effectiveWindow: [1, 4][i],
      payloadBytes: 262144,
      seconds: Number,
      goodputBitsPerSec: Number,
      linkPct: Number,
      pingMs: { samples: 5, median: Number },
      transportRttMs: [Number],
      lostPackets: [Number],
      congestionWindowBytes: [Number],
      chunksSkipped: 0,
      relay: { droppedLoss: 0, forwarded: Number },
    });
    t.ok((run['wireBytes'] as number) >= 262144, 'the payload crossed the wire');
    // The relay delays by 10 ms less its own measured forwarding latency (relay-floor.ts), which
    // a busy host can overestimate: what it must add for certain is the rest.
    const relayDelayMs = 10 - (json['relayFloor'] as { compensationMs: number }).compensationMs;
    t.ok(
      (run['pingMs'] as { median: number }).median >= relayDelayMs,
      `pings cross the relay's ${relayDelayMs.toFixed(2)} ms of the simulated 10 ms`,
    );
  }
  // Both runs share one relay (started once per link): its counters must still be per run.
  const forwarded = runs.map((run) => (run['relay'] as { forwarded: number }).forwarded);
  t.ok(
    forwarded[1]! < 1.6 * forwarded[0]!,
    `the second run's relay count is its own, not the total (${forwarded.join(', ')} packets)`,
  );
  t.equal((json['summary'] as unknown[]).length, 2);

  const doc = parseXml(await readFile(svgFile, 'utf8'));
  const root = doc.children[0];
  t.equal(root?.name, 'svg');
  t.equal(findAll(root!, 'polyline').length, 1, 'one series: only the window was swept');
  const texts = findAll(root!, 'text').map((e) => e.text);
  t.ok(texts.includes('window W (unacknowledged chunks per stream)'), 'x label');
  t.ok(
    texts.some((x) => x.startsWith('goodput, Mbit/s')),
    'y label',
  );
});

t.test('--csv: a header and one row per run; striping over 2 connections moves every file', async (t) => {
  const r = await bench([
    '--simulate',
    'none',
    '--workload',
    'small',
    '--files',
    '20',
    '--file-size',
    '1KiB',
    '--streams',
    '2',
    '--connections',
    '1,2',
    '--csv',
  ]);
  t.equal(r.code, 0, r.stderr);
  const lines = r.stdout.trim().split('\n');
  t.equal(lines.length, 3);
  t.match(lines[0], /^index,repeat,transport,link,/);
  t.match(lines[1], /^0,0,quic,none,/);
  t.match(lines[2], /^1,0,quic,none,/);
  const header = lines[0]?.split(',') ?? [];
  const row = lines[2]?.split(',') ?? [];
  const col = (name: string): string | undefined => row[header.indexOf(name)];
  t.equal(col('connections'), '2');
  t.equal(col('ok'), 'true', r.stderr);
  t.equal(col('payloadBytes'), String(20 * 1024), 'both stripes arrived');
  t.equal(col('transportRttMs')?.split(';').length, 2, 'one RTT per connection');
});

t.test('--workload sync: a timed second sync after D files changed, with its reconciliation cost', async (t) => {
  const r = await bench(['--simulate', 'rtt=2ms', '--workload', 'sync', '--files', '30', '--changed', '3', '--json']);
  t.equal(r.code, 0, r.stderr);
  const json = JSON.parse(r.stdout.trim()) as Record<string, unknown>;
  t.match(json, { workload: { kind: 'sync', folderFiles: 30, changed: 3, files: 3, payloadBytes: 3 * 4096 } });
  const run = (json['runs'] as Record<string, unknown>[])[0];
  t.match(run, {
    ok: true,
    error: null,
    payloadBytes: 3 * 4096,
    files: 3,
    seconds: Number,
    reconcileBytes: Number,
    roundTrips: Number,
  });
  t.ok((run?.['reconcileBytes'] as number) > 0, 'finding the difference cost bytes');
  t.ok((run?.['roundTrips'] as number) >= 1);
  t.ok((run?.['wireBytes'] as number) >= 3 * 4096, 'the changed files crossed the wire');
  t.ok((run?.['wireBytes'] as number) < 30 * 4096, 'but not the unchanged ones');
});

t.test('usage errors exit 2 and name the flag', async (t) => {
  const none = await bench(['--size', '1MiB']);
  t.equal(none.code, 2);
  t.match(none.stderr, /--peer NAME .* or --simulate SPEC/);
  const bad = await bench(['--simulate', 'rtt=5ms', '--window', '1,zero']);
  t.equal(bad.code, 2);
  t.match(bad.stderr, /--window "1,zero"/);
  const both = await bench(['--simulate', 'rtt=5ms', '--json', '--csv']);
  t.equal(both.code, 2);
  const missing = path.join(work, 'no-such-dir');
  const noDir = await bench(['--simulate', 'rtt=5ms', '--work-dir', missing]);
  t.equal(noDir.code, 2);
  t.match(noDir.stderr, `--work-dir ${missing}: no such directory`);
  await writeFile(path.join(work, 'a-file'), '');
  const notDir = await bench(['--simulate', 'rtt=5ms', '--work-dir', path.join(work, 'a-file')]);
  t.equal(notDir.code, 2);
  t.match(notDir.stderr, /--work-dir .*a-file: not a directory/);
});
