// A path this node may not change (a directory it cannot write: here an immutable one) is left
// for the next sync and everything else lands, as Syncthing's failed items: before, the error
// failed every sync of the folder, and nothing else that sync brought was recorded. Both sides:
// the listener applying what the client sends (a new file and a deletion refused), and the
// client applying what the listener has (a new file refused). Once the directory can be
// written again, the next sync brings the rest.
// Needs root and chattr; CI runs as root, elsewhere the test skips saying why.
import t from 'tap';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { startSyncPair } from '../support/sync-pair-rig.js';
import { ImmutableLocks, immutableUnavailable } from '../support/immutable-files.js';
import { snapshot as fullSnapshot, type TreeItem } from './tree-helpers.js';

/** The tree without directory mtimes (they move with their entries; sync does not carry them). */
async function snapshot(root: string): Promise<TreeItem[]> {
  return (await fullSnapshot(root)).map((i) => (i.kind === 'dir' ? { ...i, mtimeS: 0 } : i));
}

const unavailable = await immutableUnavailable();

t.test(
  'a directory that cannot be written holds back only its own paths; the next sync brings them',
  { skip: unavailable ?? false },
  async (t) => {
    const rig = await startSyncPair(['ra', 'rb'], ['locked'], 'sync-refused');
    t.teardown(() => rig.listener.stop('SIGKILL'));
    const { client, server, sync } = rig;
    const locks = new ImmutableLocks(t);

    for (const d of ['d1', 'd2', 'd3']) await mkdir(client('locked', d), { recursive: true });
    await writeFile(client('locked', 'd1', 'old.txt'), 'to be deleted\n');
    await writeFile(client('locked', 'd2', 'keep.txt'), 'stays\n');
    await writeFile(client('locked', 'd3', 'keep.txt'), 'stays\n');
    t.match(await sync('locked'), { inSync: true }, 'first sync');

    // The listener cannot write d1; the client cannot write d3.
    locks.lock(server('locked', 'd1'));
    locks.lock(client('locked', 'd3'));
    await writeFile(client('locked', 'd1', 'new.txt'), 'refused on the listener\n');
    await rm(client('locked', 'd1', 'old.txt'));
    await writeFile(client('locked', 'd2', 'new.txt'), 'lands on the listener\n');
    // Written behind the client's immutable d3 on the listener's side only.
    await writeFile(server('locked', 'd3', 'new.txt'), 'refused on the client\n');
    await writeFile(server('locked', 'd2', 'down.txt'), 'lands on the client\n');

    const held = await sync('locked');
    t.match(held, { inSync: false }, 'not in sync: some paths are held back');
    const lines = held['lines'] as Record<string, unknown>[];
    t.same(
      lines.filter((l) => l['event'] === 'skipped').map((l) => l['path']),
      ['d3/new.txt'],
      'the client names the path it left',
    );
    t.equal(await readFile(server('locked', 'd2', 'new.txt'), 'utf8'), 'lands on the listener\n', 'd2 landed there');
    t.equal(await readFile(client('locked', 'd2', 'down.txt'), 'utf8'), 'lands on the client\n', 'd2 landed here');
    t.notOk(existsSync(server('locked', 'd1', 'new.txt')), 'the new file in d1 is held back');
    t.ok(existsSync(server('locked', 'd1', 'old.txt')), 'the deletion in d1 is held back');
    t.notOk(existsSync(client('locked', 'd3', 'new.txt')), 'the new file in d3 is held back');
    t.match(rig.listener.stderr(), /cannot (write a file|change a path) here; left for the next sync/);

    locks.unlockAll();
    t.match(await sync('locked'), { inSync: true }, 'writable again: the next sync brings the rest');
    t.same(await snapshot(client('locked')), await snapshot(server('locked')), 'converged');
    t.notOk(existsSync(server('locked', 'd1', 'old.txt')), 'the deletion landed');
  },
);
