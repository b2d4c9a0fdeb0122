import t from 'tap';
import { chmod, mkdir, mkdtemp, realpath, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { execFileSync } from 'node:child_process';
import net from 'node:net';
import path, { join } from 'node:path';
import { scanTree, scanTreeToArray, symlinkTargetIsConfined } from '../../src/store/tree-scan.js';
import type { TreeScanIssue } from '../../src/store/tree-scan.js';

async function fixture(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'clawpeer-scan-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const top = join(root, 'top');
  await mkdir(join(top, 'b/deep/er'), { recursive: true });
  await mkdir(join(top, 'empty'));
  await writeFile(join(top, 'a.txt'), 'hello');
  await writeFile(join(top, 'b/zero'), '');
  await writeFile(join(top, 'b/deep/er/x.bin'), Buffer.alloc(1000, 7));
  await writeFile(join(top, 'a.b'), 'dot');
  await chmod(join(top, 'a.txt'), 0o640);
  await utimes(join(top, 'a.txt'), 1_600_000_000, 1_600_000_000.5);
  await symlink('a.txt', join(top, 'link-in'));
  await symlink('../../a.txt', join(top, 'b/deep/up2'));
  await symlink('../../../outside', join(top, 'b/deep/escape'));
  await symlink('/etc/passwd', join(top, 'abs'));
  return top;
}

t.test('a tree scans into sorted pre-order entries with metadata; links are not followed', async (t) => {
  const top = await fixture();
  const entries = await scanTreeToArray(top);
  t.same(
    entries.map((e) => `${e.kind}:${e.relPath}`),
    [
      'dir:top',
      'file:top/a.b',
      'file:top/a.txt',
      'symlink:top/abs',
      'dir:top/b',
      'dir:top/b/deep',
      'dir:top/b/deep/er',
      'file:top/b/deep/er/x.bin',
      'symlink:top/b/deep/escape',
      'symlink:top/b/deep/up2',
      'file:top/b/zero',
      'dir:top/empty',
      'symlink:top/link-in',
    ],
    'parents before children, siblings in byte order, empty dir and empty file included',
  );
  const byPath = new Map(entries.map((e) => [e.relPath, e]));
  const a = byPath.get('top/a.txt')!;
  t.equal(a.size, 5);
  t.equal(a.mode, 0o640);
  t.equal(a.mtimeNs, 1_600_000_000_500_000_000n);
  t.equal(a.mtimeMs, 1_600_000_000_500);
  t.type(a.ino, 'bigint');
  t.equal(byPath.get('top/b/zero')!.size, 0);
  t.equal(byPath.get('top/link-in')!.linkTarget, 'a.txt');
  t.equal(byPath.get('top/link-in')!.linkEscapes, false);
  t.equal(byPath.get('top/b/deep/up2')!.linkEscapes, false, 'two levels up from depth 2 stays inside');
  t.equal(byPath.get('top/b/deep/escape')!.linkEscapes, true, 'three levels up from depth 2 escapes');
  t.equal(byPath.get('top/abs')!.linkEscapes, true, 'absolute targets escape');

  const flat = await scanTreeToArray(top, { rootName: null });
  t.equal(flat[0]?.relPath, 'a.b', 'rootName null lists the contents at the top');
  t.equal(flat.find((e) => e.relPath === 'b/deep/up2')?.linkEscapes, false);
  t.equal(flat.find((e) => e.relPath === 'b/deep/escape')?.linkEscapes, true);
  t.same(await scanTreeToArray(top), entries, 'a second scan is identical');
});

t.test('a single file scans to one entry named by its base name or rootName', async (t) => {
  const top = await fixture();
  const one = await scanTreeToArray(join(top, 'a.txt'));
  t.same(
    one.map((e) => [e.relPath, e.kind, e.size]),
    [['a.txt', 'file', 5]],
  );
  const renamed = await scanTreeToArray(join(top, 'a.txt'), { rootName: 'dir/new.txt' });
  t.equal(renamed[0]?.relPath, 'dir/new.txt');
  await t.rejects(scanTreeToArray(join(top, 'a.txt'), { rootName: null }), { code: 'USAGE' });
  await t.rejects(scanTreeToArray(join(top, 'missing')), { code: 'IO', message: /missing/ });
});

t.test('names the wire refuses are reported by path, not skipped silently', async (t) => {
  const top = await fixture();
  await writeFile(join(top, 'b', 'bad\\name'), 'x');
  await writeFile(join(top, 'b', 'trailing.'), 'x');
  await t.rejects(scanTreeToArray(top), { code: 'PATH_INVALID', message: /bad\\name/ });
  const issues: TreeScanIssue[] = [];
  const entries = await scanTreeToArray(top, { onIssue: (i) => issues.push(i) });
  t.same(issues.map((i) => i.localPath.slice(top.length + 1)).sort(), ['b/bad\\name', 'b/trailing.']);
  t.ok(issues.every((i) => i.error.code === 'PATH_INVALID'));
  t.notOk(
    entries.some((e) => e.relPath.includes('bad')),
    'the refused entries are not listed',
  );
  t.equal(entries.length, 13, 'everything else still is');
});

t.test('abort stops the scan', async (t) => {
  const top = await fixture();
  const ac = new AbortController();
  ac.abort();
  await t.rejects(scanTreeToArray(top, { signal: ac.signal }), { code: 'ABORTED' });
});

t.test('symlinkTargetIsConfined is conservative about ".." after a name', async (t) => {
  t.equal(symlinkTargetIsConfined(0, 'x/y'), true);
  t.equal(symlinkTargetIsConfined(0, '../x'), false);
  t.equal(symlinkTargetIsConfined(1, '../x'), true);
  t.equal(symlinkTargetIsConfined(3, 'sub/link/..'), false, 'a ".." after a name can climb through a symlink');
  t.equal(symlinkTargetIsConfined(3, './../x'), true);
  t.equal(symlinkTargetIsConfined(3, ''), false);
  t.equal(symlinkTargetIsConfined(3, '/abs'), false);
  t.equal(symlinkTargetIsConfined(3, 'C:\\x'), false);
  t.equal(symlinkTargetIsConfined(3, '..\\..\\..\\..\\x'), false, 'backslashes count as separators');
});

t.test(
  'a FIFO or socket below the root is told to onSpecialSkipped and left out; without it, or as the root, it stops the scan',
  async (t) => {
    const root = await mkdtemp(path.join(tmpdir(), 'clawpeer-scan-special-'));
    t.teardown(() => rm(root, { recursive: true, force: true }));
    await mkdir(path.join(root, 'sub'));
    await writeFile(path.join(root, 'sub', 'a.txt'), 'a');
    execFileSync('mkfifo', [path.join(root, 'sub', 'pipe')]);
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(path.join(root, 'sock'), resolve));
    t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const skipped: string[] = [];
    const entries: string[] = [];
    for await (const e of scanTree(root, {
      rootName: null,
      onSpecialSkipped: (local, what) => skipped.push(`${path.relative(root, local)} ${what}`),
    }))
      entries.push(e.relPath);
    t.same(entries, ['sub', 'sub/a.txt']);
    t.same(skipped.sort(), ['sock a socket', 'sub/pipe a FIFO']);
    await t.rejects(
      async () => {
        for await (const _entry of scanTree(root, { rootName: null })) continue;
      },
      { code: 'IO', message: /is a (FIFO|socket): only files, directories and symlinks are sent/ },
    );
    await t.rejects(
      async () => {
        for await (const _entry of scanTree(path.join(root, 'sub', 'pipe'), { onSpecialSkipped: () => undefined }))
          continue;
      },
      { code: 'IO', message: /pipe is a FIFO/ },
      'the root itself is not skipped',
    );
  },
);

t.test(
  'copyLinks: all follows every link (a file, a directory and what is in it); unsafe only those leading out; dangling links and loops are told, not followed',
  async (t) => {
    const dir = await mkdtemp(path.join(tmpdir(), 'clawpeer-scan-links-'));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    const root = path.join(dir, 'tree');
    await mkdir(path.join(root, 'sub'), { recursive: true });
    await mkdir(path.join(dir, 'outside', 'd'), { recursive: true });
    await writeFile(path.join(dir, 'outside', 'ext.txt'), 'ext');
    await writeFile(path.join(dir, 'outside', 'd', 'in.txt'), 'in');
    await writeFile(path.join(root, 'real.txt'), 'real');
    await symlink('real.txt', path.join(root, 'alias'));
    await symlink('../outside/ext.txt', path.join(root, 'ext'));
    await symlink('../outside/d', path.join(root, 'extdir'));
    await symlink('..', path.join(root, 'sub', 'loop'));
    await symlink('nowhere', path.join(root, 'dangling'));
    const scan = async (copyLinks?: 'all' | 'unsafe'): Promise<{ entries: string[]; skipped: string[] }> => {
      const skipped: string[] = [];
      const onSpecialSkipped = (local: string, what: string): void =>
        void skipped.push(`${path.relative(root, local)}: ${what}`);
      const entries = await scanTreeToArray(root, {
        onSpecialSkipped,
        ...(copyLinks === undefined ? {} : { copyLinks }),
      });
      return { entries: entries.map((e) => `${e.kind} ${e.relPath}`), skipped };
    };
    const plain = await scan();
    t.same(plain.entries, [
      'dir tree',
      'symlink tree/alias',
      'symlink tree/dangling',
      'symlink tree/ext',
      'symlink tree/extdir',
      'file tree/real.txt',
      'dir tree/sub',
      'symlink tree/sub/loop',
    ]);
    const unsafe = await scan('unsafe');
    t.same(
      unsafe.entries,
      [
        'dir tree',
        'symlink tree/alias',
        'symlink tree/dangling',
        'file tree/ext',
        'dir tree/extdir',
        'file tree/extdir/in.txt',
        'file tree/real.txt',
        'dir tree/sub',
        'symlink tree/sub/loop',
      ],
      'only the links out of the tree become what they point to',
    );
    const all = await scan('all');
    t.same(all.entries, [
      'dir tree',
      'file tree/alias',
      'file tree/ext',
      'dir tree/extdir',
      'file tree/extdir/in.txt',
      'file tree/real.txt',
      'dir tree/sub',
    ]);
    t.same(all.skipped, [
      'dangling: a symlink with nothing at its end',
      'sub/loop: a symlink to a directory it lies in (a loop)',
    ]);
    const alias = (await scanTreeToArray(path.join(root, 'alias'), { copyLinks: 'all' }))[0];
    t.match(alias, { relPath: 'alias', kind: 'file', size: 4 }, 'a link given as the root is followed too');
    await t.rejects(scanTreeToArray(path.join(root, 'dangling'), { copyLinks: 'all' }), {
      code: 'IO',
      message: /dangling is a symlink with nothing at its end/,
    });
    await t.rejects(
      scanTreeToArray(root, { copyLinks: 'all' }),
      { code: 'IO', message: /dangling is a symlink with nothing at its end/ },
      'without onSpecialSkipped, the first one stops the scan',
    );
  },
);

t.test(
  "followWithin: a followed link must end inside it (a listener's share); one that does not stays a link",
  async (t) => {
    const dir = await realpath(await mkdtemp(path.join(tmpdir(), 'clawpeer-scan-within-')));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    const share = path.join(dir, 'share');
    const root = path.join(share, 'tree');
    await mkdir(path.join(share, 'other'), { recursive: true });
    await mkdir(root);
    await mkdir(path.join(dir, 'secret'));
    await writeFile(path.join(dir, 'secret', 'key.txt'), 'not for peers');
    await writeFile(path.join(share, 'other', 'o.txt'), 'o');
    await writeFile(path.join(root, 'real.txt'), 'real');
    await symlink('real.txt', path.join(root, 'alias'));
    await symlink('../other', path.join(root, 'sibling'));
    await symlink(path.join(dir, 'secret'), path.join(root, 'secretdir'));
    await symlink('../../secret/key.txt', path.join(root, 'secretfile'));
    await symlink('../../secret', path.join(share, 'other', 'out'));
    await symlink('sibling/out/key.txt', path.join(root, 'sneaky')); // no '..' in it, yet it ends outside
    const scan = async (copyLinks: 'all' | 'unsafe'): Promise<string[]> =>
      (await scanTreeToArray(root, { copyLinks, followWithin: share })).map((e) => `${e.kind} ${e.relPath}`);
    const outside = [
      'symlink tree/secretdir',
      'symlink tree/secretfile',
      'dir tree/sibling',
      'file tree/sibling/o.txt',
      'symlink tree/sibling/out',
      'symlink tree/sneaky',
    ];
    t.same(
      await scan('all'),
      ['dir tree', 'file tree/alias', 'file tree/real.txt', ...outside],
      "links ending inside the share are followed (sibling, out of the tree); those ending outside it stay links, '..'-free ones too (the driver skips links leading out of the tree)",
    );
    t.same(
      await scan('unsafe'),
      ['dir tree', 'symlink tree/alias', 'file tree/real.txt', ...outside],
      'unsafe: the link inside the tree stays one',
    );
    const lone = await scanTreeToArray(path.join(root, 'secretfile'), { copyLinks: 'all', followWithin: share });
    t.match(lone, [{ kind: 'symlink', linkTarget: '../../secret/key.txt' }], 'a link given as the root too');
  },
);

t.test('a name that is not valid UTF-8 is an issue naming its bytes, not an ENOENT; the rest is scanned', async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'clawpeer-scan-utf8-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const root = path.join(dir, 'tree');
  await mkdir(root);
  await writeFile(
    Buffer.concat([Buffer.from(`${root}/bad`), Buffer.from([0xff]), Buffer.from('name.txt')]),
    'latin-1 name',
  );
  await writeFile(path.join(root, 'ok.txt'), 'ok');
  await writeFile(path.join(root, 'caf\u00e9 \uFFFD.txt'), 'a real U+FFFD in a valid name');
  const issues: string[] = [];
  const entries = await scanTreeToArray(root, {
    onIssue: (i) => void issues.push(`${i.error.code} ${i.error.message}`),
  });
  t.same(entries.map((e) => e.relPath).sort(), ['tree', 'tree/caf\u00e9 \uFFFD.txt', 'tree/ok.txt']);
  t.same(issues, [
    `PATH_INVALID cannot send ${root}/bad\\#377name.txt: its name is not valid UTF-8 (names travel as UTF-8; rename it, e.g. with convmv)`,
  ]);
  await t.rejects(
    scanTreeToArray(root),
    { code: 'PATH_INVALID', message: /bad\\#377name\.txt: its name is not valid UTF-8/ },
    'without onIssue the scan stops on it',
  );
});

t.test(
  'a name not NFC on disk scans under its NFC form, with its path on disk; two forms of one name are an issue',
  async (t) => {
    const dir = await mkdtemp(path.join(tmpdir(), 'clawpeer-scan-nfd-'));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    const root = path.join(dir, 'tree');
    const nfdDir = path.join(root, 'cafe\u0301'); // NFD, as macOS hands names out; Linux keeps the bytes
    await mkdir(path.join(nfdDir, 'sub'), { recursive: true });
    await writeFile(path.join(nfdDir, 'sub', 'e\u0301t\u00e9.txt'), 'mixed forms');
    await writeFile(path.join(root, 'plain.txt'), 'plain');
    await writeFile(path.join(root, 'na\u0308me.txt'), 'NFD twin');
    await writeFile(path.join(root, 'n\u00e4me.txt'), 'NFC twin');
    const issues: string[] = [];
    const entries = await scanTreeToArray(root, {
      onIssue: (i) => void issues.push(`${i.error.code} ${i.localPath}`),
    });
    t.same(
      entries.map((e) => [e.relPath, e.localPath]),
      [
        ['tree', undefined],
        ['tree/caf\u00e9', nfdDir],
        ['tree/caf\u00e9/sub', path.join(nfdDir, 'sub')],
        ['tree/caf\u00e9/sub/\u00e9t\u00e9.txt', path.join(nfdDir, 'sub', 'e\u0301t\u00e9.txt')],
        ['tree/n\u00e4me.txt', undefined],
        ['tree/plain.txt', undefined],
      ],
      'relPaths in NFC and in order; the path on disk where it differs',
    );
    t.same(issues, [`PATH_INVALID ${path.join(root, 'na\u0308me.txt')}`], 'the NFD twin of an NFC name is left out');

    const renamed: string[] = [];
    const again = await scanTreeToArray(root, {
      onIssue: () => undefined,
      renameToNfc: (from, to) => void renamed.push(`${path.relative(root, from)} -> ${path.relative(root, to)}`),
    });
    t.same(renamed, ['cafe\u0301 -> caf\u00e9', 'caf\u00e9/sub/e\u0301t\u00e9.txt -> caf\u00e9/sub/\u00e9t\u00e9.txt']);
    t.ok(
      again.every((e) => e.localPath === undefined),
      'renamed on disk: every path there is the root joined with its relPath',
    );
    t.same((await scanTreeToArray(root, { onIssue: () => undefined })).length, again.length, 'and stays so');
  },
);
