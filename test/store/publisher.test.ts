import t from 'tap';
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import {
  chmod,
  lstat,
  mkdir,
  mkdtemp,
  readFile,
  readdir,
  readlink,
  rm,
  stat,
  symlink,
  utimes,
  writeFile,
} from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChunkingParams } from '../../src/chunking/fastcdc.js';
import { manifestFromBytes } from '../../src/chunking/manifest.js';
import { manifestFromFile } from '../../src/file-chunking/file-chunker.js';
import { Publisher } from '../../src/store/publisher.js';
import { IN_MEMORY_MAX_BYTES, type StagedFile } from '../../src/store/staged-file.js';
import type { PublishDir } from '../../src/store/publish-types.js';
import { removeStaleTempFiles, tempFileOwnerPid, tempNameFor } from '../../src/store/temp-files.js';
import { scanTreeToArray } from '../../src/store/tree-scan.js';
import type { TreeEntry } from '../../src/store/tree-scan.js';

/** A staged file, or the test fails: these fixtures always have something to stage. */
function mustStage(x: StagedFile | 'identical' | 'kept'): StagedFile {
  if (typeof x === 'string') throw new Error(`expected a staged file, got ${x}`);
  return x;
}

// Small chunks so a few KiB make many chunks (the limits' floor values).
const PARAMS: ChunkingParams = { minBytes: 64, avgBytes: 256, maxBytes: 1024, normalization: 2 };

async function tempDir(tag: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `clawpeer-${tag}-`));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function sourceTree(): Promise<string> {
  const root = await tempDir('src');
  const top = join(root, 'top');
  await mkdir(join(top, 'nested/deeper/deepest'), { recursive: true });
  await mkdir(join(top, 'empty-dir'));
  await mkdir(join(top, 'private'));
  await writeFile(join(top, 'empty-file'), '');
  await writeFile(join(top, 'small.txt'), 'hello, world\n');
  await writeFile(join(top, 'nested/big.bin'), randomBytes(20_000));
  await writeFile(join(top, 'nested/deeper/deepest/leaf'), randomBytes(3000));
  await writeFile(join(top, 'private/secret'), randomBytes(500));
  await writeFile(join(top, 'script.sh'), '#!/bin/sh\necho hi\n');
  await writeFile(join(top, 'readonly.txt'), 'do not touch');
  await chmod(join(top, 'script.sh'), 0o755);
  await chmod(join(top, 'readonly.txt'), 0o444);
  await chmod(join(top, 'private/secret'), 0o600);
  await symlink('../small.txt', join(top, 'nested/link-up'));
  await symlink('deeper/deepest', join(top, 'nested/dir-link'));
  let when = 1_500_000_000;
  for (const rel of [
    'empty-file',
    'small.txt',
    'nested/big.bin',
    'nested/deeper/deepest/leaf',
    'private/secret',
    'script.sh',
    'readonly.txt',
  ]) {
    await utimes(join(top, rel), when, when + 0.25);
    when += 1000;
  }
  // Directories last (writing files into them changed their mtimes); private is 0700.
  await chmod(join(top, 'private'), 0o700);
  for (const rel of ['nested/deeper/deepest', 'nested/deeper', 'nested', 'empty-dir', 'private', '.']) {
    await utimes(join(top, rel), when, when + 0.5);
    when += 1000;
  }
  return top;
}

interface PublishResult {
  published: number;
  identical: number;
  symlinks: number;
}

/**
 * What the driver will do, with the bytes read from a local source instead of the network:
 * dirs, then files staged and written in reverse chunk order (out of order), committed in
 * batches, then symlinks, then directory metadata.
 */
async function publishTree(
  srcTop: string,
  entries: readonly TreeEntry[],
  pub: Publisher,
  batchSize = 3,
): Promise<PublishResult> {
  const result: PublishResult = { published: 0, identical: 0, symlinks: 0 };
  const dirs: PublishDir[] = [];
  let batch: StagedFile[] = [];
  const srcOf = (rel: string): string => join(srcTop, ...rel.split('/').slice(1));
  for (const e of entries) {
    if (e.kind === 'dir') {
      await pub.makeDir(e.relPath);
      dirs.push({ relPath: e.relPath, mode: e.mode, mtimeMs: e.mtimeMs });
    } else if (e.kind === 'file') {
      const bytes = await readFile(srcOf(e.relPath));
      const manifest = manifestFromBytes(bytes, PARAMS);
      const staged = await pub.stageFile({ relPath: e.relPath, manifest, mode: e.mode, mtimeMs: e.mtimeMs });
      if (typeof staged === 'string') {
        result.identical++;
        continue;
      }
      for (const i of staged.missingChunks().reverse()) {
        const c = manifest.chunks[i]!;
        await staged.writeChunk(i, bytes.subarray(c.offset, c.offset + c.length));
      }
      batch.push(staged);
      if (batch.length >= batchSize) {
        await pub.commit(batch);
        result.published += batch.length;
        batch = [];
      }
    }
  }
  await pub.commit(batch);
  result.published += batch.length;
  for (const e of entries) {
    if (e.kind === 'symlink' && e.linkEscapes !== true) {
      const made = await pub.makeSymlink(e.relPath, e.linkTarget!, e.mtimeMs);
      if (made === 'created' || made === 'replaced') result.symlinks++;
    }
  }
  await pub.setDirMetadata(dirs);
  return result;
}

function comparable(e: TreeEntry): unknown {
  return {
    relPath: e.relPath,
    kind: e.kind,
    size: e.size,
    mode: e.mode,
    mtimeMs: Math.round(e.mtimeMs),
    linkTarget: e.linkTarget,
  };
}

async function allNames(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true })).map(String);
}

t.test('a tree round-trips: contents, empty files and dirs, nesting, modes, mtimes, symlinks', async (t) => {
  const src = await sourceTree();
  const share = await tempDir('share');
  const entries = await scanTreeToArray(src);
  const pub = await Publisher.open({ shareRoot: share, chunking: PARAMS });
  const r = await publishTree(src, entries, pub);
  t.equal(r.published, 7);
  t.equal(r.symlinks, 2);

  const out = await scanTreeToArray(join(share, 'top'));
  t.same(
    out.map(comparable),
    entries.map(comparable),
    'same entries, sizes, modes, mtimes (to the ms) and link targets',
  );
  for (const e of entries.filter((x) => x.kind === 'file')) {
    const rel = e.relPath.split('/').slice(1).join('/');
    t.same(await readFile(join(share, 'top', rel)), await readFile(join(src, rel)), `${rel} is byte-identical`);
  }
  const leaf = out.find((e) => e.relPath === 'top/nested/big.bin')!;
  const orig = entries.find((e) => e.relPath === 'top/nested/big.bin')!;
  t.ok(Math.abs(Number(leaf.mtimeNs - orig.mtimeNs)) < 1000, 'mtime kept to within a microsecond');
  t.notOk(
    (await allNames(share)).some((n) => n.includes('.clawpeer-tmp-')),
    'no temp file left behind',
  );

  // Again: everything is identical, so nothing is written.
  const before = (await lstat(join(share, 'top/nested/big.bin'))).ino;
  const again = await publishTree(src, entries, await Publisher.open({ shareRoot: share, chunking: PARAMS }));
  t.same(again, { published: 0, identical: 7, symlinks: 0 }, 'identical content is a no-op');
  t.equal((await lstat(join(share, 'top/nested/big.bin'))).ino, before, 'the file was not replaced');
});

t.test('no-clobber: a different existing file is refused by name unless force', async (t) => {
  const share = await tempDir('share');
  await writeFile(join(share, 'a.txt'), 'old content');
  const bytes = Buffer.from('new content!');
  const manifest = manifestFromBytes(bytes, PARAMS);
  const file = { relPath: 'a.txt', manifest, mode: 0o644, mtimeMs: 1_600_000_000_000 };
  const pub = await Publisher.open({ shareRoot: share, chunking: PARAMS });
  await t.rejects(pub.stageFile(file), { code: 'FILE_EXISTS', message: /a\.txt.*--force/ });
  t.equal(await readFile(join(share, 'a.txt'), 'utf8'), 'old content');

  const forced = await Publisher.open({ shareRoot: share, chunking: PARAMS, force: true });
  const staged = mustStage(await forced.stageFile(file));
  await staged.writeChunk(0, bytes);
  await forced.commit([staged]);
  t.equal(await readFile(join(share, 'a.txt'), 'utf8'), 'new content!');
  t.equal((await lstat(join(share, 'a.txt'))).mtimeMs, 1_600_000_000_000);

  // Same size, different content: still different (the root decides, not the size).
  await writeFile(join(share, 'b.txt'), 'AAAAAAAAAAAA');
  await t.rejects(pub.stageFile({ ...file, relPath: 'b.txt' }), { code: 'FILE_EXISTS', message: /b\.txt/ });

  // A file that appears at the final path while we assemble ours is not replaced either.
  const late = mustStage(await pub.stageFile({ ...file, relPath: 'late.txt' }));
  const other = mustStage(await pub.stageFile({ ...file, relPath: 'other.txt' }));
  await late.writeChunk(0, bytes);
  await other.writeChunk(0, bytes);
  await writeFile(join(share, 'late.txt'), 'someone else');
  await t.rejects(pub.commit([late, other]), { code: 'FILE_EXISTS', message: /late\.txt/ });
  t.equal(await readFile(join(share, 'late.txt'), 'utf8'), 'someone else');
  t.equal(await readFile(join(share, 'other.txt'), 'utf8'), 'new content!', 'the rest of the batch is published');
  t.notOk((await allNames(share)).some((n) => n.includes('.clawpeer-tmp-')));
});

t.test(
  'existing-file policies: keep leaves a different file (and symlink); update replaces only what is not newer',
  async (t) => {
    const share = await tempDir('share');
    const T = 1_600_000_000_000;
    for (const [name, mtime] of [
      ['older.txt', T - 60_000],
      ['newer.txt', T + 60_000],
      ['same-time.txt', T],
    ] as const) {
      await writeFile(join(share, name), `old ${name}`);
      await utimes(join(share, name), new Date(mtime), new Date(mtime));
    }
    await symlink('elsewhere', join(share, 'link'));
    const bytes = Buffer.from('incoming content');
    const manifest = manifestFromBytes(bytes, PARAMS);
    const file = (relPath: string) => ({ relPath, manifest, mode: 0o644, mtimeMs: T });
    const publishAll = async (pub: Publisher, names: readonly string[]): Promise<string[]> => {
      const staged: StagedFile[] = [];
      for (const name of names) {
        const { outcome: verdict } = await pub.verdict(file(name));
        const r = await pub.stageFile(file(name));
        if (typeof r !== 'string') staged.push(r);
        t.equal(
          typeof r === 'string' ? r : 'staged',
          verdict === 'new' || verdict === 'replace' ? 'staged' : verdict,
          `verdict and stageFile agree on ${name}`,
        );
      }
      for (const f of staged) await f.writeChunk(0, bytes);
      await pub.commit(staged);
      const after: string[] = [];
      for (const name of names) after.push((await pub.verdict(file(name))).outcome);
      return after;
    };

    const keep = await Publisher.open({ shareRoot: share, chunking: PARAMS, existing: 'keep' });
    t.same(
      await publishAll(keep, ['older.txt', 'newer.txt', 'new.txt']),
      ['kept', 'kept', 'identical'],
      'after the commit: the new file was published, the others kept',
    );
    t.equal(await readFile(join(share, 'older.txt'), 'utf8'), 'old older.txt', 'kept');
    t.equal(await readFile(join(share, 'new.txt'), 'utf8'), 'incoming content');
    t.equal(await keep.makeSymlink('link', 'target'), 'kept');
    t.equal(await readlink(join(share, 'link')), 'elsewhere');

    const update = await Publisher.open({ shareRoot: share, chunking: PARAMS, existing: 'update' });
    const verdicts = await publishAll(update, ['older.txt', 'newer.txt', 'same-time.txt']);
    t.same(
      verdicts,
      ['identical', 'kept', 'identical'],
      'after the commit: the older and same-time ones were replaced, the newer kept',
    );
    t.equal(await readFile(join(share, 'older.txt'), 'utf8'), 'incoming content', 'older: replaced');
    t.equal(await readFile(join(share, 'newer.txt'), 'utf8'), 'old newer.txt', 'newer: kept');
    t.equal(
      await readFile(join(share, 'same-time.txt'), 'utf8'),
      'incoming content',
      'the same mtime: replaced (rsync -u keeps only a newer file)',
    );
    t.equal(
      await update.makeSymlink('link', 'target', Date.now() + 60_000),
      'replaced',
      'a link older than the incoming one is replaced',
    );
    t.equal(await readlink(join(share, 'link')), 'target');

    // A file that appears at the final path while ours is assembled: keep drops ours, no error.
    const late = mustStage(await keep.stageFile(file('late.txt')));
    await late.writeChunk(0, bytes);
    await writeFile(join(share, 'late.txt'), 'someone else');
    await keep.commit([late]);
    t.equal(await readFile(join(share, 'late.txt'), 'utf8'), 'someone else');
    t.notOk(
      (await allNames(share)).some((n) => n.includes('.clawpeer-tmp-')),
      'no temp file left',
    );
  },
);

t.test(
  'an identical file takes the incoming mode and mtime (rsync -a), unless --ignore-existing, or --update finds it newer',
  async (t) => {
    const share = await tempDir('share');
    const T = 1_600_000_000_000;
    const bytes = Buffer.from('same content');
    const manifest = manifestFromBytes(bytes, PARAMS);
    const names = ['plain.txt', 'kept.txt', 'newer.txt', 'older.txt'];
    for (const name of names) {
      await writeFile(join(share, name), bytes, { mode: 0o644 });
      await utimes(join(share, name), new Date(T), new Date(T));
    }
    await utimes(join(share, 'newer.txt'), new Date(T + 60_000), new Date(T + 60_000));
    const incoming = (relPath: string) => ({ relPath, manifest, mode: 0o600, mtimeMs: T - 3_600_000 });
    const stat = async (name: string): Promise<[number, number]> => {
      const st = await lstat(join(share, name));
      return [st.mode & 0o777, Math.floor(st.mtimeMs)];
    };
    t.equal(
      await (await Publisher.open({ shareRoot: share, chunking: PARAMS })).stageFile(incoming('plain.txt')),
      'identical',
    );
    t.same(await stat('plain.txt'), [0o600, T - 3_600_000], 'mode and mtime refreshed, content untouched');
    t.equal(await readFile(join(share, 'plain.txt'), 'utf8'), 'same content');
    t.equal(
      await (
        await Publisher.open({ shareRoot: share, chunking: PARAMS, existing: 'keep' })
      ).stageFile(incoming('kept.txt')),
      'identical',
    );
    t.same(await stat('kept.txt'), [0o644, T], '--ignore-existing touches nothing');
    const update = await Publisher.open({ shareRoot: share, chunking: PARAMS, existing: 'update' });
    t.equal(await update.stageFile(incoming('newer.txt')), 'identical');
    t.same(await stat('newer.txt'), [0o644, T + 60_000], '--update: newer here, left alone');
    t.equal(await update.stageFile({ ...incoming('older.txt'), mtimeMs: T + 5_000 }), 'identical');
    t.same(await stat('older.txt'), [0o600, T + 5_000], '--update: not newer here, refreshed');
  },
);

t.test('published mtimes land inside the millisecond given, never a nanosecond below it', async (t) => {
  const share = await tempDir('share');
  const pub = await Publisher.open({ shareRoot: share, chunking: PARAMS });
  const bytes = Buffer.from('t');
  const manifest = manifestFromBytes(bytes, PARAMS);
  // Whole seconds and arbitrary milliseconds: ms / 1000 alone put half of them 1 ns early.
  const times = Array.from({ length: 200 }, (_, i) =>
    i % 2 === 0 ? 1_700_000_000_000 + i * 1000 : 1_733_130_000_000 + i * 7_919,
  );
  const staged: StagedFile[] = [];
  for (const [i, mtimeMs] of times.entries()) {
    const f = mustStage(await pub.stageFile({ relPath: `f${i}`, manifest, mode: 0o644, mtimeMs }));
    await f.writeChunk(0, bytes);
    staged.push(f);
  }
  await pub.commit(staged);
  const off: string[] = [];
  for (const [i, mtimeMs] of times.entries()) {
    const st = await lstat(join(share, `f${i}`), { bigint: true });
    if (st.mtimeNs / 1_000_000n !== BigInt(mtimeMs)) off.push(`f${i}: ${st.mtimeNs} for ${mtimeMs} ms`);
  }
  t.same(off, [], 'every mtime reads back as the millisecond it was given');
});

t.test('a directory where a file goes, and a file where a directory goes, are clear errors', async (t) => {
  const share = await tempDir('share');
  await mkdir(join(share, 'd'));
  await writeFile(join(share, 'f'), 'x');
  const manifest = manifestFromBytes(Buffer.from('y'), PARAMS);
  const pub = await Publisher.open({ shareRoot: share, chunking: PARAMS, force: true });
  await t.rejects(pub.stageFile({ relPath: 'd', manifest, mode: 0o644, mtimeMs: 0 }), {
    code: 'FILE_EXISTS',
    message: /d is a directory where a file should be/,
  });
  await t.rejects(pub.stageFile({ relPath: 'f/x', manifest, mode: 0o644, mtimeMs: 0 }), {
    code: 'FILE_EXISTS',
    message: /f is a file where a directory should be/,
  });
  await t.rejects(pub.makeDir('f'), { code: 'FILE_EXISTS' });
  await t.rejects(pub.makeSymlink('d', 'f'), { code: 'FILE_EXISTS' });
});

t.test('in a directory the publisher made, a name is known free only at its first use', async (t) => {
  const share = await tempDir('share');
  const bytes = Buffer.from('incoming');
  const manifest = manifestFromBytes(bytes, PARAMS);
  const file = (relPath: string) => ({ relPath, manifest, mode: 0o644, mtimeMs: 1_600_000_000_000 });
  const pub = await Publisher.open({ shareRoot: share, chunking: PARAMS });
  const first = mustStage(await pub.stageFile(file('new/a.txt')));
  await first.writeChunk(0, bytes);
  await pub.commit([first]);
  t.equal(await pub.stageFile(file('new/a.txt')), 'identical', 'the name used: looked at again');
  await pub.makeDir('new/sub');
  await t.rejects(pub.stageFile(file('new/sub')), { code: 'FILE_EXISTS' }, 'a directory it made there');
  await pub.makeSymlink('new/link', 'a.txt');
  await t.rejects(pub.stageFile(file('new/link')), { code: 'FILE_EXISTS' }, 'a symlink it made there');

  // A file someone saves at the path between staging and the commit is never replaced unseen.
  const late = mustStage(await pub.stageFile(file('fresh/late.txt')));
  await late.writeChunk(0, bytes);
  await writeFile(join(share, 'fresh/late.txt'), 'a save');
  await t.rejects(pub.commit([late]), { code: 'FILE_EXISTS' });
  t.equal(await readFile(join(share, 'fresh/late.txt'), 'utf8'), 'a save', 'without force: kept');
  const seen: string[] = [];
  const forced = await Publisher.open({
    shareRoot: share,
    chunking: PARAMS,
    force: true,
    beforeReplace: async (rel, abs) => {
      seen.push(`${rel}: ${await readFile(abs, 'utf8')}`);
      await rm(abs);
    },
  });
  const staged = mustStage(await forced.stageFile(file('fresher/late.txt')));
  await staged.writeChunk(0, bytes);
  await writeFile(join(share, 'fresher/late.txt'), 'another save');
  await forced.commit([staged]);
  t.same(seen, ['fresher/late.txt: another save'], 'with force: beforeReplace sees the save first');
  t.equal(await readFile(join(share, 'fresher/late.txt'), 'utf8'), 'incoming');
});

t.test('paths outside the share are refused and nothing is written outside', async (t) => {
  const share = await tempDir('share');
  const outside = await tempDir('outside');
  await symlink(outside, join(share, 'evil'));
  await mkdir(join(share, 'real'));
  await symlink('real', join(share, 'alias'));
  const bytes = Buffer.from('payload');
  const manifest = manifestFromBytes(bytes, PARAMS);
  const pub = await Publisher.open({ shareRoot: share, chunking: PARAMS, force: true });
  for (const relPath of [
    '../x',
    '/etc/x',
    'a/../../x',
    'evil/x',
    'evil/sub/x',
    '.clawpeer/partial/x',
    'a/.clawpeer-tmp-1-x',
    'nul\0byte',
    'CON',
  ]) {
    await t.rejects(
      pub.stageFile({ relPath, manifest, mode: 0o644, mtimeMs: 0 }),
      { code: 'PATH_INVALID' },
      `${JSON.stringify(relPath)} refused`,
    );
  }
  await t.rejects(pub.makeDir('evil/sub'), { code: 'PATH_INVALID', message: /outside the share/ });
  await t.rejects(pub.makeSymlink('l1', '../outside'), { code: 'PATH_INVALID', message: /leaves the share/ });
  await t.rejects(pub.makeSymlink('l2', '/etc/passwd'), { code: 'PATH_INVALID' });
  await t.rejects(pub.makeSymlink('real/l3', 'x/../../..'), { code: 'PATH_INVALID' });
  // A dry run's verdicts refuse the same, and create nothing, also under a directory not made yet.
  await t.rejects(pub.symlinkVerdict('l1', '../outside'), { code: 'PATH_INVALID', message: /leaves the share/ });
  await t.rejects(pub.symlinkVerdict('not-yet/l4', '../../x'), { code: 'PATH_INVALID' });
  t.equal(await pub.symlinkVerdict('not-yet/l5', '../real'), 'new');
  t.equal(pub.probeDir('not-yet'), false);
  t.equal(pub.probeDir('real'), true);
  t.notOk(existsSync(join(share, 'not-yet')), 'the probes created nothing');
  t.same(await readdir(outside), [], 'nothing written outside the share');

  // A symlinked directory that stays inside the share is fine.
  const staged = mustStage(await pub.stageFile({ relPath: 'alias/in.txt', manifest, mode: 0o644, mtimeMs: 0 }));
  await staged.writeChunk(0, bytes);
  await pub.commit([staged]);
  t.equal(await readFile(join(share, 'real/in.txt'), 'utf8'), 'payload');
  t.equal(await pub.makeSymlink('real/up', '../alias/in.txt'), 'created');
  t.equal(await readlink(join(share, 'real/up')), '../alias/in.txt');
});

t.test('a read-only share refuses to publish', async (t) => {
  const share = await tempDir('share');
  await t.rejects(Publisher.open({ shareRoot: share, chunking: PARAMS, readOnly: true }), {
    code: 'SHARE_READ_ONLY',
    message: new RegExp(share),
  });
});

t.test('chunks may arrive in any order; a bad chunk is refused and nothing is published', async (t) => {
  const share = await tempDir('share');
  const bytes = randomBytes(10_000);
  const manifest = manifestFromBytes(bytes, PARAMS);
  t.ok(manifest.chunks.length > 8, 'many chunks');
  const pub = await Publisher.open({ shareRoot: share, chunking: PARAMS });
  const staged = mustStage(await pub.stageFile({ relPath: 'shuffled.bin', manifest, mode: 0o600, mtimeMs: 1_000 }));
  const order = manifest.chunks.map((_, i) => i).sort((a, b) => ((a * 7919) % 13) - ((b * 7919) % 13));
  await Promise.all(
    order
      .slice(0, 5)
      .map((i) =>
        staged.writeChunk(
          i,
          bytes.subarray(manifest.chunks[i]!.offset, manifest.chunks[i]!.offset + manifest.chunks[i]!.length),
        ),
      ),
  );
  await t.rejects(pub.commit([staged]), TypeError, 'an incomplete file cannot be committed');
  const bad = Buffer.from(
    bytes.subarray(
      manifest.chunks[order[5]!]!.offset,
      manifest.chunks[order[5]!]!.offset + manifest.chunks[order[5]!]!.length,
    ),
  );
  bad[0] = bad[0]! ^ 1;
  await t.rejects(staged.writeChunk(order[5]!, bad), { code: 'HASH_MISMATCH', message: /shuffled\.bin/ });
  for (const i of order.slice(5)) {
    const c = manifest.chunks[i]!;
    await staged.writeChunk(i, bytes.subarray(c.offset, c.offset + c.length));
  }
  t.ok(staged.complete);
  await pub.commit([staged]);
  t.same(await readFile(join(share, 'shuffled.bin')), bytes);
  t.equal((await lstat(join(share, 'shuffled.bin'))).mode & 0o777, 0o600);

  // A manifest whose root does not match its chunk list is refused before anything is staged.
  await t.rejects(
    pub.stageFile({ relPath: 'lie.bin', manifest: { ...manifest, root: new Uint8Array(32) }, mode: 0o644, mtimeMs: 0 }),
    { code: 'HASH_MISMATCH' },
  );
});

t.test('a large file writes back early while it arrives; a failed writeback fails its commit', async (t) => {
  const share = await tempDir('share');
  const chunking: ChunkingParams = { ...PARAMS, maxBytes: 64 << 10, avgBytes: 16 << 10, minBytes: 4 << 10 };
  const bytes = randomBytes(IN_MEMORY_MAX_BYTES + 300_000);
  const manifest = manifestFromBytes(bytes, chunking);
  const pub = await Publisher.open({ shareRoot: share, chunking, earlyWritebackBytes: 100_000 });
  const writeAll = async (f: StagedFile): Promise<void> => {
    for (const [i, c] of manifest.chunks.entries())
      await f.writeChunk(i, bytes.subarray(c.offset, c.offset + c.length));
  };
  const good = mustStage(await pub.stageFile({ relPath: 'big.bin', manifest, mode: 0o644, mtimeMs: 0 }));
  t.notOk(good.inMemory);
  // Counted at writeBack: each early writeback is one fdatasync of the staging file.
  const datasync = good.writeBack.bind(good);
  let writebacksStarted = 0;
  good.writeBack = () => {
    writebacksStarted++;
    return datasync();
  };
  await writeAll(good);
  // How many start depends on how long each takes on a busy disk (one at a time): at least one.
  t.ok(writebacksStarted >= 1, `a writeback started while writing (${writebacksStarted} for ${bytes.length} bytes)`);
  await pub.commit([good]);
  t.same(await readFile(join(share, 'big.bin')), bytes, 'published intact');
  // With writebacks that finish at once, one starts each time 100,000 more bytes were written:
  // the chunk that crosses the mark counts in full, so each covers less than 100,000 + a chunk.
  const quick = mustStage(await pub.stageFile({ relPath: 'quick.bin', manifest, mode: 0o644, mtimeMs: 0 }));
  let quickStarted = 0;
  quick.writeBack = () => {
    quickStarted++;
    return Promise.resolve();
  };
  await writeAll(quick);
  const atLeast = Math.floor(bytes.length / (100_000 + chunking.maxBytes));
  t.ok(
    quickStarted >= atLeast,
    `${quickStarted} writebacks for ${bytes.length} bytes in steps of 100,000 (at least ${atLeast})`,
  );
  await pub.commit([quick]);

  // fsync reports an error once: a failed early writeback must fail the commit, not vanish.
  const bad = mustStage(await pub.stageFile({ relPath: 'lost.bin', manifest, mode: 0o644, mtimeMs: 0 }));
  bad.writeBack = () => Promise.reject(Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' }));
  await writeAll(bad);
  await t.rejects(
    pub.commit([bad]),
    { code: 'IO', message: /lost\.bin.*EIO/ },
    'the commit names the file and the error',
  );
  t.same((await readdir(share)).sort(), ['big.bin', 'quick.bin'], 'nothing published at lost.bin, no temp file left');
});

t.test(
  'all-zero chunks of a file staged on disk are left as holes (sparse, as cp and rsync -S); the file keeps its size and mtime',
  async (t) => {
    const share = await tempDir('share');
    const chunking: ChunkingParams = { ...PARAMS, maxBytes: 64 << 10, avgBytes: 16 << 10, minBytes: 4 << 10 };
    // Data, 4 MiB of zeros, data, and 2 MiB of zeros at the end (the file is short until commit).
    const bytes = Buffer.concat([
      randomBytes(100_000),
      Buffer.alloc(4 << 20),
      randomBytes(100_000),
      Buffer.alloc(2 << 20),
    ]);
    const manifest = manifestFromBytes(bytes, chunking);
    const pub = await Publisher.open({ shareRoot: share, chunking });
    const staged = mustStage(
      await pub.stageFile({ relPath: 'disk.img', manifest, mode: 0o640, mtimeMs: 1_600_000_000_000 }),
    );
    t.notOk(staged.inMemory, 'staged in a temp file');
    for (const [i, c] of manifest.chunks.entries())
      await staged.writeChunk(i, bytes.subarray(c.offset, c.offset + c.length));
    await pub.commit([staged]);
    const st = await stat(join(share, 'disk.img'));
    t.equal(st.size, bytes.length, 'its whole size, trailing zeros included');
    t.same(await readFile(join(share, 'disk.img')), bytes, 'byte-identical');
    t.ok(st.blocks * 512 < 1 << 20, `${st.blocks * 512} bytes allocated for ${bytes.length}: the zeros are holes`);
    t.equal(st.mtimeMs, 1_600_000_000_000, 'the mtime set after the size');
    t.equal(st.mode & 0o777, 0o640);
  },
);

t.test('abort removes temp files and leaves no final file', async (t) => {
  const share = await tempDir('share');
  // Above IN_MEMORY_MAX_BYTES, a file is staged in a temp file next to its final path.
  const bytes = randomBytes(IN_MEMORY_MAX_BYTES + 4000);
  const manifest = manifestFromBytes(bytes, { ...PARAMS, maxBytes: 64 << 10, avgBytes: 16 << 10, minBytes: 4 << 10 });
  const pub = await Publisher.open({
    shareRoot: share,
    chunking: { ...PARAMS, maxBytes: 64 << 10, avgBytes: 16 << 10, minBytes: 4 << 10 },
  });
  const staged = mustStage(await pub.stageFile({ relPath: 'dir/half.bin', manifest, mode: 0o644, mtimeMs: 0 }));
  t.notOk(staged.inMemory);
  const c = manifest.chunks[0]!;
  await staged.writeChunk(0, bytes.subarray(c.offset, c.offset + c.length));
  t.ok(
    (await readdir(join(share, 'dir'))).some((n) => n.startsWith('.clawpeer-tmp-')),
    'the temp file is in the destination directory',
  );
  // A small file is assembled in memory: nothing on disk until its commit.
  const small = randomBytes(4000);
  const smallManifest = manifestFromBytes(small, PARAMS);
  const smallStaged = mustStage(
    await pub.stageFile({ relPath: 'dir/small.bin', manifest: smallManifest, mode: 0o644, mtimeMs: 0 }),
  );
  t.ok(smallStaged.inMemory);
  for (const [i, ch] of smallManifest.chunks.entries())
    await smallStaged.writeChunk(i, small.subarray(ch.offset, ch.offset + ch.length));
  t.equal(
    (await readdir(join(share, 'dir'))).filter((n) => n.startsWith('.clawpeer-tmp-')).length,
    1,
    'only the big file has a temp file',
  );
  await pub.abort();
  t.same(await readdir(join(share, 'dir')), [], 'no temp and no final file');
});

t.test(
  'setuid bits from a peer are dropped; existing identical file with a cached root is not re-hashed',
  async (t) => {
    const share = await tempDir('share');
    const bytes = Buffer.from('#!/bin/sh\n');
    const manifest = manifestFromBytes(bytes, PARAMS);
    let lookups = 0;
    const pub = await Publisher.open({
      shareRoot: share,
      chunking: PARAMS,
      knownRoot: () => {
        lookups++;
        return manifest.root;
      },
    });
    const staged = mustStage(await pub.stageFile({ relPath: 'suid', manifest, mode: 0o4755, mtimeMs: 0 }));
    await staged.writeChunk(0, bytes);
    await pub.commit([staged]);
    t.equal((await lstat(join(share, 'suid'))).mode & 0o7777, 0o755);
    t.equal(await pub.stageFile({ relPath: 'suid', manifest, mode: 0o755, mtimeMs: 0 }), 'identical');
    t.equal(lookups, 1, 'the identical check asked the warm cache');
    t.same((await manifestFromFile(join(share, 'suid'), PARAMS)).root, manifest.root);
  },
);

// ENOSPC needs a tiny file system: a 64 KiB tmpfs, which only root can mount.
async function tinyFs(): Promise<string | undefined> {
  if (process.getuid?.() !== 0 || process.platform !== 'linux') return undefined;
  const dir = await mkdtemp(join(tmpdir(), 'clawpeer-tinyfs-'));
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', dir]).status === 0;
  t.teardown(async () => {
    if (mounted) spawnSync('umount', [dir]);
    await rm(dir, { recursive: true, force: true });
  });
  if (!mounted) return undefined;
  return dir;
}
const tinyShare = await tinyFs();

t.test(
  'a full disk is an IO error naming the file; nothing is half-published',
  { skip: tinyShare === undefined ? 'needs root to mount a 64 KiB tmpfs' : false },
  async (t) => {
    const share = tinyShare!;
    const bytes = randomBytes(200_000);
    const manifest = manifestFromBytes(bytes, PARAMS);
    const pub = await Publisher.open({ shareRoot: share, chunking: PARAMS });
    const staged = mustStage(await pub.stageFile({ relPath: 'huge.bin', manifest, mode: 0o644, mtimeMs: 0 }));
    let error: unknown;
    try {
      for (const [i, c] of manifest.chunks.entries())
        await staged.writeChunk(i, bytes.subarray(c.offset, c.offset + c.length));
      await pub.commit([staged]); // a small file is assembled in memory: the disk fills at commit
    } catch (err) {
      error = err;
    }
    t.match(error, { code: 'IO', message: /huge\.bin.*disk is full/ });
    await pub.abort();
    t.same(await readdir(share), [], 'no temp file, no final file');
  },
);

t.test('temp files left by a killed process are swept once stale', async (t) => {
  const share = await tempDir('share');
  await mkdir(join(share, 'd'));
  await writeFile(join(share, 'd', '.clawpeer-tmp-0a0b0c-left.bin'), 'x');
  await writeFile(join(share, 'd', 'keep.bin'), 'y');
  t.equal(
    await removeStaleTempFiles(share, { nowMs: Date.now() }),
    0,
    'a fresh temp file may belong to a live transfer',
  );
  t.equal(await removeStaleTempFiles(share, { nowMs: Date.now() + 2 * 3600 * 1000 }), 1);
  t.same(await readdir(join(share, 'd')), ['keep.bin']);
});

t.test('temp names are unique per process, name their writer and fit NAME_MAX', async (t) => {
  const names = Array.from({ length: 1000 }, () => tempNameFor('file.bin'));
  t.equal(new Set(names).size, names.length, 'no two alike');
  t.ok(
    names.every((n) => tempFileOwnerPid(n) === process.pid && n.endsWith('-file.bin')),
    'each carries this pid and the base name',
  );
  t.equal(tempFileOwnerPid(tempNameFor('x', 4242)), 4242);
  const long = tempNameFor('é'.repeat(200));
  t.ok(Buffer.byteLength(long, 'utf8') <= 255, `a long base name is cut (${Buffer.byteLength(long, 'utf8')} bytes)`);
});

t.test('verdict and probeDir (dry runs) say what stageFile and makeDir would do, creating nothing', async (t) => {
  const share = await tempDir('verdict');
  const outside = await tempDir('verdict-outside');
  await mkdir(join(share, 'd'));
  await writeFile(join(share, 'd', 'same.txt'), 'same');
  await writeFile(join(share, 'd', 'other.txt'), 'old');
  await writeFile(join(share, 'blocker'), 'a file where a directory would go');
  await symlink(outside, join(share, 'escape'));
  const file = (relPath: string, text: string) => ({
    relPath,
    manifest: manifestFromBytes(Buffer.from(text), PARAMS),
    mode: 0o644,
    mtimeMs: 0,
  });
  const before = await allNames(share);
  const pub = await Publisher.open({ shareRoot: share, chunking: PARAMS });
  const sameBefore = await stat(join(share, 'd', 'same.txt'));
  t.same(
    await pub.verdict(file('d/same.txt', 'same')),
    { outcome: 'identical', metadata: { time: true, perms: false } },
    'identical; its mtime (0 incoming) would be set',
  );
  t.same(
    await pub.verdict({ ...file('d/same.txt', 'same'), mtimeMs: sameBefore.mtimeMs, mode: 0o600 }),
    { outcome: 'identical', metadata: { time: false, perms: true } },
    'and its permissions',
  );
  t.same(
    await pub.verdict({ ...file('d/same.txt', 'same'), mtimeMs: sameBefore.mtimeMs, mode: sameBefore.mode }),
    { outcome: 'identical' },
    'nothing to set',
  );
  t.equal((await stat(join(share, 'd', 'same.txt'))).mtimeMs, sameBefore.mtimeMs, 'a verdict sets nothing');
  t.same(await pub.verdict(file('d/new.txt', 'x')), { outcome: 'new' });
  t.same(
    await pub.verdict(file('deep/er/new.txt', 'x')),
    { outcome: 'new' },
    'under directories that do not exist yet',
  );
  await t.rejects(pub.verdict(file('d/other.txt', 'new')), { code: 'FILE_EXISTS', message: /other\.txt.*--force/ });
  t.same(
    await (
      await Publisher.open({ shareRoot: share, chunking: PARAMS, force: true })
    ).verdict(file('d/other.txt', 'new')),
    { outcome: 'replace' },
  );
  await t.rejects(pub.verdict(file('blocker/x.txt', 'x')), {
    code: 'FILE_EXISTS',
    message: /blocker is a file where a directory should be/,
  });
  await t.rejects(pub.verdict(file('escape/x.txt', 'x')), { code: 'PATH_INVALID', message: /outside the share/ });
  await t.rejects(pub.verdict(file('../x.txt', 'x')), { code: 'PATH_INVALID' });
  t.doesNotThrow(() => pub.probeDir('new/dirs'));
  t.throws(() => pub.probeDir('blocker/sub'), { code: 'FILE_EXISTS' });
  t.same(await allNames(share), before, 'nothing was created');
  t.same(await readdir(outside), [], 'nor outside');
});

t.test('--fsync=none publishes the same files with no fsync at all; batch fsyncs files and directories', async (t) => {
  const publishTwo = async (fsync: 'batch' | 'none'): Promise<{ fsyncs: number; share: string }> => {
    const share = await tempDir(`fsync-${fsync}`);
    const pub = await Publisher.open({ shareRoot: share, chunking: PARAMS, fsync });
    const staged: StagedFile[] = [];
    for (const [rel, text] of [
      ['a.txt', 'alpha'],
      ['sub/b.txt', 'beta'],
    ] as const) {
      const bytes = Buffer.from(text);
      const file = mustStage(
        await pub.stageFile({
          relPath: rel,
          manifest: manifestFromBytes(bytes, PARAMS),
          mode: 0o640,
          mtimeMs: 1_600_000_000_000,
        }),
      );
      await file.writeChunk(0, bytes);
      staged.push(file);
    }
    await pub.commit(staged);
    await pub.setDirMetadata([{ relPath: 'sub', mode: 0o750, mtimeMs: 1_600_000_000_000 }]);
    return { fsyncs: pub.fsyncs, share };
  };
  const batch = await publishTwo('batch');
  const none = await publishTwo('none');
  t.ok(batch.fsyncs >= 3, `batch fsyncs each file and the directories it touched (${batch.fsyncs})`);
  t.equal(none.fsyncs, 0, 'none fsyncs nothing');
  for (const { share } of [batch, none]) {
    t.equal(await readFile(join(share, 'a.txt'), 'utf8'), 'alpha');
    t.equal(await readFile(join(share, 'sub/b.txt'), 'utf8'), 'beta');
    t.equal((await stat(join(share, 'sub/b.txt'))).mode & 0o777, 0o640);
    t.equal((await stat(join(share, 'sub'))).mode & 0o777, 0o750);
    t.same((await readdir(share)).sort(), ['a.txt', 'sub'], 'no temp file left beside them');
  }
});
