// Memory backend: the shared compliance suite in real time, then the link model on a virtual
// clock: exact latency, loss as whole RTOs, reordering across streams but never within one.
import t from 'tap';
import { generateIdentity } from '../../src/crypto/identity.js';
import { MemoryBackend, MemoryNetwork, type LinkConditions } from '../../src/transport/memory.js';
import { VirtualClock } from '../../src/transport/scheduler.js';
import type { Connection, DuplexStream } from '../../src/transport/types.js';
import { transportCompliance } from './compliance.js';

transportCompliance('memory', () => new MemoryBackend());

/** A connected pair on a virtual clock; time is advanced by the test only. */
async function virtualPair(
  link: Partial<LinkConditions>,
  seed = 1,
): Promise<{ clock: VirtualClock; client: Connection; server: Connection }> {
  const clock = new VirtualClock();
  const backend = new MemoryBackend({ network: new MemoryNetwork({ scheduler: clock, link, seed }) });
  const listener = await backend.listen({ host: '127.0.0.1', port: 0, identity: generateIdentity() });
  const accepted = listener.accept();
  const connecting = backend.connect({ host: '127.0.0.1', port: listener.address.port, identity: generateIdentity() });
  await clock.runUntilIdle();
  const server = await accepted;
  const client = await connecting;
  if (server === null) throw new Error('no server connection');
  await listener.close();
  return { clock, client, server };
}

/** Resolves with the virtual time at which `p` settled. */
function timeOf<T>(clock: VirtualClock, p: Promise<T>): Promise<{ at: number; value: T }> {
  return p.then((value) => ({ at: clock.now(), value }));
}

void t.test('virtual time: the handshake costs one RTT', async (t) => {
  const clock = new VirtualClock();
  const backend = new MemoryBackend({ network: new MemoryNetwork({ scheduler: clock, link: { latencyMs: 40 } }) });
  const listener = await backend.listen({ host: '127.0.0.1', port: 0, identity: generateIdentity() });
  const server = timeOf(clock, listener.accept());
  const client = timeOf(
    clock,
    backend.connect({ host: '127.0.0.1', port: listener.address.port, identity: generateIdentity() }),
  );
  await clock.runUntilIdle();
  t.equal((await server).at, 40, 'server sees the connection after one latency');
  t.equal((await client).at, 80, 'client is connected after one RTT');
  const nowhere = timeOf(
    clock,
    backend.connect({ host: '127.0.0.1', port: 1, identity: generateIdentity() }).catch((e: unknown) => e),
  );
  await clock.runUntilIdle();
  const failed = await nowhere;
  t.equal(failed.at, 160, 'a connect to nothing fails after one RTT');
  t.match(failed.value, { code: 'UNREACHABLE' });
});

void t.test('virtual time: N bytes with latency L arrive at exactly t = L', async (t) => {
  const L = 25;
  const { clock, client, server } = await virtualPair({ latencyMs: L });
  const start = clock.now();
  const s = await client.openStream();
  const data = new Uint8Array(100_000).fill(7);
  const written = timeOf(clock, s.write(data));
  await s.finish();
  let acceptedAt: number | undefined;
  const remote = server.acceptStream().then((r) => ((acceptedAt = clock.now()), r));
  await clock.advance(L - 1);
  t.equal(acceptedAt, undefined, 'nothing visible before t = L');
  await clock.advance(1);
  const r = await remote;
  if (r === null) throw new Error('no stream');
  t.equal(acceptedAt, start + L, 'the stream is visible at t = L');
  t.equal(clock.now() - start, L);
  t.equal((await written).at, start, 'the write resolved at once (within the window)');
  let got = 0;
  const reading = (async () => {
    for (;;) {
      const c = await r.read();
      if (c === null) return clock.now();
      got += c.length;
    }
  })();
  await clock.runUntilIdle();
  t.equal(got, data.length);
  t.equal((await reading) - start, L, 'all bytes and the FIN arrived at t = L');
  t.equal(client.stats().rttMs, 2 * L);
});

void t.test('virtual time: loss delays a segment by whole RTOs, never drops it', async (t) => {
  const L = 10;
  const RTO = 300;
  const { clock, client, server } = await virtualPair(
    { latencyMs: L, lossRate: 0.5, rtoMs: RTO, segmentBytes: 1000, streamWindowBytes: 1 << 20 },
    42,
  );
  const delays: number[] = [];
  const wrongBytes: number[] = [];
  for (let i = 0; i < 40; i++) {
    const start = clock.now();
    const s = await client.openStream();
    await s.write(Uint8Array.of(i));
    await s.finish();
    const accepting = timeOf(clock, server.acceptStream());
    await clock.runUntilIdle();
    const { at, value } = await accepting;
    delays.push(at - start);
    const b = await value?.read();
    if (b?.[0] !== i) wrongBytes.push(i);
  }
  t.same(wrongBytes, [], 'every stream carries its own byte');
  t.same(
    delays.filter((d) => (d - L) % RTO !== 0),
    [],
    `every delay is L + k * RTO (${delays.join(',')})`,
  );
  t.ok(
    delays.some((d) => d === L),
    'some segments get through first time',
  );
  t.ok(
    delays.some((d) => d >= L + RTO),
    'some are delayed by at least one RTO',
  );
});

void t.test('virtual time: streams reorder relative to each other, never within a stream', async (t) => {
  const { clock, client, server } = await virtualPair({ latencyMs: 20, reorderJitterMs: 50, segmentBytes: 100 }, 7);
  const STREAMS = 8;
  const BYTES = 2000;
  const opened: DuplexStream[] = [];
  for (let i = 0; i < STREAMS; i++) {
    const s = await client.openStream();
    opened.push(s);
    const payload = new Uint8Array(BYTES).map((_, j) => (j + i) & 0xff);
    await s.write(payload);
    await s.finish();
  }
  const acceptOrder: number[] = [];
  const received = new Map<number, Uint8Array[]>();
  const done = (async () => {
    for (let i = 0; i < STREAMS; i++) {
      const r = await server.acceptStream();
      if (r === null) throw new Error('no stream');
      acceptOrder.push(r.id);
      const parts: Uint8Array[] = [];
      received.set(r.id, parts);
      void (async () => {
        for (;;) {
          const c = await r.read(37);
          if (c === null) return;
          parts.push(c);
        }
      })();
    }
  })();
  await clock.runUntilIdle();
  await done;
  const openOrder = opened.map((s) => s.id);
  t.notSame(acceptOrder, openOrder, `streams arrived out of opening order: ${acceptOrder.join(',')}`);
  for (const [i, s] of opened.entries()) {
    const got = Buffer.concat(received.get(s.id) ?? []);
    const want = Buffer.from(new Uint8Array(BYTES).map((_, j) => (j + i) & 0xff));
    t.ok(got.equals(want), `stream ${s.id}: bytes in order`);
  }
});

void t.test('virtual time: a slow reader holds the writer to the stream window', async (t) => {
  const WINDOW = 64 * 1024;
  const L = 5;
  const { clock, client, server } = await virtualPair({
    latencyMs: L,
    streamWindowBytes: WINDOW,
    segmentBytes: 16 * 1024,
  });
  const s = await client.openStream();
  let accepted = 0;
  const writing = (async () => {
    for (let i = 0; i < 16; i++) {
      await s.write(new Uint8Array(16 * 1024));
      accepted += 16 * 1024;
    }
    await s.finish();
  })();
  const remote = server.acceptStream();
  await clock.advance(100);
  t.equal(accepted, WINDOW, 'writer stops at exactly one window while nobody reads');
  const r = await remote;
  if (r === null) throw new Error('no stream');
  let got = 0;
  const reading = (async () => {
    for (;;) {
      const c = await r.read();
      if (c === null) return;
      got += c.length;
    }
  })();
  await clock.runUntilIdle();
  await writing;
  await reading;
  t.equal(got, 16 * 16 * 1024, 'everything arrives once the reader reads');
});

void t.test('virtual time: close() travels behind data in flight', async (t) => {
  const { clock, client, server } = await virtualPair(
    { latencyMs: 30, lossRate: 0.3, rtoMs: 100, segmentBytes: 512 },
    3,
  );
  const s = await client.openStream();
  const data = new Uint8Array(50_000).map((_, i) => i & 0xff);
  await s.write(data);
  await s.finish();
  const closing = client.close('bye');
  const remote = server.acceptStream();
  await clock.runUntilIdle();
  await closing;
  const info = await server.closed;
  t.same(info, { local: false, reason: 'bye' });
  const r = await remote;
  if (r === null) throw new Error('stream not accepted before the close');
  const parts: Uint8Array[] = [];
  for (;;) {
    const c = await r.read();
    if (c === null) break;
    parts.push(c);
  }
  t.ok(Buffer.concat(parts).equals(Buffer.from(data)), 'all data readable after the close arrived');
});
