// Striping a session over several QUIC connections (issue 33, item 2), against an in-process
// listener on loopback: a push over 3 forced connections arrives byte-identical and uses all
// three; forged, replayed and foreign joins are refused with a clear error and the listener goes
// on serving; a peer without the join feature keeps one connection; automatic mode stays at one
// connection on clean loopback. (Growth under random loss: test/slow/session/session-join-loss.)
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { silentLogger } from '../../src/logger.js';
import { dialPeer } from '../../src/session/dialer.js';
import { joinSession, stripeSession, type JoinContext } from '../../src/session/session-join.js';
import { PeerSession } from '../../src/session/session.js';
import { memoryHandshake } from './memory-session.js';
import { answers, config, joinContext, pushTree, rig } from './join-rig.js';

t.test('three forced connections: one session, the push arrives byte-identical over all three', async (t) => {
  const { peer, identity, inbox } = await rig(t);
  const session = await dialPeer({ identity, peer, config, log: silentLogger, connections: 3 });
  t.teardown(() => session.close());
  t.equal(session.connections().length, 3, 'two connections joined the first');
  t.ok(session.stripes, 'it stripes');
  const before = session.connections().map((c) => c.stats().bytesSent);
  const files = { 'big.bin': randomBytes(6 << 20), 'small.txt': Buffer.from('hello'), 'mid.bin': randomBytes(700_000) };
  await pushTree(session, 'three', files);
  for (const [name, bytes] of Object.entries(files))
    t.ok((await readFile(path.join(inbox, 'three', name))).equals(bytes), `${name} arrived byte-identical`);
  const sent = session.connections().map((c, i) => c.stats().bytesSent - (before[i] ?? 0));
  t.ok(
    sent.every((b) => b > 256 << 10),
    `every connection carried data (${sent.join(', ')} bytes)`,
  );
  t.ok(await answers(session), 'the session still answers a ping');
});

t.test('forged, replayed and foreign joins are refused clearly; the listener goes on', async (t) => {
  const { peer, identity } = await rig(t);
  const session = await dialPeer({ identity, peer, config, log: silentLogger, connections: 'auto' });
  t.teardown(() => session.close());
  const ctx = joinContext(identity, peer);
  await joinSession(session, 1, ctx);
  t.equal(session.connections().length, 2, 'a proven join is taken');

  await t.rejects(
    joinSession(session, 1, ctx),
    { code: 'AUTH_FAILED', message: /connection 1 of session [0-9a-f]{32} joined already \(a replayed join\)/ },
    'a replayed join is refused',
  );
  const forged = Object.assign(Object.create(PeerSession.prototype) as PeerSession, {
    peerId: session.peerId,
    sessionId: session.sessionId,
    keys: { ...session.keys, joinKey: randomBytes(32) },
  });
  await t.rejects(
    joinSession(forged, 2, ctx),
    { code: 'AUTH_FAILED', message: /proof for connection 2 .* does not verify/ },
    'a join proven with other keys is refused',
  );
  await t.rejects(
    joinSession(session, 99, ctx),
    { code: 'PEER_BUSY', message: /outside 1\.\.15/ },
    'a number over the cap is refused',
  );

  const other = await dialPeer({ identity, peer, config, log: silentLogger });
  const otherId = other.sessionId;
  await other.close();
  await new Promise((r) => setTimeout(r, 200)); // the listener ends that session
  const foreign = Object.assign(Object.create(PeerSession.prototype) as PeerSession, {
    peerId: session.peerId,
    sessionId: otherId,
    keys: session.keys,
  });
  await t.rejects(
    joinSession(foreign, 2, ctx),
    { code: 'AUTH_FAILED', message: /no session [0-9a-f]{32} open here/ },
    'a join naming a session that is not open is refused',
  );
  const crossed = Object.assign(Object.create(PeerSession.prototype) as PeerSession, {
    peerId: session.peerId,
    sessionId: session.sessionId,
    keys: other.keys,
  });
  await t.rejects(
    joinSession(crossed, 3, ctx),
    { code: 'AUTH_FAILED', message: /does not verify/ },
    "another session's token is refused",
  );

  t.equal(session.connections().length, 2, 'no refused connection was added');
  t.ok(await answers(session), 'the session still answers');
  const fresh = await dialPeer({ identity, peer, config, log: silentLogger });
  t.ok(await answers(fresh), 'and the listener takes new sessions');
  await fresh.close();
});

t.test('a peer without the join feature keeps one connection', async (t) => {
  const { client, handshake } = await memoryHandshake();
  const session = new PeerSession(client, {
    ...handshake,
    caps: { ...handshake.caps, features: handshake.caps.features.filter((f) => f !== 'join') },
  });
  let dialled = 0;
  const ctx: JoinContext = {
    connect: () => {
      dialled++;
      return Promise.reject(new Error('must not dial'));
    },
    label: 'old',
    handshakeTimeoutMs: 1_000,
    log: silentLogger,
  };
  await stripeSession(session, 3, ctx);
  await stripeSession(session, 'auto', ctx);
  session.wantConnections(8);
  t.equal(session.connections().length, 1);
  t.equal(dialled, 0, 'no second connection was even dialled');
  t.notOk(session.canAddConnections, 'nobody listens for loss on it');
  t.notOk(session.stripes, 'asking nobody for more does not make it stripe');
  const asked: number[] = [];
  session.setConnectionsWanted((n) => asked.push(n));
  session.wantConnections(1);
  t.notOk(session.stripes, 'one connection asked for is no striping');
  session.wantConnections(4);
  t.ok(session.stripes, 'striping from the moment more are asked for, before any joins');
  t.same(asked, [1, 4]);
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
  t.notOk(session.stripes, 'so its sends keep the loose budget');
});
