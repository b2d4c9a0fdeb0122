// One shared folder inside another: `folder add` took it, and the listener then synced both, so
// the outer folder's scan recorded the inner one's `.clawpeer/revlog` (its open LMDB files) as
// content and sent it to every peer of the outer folder (only the root's `.clawpeer` is state).
// Now `folder add` refuses a path inside a folder or holding one, and a listener given such a
// config.json by hand leaves the later folder out, saying why in `status`.
import t from 'tap';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { jsonLines, runCli } from './cli-harness.js';
import { addFolderEverywhere, allInSync, hasText, statusOf, startFolderNodes, until } from './folder-rig.js';

const nodes = await startFolderNodes(['a', 'b']);
t.teardown(async () => {
  for (const n of nodes) await n.listener.stop('SIGKILL');
});
const [A, B] = nodes as [(typeof nodes)[number], (typeof nodes)[number]];
const exists = (p: string): Promise<boolean> =>
  stat(p).then(
    () => true,
    () => false,
  );

t.test('a folder inside another is refused, by folder add and by the listener', async (t) => {
  await addFolderEverywhere(nodes, 'docs');
  const inner = path.join(A.dir, 'work');
  await mkdir(inner);
  await writeFile(path.join(inner, 'plan.txt'), 'plan\n');
  await until(nodes, 'the file on B', hasText(path.join(B.dir, 'work', 'plan.txt'), 'plan\n'));

  const refused = await runCli(['--home', A.home, 'folder', 'add', inner, '--id', 'work', '--with', 'b']);
  t.equal(refused.code, 2, 'folder add of a path inside a folder: exit 2');
  t.match(refused.stderr, /overlaps folder docs/, 'naming the folder it lies in');
  const outer = await runCli(['--home', A.home, 'folder', 'add', path.dirname(A.dir), '--id', 'all', '--with', 'b']);
  t.equal(outer.code, 2, 'folder add of a path holding a folder: exit 2');

  // The same by hand in config.json: the listener leaves the inner folder out.
  const configFile = path.join(A.home, 'config.json');
  const config = JSON.parse(await readFile(configFile, 'utf8')) as { folders: Record<string, unknown>[] };
  config.folders.push({ id: 'work', path: inner, with: ['b'], mode: 'two-way', versioning: 'keep-last:10' });
  await writeFile(configFile, JSON.stringify(config, null, 2));
  const problemOf = async (): Promise<string | undefined> => {
    const folders = ((await statusOf(A))['folders'] ?? []) as { id: string; problem?: string }[];
    return folders.find((f) => f.id === 'work')?.problem;
  };
  await until(nodes, 'the listener naming the overlap', async () => (await problemOf()) !== undefined);
  t.match(await problemOf(), /overlaps folder docs/, 'status says why the inner folder is left out');

  // A change in the outer folder still syncs, and no .clawpeer/ of the inner one travels.
  await writeFile(path.join(A.dir, 'after.txt'), 'after\n');
  await until(nodes, 'the next change on B', hasText(path.join(B.dir, 'after.txt'), 'after\n'));
  await until(nodes, 'docs in sync', () => allInSync(nodes, 'docs'));
  t.equal(await exists(path.join(inner, '.clawpeer')), false, 'the inner folder was not set up');
  t.equal(await exists(path.join(B.dir, 'work', '.clawpeer')), false, 'no inner .clawpeer on the peer');
  const listed = jsonLines((await runCli(['--home', A.home, 'folder', 'list', '--json'])).stdout);
  t.equal(listed.length, 2, 'the hand-made entry stays in the list');
});
