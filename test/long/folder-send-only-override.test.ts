// A send-only copy learns which paths its peer changed and it does not take, and `folder
// override` makes its own versions win there again, with two real listeners. Before, A's
// status said nothing of B's edit, and no command existed to take it back.
//
// A is send-only, B two-way, sharing `docs`; interval one hour, so only a change syncs a pair.
import t from 'tap';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { allInSync, cli, docsOn, hasText, startFolderNodes, until, type FolderNode } from '../e2e/folder-rig.js';

const nodes = await startFolderNodes(['a', 'b']);
t.teardown(async () => {
  for (const n of nodes) await n.listener.stop('SIGKILL');
});
const [A, B] = nodes as [FolderNode, FolderNode];

t.test("B's edit and deletion: named on A, overridden back", async (t) => {
  await writeFile(path.join(A.dir, 'one.txt'), 'from A\n');
  await writeFile(path.join(A.dir, 'two.txt'), 'two from A\n');
  const add = (n: FolderNode, peers: string, ...more: string[]) =>
    cli(n.home, ['folder', 'add', n.dir, '--id', 'docs', '--with', peers, '--interval', '3600', ...more]);
  await add(A, 'b', '--mode', 'send-only');
  await add(B, 'a');
  await until(nodes, 'the files on B', hasText(path.join(B.dir, 'two.txt'), 'two from A\n'), 20_000);
  await until(nodes, 'the files on B', hasText(path.join(B.dir, 'one.txt'), 'from A\n'), 20_000);
  // B's edits wait for the sync that brought the files to end (an edit while it lands is kept beside).
  await until(nodes, 'both in sync', () => allInSync(nodes, 'docs'), 20_000);

  await writeFile(path.join(B.dir, 'one.txt'), 'edited on B\n');
  await rm(path.join(B.dir, 'two.txt'));
  const named = async (): Promise<boolean> =>
    JSON.stringify((await docsOn(A))?.peerChangePaths) === JSON.stringify(['one.txt', 'two.txt']);
  await until(nodes, "B's changes in A's status", named, 20_000);
  t.equal(await hasText(path.join(A.dir, 'one.txt'), 'from A\n')(), true, 'A took nothing');

  const plan = await cli(A.home, ['folder', 'override', 'docs', '--dry-run']);
  t.equal(plan[0]?.['event'], 'folder-override-plan');
  t.equal(await hasText(path.join(B.dir, 'one.txt'), 'edited on B\n')(), true, 'the dry run changed nothing');
  t.equal((await docsOn(A))?.peerChanges, 2);

  const done = await cli(A.home, ['folder', 'override', 'docs']);
  t.equal(done[0]?.['event'], 'folder-overridden');
  t.same(
    (done[0]?.['paths'] as { path: string }[]).map((p) => p.path),
    ['one.txt', 'two.txt'],
  );
  await until(nodes, "A's content on B again", hasText(path.join(B.dir, 'one.txt'), 'from A\n'), 20_000);
  await until(nodes, "B's deletion undone", hasText(path.join(B.dir, 'two.txt'), 'two from A\n'), 20_000);
  t.equal((await docsOn(A))?.peerChanges ?? 0, 0, "A's status names nothing");
  const log = await cli(A.home, ['folder', 'log', 'docs']);
  t.same(
    log.filter((e) => e['event'] === 'folder-override').map((e) => e['overridden']),
    [2],
    "A's folder log has the override, once (the dry run is not logged)",
  );
});
