// A peer that unpaired this node refuses its folder syncs at the handshake: this node's status
// says `error` and why (README: a sync that fails with the peer reached, "refuses this node"),
// not `waiting for the peer` as if it were offline.
import t from 'tap';
import { cli, foldersOf, startFolderNodes, until } from './folder-rig.js';

const nodes = await startFolderNodes(['a', 'b']);
t.teardown(async () => {
  for (const n of nodes) await n.listener.stop('SIGKILL');
});
const [A, B] = nodes as [(typeof nodes)[number], (typeof nodes)[number]];

t.test('unpaired by the peer: status says error, not waiting', async (t) => {
  await cli(A.home, ['folder', 'add', A.dir, '--id', 'docs', '--with', 'b']);
  await cli(B.home, ['folder', 'add', B.dir, '--id', 'docs', '--with', 'a']);
  const stateOfA = async (): Promise<{ state: string; error?: string } | undefined> =>
    (await foldersOf(B)).find((f) => f.id === 'docs')?.peers[0];
  await until(nodes, 'B in sync with A', async () => (await stateOfA())?.state === 'in-sync');

  await cli(A.home, ['folder', 'remove', 'docs']);
  await cli(A.home, ['pair', 'remove', 'b']);
  await cli(B.home, ['folder', 'edit', 'docs', '--interval', '1']); // B syncs again soon
  await until(nodes, "B's sync refused", async () => (await stateOfA())?.error?.includes('is not paired') === true);
  t.match(await stateOfA(), { state: 'error' }, 'a refusal by a reachable peer');
});
