import t from 'tap';
import { randomBytes } from 'node:crypto';
import { appendFile, lstat, mkdir, mkdtemp, open, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChunkingParams } from '../../src/chunking/fastcdc.js';
import { manifestFromBytes } from '../../src/chunking/manifest.js';
import { ChunkIndex } from '../../src/store/chunk-index.js';
import { PartialStore } from '../../src/store/partial-store.js';
import { leavePartialChunk } from './partial-fixture.js';

const PARAMS: ChunkingParams = { minBytes: 64, avgBytes: 256, maxBytes: 1024, normalization: 2 };
// An mtime safely outside the racy window: a day ago, in seconds.
const PAST_S = Date.now() / 1000 - 86_400;

async function share(): Promise<{ dir: string; a: Buffer; b: Buffer }> {
  const dir = await mkdtemp(join(tmpdir(), 'clawpeer-index-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await mkdir(join(dir, 'sub'));
  const a = randomBytes(6000);
  const b = randomBytes(3000);
  await writeFile(join(dir, 'a.bin'), a);
  await writeFile(join(dir, 'sub/b.bin'), b);
  await writeFile(join(dir, 'empty'), '');
  for (const f of ['a.bin', 'sub/b.bin', 'empty']) await utimes(join(dir, f), PAST_S, PAST_S);
  return { dir, a, b };
}

t.test('the index finds the chunks of files in the share and reads them back verified', async (t) => {
  const { dir, a, b } = await share();
  const index = await ChunkIndex.open({ shareRoot: dir, chunking: PARAMS });
  const stats = await index.refresh();
  t.equal(stats.files, 3);
  t.equal(stats.hashed, 3);
  const ma = manifestFromBytes(a, PARAMS);
  const mb = manifestFromBytes(b, PARAMS);
  t.equal(index.chunkCount, new Set([...ma.chunks, ...mb.chunks].map((c) => Buffer.from(c.id).toString('hex'))).size);
  const c = mb.chunks[1]!;
  t.same(index.lookup(c.id), {
    relPath: 'sub/b.bin',
    absPath: join(dir, 'sub/b.bin'),
    offset: c.offset,
    length: c.length,
    source: 'file',
  });
  t.same(await index.readChunk(c.id), b.subarray(c.offset, c.offset + c.length));
  const unknown = randomBytes(32);
  t.equal(index.lookup(unknown), undefined);
  t.equal(await index.readChunk(unknown), undefined);
  t.same(
    index.missing([ma.chunks[0]!.id, unknown, mb.chunks[0]!.id]),
    [unknown],
    'a manifest is answered with what we lack',
  );
  t.same(index.cachedRoot('a.bin', await lstat(join(dir, 'a.bin'), { bigint: true })), ma.root);
});

t.test('a file modified after indexing does not poison a transfer', async (t) => {
  const { dir, a, b } = await share();
  const index = await ChunkIndex.open({ shareRoot: dir, chunking: PARAMS });
  await index.refresh();
  const ma = manifestFromBytes(a, PARAMS);
  // Same size, same mtime, different bytes: only the hash can tell.
  const h = await open(join(dir, 'a.bin'), 'r+');
  await h.write(Buffer.alloc(80, 0x58), 0, 80, ma.chunks[0]!.offset);
  await h.close();
  await utimes(join(dir, 'a.bin'), PAST_S, PAST_S);
  t.equal(await index.readChunk(ma.chunks[0]!.id), undefined, 'the stale chunk is not returned');
  t.equal(index.lookup(ma.chunks[1]!.id), undefined, "all of the file's entries are dropped");
  t.ok(index.has(manifestFromBytes(b, PARAMS).chunks[0]!.id), 'other files stay');
});

t.test('a file renamed or copied in the share: its chunks stay indexed when the first copy goes', async (t) => {
  const { dir, a } = await share();
  const index = await ChunkIndex.open({ shareRoot: dir, chunking: PARAMS });
  await index.refresh();
  const ma = manifestFromBytes(a, PARAMS);
  const first = ma.chunks[0]!;
  // A copy of a.bin (as a sync lands a renamed file before it deletes the old name), then the
  // original goes: the copy holds every chunk.
  await writeFile(join(dir, 'sub/a-renamed.bin'), a);
  await utimes(join(dir, 'sub/a-renamed.bin'), PAST_S, PAST_S);
  await index.refresh();
  await rm(join(dir, 'a.bin'));
  await index.refresh();
  t.ok(
    ma.chunks.every((c) => index.has(c.id)),
    'every chunk of the renamed file is still held',
  );
  t.equal(index.lookup(first.id)?.relPath, 'sub/a-renamed.bin', 'now found in the copy');
  t.same(await index.readChunk(first.id), a.subarray(first.offset, first.offset + first.length));

  // The same when the first copy changed and a read found it stale.
  await writeFile(join(dir, 'third.bin'), a);
  await utimes(join(dir, 'third.bin'), PAST_S, PAST_S);
  await index.refresh();
  const h = await open(join(dir, 'sub/a-renamed.bin'), 'r+');
  await h.write(Buffer.alloc(80, 0x58), 0, 80, first.offset);
  await h.close();
  await utimes(join(dir, 'sub/a-renamed.bin'), PAST_S, PAST_S);
  t.same(
    (await index.readChunk(first.id)) ?? (await index.readChunk(first.id)),
    a.subarray(first.offset, first.offset + first.length),
    'a stale holder gives way to the next one',
  );
  t.equal(index.lookup(first.id)?.relPath, 'third.bin');
});

t.test('the warm cache skips unchanged files, re-hashes changed and racy ones, survives reopen', async (t) => {
  const { dir } = await share();
  const first = await ChunkIndex.open({ shareRoot: dir, chunking: PARAMS });
  await first.refresh();
  t.equal(first.dirty, true, 'what the refresh hashed is not saved yet');
  await first.save();
  t.equal(first.dirty, false);

  const reopened = await ChunkIndex.open({ shareRoot: dir, chunking: PARAMS });
  t.ok(reopened.chunkCount > 0, 'loaded from .clawpeer/index.bin');
  t.equal(reopened.dirty, false, 'a loaded cache is clean');
  t.equal((await reopened.refresh()).hashed, 0, 'nothing re-hashed');
  t.equal(reopened.dirty, false, 'an unchanged share leaves the cache clean');
  const savedAt = (await lstat(reopened.indexPath, { bigint: true })).mtimeNs;
  await reopened.save();
  t.equal((await lstat(reopened.indexPath, { bigint: true })).mtimeNs, savedAt, 'saving a clean cache writes nothing');

  const changed = randomBytes(4000);
  await writeFile(join(dir, 'a.bin'), changed);
  await utimes(join(dir, 'a.bin'), PAST_S + 10, PAST_S + 10);
  await writeFile(join(dir, 'fresh.bin'), randomBytes(500)); // mtime = now: inside the racy window
  const stats = await reopened.refresh();
  t.equal(stats.hashed, 2, 'the changed file and the new one');
  t.ok(reopened.has(manifestFromBytes(changed, PARAMS).chunks[0]!.id));
  await reopened.save();
  t.equal(
    (await (await ChunkIndex.open({ shareRoot: dir, chunking: PARAMS })).refresh()).hashed,
    1,
    'the racy file is hashed again until its mtime is old enough',
  );

  const other = await ChunkIndex.open({ shareRoot: dir, chunking: { ...PARAMS, avgBytes: 512 } });
  t.equal(other.chunkCount, 0, 'a cache made with other chunking parameters is ignored');
  await appendFile(other.indexPath, 'junk');
  t.equal((await ChunkIndex.open({ shareRoot: dir, chunking: PARAMS })).chunkCount, 0, 'a damaged cache is ignored');
});

t.test('chunks of interrupted partials are indexed; clawpeer state is never indexed as content', async (t) => {
  const { dir } = await share();
  const partials = await PartialStore.open(dir);
  const bytes = randomBytes(5000);
  const { chunk: c, chunks } = await leavePartialChunk(partials, 'incoming.bin', bytes, PARAMS, 2);
  await writeFile(join(dir, 'sub', '.clawpeer-tmp-abc-x'), randomBytes(400));

  const index = await ChunkIndex.open({ shareRoot: dir, chunking: PARAMS, partials });
  const stats = await index.refresh();
  t.equal(stats.files, 3, 'temp files and .clawpeer/ are not share files');
  t.equal(stats.partialChunks, 1);
  t.equal(index.lookup(c.id)?.source, 'partial');
  t.same(await index.readChunk(c.id), bytes.subarray(c.offset, c.offset + c.length));
  t.equal(index.has(chunks[0]!.id), false, 'chunks the partial does not have are not claimed');
});

t.test('many files holding one chunk: indexing and dropping them stays linear', { timeout: 60_000 }, async (t) => {
  // A peer can land 100,000 one-chunk files of the same bytes (or one file of one repeated
  // chunk) in a share. Each kept its spare entry in a list that every add searched and every
  // drop filtered: quadratic, on the listener's event loop (20,000 files re-indexed took 28 s,
  // 50,000 about three minutes). A timeout catches that (the runner's: the loop never yields);
  // linear work takes a second or two.
  const dir = await mkdtemp(join(tmpdir(), 'clawpeer-index-spares-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const index = await ChunkIndex.open({ shareRoot: dir, chunking: PARAMS });
  const bytes = randomBytes(100);
  const one = manifestFromBytes(bytes, PARAMS);
  const id = one.chunks[0]!.id;
  const st = await lstat(dir, { bigint: true });
  const n = 50_000;
  for (let i = 0; i < n; i++) index.addFile(`f${i}`, one, st, 0);
  // Re-indexed (a refresh that hashed them again, a sync that republished them): drop, then add.
  for (let i = 0; i < n; i++) index.addFile(`f${i}`, one, st, 0);
  t.equal(index.lookup(id)?.relPath, 'f0', 'held by one of them still');
  // One file of the same chunk repeated n times, added twice over the n spares.
  const repeated = {
    ...one,
    size: 100 * n,
    chunks: Array.from({ length: n }, (_, i) => ({ ...one.chunks[0]!, offset: i * 100 })),
  };
  index.addFile('f0', repeated, st, 0);
  index.addFile('f0', repeated, st, 0);
  t.ok(index.has(id));
});
