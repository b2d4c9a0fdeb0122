// A peer killed (SIGKILL) is `waiting` in status while the listener retries it, also during each
// retry's dial (before, the sync's activity began before the dial: status said `syncing` for
// the whole 5 s QUIC timeout of every retry, flickering between the two).
import t from 'tap';
import { cli, foldersOf, startFolderNodes, until } from '../e2e/folder-rig.js';

const nodes = await startFolderNodes(['a', 'b']);
t.teardown(async () => {
  for (const n of nodes) await n.listener.stop('SIGKILL');
});
const [A, B] = nodes as [(typeof nodes)[number], (typeof nodes)[number]];
const stateOfB = async (): Promise<string | undefined> =>
  (await foldersOf(A)).find((f) => f.id === 'docs')?.peers[0]?.state;

t.test('a dead peer stays waiting while it is retried', async (t) => {
  await cli(A.home, ['folder', 'add', A.dir, '--id', 'docs', '--with', 'b']);
  await cli(B.home, ['folder', 'add', B.dir, '--id', 'docs', '--with', 'a']);
  await until(nodes, 'A in sync with B', async () => (await stateOfB()) === 'in-sync');
  await B.listener.stop('SIGKILL');
  await cli(A.home, ['folder', 'edit', 'docs', '--interval', '1']); // A syncs (dials B) again at once
  await until(nodes, 'A waiting for B', async () => (await stateOfB()) === 'waiting', 30_000);
  // The backoff's first retries (1 s, 2 s, 4 s, jittered) and their dials fall in these 12 s.
  const seen = new Set<string>();
  const end = Date.now() + 12_000;
  while (Date.now() < end) {
    seen.add((await stateOfB()) ?? 'none');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  t.same([...seen], ['waiting'], 'never syncing with a peer that is not there');
});
