// Striping a session over several QUIC connections (issue 33, item 2), against an in-process
// listener on loopback: a push over 3 forced connections arrives byte-identical and uses all
// three; forged, replayed and foreign joins are refused with a clear error and the listener goes
// on serving; a peer without the join feature keeps one connection; automatic mode stays at one
// connection on clean loopback; and, through the impairment relay with random loss, it grows.
import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { generateIdentity } from '../../src/crypto/identity.js';
import { resolveConfig } from '../../src/home/config.js';
import { PeerStore, type PeerEntry } from '../../src/home/peer-store.js';
import type { ResolvedPeer } from '../../src/home/peer-resolve.js';
import { NodeServer } from '../../src/listener/server.js';
import { serveSession } from '../../src/listener/dispatch.js';
import { silentLogger } from '../../src/logger.js';
import { push } from '../../src/push-pull/transfer-client.js';
import { connectTransport, dialPeer } from '../../src/session/dialer.js';
import { joinSession, stripeSession, type JoinContext } from '../../src/session/session-join.js';
import { PeerSession } from '../../src/session/session.js';
import { pingPeer } from '../../src/session/ping.js';
import { startUdpRelay } from '../../src/relay/udp-relay.js';
import { memoryHandshake } from './memory-session.js';

class FixedPeers extends PeerStore {
  entries: PeerEntry[] = [];
  override list(): Promise<PeerEntry[]> {
    return Promise.resolve([...this.entries]);
  }
}

const config = resolveConfig({ transport: 'quic' });

async function rig(t: Test): Promise<{ server: NodeServer; peer: ResolvedPeer; identity: ReturnType<typeof generateIdentity>; inbox: string }> {
  const work = await mkdtemp(path.join(tmpdir(), 'clawpeer-join-'));
  const listenerId = generateIdentity();
  const identity = generateIdentity();
  const peers = new FixedPeers(path.join(work, 'peers.json'));
  peers.entries = [{ id: identity.nodeId, name: 'bob', addedAt: '' }];
  const inbox = path.join(work, 'inbox');
  await mkdir(inbox);
  const shares = [{ name: 'inbox', dir: inbox, readOnly: false }];
  const server = await NodeServer.start(
    { identity: listenerId, peers, shares, host: '127.0.0.1', port: 0, config, log: silentLogger },
    (session, signal) => serveSession(session, { shares, config, log: silentLogger, nodeId: listenerId.nodeId }, signal),
  );
  t.teardown(() => server.close());
  const peer: ResolvedPeer = { id: listenerId.nodeId, name: 'alice', publicKey: listenerId.publicKey, address: { host: '127.0.0.1', port: server.port } };
  return { server, peer, identity, inbox };
}

function joinContext(identity: ReturnType<typeof generateIdentity>, peer: ResolvedPeer): JoinContext {
  const address = peer.address ?? { host: '127.0.0.1', port: 0 };
  return { connect: () => connectTransport({ identity, address, label: peer.name, config, log: silentLogger }), label: peer.name, handshakeTimeoutMs: 5_000, log: silentLogger };
}

/** True when one ping gets its pong. */
async function answers(session: PeerSession): Promise<boolean> {
  for await (const r of pingPeer(session, { count: 1, intervalMs: 0, timeoutMs: 5_000 })) return r.seq === 1;
  return false;
}

/** Pushes a directory `name` holding `files` into the share: it lands as inbox/NAME. */
async function pushTree(session: PeerSession, name: string, files: Record<string, Buffer>): Promise<void> {
  const src = path.join(await mkdtemp(path.join(tmpdir(), 'clawpeer-join-src-')), name);
  await mkdir(src);
  for (const [file, bytes] of Object.entries(files)) await writeFile(path.join(src, file), bytes);
  await push({ session, share: 'inbox', remotePath: '', localPath: src, force: false, streams: 4, window: 16, idleTimeoutMs: 10_000, log: silentLogger, signal: new AbortController().signal });
}

t.test('three forced connections: one session, the push arrives byte-identical over all three', async (t) => {
  const { peer, identity, inbox } = await rig(t);
  const session = await dialPeer({ identity, peer, config, log: silentLogger, connections: 3 });
  t.teardown(() => session.close());
  t.equal(session.connections().length, 3, 'two connections joined the first');
  const before = session.connections().map((c) => c.stats().bytesSent);
  const files = { 'big.bin': randomBytes(6 << 20), 'small.txt': Buffer.from('hello'), 'mid.bin': randomBytes(700_000) };
  await pushTree(session, 'three', files);
  for (const [name, bytes] of Object.entries(files)) t.ok((await readFile(path.join(inbox, 'three', name))).equals(bytes), `${name} arrived byte-identical`);
  const sent = session.connections().map((c, i) => c.stats().bytesSent - (before[i] ?? 0));
  t.ok(sent.every((b) => b > 256 << 10), `every connection carried data (${sent.join(', ')} bytes)`);
  t.ok(await answers(session), 'the session still answers a ping');
});

t.test('forged, replayed and foreign joins are refused clearly; the listener goes on', async (t) => {
  const { peer, identity } = await rig(t);
  const session = await dialPeer({ identity, peer, config, log: silentLogger, connections: 'auto' });
  t.teardown(() => session.close());
  const ctx = joinContext(identity, peer);
  await joinSession(session, 1, ctx);
  t.equal(session.connections().length, 2, 'a proven join is taken');

  await t.rejects(joinSession(session, 1, ctx), { code: 'AUTH_FAILED', message: /connection 1 of session [0-9a-f]{32} joined already \(a replayed join\)/ }, 'a replayed join is refused');
  const forged = Object.assign(Object.create(PeerSession.prototype) as PeerSession, { peerId: session.peerId, sessionId: session.sessionId, keys: { ...session.keys, joinKey: randomBytes(32) } });
  await t.rejects(joinSession(forged, 2, ctx), { code: 'AUTH_FAILED', message: /proof for connection 2 .* does not verify/ }, 'a join proven with other keys is refused');
  await t.rejects(joinSession(session, 99, ctx), { code: 'PEER_BUSY', message: /outside 1\.\.15/ }, 'a number over the cap is refused');

  const other = await dialPeer({ identity, peer, config, log: silentLogger });
  const otherId = other.sessionId;
  await other.close();
  await new Promise((r) => setTimeout(r, 200)); // the listener ends that session
  const foreign = Object.assign(Object.create(PeerSession.prototype) as PeerSession, { peerId: session.peerId, sessionId: otherId, keys: session.keys });
  await t.rejects(joinSession(foreign, 2, ctx), { code: 'AUTH_FAILED', message: /no session [0-9a-f]{32} open here/ }, 'a join naming a session that is not open is refused');
  const crossed = Object.assign(Object.create(PeerSession.prototype) as PeerSession, { peerId: session.peerId, sessionId: session.sessionId, keys: other.keys });
  await t.rejects(joinSession(crossed, 3, ctx), { code: 'AUTH_FAILED', message: /does not verify/ }, "another session's token is refused");

  t.equal(session.connections().length, 2, 'no refused connection was added');
  t.ok(await answers(session), 'the session still answers');
  const fresh = await dialPeer({ identity, peer, config, log: silentLogger });
  t.ok(await answers(fresh), 'and the listener takes new sessions');
  await fresh.close();
});

t.test('a peer without the join feature keeps one connection', async (t) => {
  const { client, handshake } = await memoryHandshake();
  const session = new PeerSession(client, { ...handshake, caps: { ...handshake.caps, features: handshake.caps.features.filter((f) => f !== 'join') } });
  let dialled = 0;
  const ctx: JoinContext = { connect: () => { dialled++; return Promise.reject(new Error('must not dial')); }, label: 'old', handshakeTimeoutMs: 1_000, log: silentLogger };
  await stripeSession(session, 3, ctx);
  await stripeSession(session, 'auto', ctx);
  session.wantConnections(8);
  t.equal(session.connections().length, 1);
  t.equal(dialled, 0, 'no second connection was even dialled');
  t.notOk(session.canAddConnections, 'nobody listens for loss on it');
  await client.close();
});

t.test('automatic mode stays at one connection on clean loopback', async (t) => {
  const { peer, identity, inbox } = await rig(t);
  const session = await dialPeer({ identity, peer, config, log: silentLogger, connections: 'auto' });
  t.teardown(() => session.close());
  const bytes = randomBytes(8 << 20);
  await pushTree(session, 'auto', { 'a.bin': bytes });
  t.ok((await readFile(path.join(inbox, 'auto', 'a.bin'))).equals(bytes), 'the file arrived');
  t.equal(session.connections().length, 1, 'still one connection');
});

t.test('automatic mode adds connections under random loss (impairment relay on loopback)', async (t) => {
  const { server, peer, identity, inbox } = await rig(t);
  const relay = await startUdpRelay({ listen: { host: '127.0.0.1', port: 0 }, target: { host: '127.0.0.1', port: server.port }, spec: 'rtt=20ms,loss=2%,rate=100mbit', seed: 33 });
  t.teardown(() => relay.close());
  const viaRelay: ResolvedPeer = { ...peer, address: relay.address };
  const session = await dialPeer({ identity, peer: viaRelay, config, log: silentLogger, connections: 'auto' });
  t.teardown(() => session.close());
  const bytes = randomBytes(4 << 20);
  await pushTree(session, 'lossy', { 'a.bin': bytes });
  t.ok((await readFile(path.join(inbox, 'lossy', 'a.bin'))).equals(bytes), 'the file arrived byte-identical');
  t.ok(session.connections().length > 1, `connections grew (${session.connections().length})`);
});
