// Report shapes: the JSON document's conditions, medians and ratios; CSV rows; the table and its
// loud warning when the relay was off.
import t from 'tap';
import { formatColumns, formatTable, summarize, toBenchJson, toCsv } from '../../src/benchkit/report.js';
import { fakeReport } from './fixtures.js';

t.test('JSON: every condition, settings, relay accuracy, one summary row per setting', async (t) => {
  const json = toBenchJson(fakeReport());
  t.equal(json.tool, 'clawpeer bench');
  t.match(json.conditions, {
    cpuModel: 'Test CPU',
    cores: 2,
    node: 'v20.0.0',
    loadAverageStart: [1.5, 1.2, 1],
    loadAverageEnd: [1.6, 1.3, 1.1],
  });
  t.match(json.workload, {
    kind: 'revisions',
    revisions: 100,
    pageBytes: 4096,
    payloadBytes: 409600,
    files: 100,
    dataType: /incompressible/,
  });
  t.match(json.target, { kind: 'simulate', spec: 'rtt=50ms,rate=100mbit', linkRateBitsPerSec: 100e6 });
  t.same(json.settings, {
    transports: ['quic'],
    links: ['rtt=1ms,rate=100mbit', 'rtt=5ms,rate=100mbit', 'rtt=50ms,rate=100mbit', 'rtt=100ms,rate=100mbit'],
    windows: [1, 4, 16],
    streams: [1],
    connections: [1],
    sessionConnections: [1],
    repeat: 1,
    runs: 12,
    warmupBytes: 0,
  });
  t.equal(json.relayAccurate, true);
  t.equal(json.relayAccuracy.length, 4);
  t.match(json.relayAccuracy[0], {
    ok: true,
    rtt: { measuredMs: 50.4 },
    rate: { measuredBitsPerSec: 99.5e6 },
    loss: { measuredPct: 0 },
  });
  t.same(json.thresholds, { rttPct: 5, ratePct: 5, lossPoints: 0.2 });
  t.same(json.warnings, []);
  t.equal(json.summary.length, 12);
  t.equal(json.runs.length, 12);
  // Goodput is proportional to W here, so W16 / W1 is 16 on every link.
  const w16 = json.summary.filter((r) => r.window === 16);
  t.same(
    w16.map((r) => r.ratioToBaseline),
    [16, 16, 16, 16],
  );
  t.same(w16[0]?.baseline, { window: 1, streams: 1, connections: 1 });
  t.same(JSON.parse(JSON.stringify(json)), json, 'plain JSON: survives a round trip');
});

t.test('repeats fold into medians; failures are counted and reported', async (t) => {
  const report = fakeReport({ repeat: 3, failIndex: 0 });
  const rows = summarize(report);
  t.equal(rows.length, 12);
  const first = rows[0];
  t.match(first, { window: 1, rttMs: 1, runs: 3, failed: 1 });
  // Repeats 1 and 2 are 1.1x and 1.2x of 1 Mbit/s: the median of the two good runs is 1.15 Mbit/s.
  t.equal(first?.goodputBitsPerSec, 1_150_000);
  const json = toBenchJson(report);
  t.match(json.warnings, [/run 1 \(quic rtt=1ms,rate=100mbit W=1 streams=1 conns=1\) failed: TIMEOUT/]);
});

t.test('an inaccurate relay: relayAccurate false, a WARNING line in warnings and in the table', async (t) => {
  const json = toBenchJson(fakeReport({ accurate: false }));
  t.equal(json.relayAccurate, false);
  t.match(json.warnings, [/^WARNING: relay inaccurate for rtt=50ms,rate=100mbit: RTT off by 16\.0% \(limit 5%\)/]);
  const table = formatTable(json);
  t.match(table, /relay self-check rtt=50ms,rate=100mbit: INACCURATE/);
  t.match(table, /\nWARNING: relay inaccurate/);
});

t.test('table: a header, one line per setting, the machine and load', async (t) => {
  const table = formatTable(toBenchJson(fakeReport()));
  t.match(table, /machine: Test CPU, 2 cores, node v20\.0\.0/);
  t.match(
    table,
    /UDP buffers: rmem_max 4096 KiB, wmem_max 4096 KiB \(defaults 208 KiB, 208 KiB\)\n/,
    'maxima of 4 MiB are enough: no warning',
  );
  t.match(table, /\nfile create: 12\.5 µs \(median\) under \/tmp, where the simulated peer writes\n/);
  t.match(
    table,
    /\nrelay floor: 0\.32 ms per round trip \(a relay thread delaying 20 ms: 20\.41 ms; direct loopback 0\.09 ms\), taken off each UDP link's RTT\n/,
  );
  const small = fakeReport();
  const clamped = formatTable(
    toBenchJson({
      ...small,
      conditions: { ...small.conditions, udpBuffers: { ...small.conditions.udpBuffers, rmemMax: 212992 } },
    }),
  );
  t.match(
    clamped,
    /UDP buffers: rmem_max 208 KiB, .*: SMALL, the kernel clamps QUIC's socket buffers/,
    'a small maximum is called out',
  );
  t.match(table, /load average 1\.5 1\.2 1 at start/);
  const lines = table.split('\n');
  const header = lines.findIndex((l) => l.startsWith('transport'));
  t.ok(header > 0);
  t.match(lines[header], /goodput Mbit\/s.*% link.*rev\/s.*x baseline.*ping ms.*lost pkts.*cwnd KiB/);
  t.equal(lines.slice(header + 2).filter((l) => l.startsWith('quic ')).length, 12);
  t.match(table, /16\.00x/);
  t.equal(
    formatColumns(
      ['a', 'b', 'n'],
      [
        ['x', 'yy', '1'],
        ['xxx', 'y', '22'],
      ],
    ),
    'a    b    n\n---  --  --\nx    yy   1\nxxx  y   22',
  );
});

/** Splits one CSV line, honouring quotes (RFC 4180). */
function csvFields(line: string): string[] {
  const out: string[] = [];
  const re = /("(?:[^"]|"")*"|[^,]*)(,|$)/gy;
  let m: RegExpExecArray | null;
  while ((m = re.exec(line)) !== null) {
    const f = m[1] ?? '';
    out.push(f.startsWith('"') ? f.slice(1, -1).replaceAll('""', '"') : f);
    if (m[2] === '') break;
  }
  return out;
}

t.test('CSV: a header and one row per run, per-connection values joined, quoting', async (t) => {
  const json = toBenchJson(fakeReport({ failIndex: 1 }));
  const lines = toCsv(json).trimEnd().split('\n');
  t.equal(lines.length, 13);
  const header = csvFields(lines[0] ?? '');
  t.equal(header[0], 'index');
  t.ok(header.includes('goodputBitsPerSec') && header.includes('lossPct') && header.includes('congestionWindowBytes'));
  const failed = lines[2] ?? '';
  t.match(failed, /,false,TIMEOUT: no ack in 15000 ms,/);
  t.equal(csvFields(failed)[header.indexOf('link')], 'rtt=1ms,rate=100mbit', 'a link with commas is one quoted field');
  const quoted = toCsv({ ...json, runs: [{ ...json.runs[0]!, error: 'a, "b"' }] });
  t.match(quoted, /"a, ""b"""/);
  for (const l of lines.slice(1)) t.equal(csvFields(l).length, header.length, 'every row has every column');
});

t.test('kernel UDP drops during runs: in the summary and the CSV, and a warning naming the count', async (t) => {
  const clean = toBenchJson(fakeReport());
  t.notOk(
    clean.warnings.some((w) => /kernel dropped/.test(w)),
    'no drops, no warning',
  );
  const r = fakeReport();
  const dropped = { ...r, runs: r.runs.map((run, i) => (i === 0 ? { ...run, kernelUdpDrops: 7 } : run)) };
  const json = toBenchJson(dropped);
  t.match(json.warnings, [/the kernel dropped 7 UDP datagrams at full socket buffers/]);
  const first = dropped.runs[0];
  const row = json.summary.find(
    (s) => first !== undefined && s.link === first.link && s.window === first.window && s.streams === first.streams,
  );
  t.ok(row !== undefined && row.kernelUdpDrops !== null && row.kernelUdpDrops > 0, 'the summary row carries the drops');
  const csv = toCsv(json).split('\n');
  const header = csvFields(csv[0] ?? '');
  t.equal(csvFields(csv[1] ?? '')[header.indexOf('kernelUdpDrops')], '7');
});

t.test('slow file creates in the work directory: a warning naming the directory and the cost', async (t) => {
  t.notOk(
    toBenchJson(fakeReport()).warnings.some((w) => /creating a file/.test(w)),
    '12.5 µs: no warning',
  );
  const r = fakeReport();
  const slow = toBenchJson({ ...r, conditions: { ...r.conditions, fileCreate: { dir: '/tmp', medianMicros: 260.4 } } });
  t.match(slow.warnings, [/^WARNING: creating a file under \/tmp takes 260\.4 µs .*--work-dir/]);
  t.same(slow.conditions.fileCreate, { dir: '/tmp', medianMicros: 260.4 }, 'the JSON records the condition');
  const peer = toBenchJson({ ...r, conditions: { ...r.conditions, fileCreate: null } });
  t.notOk(
    peer.warnings.some((w) => /creating a file/.test(w)),
    'a real peer: not measured, no warning',
  );
});
