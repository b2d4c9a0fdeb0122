// A sync of a shared folder paused here (folder-service.ts pausedFor) is refused as paused:
// SHARE_PAUSED to a peer whose session has feature 'share-paused', SHARE_UNKNOWN (what an older
// peer knows) to one without; the wire code maps both ways. A folder not paused is looked up as before.
import t from 'tap';
import { ClawpeerError, errorFromWire, WIRE_ERRORS, wireCodeFor } from '../../src/errors.js';
import { resolveConfig } from '../../src/home/config.js';
import { silentLogger } from '../../src/logger.js';
import { serveSync } from '../../src/folder-sync/sync-service.js';
import type { SyncRequestMessage } from '../../src/protocol/messages.js';
import type { DataStreamRouter } from '../../src/session/data-stream-router.js';
import type { PeerSession } from '../../src/session/session.js';

const PEER = 'peer-b';
const req: SyncRequestMessage = {
  type: 'sync-request',
  transferId: 1,
  share: 'docs',
  mode: 'two-way',
  reconcile: new Uint8Array(0),
};
const ctx = {
  shares: [],
  config: resolveConfig({}),
  log: silentLogger,
  nodeId: 'node-a',
  pausedFolder: (share: string, peer: string) => share === 'docs' && peer === PEER,
};
const sessionWith = (features: string[], peerId = PEER): PeerSession =>
  ({ peerId, caps: { features } }) as unknown as PeerSession;
const serve = (session: PeerSession, c: typeof ctx = ctx): Promise<unknown> =>
  serveSync(session, null as unknown as DataStreamRouter, req, c, new AbortController().signal);

t.test('a peer that knows the paused refusal gets SHARE_PAUSED', async (t) => {
  await t.rejects(serve(sessionWith(['sync', 'share-paused'])), { code: 'SHARE_PAUSED', message: /paused here/ });
});

t.test('an older peer gets SHARE_UNKNOWN, saying the folder is paused', async (t) => {
  await t.rejects(serve(sessionWith(['sync'])), { code: 'SHARE_UNKNOWN', message: /folder docs is paused here/ });
});

t.test('a peer the folder is not shared with, or a folder not paused, is looked up as before', async (t) => {
  await t.rejects(serve(sessionWith(['sync', 'share-paused'], 'stranger')), {
    code: 'SHARE_UNKNOWN',
    message: /no share named "docs"/,
  });
  await t.rejects(serve(sessionWith(['sync', 'share-paused']), { ...ctx, pausedFolder: () => false }), {
    code: 'SHARE_UNKNOWN',
    message: /no share named/,
  });
});

t.test('SHARE_PAUSED travels as its own wire code', async (t) => {
  const sent = wireCodeFor(new ClawpeerError('SHARE_PAUSED', 'folder docs is paused here'));
  t.same(sent, { code: WIRE_ERRORS.SHARE_PAUSED.wire, name: 'SHARE_PAUSED' });
  t.equal(errorFromWire(sent.code, 'folder docs is paused here').code, 'SHARE_PAUSED');
});
