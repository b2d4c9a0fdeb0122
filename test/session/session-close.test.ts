// A session's close is bounded: a control stream whose last writes never drain (a peer that
// stopped reading) must not keep a command alive; the connection is closed anyway.
import t from 'tap';
import { performance } from 'node:perf_hooks';
import { CONTROL_CLOSE_MAX_MS, PeerSession } from '../../src/session/session.js';
import { memoryHandshake } from './memory-session.js';

t.test('close() gives the control stream CONTROL_CLOSE_MAX_MS, then closes the connection', async (t) => {
  const { client, handshake } = await memoryHandshake();
  const session = new PeerSession(client, handshake);
  let finishing = false;
  // The control stream's close never settles, as one stuck behind unread writes.
  (session.control as unknown as { close: () => Promise<void> }).close = () => {
    finishing = true;
    return new Promise<void>(() => undefined);
  };
  let connectionClosed = false;
  void client.closed.then(() => (connectionClosed = true));
  const started = performance.now();
  await session.close('done', { linger: false });
  const took = performance.now() - started;
  t.ok(finishing, 'the control stream was asked to finish first');
  // It returns at all (without the bound it never did); first it gave the stream its time.
  t.ok(took >= CONTROL_CLOSE_MAX_MS - 50, `returned after ${Math.round(took)} ms, not before the bound`);
  await client.closed;
  t.ok(connectionClosed, 'and the connection was closed anyway');
});
