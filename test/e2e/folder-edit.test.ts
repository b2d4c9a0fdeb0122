// `clawpeer folder edit`: a shared folder's peers, mode, versioning and interval change in place
// (before, only `folder remove` + `folder add` could, and a typo there unshared the folder).
// Config only: the running listener's reaction to an edited folder is in folder-service.test.ts.
import t from 'tap';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { initNode, jsonLines, pairAdd, runCli } from './cli-harness.js';

const me = await initNode('folder-edit');
const bob = await initNode('folder-edit-bob');
const carol = await initNode('folder-edit-carol');
await pairAdd(me.home, bob.id, 'bob');
await pairAdd(me.home, carol.id, 'carol');
const dir = path.join(me.home, 'docs');
const cli = (...args: string[]): ReturnType<typeof runCli> => runCli(['--home', me.home, ...args]);
const added = await cli('folder', 'add', dir, '--id', 'docs', '--with', 'bob');
if (added.code !== 0) throw new Error(`folder add failed: ${added.stderr}`);

const storedFolder = async (): Promise<Record<string, unknown> | undefined> =>
  (
    JSON.parse(await readFile(path.join(me.home, 'config.json'), 'utf8')) as {
      folders: Record<string, unknown>[];
    }
  ).folders[0];

t.test('peers added and removed by name or id; the rest of the folder stays', async (t) => {
  const r = await cli('folder', 'edit', 'docs', '--add-peer', `carol,${bob.id}`, '--json');
  t.equal(r.code, 0, r.stderr);
  t.match(jsonLines(r.stdout), [{ event: 'folder-changed', id: 'docs', with: ['bob', 'carol'], path: dir }]);
  t.same((await storedFolder())?.['with'], ['bob', 'carol'], 'bob named by id is bob: not listed twice');

  const removed = await cli('folder', 'edit', 'docs', '--remove-peer', bob.id, '--versioning', 'trashcan:7');
  t.equal(removed.code, 0, removed.stderr);
  t.match(removed.stdout, /^changed docs: .* with carol \(two-way, versioning trashcan:7, every 60 s\)$/m);
  t.match(await storedFolder(), { id: 'docs', path: dir, with: ['carol'], mode: 'two-way', versioning: 'trashcan:7' });

  const replaced = await cli('folder', 'edit', 'docs', '--with', 'bob', '--mode', 'send-only', '--interval', '30');
  t.equal(replaced.code, 0, replaced.stderr);
  t.match(await storedFolder(), { with: ['bob'], mode: 'send-only', versioning: 'trashcan:7', intervalS: 30 });
});

t.test('a wrong edit names what is wrong and changes nothing', async (t) => {
  const before = await readFile(path.join(me.home, 'config.json'), 'utf8');
  const cases: [string[], number, RegExp][] = [
    [['docs'], 2, /nothing to change: give --with, --add-peer/],
    [['docs', '--add-peer', 'mallory'], 2, /--add-peer mallory: not a paired peer name or id/],
    [
      ['docs', '--remove-peer', 'carol'],
      2,
      /--remove-peer carol: folder docs is not shared with it \(it is with bob\)/,
    ],
    [['docs', '--remove-peer', 'bob'], 2, /would be shared with no peer: keep one, or .*folder remove docs/],
    [['docs', '--with', 'bob', '--add-peer', 'carol'], 2, /--with replaces the peer list: give it alone/],
    [['docs', '--versioning', 'keep-forever'], 2, /--versioning: /],
    [['nope', '--add-peer', 'carol'], 2, /no folder "nope" in this home \(folders: docs\)/],
  ];
  const again = await cli('folder', 'add', dir, '--id', 'docs', '--with', 'carol');
  t.equal(again.code, 2, 'folder add of an id that exists is refused');
  t.match(again.stderr, /a folder "docs" exists already \(change it with clawpeer folder edit docs\)/);
  for (const [args, code, message] of cases) {
    const r = await cli('folder', 'edit', ...args);
    t.equal(r.code, code, `folder edit ${args.join(' ')}: exit code`);
    t.match(r.stderr, message, `folder edit ${args.join(' ')}: says why`);
  }
  t.equal(await readFile(path.join(me.home, 'config.json'), 'utf8'), before, 'config.json untouched');
});
