// A paired peer cannot grow the listener's memory with manifests (issue 27, item 3). Hostile
// pushes speak the real protocol and lie: file entries of 400,000 chunks each, batch after
// batch, never `last`. The listener counts every batch as it arrives against its budgets
// (listener-budgets.ts): the session is refused with BUDGET naming the budget once its
// manifest passes 4 Mi chunk references (it used to take everything until `last`: 80 such
// batches took it from 230 MB to 1.64 GB), the listener's RSS stays bounded, what a session
// held is given back when it ends, and sessions together meet the listener-wide budget.
import t from 'tap';
import { ClawpeerError } from '../../src/errors.js';
import { DEFAULT_BUDGETS, ListenerBudgets } from '../../src/session/listener-budgets.js';
import type { PeerSession } from '../../src/session/session.js';
import { withTimeout } from '../../src/support/timeouts.js';
import { expectMessage } from '../../src/exchange/transfer-control.js';
import { rssKiB, sampleRss, startRig } from '../fault/fault-harness.js';
import { dialAs, fileEntry, pingOk } from './budget-kit.js';

const rig = await startRig('budget-mf');
t.teardown(() => rig.close());
const pid = rig.listener.child.pid ?? 0;

interface Flood {
  readonly session: PeerSession;
  /** The listener's Error, once it came (undefined while none did). */
  refusal(): unknown;
  /** Batches sent before the refusal was seen. */
  readonly sent: number;
}

/**
 * A push whose manifest is `batches` batches of one entry of `chunks` chunks each (never last
 * unless `last`); stops sending when the listener answers. Resolves after the last send or
 * the refusal.
 */
async function flood(batches: number, chunks: number, label: string): Promise<Flood> {
  const session = await dialAs(rig.b.home, rig.listener.port);
  const transferId = session.allocateTransferId();
  await session.control.send({
    type: 'transfer-request',
    transferId,
    direction: 'push',
    share: 'inbox',
    path: label,
    force: false,
    streams: 1,
    window: 8,
  });
  await expectMessage(session, 'transfer-accept', transferId, 10_000);
  let answer: unknown;
  const answered = session.control.receive().then(
    (m) => (answer = m ?? new Error('closed')),
    (e: unknown) => (answer = e),
  );
  let sent = 0;
  for (; sent < batches && answer === undefined; sent++) {
    const entries = [fileEntry(`${label}/f${sent}`, chunks, 65_536)];
    await Promise.race([
      session.control.send({ type: 'manifest', transferId, entries, last: false }).catch(() => undefined),
      answered,
    ]);
  }
  return { session, refusal: () => answer, sent };
}

async function refusalOf(f: Flood): Promise<unknown> {
  await withTimeout(
    (async () => {
      while (f.refusal() === undefined) await new Promise((r) => setTimeout(r, 50));
    })(),
    30_000,
    'the listener refusing the manifest',
  ).catch(() => undefined);
  return f.refusal();
}

t.test('the budgets count per session and per listener and give back what a session held', async (t) => {
  const budgets = new ListenerBudgets({
    ...DEFAULT_BUDGETS,
    sessionManifest: { bytes: 1 << 20, chunkRefs: 100 },
    listenerManifest: { bytes: 1 << 20, chunkRefs: 150 },
  });
  const a = budgets.session('a');
  const b = budgets.session('b');
  a.takeManifest(1, [fileEntry('x', 90, 1)]);
  t.throws(() => a.takeManifest(1, [fileEntry('y', 20, 1)]), {
    code: 'BUDGET_EXCEEDED',
    message: /budget of manifest chunk references per session, 100 \(it would hold 110\)/,
  });
  t.throws(() => b.takeManifest(2, [fileEntry('z', 70, 1)]), {
    code: 'BUDGET_EXCEEDED',
    message: /budget of manifest chunk references per listener, 150: other sessions hold the rest/,
  });
  a.release();
  t.same(budgets.manifestHeld, { bytes: 0, chunkRefs: 0 }, 'a session gives back all it held');
  b.takeManifest(2, [fileEntry('z', 70, 1)]);
  t.equal(budgets.manifestHeld.chunkRefs, 70);
  t.throws(() => b.takeManifest(2, [fileEntry('p'.repeat(1 << 20), 0, 1)]), {
    code: 'BUDGET_EXCEEDED',
    message: /manifest bytes per session/,
  });
});

t.test('a manifest of huge lying entries is refused with BUDGET while it arrives; RSS stays bounded', async (t) => {
  const idle = await rssKiB(pid);
  const sampler = sampleRss(pid, 100);
  // 40 batches x 400,000 = 16 Mi chunk references (the plan's own cap): the session's budget is 4 Mi.
  const f = await flood(40, 400_000, 'one');
  const refusal = await refusalOf(f);
  const peak = Math.max(...(await sampler.stop()));
  t.ok(refusal instanceof ClawpeerError, `the listener answered with an error: ${String(refusal)}`);
  t.match(refusal, {
    code: 'BUDGET_EXCEEDED',
    wire: 'BUDGET',
    message: /budget of manifest chunk references per session, 4,194,304/,
  });
  t.ok(f.sent < 40, `the client was stopped before sending all 40 batches (${f.sent} sent)`);
  const grewMiB = (peak - idle) / 1024;
  t.ok(
    grewMiB < 600,
    `listener RSS grew ${grewMiB.toFixed(0)} MiB (idle ${(idle / 1024).toFixed(0)} MiB); the 16 Mi references alone take ~650 MiB`,
  );
  await f.session.close().catch(() => undefined);
  t.match(rig.listener.stderr(), /peer session failed .*code=BUDGET_EXCEEDED/, 'the listener logs it');
  t.ok(await pingOk(rig.b.home, rig.listener.port), 'the listener still answers a ping');
});

t.test('sessions together meet the listener-wide budget; a session that ends gives its share back', async (t) => {
  // Two sessions hold 3 Mi references each (within their own 4 Mi); a third passes the listener's 8 Mi.
  const holders = [await flood(12, 262_144, 'hold-a'), await flood(12, 262_144, 'hold-b')];
  for (const h of holders)
    t.equal(h.refusal(), undefined, `a session within its budget is not refused (${h.sent} batches)`);
  const third = await flood(12, 262_144, 'third');
  t.match(await refusalOf(third), {
    code: 'BUDGET_EXCEEDED',
    wire: 'BUDGET',
    message: /budget of manifest chunk references per listener, 8,388,608: other sessions hold the rest; retry later/,
  });
  await third.session.close().catch(() => undefined);
  for (const h of holders) await h.session.close().catch(() => undefined);
  // What they held is given back at their end: a fresh session gets its whole per-session budget.
  await new Promise((r) => setTimeout(r, 500));
  const again = await flood(20, 400_000, 'again');
  t.match(
    await refusalOf(again),
    { code: 'BUDGET_EXCEEDED', message: /per session/ },
    'the next session is refused by its own budget only',
  );
  await again.session.close().catch(() => undefined);
});
