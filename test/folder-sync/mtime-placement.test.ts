// A peer's mtime lands in the same millisecond, and so the same second, on this node. Rounding a
// revision's ns mtime to the nearest ms put X.9996 s at X+1 s: a fresh-clone run found keep.txt a
// second apart on the two sides of a sync (e2e/sync, dry run case).
import t from 'tap';
import { mkdtemp, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_CHUNKING } from '../../src/chunking/fastcdc.js';
import { applyRemote } from '../../src/folder-sync/sync-apply.js';
import { silentLogger } from '../../src/logger.js';
import { RevisionStore } from '../../src/store/revision-store.js';
import { revisionEntry, type RevisionEntry } from '../../src/sync/revision.js';
import { vectorFrom } from '../../src/sync/version-vector.js';

const PEER = '12D3KooWAaaaaaaaaaaaa';
const ME = '12D3KooWCcccccccccccc';
const SECOND = 1_700_000_000n;
/** 999.6 ms into the second: the nearest ms is the next second. */
const LATE_IN_SECOND = SECOND * 1_000_000_000n + 999_600_000n;
const WANT_MS = Number(SECOND) * 1000 + 999;

function rev(path: string, origin: string, counter: number, mtimeNs: bigint, root: number): RevisionEntry {
  return revisionEntry({
    path,
    kind: 'file',
    contentRoot: new Uint8Array(32).fill(root),
    size: 4,
    mode: 0o644,
    mtimeNs,
    deleted: false,
    origin,
    vector: vectorFrom({ [origin]: counter }),
    linkTarget: '',
  });
}

t.test('a fetched file is asked for at the ms its mtime lies in, not the nearest', async (t) => {
  const folder = await mkdtemp(join(tmpdir(), 'clawpeer-mtime-'));
  const store = await RevisionStore.open(folder, { nodeId: ME });
  t.teardown(() => store.close());
  const asked: number[] = [];
  await applyRemote([rev('new.txt', PEER, 1, LATE_IN_SECOND, 7)], {
    store,
    keepConcurrentLocal: false,
    log: silentLogger,
    folder,
    chunking: DEFAULT_CHUNKING,
    fetch: async (requests) => {
      for (const r of requests) asked.push(r.mtimeMs ?? -1);
      return { delivered: [], chunksReceived: 0 };
    },
  });
  t.same(asked, [WANT_MS]);
});

t.test("equal bytes under the peer's head take its mtime in the same ms and second", async (t) => {
  const folder = await mkdtemp(join(tmpdir(), 'clawpeer-mtime-'));
  await writeFile(join(folder, 'same.txt'), 'same');
  const store = await RevisionStore.open(folder, { nodeId: ME });
  t.teardown(() => store.close());
  const mine = rev('same.txt', ME, 1, (SECOND - 60n) * 1_000_000_000n, 9);
  store.write((w) => {
    w.put(mine);
    w.setHead(mine.id);
  });
  // Concurrent, the same bytes, later: the peer's metadata wins and only the time changes here.
  const theirs = rev('same.txt', PEER, 1, LATE_IN_SECOND, 9);
  const result = await applyRemote([theirs], {
    store,
    keepConcurrentLocal: false,
    log: silentLogger,
    folder,
    chunking: DEFAULT_CHUNKING,
    fetch: async (requests, beforePublish) => {
      t.same(requests, [], 'nothing to fetch: the bytes are here');
      await beforePublish([]);
      return { delivered: [], chunksReceived: 0 };
    },
  });
  t.match(result, { applied: 1 });
  const st = await stat(join(folder, 'same.txt'), { bigint: true });
  t.equal(Number(st.mtimeNs / 1_000_000n), WANT_MS, 'the same millisecond');
  t.equal(st.mtimeNs / 1_000_000_000n, SECOND, 'the same second');
});
