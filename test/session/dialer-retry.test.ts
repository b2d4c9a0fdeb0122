// A listener that takes the connection and never answers the handshake (one killed or restarted
// just as we connected: over QUIC its dead connection says nothing) costs one handshake timeout,
// then the dial is made once more (issue 34: "handshake timed out ... waiting for Welcome just
// after the listener restarted" failed the whole sync).
import t, { type Test } from 'tap';
import { generateIdentity } from '../../src/crypto/identity.js';
import { nodeIdFromPublicKey } from '../../src/crypto/node-id.js';
import { resolveConfig } from '../../src/home/config.js';
import { serverHandshake } from '../../src/session/control-channel.js';
import { dialPeer } from '../../src/session/dialer.js';
import { silentLogger } from '../../src/logger.js';
import { QuinnBackend } from '../../src/transport/quinn.js';
import type { Connection, Listener } from '../../src/transport/types.js';

const server = generateIdentity();
const client = generateIdentity();
const config = resolveConfig({ transport: 'quic', handshakeTimeoutMs: 400 });

async function listen(t: Test): Promise<Listener> {
  const listener = await new QuinnBackend().listen({
    host: '127.0.0.1',
    port: 0,
    identity: server,
    idleTimeoutMs: 15_000,
  });
  t.teardown(() => listener.close());
  return listener;
}

const dial = (listener: Listener) =>
  dialPeer({
    identity: client,
    config,
    log: silentLogger,
    peer: {
      id: nodeIdFromPublicKey(server.publicKey),
      name: 'alice',
      publicKey: server.publicKey,
      address: listener.address,
    },
  });

/** Accepts a connection and its control stream, and never answers. */
async function ignoreOne(listener: Listener, kept: Connection[]): Promise<void> {
  const conn = await listener.accept();
  if (conn === null) throw new Error('listener closed');
  kept.push(conn);
  await conn.acceptStream();
}

t.test('an unanswered handshake is dialled once more, and the answered one is the session', async (t) => {
  const listener = await listen(t);
  const kept: Connection[] = [];
  t.teardown(() => Promise.all(kept.map((c) => c.close())));
  const serving = (async () => {
    await ignoreOne(listener, kept);
    const conn = await listener.accept();
    if (conn === null) throw new Error('listener closed');
    kept.push(conn);
    const stream = await conn.acceptStream();
    if (stream === null) throw new Error('no control stream');
    return serverHandshake(stream, { identity: server, expectedRemoteKey: conn.remotePublicKey, timeoutMs: 5_000 });
  })();
  const session = await dial(listener);
  t.equal(
    session.peerId,
    nodeIdFromPublicKey(server.publicKey),
    'handshaken with the listener on the second connection',
  );
  t.equal(kept.length, 2, 'two connections');
  await serving;
  await session.connection.close();
});

t.test('a listener that never answers fails after the second try, with a clear TIMEOUT', async (t) => {
  const listener = await listen(t);
  const kept: Connection[] = [];
  t.teardown(() => Promise.all(kept.map((c) => c.close())));
  void (async () => {
    await ignoreOne(listener, kept);
    await ignoreOne(listener, kept);
  })().catch(() => undefined);
  await t.rejects(dial(listener), {
    code: 'TIMEOUT',
    message:
      /alice at 127\.0\.0\.1:\d+ took the connection but did not answer the handshake, twice: handshake timed out after 400 ms waiting for Welcome/,
  });
  t.equal(kept.length, 2, 'dialled twice, not more');
});
