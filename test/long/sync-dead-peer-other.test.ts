// A peer SIGKILLed mid-sync over QUIC sends nothing: the listener's own sync with it held the
// folder's lock until the connection's idle timeout, from every other peer too (with three
// devices, one killed or suspended mid-sync stalled the others; a convergence run's quiet phase
// gave up on a link, seed 51103). Now another peer's sync of the folder closes that silent
// sync's connection (folder-sync/running-syncs.ts) and goes ahead. The listeners run with a
// 60 s idle timeout, so without that the new sync would wait out its 30 s lock wait and fail.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { IDLE, syncReceiving } from './dead-peer-kit.js';
import { initNode, jsonLines, runCli, startListener, tempHome } from '../e2e/cli-harness.js';

t.test("a sync with a peer killed mid-sync gives the folder up to another peer's sync", async (t) => {
  const a = await initNode('deadother-a');
  const b = await initNode('deadother-b');
  const c = await initNode('deadother-c');
  const work = await tempHome('deadother');
  const [dirA, dirB, dirC] = ['a', 'b', 'c'].map((n) => path.join(work, n)) as [string, string, string];
  for (const d of [dirA, dirB, dirC]) await mkdir(d);
  await writeFile(path.join(dirB, 'big.bin'), randomBytes(12 << 20));
  await writeFile(path.join(dirC, 'from-c.txt'), 'c was here\n');
  // b sends slowly, so it is killed while a receives.
  const lb = await startListener(b.home, ['--share', `docs=${dirB}`], {
    env: { ...IDLE, CLAWPEER_TEST_DELAY_PER_CHUNK_MS: '40' },
  });
  const la = await startListener(a.home, ['--share', `docs=${dirA}`, '-v'], { env: IDLE });
  t.teardown(async () => {
    await la.stop('SIGKILL');
    await lb.stop('SIGKILL');
  });
  const pair = async (home: string, id: string, name: string, port?: number): Promise<void> => {
    const addr = port === undefined ? [] : ['--addr', `127.0.0.1:${port}`];
    const r = await runCli(['--home', home, 'pair', 'add', id, '--name', name, ...addr]);
    if (r.code !== 0) throw new Error(`pair add: ${r.stderr}`);
  };
  await pair(a.home, b.id, 'bob', lb.port);
  await pair(b.home, a.id, 'alice', la.port);
  await pair(a.home, c.id, 'carol');
  await pair(c.home, a.id, 'alice', la.port);

  // a's listener runs this sync (it serves dirA) and fetches big.bin from b.
  await syncReceiving(t, a.home, dirA, 'bob');
  await lb.stop('SIGKILL'); // and b stays away

  // c syncs the folder with a: a's silent sync with b lets go of it.
  const r = await runCli(['--home', c.home, 'sync', dirC, 'alice:docs', '--transport', 'quic', '--json'], {
    env: IDLE,
    timeoutMs: 60_000,
  });
  t.equal(r.code, 0, `c's sync succeeds; stderr: ${r.stderr}`);
  t.match(jsonLines(r.stdout).at(-1), { event: 'done', inSync: true });
  t.equal(await readFile(path.join(dirA, 'from-c.txt'), 'utf8'), 'c was here\n', "c's file reached a");
  t.match(
    la.stderr(),
    /closing the connection of an earlier sync of the folder/,
    "a closed the dead sync's connection",
  );
});
