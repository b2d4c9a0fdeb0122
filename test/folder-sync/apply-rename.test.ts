// A file renamed on the peer (a deletion and an addition of the same content in one sync) lands
// by renaming our file to its new path: the same inode, no fetch, no copy into history (before,
// each new name was made from the chunks here and the old file moved into history: 20,000 files
// of 8 KiB took 54-80 s). The revisions recorded are the peer's, as with a fetch. A file saved
// here since the scan is not moved: it is kept aside and the new path fetched, as before.
import t, { type Test } from 'tap';
import { existsSync } from 'node:fs';
import { lstat, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { toHex } from '../../src/chunking/blake3.js';
import { DEFAULT_CHUNKING } from '../../src/chunking/fastcdc.js';
import { scanFolder } from '../../src/folder-sync/folder-scanner.js';
import { applyRemote } from '../../src/folder-sync/sync-apply.js';
import type { FetchRequest } from '../../src/folder-sync/sync-exchange.js';
import { silentLogger } from '../../src/logger.js';
import { RevisionStore } from '../../src/store/revision-store.js';
import { historyDir } from '../../src/store/sync-history.js';
import { revisionEntry, type RevisionEntry } from '../../src/sync/revision.js';
import { incrementVector, vectorFrom } from '../../src/sync/version-vector.js';

const ME = '12D3KooWCcccccccccccc';
const PEER = '12D3KooWBbbbbbbbbbbbb';
const SECOND_NS = 1_000_000_000n;

/** A folder with `a/f` and `a/g` scanned, and what the peer sends after `mv a b` there (g's mode changed too). */
async function setup(t: Test) {
  const folder = await mkdtemp(join(tmpdir(), 'clawpeer-rename-'));
  t.teardown(() => rm(folder, { recursive: true, force: true }));
  await mkdir(join(folder, 'a'));
  await writeFile(join(folder, 'a', 'f'), 'the content of f\n');
  await writeFile(join(folder, 'a', 'g'), 'the content of g\n');
  const store = await RevisionStore.open(folder, { nodeId: ME });
  t.teardown(() => store.close());
  // A scan long after the writes: the files are certified warm (none in the racy window).
  await scanFolder(store, folder, { chunking: DEFAULT_CHUNKING, nowNs: BigInt(Date.now() + 60_000) * 1_000_000n });
  const received: RevisionEntry[] = [];
  for (const p of ['a', 'a/f', 'a/g']) {
    const head = store.head(p);
    if (head === undefined) throw new Error(`the scan recorded no ${p}`);
    const r = head.revision;
    const vector = incrementVector(r.vector, PEER); // the peer saw ours
    const later = r.mtimeNs + SECOND_NS;
    received.push(
      revisionEntry({
        ...r,
        contentRoot: new Uint8Array(0),
        size: 0,
        deleted: true,
        origin: PEER,
        vector,
        mtimeNs: later,
      }),
      revisionEntry({
        ...r,
        path: `b${p.slice(1)}`,
        origin: PEER,
        vector: vectorFrom({ [PEER]: 1 }),
        ...(p === 'a/g' ? { mode: 0o600 } : {}),
      }),
    );
  }
  return { folder, store, received };
}

function apply(store: RevisionStore, folder: string, received: RevisionEntry[], asked: FetchRequest[]) {
  return applyRemote(received, {
    store,
    folder,
    keepConcurrentLocal: false,
    log: silentLogger,
    chunking: DEFAULT_CHUNKING,
    fetch: async (requests, beforePublish) => {
      asked.push(...requests);
      await beforePublish([]);
      return { delivered: [], chunksReceived: 0 };
    },
  });
}

t.test("a peer's rename moves our file to the new name: same inode, nothing fetched, the peer's heads", async (t) => {
  const { folder, store, received } = await setup(t);
  const before = await lstat(join(folder, 'a', 'f'), { bigint: true });
  const asked: FetchRequest[] = [];
  const result = await apply(store, folder, received, asked);
  t.same(
    asked.map((r) => r.destPath),
    [],
    'no content asked of the peer',
  );
  t.same(result.skipped, [], 'nothing left for the next sync');
  t.notOk(existsSync(join(folder, 'a')), 'the old directory is gone');
  const after = await lstat(join(folder, 'b', 'f'), { bigint: true });
  t.equal(after.ino, before.ino, 'b/f is our file, renamed');
  t.equal(await readFile(join(folder, 'b', 'g'), 'utf8'), 'the content of g\n');
  t.equal(Number((await lstat(join(folder, 'b', 'g'))).mode & 0o777), 0o600, "g took the head's mode");
  t.equal(after.mtimeNs / 1_000_000n, before.mtimeNs / 1_000_000n, 'the mtime to the ms');
  t.same(await readdir(historyDir(folder)).catch(() => []), [], 'nothing copied into history');
  for (const e of received)
    t.equal(toHex(store.head(e.revision.path)?.id ?? new Uint8Array()), toHex(e.id), `head of ${e.revision.path}`);
  // The next scan finds nothing new: the moved files were certified as the peer's revisions.
  const scanned = await scanFolder(store, folder, { chunking: DEFAULT_CHUNKING });
  t.same([scanned.added, scanned.changed, scanned.deleted], [0, 0, 0], 'the next scan records nothing');
  for (const e of received)
    t.equal(
      toHex(store.head(e.revision.path)?.id ?? new Uint8Array()),
      toHex(e.id),
      `still the head of ${e.revision.path}`,
    );
});

t.test('a file saved here since the scan is not moved: kept aside, the new name fetched', async (t) => {
  const { folder, store, received } = await setup(t);
  await writeFile(join(folder, 'a', 'f'), 'saved after the scan\n');
  const asked: FetchRequest[] = [];
  await apply(store, folder, received, asked);
  t.same(
    asked.map((r) => r.destPath),
    ['b/f'],
    'b/f asked of the peer (its content is no longer here)',
  );
  t.notOk(existsSync(join(folder, 'b', 'f')), 'nothing moved to b/f');
  const aside = (await readdir(join(folder, 'a'))).filter((n) => n.startsWith('f.sync-unsynced-'));
  t.equal(aside.length, 1, 'the save is kept beside its old name');
  t.equal(await readFile(join(folder, 'a', aside[0] ?? ''), 'utf8'), 'saved after the scan\n');
  t.equal(await readFile(join(folder, 'b', 'g'), 'utf8'), 'the content of g\n', 'g, unchanged, moved');
});
