// A synced file replaced by a directory of the same name on one side. Sync does not carry a
// type change (the path is left as is, with a warning): before, what lay inside the new
// directory was planned anyway, the publisher refused to write below the other side's file
// ("is a file where a directory should be", exit 5), and every later sync of the folder failed
// the same way, `sync --watch` included. Now those paths are left as is too and the rest of
// the folder lands, the sync ending not in sync. Both sides: the listener applying the client's
// change, and the client applying the listener's.
import t from 'tap';
import { lstat, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { startSyncPair } from '../support/sync-pair-rig.js';

const rig = await startSyncPair(['ka', 'kb'], ['kinds'], 'sync-kinds');
t.teardown(() => rig.listener.stop('SIGKILL'));
const { client, server, sync } = rig;

t.test('a file replaced by a directory holds back only its own paths; the rest lands', async (t) => {
  await mkdir(client('kinds'), { recursive: true });
  await writeFile(client('kinds', 'up'), 'a file\n');
  await writeFile(client('kinds', 'down'), 'a file\n');
  await writeFile(client('kinds', 'other.txt'), 'v1\n');
  t.match(await sync('kinds'), { inSync: true }, 'first sync');

  // The client turns `up` into a directory, the listener's side turns `down` into one.
  await rm(client('kinds', 'up'));
  await mkdir(client('kinds', 'up'));
  await writeFile(client('kinds', 'up', 'inside.txt'), 'in the new directory\n');
  await rm(server('kinds', 'down'));
  await mkdir(server('kinds', 'down'));
  await writeFile(server('kinds', 'down', 'inside.txt'), 'in the new directory\n');
  await writeFile(client('kinds', 'other.txt'), 'v2 from the client\n');
  await writeFile(server('kinds', 'news.txt'), 'new on the listener\n');

  const r = await sync('kinds'); // throws on a non-zero exit
  t.match(r, { inSync: false }, 'not in sync: the type changes are left as they are');
  t.equal(await readFile(server('kinds', 'other.txt'), 'utf8'), 'v2 from the client\n', 'the edit landed there');
  t.equal(await readFile(client('kinds', 'news.txt'), 'utf8'), 'new on the listener\n', 'the new file landed here');
  t.ok((await lstat(server('kinds', 'up'))).isFile(), "the listener's file is left as is");
  t.ok((await lstat(client('kinds', 'down'))).isFile(), "the client's file is left as is");

  // Later syncs keep working (before, each failed the same way).
  await writeFile(client('kinds', 'other.txt'), 'v3 from the client\n');
  t.match(await sync('kinds'), { inSync: false });
  t.equal(await readFile(server('kinds', 'other.txt'), 'utf8'), 'v3 from the client\n');
});
