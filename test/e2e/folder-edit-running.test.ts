// `clawpeer folder edit` while the listener runs: a copy changed from send-only to two-way takes
// the peers' files at once (before, the edited folder waited for its interval: with an hour's
// interval, an hour with none of the peers' files).
import t from 'tap';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { allInSync, cli, hasText, startFolderNodes, until } from './folder-rig.js';

const nodes = await startFolderNodes(['a', 'b']);
t.teardown(async () => {
  for (const n of nodes) await n.listener.stop('SIGKILL');
});
const [A, B] = nodes as [(typeof nodes)[number], (typeof nodes)[number]];

t.test('send-only edited to two-way: the peer files arrive without waiting for the interval', async (t) => {
  await writeFile(path.join(A.dir, 'from-a.txt'), 'written on A\n');
  await cli(A.home, ['folder', 'add', A.dir, '--id', 'docs', '--with', 'b', '--interval', '3600']);
  await cli(B.home, [
    ...['folder', 'add', B.dir, '--id', 'docs', '--with', 'a'],
    '--interval',
    '3600',
    '--mode',
    'send-only',
  ]);
  await until(nodes, 'every pair in sync', () => allInSync(nodes, 'docs'));
  t.notOk(await hasText(path.join(B.dir, 'from-a.txt'), 'written on A\n')(), 'a send-only copy takes nothing');

  await cli(B.home, ['folder', 'edit', 'docs', '--mode', 'two-way']);
  await until(nodes, "A's file on B once two-way", hasText(path.join(B.dir, 'from-a.txt'), 'written on A\n'));
  t.pass('the edited folder synced at once');
});
