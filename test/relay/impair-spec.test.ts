import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import t, { type Test } from 'tap';
import { isClawpeerError } from '../../src/errors.js';
import type { ImpairSpec, QueueLimit } from '../../src/relay/impair-spec.js';
import { formatImpairSpec, parseImpairSpec, PASS_THROUGH, resolveQueueLimit } from '../../src/relay/impair-spec.js';

function usageError(t: Test, text: string, pattern: RegExp): void {
  try {
    parseImpairSpec(text);
  } catch (err) {
    t.ok(
      isClawpeerError(err, 'USAGE') && pattern.test(err.message),
      `${JSON.stringify(text)}: ${(err as Error).message}`,
    );
    return;
  }
  t.fail(`${JSON.stringify(text)} was accepted`);
}

t.test('parses the issue example and every unit', async (t) => {
  t.same(parseImpairSpec('rtt=50ms,jitter=5ms,loss=1%,rate=100mbit'), {
    rttMs: 50,
    jitterMs: 5,
    jitterDistribution: 'uniform',
    lossPct: 1,
    reorderPct: 0,
    duplicatePct: 0,
    rateBitsPerSec: 100e6,
  });
  t.same(
    parseImpairSpec(' RTT=0.1s , jitter=250us:normal, loss=0.1%, rate=1gbit, queue=64KiB, reorder=2%, dup=0.5% '),
    {
      rttMs: 100,
      jitterMs: 0.25,
      jitterDistribution: 'normal',
      lossPct: 0.1,
      reorderPct: 2,
      duplicatePct: 0.5,
      rateBitsPerSec: 1e9,
      queue: { unit: 'bytes', bytes: 65536 },
    },
  );
  t.equal(parseImpairSpec('rate=500kbit').rateBitsPerSec, 500_000);
  t.equal(parseImpairSpec('rate=10mbps').rateBitsPerSec, 10e6);
  t.equal(parseImpairSpec('rate=1.5mbit').rateBitsPerSec, 1_500_000);
  t.same(parseImpairSpec('rate=1mbit,queue=100pkt').queue, { unit: 'packets', packets: 100 });
  t.same(parseImpairSpec('rate=1mbit,queue=50ms').queue, { unit: 'ms', ms: 50 });
  t.same(parseImpairSpec('rate=1mbit,queue=1MB').queue, { unit: 'bytes', bytes: 1e6 });
  t.same(parseImpairSpec('rate=1mbit,queue=1500B').queue, { unit: 'bytes', bytes: 1500 });
  t.equal(parseImpairSpec('loss=0').lossPct, 0, 'a bare 0 needs no unit');
  t.equal(parseImpairSpec('duplicate=1%').duplicatePct, 1, 'alias');
  t.same(parseImpairSpec(''), PASS_THROUGH);
  t.same(parseImpairSpec('none'), PASS_THROUGH);
});

t.test('rejects bad specs with a message naming the part', async (t) => {
  usageError(t, 'rtt=50', /rtt=50: expected a time/);
  usageError(t, 'rtt=fast', /rtt=fast/);
  usageError(t, 'rtt=11s', /at most 10000 ms/);
  usageError(t, 'loss=1', /loss=1: expected a percentage/);
  usageError(t, 'loss=101%', /at most 100%/);
  usageError(t, 'loss=-1%', /loss=-1%/);
  usageError(t, 'rate=100', /rate=100: expected a bit rate/);
  usageError(t, 'rate=100MB/s', /rate=100MB\/s/);
  usageError(t, 'rate=10bit', /between 1kbit and 100gbit/);
  usageError(t, 'queue=64KiB', /queue needs a rate/);
  usageError(t, 'rate=1mbit,queue=lots', /queue=lots: expected bytes/);
  usageError(t, 'rate=1mbit,queue=0pkt', /between 1 and/);
  usageError(t, 'jitter=1ms:pareto', /uniform or normal/);
  usageError(t, 'rtt=1ms,rtt=2ms', /"rtt" given twice/);
  usageError(t, 'latency=5ms', /unknown key "latency" \(keys: rtt, jitter/);
  usageError(t, 'rtt', /not key=value/);
  usageError(t, 'rtt=1ms,', /not key=value/);
  usageError(t, 'x'.repeat(600), /longer than 512/);
});

t.test('format: canonical text, only what is set', async (t) => {
  t.equal(formatImpairSpec(PASS_THROUGH), 'none');
  t.equal(
    formatImpairSpec(parseImpairSpec('loss=1%,rtt=50ms,rate=100mbit,jitter=5ms')),
    'rtt=50ms,jitter=5ms,loss=1%,rate=100mbit',
  );
  t.equal(
    formatImpairSpec(parseImpairSpec('rate=1500kbit,queue=1MiB,jitter=1ms:normal,dup=1%,reorder=2%')),
    'jitter=1ms:normal,rate=1500kbit,queue=1MiB,reorder=2%,dup=1%',
  );
  t.equal(formatImpairSpec(parseImpairSpec('rate=1234bit,queue=1000B')), 'rate=1234bit,queue=1000B');
});

t.test('property: parse(format(spec)) is spec', async (t) => {
  const queueArb: fc.Arbitrary<QueueLimit> = fc.oneof(
    fc.integer({ min: 1, max: 1 << 30 }).map((bytes) => ({ unit: 'bytes' as const, bytes })),
    fc.integer({ min: 1, max: 1_000_000 }).map((packets) => ({ unit: 'packets' as const, packets })),
    fc.double({ min: 0.001, max: 10_000, noNaN: true }).map((ms) => ({ unit: 'ms' as const, ms })),
  );
  const pct = fc
    .double({ min: 0, max: 100, noNaN: true, noDefaultInfinity: true })
    .map((x) => (Object.is(x, -0) ? 0 : x));
  const ms = fc.double({ min: 0, max: 10_000, noNaN: true }).map((x) => (Object.is(x, -0) ? 0 : x));
  const specArb = fc
    .record({
      rttMs: ms,
      jitterMs: ms,
      jitterDistribution: fc.constantFrom('uniform' as const, 'normal' as const),
      lossPct: pct,
      reorderPct: pct,
      duplicatePct: pct,
      rate: fc.option(fc.tuple(fc.integer({ min: 1000, max: 100e9 }), fc.option(queueArb, { nil: undefined })), {
        nil: undefined,
      }),
    })
    .map(({ rate, ...rest }): ImpairSpec => ({
      ...rest,
      ...(rate === undefined ? {} : { rateBitsPerSec: rate[0], ...(rate[1] === undefined ? {} : { queue: rate[1] }) }),
    }));
  fc.assert(
    fc.property(specArb, (spec) => {
      const back = parseImpairSpec(formatImpairSpec(spec));
      return isDeepStrictEqual({ ...back }, { ...spec });
    }),
    { numRuns: 300 },
  );
  t.pass('300 random specs round-tripped');
});

t.test('resolveQueueLimit: default is one BDP, at least 64 KiB; ms converts at the rate', async (t) => {
  t.equal(resolveQueueLimit(parseImpairSpec('rtt=50ms')), undefined, 'no rate, no queue');
  t.same(resolveQueueLimit(parseImpairSpec('rtt=50ms,rate=100mbit')), { bytes: 625_000 });
  t.same(resolveQueueLimit(parseImpairSpec('rtt=1ms,rate=10mbit')), { bytes: 65536 });
  t.same(resolveQueueLimit(parseImpairSpec('rate=8mbit,queue=10ms')), { bytes: 10_000 });
  t.same(resolveQueueLimit(parseImpairSpec('rate=8mbit,queue=7pkt')), { packets: 7 });
});
