// The refusal a shared folder answers a sync in the direction its mode does not take (a
// receive-only copy asked to give its changes, a send-only one to take the peer's) is expected:
// the peer's folder service learns the copy's mode from it and syncs narrowed at once. It ends
// the session quietly (no "peer session failed" warning: serveSession returns) and is no failed
// sync in `status`'s counts. Nor is a folder busy with another sync (both sides syncing it at
// once, as at every start: the peer retries shortly). A plain share's refusal stays an error of
// the session, counted.
import t from 'tap';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { syncFolder } from '../../src/folder-sync/sync-client.js';
import type { SyncModeName } from '../../src/protocol/messages.js';
import { silentLogger } from '../../src/logger.js';
import { ListenerActivity } from '../../src/session/listener-activity.js';
import { FolderLock } from '../../src/store/folder-lock.js';
import { memoryListener, shareIn, tempDir, type MemoryListener } from './memory-listener.js';

async function syncWith(l: MemoryListener, share: string, mode: SyncModeName): Promise<unknown> {
  const dir = await tempDir('client');
  await writeFile(path.join(dir, 'a.txt'), 'a\n');
  return syncFolder({
    session: l.session,
    dir,
    share,
    mode,
    nodeId: l.clientId,
    log: silentLogger,
    signal: new AbortController().signal,
  });
}

t.test("a receive-only folder's refusal of a two-way sync: quiet, not counted", async (t) => {
  const activity = new ListenerActivity();
  const docs = await shareIn('docs', { keptFolder: true, receiveOnly: true });
  const l = await memoryListener([docs], { activity });
  t.teardown(() => l.stop());
  await t.rejects(syncWith(l, 'docs', 'two-way'), { code: 'SHARE_FORBIDDEN', message: /receive-only here/ });
  await l.served;
  t.pass('the session ended without an error of its own');
  t.same(activity.totals().sync, { count: 0, failed: 0, bytes: 0 }, 'no sync counted, no failure');
  t.same(activity.snapshot(), [], 'nothing left running');
});

t.test("a send-only folder's refusal of a two-way sync: quiet, not counted", async (t) => {
  const activity = new ListenerActivity();
  const docs = await shareIn('docs', { keptFolder: true, readOnly: true });
  const l = await memoryListener([docs], { activity });
  t.teardown(() => l.stop());
  await t.rejects(syncWith(l, 'docs', 'two-way'), { code: 'SHARE_READ_ONLY' });
  await l.served;
  t.same(activity.totals().sync, { count: 0, failed: 0, bytes: 0 });
});

t.test("a plain read-only share's refusal stays a failed session, counted", async (t) => {
  const activity = new ListenerActivity();
  const pub = await shareIn('pub', { readOnly: true });
  const l = await memoryListener([pub], { activity });
  t.teardown(() => l.stop());
  await t.rejects(syncWith(l, 'pub', 'two-way'), { code: 'SHARE_READ_ONLY' });
  await t.rejects(l.served, { code: 'SHARE_READ_ONLY' }, 'serveSession ends with it (the server warns)');
  t.same(activity.totals().sync.failed, 1, 'a failed sync');
});

t.test('a sync refused because the folder is being synced: quiet, not counted', async (t) => {
  const activity = new ListenerActivity();
  const docs = await shareIn('docs', { keptFolder: true, syncLockWaitMs: 100 });
  const held = await FolderLock.acquire(docs.dir); // another sync of the folder runs here
  t.teardown(() => held.release());
  const l = await memoryListener([docs], { activity });
  t.teardown(() => l.stop());
  await t.rejects(syncWith(l, 'docs', 'two-way'), { code: 'PEER_BUSY' }, 'the client is told the peer is busy');
  await l.served;
  t.pass('the session ended without an error of its own');
  t.same(activity.totals().sync, { count: 0, failed: 0, bytes: 0 }, 'no sync counted, no failure');
});
