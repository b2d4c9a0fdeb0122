import t from 'tap';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFile, mkdtemp, open, readFile, readdir, realpath, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChunkingParams } from '../../src/chunking/fastcdc.js';
import { manifestFromBytes } from '../../src/chunking/manifest.js';
import type { FileManifest } from '../../src/chunking/manifest.js';
import { JOURNAL_RECORD_BYTES, PartialStore } from '../../src/store/partial-store.js';
import { isInternalPath } from '../../src/store/internal-names.js';
import type { Partial } from '../../src/store/partial-store.js';
import { Publisher } from '../../src/store/publisher.js';
import type { StagedFile } from '../../src/store/staged-file.js';

/** A staged file, or the test fails: these fixtures always have something to stage. */
function mustStage(x: StagedFile | 'identical' | 'kept'): StagedFile {
  if (typeof x === 'string') throw new Error(`expected a staged file, got ${x}`);
  return x;
}

const PARAMS: ChunkingParams = { minBytes: 64, avgBytes: 256, maxBytes: 1024, normalization: 2 };

async function tempDir(tag: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `clawpeer-${tag}-`));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

async function writeChunks(
  p: Partial,
  manifest: FileManifest,
  bytes: Uint8Array,
  indices: readonly number[],
): Promise<void> {
  for (const i of indices) {
    const c = manifest.chunks[i]!;
    await p.write(c, bytes.subarray(c.offset, c.offset + c.length));
  }
}

function fixture(seedBytes = 8000): {
  bytes: Buffer;
  manifest: FileManifest;
  target: { relPath: string; root: Uint8Array; size: number };
} {
  const bytes = randomBytes(seedBytes);
  const manifest = manifestFromBytes(bytes, PARAMS);
  return { bytes, manifest, target: { relPath: 'dir/file.bin', root: manifest.root, size: manifest.size } };
}

t.test('isInternalPath marks clawpeer state and temp files, nothing else', async (t) => {
  t.equal(isInternalPath('.clawpeer'), true);
  t.equal(isInternalPath('.clawpeer/partial/x.data'), true);
  t.equal(isInternalPath('a/b/.clawpeer-tmp-0123-name'), true);
  t.equal(isInternalPath('a/.clawpeer/x'), false, 'only the share root holds .clawpeer');
  t.equal(isInternalPath('.clawpeerish'), false);
  t.equal(isInternalPath('docs/clawpeer-tmp.txt'), false);
});

t.test('a reopened partial lists the chunks written before it was closed', async (t) => {
  const share = await tempDir('share');
  const { bytes, manifest, target } = fixture();
  const store = await PartialStore.open(share);
  t.equal(store.dir, join(await realpath(share), '.clawpeer', 'partial'));
  const p = await store.openPartial(target);
  t.same(p.chunks, [], 'a new partial is empty');
  const half = manifest.chunks.map((_, i) => i).filter((i) => i % 2 === 1);
  await writeChunks(p, manifest, bytes, half);
  await p.close();

  const again = await (await PartialStore.open(share)).openPartial(target);
  t.same(
    again.chunks.map((c) => c.offset),
    half.map((i) => manifest.chunks[i]!.offset),
  );
  t.ok(half.every((i) => again.has(manifest.chunks[i]!.offset, manifest.chunks[i]!.id)));
  t.notOk(again.has(manifest.chunks[0]!.offset, manifest.chunks[0]!.id));
  await again.close();
  t.same(
    (await store.list()).map((i) => [i.relPath, i.chunks.length, i.size]),
    [['dir/file.bin', half.length, bytes.length]],
  );
});

t.test(
  'an all-zero chunk is journaled without a write: the hole reads as its zeros, and a resume verifies it',
  async (t) => {
    const share = await tempDir('share');
    const bytes = Buffer.concat([randomBytes(3000), Buffer.alloc(6000), randomBytes(3000)]);
    const manifest = manifestFromBytes(bytes, PARAMS);
    const target = { relPath: 'sparse.bin', root: manifest.root, size: manifest.size };
    const store = await PartialStore.open(share);
    const p = await store.openPartial(target);
    const zero = manifest.chunks.findIndex((c) => bytes.subarray(c.offset, c.offset + c.length).every((b) => b === 0));
    t.ok(zero >= 0, 'the fixture has a chunk of zeros');
    const z = manifest.chunks[zero]!;
    await p.recordZeros(z);
    await p.close();
    // Reopened with verification (the default): the journaled chunk is read back and hashed.
    const again = await (await PartialStore.open(share)).openPartial(target);
    t.ok(again.has(z.offset, z.id), 'kept: the hole hashes as the zeros it stands for');
    await again.close();
  },
);

t.test('a torn journal tail is ignored and cut off, so later records still count', async (t) => {
  const share = await tempDir('share');
  const { bytes, manifest, target } = fixture();
  const store = await PartialStore.open(share);
  const p = await store.openPartial(target);
  await writeChunks(p, manifest, bytes, [0, 1, 2]);
  await p.close();
  // Half a record: what a crash in the middle of an append leaves.
  await appendFile(p.journalPath, randomBytes(JOURNAL_RECORD_BYTES / 2));
  const q = await store.openPartial(target);
  t.same(
    q.chunks.map((c) => c.offset),
    [0, 1, 2].map((i) => manifest.chunks[i]!.offset),
    'the torn record is ignored',
  );
  await writeChunks(q, manifest, bytes, [3]);
  await q.close();
  const r = await store.openPartial(target);
  t.equal(r.chunks.length, 4, 'a record appended after the cut is read back');

  // A whole record of garbage (a reordered write after power loss) fails its check.
  await r.close();
  await appendFile(r.journalPath, randomBytes(JOURNAL_RECORD_BYTES));
  const s = await store.openPartial(target);
  t.equal(s.chunks.length, 4);
  await s.close();
});

t.test('resume re-verifies chunk bytes: a journaled chunk whose data is wrong is dropped', async (t) => {
  const share = await tempDir('share');
  const { bytes, manifest, target } = fixture();
  const store = await PartialStore.open(share);
  const p = await store.openPartial(target);
  await writeChunks(p, manifest, bytes, [0, 1, 2]);
  await p.close();
  const h = await open(p.dataPath, 'r+');
  await h.write(Buffer.from([bytes[manifest.chunks[1]!.offset]! ^ 0xff]), 0, 1, manifest.chunks[1]!.offset);
  await h.close();
  const q = await store.openPartial(target);
  t.same(
    q.chunks.map((c) => c.offset),
    [manifest.chunks[0]!.offset, manifest.chunks[2]!.offset],
  );
  await q.close();
  const unverified = await store.openPartial(target, { verify: false });
  t.equal(unverified.chunks.length, 3, 'verify: false trusts the journal');
  await unverified.close();
});

t.test('a partial for another root of the same path is discarded', async (t) => {
  const share = await tempDir('share');
  const a = fixture();
  const b = fixture();
  const store = await PartialStore.open(share);
  const p = await store.openPartial(a.target);
  await writeChunks(p, a.manifest, a.bytes, [0]);
  await p.close();
  const q = await store.openPartial(b.target);
  t.same(q.chunks, []);
  await q.close();
  t.same(
    (await store.list()).map((i) => Buffer.from(i.root).toString('hex')),
    [Buffer.from(b.target.root).toString('hex')],
  );
});

t.test('discardStale removes old, unwanted and orphaned partials', async (t) => {
  const share = await tempDir('share');
  const store = await PartialStore.open(share);
  const targets = [
    fixture().target,
    { ...fixture().target, relPath: 'old.bin' },
    { ...fixture().target, relPath: 'unwanted.bin' },
  ];
  for (const target of targets) await (await store.openPartial(target)).close();
  const oldInfo = (await store.list()).find((i) => i.relPath === 'old.bin')!;
  await utimes(oldInfo.journalPath, 1_000_000, 1_000_000);
  await writeFile(join(store.dir, 'orphan.data'), 'x');
  const removed = await store.discardStale({ nowMs: Date.now(), keep: (p) => p.relPath !== 'unwanted.bin' });
  t.equal(removed, 2);
  t.same(
    (await store.list()).map((i) => i.relPath),
    ['dir/file.bin'],
  );
  t.equal((await readdir(store.dir)).length, 2, 'only the kept data file and journal remain');
});

t.test('the publisher resumes from a partial and promotes it to the final path', async (t) => {
  const share = await tempDir('share');
  const { bytes, manifest } = fixture(6000);
  const file = { relPath: 'dir/file.bin', manifest, mode: 0o640, mtimeMs: 1_650_000_000_000 };
  const pub = await Publisher.open({ shareRoot: share, chunking: PARAMS, partials: await PartialStore.open(share) });
  const staged = mustStage(await pub.stageFile(file, { resumable: true }));
  t.ok(staged.resumable);
  const first = manifest.chunks.length >> 1;
  for (let i = 0; i < first; i++) {
    const c = manifest.chunks[i]!;
    await staged.writeChunk(i, bytes.subarray(c.offset, c.offset + c.length));
  }
  await staged.flush();
  await pub.abort(); // an error elsewhere: the partial is kept
  t.same(await readdir(join(share, 'dir')), [], 'nothing at the final path, no temp beside it');

  const pub2 = await Publisher.open({ shareRoot: share, chunking: PARAMS, partials: await PartialStore.open(share) });
  const resumed = mustStage(await pub2.stageFile(file, { resumable: true }));
  t.same(resumed.missingChunks(), manifest.chunks.map((_, i) => i).slice(first), 'only the rest is missing');
  for (const i of resumed.missingChunks()) {
    const c = manifest.chunks[i]!;
    await resumed.writeChunk(i, bytes.subarray(c.offset, c.offset + c.length));
  }
  await pub2.commit([resumed]);
  t.same(await readFile(join(share, 'dir/file.bin')), bytes);
  t.equal((await stat(join(share, 'dir/file.bin'))).mode & 0o777, 0o640);
  t.same(await readdir(join(share, '.clawpeer/partial')), [], 'the partial and its journal are gone');
});

t.test('after a SIGKILL mid-transfer, a new store finds the chunks written and asks only for the rest', async (t) => {
  const share = await tempDir('share');
  const src = join(await tempDir('src'), 'payload.bin');
  const bytes = randomBytes(12_000);
  await writeFile(src, bytes);
  const manifest = manifestFromBytes(bytes, PARAMS);
  const url = (rel: string): string => new URL(rel, import.meta.url).href;
  // The child stages the file resumably, writes every third chunk, then kills itself with
  // SIGKILL: no close, no flush, no finally blocks.
  const child = `
    const { readFile } = await import('node:fs/promises');
    const { Publisher } = await import(${JSON.stringify(url('../../src/store/publisher.js'))});
    const { PartialStore } = await import(${JSON.stringify(url('../../src/store/partial-store.js'))});
    const { manifestFromBytes } = await import(${JSON.stringify(url('../../src/chunking/manifest.js'))});
    const params = ${JSON.stringify(PARAMS)};
    const bytes = await readFile(${JSON.stringify(src)});
    const manifest = manifestFromBytes(bytes, params);
    const pub = await Publisher.open({ shareRoot: ${JSON.stringify(share)}, chunking: params, partials: await PartialStore.open(${JSON.stringify(share)}) });
    const staged = await pub.stageFile({ relPath: 'out/payload.bin', manifest, mode: 0o644, mtimeMs: 0 }, { resumable: true });
    for (let i = 0; i < manifest.chunks.length; i += 3) {
      const c = manifest.chunks[i];
      await staged.writeChunk(i, bytes.subarray(c.offset, c.offset + c.length));
    }
    process.kill(process.pid, 'SIGKILL');
  `;
  const proc = spawn(process.execPath, ['--input-type=module', '-e', child], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const signal = await new Promise<NodeJS.Signals | null>((resolve) => proc.on('exit', (_code, sig) => resolve(sig)));
  t.equal(signal, 'SIGKILL', `the child died by SIGKILL ${stderr}`);
  t.same(await readdir(join(share, 'out')), [], 'no file, partial or temp at the final directory');

  const written = manifest.chunks.map((_, i) => i).filter((i) => i % 3 === 0);
  const store = await PartialStore.open(share);
  const p = await store.openPartial({ relPath: 'out/payload.bin', root: manifest.root, size: manifest.size });
  t.same(
    p.chunks.map((c) => c.offset),
    written.map((i) => manifest.chunks[i]!.offset),
    'every chunk written before the kill is found',
  );
  await p.close();

  const pub = await Publisher.open({ shareRoot: share, chunking: PARAMS, partials: store });
  const staged = mustStage(
    await pub.stageFile({ relPath: 'out/payload.bin', manifest, mode: 0o644, mtimeMs: 0 }, { resumable: true }),
  );
  const missing = staged.missingChunks();
  t.same(
    missing,
    manifest.chunks.map((_, i) => i).filter((i) => i % 3 !== 0),
    'only the others are requested',
  );
  for (const i of missing) {
    const c = manifest.chunks[i]!;
    await staged.writeChunk(i, bytes.subarray(c.offset, c.offset + c.length));
  }
  await pub.commit([staged]);
  t.same(await readFile(join(share, 'out/payload.bin')), bytes);
});
