// --backup's plan and keeper (backups.ts) through the publisher that lends it its confined
// directory walk: what is replaced stays as a backup, an older backup is replaced, and a backup
// directory that leads out of the destination is refused without losing the original.
import t from 'tap';
import { lstat, mkdir, mkdtemp, readFile, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChunkingParams } from '../../src/chunking/fastcdc.js';
import { manifestFromBytes } from '../../src/chunking/manifest.js';
import { backupPlan, backupProtection } from '../../src/store/backups.js';
import { Publisher } from '../../src/store/publisher.js';
import type { StagedFile } from '../../src/store/staged-file.js';

const PARAMS: ChunkingParams = { minBytes: 64, avgBytes: 256, maxBytes: 1024, normalization: 2 };

async function tempDir(tag: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `clawpeer-${tag}-`));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** Publishes `text` at `relPath` through `pub` (force). */
async function publish(pub: Publisher, relPath: string, text: string): Promise<void> {
  const bytes = Buffer.from(text);
  const staged = (await pub.stageFile({
    relPath,
    manifest: manifestFromBytes(bytes, PARAMS),
    mode: 0o644,
    mtimeMs: 1_600_000_000_000,
  })) as StagedFile;
  await staged.writeChunk(0, bytes);
  await pub.commit([staged]);
}

t.test('backupPlan: rsync defaults, and what it refuses', async (t) => {
  t.same(backupPlan(undefined, undefined), { suffix: '~' });
  t.same(backupPlan('old', undefined), { suffix: '', dir: 'old' });
  t.same(backupPlan('./old/x/', '.bak'), { suffix: '.bak', dir: 'old/x' });
  t.throws(() => backupPlan(undefined, ''), { code: 'USAGE', message: /an empty --suffix needs --backup-dir/ });
  t.throws(() => backupPlan('../old', undefined), {
    code: 'USAGE',
    message: /must be a relative path inside the destination/,
  });
  t.throws(() => backupPlan('/abs', undefined), { code: 'USAGE', message: /absolute path/ });
  t.throws(() => backupPlan('.clawpeer/x', undefined), { code: 'USAGE', message: /clawpeer's own state/ });
  t.throws(() => backupPlan(undefined, 'a/b'), { code: 'USAGE', message: /no slashes/ });
  const beside = backupProtection({ suffix: '~' }, '');
  t.ok(beside('d/a.txt~', false));
  t.notOk(beside('d/a.txt', false));
  t.notOk(beside('d~', true), 'a directory is never a backup');
  const under = backupProtection({ suffix: '', dir: 'old' }, 'base');
  t.ok(under('base/old', true));
  t.ok(under('base/old/x', false));
  t.notOk(under('base/older', true));
  t.notOk(under('old', true), 'the directory is below the destination path');
});

t.test('replaced files and symlinks are kept beside them; an older backup is replaced', async (t) => {
  const share = await tempDir('bk-share');
  await writeFile(join(share, 'a.txt'), 'one');
  await symlink('a.txt', join(share, 'l'));
  const pub = await Publisher.open({
    shareRoot: share,
    chunking: PARAMS,
    force: true,
    backup: { plan: backupPlan(undefined, undefined), destBase: '' },
  });
  await publish(pub, 'a.txt', 'two');
  t.same([await readFile(join(share, 'a.txt'), 'utf8'), await readFile(join(share, 'a.txt~'), 'utf8')], ['two', 'one']);
  await publish(pub, 'a.txt', 'three');
  t.equal(await readFile(join(share, 'a.txt~'), 'utf8'), 'two', 'the newer backup replaced the older');
  t.equal(await pub.makeSymlink('l', 'a.txt~'), 'replaced');
  t.equal(await readlink(join(share, 'l~')), 'a.txt', 'the replaced link is kept as a link');
  await publish(pub, 'new.txt', 'fresh');
  t.notOk(existsSync(join(share, 'new.txt~')), 'nothing to keep for a new file');
  t.equal(pub.backups?.count, 3);
  // --delete's side: a removed file is moved.
  t.equal(await pub.backups?.keep('new.txt', join(share, 'new.txt'), 'deleted'), true);
  t.notOk(existsSync(join(share, 'new.txt')));
  t.equal(await readFile(join(share, 'new.txt~'), 'utf8'), 'fresh');
  t.equal(
    await pub.backups?.keep('gone.txt', join(share, 'gone.txt'), 'deleted'),
    false,
    'nothing there: nothing kept',
  );
});

t.test(
  'a backup directory keeps the paths below the destination, and is never reached through a link out of the share',
  async (t) => {
    const share = await tempDir('bk-dir');
    await mkdir(join(share, 'dest', 'sub'), { recursive: true });
    await writeFile(join(share, 'dest', 'sub', 'f.txt'), 'old');
    const pub = await Publisher.open({
      shareRoot: share,
      chunking: PARAMS,
      force: true,
      backup: { plan: backupPlan('bk', '.1'), destBase: 'dest' },
    });
    await publish(pub, 'dest/sub/f.txt', 'new');
    t.equal(await readFile(join(share, 'dest', 'bk', 'sub', 'f.txt.1'), 'utf8'), 'old');

    const outside = await tempDir('bk-outside');
    await symlink(outside, join(share, 'dest', 'evil'));
    const evil = await Publisher.open({
      shareRoot: share,
      chunking: PARAMS,
      force: true,
      backup: { plan: backupPlan('evil', undefined), destBase: 'dest' },
    });
    await t.rejects(publish(evil, 'dest/sub/f.txt', 'newer'), { code: 'PATH_INVALID', message: /outside the share/ });
    t.equal(
      await readFile(join(share, 'dest', 'sub', 'f.txt'), 'utf8'),
      'new',
      'the original stays when its backup cannot be made',
    );
    t.notOk((await lstat(outside)).nlink > 2, 'nothing was written outside');
  },
);
