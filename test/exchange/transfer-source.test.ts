// scanSource: small files are hashed from one whole read, larger ones streamed; either way each
// file's manifest must equal the streaming chunker's (the receiver recomputes and compares).
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { DEFAULT_CHUNKING, type ChunkingParams } from '../../src/chunking/fastcdc.js';
import { manifestFromFile } from '../../src/file-chunking/file-chunker.js';
import { silentLogger } from '../../src/logger.js';
import { scanListed, scanSource, scanSources } from '../../src/exchange/transfer-source.js';
import { compileExcludes } from '../../src/transfer/exclude.js';
import { WHOLE_READ_MAX_BYTES } from '../../src/file-chunking/file-chunker.js';

const chunking: ChunkingParams = { ...DEFAULT_CHUNKING };

t.test('manifests match the streaming chunker on both sides of the whole-read limit', async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'clawpeer-src-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const root = path.join(dir, 'tree');
  await mkdir(root);
  const sizes = [0, 1, 4095, 70_000, WHOLE_READ_MAX_BYTES, WHOLE_READ_MAX_BYTES + 1, 3 * WHOLE_READ_MAX_BYTES + 17];
  for (const [i, size] of sizes.entries()) await writeFile(path.join(root, `f${i}.bin`), randomBytes(size));
  const source = await scanSource(root, { chunking, log: silentLogger });
  t.equal(source.files.size, sizes.length);
  t.equal(
    source.totalBytes,
    sizes.reduce((a, b) => a + b, 0),
  );
  for (const file of source.files.values()) {
    const expected = await manifestFromFile(file.localPath, chunking);
    t.same(file.manifest, expected, `${path.basename(file.localPath)} (${expected.size} bytes)`);
  }
});

t.test('an unreadable file is an IO error naming it', async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'clawpeer-src-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'secret.bin');
  await writeFile(file, 'x', { mode: 0o000 });
  if (process.getuid?.() === 0) {
    t.pass('root reads any file: nothing to check here');
    return;
  }
  await t.rejects(scanSource(file, { chunking, log: silentLogger }), { code: 'IO', message: /secret\.bin/ });
});

t.test("clawpeer's own state is never sent: .clawpeer directories and temp files", async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'clawpeer-src-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const root = path.join(dir, 'synced');
  await mkdir(path.join(root, '.clawpeer', 'revlog'), { recursive: true });
  await mkdir(path.join(root, 'sub', '.clawpeer'), { recursive: true });
  await writeFile(path.join(root, '.clawpeer', 'revlog', 'data.mdb'), 'state');
  await writeFile(path.join(root, 'sub', '.clawpeer', 'index.bin'), 'state');
  await writeFile(path.join(root, 'sub', '.clawpeer-tmp-p1-0a0b0c0d0e0f-a.txt'), 'half');
  await writeFile(path.join(root, 'sub', 'a.txt'), 'content');
  await writeFile(path.join(root, '.clawpeerish'), 'a user file whose name only starts alike');
  const source = await scanSource(root, { chunking, log: silentLogger });
  t.same(source.entries.map((e) => e.path).sort(), ['synced', 'synced/.clawpeerish', 'synced/sub', 'synced/sub/a.txt']);
});

t.test('scanSources: several roots as one source, files re-indexed, each entry found where it lives', async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'clawpeer-sources-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await mkdir(path.join(dir, 'x', 'tree'), { recursive: true });
  await mkdir(path.join(dir, 'y'));
  await writeFile(path.join(dir, 'x', 'tree', 'a.txt'), 'a');
  await writeFile(path.join(dir, 'y', 'b.txt'), 'bb');
  const source = await scanSources([path.join(dir, 'x', 'tree'), path.join(dir, 'y', 'b.txt')], {
    chunking: DEFAULT_CHUNKING,
    log: silentLogger,
  });
  t.same(
    source.entries.map((e) => e.path),
    ['tree', 'tree/a.txt', 'b.txt'],
  );
  t.same([...source.files.keys()], [1, 2]);
  t.same(
    [...source.files.values()].map((f) => [f.entryIndex, f.localPath]),
    [
      [1, path.join(dir, 'x', 'tree', 'a.txt')],
      [2, path.join(dir, 'y', 'b.txt')],
    ],
  );
  t.same(
    [0, 1, 2].map((i) => source.localPathOf?.(i)),
    [path.join(dir, 'x', 'tree'), path.join(dir, 'x', 'tree', 'a.txt'), path.join(dir, 'y', 'b.txt')],
  );
  t.equal(source.totalBytes, 3);
  await t.rejects(
    scanSources([path.join(dir, 'y', 'b.txt'), path.join(dir, 'y', '..', 'y', 'b.txt')], {
      chunking: DEFAULT_CHUNKING,
      log: silentLogger,
    }),
    { code: 'USAGE', message: /would both land as b\.txt/ },
  );
});

t.test(
  'scanListed: listed paths keep their place below the base, with the directories they lie in; a listed directory goes whole',
  async (t) => {
    const dir = await mkdtemp(path.join(tmpdir(), 'clawpeer-listed-'));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    const base = path.join(dir, 'base');
    await mkdir(path.join(base, 'a', 'b'), { recursive: true });
    await mkdir(path.join(base, 'c', 'deep'), { recursive: true });
    await writeFile(path.join(base, 'a', 'b', 'x.txt'), 'x');
    await writeFile(path.join(base, 'a', 'unlisted.txt'), 'u');
    await writeFile(path.join(base, 'c', 'deep', 'y.log'), 'y');
    await writeFile(path.join(base, 'c', 'z.txt'), 'z');
    await chmod(path.join(base, 'a'), 0o750);
    await symlink('../unlisted.txt', path.join(base, 'a', 'b', 'up'));
    await symlink('../../../outside', path.join(base, 'a', 'b', 'out'));
    const when = new Date('2020-01-02T03:04:05Z');
    await utimes(path.join(base, 'a', 'b'), when, when);
    await mkdir(path.join(base, 'skipped'));
    await writeFile(path.join(base, 'skipped', 'w.txt'), 'w');
    // As rsync: a listed directory the rules exclude is left out whole; the directories a listed
    // path lies in are not checked (skipped/w.txt would still go).
    const excludeRules = compileExcludes(['c/deep/', 'skipped/']);
    const source = await scanListed(base, ['a/b/x.txt', 'a/b/up', 'a/b/out', 'c', 'skipped'], {
      chunking,
      log: silentLogger,
      excludeRules,
    });
    t.same(
      source.entries.map((e) => `${e.kind} ${e.path}`),
      ['dir a', 'dir a/b', 'file a/b/x.txt', 'symlink a/b/up', 'dir c', 'file c/z.txt'],
      'implied dirs first, each once; the link that climbs out of the base skipped; the rule matched below the base, and on a listed directory',
    );
    const implied = await scanListed(base, ['skipped/w.txt'], { chunking, log: silentLogger, excludeRules });
    t.same(
      implied.entries.map((e) => `${e.kind} ${e.path}`),
      ['dir skipped', 'file skipped/w.txt'],
      'a listed file below an excluded directory still goes, as with rsync',
    );
    t.equal(source.entries.find((e) => e.path === 'a')?.mode, 0o750, 'an implied directory keeps its mode');
    t.equal(source.entries.find((e) => e.path === 'a/b')?.mtimeMs, when.getTime(), 'and its mtime');
    const x = [...source.files.values()].find((f) => f.localPath.endsWith('x.txt'));
    t.equal(x?.localPath, path.join(base, 'a', 'b', 'x.txt'));
    t.equal(
      source.localPathOf?.(source.entries.findIndex((e) => e.path === 'c/z.txt')),
      path.join(base, 'c', 'z.txt'),
      'each entry found where it lives',
    );
  },
);

t.test(
  'scanListed: a missing path, one below a file, or a base that is no directory is a usage error naming it',
  async (t) => {
    const dir = await mkdtemp(path.join(tmpdir(), 'clawpeer-listed-'));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    await writeFile(path.join(dir, 'f.txt'), 'f');
    await t.rejects(scanListed(dir, ['nope.txt'], { chunking, log: silentLogger }), {
      code: 'USAGE',
      message: /lists nope\.txt, which does not exist/,
    });
    await t.rejects(scanListed(dir, ['f.txt/x'], { chunking, log: silentLogger }), {
      code: 'USAGE',
      message: /lists f\.txt\/x, but f\.txt is not a directory/,
    });
    await t.rejects(scanListed(path.join(dir, 'f.txt'), ['x'], { chunking, log: silentLogger }), {
      code: 'USAGE',
      message: /f\.txt is not a directory/,
    });
  },
);

t.test('onUnreadable: entries that cannot be read are left out and told, the rest is sent', async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'clawpeer-src-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const root = path.join(dir, 'tree');
  await mkdir(path.join(root, 'sub'), { recursive: true });
  await writeFile(path.join(root, 'a.txt'), 'a');
  await writeFile(path.join(root, 'sub', 'b.txt'), 'b');
  // A name in Latin-1, not UTF-8: names travel as UTF-8, so it cannot be sent.
  writeFileSync(Buffer.concat([Buffer.from(`${root}/sub/caf`), Buffer.from([0xff]), Buffer.from('.txt')]), 'x');
  const asRoot = process.getuid?.() === 0;
  // Not as root (it reads anything): a file that cannot be opened when it is hashed.
  if (!asRoot) await writeFile(path.join(root, 'secret.bin'), 'x', { mode: 0o000 });

  // Without onUnreadable the first one still fails the scan.
  await t.rejects(scanSource(root, { chunking, log: silentLogger }), { code: asRoot ? 'PATH_INVALID' : /./ });

  const told: { path: string; error: string }[] = [];
  const source = await scanSource(root, { chunking, log: silentLogger, onUnreadable: (u) => told.push(u) });
  t.same(
    source.entries.map((e) => e.path),
    ['tree', 'tree/a.txt', 'tree/sub', 'tree/sub/b.txt'],
    'the readable entries are all there',
  );
  t.same([...source.files.values()].map((f) => path.basename(f.localPath)).sort(), ['a.txt', 'b.txt']);
  t.match(
    told,
    [
      ...(asRoot ? [] : [{ path: 'tree/secret.bin', error: 'EACCES: permission denied' }]),
      { path: 'tree/sub/caf\\#377.txt', error: /^its name is not valid UTF-8/ },
    ],
    'each is told with why',
  );
  t.notOk(
    told.some((u) => u.error.includes(dir)),
    'the reasons leave out the local path (a listener tells them to its peer)',
  );
  if (!asRoot)
    await t.rejects(
      scanSource(path.join(root, 'secret.bin'), { chunking, log: silentLogger, onUnreadable: () => t.fail() }),
      { code: 'IO', message: /secret\.bin/ },
      'a lone source that cannot be read still fails: nothing else would be sent',
    );
});
