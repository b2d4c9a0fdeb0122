// A home's state is private (issue 27, item 7, and the control socket): `init` writes the key
// through an exclusive, unguessable temp file (a symlink planted at the old predictable name
// `identity.key.tmp-<pid>` used to receive the key), a home others can write or another user
// owns is refused with the command that fixes it, and after the usual commands nothing in a home
// (or a synced folder's .clawpeer) is open to group or others, even under umask 002.
import t from 'tap';
import { chmod, chown, lstat, mkdir, mkdtemp, readFile, readdir, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createIdentity, loadIdentity } from '../../src/home/identity-store.js';
import { PeerStore } from '../../src/home/peer-store.js';
import { generateIdentity } from '../../src/crypto/identity.js';
import { exposedEntries, initNode, jsonLines, runCli, startListener } from './state-kit.js';

t.test('a symlink planted at the temp name of the key does not receive it', async (t) => {
  const home = await mkdtemp(path.join(tmpdir(), 'clawpeer-plant-'));
  const thief = await mkdtemp(path.join(tmpdir(), 'clawpeer-thief-'));
  const file = path.join(home, 'identity.key');
  // The old temp name was identity.key.tmp-<pid>: plant that, and the random-suffixed shape too.
  await symlink(path.join(thief, 'stolen'), `${file}.tmp-${process.pid}`);
  await createIdentity(file);
  t.same(await readdir(thief), [], 'nothing was written through the planted symlink');
  const st = await lstat(file);
  t.ok(st.isFile() && !st.isSymbolicLink(), 'identity.key is a regular file, not the planted link');
  t.equal(st.mode & 0o777, 0o600);
  t.ok((await loadIdentity(file)).nodeId.length > 0, 'the key loads');
});

t.test('a home others can write, or another user owns, is refused saying how to fix it', async (t) => {
  const home = await mkdtemp(path.join(tmpdir(), 'clawpeer-open-'));
  await chmod(home, 0o777);
  const file = path.join(home, 'identity.key');
  await t.rejects(createIdentity(file), {
    code: 'HOME_INSECURE',
    message: new RegExp(`writable by group or others \\(mode 777\\).*run: chmod 700 ${home}`),
  });
  t.same(await readdir(home), [], 'nothing was written into it');
  await t.rejects(new PeerStore(path.join(home, 'peers.json')).add(generateIdentity().nodeId, 'x'), {
    code: 'HOME_INSECURE',
  });

  const cli = await runCli(['--home', home, 'init']);
  t.equal(cli.code, 1, 'init exits 1');
  t.match(cli.stderr, /writable by group or others.*chmod 700/);
  t.same(await readdir(home), [], 'init wrote nothing');

  await chmod(home, 0o775);
  t.match((await runCli(['--home', home, 'init'])).stderr, /mode 775/, 'group-writable is refused too');
  await chmod(home, 0o700);
  t.equal((await runCli(['--home', home, 'init'])).code, 0, 'after chmod 700 init works');
  await chmod(home, 0o757);
  const id = await runCli(['--home', home, 'id']);
  t.equal(id.code, 1, 'an existing identity in a home that became world-writable is refused');
  t.match(id.stderr, /chmod 700/);

  if (process.getuid?.() === 0) {
    const theirs = await mkdtemp(path.join(tmpdir(), 'clawpeer-theirs-'));
    await chown(theirs, 65534, 65534);
    const r = await runCli(['--home', theirs, 'init']);
    t.equal(r.code, 1, 'a home owned by another user is refused');
    t.match(r.stderr, /is owned by uid 65534, not by this user/);
  }
});

t.test("the quick start's fresh --home is made 0700 and works", async (t) => {
  const parent = await mkdtemp(path.join(tmpdir(), 'clawpeer-qs-'));
  const home = path.join(parent, 'a');
  const r = await runCli(['--home', home, 'init']);
  t.equal(r.code, 0, r.stderr);
  t.equal((await stat(home)).mode & 0o777, 0o700);
  const listenInit = path.join(parent, 'l');
  const listener = await startListener(listenInit, ['--init']);
  t.teardown(() => listener.stop('SIGKILL'));
  t.equal((await stat(listenInit)).mode & 0o777, 0o700, 'listen --init makes its home 0700');
});

t.test(
  'after init, pair, invite, listen, ping and sync nothing in a home is open to group or others (umask 002)',
  async (t) => {
    const old = process.umask(0o002); // the CLI children inherit it: the loosest common umask
    t.teardown(() => void process.umask(old));
    const a = await initNode('modes-a');
    const b = await initNode('modes-b');
    const work = await mkdtemp(path.join(tmpdir(), 'clawpeer-modes-'));
    const shared = path.join(work, 'shared');
    const mine = path.join(work, 'mine');
    await mkdir(shared);
    await mkdir(mine);
    await writeFile(path.join(mine, 'a.txt'), 'hello\n');
    t.equal((await runCli(['--home', a.home, 'pair', 'add', b.id, '--name', 'bob'])).code, 0);
    const listener = await startListener(a.home, ['--share', `docs=${shared}`]);
    t.teardown(() => listener.stop('SIGKILL'));
    const sock = await lstat(path.join(a.home, 'control.sock'));
    t.ok(sock.isSocket(), 'the listener holds a control socket');
    t.equal(sock.mode & 0o777, 0o600, 'the control socket is 0600');
    t.equal(
      (await runCli(['--home', b.home, 'pair', 'add', a.id, '--name', 'alice', '--addr', `127.0.0.1:${listener.port}`]))
        .code,
      0,
    );
    t.equal((await runCli(['--home', b.home, 'ping', 'alice', '--count', '1'])).code, 0);
    const sync = await runCli(['--home', b.home, 'sync', mine, 'alice:docs']);
    t.equal(sync.code, 0, sync.stderr);
    t.equal(await readFile(path.join(shared, 'a.txt'), 'utf8'), 'hello\n', 'the sync landed');
    const push = await runCli(['--home', b.home, 'push', mine, 'alice']);
    t.equal(push.code, 0, push.stderr);
    t.equal((await runCli(['--home', a.home, 'pair', 'invite', '--long', '--json'])).code, 0);
    const files = await readdir(a.home);
    t.ok(
      ['identity.key', 'peers.json', 'invites', 'listening.json'].every((f) => files.includes(f)),
      `the home holds its state: ${files.join(' ')}`,
    );
    // The inbox share's content keeps the modes it came with; its .clawpeer state does not.
    const content = (rel: string): boolean => rel.startsWith('inbox/') && !rel.startsWith('inbox/.clawpeer');
    for (const home of [a.home, b.home])
      t.same(await exposedEntries(home, content), [], `nothing in ${home} is open to group or others`);
    for (const folder of [shared, mine])
      t.same(
        await exposedEntries(path.join(folder, '.clawpeer')),
        [],
        `nothing in ${folder}/.clawpeer is open to group or others`,
      );
    t.same(
      jsonLines((await runCli(['--home', a.home, 'pair', 'list', '--json'])).stdout).map((p) => p['name']),
      ['bob'],
    );
  },
);
