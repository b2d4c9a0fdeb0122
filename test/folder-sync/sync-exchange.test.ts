// folder-sync over the in-memory transport: the client (sync-client.ts) against the listener's
// dispatch and sync service, driving the reconcile and fetch exchange (sync-exchange.ts) and the
// applying of remote revisions (sync-apply.ts) on both sides. New files, edits and deletions
// travel both ways, a concurrent edit keeps both versions, the modes hold, a dry run plans only.
import t, { type Test } from 'tap';
import { mkdir, readdir, readFile, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { syncFolder, type SyncFolderOptions } from '../../src/folder-sync/sync-client.js';
import { silentLogger } from '../../src/logger.js';
import { isConflictPath } from '../../src/sync/conflict.js';
import type { ServedSync } from '../../src/folder-sync/sync-service.js';
import type { ServiceContext } from '../../src/listener/dispatch.js';
import { memoryListener, shareIn, tempDir, type MemoryListener } from '../listener/memory-listener.js';

/** The folder's files (relative paths) and their text, .clawpeer left out. */
async function contents(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (rel: string): Promise<void> => {
    for (const e of await readdir(path.join(dir, rel), { withFileTypes: true })) {
      if (e.name === '.clawpeer') continue;
      const p = rel === '' ? e.name : `${rel}/${e.name}`;
      if (e.isDirectory()) await walk(p);
      else out[p] = await readFile(path.join(dir, p), 'utf8');
    }
  };
  await walk('');
  return out;
}

/** A listener with the share 'docs', and a local folder to sync with it. */
async function pair(
  t: Test,
  extra: Partial<ServiceContext> = {},
): Promise<{
  l: MemoryListener;
  share: string;
  local: string;
  sync: (o?: Partial<SyncFolderOptions>) => ReturnType<typeof syncFolder>;
}> {
  const docs = await shareIn('docs');
  const l = await memoryListener([docs], extra);
  t.teardown(() => l.stop());
  const local = await tempDir('sync-local');
  // A session per sync, as sync-with-peer.ts dials one per run.
  const sync = async (o: Partial<SyncFolderOptions> = {}): ReturnType<typeof syncFolder> =>
    syncFolder({
      session: await l.connect(),
      dir: local,
      share: 'docs',
      mode: 'two-way',
      nodeId: l.clientId,
      log: silentLogger,
      signal: new AbortController().signal,
      ...o,
    });
  return { l, share: docs.dir, local, sync };
}

/** Writes a file, making its directory. */
async function write(file: string, text: string): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, text);
}

t.test('new files on either side reach the other; a second sync moves nothing', async (t) => {
  const { share, local, sync } = await pair(t);
  await write(path.join(local, 'mine.txt'), 'from the client');
  await write(path.join(share, 'sub', 'theirs.txt'), 'from the listener');
  const first = await sync();
  t.ok(first.inSync);
  t.equal(first.revisionsSent, 1, 'one revision sent');
  t.ok(first.revisionsReceived >= 1, "the listener's revisions received");
  const want = { 'mine.txt': 'from the client', 'sub/theirs.txt': 'from the listener' };
  t.same(await contents(local), want);
  t.same(await contents(share), want, 'both sides hold both files');
  const again = await sync();
  t.equal(again.revisionsSent + again.revisionsReceived, 0, 'nothing left to exchange');
  t.equal(again.roundTrips, 1, 'equal roots: one round trip');
  t.equal(again.chunksSent, 0);
});

t.test('an edit and a deletion travel, and so does a deletion back', async (t) => {
  const { share, local, sync } = await pair(t);
  await write(path.join(local, 'a.txt'), 'one');
  await write(path.join(local, 'b.txt'), 'bee');
  await sync();
  await write(path.join(local, 'a.txt'), 'two, longer');
  await rm(path.join(local, 'b.txt'));
  await sync();
  t.same(await contents(share), { 'a.txt': 'two, longer' }, 'the listener took the edit and the deletion');
  await rm(path.join(share, 'a.txt'));
  await sync();
  t.same(await contents(local), {}, 'a deletion on the listener reaches the client');
});

t.test('the same file edited on both sides: both versions are kept, and both sides agree', async (t) => {
  const { share, local, sync } = await pair(t);
  await write(path.join(local, 'notes.txt'), 'base');
  await sync();
  await write(path.join(local, 'notes.txt'), 'client edit');
  await write(path.join(share, 'notes.txt'), 'listener edit');
  const r = await sync();
  t.equal(r.conflicts, 1, 'one conflict');
  const here = await contents(local);
  const copies = Object.keys(here).filter((p) => isConflictPath(p));
  t.equal(copies.length, 1, 'one conflict copy');
  t.same(new Set(Object.values(here)), new Set(['client edit', 'listener edit']), 'neither edit lost');
  await sync(); // the listener learns the conflict copy
  t.same(await contents(share), here, 'the listener holds the same');
});

t.test('a conflict copy made by a sync is a file added there, on the losing side and the winning one', async (t) => {
  const served: ServedSync[] = [];
  const { share, local, sync } = await pair(t, { onSyncServed: (_peer, s) => served.push(s) });
  await write(path.join(local, 'notes.txt'), 'base');
  await sync();
  await write(path.join(local, 'notes.txt'), 'client edit');
  await write(path.join(share, 'notes.txt'), 'listener edit');
  // The later mtime wins (sync/conflict.ts): the listener's.
  await utimes(path.join(local, 'notes.txt'), new Date(2_000_000_000_000), new Date(2_000_000_000_000));
  await utimes(path.join(share, 'notes.txt'), new Date(2_000_000_060_000), new Date(2_000_000_060_000));
  served.length = 0;
  const r = await sync();
  // The listener reports its side once it has closed the folder, after the client heard SyncDone.
  for (let waited = 0; served.length === 0 && waited < 10_000; waited += 10)
    await new Promise((resolve) => setTimeout(resolve, 10));
  const copy = Object.keys(await contents(local)).find((p) => isConflictPath(p)) ?? '';
  t.equal(await readFile(path.join(local, copy), 'utf8'), 'client edit', "the client's edit lost: its copy is here");
  // Before, the losing side said "0 added, 1 changed" and the winning one "0 added": the copy
  // each made was counted nowhere (no revision the peer sent names its path).
  t.same(
    r.changes,
    {
      added: 1,
      changed: 1,
      deleted: 0,
      paths: [
        { path: copy, change: 'added' },
        { path: 'notes.txt', change: 'changed' },
      ],
    },
    'the losing side: the copy added, the path changed to the winner',
  );
  t.same(
    served.map((x) => x.changes),
    [{ added: 1, changed: 0, deleted: 0, paths: [{ path: copy, change: 'added' }] }],
    "the winning side: the loser's copy added, its own version kept",
  );
  t.equal(await readFile(path.join(share, copy), 'utf8'), 'client edit');
});

t.test('send-only sends but takes nothing; receive-only takes but sends nothing', async (t) => {
  const { share, local, sync } = await pair(t);
  await write(path.join(local, 'out.txt'), 'out');
  await write(path.join(share, 'in.txt'), 'in');
  const sent = await sync({ mode: 'send-only' });
  t.equal(sent.revisionsReceived, 0);
  t.same(await contents(local), { 'out.txt': 'out' }, 'nothing came in');
  t.same(await contents(share), { 'in.txt': 'in', 'out.txt': 'out' }, 'ours went out');
  await write(path.join(local, 'later.txt'), 'later');
  const received = await sync({ mode: 'receive-only' });
  t.equal(received.revisionsSent, 0);
  t.same(received.localOnly, ['later.txt'], 'the local-only path is named, not sent');
  t.equal(await readFile(path.join(local, 'in.txt'), 'utf8'), 'in', 'theirs came in');
  await t.rejects(stat(path.join(share, 'later.txt')), { code: 'ENOENT' });
});

t.test('an entry the scan cannot name is reported, and the sync is not in sync until it is renamed', async (t) => {
  const { share, local, sync } = await pair(t);
  await write(path.join(local, 'fine.txt'), 'fine');
  // A name in Latin-1 (0xff), not UTF-8: the scan cannot send it (rsync would exit 23).
  const latin1 = Buffer.concat([Buffer.from(`${local}/caf`), Buffer.from([0xff]), Buffer.from('.txt')]);
  await writeFile(latin1, 'latin-1 name');
  const first = await sync();
  t.equal(first.inSync, false, 'not in sync: one entry never reached the peer');
  t.same(
    first.unreadable.map((u) => u.path),
    ['caf\\#377.txt'],
    'the entry is named, its bad byte escaped',
  );
  t.match(first.unreadable[0]?.error, /not valid UTF-8/, 'and why');
  t.same(await contents(share), { 'fine.txt': 'fine' }, 'the rest went out');
  const receiving = await sync({ mode: 'receive-only' });
  t.equal(receiving.inSync, true, 'receive-only sends nothing: the entry does not hold it back');
  t.equal(receiving.unreadable.length, 1, 'but it is still named');
  await rename(latin1, path.join(local, 'café.txt'));
  const renamed = await sync();
  t.equal(renamed.inSync, true, 'renamed: in sync');
  t.same(renamed.unreadable, []);
  t.equal(await readFile(path.join(share, 'café.txt'), 'utf8'), 'latin-1 name', 'and it arrived');
});

t.test('a dry run plans both directions and changes nothing', async (t) => {
  const { share, local, sync } = await pair(t);
  await write(path.join(local, 'up.txt'), 'up');
  await write(path.join(share, 'down.txt'), 'down');
  const r = await sync({ dryRun: true });
  t.same(
    r.dryRun?.send.map((c) => c.path),
    ['up.txt'],
  );
  t.same(
    r.dryRun?.receive.map((c) => c.path),
    ['down.txt'],
  );
  t.same(await contents(local), { 'up.txt': 'up' }, 'nothing received');
  t.same(await contents(share), { 'down.txt': 'down' }, 'nothing sent');
});

t.test('two syncs on one session: the second fetches its content too (one router per session)', async (t) => {
  const { l, share, local } = await pair(t);
  const onSession = (): ReturnType<typeof syncFolder> =>
    syncFolder({
      session: l.session,
      dir: local,
      share: 'docs',
      mode: 'two-way',
      nodeId: l.clientId,
      log: silentLogger,
      signal: AbortSignal.timeout(20_000),
    });
  await write(path.join(share, 'a.txt'), 'first');
  t.equal((await onSession()).revisionsReceived, 1);
  await write(path.join(share, 'b.txt'), 'second');
  t.equal((await onSession()).revisionsReceived, 1);
  t.same(await contents(local), { 'a.txt': 'first', 'b.txt': 'second' });
});
