// A refused sync tells the listener (onSyncServeFailed, which keeps folder offers) whether a
// peer's folder service ran it: the request's byFolderService mark, sent only when the session
// has feature 'by-folder-service'. A person's `clawpeer sync` is unmarked, so no offer; a peer
// without the feature cannot say, and counts as a folder service (as before it).
import t from 'tap';
import { syncFolder } from '../../src/folder-sync/sync-client.js';
import { silentLogger } from '../../src/logger.js';
import { DEFAULT_CAPABILITIES } from '../../src/protocol/capabilities.js';
import { memoryListener, shareIn, tempDir } from './memory-listener.js';

async function refusedSync(byFolderService: boolean, older = false): Promise<boolean | undefined> {
  const told: boolean[] = [];
  const l = await memoryListener(
    [await shareIn('docs')],
    { onSyncServeFailed: (_peer, _share, _err, byService) => told.push(byService) },
    older
      ? {
          clientFeatures: DEFAULT_CAPABILITIES.features.filter((f) => f !== 'by-folder-service'),
        }
      : {},
  );
  try {
    await syncFolder({
      session: l.session,
      dir: await tempDir('offer-mark'),
      share: 'photos', // not a share there: refused SHARE_UNKNOWN
      mode: 'two-way',
      nodeId: l.clientId,
      log: silentLogger,
      signal: new AbortController().signal,
      byFolderService,
    }).then(
      () => Promise.reject(new Error('the sync of an unknown share was not refused')),
      (err: unknown) => t.match(err, { code: 'SHARE_UNKNOWN' }),
    );
    return told[0];
  } finally {
    await l.stop();
  }
}

t.test("a folder service's sync says so; a person's does not", async (t) => {
  t.equal(await refusedSync(true), true, "the folder service's: an offer");
  t.equal(await refusedSync(false), false, 'a manual sync: no offer (before, every refusal was one)');
});

t.test('a peer without the feature cannot say: each refusal may be an offer, as before', async (t) => {
  t.equal(await refusedSync(false, true), true);
});
