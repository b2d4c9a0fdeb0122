// A modest flood of unpaired connections (issue 27, item 2; the full figure is in
// test/slow/adversary/flood.test.ts): 200 connections with fresh Ed25519 keys, each refilled
// 100 ms after the listener drops it, held silent, over QUIC and then TLS/TCP, while a paired
// peer connects afresh and pings. Every ping must succeed and the listener's RSS stay under
// twice its idle RSS. The listener's --max-connections is below the flood's size, so a listener
// that counted unpaired connections (as before) answers the paired peer BUSY.
import t from 'tap';
import { sampleRss } from '../fault/fault-harness.js';
import { floodFromChild, probePing, sleep, type Transport } from './admission-kit.js';
import { floodRig } from './flood-rig.js';

const FLOOD_CONNECTIONS = 200;
const REFILL_DELAY_MS = 100;
const PINGS = 8;
const PING_GAP_MS = 500;
/** How long the flood may take to open its connections once before the pings go in regardless. */
const FLOOD_UP_WITHIN_MS = 60_000;
/** The listener's throttle: 10 refusals logged one by one per 10 s window (server.ts). */
const LOGGED_PER_WINDOW = 10;

const { rig, identityB, peersB, pid, warmUp, idleKiB } = await floodRig('adm-flood', ['--max-connections', '100']);
t.teardown(() => rig.close());

t.test('the listener answers a paired peer before the flood', async (t) => {
  t.equal(warmUp, 'ok');
});

for (const transport of ['quic', 'tcp'] as const satisfies readonly Transport[]) {
  t.test(`${transport}: ${FLOOD_CONNECTIONS} unpaired connections, refilled when dropped; a paired peer's pings all succeed`, async (t) => {
    const logFrom = rig.listener.stderr().length;
    const rss = sampleRss(pid, 200);
    const started = performance.now();
    const flood = floodFromChild({ transport, port: rig.listener.port, connections: FLOOD_CONNECTIONS, refillDelayMs: REFILL_DELAY_MS });
    // The pings go in once the flood is up: it has opened its connections once (on a loaded
    // machine that can take longer than any fixed wait; the budget is generous, not a timing test).
    while (flood.stats.connected < FLOOD_CONNECTIONS && flood.failure === undefined && performance.now() - started < FLOOD_UP_WITHIN_MS) await sleep(100);
    const pings: string[] = [];
    for (let i = 0; i < PINGS; i++) {
      pings.push(await probePing(identityB, peersB, 'alice', rig.listener.port, transport));
      await sleep(PING_GAP_MS);
    }
    const stats = await flood.stop();
    const samples = await rss.stop();
    const peakKiB = Math.max(...samples);
    t.comment(`${transport}: flood ${JSON.stringify(stats)}; listener RSS idle ${(idleKiB / 1024).toFixed(1)} MiB, peak ${(peakKiB / 1024).toFixed(1)} MiB`);
    t.equal(flood.failure, undefined, 'the flood process ran to the end');
    t.ok(stats.connected >= FLOOD_CONNECTIONS, `the flood reached the listener (${stats.connected} connections proved their key)`);
    t.same(pings, pings.map(() => 'ok'), 'every ping of the paired peer succeeded');
    t.ok(peakKiB < 2 * idleKiB, `listener RSS stayed under twice its idle (${peakKiB} KiB < 2 x ${idleKiB} KiB)`);
    const log = rig.listener.stderr().slice(logFrom);
    const lines = log.split('\n').filter((l) => /rejected unpaired peer/.test(l)).length;
    const windows = Math.ceil((performance.now() - started) / 10_000) + 1;
    t.ok(lines <= LOGGED_PER_WINDOW * windows, `refusals are not logged one by one (${lines} lines for ${stats.connected} connections)`);
  });
}

t.test('after the floods the listener is still up and serves', async (t) => {
  t.equal(await probePing(identityB, peersB, 'alice', rig.listener.port), 'ok');
  t.equal(rig.listener.child.exitCode, null, 'the listener never exited');
});
