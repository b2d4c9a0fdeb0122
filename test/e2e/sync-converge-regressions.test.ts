// Bugs the convergence harness (test/slow/converge.test.ts) found, each replayed between two
// nodes through the real CLI. The seed that found each one is named in its test.
import t from 'tap';
import { mkdir, stat, utimes, writeFile } from 'node:fs/promises';
import { startSyncPair } from '../support/sync-pair-rig.js';

const { listener, server, client, sync } = await startSyncPair(['ra', 'rb'], ['same'], 'syncreg');
t.teardown(() => listener.stop('SIGKILL'));

// Found by seed 1002 (5 nodes, 60 steps): three nodes wrote the same (empty) bytes to one path
// before syncing; every node took the winner's revision, but a node whose file already had
// those bytes kept its own mtime, so the folders never became identical.
t.test("concurrent writes of the same bytes: both sides end with the winner's mtime", async (t) => {
  await mkdir(client('same'), { recursive: true });
  await writeFile(server('same', 'a.txt'), 'same\n');
  await writeFile(client('same', 'a.txt'), 'same\n');
  await writeFile(server('same', 'empty'), '');
  await writeFile(client('same', 'empty'), '');
  const older = new Date(Date.now() - 3600_000);
  const newer = new Date(Date.now() - 60_000);
  await utimes(server('same', 'a.txt'), older, older); // the client's, later, wins
  await utimes(client('same', 'a.txt'), newer, newer);
  await utimes(server('same', 'empty'), newer, newer); // the server's wins
  await utimes(client('same', 'empty'), older, older);
  t.match(await sync('same'), { inSync: true, conflicts: 0 });
  for (const name of ['a.txt', 'empty']) {
    const [s, c] = [await stat(server('same', name)), await stat(client('same', name))];
    t.ok(Math.abs(s.mtimeMs - c.mtimeMs) < 1, `${name}: mtimes ${s.mtimeMs} and ${c.mtimeMs} agree`);
    t.ok(Math.abs(s.mtimeMs - newer.getTime()) < 1, `${name}: the later write's mtime`);
  }
  t.match(await sync('same'), { inSync: true, revisionsSent: 0, revisionsReceived: 0 }, 'and nothing more to do');
});
