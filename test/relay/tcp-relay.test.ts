import { createHash, randomBytes } from 'node:crypto';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import t from 'tap';
import { startTcpRelay, TCP_RELAY_LIMITATION } from '../../src/relay/tcp-relay.js';

const LOOPBACK = '127.0.0.1';

/** A TCP echo: writes back what it reads, ends when the client ends. */
async function tcpEcho(): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.pipe(s);
  });
  await new Promise<void>((resolve) => server.listen(0, LOOPBACK, resolve));
  const a = server.address();
  if (a === null || typeof a !== 'object') throw new Error('no address');
  return {
    port: a.port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Sends `data`, half-closes, and collects everything until the peer ends. */
function roundTrip(port: number, data: Buffer): Promise<{ reply: Buffer; firstByteMs: number }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const t0 = performance.now();
    let firstByteMs = NaN;
    const s = net.connect(port, LOOPBACK, () => s.end(data));
    s.on('data', (c: Buffer) => {
      if (chunks.length === 0) firstByteMs = performance.now() - t0;
      chunks.push(c);
    });
    s.on('end', () => resolve({ reply: Buffer.concat(chunks), firstByteMs }));
    s.on('error', reject);
  });
}

t.test('delay: a small message comes back after about one RTT, half-close propagates', async (t) => {
  const echo = await tcpEcho();
  const relay = await startTcpRelay({
    listen: { host: LOOPBACK, port: 0 },
    target: { host: LOOPBACK, port: echo.port },
    spec: 'rtt=20ms',
  });
  try {
    const { reply, firstByteMs } = await roundTrip(relay.address.port, Buffer.from('hello'));
    t.equal(reply.toString(), 'hello');
    // connect (no delay: the relay accepts locally) + 20 ms round trip of the data. The floor
    // proves the delay; the ceiling only that it is not a multiple of it (a loaded machine
    // stalls event loops for hundreds of ms, so no tight bound here).
    t.ok(firstByteMs >= 15 && firstByteMs <= 2000, `first byte after ${firstByteMs.toFixed(1)} ms`);
    const s = relay.stats();
    t.equal(s.connectionsAccepted, 1);
    t.equal(s.limitation, TCP_RELAY_LIMITATION);
    t.equal(s.counters.toServer.bytesForwarded, 5);
    t.equal(s.counters.toClient.bytesForwarded, 5);
  } finally {
    await relay.close();
    await echo.close();
  }
});

t.test('rate with a small queue: 2 MiB arrive intact (the relay pauses reading, never drops)', async (t) => {
  const echo = await tcpEcho();
  const relay = await startTcpRelay({
    listen: { host: LOOPBACK, port: 0 },
    target: { host: LOOPBACK, port: echo.port },
    spec: 'rtt=2ms,jitter=1ms,rate=200mbit,queue=16KiB',
  });
  try {
    const data = randomBytes(2 << 20);
    const { reply } = await roundTrip(relay.address.port, data);
    t.equal(reply.length, data.length);
    t.equal(
      createHash('sha256').update(reply).digest('hex'),
      createHash('sha256').update(data).digest('hex'),
      'byte-exact, in order',
    );
    const s = relay.stats();
    t.ok(s.pauses > 0, `flow control engaged (${s.pauses} pauses)`);
    t.equal(s.counters.toServer.droppedQueue + s.counters.toServer.droppedOverflow, 0, 'nothing dropped');
  } finally {
    await relay.close();
    await echo.close();
  }
});

t.test('loss, reorder and dup are refused: a TCP relay cannot model them', async (t) => {
  for (const spec of ['rtt=50ms,loss=1%', 'reorder=1%', 'dup=1%']) {
    await t.rejects(startTcpRelay({ listen: { host: LOOPBACK, port: 0 }, target: { host: LOOPBACK, port: 9 }, spec }), {
      code: 'USAGE',
      message: /cannot model packet loss/,
    });
  }
  await t.rejects(
    startTcpRelay({ listen: { host: '0.0.0.0', port: 0 }, target: { host: LOOPBACK, port: 9 }, spec: 'none' }),
    { code: 'USAGE', message: /not loopback/ },
  );
});

t.test('close() frees the port and drops open connections', async (t) => {
  const echo = await tcpEcho();
  const relay = await startTcpRelay({
    listen: { host: LOOPBACK, port: 0 },
    target: { host: LOOPBACK, port: echo.port },
    spec: 'rtt=1000ms',
  });
  const port = relay.address.port;
  const s = net.connect(port, LOOPBACK);
  await new Promise<void>((resolve) => s.once('connect', () => resolve()));
  s.write('x');
  const closed = new Promise<void>((resolve) => s.once('close', () => resolve()));
  s.on('error', () => undefined);
  await relay.close();
  await closed;
  t.pass('client connection closed by the relay');
  const again = net.createServer();
  await new Promise<void>((resolve, reject) => {
    again.once('error', reject);
    again.listen(port, LOOPBACK, () => resolve());
  });
  t.pass(`port ${port} is free again`);
  await new Promise<void>((resolve) => again.close(() => resolve()));
  await echo.close();
});
