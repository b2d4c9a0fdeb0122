// A sync's serving side checks a file it serves by the stat its folder scan hashed it with (or
// its own hashing's), not by hashing every chunk again, where that stat vouches for the bytes:
// outside the racy window, at the file's own path. A file rewritten in place with the same size
// after the scan is still caught as the reader sends it, found ahead (fetch-prelocate.ts) or as
// serveFetch locates it; one changed before it is located is not offered at all.
import t from 'tap';
import type { Test } from 'tap';
import { closeSync, openSync, utimesSync, writeSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { DEFAULT_CHUNKING } from '../../src/chunking/fastcdc.js';
import { manifestFromBytes } from '../../src/chunking/manifest.js';
import { ChunkReader } from '../../src/exchange/chunk-reader.js';
import type { SourceFile } from '../../src/exchange/transfer-source.js';
import { PrelocatedFiles } from '../../src/folder-sync/fetch-prelocate.js';
import { locate, servableFiles } from '../../src/folder-sync/sync-exchange.js';
import { openSyncedFolder, type SyncedFolder } from '../../src/folder-sync/synced-folder.js';
import { silentLogger } from '../../src/logger.js';
import { isRacy, msToNs } from '../../src/store/file-key.js';
import { RevisionStore } from '../../src/store/revision-store.js';
import { scanFolder } from '../../src/folder-sync/folder-scanner.js';

const HOUR_AGO_S = Date.now() / 1000 - 3600;
const CONTENT = randomBytes(3 * 1024 * 1024); // a few chunks

/** A folder holding `f.bin` (last modified an hour ago unless `fresh`), opened as a sync's serving side opens it. */
async function servingFolder(t: Test, fresh = false): Promise<{ folder: string; synced: SyncedFolder }> {
  const base = await mkdtemp(join(tmpdir(), 'clawpeer-serve-keyed-'));
  t.teardown(() => rm(base, { recursive: true, force: true }));
  const folder = join(base, 'folder');
  await mkdir(folder);
  await writeFile(join(folder, 'f.bin'), CONTENT);
  if (!fresh) utimesSync(join(folder, 'f.bin'), HOUR_AGO_S, HOUR_AGO_S);
  const synced = await openSyncedFolder(folder, {
    nodeId: '12D3KooWServeKeyed',
    chunking: DEFAULT_CHUNKING,
    lockWaitMs: 1_000,
    log: silentLogger,
    cacheManifests: true,
  });
  t.teardown(() => synced.close());
  return { folder, synced };
}

/** Overwrites one byte in place, in the middle of the file: same size and inode, a new mtime. */
function rewriteInPlace(file: string): void {
  const fd = openSync(file, 'r+');
  writeSync(fd, Uint8Array.of(CONTENT[CONTENT.length >> 1]! ^ 0xff), 0, 1, CONTENT.length >> 1);
  closeSync(fd);
}

/** Reads every chunk of `f` as serveFetch's sender does (its key passed along). */
async function sendAll(t: Test, f: SourceFile): Promise<void> {
  const reader = new ChunkReader();
  t.teardown(() => reader.close());
  for (const c of f.manifest.chunks) await reader.read(f.localPath, c.offset, c.length, c.id, undefined, f);
}

const root = manifestFromBytes(CONTENT, DEFAULT_CHUNKING).root;

t.test('a file the scan hashed is served by its key; rewritten after, it is caught', async (t) => {
  const { folder, synced } = await servingFolder(t);
  const may = servableFiles(folder, synced.store);
  const found = await locate(folder, 'f.bin', root, DEFAULT_CHUNKING, () => new Map(), synced.manifests, may);
  t.ok(found?.key !== undefined && found.hashedAtNs !== undefined, 'the scan key and when hashing began come along');
  await t.resolves(sendAll(t, found!), 'unchanged: every chunk is sent');
  rewriteInPlace(join(folder, 'f.bin'));
  await t.rejects(sendAll(t, found!), { code: 'IO', message: /changed while being sent/ }, 'rewritten: caught');
  t.equal(
    await locate(folder, 'f.bin', root, DEFAULT_CHUNKING, () => new Map(), synced.manifests, may),
    undefined,
    'rewritten before it is located: not offered',
  );
});

t.test('found ahead of the fetch, then rewritten in place: caught as it is sent', async (t) => {
  const { folder, synced } = await servingFolder(t);
  const pre = PrelocatedFiles.start([{ path: 'f.bin', root }], {
    folder,
    cache: synced.manifests,
    ...servableFiles(folder, synced.store),
  });
  await pre.ended();
  rewriteInPlace(join(folder, 'f.bin'));
  const found = pre.take('f.bin', root);
  t.ok(found?.key !== undefined, 'found by the scan key');
  await t.rejects(sendAll(t, found!), { code: 'IO', message: /changed while being sent/ });
});

t.test('a file hashed when located (not in the scan cache) is keyed too, and caught', async (t) => {
  const { folder, synced } = await servingFolder(t);
  const may = servableFiles(folder, synced.store);
  const found = await locate(folder, 'f.bin', root, DEFAULT_CHUNKING, () => new Map(), undefined, may);
  t.ok(found?.key !== undefined && found.hashedAtNs !== undefined, 'keyed by its own hashing');
  rewriteInPlace(join(folder, 'f.bin'));
  await t.rejects(sendAll(t, found!), { code: 'IO', message: /changed while being sent/ });
});

t.test('inside the racy window, the key does not vouch: every chunk is hashed', async (t) => {
  const { folder, synced } = await servingFolder(t, true); // written just now
  const may = servableFiles(folder, synced.store);
  const found = await locate(folder, 'f.bin', root, DEFAULT_CHUNKING, () => new Map(), synced.manifests, may);
  t.ok(found?.key !== undefined && isRacy(found.key.mtimeNs, found.hashedAtNs!), 'keyed, but racy');
  await t.resolves(sendAll(t, found!), 'unchanged: sent');
  const reader = new ChunkReader();
  t.teardown(() => reader.close());
  const c = found!.manifest.chunks[0]!;
  await t.rejects(
    reader.read(found!.localPath, c.offset, c.length, new Uint8Array(32), undefined, found),
    { code: 'IO', message: /changed while being sent/ },
    'bytes that are not the id are caught: the chunk was hashed',
  );
});

t.test('a file only touched since the scan is still served (its bytes decide)', async (t) => {
  const { folder, synced } = await servingFolder(t);
  const may = servableFiles(folder, synced.store);
  const found = await locate(folder, 'f.bin', root, DEFAULT_CHUNKING, () => new Map(), synced.manifests, may);
  utimesSync(join(folder, 'f.bin'), new Date(), new Date());
  await t.resolves(sendAll(t, found!));
});

t.test('the scan tells when it began on the real clock, never a later (skewed) one', async (t) => {
  const base = await mkdtemp(join(tmpdir(), 'clawpeer-serve-keyed-'));
  t.teardown(() => rm(base, { recursive: true, force: true }));
  await writeFile(join(base, 'a.txt'), 'alpha\n');
  const store = await RevisionStore.open(base, { nodeId: '12D3KooWServeKeyed' });
  t.teardown(() => store.close());
  const told: bigint[] = [];
  const before = msToNs(Date.now());
  await scanFolder(store, base, {
    chunking: DEFAULT_CHUNKING,
    nowNs: msToNs(Date.now() + 3_600_000), // an hour ahead
    onHashed: (_rel, _m, _stat, hashedAtNs) => told.push(hashedAtNs),
  });
  t.equal(told.length, 1, 'told of the file hashed');
  t.ok(told[0]! >= before && told[0]! <= msToNs(Date.now()), 'when the scan began, by the real clock');
});
