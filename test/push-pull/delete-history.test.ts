// --delete (and --force, --update) in a synced folder keeps what a revision holds in the folder's history; elsewhere, rsync's plain removal.
import t from 'tap';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_CHUNKING } from '../../src/chunking/fastcdc.js';
import { historyKeeperFor, removeExtraneousKeeping } from '../../src/push-pull/delete-history.js';
import { manifestFromBytes } from '../../src/chunking/manifest.js';
import { Publisher } from '../../src/store/publisher.js';
import type { StagedFile } from '../../src/store/staged-file.js';
import { scanFolder } from '../../src/folder-sync/folder-scanner.js';
import { RevisionStore } from '../../src/store/revision-store.js';
import { historyBlobPath } from '../../src/store/sync-history.js';

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

t.test(
  'a synced folder: a file its log holds goes into history; one changed since its scan is just removed',
  async (t) => {
    const dir = await folder();
    const store = await RevisionStore.open(dir, { nodeId: NODE });
    await scanFolder(store, dir, { chunking: DEFAULT_CHUNKING });
    const recordedRoot = store.head('recorded.txt')?.revision.contentRoot;
    const changedRoot = store.head('changed.txt')?.revision.contentRoot;
    await store.close();
    await writeFile(join(dir, 'changed.txt'), 'edited after the scan');
    const removed = await removeExtraneousKeeping(
      dir,
      [
        { path: 'recorded.txt', kind: 'file' },
        { path: 'changed.txt', kind: 'file' },
      ],
      { nodeId: NODE },
    );
    t.same(
      removed.map((e) => e.path),
      ['recorded.txt', 'changed.txt'],
    );
    t.notOk(
      existsSync(join(dir, 'recorded.txt')) || existsSync(join(dir, 'changed.txt')),
      'both are gone from the folder',
    );
    t.equal(
      await readFile(historyBlobPath(dir, recordedRoot!), 'utf8'),
      'content of recorded.txt',
      'the recorded one is in history',
    );
    t.notOk(existsSync(historyBlobPath(dir, changedRoot!)), 'the changed one held content no revision has: not kept');
  },
);

t.test('a plain destination (no revision log) and no node id: removed, and no .clawpeer appears', async (t) => {
  const dir = await folder();
  t.same(
    (await removeExtraneousKeeping(dir, [{ path: 'recorded.txt', kind: 'file' }], { nodeId: NODE })).map((e) => e.path),
    ['recorded.txt'],
  );
  t.notOk(existsSync(join(dir, '.clawpeer')), 'not made a synced folder');
  t.same(
    (await removeExtraneousKeeping(dir, [{ path: 'changed.txt', kind: 'file' }], {})).map((e) => e.path),
    ['changed.txt'],
  );
});

t.test(
  'a synced folder: a file --force replaces stays in history when its log holds it (a copy; the file is replaced)',
  async (t) => {
    const dir = await folder();
    const store = await RevisionStore.open(dir, { nodeId: NODE });
    await scanFolder(store, dir, { chunking: DEFAULT_CHUNKING });
    const recordedRoot = store.head('recorded.txt')?.revision.contentRoot;
    await store.close();
    const keeper = await historyKeeperFor(dir, NODE);
    t.ok(keeper, 'a revision log: a keeper');
    t.teardown(() => keeper?.close());
    const pub = await Publisher.open({
      shareRoot: dir,
      chunking: DEFAULT_CHUNKING,
      force: true,
      ...(keeper === undefined ? {} : { keeper }),
    });
    const bytes = Buffer.from('pushed over it');
    const staged = (await pub.stageFile({
      relPath: 'recorded.txt',
      manifest: manifestFromBytes(bytes, DEFAULT_CHUNKING),
      mode: 0o644,
      mtimeMs: Date.now(),
    })) as StagedFile;
    await staged.writeChunk(0, bytes);
    await pub.commit([staged]);
    t.equal(await readFile(join(dir, 'recorded.txt'), 'utf8'), 'pushed over it');
    t.equal(
      await readFile(historyBlobPath(dir, recordedRoot!), 'utf8'),
      'content of recorded.txt',
      'the replaced content is in history',
    );
    t.equal(await historyKeeperFor(join(dir, '.clawpeer'), NODE), undefined, 'no revision log there: no keeper');
  },
);
