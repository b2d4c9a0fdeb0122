// Automatic striping under random loss, through the impairment relay on loopback (slow: ~16 s; run by npm run test:slow):
// a push grows its connections on this side's loss watch, a pull on the listener's JoinWanted.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ResolvedPeer } from '../../../src/home/peer-resolve.js';
import { silentLogger } from '../../../src/logger.js';
import { pull } from '../../../src/push-pull/transfer-client.js';
import { syncFolder } from '../../../src/folder-sync/sync-client.js';
import { dialPeer } from '../../../src/session/dialer.js';
import { startUdpRelay } from '../../../src/relay/udp-relay.js';
import { config, pushTree, rig } from '../../session/join-rig.js';

t.test('automatic mode adds connections under random loss (impairment relay on loopback)', async (t) => {
  const { server, peer, identity, inbox } = await rig(t);
  const relay = await startUdpRelay({
    listen: { host: '127.0.0.1', port: 0 },
    target: { host: '127.0.0.1', port: server.port },
    spec: 'rtt=20ms,loss=2%,rate=100mbit',
    seed: 33,
  });
  t.teardown(() => relay.close());
  const viaRelay: ResolvedPeer = { ...peer, address: relay.address };
  const session = await dialPeer({ identity, peer: viaRelay, config, log: silentLogger, connections: 'auto' });
  t.teardown(() => session.close());
  const bytes = randomBytes(2 << 20);
  await pushTree(session, 'lossy', { 'a.bin': bytes });
  t.ok((await readFile(path.join(inbox, 'lossy', 'a.bin'))).equals(bytes), 'the file arrived byte-identical');
  t.ok(session.connections().length > 1, `a push grows its connections (${session.connections().length})`);

  // A pull: the listener sends, sees the loss and asks for connections (JoinWanted).
  const puller = await dialPeer({ identity, peer: viaRelay, config, log: silentLogger, connections: 'auto' });
  t.teardown(() => puller.close());
  const back = await mkdtemp(path.join(tmpdir(), 'clawpeer-join-back-'));
  await pull({
    session: puller,
    share: 'inbox',
    remotePath: 'lossy/a.bin',
    localPath: back,
    force: false,
    streams: 4,
    window: 16,
    idleTimeoutMs: 10_000,
    log: silentLogger,
    signal: new AbortController().signal,
  });
  t.ok((await readFile(path.join(back, 'a.bin'))).equals(bytes), 'pulled back byte-identical');
  t.ok(puller.connections().length > 1, `a pull grows them on the listener's word (${puller.connections().length})`);

  // A sync's fetch: the listener sends the file's content, sees the loss, asks (JoinWanted), and
  // the client acts on it while it receives. The two sessions above close first: the listener
  // allows 16 connections per peer.
  await session.close();
  await puller.close();
  const syncer = await dialPeer({ identity, peer: viaRelay, config, log: silentLogger, connections: 'auto' });
  t.teardown(() => syncer.close());
  const synced = await mkdtemp(path.join(tmpdir(), 'clawpeer-join-sync-'));
  let whileReceiving = 0; // the most connections seen while the content arrived
  const onProgress = (p: { phase: string }): void => {
    if (p.phase === 'receiving') whileReceiving = Math.max(whileReceiving, syncer.connections().length);
  };
  await syncFolder({
    session: syncer,
    dir: synced,
    share: 'inbox',
    mode: 'two-way',
    nodeId: identity.nodeId,
    log: silentLogger,
    signal: AbortSignal.timeout(120_000),
    onProgress,
  });
  t.ok((await readFile(path.join(synced, 'lossy', 'a.bin'))).equals(bytes), 'synced byte-identical');
  t.ok(
    whileReceiving > 1,
    `a sync's fetch grows them on the listener's word while it receives (${whileReceiving}; ${syncer.connections().length} at the end)`,
  );
});
