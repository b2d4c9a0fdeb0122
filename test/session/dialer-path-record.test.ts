// The path a dial won is told to the caller (the CLI remembers it in paths.json), and told again
// when the session ends on another one: a relayed connection that moved to a punched hole was
// remembered as relayed for good (`pair list`, the next dial's order).
import t, { type Test } from 'tap';
import { generateIdentity } from '../../src/crypto/identity.js';
import { nodeIdFromPublicKey } from '../../src/crypto/node-id.js';
import { resolveConfig } from '../../src/home/config.js';
import { silentLogger } from '../../src/logger.js';
import type { PathSources } from '../../src/reach/path-sources.js';
import type { PathKind } from '../../src/reach/paths.js';
import { serverHandshake } from '../../src/session/control-channel.js';
import { dialPeer } from '../../src/session/dialer.js';
import { QuinnBackend } from '../../src/transport/quinn.js';
import type { Connection } from '../../src/transport/types.js';

const server = generateIdentity();
const client = generateIdentity();
const config = resolveConfig({ transport: 'quic' });

/** Dials a loopback listener through one candidate whose path the test sets; returns what `connected` was told. */
async function dialAndEnd(t: Test, pathAtEnd: PathKind): Promise<[PathKind, number | undefined][]> {
  const listener = await new QuinnBackend().listen({
    host: '127.0.0.1',
    port: 0,
    identity: server,
    idleTimeoutMs: 15_000,
  });
  t.teardown(() => listener.close());
  const kept: Connection[] = [];
  t.teardown(() => Promise.all(kept.map((c) => c.close())));
  const serving = (async () => {
    const conn = await listener.accept();
    if (conn === null) throw new Error('listener closed');
    kept.push(conn);
    const stream = await conn.acceptStream();
    if (stream === null) throw new Error('no control stream');
    await serverHandshake(stream, { identity: server, expectedRemoteKey: conn.remotePublicKey, timeoutMs: 5_000 });
  })();
  let path: PathKind = 'relayed';
  const told: [PathKind, number | undefined][] = [];
  let released = 0;
  const paths: PathSources = {
    sources: [
      {
        name: 'test',
        async *find() {
          yield {
            address: listener.address,
            path: () => path,
            describe: 'through a test forwarder',
            priority: 0,
            release: () => undefined,
          };
        },
      },
    ],
    release: () => released++,
    connected: (p, _address, rttMs) => told.push([p, rttMs]),
  };
  const session = await dialPeer({
    identity: client,
    config,
    log: silentLogger,
    peer: { id: nodeIdFromPublicKey(server.publicKey), name: 'alice', publicKey: server.publicKey },
    paths,
  });
  await serving;
  t.equal(told.length, 1, 'told the winning path once, at connect');
  path = pathAtEnd;
  await session.close('done', { linger: false });
  await session.connection.closed;
  for (let i = 0; i < 100 && released === 0; i++) await new Promise((r) => setTimeout(r, 10));
  t.equal(released, 1, 'the paths are released when the session is gone');
  return told;
}

t.test('a relayed session that ends punched is told again, as punched, without a round trip', async (t) => {
  const told = await dialAndEnd(t, 'punched');
  t.equal(told[0]?.[0], 'relayed');
  t.type(told[0]?.[1], 'number', 'the round trip measured at connect');
  t.same(told[1], ['punched', undefined]);
  t.equal(told.length, 2);
});

t.test('a session that ends on the path it won is told once', async (t) => {
  const told = await dialAndEnd(t, 'relayed');
  t.equal(told.length, 1);
  t.equal(told[0]?.[0], 'relayed');
});
