import { spawn } from 'node:child_process';
import { randomBytes, sign } from 'node:crypto';
import { connect as netConnect } from 'node:net';
import * as tls from 'node:tls';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import { generateIdentity, type Identity } from '../../src/crypto/identity.js';
import { createSelfSignedCertificate, derOid, derTlv, encodeTbsCertificate, toPem } from '../../src/crypto/x509.js';
import { isClawpeerError } from '../../src/errors.js';
import {
  FrameDecoder,
  FrameType,
  GoAwayCode,
  encodeFrame,
  encodeFrameHeader,
  type MuxFrame,
} from '../../src/transport/mux-codec.js';
import { INITIAL_WINDOW_BYTES } from '../../src/transport/mux-stream.js';
import { TLS_ALPN_PROTOCOL, tlsBackend } from '../../src/transport/tls.js';
import type { Connection, Listener } from '../../src/transport/types.js';
import { readAll, transportCompliance, within } from './compliance.js';

transportCompliance('tcp', () => tlsBackend);

const STEP_MS = 10_000;
/** Per-subtest deadline so a hang fails fast instead of at tap's file timeout (ms). */
const SUBTEST = { timeout: 30_000 };

function keyPem(identity: Identity): string {
  return identity.privateKeyObject.export({ format: 'pem', type: 'pkcs8' }).toString();
}

async function listen(
  t: { teardown(fn: () => unknown): void },
  options: { idleTimeoutMs?: number; keepAliveMs?: number; maxStreams?: number } = {},
): Promise<Listener> {
  const listener = await tlsBackend.listen({ host: '127.0.0.1', port: 0, identity: generateIdentity(), ...options });
  t.teardown(() => listener.close());
  return listener;
}

/** A hand-driven TLS client with a valid clawpeer certificate, for speaking raw (bad) mux frames. */
async function rawClient(
  port: number,
  options: { cert?: string; key?: string; alpn?: string[] } = {},
): Promise<tls.TLSSocket> {
  const identity = generateIdentity();
  const socket = tls.connect({
    host: '127.0.0.1',
    port,
    key: options.key ?? keyPem(identity),
    cert: options.cert ?? createSelfSignedCertificate(identity).pem,
    minVersion: 'TLSv1.3',
    ALPNProtocols: options.alpn ?? [TLS_ALPN_PROTOCOL],
    rejectUnauthorized: false,
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('secureConnect', resolve);
    socket.once('error', reject);
  });
  return socket;
}

/** Everything the raw socket receives until it closes, decoded as frames (DATA payloads dropped). */
function collectFrames(socket: tls.TLSSocket): Promise<MuxFrame[]> {
  return new Promise((resolve) => {
    const decoder = new FrameDecoder();
    const frames: MuxFrame[] = [];
    socket.on('data', (chunk: Buffer) => {
      decoder.push(chunk);
      for (let r = decoder.next(); r.kind !== 'need-more'; r = decoder.next())
        if (r.kind === 'frame') frames.push(r.frame);
    });
    socket.on('error', () => {});
    socket.on('close', () => resolve(frames));
  });
}

async function acceptOne(listener: Listener): Promise<Connection> {
  const conn = await within(listener.accept(), STEP_MS, 'accept');
  if (conn === null) throw new Error('accept returned null');
  return conn;
}

/** The listener still serves a proper client after whatever a test did to it. */
async function assertListenerHealthy(t: Test, listener: Listener): Promise<void> {
  const identity = generateIdentity();
  const accepted = acceptOne(listener);
  const client = await within(
    tlsBackend.connect({ host: '127.0.0.1', port: listener.address.port, identity }),
    STEP_MS,
    'connect',
  );
  const server = await accepted;
  t.same(
    Buffer.from(server.remotePublicKey),
    Buffer.from(identity.publicKey),
    'the listener still accepts a proper client (and it is that client)',
  );
  await client.close();
  await within(server.closed, STEP_MS, 'server closed');
}

t.test('garbage and plain-TCP probes do not hurt the listener', SUBTEST, async (t) => {
  const listener = await listen(t, { idleTimeoutMs: 2000 });
  for (const junk of [Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'), randomBytes(4096), Buffer.alloc(0)]) {
    const sock = netConnect(listener.address.port, '127.0.0.1');
    sock.on('error', () => {});
    await new Promise((r) => sock.once('connect', r));
    sock.end(junk);
    await within(new Promise((r) => sock.once('close', r)), STEP_MS, 'server drops the junk socket');
  }
  t.pass('the server closed each junk socket');
  await assertListenerHealthy(t, listener);
});

t.test(
  'an authenticated peer sending garbage frames loses its connection, with a GOAWAY saying why',
  SUBTEST,
  async (t) => {
    const listener = await listen(t);
    const accepted = acceptOne(listener);
    const raw = await rawClient(listener.address.port);
    const frames = collectFrames(raw);
    const server = await accepted;
    raw.write(Buffer.from('this is not a mux frame'));
    const info = await within(server.closed, STEP_MS, 'server closed');
    t.equal(info.local, false);
    t.match(info.reason ?? '', /unknown frame type 0x74/, `reason names the problem: ${info.reason}`);
    const goaway = (await within(frames, STEP_MS, 'raw socket closed')).find((f) => f.type === FrameType.GOAWAY);
    t.ok(
      goaway !== undefined && goaway.type === FrameType.GOAWAY && goaway.code === GoAwayCode.PROTOCOL_ERROR,
      'the peer got GOAWAY(PROTOCOL_ERROR)',
    );
    t.equal(await server.acceptStream(), null);
    await assertListenerHealthy(t, listener);
  },
);

t.test('an oversized DATA header is rejected before its payload arrives', SUBTEST, async (t) => {
  const listener = await listen(t);
  const accepted = acceptOne(listener);
  const raw = await rawClient(listener.address.port);
  const frames = collectFrames(raw);
  const server = await accepted;
  raw.write(concatParts(encodeFrame({ type: FrameType.OPEN, streamId: 1 })));
  raw.write(encodeFrameHeader(FrameType.DATA, 1, 0xffff_fff0)); // ~4 GiB announced, never sent
  const info = await within(server.closed, STEP_MS, 'server closed');
  t.match(info.reason ?? '', /exceeds the 262144-byte limit/, `reason: ${info.reason}`);
  await within(frames, STEP_MS, 'raw socket closed');
});

t.test('a peer that ignores flow control loses its connection', SUBTEST, async (t) => {
  const listener = await listen(t);
  const accepted = acceptOne(listener);
  const raw = await rawClient(listener.address.port);
  const frames = collectFrames(raw);
  const server = await accepted;
  raw.write(concatParts(encodeFrame({ type: FrameType.OPEN, streamId: 1 })));
  // 17 x 256 KiB = 4.25 MiB: more than the 4 MiB window the server grants, and nobody reads.
  const piece = new Uint8Array(INITIAL_WINDOW_BYTES);
  for (let i = 0; i < 17; i++)
    raw.write(concatParts(encodeFrame({ type: FrameType.DATA, streamId: 1, payload: piece })));
  const info = await within(server.closed, STEP_MS, 'server closed');
  t.match(info.reason ?? '', /flow control: stream 1 received/, `reason: ${info.reason}`);
  const received = await within(frames, STEP_MS, 'raw socket closed');
  t.ok(
    received.some(
      (f) =>
        f.type === FrameType.WINDOW_UPDATE &&
        f.streamId === 1 &&
        f.increment === 4 * 1024 * 1024 - INITIAL_WINDOW_BYTES,
    ),
    'the server had raised the window to 4 MiB right after OPEN',
  );
  t.ok(
    received.some((f) => f.type === FrameType.GOAWAY && f.code === GoAwayCode.FLOW_CONTROL_ERROR),
    'GOAWAY(FLOW_CONTROL_ERROR)',
  );
});

t.test('stream-id rules: wrong parity and never-opened ids are protocol errors', SUBTEST, async (t) => {
  const listener = await listen(t);
  for (const [what, bytes, reason] of [
    ['OPEN with the server parity', encodeFrame({ type: FrameType.OPEN, streamId: 2 }), /an id of our parity/],
    [
      'DATA on a never-opened stream',
      encodeFrame({ type: FrameType.DATA, streamId: 7, payload: Uint8Array.of(1) }),
      /never opened/,
    ],
  ] as const) {
    const accepted = acceptOne(listener);
    const raw = await rawClient(listener.address.port);
    void collectFrames(raw);
    const server = await accepted;
    raw.write(concatParts([...bytes]));
    const info = await within(server.closed, STEP_MS, `${what}: server closed`);
    t.match(info.reason ?? '', reason, `${what}: ${info.reason}`);
  }
});

t.test('a silent peer hits the idle timeout; pending reads reject with TIMEOUT', SUBTEST, async (t) => {
  const listener = await listen(t, { idleTimeoutMs: 300, keepAliveMs: 100 });
  const accepted = acceptOne(listener);
  const raw = await rawClient(listener.address.port);
  raw.pause(); // never reads, so never answers PINGs
  const server = await accepted;
  raw.write(
    concatParts([
      ...encodeFrame({ type: FrameType.OPEN, streamId: 1 }),
      ...encodeFrame({ type: FrameType.DATA, streamId: 1, payload: Uint8Array.of(1) }),
    ]),
  );
  const stream = await within(server.acceptStream(), STEP_MS, 'acceptStream');
  if (stream === null) throw new Error('no stream');
  t.same(await stream.read(), Uint8Array.of(1));
  const err = await stream.read().then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(isClawpeerError(err, 'TIMEOUT'), `pending read rejects with TIMEOUT (${String(err)})`);
  const info = await within(server.closed, STEP_MS, 'server closed');
  t.match(info.reason ?? '', /idle timeout 300 ms/);
  raw.destroy();
});

t.test('keep-alive PINGs hold an idle connection open and measure RTT', SUBTEST, async (t) => {
  const listener = await listen(t, { idleTimeoutMs: 300, keepAliveMs: 50 });
  const accepted = acceptOne(listener);
  const client = await tlsBackend.connect({
    host: '127.0.0.1',
    port: listener.address.port,
    identity: generateIdentity(),
    idleTimeoutMs: 300,
    keepAliveMs: 50,
  });
  const server = await accepted;
  let settled = false;
  void server.closed.then(() => (settled = true));
  await new Promise((r) => setTimeout(r, 1000)); // > 3 idle timeouts with no application traffic
  t.equal(settled, false, 'still open after 3 idle periods thanks to PING/PONG');
  t.ok(
    client.stats().rttMs > 0 && server.stats().rttMs > 0,
    `both sides measured an RTT (${client.stats().rttMs}, ${server.stats().rttMs} ms)`,
  );
  await client.close();
});

t.test(
  'peer certificate checks: no certificate, wrong ALPN, certificate not self-signed by its key',
  SUBTEST,
  async (t) => {
    const listener = await listen(t);

    // 1. No client certificate: the server destroys the socket after the handshake.
    const bare = tls.connect({
      host: '127.0.0.1',
      port: listener.address.port,
      ALPNProtocols: [TLS_ALPN_PROTOCOL],
      rejectUnauthorized: false,
    });
    bare.on('error', () => {});
    await within(new Promise((r) => bare.once('close', r)), STEP_MS, 'no-cert client dropped');

    // 2. Another ALPN: the handshake itself fails.
    await t.rejects(rawClient(listener.address.port, { alpn: ['h2'] }), 'a non-clawpeer ALPN fails the handshake');

    // 3. A certificate for key B signed by key A (TLS proves B, the self-signature does not hold).
    const a = generateIdentity();
    const b = generateIdentity();
    const forged = forgedCertificate(a, b);
    const sock = await rawClient(listener.address.port, { cert: forged, key: keyPem(b) });
    sock.on('error', () => {});
    await within(new Promise((r) => sock.once('close', r)), STEP_MS, 'forged-cert client dropped');

    // accept() is FIFO: the next accepted connection being the proper client means none of the
    // rejected ones was queued.
    await assertListenerHealthy(t, listener);
  },
);

t.test('connect rejects a server whose certificate is not self-signed by its key (AUTH_FAILED)', SUBTEST, async (t) => {
  const a = generateIdentity();
  const b = generateIdentity();
  const server = tls.createServer({
    key: keyPem(b),
    cert: forgedCertificate(a, b),
    minVersion: 'TLSv1.3',
    ALPNProtocols: [TLS_ALPN_PROTOCOL],
  });
  server.on('tlsClientError', () => {});
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => server.close());
  const port = (server.address() as { port: number }).port;
  const err = await tlsBackend.connect({ host: '127.0.0.1', port, identity: generateIdentity() }).then(
    (c) => c.close(),
    (e: unknown) => e,
  );
  t.ok(isClawpeerError(err, 'AUTH_FAILED'), `AUTH_FAILED (${String(err)})`);
  t.match(String(err), /not self-signed by the key it carries/);
});

t.test(
  'a stream the peer refuses (over its maxStreams) fails; openStream waits for our own limit',
  SUBTEST,
  async (t) => {
    const listener = await listen(t, { maxStreams: 1 });
    const accepted = acceptOne(listener);
    const client = await tlsBackend.connect({
      host: '127.0.0.1',
      port: listener.address.port,
      identity: generateIdentity(),
    });
    t.teardown(() => client.close());
    const server = await accepted;
    const first = await client.openStream();
    await first.write(Uint8Array.of(1));
    const second = await client.openStream(); // the client's own limit is the default (128)
    const err = await second.read().then(
      () => undefined,
      (e: unknown) => e,
    );
    t.match(String(err), /refused by the peer/, `refused: ${String(err)}`);
    const s1 = await server.acceptStream();
    t.ok(s1 !== null, 'the first stream is there');

    // Our own limit: with maxStreams 1 the server's second openStream waits until its first ends.
    const own = await server.openStream();
    let secondOpened = false;
    const opening = server.openStream().then((s) => {
      secondOpened = true;
      return s;
    });
    await new Promise((r) => setTimeout(r, 50));
    t.equal(secondOpened, false, 'second openStream waits');
    own.reset();
    const next = await within(opening, STEP_MS, 'openStream after the first ended');
    t.ok(next.id > own.id, 'then it opens a fresh id');
    next.reset();
  },
);

t.test('write() waits for window credit: a writer without a reader stops at the window', SUBTEST, async (t) => {
  const listener = await listen(t);
  const accepted = acceptOne(listener);
  const client = await tlsBackend.connect({
    host: '127.0.0.1',
    port: listener.address.port,
    identity: generateIdentity(),
  });
  t.teardown(() => client.close());
  const server = await accepted;
  const stream = await client.openStream();
  const window = 4 * 1024 * 1024;
  await within(stream.write(new Uint8Array(window)), STEP_MS, 'a full window is accepted');
  let extraDone = false;
  const extra = stream.write(Uint8Array.of(1)).then(() => (extraDone = true));
  await new Promise((r) => setTimeout(r, 100));
  t.equal(extraDone, false, 'one byte past the window waits');
  const s = await server.acceptStream();
  if (s === null) throw new Error('no stream');
  const finishing = stream.finish(); // queued behind the blocked write
  t.equal((await readAll(s)).length, window + 1, 'reading releases it');
  await within(extra, STEP_MS, 'blocked write');
  await within(finishing, STEP_MS, 'finish');
});

t.test('a process exits by itself after its listener and connections close', SUBTEST, async (t) => {
  const script = `
    const { tlsBackend } = await import(${JSON.stringify(new URL('../../src/transport/tls.js', import.meta.url).href)});
    const { generateIdentity } = await import(${JSON.stringify(new URL('../../src/crypto/identity.js', import.meta.url).href)});
    const l = await tlsBackend.listen({ host: '127.0.0.1', port: 0, identity: generateIdentity(), keepAliveMs: 100000, idleTimeoutMs: 300000 });
    const acc = l.accept();
    const c = await tlsBackend.connect({ host: '127.0.0.1', port: l.address.port, identity: generateIdentity(), keepAliveMs: 100000, idleTimeoutMs: 300000 });
    const s = await acc;
    const st = await c.openStream();
    await st.write(new Uint8Array(100000));
    await st.finish();
    const ss = await s.acceptStream();
    while ((await ss.read()) !== null);
    await c.close('bye');
    await s.closed;
    await l.close();
    process.stdout.write('done');
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
    cwd: fileURLToPath(new URL('.', import.meta.url)),
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const code = await within(
    new Promise((r) => child.once('exit', r)),
    20_000,
    'child process exit (a dangling timer or socket keeps it alive)',
  );
  t.equal(code, 0);
  t.equal(out, 'done');
});

function concatParts(parts: Uint8Array[]): Buffer {
  return Buffer.concat(parts);
}

/** A certificate that carries `subject`'s key but is signed by `signer`. */
function forgedCertificate(signer: Identity, subject: Identity): string {
  const tbs = Buffer.from(encodeTbsCertificate(signer));
  Buffer.from(subject.publicKey).copy(tbs, tbs.indexOf(Buffer.from(signer.publicKey)));
  const der = derTlv(
    0x30,
    tbs,
    derTlv(0x30, derOid('1.3.101.112')),
    derTlv(0x03, Uint8Array.of(0), sign(null, tbs, signer.privateKeyObject)),
  );
  return toPem(der);
}
