// The budget floods at the scale (issue 27, items 3 and 4; the fast versions are
// test/adversary/budget-*.test.ts):
// - four sessions at once each send 80 manifest batches of one entry with 400,000 chunk ids
//   (the review's attack took one listener from 230 MB to 1.64 GB): every one is refused with
//   BUDGET, listener RSS stays within the listener-wide budget's worth, and a ping goes through;
// - a files-from pull at the 100,000-path cap (one directory repeated, and paths inside it),
//   killed after a second: the listener is idle again within 2 s.
import t from 'tap';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ClawpeerError } from '../../../src/errors.js';
import { expectMessage } from '../../../src/exchange/transfer-control.js';
import { withTimeout } from '../../../src/support/timeouts.js';
import { rssKiB, sampleRss, sleep, startRig } from '../../fault/fault-harness.js';
import { cpuSeconds, dialAs, fileEntry, pingOk, spawnHostilePull } from '../../adversary/budget-kit.js';

const rig = await startRig('budget-flood');
t.teardown(() => rig.close());
const pid = rig.listener.child.pid ?? 0;

async function flood(label: string): Promise<unknown> {
  const session = await dialAs(rig.b.home, rig.listener.port);
  try {
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
    for (let i = 0; i < 80 && answer === undefined; i++) {
      await Promise.race([
        session.control
          .send({ type: 'manifest', transferId, entries: [fileEntry(`${label}/f${i}`, 400_000, 65_536)], last: false })
          .catch(() => undefined),
        answered,
      ]);
    }
    await withTimeout(answered, 60_000, 'the listener refusing the flood').catch(() => undefined);
    return answer;
  } finally {
    await session.close().catch(() => undefined);
  }
}

t.test('four sessions flooding manifests at once are all refused; RSS stays bounded', async (t) => {
  const idle = await rssKiB(pid);
  const sampler = sampleRss(pid, 100);
  const answers = await Promise.all(['a', 'b', 'c', 'd'].map((l) => flood(l)));
  const peak = Math.max(...(await sampler.stop()));
  for (const a of answers) {
    t.ok(a instanceof ClawpeerError, String(a));
    t.match(a, { wire: 'BUDGET', message: /budget of manifest (chunk references|bytes) per (session|listener)/ });
  }
  const grewMiB = (peak - idle) / 1024;
  t.ok(
    grewMiB < 900,
    `listener RSS grew ${grewMiB.toFixed(0)} MiB at most (idle ${(idle / 1024).toFixed(0)} MiB); 4 x 32 Mi references would take several GiB`,
  );
  t.ok(await pingOk(rig.b.home, rig.listener.port), 'the listener still answers a ping');
});

t.test('a files-from pull of 100,000 repeated and nested paths, killed: idle within 2 s', async (t) => {
  for (let d = 0; d < 50; d++) {
    const dir = path.join(rig.share, 'big', `d${d}`);
    await mkdir(dir, { recursive: true });
    for (let f = 0; f < 40; f++) await writeFile(path.join(dir, `f${f}`), '');
  }
  const list = Array.from({ length: 100_000 }, (_, i) => (i % 2 === 0 ? 'big' : `big/d${i % 50}`));
  const { child, sent } = spawnHostilePull(rig.b.home, rig.listener.port, {
    direction: 'pull',
    share: 'inbox',
    path: '',
    force: false,
    streams: 1,
    window: 8,
    filesFrom: list,
  });
  t.teardown(() => void child.kill('SIGKILL'));
  await sent;
  await sleep(1_000);
  child.kill('SIGKILL');
  await sleep(2_000);
  const before = cpuSeconds(pid);
  await sleep(2_000);
  const cpu = cpuSeconds(pid) - before;
  t.ok(cpu < 0.5, `listener CPU in the 2 s window from 2 s after the kill: ${cpu.toFixed(2)} s`);
  t.ok(await pingOk(rig.b.home, rig.listener.port), 'the listener still answers a ping');
});
