import t from 'tap';
import { ClawpeerError } from '../../src/errors.js';
import { identityFromSeed } from '../../src/crypto/identity.js';
import {
  clientHandshake,
  serverHandshake,
  serverHandshakeOrTake,
  type ControlHandshakeOptions,
} from '../../src/session/control-channel.js';
import { FrameDecoder, type Frame } from '../../src/protocol/frame-codec.js';
import { decodeControl, encodeControlFrame, type ControlMessage } from '../../src/protocol/messages.js';
import type { DuplexStream } from '../../src/transport/types.js';

const clientId = identityFromSeed(new Uint8Array(32).fill(1));
const serverId = identityFromSeed(new Uint8Array(32).fill(2));
const strangerId = identityFromSeed(new Uint8Array(32).fill(3));
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

/** One direction of an in-memory byte pipe: ordered chunks, FIN, reset. */
class Pipe {
  chunks: Uint8Array[] = [];
  fin = false;
  broken: Error | undefined;
  waiter: (() => void) | undefined;
  wake(): void {
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }
}

/** A connected pair of DuplexStreams (what memory.ts will provide; kept local to this test). */
function streamPair(): [DuplexStream, DuplexStream] {
  const ab = new Pipe();
  const ba = new Pipe();
  const end = (id: number, out: Pipe, inp: Pipe): DuplexStream => ({
    id,
    write: async (data) => {
      if (out.broken !== undefined) throw out.broken;
      if (out.fin) throw new ClawpeerError('CONNECTION_CLOSED', 'write after finish');
      out.chunks.push(data.slice());
      out.wake();
    },
    read: async (maxBytes = 65536) => {
      for (;;) {
        if (inp.broken !== undefined) throw inp.broken;
        const first = inp.chunks[0];
        if (first !== undefined) {
          if (first.length <= maxBytes) return inp.chunks.shift() ?? null;
          inp.chunks[0] = first.subarray(maxBytes);
          return first.subarray(0, maxBytes);
        }
        if (inp.fin) return null;
        await new Promise<void>((resolve) => (inp.waiter = resolve));
      }
    },
    finish: async () => {
      out.fin = true;
      out.wake();
    },
    reset: () => {
      const err = new ClawpeerError('CONNECTION_CLOSED', 'stream reset');
      out.broken = err;
      inp.broken = err;
      out.wake();
      inp.wake();
    },
  });
  return [end(0, ab, ba), end(0, ba, ab)];
}

const clientOptions = (extra: Partial<ControlHandshakeOptions> = {}): ControlHandshakeOptions => ({
  identity: clientId,
  expectedRemoteKey: serverId.publicKey,
  timeoutMs: 5000,
  ...extra,
});
const serverOptions = (extra: Partial<ControlHandshakeOptions> = {}): ControlHandshakeOptions => ({
  identity: serverId,
  expectedRemoteKey: clientId.publicKey,
  timeoutMs: 5000,
  ...extra,
});

/** Reads raw frames from a stream end (to play a misbehaving peer). */
async function readFrame(stream: DuplexStream, decoder: FrameDecoder): Promise<Frame | null> {
  for (;;) {
    const r = decoder.next();
    if (r.kind === 'frame') return r.frame;
    const bytes = await stream.read();
    if (bytes === null) return null;
    decoder.push(bytes);
  }
}

async function readMessage(stream: DuplexStream, decoder: FrameDecoder): Promise<ControlMessage | null> {
  const frame = await readFrame(stream, decoder);
  if (frame === null) return null;
  if (frame.type !== 'control') throw new Error(`expected CONTROL, got ${frame.type}`);
  return decodeControl(frame.body, { maxBytes: 1 << 20 });
}

t.test('handshake over a stream pair, then control messages both ways, then FIN', async (t) => {
  const [a, b] = streamPair();
  const [client, server] = await Promise.all([
    clientHandshake(a, clientOptions()),
    serverHandshake(b, serverOptions()),
  ]);
  t.equal(client.version, 1);
  t.same(client.caps, server.caps);
  t.equal(hex(client.keys.sendKey), hex(server.keys.receiveKey));
  t.equal(hex(client.keys.receiveKey), hex(server.keys.sendKey));
  t.equal(hex(client.transcriptHash), hex(server.transcriptHash));
  t.equal(hex(client.remotePublicKey), hex(serverId.publicKey));
  t.equal(hex(server.remotePublicKey), hex(clientId.publicKey));
  t.equal(client.channel.maxFrameBytes, client.caps.maxFrameBytes);

  await client.channel.send({ type: 'ping', seq: 1, sentTimeUs: 123_456 });
  t.same(await server.channel.receive(), { type: 'ping', seq: 1, sentTimeUs: 123_456 });
  await server.channel.send({ type: 'pong', seq: 1, echoedTimeUs: 123_456 });
  t.same(await client.channel.receive(), { type: 'pong', seq: 1, echoedTimeUs: 123_456 });
  await client.channel.close();
  t.equal(await server.channel.receive(), null, 'FIN reads as null');
  await t.rejects(client.channel.send({ type: 'ping', seq: 2, sentTimeUs: 0 }), { code: 'CONNECTION_CLOSED' });
  await t.rejects(client.channel.send({ type: 'finished', signature: new Uint8Array(64) }), TypeError);
});

t.test('sendAll: messages arrive in order from one write; with a malformed one, none is sent', async (t) => {
  const [plain, b] = streamPair();
  let writes = 0;
  const a: DuplexStream = { ...plain, write: (data) => ((writes += 1), plain.write(data)) };
  const [client, server] = await Promise.all([
    clientHandshake(a, clientOptions()),
    serverHandshake(b, serverOptions()),
  ]);
  const pings = [1, 2, 3].map((seq) => ({ type: 'ping' as const, seq, sentTimeUs: seq * 10 }));
  const before = writes;
  await client.channel.sendAll(pings);
  t.equal(writes - before, 1, 'three messages, one write');
  for (const p of pings) t.same(await server.channel.receive(), p, `ping ${p.seq} in order`);
  // The second message cannot be encoded (negative seq): the first is not sent either.
  const mid = writes;
  await t.rejects(
    client.channel.sendAll([
      { type: 'ping', seq: 4, sentTimeUs: 0 },
      { type: 'ping', seq: -1, sentTimeUs: 0 },
    ]),
    RangeError,
  );
  t.equal(writes, mid, 'nothing written');
  await client.channel.send({ type: 'ping', seq: 5, sentTimeUs: 0 });
  t.same(
    await server.channel.receive(),
    { type: 'ping', seq: 5, sentTimeUs: 0 },
    'the channel still works, and ping 4 never arrived',
  );
});

t.test('a message the client pipelines right after Finished reaches the server channel', async (t) => {
  const [a, b] = streamPair();
  const serverSide = serverHandshake(b, serverOptions());
  const client = await clientHandshake(a, clientOptions());
  await client.channel.send({ type: 'ping', seq: 9, sentTimeUs: 1 });
  const server = await serverSide;
  t.same(await server.channel.receive(), { type: 'ping', seq: 9, sentTimeUs: 1 });
});

t.test('a key the transport did not prove fails both sides with AUTH_FAILED', async (t) => {
  const [a, b] = streamPair();
  const results = await Promise.allSettled([
    clientHandshake(a, clientOptions()),
    serverHandshake(b, serverOptions({ expectedRemoteKey: strangerId.publicKey })),
  ]);
  t.match(results[1], { status: 'rejected', reason: { code: 'AUTH_FAILED', message: /Hello names node/ } });
  t.match(results[0], {
    status: 'rejected',
    reason: { code: 'AUTH_FAILED', wire: 'AUTH_FAILED', message: /^peer: Hello names node/ },
  });
});

t.test('version mismatch: the client learns both ranges from the server', async (t) => {
  const [a, b] = streamPair();
  const results = await Promise.allSettled([
    clientHandshake(a, clientOptions({ versions: { min: 7, max: 9 } })),
    serverHandshake(b, serverOptions()),
  ]);
  t.match(results[1], {
    status: 'rejected',
    reason: { code: 'VERSION_MISMATCH', message: 'peer speaks protocol 7..9, we speak 1..1' },
  });
  t.match(results[0], { status: 'rejected', reason: { code: 'VERSION_MISMATCH', message: /7\.\.9.*1\.\.1/ } });
});

t.test('a silent peer: TIMEOUT, and the peer is told why', async (t) => {
  const [a, b] = streamPair();
  await t.rejects(serverHandshake(b, serverOptions({ timeoutMs: 30 })), {
    code: 'TIMEOUT',
    message: /waiting for Hello/,
  });
  const decoder = new FrameDecoder();
  t.match(await readMessage(a, decoder), { type: 'error', code: 14 });
  t.equal(await readMessage(a, decoder), null, 'then the server finishes the stream');
});

t.test(
  'a first message other than Hello is offered to takeFirst: taken, the handshake ends with null; declined, refused as before',
  async (t) => {
    const request: ControlMessage = { type: 'pair-request', proof: new Uint8Array(32).fill(9), name: 'joiner' };
    const offered: ControlMessage[] = [];
    const [a, b] = streamPair();
    const taken = serverHandshakeOrTake(b, serverOptions(), async (m) => {
      offered.push(m);
      return true;
    });
    await a.write(encodeControlFrame(request));
    t.equal(await taken, null, 'taken: no session');
    t.match(offered, [{ type: 'pair-request', name: 'joiner' }]);

    const [c, d] = streamPair();
    const declined = serverHandshakeOrTake(d, serverOptions(), async () => false);
    await c.write(encodeControlFrame(request));
    await t.rejects(declined, { code: 'PROTOCOL', message: /expected Hello/ });

    // A Hello is never offered: the handshake runs.
    const [e, f] = streamPair();
    const never = (): Promise<boolean> => Promise.reject(new Error('a Hello was offered'));
    const [client, server] = await Promise.all([
      clientHandshake(e, clientOptions()),
      serverHandshakeOrTake(f, serverOptions(), never),
    ]);
    t.equal(hex(client.transcriptHash), hex(server?.transcriptHash ?? new Uint8Array()));
  },
);

t.test('abort: ABORTED, stream reset', async (t) => {
  const [a] = streamPair();
  const controller = new AbortController();
  const pending = clientHandshake(a, clientOptions({ signal: controller.signal }));
  controller.abort(new Error('user pressed ^C'));
  await t.rejects(pending, { code: 'ABORTED' });
  await t.rejects(a.read(), { code: 'CONNECTION_CLOSED' });
});

t.test('peer closes during the handshake: CONNECTION_CLOSED', async (t) => {
  const [a, b] = streamPair();
  await b.finish();
  await t.rejects(clientHandshake(a, clientOptions()), { code: 'CONNECTION_CLOSED', message: /during the handshake/ });
});

t.test('an oversized frame during the handshake is refused from its header', async (t) => {
  const [a, b] = streamPair();
  const pending = serverHandshake(b, serverOptions());
  await a.write(Uint8Array.of(0x01, 0x00, 0x10, 0x00, 0x00)); // CONTROL, 1 MiB announced, no body
  await t.rejects(pending, { code: 'FRAME_TOO_LARGE', message: /1048576 bytes exceeds the maximum of 65536/ });
  t.match(await readMessage(a, new FrameDecoder()), { type: 'error', code: 6 });
});

t.test('a truncated frame at FIN is a PROTOCOL error', async (t) => {
  const [a, b] = streamPair();
  const pending = serverHandshake(b, serverOptions());
  await a.write(Uint8Array.of(0x01, 0x00, 0x00, 0x00, 0x10, 0xaa));
  await a.finish();
  await t.rejects(pending, { code: 'PROTOCOL', message: /stream ended inside a frame/ });
});

t.test('after the handshake: a peer Error surfaces as its ClawpeerError', async (t) => {
  const [a, b] = streamPair();
  const [client, server] = await Promise.all([
    clientHandshake(a, clientOptions()),
    serverHandshake(b, serverOptions()),
  ]);
  await server.channel.sendError('SHARE_UNKNOWN', 'no share named "photos"');
  await t.rejects(client.channel.receive(), {
    code: 'SHARE_UNKNOWN',
    wire: 'SHARE_UNKNOWN',
    message: 'peer: no share named "photos"',
  });
  await t.rejects(client.channel.receive(), { code: 'SHARE_UNKNOWN' }, 'the channel stays failed');
});

t.test('after the handshake: garbage or a DATA frame is PROTOCOL, and the peer is told', async (t) => {
  const [a, b] = streamPair();
  const [client] = await Promise.all([clientHandshake(a, clientOptions()), serverHandshake(b, serverOptions())]);
  await b.write(Uint8Array.of(0x09, 0, 0, 0, 0));
  await t.rejects(client.channel.receive(), { code: 'PROTOCOL', message: /unknown frame type 9/ });
  t.match(await readMessage(b, new FrameDecoder()), { type: 'error', code: 5, message: /unknown frame type 9/ });

  const [c, d] = streamPair();
  const [client2] = await Promise.all([clientHandshake(c, clientOptions()), serverHandshake(d, serverOptions())]);
  await d.write(encodeControlFrame({ type: 'finished', signature: new Uint8Array(64) }));
  await t.rejects(client2.channel.receive(), { code: 'PROTOCOL', message: /unexpected finished after the handshake/ });
});

t.test('an aborted receive leaves the channel usable; concurrent receives are a bug', async (t) => {
  const [a, b] = streamPair();
  const [client, server] = await Promise.all([
    clientHandshake(a, clientOptions()),
    serverHandshake(b, serverOptions()),
  ]);
  const controller = new AbortController();
  const first = client.channel.receive({ signal: controller.signal });
  await t.rejects(client.channel.receive(), TypeError);
  controller.abort();
  await t.rejects(first, { code: 'ABORTED' });
  await server.channel.send({ type: 'ping', seq: 5, sentTimeUs: 6 });
  t.same(await client.channel.receive(), { type: 'ping', seq: 5, sentTimeUs: 6 });
});
