// Staged files on disk (temp files, partials) hold descriptors only while used: a bounded pool
// closes idle ones and reopens them on demand (support/reopenable-file.ts). Before, each held
// its descriptor(s) from staging to publishing: a transfer of N large files needed N-2N.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { mkdtemp, open, readFile, readdir, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChunkingParams } from '../../src/chunking/fastcdc.js';
import { manifestFromBytes, type FileManifest } from '../../src/chunking/manifest.js';
import { PartialStore } from '../../src/store/partial-store.js';
import { Publisher } from '../../src/store/publisher.js';
import { IN_MEMORY_MAX_BYTES, type StagedFile } from '../../src/store/staged-file.js';
import { HandlePool, ReopenableFile, REOPEN_READ_WRITE, stagingHandles } from '../../src/support/reopenable-file.js';

const CHUNKING: ChunkingParams = { minBytes: 16 << 10, avgBytes: 64 << 10, maxBytes: 256 << 10, normalization: 2 };
const CAP = 8;

async function tempDir(tag: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `clawpeer-${tag}-`));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

function mustStage(x: StagedFile | 'identical' | 'kept'): StagedFile {
  if (typeof x === 'string') throw new Error(`expected a staged file, got ${x}`);
  return x;
}

async function writeChunks(f: StagedFile, bytes: Buffer, indices: readonly number[]): Promise<void> {
  for (const i of indices) {
    const c = f.manifest.chunks[i]!;
    await f.writeChunk(i, bytes.subarray(c.offset, c.offset + c.length));
  }
}

stagingHandles.setCap(CAP);
t.teardown(() => stagingHandles.setCap(undefined));

t.test('many staged files: at most the cap open, each reopened to be written and committed', async (t) => {
  const share = await tempDir('share');
  const pub = await Publisher.open({
    shareRoot: share,
    chunking: CHUNKING,
    partials: await PartialStore.open(share),
    earlyWritebackBytes: 256 << 10,
  });
  // 3 x CAP temp files and CAP partials (2 descriptors each), over 1 MiB; each ends in zeros
  // (a hole: the temp file is short until commit).
  const files: { f: StagedFile; bytes: Buffer; manifest: FileManifest }[] = [];
  for (let i = 0; i < 4 * CAP; i++) {
    const bytes = Buffer.concat([randomBytes(IN_MEMORY_MAX_BYTES + 100_000 + i), Buffer.alloc(300_000)]);
    const manifest = manifestFromBytes(bytes, CHUNKING);
    const resumable = i % 4 === 3;
    const f = mustStage(
      await pub.stageFile(
        { relPath: `f${i}.bin`, manifest, mode: 0o640, mtimeMs: 1_600_000_000_000 + i * 1000 },
        {
          resumable,
        },
      ),
    );
    t.notOk(f.inMemory);
    t.ok(stagingHandles.openCount <= CAP, `${stagingHandles.openCount} open after staging ${i + 1}`);
    files.push({ f, bytes, manifest });
  }
  t.notOk(files[0]!.f.descriptorOpen, 'the first staged file was closed to make room');
  // Round robin, a chunk of each at a time: every file is reopened again and again.
  let maxOpen = 0;
  const rounds = Math.max(...files.map((x) => x.manifest.chunks.length));
  for (let r = 0; r < rounds; r++) {
    for (const { f, bytes, manifest } of files) {
      if (r < manifest.chunks.length) await writeChunks(f, bytes, [r]);
      maxOpen = Math.max(maxOpen, stagingHandles.openCount);
    }
  }
  t.ok(maxOpen <= CAP, `at most ${CAP} open while written (${maxOpen})`);
  t.ok(
    files.every((x) => x.f.complete),
    'all complete',
  );
  await pub.commit(files.map((x) => x.f));
  t.equal(stagingHandles.openCount, 0, 'none open once committed');
  for (const [i, { bytes }] of files.entries()) {
    const p = join(share, `f${i}.bin`);
    t.ok((await readFile(p)).equals(bytes), `f${i} published intact`);
    const st = await stat(p);
    t.equal(st.mode & 0o777, 0o640, 'mode set');
    t.equal(Math.round(st.mtimeMs), 1_600_000_000_000 + i * 1000, 'mtime set');
  }
  t.same((await readdir(share)).filter((n) => n.endsWith('.bin')).length, 4 * CAP, 'no temp files left');
});

t.test('a closed temp file: discard removes it; a closed partial is kept and resumes', async (t) => {
  const share = await tempDir('share');
  const pub = await Publisher.open({ shareRoot: share, chunking: CHUNKING, partials: await PartialStore.open(share) });
  const bytes = randomBytes(IN_MEMORY_MAX_BYTES * 2);
  const manifest = manifestFromBytes(bytes, CHUNKING);
  const half = manifest.chunks.map((_, i) => i).filter((i) => i % 2 === 0);
  const temp = mustStage(await pub.stageFile({ relPath: 'temp.bin', manifest, mode: 0o644, mtimeMs: 0 }));
  const part = mustStage(
    await pub.stageFile({ relPath: 'part.bin', manifest, mode: 0o644, mtimeMs: 0 }, { resumable: true }),
  );
  await writeChunks(temp, bytes, half);
  await writeChunks(part, bytes, half);
  await stagingHandles.trim(0);
  t.notOk(temp.descriptorOpen || part.descriptorOpen, 'both closed while idle');
  await temp.discard();
  await part.discard();
  t.same(await readdir(share), ['.clawpeer'], 'the temp file is gone');

  const again = mustStage(
    await pub.stageFile({ relPath: 'part.bin', manifest, mode: 0o644, mtimeMs: 0 }, { resumable: true }),
  );
  t.same(
    again.missingChunks(),
    manifest.chunks.map((_, i) => i).filter((i) => i % 2 === 1),
    'the partial resumes with the chunks written before it was closed',
  );
  await stagingHandles.trim(0);
  await writeChunks(again, bytes, again.missingChunks());
  await stagingHandles.trim(0);
  await pub.commit([again]);
  t.ok((await readFile(join(share, 'part.bin'))).equals(bytes), 'published intact after reopening');
});

t.test('a closed temp file replaced by a symlink is not followed when reopened', async (t) => {
  const share = await tempDir('share');
  const outside = join(await tempDir('outside'), 'victim');
  await writeFile(outside, 'keep me');
  const pub = await Publisher.open({ shareRoot: share, chunking: CHUNKING });
  const bytes = randomBytes(IN_MEMORY_MAX_BYTES * 2);
  const manifest = manifestFromBytes(bytes, CHUNKING);
  const f = mustStage(await pub.stageFile({ relPath: 'x.bin', manifest, mode: 0o644, mtimeMs: 0 }));
  await stagingHandles.trim(0);
  await rm(f.stagingPath);
  await symlink(outside, f.stagingPath);
  await t.rejects(writeChunks(f, bytes, [0]), { code: 'IO', message: /x\.bin/ }, 'the write fails, naming the file');
  t.equal(await readFile(outside, 'utf8'), 'keep me', 'nothing written through the link');
  await f.discard();
});

t.test('a file in use is not closed; concurrent uses of a closed file reopen it once', async (t) => {
  const dir = await tempDir('pool');
  const pool = new HandlePool(() => 1);
  const a = new ReopenableFile(join(dir, 'a'), await open(join(dir, 'a'), 'wx+'), REOPEN_READ_WRITE, pool);
  let release!: () => void;
  const held = a.use(() => new Promise<void>((resolve) => (release = resolve)));
  await new Promise((resolve) => setImmediate(resolve));
  const b = new ReopenableFile(join(dir, 'b'), await open(join(dir, 'b'), 'wx+'), REOPEN_READ_WRITE, pool);
  await pool.trim(0);
  t.ok(a.isOpen, 'a, in use, stays open');
  t.notOk(b.isOpen, 'b, idle, was closed');
  release();
  await held;
  const writes = await Promise.all([0, 1, 2].map((i) => b.use((h) => h.write(Buffer.from([65 + i]), 0, 1, i))));
  t.equal(writes.length, 3);
  t.equal(await readFile(join(dir, 'b'), 'utf8'), 'ABC', 'all three writes landed');
  t.notOk(a.isOpen, 'a was closed to make room for b (cap 1)');
  await a.dispose();
  await b.dispose();
  await t.rejects(
    b.use(() => Promise.resolve()),
    /closed/,
    'a disposed file is not reopened',
  );
  t.equal(pool.openCount, 0);
});
