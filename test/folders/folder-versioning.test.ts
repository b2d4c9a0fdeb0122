// afterFolderSync, the listener's versioning after a sync: a store object's first run walks every
// path (what was stored before it opened is in no touched set), later runs only the paths that
// gained revisions, and a policy by age walks every path again hourly.
import t from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { blake3 } from '../../src/chunking/blake3.js';
import { ResidentFolders } from '../../src/folder-sync/synced-folder.js';
import { afterFolderSync, FULL_VERSIONING_EVERY_MS } from '../../src/folders/folder-versioning.js';
import type { FolderConfig } from '../../src/home/folders-config.js';
import { silentLogger } from '../../src/logger.js';
import { RevisionStore, type RevisionDraft } from '../../src/store/revision-store.js';
import type { VersioningPolicy } from '../../src/sync/versioning.js';

const NODE = 'local-node';

function fileDraft(path: string, n: number): RevisionDraft {
  const contentRoot = blake3(Buffer.from(`content ${n}`));
  return { path, kind: 'file', contentRoot, size: n, mode: 0o644, mtimeNs: BigInt(n), deleted: false, linkTarget: '' };
}

t.test('first run walks all, later ones the touched paths, a policy by age all again hourly', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'clawpeer-versioning-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  // a and b with four revisions each, stored by another store object (a CLI sync, say).
  const before = await RevisionStore.open(dir, { nodeId: NODE });
  for (let i = 0; i < 4; i++) before.write((w) => ['a', 'b'].map((p, k) => w.recordLocal(fileDraft(p, 10 * k + i))));
  await before.close();

  const resident = new ResidentFolders({ log: silentLogger });
  t.teardown(() => resident.close());
  const hook = afterFolderSync({ resident, nodeId: NODE });
  const folder = { id: 'docs', path: dir } as FolderConfig;
  const run = (policy: VersioningPolicy, nowMs: number): Promise<void> =>
    hook({ folder, policy, peer: 'peer', by: 'peer', received: 1, nowMs });
  const store = await resident.stores.acquire(dir, NODE);
  const lengths = (): number[] => ['a', 'b'].map((p) => store.history(p).length);

  const start = 30 * 86_400_000; // a month after the revisions' mtimes (near 1970)
  await run({ kind: 'keep-last', count: 3 }, start);
  t.same(lengths(), [3, 3], 'first run: every path, though this object touched none');
  store.write((w) => w.recordLocal(fileDraft('a', 5)));
  await run({ kind: 'keep-last', count: 1 }, start + 1);
  t.same(lengths(), [1, 3], 'then only the path that gained a revision');
  const trashcan = { kind: 'trashcan', days: 1 } as const;
  await run(trashcan, start + FULL_VERSIONING_EVERY_MS - 1);
  t.same(lengths(), [1, 3], 'within the hour: no walk of every path');
  await run(trashcan, start + FULL_VERSIONING_EVERY_MS);
  t.same(lengths(), [1, 1], 'an hour after the last walk of every path: another');
  await run({ kind: 'keep-last', count: 1 }, start + 3 * FULL_VERSIONING_EVERY_MS);
  t.same(store.checkInvariants(), []);
});
