// No listener work outlives its session (issue 27, item 4). A hostile paired client (a separate
// process, so it can be SIGKILLed) asks for a pull whose work is long, then is killed; the
// listener must be back to idle CPU within 2 s of the kill, and still serve others:
// - a files-from list naming one directory 5,000 times (the listener walked it 5,000 times,
//   at 100% CPU long after the client was gone): each path is walked once now;
// - a pull of one large (sparse) file: its hashing on the chunking threads stops when the
//   session ends.
// The CPU is the listener process's utime + stime (/proc/PID/stat) over a 2 s window that starts
// 2 s after the kill: idle is near 0; a listener still working spends most of the window.
import t from 'tap';
import { mkdir, open, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { sleep, startRig } from '../fault/fault-harness.js';
import { cpuSeconds, pingOk, spawnHostilePull } from './budget-kit.js';

const rig = await startRig('budget-ff');
t.teardown(() => rig.close());
const pid = rig.listener.child.pid ?? 0;

/** CPU seconds the listener spends in [2 s, 4 s] after `kill()`; the whole window is 2 s. */
async function cpuAfterKill(kill: () => void): Promise<number> {
  kill();
  await sleep(2_000);
  const before = cpuSeconds(pid);
  await sleep(2_000);
  return cpuSeconds(pid) - before;
}

const PULL = { direction: 'pull', share: 'inbox', force: false, streams: 1, window: 8 } as const;

t.test('a files-from list repeating one directory 5,000 times: walked once, idle within 2 s of the kill', async (t) => {
  // ~1,500 entries: one walk takes tens of ms, 5,000 of them minutes.
  for (let d = 0; d < 30; d++) {
    const dir = path.join(rig.share, 'big', `d${d}`);
    await mkdir(dir, { recursive: true });
    for (let f = 0; f < 50; f++) await writeFile(path.join(dir, `f${f}`), '');
  }
  const { child, sent } = spawnHostilePull(rig.b.home, rig.listener.port, {
    ...PULL,
    path: '',
    filesFrom: Array<string>(5000).fill('big'),
  });
  t.teardown(() => void child.kill('SIGKILL'));
  await sent;
  await sleep(1_000); // the listener is scanning
  const cpu = await cpuAfterKill(() => child.kill('SIGKILL'));
  t.ok(
    cpu < 0.5,
    `listener CPU in the 2 s window from 2 s after the kill: ${cpu.toFixed(2)} s (idle is ~0; still walking is ~2)`,
  );
  t.ok(await pingOk(rig.b.home, rig.listener.port), 'the listener still answers a ping');
});

t.test('hashing a large file for a pull stops when the session ends', async (t) => {
  // 24 GiB of holes: reading them costs no disk, hashing them many seconds of both cores.
  const huge = await open(path.join(rig.share, 'huge.bin'), 'w');
  await huge.truncate(24 * 2 ** 30);
  await huge.close();
  const { child, sent } = spawnHostilePull(rig.b.home, rig.listener.port, { ...PULL, path: 'huge.bin' });
  t.teardown(() => void child.kill('SIGKILL'));
  await sent;
  await sleep(1_000); // the listener is hashing
  const cpu = await cpuAfterKill(() => child.kill('SIGKILL'));
  t.ok(
    cpu < 0.5,
    `listener CPU in the 2 s window from 2 s after the kill: ${cpu.toFixed(2)} s (idle is ~0; still hashing is up to 4)`,
  );
  t.ok(await pingOk(rig.b.home, rig.listener.port), 'the listener still answers a ping');
});
