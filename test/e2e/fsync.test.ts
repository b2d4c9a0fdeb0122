// --fsync=none on push, pull and sync: what lands is the same as with the default batch fsync,
// and a listener share served with :fsync refuses it by name (exit 3), publishing nothing.
import t from 'tap';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { initNode, jsonLines, runCli, startListener } from './cli-harness.js';
import { snapshot } from './tree-helpers.js';

const a = await initNode('fa');
const b = await initNode('fb');
const work = await mkdtemp(path.join(tmpdir(), 'clawpeer-fsync-'));
const inbox = path.join(work, 'inbox');
const durable = path.join(work, 'durable');
await runCli(['--home', a.home, 'pair', 'add', b.id, '--name', 'bob']);
const listener = await startListener(a.home, ['--share', `inbox=${inbox}`, '--share', `durable=${durable}:fsync`]);
t.teardown(() => listener.stop('SIGKILL'));
await runCli(['--home', b.home, 'pair', 'add', a.id, '--name', 'alice', '--addr', `127.0.0.1:${listener.port}`]);

const src = path.join(work, 'src');
await mkdir(path.join(src, 'sub'), { recursive: true });
await writeFile(path.join(src, 'a.txt'), 'alpha\n');
await writeFile(path.join(src, 'sub', 'b.bin'), Buffer.alloc(300_000, 7));

t.test('push and pull with --fsync=none land byte-identical trees', async (t) => {
  const push = await runCli(['--home', b.home, 'push', src, 'alice:inbox', '--fsync', 'none', '--json']);
  t.equal(push.code, 0, push.stderr);
  t.match(jsonLines(push.stdout).at(-1), { event: 'done', files: 2 });
  t.same(await snapshot(path.join(inbox, 'src')), await snapshot(src));

  const back = path.join(work, 'back');
  const pull = await runCli(['--home', b.home, 'pull', 'alice:inbox/src', back, '--fsync', 'none']);
  t.equal(pull.code, 0, pull.stderr);
  t.same(await snapshot(path.join(back, 'src')), await snapshot(src));
});

t.test('a share served with :fsync refuses --fsync=none on push and sync, and takes the default', async (t) => {
  const refused = await runCli(['--home', b.home, 'push', src, 'alice:durable', '--fsync', 'none']);
  t.equal(refused.code, 3, refused.stderr);
  t.match(refused.stderr, /share durable refuses --fsync=none \(it is served with :fsync\)/);
  t.notOk(existsSync(path.join(durable, 'src')), 'nothing was published');

  const folder = path.join(work, 'folder');
  await mkdir(folder);
  await writeFile(path.join(folder, 'c.txt'), 'gamma\n');
  const syncRefused = await runCli(['--home', b.home, 'sync', folder, 'alice:durable', '--fsync', 'none']);
  t.equal(syncRefused.code, 3, syncRefused.stderr);
  t.match(syncRefused.stderr, /refuses --fsync=none/);
  t.notOk(existsSync(path.join(durable, 'c.txt')));

  t.equal((await runCli(['--home', b.home, 'push', src, 'alice:durable'])).code, 0, 'the default batch fsync is taken');
  t.same(await snapshot(path.join(durable, 'src')), await snapshot(src));
});

t.test('sync --fsync=none converges both ways', async (t) => {
  const folder = path.join(work, 'synced');
  await mkdir(folder);
  await writeFile(path.join(folder, 'mine.txt'), 'from bob\n');
  await writeFile(path.join(inbox, 'theirs.txt'), 'from alice\n');
  const sync = await runCli(['--home', b.home, 'sync', folder, 'alice:inbox', '--fsync', 'none']);
  t.equal(sync.code, 0, sync.stderr);
  t.ok(existsSync(path.join(folder, 'theirs.txt')), "the listener's file arrived here");
  t.ok(existsSync(path.join(inbox, 'mine.txt')), "this side's file arrived at the listener");
});
