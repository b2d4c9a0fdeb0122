import t from 'tap';
import { ClawpeerError } from '../../src/errors.js';
import { openControlStream } from '../../src/session/dialer.js';
import type { Connection, DuplexStream } from '../../src/transport/types.js';

// Only openStream is used; a peer that never grants stream credit leaves it pending forever.
const connection = (openStream: () => Promise<DuplexStream>): Connection => ({ openStream }) as unknown as Connection;

t.test('a control stream the peer never lets open fails with TIMEOUT naming the peer', async (t) => {
  const started = Date.now();
  const err = await openControlStream(
    connection(() => new Promise<DuplexStream>(() => undefined)),
    50,
    'alice',
  ).catch((e: unknown) => e);
  t.ok(err instanceof ClawpeerError, 'a ClawpeerError');
  t.equal((err as ClawpeerError).code, 'TIMEOUT');
  t.match((err as Error).message, /opening the control stream to alice timed out after 50 ms/);
  t.ok(Date.now() - started >= 45, 'it waited for the deadline');
});

t.test('an abort ends the wait at once', async (t) => {
  const ac = new AbortController();
  const waiting = openControlStream(
    connection(() => new Promise<DuplexStream>(() => undefined)),
    60_000,
    'alice',
    ac.signal,
  );
  ac.abort();
  await t.rejects(waiting, { code: 'ABORTED' });
});

t.test('a stream that opens is handed over', async (t) => {
  const stream = { id: 0 } as unknown as DuplexStream;
  t.equal(
    await openControlStream(
      connection(() => Promise.resolve(stream)),
      50,
      'alice',
    ),
    stream,
  );
});
