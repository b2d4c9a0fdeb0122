// folders/folder-revert.ts without a network: its refusals, and a revert whose new heads need no
// peer's bytes (local additions, a file only touched here): the log's root is the one before the
// local changes, the disk holds the old versions, and the local ones are kept aside.
import t from 'tap';
import { mkdir, mkdtemp, readFile, readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { lstatSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { silentLogger } from '../../src/logger.js';
import { defaultFolderChunking } from '../../src/folder-sync/folder-history.js';
import { openSyncedFolder, ResidentFolders } from '../../src/folder-sync/synced-folder.js';
import { revertFolder, type RevertFolderOptions } from '../../src/folders/folder-revert.js';
import { LocalChangeReports } from '../../src/folders/local-changes.js';
import type { ActiveFolder, FolderServiceOptions } from '../../src/folders/folder-service-types.js';
import type { FolderConfig } from '../../src/home/folders-config.js';
import { warmStatOf } from '../../src/store/revlog-format.js';

const NODE = 'local-node';
const PEER = 'peer-node';
const OLD = new Date('2020-01-02T03:04:05.678Z');

const dir = await mkdtemp(path.join(tmpdir(), 'clawpeer-revert-'));
const resident = new ResidentFolders({ log: silentLogger });
t.teardown(async () => {
  await resident.close();
  await rm(dir, { recursive: true, force: true });
});

const config: FolderConfig = {
  id: 'docs',
  path: dir,
  with: ['peer'],
  mode: 'receive-only',
  versioning: 'keep-last:10',
  paused: false,
  intervalS: 60,
};
const active = (c: Partial<FolderConfig> = {}): ActiveFolder => ({
  config: { ...config, ...c },
  peerIds: [PEER],
  problem: undefined,
  stop: () => undefined,
  pending: () => false,
});
const peers = { list: async () => [{ id: PEER, name: 'bob' }] };
const service = { identity: { nodeId: NODE }, log: silentLogger, resident, peers } as unknown as FolderServiceOptions;
const reports = new LocalChangeReports();
const options = (o: Partial<RevertFolderOptions> = {}): RevertFolderOptions => ({
  service,
  folderId: 'docs',
  active: active(),
  reports,
  dryRun: false,
  signal: new AbortController().signal,
  ...o,
});

/** Opens the folder as a sync does (its lock, a scan) and hands its store to `fn`. */
async function withFolder<T>(fn: (f: Awaited<ReturnType<typeof openSyncedFolder>>) => T): Promise<T> {
  const f = await openSyncedFolder(dir, {
    nodeId: NODE,
    chunking: defaultFolderChunking(),
    lockWaitMs: 1_000,
    log: silentLogger,
    resident,
  });
  try {
    return fn(f);
  } finally {
    await f.close();
  }
}

t.test('refusals: a folder not run here, not receive-only, or a peer not synced yet', async (t) => {
  await t.rejects(revertFolder(options({ active: undefined })), { code: 'USAGE', message: /no folder "docs" runs/ });
  await t.rejects(revertFolder(options({ active: active({ mode: 'two-way' }) })), {
    code: 'USAGE',
    message: /folder docs is two-way: revert takes back the local changes of a receive-only folder/,
  });
  await t.rejects(revertFolder(options()), {
    code: 'UNREACHABLE',
    message: `folder docs has not synced with peer bob (${PEER}) since the listener started`,
  });
});

t.test('local additions and a touch are taken back without a peer', async (t) => {
  await writeFile(path.join(dir, 'base.txt'), 'base\n');
  await utimes(path.join(dir, 'base.txt'), OLD, OLD);
  // What the peer has: everything the first scan recorded (its counter), nothing it lacks.
  const before = await withFolder((f) => ({
    root: Buffer.from(f.store.root()).toString('hex'),
    counter: f.store.localCounter(),
  }));
  reports.record('docs', PEER, { localOnly: [], lacking: { ids: [], localCounter: before.counter } });

  await writeFile(path.join(dir, 'added.txt'), 'added here\n');
  await mkdir(path.join(dir, 'sub'));
  await writeFile(path.join(dir, 'sub', 'y.txt'), 'y\n');
  const touched = new Date('2021-06-07T08:09:10.000Z');
  await utimes(path.join(dir, 'base.txt'), touched, touched);

  const plan = await revertFolder(options({ dryRun: true }));
  t.same(
    plan.paths.map((p) => [p.path, p.local, p.peers]),
    [
      ['added.txt', 'file', 'none'],
      ['base.txt', 'file', 'file'],
      ['sub', 'dir', 'none'],
      ['sub/y.txt', 'file', 'none'],
    ],
    'the dry run lists the additions and the touched file',
  );
  t.equal(plan.withdrawn, 4);
  t.equal(plan.keptIn, undefined);
  t.equal((await stat(path.join(dir, 'base.txt'))).mtime.getTime(), touched.getTime(), 'the dry run changed nothing');

  const report = await revertFolder(options());
  t.equal(report.withdrawn, 4);
  const keptIn = report.keptIn ?? '';
  t.ok(keptIn.startsWith(path.join(dir, '.clawpeer', 'reverted')), 'the local versions are kept aside');
  t.equal(await readFile(path.join(keptIn, 'added.txt'), 'utf8'), 'added here\n');
  t.equal(await readFile(path.join(keptIn, 'sub', 'y.txt'), 'utf8'), 'y\n');
  t.equal(
    (await stat(path.join(keptIn, 'base.txt'))).mtime.getTime(),
    touched.getTime(),
    'the touched file, as it was',
  );
  t.same((await readdir(dir)).sort(), ['.clawpeer', 'base.txt'], 'the additions are gone from the folder');
  t.equal(await readFile(path.join(dir, 'base.txt'), 'utf8'), 'base\n');
  t.equal((await stat(path.join(dir, 'base.txt'))).mtime.getTime(), OLD.getTime(), 'the old mtime is back');
  t.same(
    (await readdir(path.join(dir, '.clawpeer'))).filter((n) => n.startsWith('revert-incoming-')),
    [],
    'the staging directory is removed',
  );

  // The log is the one before the local changes; a scan now records nothing.
  await withFolder((f) => {
    t.same(f.store.checkInvariants(), []);
    t.equal(Buffer.from(f.store.root()).toString('hex'), before.root, "the root is the peers' again");
    t.ok(f.store.isWarm('base.txt', warmStatOf(lstatSync(path.join(dir, 'base.txt'), { bigint: true }))));
    t.equal(f.store.localCounter(), before.counter + 4, 'no counter is reused');
  });
  const again = await revertFolder(options());
  t.equal(again.withdrawn, 0, 'nothing left to revert');
});

t.test('a revert that fails after the withdrawal leaves the next scan to record the disk', async (t) => {
  const watcher = resident.watchers.forFolder(dir);
  await writeFile(path.join(dir, 'late.txt'), 'late\n');
  await new Promise((resolve) => setTimeout(resolve, 200)); // its events in
  await watcher.whenIdle();
  const counter = await withFolder((f) => {
    t.ok(f.store.head('late.txt'), 'the scan records the local addition');
    return f.store.localCounter();
  });
  reports.record('docs', PEER, { localOnly: [], lacking: { ids: [], localCounter: counter - 1 } });
  t.ok(watcher.canSkipScan(), 'the watcher vouches for the folder: a sync would skip its scan');

  // The local versions cannot be kept aside (a file where .clawpeer/reverted goes): the revert
  // fails after it withdrew late.txt's revision, with the file still in the folder.
  await rm(path.join(dir, '.clawpeer', 'reverted'), { recursive: true, force: true }); // the last test's
  await writeFile(path.join(dir, '.clawpeer', 'reverted'), 'in the way\n');
  await t.rejects(revertFolder(options()));
  t.equal(await readFile(path.join(dir, 'late.txt'), 'utf8'), 'late\n', 'the file is still there');

  await withFolder((f) => {
    t.ok(f.scan !== undefined, 'the next sync scans the folder');
    t.equal(f.store.head('late.txt')?.revision.deleted, false, 'and records the file on disk again');
    t.same(f.store.checkInvariants(), []);
  });
  await rm(path.join(dir, '.clawpeer', 'reverted'));
});

t.test('a peer that removed or paused the folder there does not hold the revert back', async (t) => {
  const GONE = 'gone-node';
  const PAUSED = 'paused-node';
  const three = { ...active(), peerIds: [PEER, GONE, PAUSED] };
  const named = {
    ...service,
    peers: {
      list: async () => [
        { id: PEER, name: 'bob' },
        { id: GONE, name: 'carol' },
        { id: PAUSED, name: 'dave' },
      ],
    },
  } as unknown as FolderServiceOptions;
  const own = new LocalChangeReports();
  const opts = (o: Partial<RevertFolderOptions> = {}): RevertFolderOptions =>
    options({ service: named, active: three, reports: own, dryRun: true, ...o });
  const counter = await withFolder((f) => f.store.localCounter());
  await writeFile(path.join(dir, 'mine.txt'), 'made here\n');

  // carol's listener refuses the folder as unknown (she removed it), dave's as paused; bob never synced.
  own.refused('docs', GONE, 'removed');
  own.refused('docs', PAUSED, 'paused');
  await t.rejects(revertFolder(opts()), {
    code: 'UNREACHABLE',
    message: `folder docs has not synced with peer bob (${PEER}) since the listener started`,
  });

  // Before, carol and dave held it back for good: each had to sync first, and neither ever would.
  own.record('docs', PEER, { localOnly: [], lacking: { ids: [], localCounter: counter } });
  const plan = await revertFolder(opts());
  t.same(
    plan.paths.map((p) => [p.path, p.local, p.peers]),
    [['mine.txt', 'file', 'none']],
    "bob's last sync alone says what the peers lack",
  );

  // No peer that has the folder: said so, naming why each is left out.
  const none = { ...active(), peerIds: [GONE, PAUSED] };
  await t.rejects(revertFolder(opts({ active: none })), {
    code: 'UNREACHABLE',
    message:
      /folder docs has no peer to take the versions from: carol \(gone-node\) refused it as unknown [^;]*; dave \(paused-node\) has paused it; the revert needs a peer that has the folder/,
  });

  // carol adds the folder again and syncs it here: the revert waits for this node's sync of it.
  own.present('docs', GONE);
  await t.rejects(revertFolder(opts()), { code: 'UNREACHABLE', message: /has not synced with peer carol/ });
  // bob pauses it: what he lacked at his last sync no longer counts, nor is he asked for bytes.
  own.record('docs', GONE, { localOnly: [], lacking: { ids: [], localCounter: counter } });
  own.refused('docs', PEER, 'paused');
  t.equal(own.lacking('docs', PEER), undefined);
  t.equal((await revertFolder(opts())).paths.length, 1, "carol's sync stands in for bob's");
  await rm(path.join(dir, 'mine.txt'));
});
