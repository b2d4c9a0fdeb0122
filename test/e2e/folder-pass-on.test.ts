// A revision that reaches a listener's folder without changing a file there (here: the same
// bytes saved on another device, an older save that loses to this node's) raises no watcher
// event. The listener still passes it on to the folder's other peers at once, not at the folder
// interval: the convergence test's seed 5027 left two nodes' revision logs apart for 60 s per hop.
//
// B and C run listeners and share `docs` with each other (interval one hour, so only a trigger
// syncs them). A is a device without a listener that syncs with B by hand.
import t from 'tap';
import { mkdir, readFile, stat, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { initNode, tempHome } from './cli-harness.js';
import { cli, foldersOf, hasText, startFolderNodes, until } from './folder-rig.js';

const nodes = await startFolderNodes(['b', 'c']);
t.teardown(async () => {
  for (const n of nodes) await n.listener.stop('SIGKILL');
});
const [B, C] = nodes as [(typeof nodes)[number], (typeof nodes)[number]];
const A = await initNode('fa');
const aDir = path.join(await tempHome('folder-a'), 'docs');
await mkdir(aDir);

/** Runs a command with `--json`; its JSON lines. */
await cli(A.home, ['pair', 'add', B.id, '--name', 'b', '--addr', `127.0.0.1:${B.listener.port}`]);
await cli(B.home, ['pair', 'add', A.id, '--name', 'a']);
await cli(B.home, ['folder', 'add', B.dir, '--id', 'docs', '--with', 'c,a', '--interval', '3600']);
await cli(C.home, ['folder', 'add', C.dir, '--id', 'docs', '--with', 'b', '--interval', '3600']);

const revisionsOf = async (n: (typeof nodes)[number]): Promise<number | undefined> =>
  (await foldersOf(n)).find((f) => f.id === 'docs')?.revisions;

t.test('a revision that changes no file on B still reaches C at once', async (t) => {
  const text = 'the same bytes on two devices\n';
  await writeFile(path.join(B.dir, 'same.txt'), text);
  await until(nodes, 'the file on C', hasText(path.join(C.dir, 'same.txt'), text));
  await until(nodes, 'B and C hold the same revisions', async () => {
    const [b, c] = [await revisionsOf(B), await revisionsOf(C)];
    return b !== undefined && b > 0 && b === c;
  });
  const before = await revisionsOf(B);

  // A saves the same bytes, an hour earlier: B's revision wins, and B's file is left as it is.
  const aFile = path.join(aDir, 'same.txt');
  await writeFile(aFile, text);
  const hourAgo = new Date(Date.now() - 3600_000);
  await utimes(aFile, hourAgo, hourAgo);
  const bFile = path.join(B.dir, 'same.txt');
  const bMtime = (await stat(bFile)).mtimeMs;
  const synced = await cli(A.home, ['sync', aDir, 'b:docs']);
  t.match(synced.at(-1), { inSync: true }, "A's sync with B completed in sync");

  await until(nodes, "B stores A's revision", async () => (await revisionsOf(B)) === (before ?? 0) + 1);
  t.equal((await stat(bFile)).mtimeMs, bMtime, "B's file is untouched: its watcher has nothing to see");
  const ms = await until(nodes, "A's revision on C (no watcher event on B)", async () => {
    const [b, c] = [await revisionsOf(B), await revisionsOf(C)];
    return b !== undefined && b === c;
  });
  t.comment(`B stored it; C had it ${ms} ms later (folder interval: 3600 s)`);
  t.equal(await readFile(path.join(C.dir, 'same.txt'), 'utf8'), text, 'C keeps the text');
});
