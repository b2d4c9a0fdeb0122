// A path the receiver may not write (a directory it cannot write: here an immutable one) is left
// out and named, everything else lands, and the command exits 23, as rsync's partial transfer:
// before, push and pull failed as a whole (exit 1). Both receivers: the listener of a push
// (its refusals travel back in TransferDone) and the client of a pull. Once the directory can
// be written again, the same command completes and exits 0.
// Needs root and chattr; CI runs as root, elsewhere the test skips saying why.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { initNode, jsonLines, pairAdd, runCli, startListener } from './cli-harness.js';
import { ImmutableLocks, immutableUnavailable } from '../support/immutable-files.js';

const unavailable = await immutableUnavailable();

t.test(
  'push and pull write what they may, name what they may not, and exit 23',
  { skip: unavailable ?? false },
  async (t) => {
    const a = await initNode('ra');
    const b = await initNode('rb');
    const work = await mkdtemp(path.join(tmpdir(), 'clawpeer-pp-refused-'));
    const inbox = path.join(work, 'inbox');
    await pairAdd(a.home, b.id, 'bob');
    const listener = await startListener(a.home, ['--share', `inbox=${inbox}`]);
    t.teardown(() => listener.stop('SIGKILL'));
    await pairAdd(b.home, a.id, 'alice', `127.0.0.1:${listener.port}`);
    const locks = new ImmutableLocks(t);

    // A small file and a resumable one (staged under .clawpeer, refused only at its rename).
    const src = path.join(work, 'src', 'tree');
    await mkdir(path.join(src, 'ok'), { recursive: true });
    await mkdir(path.join(src, 'locked'), { recursive: true });
    const big = randomBytes(3 << 19);
    await writeFile(path.join(src, 'ok', 'a.txt'), 'lands\n');
    await writeFile(path.join(src, 'locked', 'b.txt'), 'refused at first\n');
    await writeFile(path.join(src, 'locked', 'big.bin'), big);
    const refusedFiles = ['tree/locked/b.txt', 'tree/locked/big.bin'];

    // Push: the listener may not write inbox/tree/locked.
    await mkdir(path.join(inbox, 'tree', 'locked'), { recursive: true });
    locks.lock(path.join(inbox, 'tree', 'locked'));
    // --remove-source-files: what the listener did not write stays here.
    const pushArgs = ['--home', b.home, 'push', src, 'alice', '--remove-source-files'];
    const push = await runCli(pushArgs);
    t.equal(push.code, 23, `push exits 23 (partial): ${push.stderr}`);
    for (const p of refusedFiles) t.match(push.stdout, `not written (EPERM) on alice: ${p}\n`, `names ${p}`);
    t.match(push.stdout, /paths? not written/, 'the summary counts them');
    t.match(push.stderr, /could not be written by alice; the rest was pushed/);
    t.equal(await readFile(path.join(inbox, 'tree', 'ok', 'a.txt'), 'utf8'), 'lands\n', 'the rest landed');
    t.same(await readdir(path.join(inbox, 'tree', 'locked')), [], 'nothing partial at the refused paths');
    t.match(listener.stderr(), /push: cannot write a path here/, 'the listener warns');
    t.notOk(existsSync(path.join(src, 'ok', 'a.txt')), 'the source written there is removed');
    for (const p of refusedFiles) t.ok(existsSync(path.join(work, 'src', p)), `the source of ${p} stays`);

    locks.unlockAll();
    const again = await runCli(pushArgs);
    t.equal(again.code, 0, `writable again: the same push completes: ${again.stderr}`);
    t.equal(await readFile(path.join(inbox, 'tree', 'locked', 'b.txt'), 'utf8'), 'refused at first\n');
    t.same(await readFile(path.join(inbox, 'tree', 'locked', 'big.bin')), big, 'the resumable one landed whole');
    for (const p of refusedFiles) t.notOk(existsSync(path.join(work, 'src', p)), `now the source of ${p} goes`);

    // Pull: this node may not write dest/tree/locked.
    const dest = path.join(work, 'dest');
    await mkdir(path.join(dest, 'tree', 'locked'), { recursive: true });
    locks.lock(path.join(dest, 'tree', 'locked'));
    const pull = await runCli(['--home', b.home, 'pull', 'alice:inbox/tree', dest, '--json']);
    t.equal(pull.code, 23, `pull exits 23 (partial): ${pull.stderr}`);
    const lines = jsonLines(pull.stdout);
    const refused = lines.filter((l) => l['event'] === 'refused');
    t.same(
      // In the order their streams ended: the files' order is not the point.
      refused
        .filter((l) => refusedFiles.includes(l['path'] as string))
        .map((l) => [l['path'], l['reason']])
        .sort(),
      refusedFiles.map((p) => [p, 'EPERM']).sort(),
      'each refused file is named with its errno',
    );
    t.ok(
      refused.every((l) => (l['path'] as string).startsWith('tree/locked')),
      'only what lies in the locked directory',
    );
    t.match(
      lines.find((l) => l['event'] === 'done'),
      { refused: refused.length },
      'the done record counts them',
    );
    t.match(lines.at(-1), { event: 'error', code: 'PARTIAL', exitCode: 23 });
    t.equal(await readFile(path.join(dest, 'tree', 'ok', 'a.txt'), 'utf8'), 'lands\n', 'the rest landed');
    t.same(await readdir(path.join(dest, 'tree', 'locked')), [], 'nothing partial at the refused paths');

    locks.unlockAll();
    const pulled = await runCli(['--home', b.home, 'pull', 'alice:inbox/tree', dest]);
    t.equal(pulled.code, 0, `writable again: the same pull completes: ${pulled.stderr}`);
    t.equal(await readFile(path.join(dest, 'tree', 'locked', 'b.txt'), 'utf8'), 'refused at first\n');
    t.same(await readFile(path.join(dest, 'tree', 'locked', 'big.bin')), big, 'the resumable one landed whole');
  },
);
