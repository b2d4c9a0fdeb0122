// Real sockets on 127.0.0.1, short. Structure, not timing precision (that is bench/relay-accuracy.ts).
import { spawn } from 'node:child_process';
import dgram from 'node:dgram';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { isClawpeerError } from '../../src/errors.js';
import { startUdpEcho } from '../../src/relay/accuracy.js';
import { startUdpRelayWorker } from '../../src/relay/relay-worker.js';
import { isLoopbackHost, startUdpRelay } from '../../src/relay/udp-relay.js';

const LOOPBACK = '127.0.0.1';

async function client(): Promise<dgram.Socket> {
  const s = dgram.createSocket('udp4');
  await new Promise<void>((resolve) => s.bind(0, LOOPBACK, resolve));
  return s;
}

const closeSocket = (s: dgram.Socket): Promise<void> => new Promise((resolve) => s.close(() => resolve()));

/** An echo probe packet (accuracy.ts format: kind 1 = echo). */
function echoProbe(seq: number, fill = 0): Buffer {
  const b = Buffer.alloc(32, fill);
  b[0] = 1;
  b[1] = 0;
  b.writeUInt32BE(seq, 2);
  return b;
}

/** Waits for the next datagram on `s`, or undefined after `ms`. */
function nextMessage(s: dgram.Socket, ms: number): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      s.off('message', on);
      resolve(undefined);
    }, ms);
    const on = (msg: Buffer): void => {
      clearTimeout(timer);
      s.off('message', on);
      resolve(msg);
    };
    s.on('message', on);
  });
}

t.test('rtt=20ms: a UDP echo through the relay takes about 20 ms', async (t) => {
  const echo = await startUdpEcho();
  const relay = await startUdpRelay({ listen: { host: LOOPBACK, port: 0 }, target: echo.address, spec: 'rtt=20ms' });
  const c = await client();
  try {
    t.equal(relay.address.host, LOOPBACK);
    t.ok(relay.address.port > 0, 'a real port was picked');
    const rtts: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      c.send(echoProbe(i), relay.address.port, LOOPBACK);
      const reply = await nextMessage(c, 1000);
      t.ok(reply !== undefined && reply.readUInt32BE(2) === i, `probe ${i} echoed`);
      rtts.push(performance.now() - t0);
    }
    const median = [...rtts].sort((a, b) => a - b)[2] ?? NaN;
    t.ok(median >= 15 && median <= 40, `median RTT ${median.toFixed(2)} ms is about 20 ms`);
    const s = relay.stats();
    t.equal(s.spec, 'rtt=20ms');
    t.equal(s.counters.toServer.forwarded, 5);
    t.equal(s.counters.toClient.forwarded, 5);
    t.equal(s.flowsOpened, 1);
  } finally {
    await closeSocket(c);
    await relay.close();
    await echo.close();
  }
});

t.test('loss=100% forwards nothing', async (t) => {
  const echo = await startUdpEcho();
  const relay = await startUdpRelay({ listen: { host: LOOPBACK, port: 0 }, target: echo.address, spec: 'loss=100%' });
  const c = await client();
  try {
    let got = 0;
    c.on('message', () => got++);
    for (let i = 0; i < 20; i++) c.send(echoProbe(i), relay.address.port, LOOPBACK);
    await sleep(100);
    t.equal(got, 0);
    const s = relay.stats().counters.toServer;
    t.equal(s.received, 20);
    t.equal(s.droppedLoss, 20);
    t.equal(s.forwarded, 0);
  } finally {
    await closeSocket(c);
    await relay.close();
    await echo.close();
  }
});

t.test(
  'per-client flows: the server sees one source port per client; replies go back to their own client',
  async (t) => {
    const server = dgram.createSocket('udp4');
    const sources = new Set<number>();
    server.on('message', (msg, rinfo) => {
      sources.add(rinfo.port);
      server.send(msg, rinfo.port, rinfo.address);
    });
    await new Promise<void>((resolve) => server.bind(0, LOOPBACK, resolve));
    const relay = await startUdpRelay({
      listen: { host: LOOPBACK, port: 0 },
      target: { host: LOOPBACK, port: server.address().port },
      spec: 'rtt=2ms',
    });
    const a = await client();
    const b = await client();
    try {
      const fromA: number[] = [];
      const fromB: number[] = [];
      a.on('message', (m) => fromA.push(m[10] ?? -1));
      b.on('message', (m) => fromB.push(m[10] ?? -1));
      for (let i = 0; i < 5; i++) {
        a.send(echoProbe(i, 0xaa), relay.address.port, LOOPBACK);
        b.send(echoProbe(i, 0xbb), relay.address.port, LOOPBACK);
      }
      const deadline = performance.now() + 2000;
      while ((fromA.length < 5 || fromB.length < 5) && performance.now() < deadline) await sleep(5);
      t.same(fromA, [0xaa, 0xaa, 0xaa, 0xaa, 0xaa], 'A gets only its own replies');
      t.same(fromB, [0xbb, 0xbb, 0xbb, 0xbb, 0xbb], 'B gets only its own replies');
      t.equal(sources.size, 2, 'two distinct flows at the server');
      t.notOk(sources.has(relay.address.port), 'not the relay listen port');
      t.equal(relay.stats().flows, 2);
    } finally {
      await Promise.all([closeSocket(a), closeSocket(b)]);
      await relay.close();
      await closeSocket(server);
    }
  },
);

t.test('maxFlows: packets from clients beyond the cap are dropped and counted', async (t) => {
  const echo = await startUdpEcho();
  const relay = await startUdpRelay({
    listen: { host: LOOPBACK, port: 0 },
    target: echo.address,
    spec: 'none',
    maxFlows: 1,
  });
  const a = await client();
  const b = await client();
  try {
    a.send(echoProbe(1), relay.address.port, LOOPBACK);
    t.ok(await nextMessage(a, 1000), 'first client served');
    b.send(echoProbe(2), relay.address.port, LOOPBACK);
    t.equal(await nextMessage(b, 100), undefined, 'second client dropped');
    t.equal(relay.stats().flowsRejected, 1);
  } finally {
    await Promise.all([closeSocket(a), closeSocket(b)]);
    await relay.close();
    await echo.close();
  }
});

t.test('close() frees the port, is idempotent, and drops packets in flight', async (t) => {
  const echo = await startUdpEcho();
  const relay = await startUdpRelay({ listen: { host: LOOPBACK, port: 0 }, target: echo.address, spec: 'rtt=200ms' });
  const port = relay.address.port;
  const c = await client();
  c.send(echoProbe(1), port, LOOPBACK);
  await sleep(20);
  await Promise.all([relay.close(), relay.close()]);
  const again = dgram.createSocket('udp4');
  await new Promise<void>((resolve, reject) => {
    again.once('error', reject);
    again.bind(port, LOOPBACK, () => resolve());
  });
  t.pass(`port ${port} is free again`);
  await closeSocket(again);
  await closeSocket(c);
  await echo.close();
});

t.test('a process with a closed relay exits on its own (no handle left behind)', async (t) => {
  const udpRelay = fileURLToPath(new URL('../../src/relay/udp-relay.js', import.meta.url));
  const script = `
    import dgram from 'node:dgram';
    import { startUdpRelay } from ${JSON.stringify(udpRelay)};
    const target = dgram.createSocket('udp4');
    await new Promise((r) => target.bind(0, '127.0.0.1', r));
    const relay = await startUdpRelay({ listen: { host: '127.0.0.1', port: 0 }, target: { host: '127.0.0.1', port: target.address().port }, spec: 'rtt=500ms' });
    const c = dgram.createSocket('udp4');
    c.send(Buffer.alloc(8), relay.address.port, '127.0.0.1', async () => {
      await new Promise((r) => setTimeout(r, 20));
      await relay.close();
      c.close();
      target.close();
    });`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const started = performance.now();
  const code = await new Promise<number | null>((resolve) => {
    const kill = setTimeout(() => child.kill(), 10_000);
    child.on('exit', (c) => {
      clearTimeout(kill);
      resolve(c);
    });
  });
  t.equal(code, 0, `exited by itself ${stderr}`);
  t.ok(performance.now() - started < 5000, 'exited without being killed');
});

t.test('only loopback by default; bad addresses and busy ports are clear errors', async (t) => {
  t.ok(
    isLoopbackHost('127.0.0.1') &&
      isLoopbackHost('127.1.2.3') &&
      isLoopbackHost('::1') &&
      isLoopbackHost('localhost') &&
      isLoopbackHost('::ffff:127.0.0.1'),
  );
  t.notOk(
    isLoopbackHost('0.0.0.0') || isLoopbackHost('10.0.0.1') || isLoopbackHost('::') || isLoopbackHost('example.com'),
  );
  await t.rejects(
    startUdpRelay({ listen: { host: '0.0.0.0', port: 0 }, target: { host: LOOPBACK, port: 9 }, spec: 'none' }),
    { code: 'USAGE', message: /listen address 0\.0\.0\.0 is not loopback/ },
  );
  await t.rejects(
    startUdpRelay({ listen: { host: LOOPBACK, port: 0 }, target: { host: '192.0.2.1', port: 9 }, spec: 'none' }),
    { code: 'USAGE', message: /target address 192\.0\.2\.1 is not loopback/ },
  );
  await t.rejects(
    startUdpRelay({ listen: { host: LOOPBACK, port: 0 }, target: { host: LOOPBACK, port: 0 }, spec: 'none' }),
    { code: 'USAGE', message: /target port 0/ },
  );
  await t.rejects(
    startUdpRelay({ listen: { host: LOOPBACK, port: 0 }, target: { host: LOOPBACK, port: 9 }, spec: 'rtt=5' }),
    { code: 'USAGE', message: /rtt=5: expected a time/ },
  );
  const busy = await client();
  try {
    const err = await startUdpRelay({
      listen: { host: LOOPBACK, port: busy.address().port },
      target: { host: LOOPBACK, port: 9 },
      spec: 'none',
    }).catch((e: unknown) => e);
    t.ok(isClawpeerError(err, 'ADDRESS_IN_USE'), `busy port: ${String(err)}`);
  } finally {
    await closeSocket(busy);
  }
});

t.test('the relay runs on a worker thread with the same behaviour', async (t) => {
  const echo = await startUdpEcho();
  const relay = await startUdpRelayWorker({
    listen: { host: LOOPBACK, port: 0 },
    target: echo.address,
    spec: 'rtt=10ms',
  });
  const c = await client();
  try {
    const t0 = performance.now();
    c.send(echoProbe(7), relay.address.port, LOOPBACK);
    const reply = await nextMessage(c, 2000);
    const rtt = performance.now() - t0;
    t.equal(reply?.readUInt32BE(2), 7, 'echoed through the worker');
    t.ok(rtt >= 8, `took the configured delay (${rtt.toFixed(1)} ms)`);
    const s = await relay.stats();
    t.equal(s.counters.toServer.forwarded, 1);
    t.ok(s.eventLoop.activeMs >= 0 && s.eventLoop.utilization >= 0);
    await t.rejects(startUdpRelayWorker({ listen: { host: '0.0.0.0', port: 0 }, target: echo.address, spec: 'none' }), {
      code: 'USAGE',
    });
  } finally {
    await closeSocket(c);
    await relay.close();
    await echo.close();
  }
});
