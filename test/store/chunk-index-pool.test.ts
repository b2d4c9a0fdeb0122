import t from 'tap';
import type { Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { lstat, mkdir, mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ChunkingParams } from '../../src/chunking/fastcdc.js';
import { manifestFromBytes } from '../../src/chunking/manifest.js';
import { ChunkIndex } from '../../src/store/chunk-index.js';
import { ChunkIndexPool } from '../../src/store/chunk-index-pool.js';
import { PartialStore } from '../../src/store/partial-store.js';
import { leavePartialChunk } from './partial-fixture.js';
import { silentLogger } from '../../src/logger.js';

const PARAMS: ChunkingParams = { minBytes: 64, avgBytes: 256, maxBytes: 1024, normalization: 2 };
const PAST_S = Date.now() / 1000 - 86_400;

async function share(t: Test): Promise<{ dir: string; partials: PartialStore }> {
  const dir = await mkdtemp(join(tmpdir(), 'clawpeer-pool-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await writeFile(join(dir, 'a.bin'), randomBytes(3000));
  await utimes(join(dir, 'a.bin'), PAST_S, PAST_S);
  return { dir, partials: await PartialStore.open(dir) };
}

async function exists(file: string): Promise<boolean> {
  return lstat(file).then(
    () => true,
    () => false,
  );
}

t.test('one index per share stays in memory; the share is rescanned at most every interval', async (t) => {
  const { dir, partials } = await share(t);
  const pool = new ChunkIndexPool({ log: silentLogger, saveDelayMs: 60_000, rescanIntervalMs: 60_000 });
  t.teardown(() => pool.close());
  const first = await pool.acquire(dir, PARAMS, partials);
  t.equal(first.fileCount, 1, 'the first transfer rescans');
  const added = randomBytes(2000);
  await writeFile(join(dir, 'b.bin'), added);
  const second = await pool.acquire(dir, PARAMS, partials);
  t.equal(second, first, 'the same in-memory index');
  t.notOk(second.has(manifestFromBytes(added, PARAMS).chunks[0]!.id), 'within the interval the share is not rescanned');

  // An interrupted transfer's chunks count at once: a rerun resumes from them.
  const { chunk: c } = await leavePartialChunk(partials, 'incoming.bin', randomBytes(3000), PARAMS, 1);
  t.equal(
    (await pool.acquire(dir, PARAMS, partials)).lookup(c.id)?.source,
    'partial',
    'the partial store is re-read for every transfer',
  );

  const other = await pool.acquire(dir, { ...PARAMS, avgBytes: 512 }, partials);
  t.not(other, first, 'other chunking parameters get their own index');
  const [x, y] = await Promise.all([pool.acquire(dir, PARAMS, partials), pool.acquire(dir, PARAMS, partials)]);
  t.equal(x, y, 'concurrent transfers share it');

  const eager = new ChunkIndexPool({ log: silentLogger, saveDelayMs: 60_000, rescanIntervalMs: 0 });
  t.teardown(() => eager.close());
  await eager.acquire(dir, PARAMS, partials);
  const more = randomBytes(2000);
  await writeFile(join(dir, 'c.bin'), more);
  t.ok(
    (await eager.acquire(dir, PARAMS, partials)).has(manifestFromBytes(more, PARAMS).chunks[0]!.id),
    'after the interval a file added between transfers is found',
  );
});

t.test('changes are saved after a quiet period and on close, never on the transfer path', async (t) => {
  const { dir, partials } = await share(t);
  const pool = new ChunkIndexPool({ log: silentLogger, saveDelayMs: 50, rescanIntervalMs: 0 });
  const index = await pool.acquire(dir, PARAMS, partials);
  t.equal(index.dirty, true, 'the first refresh hashed a.bin');
  t.equal(await exists(index.indexPath), false, 'acquire does not save');
  pool.release(index);
  t.equal(await exists(index.indexPath), false, 'release does not save at once');
  await sleep(300);
  t.equal(await exists(index.indexPath), true, 'saved after the delay');
  t.equal(index.dirty, false);
  const reloaded = await ChunkIndex.open({ shareRoot: dir, chunking: PARAMS });
  t.equal((await reloaded.refresh()).hashed, 0, 'a new process starts warm from the saved cache');

  await writeFile(join(dir, 'c.bin'), randomBytes(1000));
  await pool.acquire(dir, PARAMS, partials);
  pool.release(index);
  await pool.close();
  const afterClose = await ChunkIndex.open({ shareRoot: dir, chunking: PARAMS });
  t.equal(afterClose.fileCount, 2, 'close saved the pending change at once');
  await t.rejects(pool.acquire(dir, PARAMS, partials), /closed/, 'a closed pool hands out nothing');
});

t.test('a share that cannot be opened is retried by the next transfer', async (t) => {
  const pool = new ChunkIndexPool({ log: silentLogger });
  t.teardown(() => pool.close());
  const { dir, partials } = await share(t);
  const later = join(dir, 'later');
  await t.rejects(pool.acquire(later, PARAMS, partials), { code: 'IO' }, 'the share directory is missing');
  await mkdir(later);
  await writeFile(join(later, 'x.bin'), randomBytes(500));
  const index = await pool.acquire(later, PARAMS, partials);
  t.equal(index.fileCount, 1, 'opened once it exists: the failure was not cached');
});
