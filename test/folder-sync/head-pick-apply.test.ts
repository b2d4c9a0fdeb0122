// Applying a peer's revisions decides a path's head over all its revisions, stored and received
// (issue 31, seed 1009): a node that held edit H as head, concurrent edit C as H's conflict copy,
// and then received the deletion T that had seen H, deleted the file, while nodes that met the
// revisions in another order kept C. The head is now a function of the set: T, since C, kept
// as a conflict copy already, no longer competes for the path (it lives on at the copy's path:
// seeds 3153, 10097, 20042 found nodes asking each other forever for a loser that came back
// after its copy was deleted). A node that never made C's copy picks C until the copy's
// revision reaches it, then T, as every other node.
import t, { type Test } from 'tap';
import { mkdir, mkdtemp, readFile, readdir, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_CHUNKING } from '../../src/chunking/fastcdc.js';
import { applyRemote, conflictCopyRevision, plannedChanges } from '../../src/folder-sync/sync-apply.js';
import { silentLogger } from '../../src/logger.js';
import { RevisionStore } from '../../src/store/revision-store.js';
import { conflictPath } from '../../src/sync/conflict.js';
import { revisionEntry } from '../../src/sync/revision.js';
import type { RevisionEntry } from '../../src/sync/revision.js';
import { vectorFrom } from '../../src/sync/version-vector.js';
import type { VersionVector } from '../../src/sync/version-vector.js';

const N0 = '12D3KooWAaaaaaaaaaaaa';
const N1 = '12D3KooWBbbbbbbbbbbbb';
const ME = '12D3KooWCcccccccccccc';
const T0 = 1_700_000_000_000_000_000n;
const PATH = 'd1/f1';

function rev(origin: string, vector: VersionVector, mtimeNs: bigint, body: string | undefined): RevisionEntry {
  const deleted = body === undefined;
  return revisionEntry({
    path: PATH,
    kind: 'file',
    contentRoot: deleted ? new Uint8Array(0) : new Uint8Array(32).fill(body.charCodeAt(0)),
    size: body?.length ?? 0,
    mode: 0o644,
    mtimeNs,
    deleted,
    origin,
    vector,
    linkTarget: '',
  });
}

const H = rev(N0, vectorFrom({ [N0]: 2 }), T0 + 2_000_000_000n, 'H wrote this\n');
const T = rev(N0, vectorFrom({ [N0]: 3 }), T0 + 3_000_000_000n, undefined);
const C = rev(N1, vectorFrom({ [N0]: 1, [N1]: 1 }), T0 + 1_000_000_000n, 'C wrote this\n');
const COPY = conflictPath(PATH, C.revision.mtimeNs, C.revision.origin);

/** The folder as a scan left it: H at PATH, C's copy beside it (files with their revisions' mtimes). */
async function headAndCopy(t: Test): Promise<{ folder: string; store: RevisionStore }> {
  const folder = await mkdtemp(join(tmpdir(), 'clawpeer-headpick-'));
  await mkdir(join(folder, 'd1'));
  await writeFile(join(folder, PATH), 'H wrote this\n');
  await writeFile(join(folder, COPY), 'C wrote this\n');
  const seconds = (ns: bigint): number => Number(ns / 1_000_000_000n);
  await utimes(join(folder, PATH), seconds(H.revision.mtimeNs), seconds(H.revision.mtimeNs));
  await utimes(join(folder, COPY), seconds(C.revision.mtimeNs), seconds(C.revision.mtimeNs));
  const store = await RevisionStore.open(folder, { nodeId: ME });
  t.teardown(() => store.close());
  const copy = conflictCopyRevision(C.revision, COPY);
  store.write((w) => {
    for (const e of [H, C, copy]) w.put(e);
    w.setHead(H.id); // H beat C on mtime when they met here
    w.setHead(copy.id);
  });
  return { folder, store };
}

t.test('a deletion that saw the head deletes the path; the loser lives on as its copy', async (t) => {
  const { folder, store } = await headAndCopy(t);

  const o = { store, keepConcurrentLocal: false, log: silentLogger };
  t.same(
    plannedChanges([T], o),
    { changes: [{ path: PATH, change: 'delete', kind: 'file', bytes: 0 }], skipped: [] },
    'the path is deleted, nothing fetched',
  );
  const result = await applyRemote([T], {
    ...o,
    folder,
    chunking: DEFAULT_CHUNKING,
    fetch: async (requests, beforePublish) => {
      t.same(requests, [], 'nothing to fetch from the peer');
      await beforePublish([]);
      return { delivered: [], chunksReceived: 0 };
    },
  });
  t.match(result, { applied: 1, skipped: [] });
  t.equal(Buffer.from(store.head(PATH)?.id ?? []).toString('hex'), Buffer.from(T.id).toString('hex'), 'T is the head');
  t.equal(
    await readFile(join(folder, COPY), 'utf8'),
    'C wrote this\n',
    'the copy made earlier stays (it travels as a revision of its own)',
  );
  t.same(await readdir(join(folder, 'd1')), [COPY.slice('d1/'.length)], 'the path is gone');
});

t.test('a node that never made the copy picks C, then T once the copy reaches it', async (t) => {
  const folder = await mkdtemp(join(tmpdir(), 'clawpeer-headpick-'));
  const store = await RevisionStore.open(folder, { nodeId: ME });
  t.teardown(() => store.close());
  store.write((w) => {
    w.put(H);
    w.put(T);
    w.setHead(T.id);
  });
  const o = { store, keepConcurrentLocal: false, log: silentLogger };
  t.same(plannedChanges([C], o).changes, [{ path: PATH, change: 'create', kind: 'file', bytes: 13 }], 'C alone: C');
  const copy = conflictCopyRevision(C.revision, COPY);
  t.same(
    plannedChanges([C, copy], o).changes,
    [{ path: PATH, change: 'conflict', kind: 'file', bytes: 13, copy: COPY }],
    'C and its copy: the path stays deleted (T), C lands at the copy only',
  );
});

/**
 * Applies `received` where no content needs fetching (everything comes from this node's own
 * files); `delivering`: as if the peer delivered whatever is asked for (nothing is written).
 */
function applyNeedingNoContent(
  received: RevisionEntry[],
  folder: string,
  store: RevisionStore,
  delivering = false,
): ReturnType<typeof applyRemote> {
  return applyRemote(received, {
    store,
    keepConcurrentLocal: false,
    log: silentLogger,
    folder,
    chunking: DEFAULT_CHUNKING,
    fetch: async (requests, beforePublish) => {
      const delivered = delivering ? [...requests] : [];
      await beforePublish(delivered);
      return { delivered, chunksReceived: 0 };
    },
  });
}

t.test('a save of the head since the scan is kept beside it when the deletion lands', async (t) => {
  const { folder, store } = await headAndCopy(t);
  await writeFile(join(folder, PATH), 'saved here after the scan\n');
  await applyNeedingNoContent([T], folder, store);
  const names = await readdir(join(folder, 'd1'));
  t.notOk(names.includes('f1'), 'the path is deleted');
  const aside = names.filter((n) => n.startsWith('f1.sync-unsynced-'));
  t.equal(aside.length, 1, 'the save is moved aside before the deletion');
  t.equal(await readFile(join(folder, 'd1', aside[0] ?? 'none'), 'utf8'), 'saved here after the scan\n');
});

t.test('a copy whose source was edited since the scan is not made under the old revision (seed 1056)', async (t) => {
  const { folder, store } = await headAndCopy(t);
  // X, concurrent with H and later, beats it: H's bytes at the path are to be copied aside.
  const X = rev(N1, vectorFrom({ [N1]: 2 }), T0 + 5_000_000_000n, 'X wrote this\n');
  // Edited in place, same size: the bytes H's copy revision names are gone from this node.
  await writeFile(join(folder, PATH), 'H wrote THIS\n');
  await t.rejects(
    applyNeedingNoContent([X], folder, store, true), // X's bytes as good as here: the copy is due now
    { code: 'FOLDER_BUSY' },
    'the sync stops, to be retried after a scan',
  );
  t.equal(await readFile(join(folder, PATH), 'utf8'), 'H wrote THIS\n', 'the path is as it was');
  t.equal(Buffer.from(store.head(PATH)?.id ?? []).toString('hex'), Buffer.from(H.id).toString('hex'), 'and its head');
});
