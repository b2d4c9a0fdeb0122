// A peer SIGKILLed mid-sync over QUIC sends nothing: the listener's own sync with it (here one
// handed to it by `clawpeer sync`, as the folder service runs them) held the folder's lock until
// the connection's idle timeout. When the peer is back and syncs the folder here, that silent
// sync's connection is closed (folder-sync/running-syncs.ts) and the new sync goes ahead.
// Both listeners run with a 60 s idle timeout, so without that the new sync would wait out its
// 30 s lock wait and fail FOLDER_BUSY.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { IDLE, syncReceiving } from './dead-peer-kit.js';
import { initNode, jsonLines, runCli, startListener, tempHome, type RunningListener } from '../e2e/cli-harness.js';

async function listenOn(home: string, dir: string, port: number, env: NodeJS.ProcessEnv): Promise<RunningListener> {
  // The port was just freed by a SIGKILLed listener: a few tries while the OS lets go of it.
  for (let attempt = 0; ; attempt++) {
    try {
      return await startListener(home, ['--share', `docs=${dir}`, '-v'], { port, env: { ...IDLE, ...env } });
    } catch (err) {
      if (attempt >= 4) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

t.test('a sync with a peer killed mid-sync gives the folder up when the peer is back', async (t) => {
  const a = await initNode('deadpeer-a');
  const b = await initNode('deadpeer-b');
  const work = await tempHome('deadpeer');
  const dirA = path.join(work, 'a');
  const dirB = path.join(work, 'b');
  await mkdir(dirA);
  await mkdir(dirB);
  await writeFile(path.join(dirB, 'big.bin'), randomBytes(12 << 20));
  // b sends slowly, so it is killed while a receives.
  let lb = await listenOn(b.home, dirB, 0, { CLAWPEER_TEST_DELAY_PER_CHUNK_MS: '40' });
  const la = await listenOn(a.home, dirA, 0, {});
  t.teardown(async () => {
    await la.stop('SIGKILL');
    await lb.stop('SIGKILL');
  });
  const pair = async (home: string, id: string, name: string, port: number): Promise<void> => {
    const r = await runCli(['--home', home, 'pair', 'add', id, '--name', name, '--addr', `127.0.0.1:${port}`]);
    if (r.code !== 0) throw new Error(`pair add: ${r.stderr}`);
  };
  await pair(a.home, b.id, 'bob', lb.port);
  await pair(b.home, a.id, 'alice', la.port);

  // a's listener runs this sync (it serves dirA) and fetches big.bin from b.
  await syncReceiving(t, a.home, dirA, 'bob');
  const port = lb.port;
  await lb.stop('SIGKILL');
  const killed = Date.now();
  lb = await listenOn(b.home, dirB, port, {});

  // b is back and syncs the folder with a: a's silent sync with it lets go of the folder.
  const r = await runCli(['--home', b.home, 'sync', dirB, 'alice:docs', '--transport', 'quic', '--json'], {
    env: IDLE,
    timeoutMs: 60_000,
  });
  const ms = Date.now() - killed;
  t.equal(r.code, 0, `the sync from the restarted peer succeeds; stderr: ${r.stderr}`);
  t.match(jsonLines(r.stdout).at(-1), { event: 'done', inSync: true });
  t.ok(ms < 25_000, `done ${ms} ms after the kill (before a 30 s lock wait could end)`);
  t.same(await readFile(path.join(dirA, 'big.bin')), await readFile(path.join(dirB, 'big.bin')), 'big.bin arrived');
  t.match(
    la.stderr(),
    /closing the connection of an earlier sync of the folder/,
    "a closed the dead sync's connection",
  );
});
