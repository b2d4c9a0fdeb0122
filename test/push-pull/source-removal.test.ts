// push --remove-source-files: what was sent goes; what changed since it was sent stays.
import { mkdir, mkdtemp, readdir, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { DEFAULT_CHUNKING } from '../../src/chunking/fastcdc.js';
import { silentLogger } from '../../src/logger.js';
import { removeSentSources } from '../../src/push-pull/source-removal.js';
import { scanSource } from '../../src/exchange/transfer-source.js';

t.test(
  'unchanged files and links are removed, directories stay; a changed file, a retargeted link and a vanished file stay listed',
  async (t) => {
    const dir = await mkdtemp(path.join(tmpdir(), 'clawpeer-move-'));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    const root = path.join(dir, 'tree');
    await mkdir(path.join(root, 'sub'), { recursive: true });
    const hourAgo = new Date(Date.now() - 3600_000);
    for (const name of ['old.txt', 'sub/old2.txt', 'edited.txt', 'gone.txt']) {
      await writeFile(path.join(root, name), `content of ${name}`);
      await utimes(path.join(root, name), hourAgo, hourAgo); // not racy: the key alone decides
    }
    await writeFile(path.join(root, 'fresh.txt'), 'just written'); // racy: hashed again before removal
    await symlink('old.txt', path.join(root, 'link'));
    await symlink('old.txt', path.join(root, 'moved-link'));
    const source = await scanSource(root, { chunking: DEFAULT_CHUNKING, log: silentLogger });

    await writeFile(path.join(root, 'edited.txt'), 'edited after it was sent');
    await rm(path.join(root, 'moved-link'));
    await symlink('sub/old2.txt', path.join(root, 'moved-link'));
    await rm(path.join(root, 'gone.txt'));

    const { removed, changed } = await removeSentSources(source, DEFAULT_CHUNKING);
    t.same(removed.sort(), ['tree/fresh.txt', 'tree/link', 'tree/old.txt', 'tree/sub/old2.txt']);
    t.same(changed.sort(), ['tree/edited.txt', 'tree/gone.txt', 'tree/moved-link']);
    t.same(
      (await readdir(root)).sort(),
      ['edited.txt', 'moved-link', 'sub'],
      'the changed entries and the directories stay',
    );
    t.same(await readdir(path.join(root, 'sub')), []);
    t.ok(existsSync(root));
  },
);

t.test('a racy file rewritten with the same size and mtime is kept: its content is checked again', async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'clawpeer-move-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'racy.txt');
  const when = new Date();
  await writeFile(file, 'AAAA');
  await utimes(file, when, when);
  const source = await scanSource(file, { chunking: DEFAULT_CHUNKING, log: silentLogger });
  await writeFile(file, 'BBBB'); // same size, same inode
  await utimes(file, when, when); // the same mtime again (ms precision, as the scan saw it)
  const { removed, changed } = await removeSentSources(source, DEFAULT_CHUNKING);
  t.same(removed, []);
  t.same(changed, ['racy.txt']);
  t.ok(existsSync(file));
});
