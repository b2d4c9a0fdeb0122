// The relay floor: measured as a zero-delay relay thread over a direct echo, and taken off each
// link's RTT (never below 0) with the link's queue limit kept.
import t from 'tap';
import { compensatedSpec, measureRelayFloor, REFERENCE_RTT_MS } from '../../src/benchkit/relay-floor.js';
import { parseImpairSpec, resolveQueueLimit } from '../../src/relay/impair-spec.js';

t.test('compensatedSpec takes the floor off the RTT and keeps everything else', async (t) => {
  const spec = parseImpairSpec('rtt=5ms,loss=1%,rate=100mbit');
  const c = compensatedSpec(spec, 0.4);
  t.equal(c.rttMs, 4.6);
  t.equal(c.lossPct, 1);
  t.equal(c.rateBitsPerSec, 100e6);
  t.same(resolveQueueLimit(c), resolveQueueLimit(spec), "the queue limit is the configured link's, not one for 4.6 ms");
  t.equal(
    compensatedSpec(parseImpairSpec('rtt=1ms'), 1.7).rttMs,
    0,
    'a link shorter than the floor gets no delay, not a negative one',
  );
  t.equal(compensatedSpec(spec, 0), spec, 'nothing to compensate: the same spec');
  t.equal(compensatedSpec(parseImpairSpec('loss=1%'), 0.4).rttMs, 0, 'no RTT configured: nothing taken');
  t.notOk('queue' in compensatedSpec(parseImpairSpec('rtt=5ms'), 0.4), 'no rate: no queue to pin');
});

t.test('measureRelayFloor: what a delaying relay thread adds beyond its delay and the direct round trip', async (t) => {
  const floor = await measureRelayFloor({ seed: 1, probes: 60 });
  t.equal(floor.referenceRttMs, REFERENCE_RTT_MS);
  t.ok(floor.directMs > 0, `the direct round trip is measured (${floor.directMs} ms)`);
  t.ok(
    floor.relayedMs >= REFERENCE_RTT_MS * 0.9,
    `the relayed one includes the reference delay (${floor.relayedMs} ms)`,
  );
  t.equal(
    floor.compensationMs,
    Math.max(0, Math.round((floor.relayedMs - REFERENCE_RTT_MS - floor.directMs) * 1000) / 1000),
  );
});
