// A synced path whose type changes on one side: a file or link replaced by a directory of the
// same name, or a directory by a file or link. Sync carries it, both ways (the listener applying
// the client's change and the client applying the listener's): the replaced file goes into
// history, the directory's contents are deleted as the peer deleted them. Before, the path was
// left as is with a warning and the folder never got in sync again (and earlier still, every
// later sync failed). What a replaced directory still holds here that the peer never saw moves
// aside under its unsynced name and reaches the peer from there: nothing lost.
import t from 'tap';
import { lstat, mkdir, readdir, readFile, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import { historyBlobPath } from '../../src/store/sync-history.js';
import { startSyncPair } from '../support/sync-pair-rig.js';

const rig = await startSyncPair(['ka', 'kb'], ['kinds', 'aside'], 'sync-kinds');
t.teardown(() => rig.listener.stop('SIGKILL'));
const { client, server, sync } = rig;

const kindOf = async (p: string): Promise<string> => {
  const st = await lstat(p).catch(() => undefined);
  return st === undefined ? 'none' : st.isDirectory() ? 'dir' : st.isSymbolicLink() ? 'link' : 'file';
};

t.test('files become directories and back, and a directory a link, both ways', async (t) => {
  await mkdir(client('kinds', 'tree'), { recursive: true });
  await writeFile(client('kinds', 'up'), 'a file\n');
  await writeFile(client('kinds', 'down'), 'a file\n');
  await writeFile(client('kinds', 'tree', 'leaf.txt'), 'leaf\n');
  await writeFile(client('kinds', 'other.txt'), 'v1\n');
  t.match(await sync('kinds'), { inSync: true }, 'first sync');

  // The client turns `up` into a directory, the listener's side turns `down` into one, and the
  // client turns the directory `tree` into a link.
  await rm(client('kinds', 'up'));
  await mkdir(client('kinds', 'up', 'deeper'), { recursive: true });
  await writeFile(client('kinds', 'up', 'deeper', 'inside.txt'), 'in the new directory\n');
  await rm(server('kinds', 'down'));
  await mkdir(server('kinds', 'down'));
  await writeFile(server('kinds', 'down', 'inside.txt'), 'in the new directory too\n');
  await rm(client('kinds', 'tree'), { recursive: true });
  await symlink('other.txt', client('kinds', 'tree'));
  await writeFile(client('kinds', 'other.txt'), 'v2 from the client\n');

  const dry = (await sync('kinds', ['--dry-run']))['lines'] as Record<string, unknown>[];
  t.match(
    dry.filter((l) => l['event'] === 'would-receive' && l['path'] === 'down'),
    [{ change: 'update', kind: 'dir' }],
    'a dry run lists the file that would become a directory here',
  );
  t.match(await sync('kinds'), { inSync: true }, 'in sync: the type changes landed');
  t.equal(await readFile(server('kinds', 'up', 'deeper', 'inside.txt'), 'utf8'), 'in the new directory\n');
  t.equal(await readFile(client('kinds', 'down', 'inside.txt'), 'utf8'), 'in the new directory too\n');
  t.equal(await kindOf(server('kinds', 'tree')), 'link', 'the directory became a link there');
  t.equal(await readlink(server('kinds', 'tree')), 'other.txt');
  t.equal(await readFile(server('kinds', 'other.txt'), 'utf8'), 'v2 from the client\n');
  // The replaced file is in history on the side that applied the change.
  const upLog = await rig.revisions(rig.a.home, server('kinds', 'up'));
  const replaced = upLog.find((r) => r['path'] === 'up' && r['kind'] === 'file' && r['deleted'] === false);
  t.equal(
    await readFile(historyBlobPath(server('kinds'), Buffer.from(String(replaced?.['contentRoot']), 'hex')), 'utf8'),
    'a file\n',
    "the listener keeps the replaced file's bytes in history",
  );

  // And back: the directories become files again, each on the other side this time.
  await rm(server('kinds', 'up'), { recursive: true });
  await writeFile(server('kinds', 'up'), 'a file again\n');
  await rm(client('kinds', 'down'), { recursive: true });
  await writeFile(client('kinds', 'down'), 'a file again too\n');
  t.match(await sync('kinds'), { inSync: true }, 'in sync again');
  t.equal(await readFile(client('kinds', 'up'), 'utf8'), 'a file again\n');
  t.equal(await readFile(server('kinds', 'down'), 'utf8'), 'a file again too\n');
  t.match(await sync('kinds'), { inSync: true, revisionsSent: 0, revisionsReceived: 0 }, 'and it stays so');
});

t.test('a directory replaced by a file keeps what only this side had in it, aside', async (t) => {
  await mkdir(client('aside', 'box'), { recursive: true });
  await writeFile(client('aside', 'box', 'a.txt'), 'synced\n');
  t.match(await sync('aside'), { inSync: true }, 'first sync');

  // The client replaces the directory with a file; meanwhile the listener's side gets a new
  // file in it, which the client never saw.
  await rm(client('aside', 'box'), { recursive: true });
  await writeFile(client('aside', 'box'), 'now a file\n');
  await writeFile(server('aside', 'box', 'new.txt'), 'made there\n');

  await sync('aside'); // not in sync yet: the new file came in below what is a file here
  t.equal(await readFile(server('aside', 'box'), 'utf8'), 'now a file\n', "the client's file landed there");
  const moved = (await readdir(server('aside'))).filter((n) => n.startsWith('box.sync-unsynced-'));
  t.equal(moved.length, 1, `the directory moved aside there: ${moved.join(', ')}`);
  t.equal(await readFile(server('aside', moved[0] ?? '', 'new.txt'), 'utf8'), 'made there\n', 'with the new file');
  t.equal(await kindOf(server('aside', moved[0] ?? '', 'a.txt')), 'none', 'without the file the client deleted');

  t.match(await sync('aside'), { inSync: true }, 'the next sync gets both in sync');
  t.equal(await readFile(client('aside', moved[0] ?? '', 'new.txt'), 'utf8'), 'made there\n', 'nothing lost');
  t.equal(await readFile(client('aside', 'box'), 'utf8'), 'now a file\n');
});

t.test("the other way round: the listener's file wins, and the client names what the listener left", async (t) => {
  await mkdir(client('aside', 'crate'), { recursive: true });
  await writeFile(client('aside', 'crate', 'a.txt'), 'synced\n');
  t.match(await sync('aside'), { inSync: true }, 'first sync');

  await rm(server('aside', 'crate'), { recursive: true });
  await writeFile(server('aside', 'crate'), 'now a file there\n');
  await writeFile(client('aside', 'crate', 'new.txt'), 'made here\n');

  const r = await sync('aside');
  t.match(r, { inSync: false });
  const lines = r['lines'] as Record<string, unknown>[];
  t.same(
    lines.filter((l) => l['event'] === 'peer-skipped').map((l) => l['path']),
    ['crate/new.txt'],
    'the path the listener could not take is named',
  );
  t.equal(await readFile(client('aside', 'crate'), 'utf8'), 'now a file there\n', "the listener's file landed here");
  const moved = (await readdir(client('aside'))).filter((n) => n.startsWith('crate.sync-unsynced-'));
  t.equal(moved.length, 1, 'the directory moved aside here');
  t.match(await sync('aside'), { inSync: true }, 'the next sync gets both in sync');
  t.equal(await readFile(server('aside', moved[0] ?? '', 'new.txt'), 'utf8'), 'made here\n', 'nothing lost');
});
