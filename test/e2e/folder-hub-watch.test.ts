// A folder synced with a peer whose copy is a plain share (`listen --share`, no folder service
// there: an always-on hub) hears of that copy's changes at once: the folder service watches the
// share (peer-share-watches.ts), so a change another device syncs into the hub, or one made on
// the hub's disk, arrives without waiting for the folder's interval (an hour here).
import t from 'tap';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { initNode, tempHome } from './cli-harness.js';
import { cli, foldersOf, hasText, startFolderNodes, until } from './folder-rig.js';

const hubDir = path.join(await tempHome('folder-hub'), 'docs');
await mkdir(hubDir);
const nodes = await startFolderNodes(['a', 'hub'], { hub: ['--share', `docs=${hubDir}`] });
t.teardown(async () => {
  for (const n of nodes) await n.listener.stop('SIGKILL');
});
const [A, HUB] = nodes as [(typeof nodes)[number], (typeof nodes)[number]];
// C: a device without a listener that pushes into the hub's share.
const C = await initNode('fc');
await cli(C.home, ['pair', 'add', HUB.id, '--name', 'hub', '--addr', `127.0.0.1:${HUB.listener.port}`]);
await cli(HUB.home, ['pair', 'add', C.id, '--name', 'c']);
await cli(A.home, ['folder', 'add', A.dir, '--id', 'docs', '--with', 'hub', '--interval', '3600']);

t.test("the hub's changes reach the folder at once, not at its interval", async (t) => {
  await until(
    nodes,
    'A watching the hub',
    async () => A.listener.stderr().includes("watching the peer's copy"),
    20_000,
  );
  const before = (await foldersOf(A)).find((f) => f.id === 'docs')?.peers[0]?.lastSyncAt;
  t.ok(typeof before === 'number', 'A synced with the hub');

  const local = path.join(await tempHome('folder-c'), 'note.txt');
  await writeFile(local, 'pushed to the hub by C\n');
  await cli(C.home, ['push', local, 'hub:docs']);
  const ms = await until(
    nodes,
    "C's file in A's folder",
    hasText(path.join(A.dir, 'note.txt'), 'pushed to the hub by C\n'),
  );
  t.comment(`C's push reached A ${ms} ms after it ended (folder interval: 3600 s)`);

  await writeFile(path.join(hubDir, 'on-hub.txt'), 'written on the hub\n');
  await until(
    nodes,
    "the hub's own edit in A's folder",
    hasText(path.join(A.dir, 'on-hub.txt'), 'written on the hub\n'),
  );
  t.pass("the hub's edit on its disk arrived too");
});
