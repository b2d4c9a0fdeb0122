// A folder paused on one node (`folder pause`) shows on its peer as `paused by the peer`, a
// state and no error, retried at the folder's interval, not with error backoff: the paused side
// refuses the peer's sync with SHARE_PAUSED (feature 'share-paused'; sync-service.ts), where it
// answered SHARE_UNKNOWN, which the peer showed as an `error` ("has not added folder docs, or
// has paused or removed it") and backed off from. Resumed, the folder syncs again at once.
import t from 'tap';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { allInSync, cli, docsOn, startFolderNodes, until, type FolderNode } from './folder-rig.js';
import { runCli } from './cli-harness.js';

const nodes = await startFolderNodes(['a', 'b']);
const [A, B] = nodes as [FolderNode, FolderNode];
t.teardown(async () => {
  for (const n of nodes) await n.listener.stop('SIGKILL');
});

type Pair = { peer: string; state: string; error?: string; nextAt?: number; lastSyncAt?: number };
const pairOnA = async (): Promise<Pair | undefined> =>
  ((await docsOn(A))?.peers as Pair[] | undefined)?.find((p) => p.peer === B.id);

t.test('a folder paused on the peer is a state here, not an error', async (t) => {
  for (const [n, other] of [
    [A, B],
    [B, A],
  ] as const)
    await cli(n.home, ['folder', 'add', n.dir, '--id', 'docs', '--with', other.name, '--interval', '3600']);
  await writeFile(path.join(A.dir, 'first.txt'), 'first\n');
  await until(nodes, 'docs in sync', async () => allInSync(nodes, 'docs'), 20_000);

  await cli(B.home, ['folder', 'pause', 'docs']);
  await until(nodes, 'B has paused docs', async () => (await docsOn(B))?.peers[0]?.state === 'paused');
  await writeFile(path.join(A.dir, 'second.txt'), 'second\n'); // A's change: its sync with B is refused
  let seen: Pair | undefined;
  await until(
    nodes,
    "A's status saying B paused the folder",
    async () => {
      const p = await pairOnA();
      if (p?.state === 'peer-paused' || p?.state === 'error') seen = p;
      return seen !== undefined;
    },
    20_000,
  );
  t.equal(seen?.state, 'peer-paused', `paused by the peer, not an error (${seen?.error ?? ''})`);
  t.equal(seen?.error, undefined, 'no error');
  t.ok((seen?.nextAt ?? 0) > Date.now() + 600_000, "next try at the folder's interval (an hour), not a backoff");
  t.type(seen?.lastSyncAt, 'number', 'the last sync before the pause still shows');
  const text = await runCli(['--home', A.home, 'status']);
  t.match(text.stdout, /b: paused by the peer, last sync/, `status says so: ${text.stdout}`);

  await cli(B.home, ['folder', 'resume', 'docs']);
  await until(
    nodes,
    'second.txt on B and docs in sync once B resumed',
    async () =>
      (await readFile(path.join(B.dir, 'second.txt'), 'utf8').catch(() => '')) === 'second\n' &&
      (await allInSync(nodes, 'docs')),
    20_000,
  );
  t.pass('in sync again once resumed');
});
