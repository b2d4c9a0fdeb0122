// mkdir -p for user paths: creates what is missing, and fails where Node's own recursive mkdir
// never returns (a directory that refuses new entries with ENOENT, as /proc does).
import t from 'tap';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { makeDirs } from '../../src/support/make-dirs.js';

t.test('creates the missing levels with the mode given; an existing directory is fine', async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'clawpeer-mkdirs-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const deep = path.join(dir, 'a', 'b', 'c');
  await makeDirs(deep, 0o700);
  t.ok((await stat(deep)).isDirectory());
  t.equal((await stat(path.join(dir, 'a'))).mode & 0o777, 0o700);
  await makeDirs(deep);
  await Promise.all([makeDirs(path.join(dir, 'x', 'y')), makeDirs(path.join(dir, 'x', 'z'))]);
  t.ok(
    existsSync(path.join(dir, 'x', 'y')) && existsSync(path.join(dir, 'x', 'z')),
    'two creators racing for the same parent',
  );
  await writeFile(path.join(dir, 'file'), 'x');
  await t.rejects(makeDirs(path.join(dir, 'file', 'sub')), { code: 'ENOTDIR', message: /file/ });
});

t.test(
  'a directory that refuses new entries is an error at once, not an endless retry',
  { skip: existsSync('/proc/self') ? false : 'no /proc here' },
  async (t) => {
    await t.rejects(makeDirs('/proc/clawpeer-no-such/sub'), { code: 'ENOENT', message: /\/proc\/clawpeer-no-such/ });
  },
);
