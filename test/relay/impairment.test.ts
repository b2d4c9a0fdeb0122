import fc from 'fast-check';
import t from 'tap';
import type { Test } from 'tap';
import { parseImpairSpec } from '../../src/relay/impair-spec.js';
import type { DuePacket } from '../../src/relay/impairment.js';
import { createPrng, Impairment } from '../../src/relay/impairment.js';

const pkt = (n: number): Uint8Array => new Uint8Array(n);

/** Feeds `count` packets of `bytes` bytes every `spacingMs` from t=0, then drains; returns the releases. */
function run(
  spec: string,
  count: number,
  bytes: number,
  spacingMs: number,
  seed = 7,
): { out: DuePacket<number>[]; core: Impairment<number> } {
  const core = new Impairment<number>(parseImpairSpec(spec), { seed });
  const out: DuePacket<number>[] = [];
  for (let i = 0; i < count; i++) {
    const now = i * spacingMs;
    out.push(...core.pollTransmit(now));
    core.onPacket(now, pkt(bytes), 'toServer', i);
  }
  out.push(...core.pollTransmit(Infinity));
  return { out, core };
}

/** Binomial bound: |x - n p| <= 5 sigma (fails by chance about once in 1.7 million). */
function withinBinomial(t: Test, x: number, n: number, p: number, what: string): void {
  const sigma = Math.sqrt(n * p * (1 - p));
  t.ok(Math.abs(x - n * p) <= 5 * sigma, `${what}: ${x} within ${n * p} +- ${(5 * sigma).toFixed(1)}`);
}

t.test('delay: each direction adds exactly rtt/2; pollTimeout says when', async (t) => {
  const core = new Impairment(parseImpairSpec('rtt=50ms'));
  t.equal(core.pollTimeout(), undefined, 'nothing in flight');
  t.equal(core.onPacket(100, pkt(10), 'toServer'), 'queued');
  t.equal(core.onPacket(101, pkt(20), 'toClient'), 'queued');
  t.equal(core.pollTimeout(), 125);
  t.same(core.pollTransmit(124.999), [], 'not before it is due');
  const first = core.pollTransmit(125);
  t.equal(first.length, 1);
  t.equal(first[0]?.direction, 'toServer');
  t.equal(first[0]?.releaseAt, 125);
  t.equal(core.pollTimeout(), 126);
  const second = core.pollTransmit(1000);
  t.equal(second[0]?.direction, 'toClient');
  t.equal(second[0]?.bytes.length, 20);
  t.equal(core.pollTimeout(), undefined);
  const c = core.counters();
  t.same([c.toServer.received, c.toServer.forwarded, c.toServer.bytesForwarded], [1, 1, 10]);
  t.same([c.toClient.received, c.toClient.forwarded, c.toClient.bytesForwarded], [1, 1, 20]);
});

t.test('pass-through releases at arrival time', async (t) => {
  const core = new Impairment(parseImpairSpec('none'));
  core.onPacket(5, pkt(1), 'toServer');
  t.equal(core.pollTimeout(), 5);
  t.equal(core.pollTransmit(5).length, 1);
});

t.test('rate: back-to-back packets leave at size*8/rate intervals', async (t) => {
  // 8 mbit/s = 1 byte per microsecond: a 1000-byte packet takes exactly 1 ms.
  const { out } = run('rate=8mbit,queue=1MiB', 10, 1000, 0);
  t.same(
    out.map((p) => p.releaseAt),
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
  );
  t.same(
    out.map((p) => p.tag),
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
    'FIFO',
  );

  // Rate, then delay: a 20 ms RTT adds 10 ms after serialisation; an idle link starts at arrival.
  const { out: delayed } = run('rate=8mbit,rtt=20ms', 3, 500, 5);
  t.same(
    delayed.map((p) => p.releaseAt),
    [10.5, 15.5, 20.5],
  );
});

t.test('rate with per-packet overhead', async (t) => {
  const core = new Impairment(parseImpairSpec('rate=8mbit,queue=1MiB'), { perPacketOverheadBytes: 28 });
  for (let i = 0; i < 3; i++) core.onPacket(0, pkt(1000), 'toServer');
  const at = core.pollTransmit(Infinity).map((p) => p.releaseAt);
  t.equal(at.length, 3);
  at.forEach((x, i) => t.ok(Math.abs(x - 1.028 * (i + 1)) < 1e-9, `packet ${i} at ${x}`));
});

t.test('directions are independent pipes: each has its own link', async (t) => {
  const core = new Impairment(parseImpairSpec('rate=8mbit'));
  core.onPacket(0, pkt(1000), 'toServer');
  core.onPacket(0, pkt(1000), 'toClient');
  const out = core.pollTransmit(Infinity);
  t.same(
    out.map((p) => [p.direction, p.releaseAt]),
    [
      ['toServer', 1],
      ['toClient', 1],
    ],
  );
});

t.test('queue overflow: tail drop, counted apart from random loss', async (t) => {
  const byPackets = new Impairment(parseImpairSpec('rate=8mbit,queue=3pkt'));
  const fates = Array.from({ length: 10 }, () => byPackets.onPacket(0, pkt(1000), 'toServer'));
  t.same(fates, ['queued', 'queued', 'queued', ...Array<string>(7).fill('queueFull')]);
  t.equal(byPackets.queuedBytes('toServer', 0), 3000);
  t.equal(
    byPackets.onPacket(1, pkt(1000), 'toServer'),
    'queued',
    'the first packet left the link at 1 ms: room for one',
  );
  t.equal(byPackets.onPacket(1, pkt(1000), 'toServer'), 'queueFull');
  const c = byPackets.counters().toServer;
  t.equal(c.droppedQueue, 8);
  t.equal(c.droppedLoss, 0);
  t.same(
    byPackets.pollTransmit(Infinity).map((p) => p.releaseAt),
    [1, 2, 3, 4],
  );

  const byBytes = new Impairment(parseImpairSpec('rate=8mbit,queue=2500B'));
  t.same(
    [0, 0, 0].map(() => byBytes.onPacket(0, pkt(1000), 'toServer')),
    ['queued', 'queued', 'queueFull'],
  );
  t.equal(byBytes.onPacket(0, pkt(500), 'toServer'), 'queued', 'a smaller packet still fits');

  const tiny = new Impairment(parseImpairSpec('rate=8mbit,queue=100B'));
  t.equal(tiny.onPacket(0, pkt(1000), 'toServer'), 'queued', 'an empty queue takes a packet larger than the limit');
  t.equal(tiny.onPacket(0, pkt(10), 'toServer'), 'queueFull');

  // queue in ms at the link rate: 8 mbit/s for 2 ms = 2000 bytes.
  const byTime = new Impairment(parseImpairSpec('rate=8mbit,queue=2ms'));
  t.same(
    [0, 0, 0].map(() => byTime.onPacket(0, pkt(1000), 'toServer')),
    ['queued', 'queued', 'queueFull'],
  );
});

t.test('loss: fraction over 100k packets within a binomial bound, reproducible by seed', async (t) => {
  const n = 100_000;
  const core = new Impairment(parseImpairSpec('loss=1%'), { seed: 42 });
  for (let i = 0; i < n; i++) core.onPacket(i * 0.01, pkt(1), 'toServer');
  const lost = core.counters().toServer.droppedLoss;
  withinBinomial(t, lost, n, 0.01, 'loss=1%');
  t.equal(core.counters().toServer.droppedQueue, 0);

  const fates = (seed: number): string => {
    const c = new Impairment(parseImpairSpec('loss=10%'), { seed });
    return Array.from({ length: 200 }, (_, i) => c.onPacket(i, pkt(1), 'toServer')[0]).join('');
  };
  t.equal(fates(3), fates(3), 'same seed, same drops');
  t.not(fates(3), fates(4), 'another seed, other drops');

  const all = new Impairment(parseImpairSpec('loss=100%'));
  for (let i = 0; i < 100; i++) all.onPacket(i, pkt(1), 'toClient');
  t.equal(all.counters().toClient.droppedLoss, 100);
  t.equal(all.pollTimeout(), undefined, 'loss=100% forwards nothing');
});

t.test('loss is drawn per direction: traffic one way does not change drops the other way', async (t) => {
  const pattern = (withReverse: boolean): string => {
    const c = new Impairment(parseImpairSpec('loss=20%'), { seed: 9 });
    let s = '';
    for (let i = 0; i < 300; i++) {
      if (withReverse) c.onPacket(i, pkt(1), 'toClient');
      s += c.onPacket(i, pkt(1), 'toServer')[0] ?? '';
    }
    return s;
  };
  t.equal(pattern(true), pattern(false));
});

t.test('jitter: uniform delays stay within rtt/2 +- jitter and fill the range', async (t) => {
  // Spacing (20 ms) > 2 x jitter, so the no-reorder clamp never applies and the raw draw shows.
  const { out } = run('rtt=20ms,jitter=5ms', 10_000, 100, 20);
  const delays = out.map((p) => p.releaseAt - p.tag * 20);
  const min = Math.min(...delays);
  const max = Math.max(...delays);
  t.ok(min >= 5 && max <= 15, `delays in [5, 15]: ${min.toFixed(3)}..${max.toFixed(3)}`);
  t.ok(min < 5.05 && max > 14.95, 'the whole range is used');
  const mean = delays.reduce((a, b) => a + b, 0) / delays.length;
  t.ok(Math.abs(mean - 10) < 0.1, `mean ${mean.toFixed(3)} ~ 10`);
});

t.test('jitter: normal delays have the configured standard deviation and hard bounds', async (t) => {
  const { out } = run('rtt=40ms,jitter=2ms:normal', 20_000, 100, 20);
  const delays = out.map((p) => p.releaseAt - p.tag * 20);
  const mean = delays.reduce((a, b) => a + b, 0) / delays.length;
  const sd = Math.sqrt(delays.reduce((a, d) => a + (d - mean) ** 2, 0) / delays.length);
  t.ok(Math.abs(mean - 20) < 0.1, `mean ${mean.toFixed(3)} ~ 20`);
  t.ok(Math.abs(sd - 2) < 0.1, `sd ${sd.toFixed(3)} ~ 2 (clipping at 3 sigma shrinks it by ~1.3%)`);
  t.ok(Math.min(...delays) >= 14 && Math.max(...delays) <= 26, 'clipped at +-3 sigma');
});

t.test('jitter never reorders (release = max(computed, previous)) and the delay never goes negative', async (t) => {
  const { out } = run('rtt=2ms,jitter=5ms', 5000, 100, 0.1);
  t.equal(out.length, 5000);
  t.ok(
    out.every((p, i) => p.tag === i),
    'output order = input order',
  );
  t.ok(
    out.every((p, i) => i === 0 || p.releaseAt >= (out[i - 1]?.releaseAt ?? 0)),
    'release times non-decreasing',
  );
  t.ok(
    out.every((p) => p.releaseAt >= p.tag * 0.1),
    'never before arrival',
  );
});

t.test('reorder=p%: that fraction skips the delay and overtakes packets in flight', async (t) => {
  const n = 20_000;
  const { out, core } = run('rtt=20ms,reorder=10%', n, 100, 1);
  const c = core.counters().toServer;
  const early = out.filter((p) => p.releaseAt === p.tag * 1);
  withinBinomial(t, early.length, n, 0.1, 'packets released at arrival');
  t.ok(c.reordered >= early.length - 2 && c.reordered <= early.length, 'all but the first few overtook something');
  let inversions = 0;
  for (let i = 1; i < out.length; i++) if ((out[i]?.tag ?? 0) < (out[i - 1]?.tag ?? 0)) inversions++;
  t.ok(inversions > 0, 'output order differs from input order');
  t.equal(out.length, n, 'nothing lost');
});

t.test('dup=p%: copies counted and delivered back to back', async (t) => {
  const n = 20_000;
  const { out, core } = run('rtt=4ms,dup=5%', n, 10, 0.5);
  const c = core.counters().toServer;
  withinBinomial(t, c.duplicated, n, 0.05, 'duplicated');
  t.equal(out.length, n + c.duplicated);
  t.equal(c.forwarded, n + c.duplicated, 'forwarded counts the copies');
  let adjacentCopies = 0;
  for (let i = 1; i < out.length; i++) if (out[i]?.tag === out[i - 1]?.tag) adjacentCopies++;
  t.equal(adjacentCopies, c.duplicated);
});

t.test('the delay line is bounded: overflow drops are counted', async (t) => {
  const core = new Impairment(parseImpairSpec('rtt=100ms'), { maxDelayLineBytes: 5000 });
  const fates = Array.from({ length: 7 }, (_, i) => core.onPacket(i, pkt(1000), 'toServer'));
  t.same(fates.slice(5), ['overflow', 'overflow']);
  t.equal(core.counters().toServer.droppedOverflow, 2);
  t.equal(core.inFlightBytes('toServer'), 5000);
  t.equal(core.pollTransmit(50).length, 1, 'sent at 0, due at 50');
  t.equal(core.inFlightBytes('toServer'), 4000);
  core.pollTransmit(54);
  t.equal(core.inFlightBytes('toServer'), 0);
  t.equal(core.onPacket(60, pkt(1000), 'toServer'), 'queued');
});

t.test('a clock that steps back is treated as standing still', async (t) => {
  const core = new Impairment(parseImpairSpec('rtt=10ms'));
  core.onPacket(100, pkt(1), 'toServer');
  core.onPacket(90, pkt(1), 'toServer');
  t.same(
    core.pollTransmit(Infinity).map((p) => p.releaseAt),
    [105, 105],
  );
});

t.test('clear() forgets packets in flight, keeps counters', async (t) => {
  const core = new Impairment(parseImpairSpec('rtt=10ms,rate=1mbit'));
  core.onPacket(0, pkt(100), 'toServer');
  core.clear();
  t.equal(core.pollTimeout(), undefined);
  t.equal(core.pendingPackets, 0);
  t.equal(core.counters().toServer.received, 1);
});

t.test('createPrng: uniform in [0,1), independent streams', async (t) => {
  const r = createPrng(1);
  const xs = Array.from({ length: 10_000 }, r);
  t.ok(xs.every((x) => x >= 0 && x < 1));
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  t.ok(Math.abs(mean - 0.5) < 0.02, `mean ${mean}`);
  t.not(createPrng(1, 0)(), createPrng(1, 1)());
  t.equal(createPrng(5, 2)(), createPrng(5, 2)());
});

t.test('property: packets are conserved, released in order per direction unless reordered, never early', async () => {
  const specArb = fc.record({
    rtt: fc.integer({ min: 0, max: 50 }),
    jitter: fc.integer({ min: 0, max: 10 }),
    loss: fc.integer({ min: 0, max: 30 }),
    rate: fc.option(fc.integer({ min: 1, max: 100 }), { nil: undefined }),
    queue: fc.integer({ min: 1, max: 20 }),
    dup: fc.integer({ min: 0, max: 20 }),
  });
  const arrivals = fc.array(
    fc.record({
      gapMs: fc.double({ min: 0, max: 3, noNaN: true }),
      bytes: fc.integer({ min: 1, max: 1500 }),
      up: fc.boolean(),
    }),
    { maxLength: 200 },
  );
  fc.assert(
    fc.property(specArb, arrivals, fc.integer(), (s, arr, seed) => {
      const text =
        `rtt=${s.rtt}ms,jitter=${s.jitter}ms,loss=${s.loss}%,dup=${s.dup}%` +
        (s.rate === undefined ? '' : `,rate=${s.rate}mbit,queue=${s.queue}pkt`);
      const core = new Impairment<number>(parseImpairSpec(text), { seed });
      const out: (DuePacket<number> & { polledAt: number })[] = [];
      let now = 0;
      const arrivedAt: number[] = [];
      arr.forEach((a, i) => {
        now += a.gapMs;
        for (const p of core.pollTransmit(now)) out.push({ ...p, polledAt: now });
        arrivedAt.push(now);
        core.onPacket(now, pkt(a.bytes), a.up ? 'toServer' : 'toClient', i);
      });
      const timeout = core.pollTimeout();
      for (const p of core.pollTransmit(Infinity)) out.push({ ...p, polledAt: Infinity });
      if (
        timeout !== undefined &&
        out.length > 0 &&
        Math.min(...out.filter((p) => p.polledAt === Infinity).map((p) => p.releaseAt)) !== timeout
      )
        return false;
      const c = core.counters();
      for (const d of ['toServer', 'toClient'] as const) {
        const k = c[d];
        if (k.received !== k.forwarded - k.duplicated + k.droppedLoss + k.droppedQueue + k.droppedOverflow)
          return false;
        const tags = out.filter((p) => p.direction === d).map((p) => p.tag);
        for (let i = 1; i < tags.length; i++) if ((tags[i] ?? 0) < (tags[i - 1] ?? 0)) return false;
      }
      return out.every(
        (p) =>
          p.releaseAt <= p.polledAt &&
          p.releaseAt >= (arrivedAt[p.tag] ?? NaN) + Math.max(0, s.rtt / 2 - s.jitter) - 1e-9,
      );
    }),
    { numRuns: 200 },
  );
});
