// `clawpeer status`'s line for a receive-only folder's local changes (folders/local-changes.ts):
// the count of all, the paths the listener sent (at most 10), how many more, and none at zero.
import t from 'tap';
import { folderLines } from '../../src/cli/commands/status.js';

const folder = (localChanges: number | undefined, localChangePaths: string[]) => ({
  id: 'docs',
  path: '/srv/docs',
  mode: 'receive-only',
  versioning: 'keep-last:10',
  paused: false,
  ...(localChanges === undefined ? {} : { localChanges, localChangePaths }),
  peers: [{ peer: 'id', name: 'bob', state: 'in-sync' as const, since: 0, lastSyncAt: 0, mode: 'receive-only' }],
});

t.test('a receive-only folder with local changes names them', async (t) => {
  const paths = Array.from({ length: 10 }, (_, i) => `f${i}.txt`);
  const lines = folderLines(folder(25, paths), new Map(), 1000);
  t.equal(lines[0], 'folder docs (receive-only) /srv/docs');
  t.equal(lines[1], `  local changes kept: 25 (${paths.join(', ')}, ... 15 more): receive-only, not sent`);
  t.equal(
    lines[2],
    "    clawpeer folder revert docs takes the peers' versions back (the local ones move to .clawpeer/reverted/)",
  );
  t.match(lines[3], /^ {2}bob: in-sync/);
  t.equal(
    folderLines(folder(2, ['a\u202eb.txt', 'c.txt']), new Map(), 1000)[1],
    '  local changes kept: 2 (a\\u202eb.txt, c.txt): receive-only, not sent',
    'a path is shown escaped',
  );
});

t.test('none, or an older listener: no line', async (t) => {
  t.equal(folderLines(folder(0, []), new Map(), 1000).length, 2);
  t.equal(folderLines(folder(undefined, []), new Map(), 1000).length, 2);
});
