// Transport compliance suite: the one set of behaviours every TransportBackend must show
// (the js-libp2p interface-compliance-tests idea). Each backend's test file calls
// transportCompliance(name, makeBackend) and gets the same tap subtests.
//
// Goals: pin the semantics the node layer relies on (proven keys, stream open/accept in both
// directions, FIN vs reset, backpressure, close and listener-close, bounded connect failure)
// and never hang: every await is raced against a deadline so a broken backend fails fast with
// a message that says which step stalled.
// Non-goals: performance (bench/transport.ts), key pinning (the node layer's job), and
// backend-specific guarantees (each backend's own test file).
//
// One rule every backend can meet and the node layer must respect: a stream becomes visible to
// the peer's acceptStream() once its first byte (or its FIN) has been sent, as in QUIC. So the
// suite always writes (or finishes) before it expects the peer to accept.
import { createHash, randomBytes } from 'node:crypto';
import t from 'tap';
import { generateIdentity, type Identity } from '../../src/crypto/identity.js';
import { isClawpeerError } from '../../src/errors.js';
import type { Connection, DuplexStream, Listener, TransportBackend } from '../../src/transport/types.js';

/** Deadline for a single step that should be near-instant on loopback (ms). */
const STEP_TIMEOUT_MS = 10_000;
/** Deadline for one subtest as a whole (ms); bulk subtests move up to 64 MiB. */
const SUBTEST_TIMEOUT_MS = 60_000;
/** Read size used by the suite (bytes): the 64–256 KiB range backends are tuned for. */
const READ_BYTES = 256 * 1024;
const BULK_BYTES = 8 * 1024 * 1024; // 8 MiB echo
const CONCURRENT_STREAMS = 32;
const CONCURRENT_STREAM_BYTES = 64 * 1024;
/** Total the backpressure writer attempts; a backend must stall well before (buffers < 48 MiB). */
const BACKPRESSURE_TOTAL_BYTES = 64 * 1024 * 1024;
const BACKPRESSURE_MAX_BUFFERED_BYTES = 48 * 1024 * 1024;
/** No write resolving for this long means the writer is blocked on the slow reader (ms). */
const STALL_QUIET_MS = 300;
/** Idle timeout for the connect-to-nothing case; the connect must fail within a few of these. */
const DEAD_PORT_IDLE_TIMEOUT_MS = 1_000;
const DEAD_PORT_DEADLINE_MS = 15_000;

export interface ComplianceOptions {
  /** A reason to skip the whole suite (e.g. the runtime lacks the backend), or false. */
  readonly skip?: string | false;
}

/** Rejects with a message naming the step if `p` does not settle within `ms`. */
export async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: did not settle within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** Reads until FIN; returns all bytes. */
export async function readAll(stream: DuplexStream, what = 'readAll'): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  for (;;) {
    const chunk = await within(stream.read(READ_BYTES), STEP_TIMEOUT_MS, what);
    if (chunk === null) return Buffer.concat(parts);
    parts.push(chunk);
  }
}

/** Reads exactly `n` bytes (fails on an early FIN). */
export async function readExactly(stream: DuplexStream, n: number, what = 'readExactly'): Promise<Buffer> {
  const parts: Uint8Array[] = [];
  let got = 0;
  while (got < n) {
    const chunk = await within(stream.read(Math.min(READ_BYTES, n - got)), STEP_TIMEOUT_MS, what);
    if (chunk === null) throw new Error(`${what}: FIN after ${got} of ${n} bytes`);
    parts.push(chunk);
    got += chunk.length;
  }
  return Buffer.concat(parts);
}

/** Writes `data` in `chunkBytes` pieces, each awaited (the backpressure path). */
export async function writeChunked(stream: DuplexStream, data: Uint8Array, chunkBytes = 64 * 1024): Promise<void> {
  for (let off = 0; off < data.length; off += chunkBytes) {
    await within(stream.write(data.subarray(off, off + chunkBytes)), STEP_TIMEOUT_MS, 'write');
  }
}

const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

/** Echoes everything it reads back on the same stream, then FINs. */
async function echo(stream: DuplexStream): Promise<void> {
  for (;;) {
    const chunk = await within(stream.read(READ_BYTES), STEP_TIMEOUT_MS, 'echo read');
    if (chunk === null) break;
    await within(stream.write(chunk), STEP_TIMEOUT_MS, 'echo write');
  }
  await within(stream.finish(), STEP_TIMEOUT_MS, 'echo finish');
}

interface Pair {
  readonly listener: Listener;
  readonly client: Connection;
  readonly server: Connection;
  readonly clientId: Identity;
  readonly serverId: Identity;
}

interface Teardown {
  teardown(fn: () => unknown): void;
}

async function closeQuietly(c: { close(): Promise<void> }): Promise<void> {
  try {
    await within(c.close(), STEP_TIMEOUT_MS, 'close in teardown');
  } catch {
    // Teardown must not mask the subtest's own result.
  }
}

async function makePair(t: Teardown, backend: TransportBackend): Promise<Pair> {
  const serverId = generateIdentity();
  const clientId = generateIdentity();
  const listener = await within(
    backend.listen({ host: '127.0.0.1', port: 0, identity: serverId }),
    STEP_TIMEOUT_MS,
    'listen',
  );
  t.teardown(() => closeQuietly(listener));
  const accepted = listener.accept();
  const client = await within(
    backend.connect({ host: '127.0.0.1', port: listener.address.port, identity: clientId }),
    STEP_TIMEOUT_MS,
    'connect',
  );
  t.teardown(() => closeQuietly(client));
  const server = await within(accepted, STEP_TIMEOUT_MS, 'accept');
  if (server === null) throw new Error('listener.accept() returned null on an open listener');
  t.teardown(() => closeQuietly(server));
  return { listener, client, server, clientId, serverId };
}

/** Opens a stream on `from`, sends `first` (so the peer sees it), accepts it on `to`. */
async function openAccepted(
  from: Connection,
  to: Connection,
  first: Uint8Array,
): Promise<[DuplexStream, DuplexStream]> {
  const local = await within(from.openStream(), STEP_TIMEOUT_MS, 'openStream');
  await within(local.write(first), STEP_TIMEOUT_MS, 'first write');
  const remote = await within(to.acceptStream(), STEP_TIMEOUT_MS, 'acceptStream');
  if (remote === null) throw new Error('acceptStream() returned null on an open connection');
  return [local, remote];
}

export function transportCompliance(name: string, makeBackend: () => TransportBackend, opts?: ComplianceOptions): void {
  let skip: string | false = opts?.skip ?? false;
  if (skip === false) {
    const probe = makeBackend();
    if (!probe.available()) skip = `${name} backend is not available on this runtime`;
  }

  void t.test(`${name} transport compliance`, { skip, timeout: 10 * SUBTEST_TIMEOUT_MS }, async (t) => {
    const sub = { timeout: SUBTEST_TIMEOUT_MS };

    await t.test('listens on 127.0.0.1 port 0 and reports the real port', sub, async (t) => {
      const backend = makeBackend();
      t.equal(backend.name.length > 0, true, 'backend has a name');
      const { listener, client, server } = await makePair(t, backend);
      t.equal(listener.address.host, '127.0.0.1');
      t.ok(listener.address.port > 0 && listener.address.port < 65536, `real port ${listener.address.port}`);
      t.equal(client.remoteAddress.port, listener.address.port, 'client sees the listener port');
      t.equal(server.localAddress.port, listener.address.port, 'server connection is on the listener port');
      t.equal(client.transport, backend.name);
      t.equal(server.transport, backend.name);
    });

    await t.test('both sides see the proven public key of the other', sub, async (t) => {
      const { client, server, clientId, serverId } = await makePair(t, makeBackend());
      t.equal(client.remotePublicKey.length, 32);
      t.same(Buffer.from(client.remotePublicKey), Buffer.from(serverId.publicKey), 'client sees server key');
      t.same(Buffer.from(server.remotePublicKey), Buffer.from(clientId.publicKey), 'server sees client key');
    });

    await t.test('opens and accepts streams in both directions', sub, async (t) => {
      const { client, server } = await makePair(t, makeBackend());
      const [c1, s1] = await openAccepted(client, server, Uint8Array.of(1));
      t.same(await readExactly(s1, 1), Buffer.of(1), 'server reads the client byte');
      const [s2, c2] = await openAccepted(server, client, Uint8Array.of(2));
      t.same(await readExactly(c2, 1), Buffer.of(2), 'client reads the server byte');
      t.not(c1.id, undefined);
      t.not(s2.id, undefined);
      t.not(c1.id, c2.id, 'locally opened and accepted streams have distinct ids');
    });

    await t.test('echoes 1 byte', sub, async (t) => {
      const { client, server } = await makePair(t, makeBackend());
      const [c, s] = await openAccepted(client, server, Uint8Array.of(0x2a));
      await within(c.finish(), STEP_TIMEOUT_MS, 'finish');
      const served = echo(s);
      t.same(await readAll(c), Buffer.of(0x2a));
      await served;
    });

    await t.test('0 bytes + FIN: the peer accepts the stream and reads null', sub, async (t) => {
      const { client, server } = await makePair(t, makeBackend());
      const c = await within(client.openStream(), STEP_TIMEOUT_MS, 'openStream');
      await within(c.finish(), STEP_TIMEOUT_MS, 'finish');
      const s = await within(server.acceptStream(), STEP_TIMEOUT_MS, 'acceptStream of an empty stream');
      if (s === null) throw new Error('acceptStream() returned null');
      t.equal(await within(s.read(), STEP_TIMEOUT_MS, 'read at FIN'), null, 'read returns null at once');
      t.equal(await within(s.read(), STEP_TIMEOUT_MS, 'read after FIN'), null, 'and keeps returning null');
      await within(s.finish(), STEP_TIMEOUT_MS, 'server finish');
      t.equal((await readAll(c)).length, 0, 'the reply is empty too');
    });

    await t.test('echoes 8 MiB of random data (sha256 equal)', sub, async (t) => {
      const { client, server } = await makePair(t, makeBackend());
      const data = randomBytes(BULK_BYTES);
      const [c, s] = await openAccepted(client, server, data.subarray(0, 1));
      const served = echo(s);
      // Write and read concurrently: an echo of more than the flow-control window deadlocks otherwise.
      const writing = (async () => {
        await writeChunked(c, data.subarray(1));
        await within(c.finish(), STEP_TIMEOUT_MS, 'finish');
      })();
      const back = await readAll(c, 'read echo');
      await writing;
      await served;
      t.equal(back.length, data.length, 'length');
      t.equal(sha256(back), sha256(data), 'sha256');
    });

    await t.test(`${CONCURRENT_STREAMS} concurrent streams stay independent`, sub, async (t) => {
      const { client, server } = await makePair(t, makeBackend());
      const serving: Promise<void>[] = [];
      const acceptLoop = (async () => {
        for (let i = 0; i < CONCURRENT_STREAMS; i++) {
          const s = await within(server.acceptStream(), STEP_TIMEOUT_MS, `accept stream ${i}`);
          if (s === null) throw new Error('acceptStream() returned null');
          serving.push(echo(s));
        }
      })();
      const results = await Promise.all(
        Array.from({ length: CONCURRENT_STREAMS }, async (_, i) => {
          const data = randomBytes(CONCURRENT_STREAM_BYTES + i); // distinct lengths catch cross-talk
          const c = await within(client.openStream(), STEP_TIMEOUT_MS, `open stream ${i}`);
          const writing = (async () => {
            await writeChunked(c, data, 16 * 1024);
            await within(c.finish(), STEP_TIMEOUT_MS, 'finish');
          })();
          const back = await readAll(c, `read stream ${i}`);
          await writing;
          return sha256(back) === sha256(data);
        }),
      );
      await acceptLoop;
      await Promise.all(serving);
      t.equal(results.filter(Boolean).length, CONCURRENT_STREAMS, 'every stream got exactly its own bytes back');
    });

    await t.test('backpressure: a slow reader stalls the writer, then everything arrives', sub, async (t) => {
      const { client, server } = await makePair(t, makeBackend());
      const chunk = randomBytes(256 * 1024); // reused, never mutated
      const [c, s] = await openAccepted(client, server, chunk.subarray(0, 1));
      let accepted = 1;
      let lastProgress = Date.now();
      const writing = (async () => {
        while (accepted < BACKPRESSURE_TOTAL_BYTES) {
          const piece = chunk.subarray(0, Math.min(chunk.length, BACKPRESSURE_TOTAL_BYTES - accepted));
          await c.write(piece);
          accepted += piece.length;
          lastProgress = Date.now();
        }
        await c.finish();
      })();
      writing.catch(() => {}); // observed below
      // Wait until the writer stops making progress while nobody reads.
      const deadline = Date.now() + STEP_TIMEOUT_MS;
      while (Date.now() - lastProgress < STALL_QUIET_MS && accepted < BACKPRESSURE_TOTAL_BYTES) {
        if (Date.now() > deadline) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      t.ok(accepted < BACKPRESSURE_TOTAL_BYTES, `writer blocked without a reader (accepted ${accepted} bytes)`);
      t.ok(
        accepted <= BACKPRESSURE_MAX_BUFFERED_BYTES,
        `buffering is bounded (${accepted} <= ${BACKPRESSURE_MAX_BUFFERED_BYTES})`,
      );
      // Now drain: all writes must resolve and every byte arrive.
      let received = 0;
      for (;;) {
        const got = await within(s.read(READ_BYTES), STEP_TIMEOUT_MS, 'drain read');
        if (got === null) break;
        received += got.length;
      }
      await within(writing, STEP_TIMEOUT_MS, 'writer after drain');
      t.equal(received, BACKPRESSURE_TOTAL_BYTES, 'all bytes arrived');
    });

    await t.test(
      'a writer may refill its buffer once write() resolved: the peer gets what was written',
      sub,
      async (t) => {
        const { client, server } = await makePair(t, makeBackend());
        const buffer = Buffer.alloc(200 * 1024);
        const rounds = 40;
        const expected = createHash('sha256');
        const [c, s] = await openAccepted(client, server, Buffer.from('x'));
        expected.update('x');
        const writing = (async () => {
          for (let i = 0; i < rounds; i++) {
            buffer.fill(i + 1); // overwrites what the previous (resolved) write carried
            expected.update(buffer);
            await within(c.write(buffer), STEP_TIMEOUT_MS, `write ${i}`);
          }
          await within(c.finish(), STEP_TIMEOUT_MS, 'finish');
        })();
        const got = await readAll(s, 'read the refilled writes');
        await writing;
        t.equal(got.length, 1 + rounds * buffer.length, 'every byte arrived');
        t.equal(
          sha256(got),
          expected.digest('hex'),
          'each write arrived as it was when written, not as refilled later',
        );
      },
    );

    await t.test('half-close: read returns null after FIN, the other direction still works', sub, async (t) => {
      const { client, server } = await makePair(t, makeBackend());
      const [c, s] = await openAccepted(client, server, Buffer.from('ping'));
      await within(c.finish(), STEP_TIMEOUT_MS, 'client finish');
      t.same(await readAll(s), Buffer.from('ping'), 'server reads ping then FIN');
      t.equal(await within(s.read(), STEP_TIMEOUT_MS, 'read after FIN'), null, 'read stays null after FIN');
      const reply = randomBytes(1024 * 1024);
      const replying = (async () => {
        await writeChunked(s, reply);
        await within(s.finish(), STEP_TIMEOUT_MS, 'server finish');
      })();
      const got = await readAll(c);
      await replying;
      t.equal(sha256(got), sha256(reply), 'server -> client direction still carries 1 MiB after the client FIN');
    });

    await t.test('reset: the peer read rejects, and the peer write eventually rejects', sub, async (t) => {
      const { client, server } = await makePair(t, makeBackend());
      const [c, s] = await openAccepted(client, server, Uint8Array.of(7));
      t.same(await readExactly(s, 1), Buffer.of(7));
      c.reset();
      await t.rejects(within(s.read(), STEP_TIMEOUT_MS, 'read after peer reset'), 'read rejects after the peer reset');
      await t.rejects(
        within(
          (async () => {
            for (let i = 0; i < 10_000; i++) {
              await s.write(new Uint8Array(16 * 1024));
              await new Promise((r) => setTimeout(r, 1));
            }
          })(),
          STEP_TIMEOUT_MS,
          'write after peer reset',
        ),
        'writing to a stream the peer reset fails',
      );
      // The connection survives a stream reset.
      const [c2, s2] = await openAccepted(client, server, Uint8Array.of(8));
      t.same(await readExactly(s2, 1), Buffer.of(8), 'a new stream still works');
      c2.reset();
    });

    await t.test('close(): the peer sees closed, acceptStream returns null, pending reads reject', sub, async (t) => {
      const { client, server } = await makePair(t, makeBackend());
      const [, s] = await openAccepted(client, server, Uint8Array.of(1));
      t.same(await readExactly(s, 1), Buffer.of(1));
      const pendingRead = s.read();
      pendingRead.catch(() => {}); // asserted below
      const pendingAccept = server.acceptStream();
      await within(client.close('test done'), STEP_TIMEOUT_MS, 'client close');
      const serverInfo = await within(server.closed, STEP_TIMEOUT_MS, 'server closed promise');
      t.equal(serverInfo.local, false, 'server: closed by the peer');
      const clientInfo = await within(client.closed, STEP_TIMEOUT_MS, 'client closed promise');
      t.equal(clientInfo.local, true, 'client: closed locally');
      t.equal(
        await within(pendingAccept, STEP_TIMEOUT_MS, 'pending acceptStream'),
        null,
        'pending acceptStream -> null',
      );
      t.equal(
        await within(server.acceptStream(), STEP_TIMEOUT_MS, 'acceptStream after close'),
        null,
        'later acceptStream -> null',
      );
      t.equal(await within(client.acceptStream(), STEP_TIMEOUT_MS, 'local acceptStream after close'), null);
      await t.rejects(
        within(pendingRead, STEP_TIMEOUT_MS, 'pending read'),
        'pending read on an unfinished stream rejects',
      );
      await t.rejects(
        within(client.openStream(), STEP_TIMEOUT_MS, 'openStream after close'),
        'openStream after close rejects',
      );
      await within(client.close(), STEP_TIMEOUT_MS, 'second close'); // idempotent
      t.pass('close is idempotent');
    });

    await t.test('close() right after finish() still delivers the finished stream', sub, async (t) => {
      const { client, server } = await makePair(t, makeBackend());
      const data = randomBytes(512 * 1024);
      const [c, s] = await openAccepted(client, server, data.subarray(0, 1));
      await writeChunked(c, data.subarray(1));
      await within(c.finish(), STEP_TIMEOUT_MS, 'finish');
      const closing = client.close('done');
      const got = await readAll(s, 'read while the peer closes');
      await within(closing, STEP_TIMEOUT_MS, 'close');
      t.equal(sha256(Buffer.concat([got])), sha256(data), 'all written+finished bytes arrived');
    });

    await t.test('connect to a port nobody listens on fails with UNREACHABLE or TIMEOUT', sub, async (t) => {
      const backend = makeBackend();
      const probe = await backend.listen({ host: '127.0.0.1', port: 0, identity: generateIdentity() });
      const deadPort = probe.address.port;
      await probe.close();
      const started = Date.now();
      let failure: unknown;
      try {
        const conn = await within(
          backend.connect({
            host: '127.0.0.1',
            port: deadPort,
            identity: generateIdentity(),
            idleTimeoutMs: DEAD_PORT_IDLE_TIMEOUT_MS,
          }),
          DEAD_PORT_DEADLINE_MS,
          'connect to a dead port',
        );
        await conn.close();
      } catch (err) {
        failure = err;
      }
      t.ok(
        isClawpeerError(failure, 'UNREACHABLE') || isClawpeerError(failure, 'TIMEOUT'),
        `fails with UNREACHABLE/TIMEOUT (got ${String(failure)}) after ${Date.now() - started} ms`,
      );
    });

    await t.test('connect and accept honour an aborted signal', sub, async (t) => {
      const backend = makeBackend();
      const { listener, client } = await makePair(t, backend);
      const ac = new AbortController();
      const pendingAccept = listener.accept({ signal: ac.signal });
      const pendingStream = client.acceptStream({ signal: ac.signal });
      ac.abort();
      await t.rejects(within(pendingAccept, STEP_TIMEOUT_MS, 'accept with aborted signal'), { code: 'ABORTED' });
      await t.rejects(within(pendingStream, STEP_TIMEOUT_MS, 'acceptStream with aborted signal'), { code: 'ABORTED' });
      await t.rejects(
        within(
          backend.connect({
            host: '127.0.0.1',
            port: listener.address.port,
            identity: generateIdentity(),
            signal: AbortSignal.abort(),
          }),
          STEP_TIMEOUT_MS,
          'connect with aborted signal',
        ),
        { code: 'ABORTED' },
      );
      // The listener still works after an aborted accept.
      const next = listener.accept();
      const again = await within(
        backend.connect({ host: '127.0.0.1', port: listener.address.port, identity: generateIdentity() }),
        STEP_TIMEOUT_MS,
        'connect after aborted accept',
      );
      t.teardown(() => closeQuietly(again));
      const srv = await within(next, STEP_TIMEOUT_MS, 'accept after aborted accept');
      t.not(srv, null, 'accept after an aborted accept gets the next connection');
      if (srv !== null) t.teardown(() => closeQuietly(srv));
    });

    await t.test('stats(): rttMs finite >= 0 and byte counters move after traffic', sub, async (t) => {
      const { client, server } = await makePair(t, makeBackend());
      const data = randomBytes(64 * 1024);
      const [c, s] = await openAccepted(client, server, data);
      await within(c.finish(), STEP_TIMEOUT_MS, 'finish');
      t.equal((await readAll(s)).length, data.length);
      const cs = client.stats();
      const ss = server.stats();
      t.ok(Number.isFinite(cs.rttMs) && cs.rttMs >= 0, `client rttMs ${cs.rttMs}`);
      t.ok(Number.isFinite(ss.rttMs) && ss.rttMs >= 0, `server rttMs ${ss.rttMs}`);
      t.ok(cs.bytesSent >= data.length, `client bytesSent ${cs.bytesSent} >= ${data.length}`);
      t.ok(ss.bytesReceived >= data.length, `server bytesReceived ${ss.bytesReceived} >= ${data.length}`);
    });

    await t.test('listener.close(): pending and later accept() return null', sub, async (t) => {
      const backend = makeBackend();
      const listener = await within(
        backend.listen({ host: '127.0.0.1', port: 0, identity: generateIdentity() }),
        STEP_TIMEOUT_MS,
        'listen',
      );
      const pending = listener.accept();
      await within(listener.close(), STEP_TIMEOUT_MS, 'listener close');
      t.equal(await within(pending, STEP_TIMEOUT_MS, 'pending accept'), null, 'pending accept -> null');
      t.equal(await within(listener.accept(), STEP_TIMEOUT_MS, 'later accept'), null, 'later accept -> null');
      await within(listener.close(), STEP_TIMEOUT_MS, 'second listener close');
      t.pass('listener close is idempotent');
    });
  });
}
