// History across a pair, through the real CLI over loopback: gc converges (what one side's gc
// dropped is not sent back by the next sync, and the peer drops it too), and restore fetches a
// revision's content from the peer when this side no longer keeps it (issue 32, items 1 and 2).
import t from 'tap';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { initNode, jsonLines, runCli } from './cli-harness.js';
import { startSyncPair } from '../support/sync-pair-rig.js';

const { a, b, listener, server, client, sync, revisions } = await startSyncPair(
  ['ha', 'hb'],
  ['gc', 'restore'],
  'synchist',
);
t.teardown(() => listener.stop('SIGKILL'));

t.test('gc on one side, then sync: the revisions stay dropped on this side and go on the other', async (t) => {
  await mkdir(client('gc'), { recursive: true });
  for (const v of ['v1', 'v2', 'v3']) {
    await writeFile(client('gc', 'f.txt'), `${v}\n`);
    await sync('gc');
  }
  t.equal((await revisions(a.home, server('gc', 'f.txt'))).length, 3, 'the listener holds three revisions');
  const gc = await runCli(['--home', b.home, 'gc', client('gc'), '--keep-last', '1', '--json']);
  t.equal(gc.code, 0, gc.stderr);
  t.match(jsonLines(gc.stdout)[0], { event: 'gc', removedRevisions: 2 });

  const r = await sync('gc');
  t.match(r, { inSync: true, revisionsReceived: 0 }, 'what gc dropped is not received again');
  t.equal((await revisions(b.home, client('gc', 'f.txt'))).length, 1, 'this side stays pruned');
  t.equal((await revisions(a.home, server('gc', 'f.txt'))).length, 1, 'the peer dropped them too');
  t.match(await sync('gc'), { inSync: true, revisionsReceived: 0, roundTrips: 1 }, 'then the folders are equal');
  t.equal(await readFile(server('gc', 'f.txt'), 'utf8'), 'v3\n', 'the current content is untouched');

  // The other way: gc on the listener's share; the listener tells the client.
  for (const v of ['v4', 'v5']) {
    await writeFile(server('gc', 'f.txt'), `${v}\n`);
    await sync('gc');
  }
  t.equal((await revisions(b.home, client('gc', 'f.txt'))).length, 3);
  const serverGc = await runCli(['--home', a.home, 'gc', server('gc'), '--keep-last', '1', '--json']);
  t.match(jsonLines(serverGc.stdout)[0], { event: 'gc', removedRevisions: 2 });
  t.match(await sync('gc'), { inSync: true, revisionsReceived: 0 });
  t.equal((await revisions(a.home, server('gc', 'f.txt'))).length, 1, 'the listener stays pruned');
  t.equal((await revisions(b.home, client('gc', 'f.txt'))).length, 1, 'the client dropped them too');
  t.equal(await readFile(client('gc', 'f.txt'), 'utf8'), 'v5\n');
});

t.test(
  'restore of a file deleted here fetches its content from the peer; where nothing has it, it says so',
  async (t) => {
    await mkdir(client('restore'), { recursive: true });
    await writeFile(client('restore', 'delete-me.txt'), 'precious\n');
    await writeFile(client('restore', 'gone.txt'), 'first\n');
    await sync('restore');
    await rm(client('restore', 'delete-me.txt'));
    await writeFile(client('restore', 'gone.txt'), 'second\n'); // overwritten here: only the peer keeps 'first'
    await sync('restore');

    const created = (await revisions(b.home, client('restore', 'delete-me.txt'))).find((e) => e['what'] === 'created');
    if (created === undefined) throw new Error('no created revision');
    // No --from: the folder remembers the peer and share it syncs with.
    const restored = await runCli([
      '--home',
      b.home,
      'restore',
      client('restore', 'delete-me.txt'),
      '--rev',
      String(created['id']).slice(0, 12),
      '--json',
    ]);
    t.equal(restored.code, 0, restored.stderr);
    t.equal(await readFile(client('restore', 'delete-me.txt'), 'utf8'), 'precious\n');
    t.match(jsonLines(restored.stdout)[0], { event: 'restored', path: 'delete-me.txt', fetchedFrom: 'alice' });
    // Landed now, as a restore of content kept here does: `log` lists it first, as the newest,
    // not last with the old revision's mtime.
    t.match(
      (await revisions(b.home, client('restore', 'delete-me.txt')))[0],
      { head: true, by: 'this node', deleted: false },
      'the restore is the newest revision in the log',
    );
    await sync('restore');
    t.equal(
      await readFile(server('restore', 'delete-me.txt'), 'utf8'),
      'precious\n',
      'the restore is an edit that syncs',
    );

    // The peer's gc drops its history copy of 'first': then nothing in the pair has it.
    const first = (await revisions(b.home, client('restore', 'gone.txt'))).find((e) => e['what'] === 'created');
    if (first === undefined) throw new Error('no first revision');
    const bad = await runCli(['--home', a.home, 'gc', server('restore'), '--policy', 'trashcan:soon']);
    t.not(bad.code, 0);
    t.match(bad.stderr, /versioning "trashcan:soon" is not valid/, 'a bad --policy is named');
    const recent = await runCli(['--home', a.home, 'gc', server('restore'), '--policy', 'trashcan:30', '--json']);
    t.equal(recent.code, 0, recent.stderr);
    t.match(
      jsonLines(recent.stdout)[0],
      { event: 'gc', removedRevisions: 0 },
      'trashcan:30 keeps what was replaced minutes ago',
    );
    const gc = await runCli(['--home', a.home, 'gc', server('restore'), '--policy', 'keep-last:1']);
    t.equal(gc.code, 0, gc.stderr);
    const lost = await runCli([
      '--home',
      b.home,
      'restore',
      client('restore', 'gone.txt'),
      '--rev',
      String(first['id']),
      '--from',
      'alice:restore',
    ]);
    t.equal(lost.code, 1, lost.stderr);
    t.match(lost.stderr, /kept neither here nor by alice: nothing in the pair has it any more/);
    t.equal(await readFile(client('restore', 'gone.txt'), 'utf8'), 'second\n', 'nothing changed');

    // Without the node's home there is no key to fetch with: the message says which --home to pass.
    const other = await initNode('hc');
    const noKey = await runCli([
      '--home',
      other.home,
      'restore',
      client('restore', 'gone.txt'),
      '--rev',
      String(first['id']),
    ]);
    t.not(noKey.code, 0);
    t.match(noKey.stderr, /pass the --home of the node that syncs this folder/);
    t.notMatch(noKey.stderr, /clawpeer init/);

    // A --rev that is no hex, and the log of a path the folder never had, say so.
    const notHex = await runCli(['--home', b.home, 'restore', client('restore', 'gone.txt'), '--rev', 'xyz']);
    t.equal(notHex.code, 2);
    t.match(notHex.stderr, /--rev "xyz" is not a revision id: give 8 to 64 hex digits/);
    const never = await runCli(['--home', b.home, 'log', client('restore', 'never-here.txt')]);
    t.equal(never.code, 1, 'not an empty listing with exit 0');
    t.match(never.stderr, /never-here\.txt has no revision in the log of /);
  },
);
