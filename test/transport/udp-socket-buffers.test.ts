// Buffers of a UDP socket this process did not create: found by port through /proc, set by a
// child process holding the same descriptor. And the quinn listener's socket gets the size its
// tuning asks for, which the binding alone leaves at net.core.rmem_default.
import dgram from 'node:dgram';
import { readFileSync } from 'node:fs';
import t from 'tap';
import { generateIdentity } from '../../src/crypto/identity.js';
import { QuinnBackend } from '../../src/transport/quinn.js';
import { findUdpSocketFd, setUdpSocketBuffers } from '../../src/transport/udp-socket-buffers.js';

const linux = process.platform === 'linux';
const netCore = (key: string): number => Number(readFileSync(`/proc/sys/net/core/${key}`, 'utf8').trim());
const TARGET = 1 << 20;
const TUNED = 2 << 20;
const noProc = linux ? false : 'needs /proc';
const clamped = (bytes: number): string | false =>
  noProc ||
  (netCore('rmem_max') < bytes || netCore('wmem_max') < bytes
    ? `net.core.{r,w}mem_max below ${bytes}: the kernel would clamp the request`
    : false);
const defaultsBig = (): string | false =>
  noProc || (netCore('rmem_default') >= TUNED ? `net.core.rmem_default is already ${netCore('rmem_default')}` : false);

async function boundSocket(recvBufferSize: number): Promise<dgram.Socket> {
  const socket = dgram.createSocket({ type: 'udp4', recvBufferSize, sendBufferSize: recvBufferSize });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return socket;
}

void t.test(
  'a socket found by its port gets new buffers from the child and keeps receiving',
  { skip: clamped(TARGET) },
  async (t) => {
    const target = TARGET;
    const socket = await boundSocket(64 << 10);
    t.teardown(() => socket.close());
    const before = socket.getRecvBufferSize();
    const fd = findUdpSocketFd(socket.address().port);
    if (fd === undefined) throw new Error('no descriptor found for a bound socket');
    const sizes = await setUdpSocketBuffers(fd, 4, target);
    t.ok(before < target, `started small (${before})`);
    t.equal(socket.getRecvBufferSize(), sizes.recv, 'the child changed this very socket (receive)');
    t.equal(socket.getSendBufferSize(), sizes.send, 'the child changed this very socket (send)');
    t.ok(sizes.recv >= target, `receive buffer now ${sizes.recv}`);

    const got = new Promise<string>((resolve) => socket.once('message', (m) => resolve(m.toString())));
    const sender = dgram.createSocket('udp4');
    t.teardown(() => sender.close());
    sender.send('after the child', socket.address().port, '127.0.0.1');
    t.equal(await got, 'after the child', 'the socket still receives: the child neither closed nor drained it');
  },
);

void t.test('no descriptor for a port nothing here is bound to', { skip: noProc }, async (t) => {
  const socket = await boundSocket(64 << 10);
  const port = socket.address().port;
  await new Promise<void>((resolve) => socket.close(resolve));
  t.equal(findUdpSocketFd(port), undefined);
});

void t.test('a bad descriptor is an error naming it, not a crash', { skip: noProc }, async (t) => {
  await t.rejects(setUdpSocketBuffers(0, 4, 1 << 20), /UDP socket fd 0/);
});

void t.test(
  'a quinn listener socket gets the tuned buffer size, not the kernel default',
  { skip: clamped(TUNED) || defaultsBig() },
  async (t) => {
    const tuned = TUNED;
    const rmemDefault = netCore('rmem_default');
    const listener = await new QuinnBackend({ udpBufferBytes: tuned }).listen({
      host: '127.0.0.1',
      port: 0,
      identity: generateIdentity(),
    });
    t.teardown(() => listener.close());
    const fd = findUdpSocketFd(listener.address.port);
    if (fd === undefined) throw new Error('no descriptor found for the listener socket');
    const sizes = await setUdpSocketBuffers(fd, 4, 0); // 0: read only
    t.ok(sizes.recv >= tuned, `receive buffer ${sizes.recv} >= ${tuned} (default ${rmemDefault})`);
    t.ok(sizes.send >= tuned, `send buffer ${sizes.send} >= ${tuned}`);
  },
);
