// A send-only copy learns which paths its peers changed and it does not take (Syncthing's "Out of
// Sync Items", folders/peer-changes.ts), whichever side runs the sync (feature sync-peer-heads):
// the peer's heads it lacks arrive as metadata, stored nowhere. Before, a send-only sync moved
// no record toward the send-only side, so it never knew.
//
// A's copy is send-only (its share read-only), B's two-way: A syncs send-only to B's share, and
// B syncs receive-only from A's (as their folder services do once A refused a two-way sync).
import t from 'tap';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { generateIdentity } from '../../src/crypto/identity.js';
import { syncFolder, type SyncFolderResult } from '../../src/folder-sync/sync-client.js';
import type { ServedSync } from '../../src/folder-sync/sync-service.js';
import { ResidentFolders } from '../../src/folder-sync/synced-folder.js';
import { isUntaken, PeerChangeReports } from '../../src/folders/peer-changes.js';
import type { Revision } from '../../src/sync/revision.js';
import { overrideFolder } from '../../src/folders/folder-override.js';
import type { ActiveFolder, FolderServiceOptions } from '../../src/folders/folder-service-types.js';
import { silentLogger } from '../../src/logger.js';
import { FEATURES } from '../../src/protocol/capabilities.js';
import type { SyncModeName } from '../../src/protocol/messages.js';
import { memoryListener, shareIn, type MemoryListener } from '../listener/memory-listener.js';

const A = generateIdentity().nodeId;
const B = generateIdentity().nodeId;
const served: ServedSync[] = [];
const onSyncServed = (_peer: string, s: ServedSync): void => void served.push(s);

const onB = await shareIn('docs', { keptFolder: true });
const onA = await shareIn('docs', { keptFolder: true, readOnly: true });
const residentA = new ResidentFolders({ log: silentLogger });
const toB = await memoryListener([onB], { nodeId: B });
const toA = await memoryListener([onA], { nodeId: A, onSyncServed, resident: residentA });
const older = FEATURES.filter((f) => f !== 'sync-peer-heads');
const toBOlder = await memoryListener([onB], { nodeId: B }, { clientFeatures: older });
t.teardown(async () => {
  await toB.stop();
  await toA.stop();
  await toBOlder.stop();
  await residentA.close();
});

const sync = (l: MemoryListener, dir: string, nodeId: string, mode: SyncModeName): Promise<SyncFolderResult> =>
  syncFolder({
    session: l.session,
    dir,
    share: 'docs',
    mode,
    nodeId,
    log: silentLogger,
    signal: new AbortController().signal,
    peerHeads: true,
    ...(nodeId === A ? { resident: residentA } : {}),
  });
async function lastServed(): Promise<ServedSync | undefined> {
  for (let i = 0; i < 1000 && served.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  return served[0];
}
const fromA = (): Promise<SyncFolderResult> => sync(toB, onA.dir, A, 'send-only');
const fromB = async (): Promise<ServedSync | undefined> => {
  served.length = 0;
  await sync(toA, onB.dir, B, 'receive-only');
  return lastServed();
};
const reports = new PeerChangeReports();
const active = (mode: 'send-only' | 'two-way' = 'send-only'): ActiveFolder => ({
  config: { id: 'docs', path: onA.dir, with: ['b'], mode, versioning: 'keep-last:10', paused: false, intervalS: 60 },
  peerIds: [B],
  problem: undefined,
  stop: () => undefined,
  pending: () => false,
});
const service = { identity: { nodeId: A }, log: silentLogger, resident: residentA } as unknown as FolderServiceOptions;
const override = (dryRun: boolean, mode?: 'two-way') =>
  overrideFolder({
    service,
    folderId: 'docs',
    active: active(mode),
    reports,
    dryRun,
    signal: new AbortController().signal,
  });
const pathsOf = (heads: readonly { revision: { path: string } }[] | undefined): string[] | undefined =>
  heads?.map((e) => e.revision.path).sort();

t.test("B's edit and deletion: A learns them, whichever side syncs, and takes neither", async (t) => {
  await writeFile(path.join(onA.dir, 'one.txt'), 'from A\n');
  await writeFile(path.join(onA.dir, 'gone.txt'), 'to be deleted on B\n');
  await writeFile(path.join(onA.dir, 'same.txt'), 'unchanged\n');
  const first = await fromA();
  t.equal(first.inSync, true);
  t.same(first.peerHeads, [], 'nothing changed on B yet');
  t.equal(await readFile(path.join(onB.dir, 'one.txt'), 'utf8'), 'from A\n');

  await writeFile(path.join(onB.dir, 'one.txt'), 'edited on B\n');
  await rm(path.join(onB.dir, 'gone.txt'));

  const a = await fromA();
  t.same(pathsOf(a.peerHeads), ['gone.txt', 'one.txt'], "A's sync learns B's heads it lacks");
  t.equal(a.revisionsReceived, 0, 'as metadata: nothing received');
  t.equal(a.inSync, true, 'A (send-only) is in sync: B has all it sends');
  t.equal(await readFile(path.join(onA.dir, 'one.txt'), 'utf8'), 'from A\n', "A's file is as it was");
  t.equal(await readFile(path.join(onA.dir, 'gone.txt'), 'utf8'), 'to be deleted on B\n');

  const s = await fromB();
  t.same(pathsOf(s?.peerHeads), ['gone.txt', 'one.txt'], "B's sync here tells A the same");
  t.equal(s?.received, 0);

  reports.record('docs', B, a.peerHeads ?? []);
  const store = residentA.stores.peek(onA.dir);
  t.same(reports.of('docs', [B], store), { peerChanges: 2, peerChangePaths: ['gone.txt', 'one.txt'] });
  t.same(reports.of('docs', ['someone-else'], store).peerChanges, 0, "another peer's report is its own");
});

t.test("override: A's versions win on B again, a dry run changes nothing", async (t) => {
  await t.rejects(override(false, 'two-way'), { code: 'USAGE', message: /folder docs is two-way/ });
  const rootBefore = Buffer.from(residentA.stores.peek(onA.dir)?.root() ?? []).toString('hex');
  const plan = await override(true);
  t.same(plan.paths, [
    { path: 'gone.txt', here: 'file' },
    { path: 'one.txt', here: 'file' },
  ]);
  t.equal(
    Buffer.from(residentA.stores.peek(onA.dir)?.root() ?? []).toString('hex'),
    rootBefore,
    'the dry run recorded nothing',
  );
  t.equal(reports.of('docs', [B], residentA.stores.peek(onA.dir)).peerChanges, 2, 'and both paths still count');
  const a = await fromA();
  t.equal(
    await readFile(path.join(onB.dir, 'one.txt'), 'utf8'),
    'edited on B\n',
    'nor did the sync after it move anything',
  );
  reports.record('docs', B, a.peerHeads ?? []);

  const done = await override(false);
  t.equal(done.paths.length, 2);
  t.equal(reports.of('docs', [B], residentA.stores.peek(onA.dir)).peerChanges, 0, 'overridden: none counts');
  const after = await fromA();
  t.equal(after.inSync, true);
  t.equal(await readFile(path.join(onB.dir, 'one.txt'), 'utf8'), 'from A\n', "B has A's content again");
  t.equal(await readFile(path.join(onB.dir, 'gone.txt'), 'utf8'), 'to be deleted on B\n', "B's deletion is undone");
  // B told its heads as they were before it applied A's revisions: counted against A's heads, none is untaken.
  reports.record('docs', B, after.peerHeads ?? []);
  t.same(reports.of('docs', [B], residentA.stores.peek(onA.dir)), { peerChanges: 0, peerChangePaths: [] });
  t.equal((await override(false)).paths.length, 0, 'nothing left to override');
});

t.test('an older peer is not asked, and says nothing', async (t) => {
  const r = await sync(toBOlder, onA.dir, A, 'send-only');
  t.equal(r.peerHeads, undefined);
  t.equal(r.inSync, true);
});

t.test('isUntaken: which peer heads count', (t) => {
  const rev = (o: Partial<Revision>): Revision => ({
    path: 'p',
    kind: 'file',
    contentRoot: new Uint8Array(32).fill(1),
    size: 1,
    mode: 0o644,
    mtimeNs: 1n,
    deleted: false,
    origin: A,
    vector: new Map([[A, 1]]),
    linkTarget: '',
    ...o,
  });
  const other = new Uint8Array(32).fill(2);
  const tomb = { deleted: true, contentRoot: new Uint8Array(0), size: 0 };
  const ours = rev({});
  t.equal(
    isUntaken(
      rev({
        vector: new Map([
          [A, 1],
          [B, 1],
        ]),
        contentRoot: other,
      }),
      ours,
    ),
    true,
    'newer: counts',
  );
  t.equal(isUntaken(rev({ vector: new Map([[B, 1]]), contentRoot: other }), ours), true, 'concurrent: counts');
  t.equal(
    isUntaken(
      rev({
        vector: new Map([
          [A, 1],
          [B, 1],
        ]),
        ...tomb,
      }),
      ours,
    ),
    true,
    'a newer deletion counts',
  );
  t.equal(isUntaken(rev({ vector: new Map([[B, 1]]) }), ours), false, 'the same bytes do not');
  t.equal(isUntaken(rev({ vector: new Map([[B, 1]]), ...tomb }), rev(tomb)), false, 'nor two deletions');
  t.equal(isUntaken(rev({ contentRoot: other }), rev({ vector: new Map([[A, 2]]) })), false, 'nor an older version');
  t.equal(isUntaken(rev({ vector: new Map([[B, 1]]) }), undefined), true, 'a path only the peer has counts');
  t.equal(isUntaken(rev({ vector: new Map([[B, 1]]), ...tomb }), undefined), false, 'its deletion does not');
  t.end();
});
