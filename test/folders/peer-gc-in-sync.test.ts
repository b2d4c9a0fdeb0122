// What one side's gc dropped is not missing for either side, whatever the sync's mode. Before,
// only the side that sent records told the peer what its gc dropped (SyncRevisions.pruned): a
// receiving side that sends none (the peer syncs send-only, or it syncs receive-only) never
// told, so the sending side's check found those revisions still lacking there at every sync.
// A send-only sync read `not in sync` for good (a folder service's pair: five quick reruns, then
// `error` with backoff), and the sender sent the dropped records again each time.
//
// L is the listener's share; the client's folder syncs with it in each mode. The last cases: gc
// dropped a revision that was still the peer's head (helper-62 left that edge untested).
import t, { type Test } from 'tap';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { DEFAULT_CHUNKING } from '../../src/chunking/fastcdc.js';
import { scanFolder } from '../../src/folder-sync/folder-scanner.js';
import { syncFolder, type SyncFolderResult } from '../../src/folder-sync/sync-client.js';
import type { ServedSync } from '../../src/folder-sync/sync-service.js';
import { silentLogger } from '../../src/logger.js';
import { FEATURES, type FeatureName } from '../../src/protocol/capabilities.js';
import type { SyncModeName } from '../../src/protocol/messages.js';
import { RevisionStore } from '../../src/store/revision-store.js';
import { memoryListener, shareIn, tempDir, type MemoryListener } from '../listener/memory-listener.js';

interface Pair {
  readonly l: MemoryListener;
  /** The listener's share directory and the client's folder. */
  readonly share: string;
  readonly client: string;
  readonly served: ServedSync[];
}

async function pair(t: Test, clientFeatures?: readonly FeatureName[]): Promise<Pair> {
  const served: ServedSync[] = [];
  const share = await shareIn('docs');
  const l = await memoryListener(
    [share],
    { onSyncServed: (_peer, s) => void served.push(s) },
    clientFeatures === undefined ? {} : { clientFeatures },
  );
  t.teardown(() => l.stop());
  return { l, share: share.dir, client: await tempDir('client'), served };
}

/** A sync, returned once the listener has reported its side too (told just after the client's sync ended). */
async function sync(p: Pair, mode: SyncModeName): Promise<SyncFolderResult> {
  const reports = p.served.length;
  const r = await syncFolder({
    session: p.l.session,
    dir: p.client,
    share: 'docs',
    mode,
    nodeId: p.l.clientId,
    log: silentLogger,
    signal: new AbortController().signal,
  });
  // Else its report could land after a test's `served.length = 0` and pass for the next sync's.
  for (let i = 0; i < 1000 && p.served.length === reports; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  return r;
}

/** The listener's report of the sync it served last (told just after the client's sync ended). */
async function lastServed(p: Pair): Promise<ServedSync | undefined> {
  for (let i = 0; i < 1000 && p.served.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  return p.served.at(-1);
}

/** Revisions of `rel` in `dir`'s log, and gc keeping the last one of each path. */
async function withStore<T>(dir: string, nodeId: string, f: (s: RevisionStore) => T | Promise<T>): Promise<T> {
  const store = await RevisionStore.open(dir, { nodeId });
  try {
    return await f(store);
  } finally {
    await store.close();
  }
}
const revisions = (dir: string, nodeId: string): Promise<number> =>
  withStore(dir, nodeId, (s) => s.history('f.txt').length);
const gc = (dir: string, nodeId: string): Promise<number> => withStore(dir, nodeId, (s) => s.gc(1).removedRevisions);

/** Three versions of f.txt written on `writer` and synced in `mode` after each. */
async function threeVersions(t: Test, p: Pair, writer: string, mode: SyncModeName): Promise<void> {
  for (const v of ['v1', 'v22', 'v333']) {
    await writeFile(path.join(writer, 'f.txt'), `${v}\n`);
    t.equal((await sync(p, mode)).inSync, true, `${v} synced`);
  }
}

const cases: { mode: SyncModeName; gcOn: 'listener' | 'client' }[] = [
  { mode: 'send-only', gcOn: 'listener' },
  { mode: 'send-only', gcOn: 'client' },
  { mode: 'receive-only', gcOn: 'client' },
  { mode: 'receive-only', gcOn: 'listener' },
  { mode: 'two-way', gcOn: 'listener' },
  { mode: 'two-way', gcOn: 'client' },
];

for (const { mode, gcOn } of cases)
  t.test(`${mode} sync, gc on the ${gcOn}: in sync on both sides, and the pair converges`, async (t) => {
    const p = await pair(t);
    const writer = mode === 'receive-only' ? p.share : p.client;
    await threeVersions(t, p, writer, mode);
    const ids = { share: p.l.listenerId, client: p.l.clientId };
    const [gcDir, gcId, otherDir, otherId] =
      gcOn === 'listener' ? [p.share, ids.share, p.client, ids.client] : [p.client, ids.client, p.share, ids.share];
    t.equal(await revisions(otherDir, otherId), 3, 'the other side holds three revisions');
    t.equal(await gc(gcDir, gcId), 2, 'gc drops two');

    p.served.length = 0;
    const after = await sync(p, mode);
    t.equal(after.inSync, true, 'the sync after gc: in sync');
    t.same(after.peerSkipped ?? [], [], 'nothing left as is by the peer');
    t.match(await lastServed(p), { peerHasAll: true, hereHasAll: true }, 'the listener: in sync too');
    t.equal(await revisions(gcDir, gcId), 1, 'what gc dropped stays dropped');
    t.equal(await revisions(otherDir, otherId), 1, 'the peer dropped them too');
    t.match(
      await sync(p, mode),
      { inSync: true, roundTrips: 1, revisionsSent: 0, revisionsReceived: 0 },
      'then the logs are equal',
    );

    await writeFile(path.join(writer, 'f.txt'), 'v4444\n');
    t.equal((await sync(p, mode)).inSync, true, 'a later edit: in sync');
    const reader = writer === p.share ? p.client : p.share;
    t.equal(await readFile(path.join(reader, 'f.txt'), 'utf8'), 'v4444\n', 'and it reached the peer');
  });

// An older peer (sync-pruned, not sync-pruned-always) is never told: it keeps the revisions and
// offers them at every sync, but the side that declines them says they are not missing.
t.test('send-only sync from an older client, gc on the listener: in sync, the client keeps them', async (t) => {
  const p = await pair(
    t,
    FEATURES.filter((f) => f !== 'sync-pruned-always'),
  );
  await threeVersions(t, p, p.client, 'send-only');
  t.equal(await gc(p.share, p.l.listenerId), 2, 'gc drops two');
  for (const time of ['first', 'second']) {
    p.served.length = 0;
    t.match(await sync(p, 'send-only'), { inSync: true, revisionsSent: 2 }, `${time} sync: in sync, two offered`);
    t.match(await lastServed(p), { peerHasAll: true, hereHasAll: true, stored: 0 }, 'and declined');
  }
  t.equal(await revisions(p.client, p.l.clientId), 3, 'the older client keeps them');
  t.equal(await revisions(p.share, p.l.listenerId), 1, 'the listener stays pruned');
});

// gc dropped a revision that is still the peer's head (it never had the newer ones): the sync
// that brings the newer head must leave both sides in sync, the old head dropped there too.
const headCases: { mode: SyncModeName; gcOn: 'listener' | 'client' }[] = [
  { mode: 'send-only', gcOn: 'client' },
  { mode: 'receive-only', gcOn: 'listener' },
  { mode: 'two-way', gcOn: 'client' },
  { mode: 'two-way', gcOn: 'listener' },
];
for (const { mode, gcOn } of headCases)
  t.test(`${mode} sync, gc on the ${gcOn} dropped the peer's head: in sync after one sync`, async (t) => {
    const p = await pair(t);
    const writer = gcOn === 'listener' ? p.share : p.client;
    const reader = writer === p.share ? p.client : p.share;
    const [gcId, readerId] = gcOn === 'listener' ? [p.l.listenerId, p.l.clientId] : [p.l.clientId, p.l.listenerId];
    await writeFile(path.join(writer, 'f.txt'), 'v1\n');
    t.equal((await sync(p, mode)).inSync, true, 'v1 synced');
    // v22 and v333 recorded here by scans, no sync: the peer's head stays v1
    for (const v of ['v22', 'v333']) {
      await writeFile(path.join(writer, 'f.txt'), `${v}\n`);
      await withStore(writer, gcId, (s) => scanFolder(s, writer, { chunking: DEFAULT_CHUNKING }));
    }
    t.equal(await revisions(writer, gcId), 3, 'three revisions here');
    t.equal(await gc(writer, gcId), 2, "gc drops two, one of them the peer's head");
    p.served.length = 0;
    const after = await sync(p, mode);
    t.equal(after.inSync, true, 'the sync after gc: in sync');
    t.match(await lastServed(p), { peerHasAll: true, hereHasAll: true }, 'the listener: in sync too');
    t.equal(await readFile(path.join(reader, 'f.txt'), 'utf8'), 'v333\n', 'the peer has the new head');
    t.equal(await revisions(reader, readerId), 1, 'and dropped the old one');
    t.match(await sync(p, mode), { inSync: true, roundTrips: 1 }, 'then the logs are equal');
  });
