// A file saved after the sync's scan is not lost when the peer's revision replaces or deletes
// its path (issue 31, folder-mode convergence seeds 1002 and 1004: a user's write landed while a
// sync ran, and the peer's version overwrote it unseen). The apply step moves it aside first
// (f.sync-unsynced-<mtime>-<node>); a file unchanged since the scan is replaced as before.
import t from 'tap';
import { lstat, mkdir, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_CHUNKING } from '../../src/chunking/fastcdc.js';
import { scanFolder } from '../../src/folder-sync/folder-scanner.js';
import { applyRemote } from '../../src/folder-sync/sync-apply.js';
import { silentLogger } from '../../src/logger.js';
import { RevisionStore } from '../../src/store/revision-store.js';
import { revisionEntry, type RevisionEntry } from '../../src/sync/revision.js';
import { incrementVector, vectorFrom } from '../../src/sync/version-vector.js';

const ME = '12D3KooWCcccccccccccc';
const PEER = '12D3KooWBbbbbbbbbbbbb';

async function folderWith(body: string): Promise<{ folder: string; store: RevisionStore; head: RevisionEntry }> {
  const folder = await mkdtemp(join(tmpdir(), 'clawpeer-unscanned-'));
  await writeFile(join(folder, 'f'), body);
  const st = await lstat(join(folder, 'f'), { bigint: true });
  const store = await RevisionStore.open(folder, { nodeId: ME });
  t.teardown(() => store.close());
  // What a scan records: the file as it was then.
  const head = revisionEntry({
    path: 'f',
    kind: 'file',
    contentRoot: new Uint8Array(32).fill(1),
    size: body.length,
    mode: 0o644,
    mtimeNs: st.mtimeNs,
    deleted: false,
    origin: ME,
    vector: vectorFrom({ [ME]: 1 }),
    linkTarget: '',
  });
  store.write((w) => {
    w.put(head);
    w.setHead(head.id);
  });
  return { folder, store, head };
}

const deletion = (head: RevisionEntry): RevisionEntry =>
  revisionEntry({
    ...head.revision,
    contentRoot: new Uint8Array(0),
    size: 0,
    deleted: true,
    origin: PEER,
    vector: vectorFrom({ [ME]: 1, [PEER]: 1 }),
    mtimeNs: head.revision.mtimeNs + 1_000_000_000n,
  });

const apply = (store: RevisionStore, folder: string, received: RevisionEntry[]) =>
  applyRemote(received, {
    store,
    folder,
    keepConcurrentLocal: false,
    log: silentLogger,
    chunking: DEFAULT_CHUNKING,
    fetch: async (requests, beforePublish) => {
      await beforePublish([]);
      return { delivered: [], chunksReceived: requests.length * 0 };
    },
  });

t.test("a peer's deletion of a file saved since the scan keeps the save beside it (f.sync-unsynced-...)", async (t) => {
  const { folder, store, head } = await folderWith('as scanned\n');
  await new Promise((r) => setTimeout(r, 5));
  await writeFile(join(folder, 'f'), 'saved during the sync\n');
  await apply(store, folder, [deletion(head)]);
  const names = await readdir(folder);
  t.notOk(names.includes('f'), 'the path is deleted, as the peer said');
  const copies = names.filter((n) => n.startsWith('f.sync-unsynced-'));
  t.equal(copies.length, 1, `one copy of the save (${names.join(', ')})`);
  t.equal(await readFile(join(folder, copies[0] ?? ''), 'utf8'), 'saved during the sync\n', 'holding the save');
});

t.test('a file unchanged since the scan is deleted without a copy (into history)', async (t) => {
  const { folder, store, head } = await folderWith('as scanned\n');
  await apply(store, folder, [deletion(head)]);
  const names = (await readdir(folder)).filter((n) => n !== '.clawpeer');
  t.same(names, [], 'no copy: nothing changed since the scan');
});

t.test('a save while the content is fetched is kept too (checked again just before the delete)', async (t) => {
  const { folder, store, head } = await folderWith('as scanned\n');
  await applyRemote([deletion(head)], {
    store,
    folder,
    keepConcurrentLocal: false,
    log: silentLogger,
    chunking: DEFAULT_CHUNKING,
    fetch: async (_requests, beforePublish) => {
      await beforePublish([]);
      await new Promise((r) => setTimeout(r, 5));
      await writeFile(join(folder, 'f'), 'saved while fetching\n'); // after the first check
      return { delivered: [], chunksReceived: 0 };
    },
  });
  const copies = (await readdir(folder)).filter((n) => n.startsWith('f.sync-unsynced-'));
  t.equal(copies.length, 1);
  t.equal(await readFile(join(folder, copies[0] ?? ''), 'utf8'), 'saved while fetching\n');
});

t.test("a peer's rename of a directory keeps what was saved under it here since the scan", async (t) => {
  // The peer renamed d0 to d2: here that is the tombstones of d0/f and of d0 itself. Since our
  // scan, d0/f was saved again and d0/f3.txt written (issue 31, seed 1055's schedule).
  const folder = await mkdtemp(join(tmpdir(), 'clawpeer-unscanned-dir-'));
  await mkdir(join(folder, 'd0'));
  await writeFile(join(folder, 'd0', 'f'), 'as scanned\n');
  const store = await RevisionStore.open(folder, { nodeId: ME });
  t.teardown(() => store.close());
  await scanFolder(store, folder, { chunking: DEFAULT_CHUNKING });
  const dir = store.head('d0');
  const file = store.head('d0/f');
  if (dir === undefined || file === undefined) throw new Error('the scan recorded no d0 or d0/f');
  await new Promise((r) => setTimeout(r, 5));
  await writeFile(join(folder, 'd0', 'f'), 'saved again, longer\n');
  await writeFile(join(folder, 'd0', 'f3.txt'), 'written since the scan\n');
  // Tombstones that saw what this node's scan recorded.
  const seen = (e: RevisionEntry): RevisionEntry =>
    revisionEntry({ ...deletion(e).revision, vector: incrementVector(e.revision.vector, PEER) });
  await apply(store, folder, [seen(file), seen(dir)]);
  const names = (await readdir(join(folder, 'd0'))).sort();
  t.notOk(names.includes('f'), 'the peer deleted d0/f');
  const copy = names.find((n) => n.startsWith('f.sync-unsynced-'));
  t.equal(
    await readFile(join(folder, 'd0', copy ?? 'none'), 'utf8'),
    'saved again, longer\n',
    'the save kept beside it',
  );
  t.equal(await readFile(join(folder, 'd0', 'f3.txt'), 'utf8'), 'written since the scan\n', 'the new file stays');
});
