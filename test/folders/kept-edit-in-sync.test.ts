// A receive-only copy that keeps its own edit of a path the peer changed too leaves the peer's
// revision out on purpose: the sync is in sync for both sides, whichever runs it. Before, the
// receive-only side's check found the peer's revision missing (not in sync: "1 path left as is
// here"), and the other side's found it lacking there ("left as is by the peer"): the pair was
// in `error` for good on both, retried with backoff, each retry sending the revision again.
//
// C's copy is receive-only (a folder share); A syncs send-only to it (as A's folder service
// does once C refused a two-way sync), and C syncs receive-only from A's share.
import t from 'tap';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { generateIdentity } from '../../src/crypto/identity.js';
import { syncFolder, type SyncFolderResult } from '../../src/folder-sync/sync-client.js';
import type { ServedSync } from '../../src/folder-sync/sync-service.js';
import { silentLogger } from '../../src/logger.js';
import type { SyncModeName } from '../../src/protocol/messages.js';
import { memoryListener, shareIn, type MemoryListener } from '../listener/memory-listener.js';

const A = generateIdentity().nodeId;
const C = generateIdentity().nodeId;
const served: ServedSync[] = [];
const onSyncServed = (_peer: string, s: ServedSync): void => void served.push(s);

// C's copy served to A, and A's folder served to C (the same directories, one node id each).
const onC = await shareIn('docs', { keptFolder: true, receiveOnly: true });
const onA = await shareIn('docs', { keptFolder: true });
const toC = await memoryListener([onC], { nodeId: C, onSyncServed });
const toA = await memoryListener([onA], { nodeId: A, onSyncServed });
t.teardown(async () => {
  await toC.stop();
  await toA.stop();
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
  });
/** The listener's report of the sync it served last (told just after the client's sync ended). */
async function lastServed(): Promise<ServedSync | undefined> {
  for (let i = 0; i < 1000 && served.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  return served[0];
}
const fromA = (): Promise<SyncFolderResult> => sync(toC, onA.dir, A, 'send-only');
const fromC = (): Promise<SyncFolderResult> => sync(toA, onC.dir, C, 'receive-only');

t.test('a kept edit: in sync for both sides, whichever runs the sync', async (t) => {
  await writeFile(path.join(onA.dir, 'one.txt'), 'first\n');
  t.equal((await fromA()).inSync, true, 'the first version reaches C');
  t.equal(await readFile(path.join(onC.dir, 'one.txt'), 'utf8'), 'first\n');

  await writeFile(path.join(onC.dir, 'one.txt'), 'edited on C, longer\n');
  await writeFile(path.join(onA.dir, 'one.txt'), 'second, on A, longer still\n');

  served.length = 0;
  const a = await fromA();
  t.same(a.peerSkipped, [], 'A: nothing left as is by C but what C keeps on purpose');
  t.equal(a.inSync, true, 'A (send-only): in sync');
  t.equal((await lastServed())?.hereHasAll, true, 'C, served: it has all it takes');
  t.equal(await readFile(path.join(onC.dir, 'one.txt'), 'utf8'), 'edited on C, longer\n', "C's edit stays");

  served.length = 0;
  const c = await fromC();
  t.same(c.skipped, ['one.txt'], "C still reports A's version left as is (the folder log shows it)");
  t.same(c.localOnly, ['one.txt'], 'and its edit as a local change');
  t.equal(c.inSync, true, 'C (receive-only): in sync');
  t.equal((await lastServed())?.peerHasAll, true, 'A, served: C has all it takes');

  // Another path still moves, and a path left as is for a real cause is still not in sync.
  await writeFile(path.join(onA.dir, 'two.txt'), 'two\n');
  t.equal((await fromA()).inSync, true, 'a new file from A: in sync');
  t.equal(await readFile(path.join(onC.dir, 'two.txt'), 'utf8'), 'two\n');
});
