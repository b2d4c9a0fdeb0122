// A listener restarted on the same home remembers when each folder last synced with each peer
// (folders/last-syncs.ts, the folder's .clawpeer/last-syncs.json): its `status` says `last sync
// ... ago` for a peer it synced with before the restart, even while that peer is away, not
// `never synced` (the time lived only in memory before). B is stopped before A restarts, so no
// sync of this run can set the time.
import t from 'tap';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { allInSync, cli, foldersOf, startFolderNodes, until, type FolderNode } from './folder-rig.js';
import { runCli, startListener } from './cli-harness.js';

const nodes = await startFolderNodes(['a', 'b']);
const [A, B] = nodes as [FolderNode, FolderNode];
t.teardown(async () => {
  for (const n of nodes) await n.listener.stop('SIGKILL');
});

t.test("a restarted listener's status shows the last sync from before the restart", async (t) => {
  for (const [n, other] of [
    [A, B],
    [B, A],
  ] as const)
    await cli(n.home, ['folder', 'add', n.dir, '--id', 'docs', '--with', other.name, '--interval', '3600']);
  await writeFile(path.join(B.dir, 'a.txt'), 'hello\n');
  await until(
    nodes,
    'a.txt on A, docs in sync',
    async () =>
      (await readFile(path.join(A.dir, 'a.txt'), 'utf8').catch(() => '')) === 'hello\n' &&
      (await allInSync(nodes, 'docs')),
    20_000,
  );
  const pairOnA = async (): Promise<{ state: string; lastSyncAt?: number } | undefined> =>
    (await foldersOf(A)).find((f) => f.id === 'docs')?.peers.find((p) => p.peer === B.id);
  const before = (await pairOnA())?.lastSyncAt;
  t.type(before, 'number', 'A synced with B');

  await B.listener.stop('SIGKILL'); // away: A's restarted listener cannot sync with it
  await A.listener.stop('SIGTERM');
  A.listener = await startListener(A.home, ['-v']);
  const after = await pairOnA();
  t.not(after?.state, 'in-sync', `no sync with B since the restart (${after?.state ?? 'none'})`);
  t.type(after?.lastSyncAt, 'number', 'the last sync is known after the restart');
  t.ok((after?.lastSyncAt ?? 0) >= (before ?? Infinity), 'the one from before the restart, or later');
  const text = await runCli(['--home', A.home, 'status']);
  t.match(text.stdout, /b: \S.*last sync \d/, `status says when: ${text.stdout}`);
  t.notMatch(text.stdout, /never synced/, 'not "never synced"');
});
