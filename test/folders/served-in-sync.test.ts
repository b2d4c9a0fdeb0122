// A sync the peer ran here reads `in-sync` for this side's pair only when this side's own sync
// would: an entry here the scan cannot read (or name) never reached the peer, so a pair that
// sends is not in sync while it lasts. Before, the served sync looked at the two logs only: the
// peer's sync ended with them equal, and this side's pair, in `error` for that entry from its
// own syncs, read `in-sync` until its next own sync found the entry again.
import t from 'tap';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { syncFolder } from '../../src/folder-sync/sync-client.js';
import type { ServedSync } from '../../src/folder-sync/sync-service.js';
import { servedInSyncFor } from '../../src/folders/sync-outcome-text.js';
import { silentLogger } from '../../src/logger.js';
import { memoryListener, shareIn, tempDir } from '../listener/memory-listener.js';

const served: ServedSync[] = [];
const share = await shareIn('docs');
const l = await memoryListener([share], { onSyncServed: (_peer, s) => void served.push(s) });
t.teardown(() => l.stop());
const client = await tempDir('client');

/** The peer's two-way sync of the share; the listener's report of it. */
async function peerSyncs(): Promise<{ inSync: boolean; served: ServedSync | undefined }> {
  served.length = 0;
  const r = await syncFolder({
    session: l.session,
    dir: client,
    share: 'docs',
    mode: 'two-way',
    nodeId: l.clientId,
    log: silentLogger,
    signal: new AbortController().signal,
  });
  for (let i = 0; i < 1000 && served.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
  return { inSync: r.inSync, served: served[0] };
}

t.test('an entry here that cannot be synced: the peer is in sync, this side is not', async (t) => {
  await writeFile(path.join(share.dir, 'ok.txt'), 'ok\n');
  const bad = path.join(share.dir, 'bad\u0001name.txt'); // a control character: no path may have it
  await writeFile(bad, 'never sent\n');
  const first = await peerSyncs();
  t.equal(first.inSync, true, "the peer's own sync: in sync (it has all this side could send)");
  if (first.served === undefined) throw new Error('no served sync reported');
  t.match(first.served, { peerHasAll: true, hereHasAll: true, unreadable: 1 }, 'the logs are equal, one entry left');
  t.equal(servedInSyncFor('two-way', first.served), false, 'two-way here: not in sync');
  t.equal(servedInSyncFor('send-only', first.served), false, 'send-only here: not in sync');
  t.equal(servedInSyncFor('receive-only', first.served), true, 'receive-only here: nothing of it is sent');

  await rm(bad);
  const second = await peerSyncs();
  if (second.served === undefined) throw new Error('no served sync reported');
  t.equal(second.served.unreadable, 0, 'the entry gone');
  t.equal(servedInSyncFor('two-way', second.served), true, 'two-way here: in sync');
});

t.test('the logs: what each mode needs of them', async (t) => {
  const s = (peerHasAll: boolean, hereHasAll: boolean): ServedSync => ({
    share: 'docs',
    seconds: 0.1,
    wireBytes: 1000,
    received: 0,
    stored: 0,
    peerHasAll,
    hereHasAll,
    unreadable: 0,
    sent: 0,
    conflicts: 0,
    skipped: 0,
    changes: { added: 0, changed: 0, deleted: 0, paths: [] },
  });
  t.equal(servedInSyncFor('two-way', s(true, false)), false);
  t.equal(servedInSyncFor('two-way', s(false, true)), false);
  t.equal(servedInSyncFor('send-only', s(true, false)), true);
  t.equal(servedInSyncFor('receive-only', s(false, true)), true);
  t.equal(servedInSyncFor(undefined, s(true, true)), false, 'no mode with the peer (not one of its folders)');
});
