// What `clawpeer status` says of the entries a folder cannot sync (one line per reason, the
// paths escaped, how many more), and what `clawpeer folder log` says of a revert.
import t from 'tap';
import { logLines } from '../../src/cli/commands/folder.js';
import { folderLines } from '../../src/cli/commands/status.js';

const folder = (unsyncable?: { reason: string; count: number; paths: string[] }[]) => ({
  id: 'docs',
  path: '/srv/docs',
  mode: 'two-way',
  versioning: 'keep-last:10',
  paused: false,
  ...(unsyncable === undefined ? {} : { unsyncable }),
  peers: [{ peer: 'id', name: 'bob', state: 'in-sync' as const, since: 0, lastSyncAt: 0, mode: 'two-way' }],
});

t.test('status: a line per reason, its paths escaped, then what to do', async (t) => {
  const paths = Array.from({ length: 10 }, (_, i) => `f${i}\x1b`);
  const lines = folderLines(
    folder([
      { reason: 'name has a control character', count: 12, paths },
      { reason: 'name is not valid UTF-8', count: 1, paths: ['caf\\#351'] },
    ]),
    new Map(),
    1000,
  );
  t.equal(lines[0], 'folder docs (two-way) /srv/docs');
  t.equal(
    lines[1],
    `  12 paths cannot be synced: name has a control character (${paths.map((p) => p.replace('\x1b', '\\#033')).join(', ')}, ... 2 more)`,
  );
  t.equal(lines[2], '  1 path cannot be synced: name is not valid UTF-8 (caf\\#351)');
  t.equal(lines[3], '    left out of every sync of the folder until renamed (or made readable)');
  t.match(lines[4], /^ {2}bob: in-sync/);
  t.equal(
    folderLines(folder([{ reason: 'name has a control character', count: 1, paths: ['a\nb'] }]), new Map(), 1000)[1],
    '  1 path cannot be synced: name has a control character (a\\#012b)',
    'a raw newline is escaped too',
  );
  t.equal(folderLines(folder(), new Map(), 1000).length, 2, 'none (or an older listener): no line');
});

t.test('folder log: a revert, how many paths, where the local versions went, each path', async (t) => {
  const now = Date.UTC(2026, 11, 5);
  const text = logLines(
    {
      kind: 'revert',
      time: now - 5000,
      folder: 'docs',
      reverted: 3,
      withdrawn: 4,
      keptIn: '/srv/docs/.clawpeer/reverted/2026-12-05T00-00-00-000Z',
      paths: [
        { path: 'a\u202eb.txt', local: 'file', peers: 'none' },
        { path: 'kept.txt', local: 'file', peers: 'file', bySync: true },
      ],
    },
    now,
  );
  t.same(text.split('\n'), [
    "2026-12-04T23:59:55.000Z revert: 3 paths back to the peers' version, 4 local revisions withdrawn; the local versions moved to /srv/docs/.clawpeer/reverted/2026-12-05T00-00-00-000Z (5 s ago)",
    '  a\\u202eb.txt: file here -> gone (no peer has it)',
    "  kept.txt: file here -> the peers' current version, with the sync that follows",
    '  ... and 1 more',
  ]);
});

t.test("status: a send-only folder's paths changed by peers, escaped, then what to do", async (t) => {
  const f = { ...folder(), mode: 'send-only', peerChanges: 12, peerChangePaths: ['a\x1bb.txt', 'one.txt'] };
  const lines = folderLines(f, new Map(), 1000);
  t.equal(lines[1], '  12 paths changed by peers, not taken (send-only): a\\#033b.txt, one.txt, ... 10 more');
  t.equal(lines[2], "    clawpeer folder override docs makes this copy's versions the newest on every peer");
  t.equal(folderLines({ ...f, peerChanges: 0, peerChangePaths: [] }, new Map(), 1000).length, 2, 'none: no line');
});

t.test('folder log: an override, how many paths, each with what this copy holds', async (t) => {
  const now = Date.UTC(2026, 11, 5);
  const text = logLines(
    {
      kind: 'override',
      time: now - 5000,
      folder: 'docs',
      overridden: 3,
      paths: [
        { path: 'gone\u202e.txt', here: 'deleted' },
        { path: 'one.txt', here: 'file' },
      ],
    },
    now,
  );
  t.same(text.split('\n'), [
    "2026-12-04T23:59:55.000Z override: this copy's version of 3 paths made the newest (5 s ago)",
    '  gone\\u202e.txt: deleted here',
    '  one.txt: file here',
    '  ... and 1 more',
  ]);
});
