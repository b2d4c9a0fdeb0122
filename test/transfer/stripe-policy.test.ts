// The automatic striping rule: random loss (RTT at its floor) multiplies the connections by 4 at
// most every growEveryMs up to the cap; loss with an inflated RTT (a full queue) holds it for
// 1 s or 20 round trips; short paths and rare losses never stripe.
import t from 'tap';
import { StripePolicy, type LinkSample } from '../../src/transfer/stripe-policy.js';

/** Feeds samples 100 ms apart: `lost` new packets of 1000 sent each, at `rtt`; returns the growths. */
function feed(
  policy: StripePolicy,
  steps: readonly { rtt: number; lost: number }[],
  start: { at: number; lost: number; sent: number; connections: number } = { at: 0, lost: 0, sent: 0, connections: 1 },
): number[] {
  const grown: number[] = [];
  let { at, lost, sent, connections } = start;
  for (const step of steps) {
    at += 100;
    lost += step.lost;
    sent += 1000;
    const s: LinkSample = { atMs: at, rttMs: step.rtt, lostPackets: lost, sentPackets: sent, connections };
    const v = policy.sample(s);
    if (v.kind === 'grow') {
      grown.push(v.connections);
      connections = v.connections;
    }
  }
  return grown;
}

t.test('random loss at the RTT floor multiplies the connections, paced, up to the cap', async (t) => {
  const policy = new StripePolicy({ maxConnections: 12 });
  const steps = Array.from({ length: 40 }, () => ({ rtt: 50, lost: 1 }));
  t.same(feed(policy, steps), [4, 12]);
  t.equal(policy.congestionEvents, 0);
  const doubling = new StripePolicy({ maxConnections: 12, growthFactor: 2 });
  t.same(feed(doubling, steps), [2, 4, 8, 12], 'growthFactor 2 doubles');
});

t.test('loss with the RTT inflated by a queue holds growth, and so does the tail of that episode', async (t) => {
  const policy = new StripePolicy({ maxConnections: 12 });
  const overshoot = [
    { rtt: 50, lost: 0 },
    { rtt: 90, lost: 0 },
    { rtt: 100, lost: 5 },
  ];
  const tail = Array.from({ length: 9 }, () => ({ rtt: 50, lost: 1 })); // 0.9 s of losses detected after the queue drained
  t.same(
    feed(policy, [...overshoot, ...tail]),
    [],
    'slow start overshooting a 50 ms queue is congestion, not random loss',
  );
  t.ok(policy.congestionEvents >= 1, 'the overshoot counts as congestion');
  const after = Array.from({ length: 4 }, () => ({ rtt: 50, lost: 1 }));
  t.same(
    feed(policy, after, { at: 1200, lost: 14, sent: 12_000, connections: 1 }),
    [4],
    'random loss after the hold grows again',
  );
});

t.test('grows on random loss, then holds while the connections together fill the queue', async (t) => {
  const policy = new StripePolicy({ maxConnections: 12 });
  const fill = Array.from({ length: 10 }, (_, i) => ({ rtt: i % 3 === 0 ? 100 : 50, lost: 1 })); // a full queue every 300 ms
  t.same(feed(policy, [...Array.from({ length: 6 }, () => ({ rtt: 50, lost: 1 })), ...fill]), [4]);
});

t.test('on a long path the hold lasts 20 round trips', async (t) => {
  const policy = new StripePolicy({ maxConnections: 12 });
  const overshoot = [
    { rtt: 200, lost: 0 },
    { rtt: 400, lost: 5 },
  ];
  const tail = Array.from({ length: 38 }, () => ({ rtt: 200, lost: 1 })); // 3.8 s: within 20 x 200 ms
  t.same(feed(policy, [...overshoot, ...tail]), [], 'held for 4 s, not 1');
  t.same(
    feed(policy, [{ rtt: 200, lost: 1 }], { at: 4200, lost: 43, sent: 40_000, connections: 1 }),
    [4],
    'then random loss grows',
  );
});

t.test('never on a short path, nor for a loss or two', async (t) => {
  t.same(
    feed(
      new StripePolicy({ maxConnections: 12 }),
      Array.from({ length: 40 }, () => ({ rtt: 0.3, lost: 3 })),
    ),
    [],
    'loopback / LAN RTT',
  );
  const rare = [
    { rtt: 50, lost: 0 },
    { rtt: 50, lost: 1 },
    ...Array.from({ length: 40 }, () => ({ rtt: 50, lost: 0 })),
  ];
  t.same(feed(new StripePolicy({ maxConnections: 12 }), rare), [], 'one lost packet');
  t.same(
    feed(
      new StripePolicy({ maxConnections: 1 }),
      Array.from({ length: 20 }, () => ({ rtt: 50, lost: 1 })),
    ),
    [],
    'a cap of one',
  );
});
