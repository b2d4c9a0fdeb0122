// What --delete removes: entries of the source's directories that the source lacks, each
// directory after its contents, never clawpeer's own state, what the patterns protect, or
// anything reached through a symlink.
import t from 'tap';
import { lstat, mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findExtraneous, removeExtraneous, transferExtraneous } from '../../src/push-pull/extraneous.js';
import { compileExcludes, compileFilter } from '../../src/transfer/exclude.js';

async function tree(files: readonly string[], dirs: readonly string[] = []): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'clawpeer-extraneous-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  for (const d of dirs) await mkdir(join(root, d), { recursive: true });
  for (const f of files) {
    await mkdir(join(root, f, '..'), { recursive: true });
    await writeFile(join(root, f), f);
  }
  return root;
}

t.test(
  'only the listed directories are looked in; their extra entries go, each directory after its contents',
  async (t) => {
    const root = await tree([
      'p/sibling.txt',
      'p/tree/a.txt',
      'p/tree/old.txt',
      'p/tree/gone/x/y.txt',
      'p/tree/gone/z.txt',
      'p/tree/keep/k.txt',
      'p/tree/keep/extra.txt',
    ]);
    const keep = new Set(['p/tree', 'p/tree/a.txt', 'p/tree/keep', 'p/tree/keep/k.txt']);
    const list = await findExtraneous({ root, dirs: ['p/tree', 'p/tree/keep'], keep });
    t.same(
      list.map((e) => `${e.kind} ${e.path}`),
      [
        'file p/tree/gone/x/y.txt',
        'dir p/tree/gone/x',
        'file p/tree/gone/z.txt',
        'dir p/tree/gone',
        'file p/tree/old.txt',
        'file p/tree/keep/extra.txt',
      ],
    );
    const removed = await removeExtraneous(root, list);
    t.equal(removed.length, list.length);
    t.same(
      (await readdir(join(root, 'p'))).sort(),
      ['sibling.txt', 'tree'],
      'the sibling of the pushed directory stays',
    );
    t.same((await readdir(join(root, 'p/tree'))).sort(), ['a.txt', 'keep']);
    t.same(await readdir(join(root, 'p/tree/keep')), ['k.txt']);
  },
);

t.test("clawpeer's state and protected paths stay, and so does a directory holding one", async (t) => {
  const root = await tree([
    'd/.clawpeer/revlog/data.mdb',
    'd/.clawpeer-tmp-abc',
    'd/build/out.log',
    'd/build/out.o',
    'd/notes.log',
    'd/x.txt',
  ]);
  const protect = (rel: string): boolean => rel.endsWith('.log');
  const list = await findExtraneous({ root, dirs: ['d'], keep: new Set(['d']), protect });
  t.same(
    list.map((e) => e.path),
    ['d/build/out.o', 'd/x.txt'],
    'not build/ itself: it holds a protected file',
  );
  await removeExtraneous(root, list);
  t.same((await readdir(join(root, 'd'))).sort(), ['.clawpeer', '.clawpeer-tmp-abc', 'build', 'notes.log']);
});

t.test(
  'symlinks are removed as links, never followed; a listed directory reached through a link is not walked',
  async (t) => {
    const outside = await tree(['precious.txt']);
    const root = await tree(['d/a.txt'], ['real']);
    await symlink(outside, join(root, 'd', 'link-out'));
    await symlink(join(root, 'real'), join(root, 'via'));
    await writeFile(join(root, 'real', 'r.txt'), 'r');
    const list = await findExtraneous({ root, dirs: ['d', 'via'], keep: new Set(['d', 'd/a.txt']) });
    t.same(
      list.map((e) => `${e.kind} ${e.path}`),
      ['symlink d/link-out'],
      'via/ is a symlink: its entries are not ours to judge',
    );
    await removeExtraneous(root, list);
    t.same(await readdir(outside), ['precious.txt'], "the link's target is untouched");
    await t.rejects(lstat(join(root, 'd', 'link-out')), { code: 'ENOENT' });
  },
);

t.test(
  "a transfer's patterns see paths below the transferred directory; a whole share's copy is the base itself",
  async (t) => {
    const root = await tree([
      'base/tree/a.txt',
      'base/tree/cache/c.bin',
      'base/tree/sub/cache/d.bin',
      'base/tree/b.txt',
      'base/top.txt',
    ]);
    const entries = [{ kind: 'dir' }, { kind: 'file' }, { kind: 'dir' }];
    const destPaths = ['base/tree', 'base/tree/a.txt', 'base/tree/sub'];
    const exclude = compileExcludes(['/cache']);
    const pushed = await transferExtraneous({
      root,
      basePath: 'base',
      entries,
      destPaths,
      contentsOnly: false,
      exclude,
    });
    t.same(
      pushed.map((e) => e.path),
      ['base/tree/b.txt', 'base/tree/sub/cache/d.bin', 'base/tree/sub/cache'],
      '/cache is anchored at tree/: only tree/cache is spared',
    );
    const onlyText = compileFilter([
      { pattern: '*/', include: true },
      { pattern: '*.txt', include: true },
      { pattern: '*', include: false },
    ]);
    const filtered = await transferExtraneous({
      root,
      basePath: 'base',
      entries,
      destPaths,
      contentsOnly: false,
      exclude: onlyText,
    });
    t.same(
      filtered.map((e) => e.path),
      ['base/tree/b.txt'],
      'with include rules, what the rules leave out (every .bin) is spared, what they include may go',
    );
    const share = await transferExtraneous({ root, basePath: 'base', entries: [], destPaths: [], contentsOnly: true });
    t.same(
      share.map((e) => e.path).at(-1),
      'base/tree',
      'a whole share: the base is the copy, so what it holds beyond the source goes',
    );
    t.ok(share.some((e) => e.path === 'base/top.txt'));
  },
);
