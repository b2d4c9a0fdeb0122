// A connection lost on a relayed path names the relay: "stream 0 read: connection lost" alone
// does not say that a third machine, the rendezvous relaying it, may be what went away.
import t from 'tap';
import { ClawpeerError } from '../../src/errors.js';
import type { PathKind } from '../../src/reach/paths.js';
import { PeerSession } from '../../src/session/session.js';
import { memoryHandshake } from './memory-session.js';

const lost = (): ClawpeerError => new ClawpeerError('CONNECTION_CLOSED', 'stream 0 read: connection lost');

t.test('a lost relayed connection names the relay; other paths and errors are left as they are', async (t) => {
  const { client, handshake, server } = await memoryHandshake();
  let path: PathKind = 'relayed';
  const session = new PeerSession(client, handshake, { path: () => path, relay: '127.0.0.1:7800' });
  await server.close('gone');
  const relayed = await session.reasonFor(lost(), 50);
  t.type(relayed, ClawpeerError);
  t.equal((relayed as ClawpeerError).code, 'CONNECTION_CLOSED', 'the code stays');
  t.match(
    (relayed as Error).message,
    /^stream 0 read: connection lost \(the connection went through the relay at 127\.0\.0\.1:7800, a relayed path: the relay was lost/,
  );
  const silent = await session.reasonFor(new ClawpeerError('TIMEOUT', 'stream 0 read: timed out'), 50);
  t.match((silent as Error).message, 'relay at 127.0.0.1:7800', 'a connection that went silent too');
  const refused = new ClawpeerError('USAGE', 'no such share');
  t.equal(await session.reasonFor(refused, 50), refused, 'not an error that is no loss');

  path = 'punched'; // the relayed connection moved to a hole: the relay no longer carries it
  const moved = lost();
  t.equal(await session.reasonFor(moved, 50), moved);
  await session.close('done', { linger: false });
});

t.test('a session not relayed keeps the error as it was', async (t) => {
  const { client, handshake, server } = await memoryHandshake();
  const session = new PeerSession(client, handshake);
  await server.close('gone');
  const err = lost();
  t.equal(await session.reasonFor(err, 50), err);
  await session.close('done', { linger: false });
});
