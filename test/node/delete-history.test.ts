// --delete in a synced folder keeps what a revision holds in the folder's history; elsewhere, rsync's plain removal.
import t from 'tap';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_CHUNKING } from '../../src/chunking/fastcdc.js';
import { removeExtraneousKeepingHistory } from '../../src/node/delete-history.js';
import { scanFolder } from '../../src/node/folder-scanner.js';
import { RevisionStore } from '../../src/node/revision-store.js';
import { historyBlobPath } from '../../src/node/sync-history.js';

const NODE = '12D3KooWFEGht6khjm71Yyzjmiwe8pr15zQe27wbjyz8JPbCTgwd';
const HOUR_AGO = new Date(Date.now() - 3600_000);

async function folder(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'clawpeer-delete-history-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  for (const name of ['recorded.txt', 'changed.txt']) {
    await writeFile(join(dir, name), `content of ${name}`);
    await utimes(join(dir, name), HOUR_AGO, HOUR_AGO); // not racy: certified warm by the scan
  }
  return dir;
}

t.test('a synced folder: a file its log holds goes into history; one changed since its scan is just removed', async (t) => {
  const dir = await folder();
  const store = await RevisionStore.open(dir, { nodeId: NODE });
  await scanFolder(store, dir, { chunking: DEFAULT_CHUNKING });
  const recordedRoot = store.head('recorded.txt')?.revision.contentRoot;
  const changedRoot = store.head('changed.txt')?.revision.contentRoot;
  await store.close();
  await writeFile(join(dir, 'changed.txt'), 'edited after the scan');
  const removed = await removeExtraneousKeepingHistory(dir, [{ path: 'recorded.txt', kind: 'file' }, { path: 'changed.txt', kind: 'file' }], NODE);
  t.same(removed.map((e) => e.path), ['recorded.txt', 'changed.txt']);
  t.notOk(existsSync(join(dir, 'recorded.txt')) || existsSync(join(dir, 'changed.txt')), 'both are gone from the folder');
  t.equal(await readFile(historyBlobPath(dir, recordedRoot!), 'utf8'), 'content of recorded.txt', 'the recorded one is in history');
  t.notOk(existsSync(historyBlobPath(dir, changedRoot!)), 'the changed one held content no revision has: not kept');
});

t.test('a plain destination (no revision log) and no node id: removed, and no .clawpeer appears', async (t) => {
  const dir = await folder();
  t.same((await removeExtraneousKeepingHistory(dir, [{ path: 'recorded.txt', kind: 'file' }], NODE)).map((e) => e.path), ['recorded.txt']);
  t.notOk(existsSync(join(dir, '.clawpeer')), 'not made a synced folder');
  t.same((await removeExtraneousKeepingHistory(dir, [{ path: 'changed.txt', kind: 'file' }], undefined)).map((e) => e.path), ['changed.txt']);
});
