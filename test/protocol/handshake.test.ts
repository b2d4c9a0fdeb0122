import t from 'tap';
import { createHash, createPublicKey, diffieHellman, hkdfSync } from 'node:crypto';
import { DataOpener, DataSealer } from '../../src/protocol/aead.js';
import { identityFromSeed } from '../../src/crypto/identity.js';
import { ephemeralKeyPairFromPrivate } from '../../src/crypto/session-keys.js';
import { DEFAULT_CAPABILITIES, type Capabilities } from '../../src/protocol/capabilities.js';
import { encodeFrame, FrameDecoder, FRAME_HEADER_BYTES, type Frame } from '../../src/protocol/frame-codec.js';
import { Handshake, type HandshakeConfig } from '../../src/protocol/handshake.js';
import { decodeControl, decodeControlWithRaw, encodeControlFrame } from '../../src/protocol/messages.js';

const clientId = identityFromSeed(new Uint8Array(32).fill(1));
const serverId = identityFromSeed(new Uint8Array(32).fill(2));
const strangerId = identityFromSeed(new Uint8Array(32).fill(3));
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

function configs(overrides: { client?: Partial<HandshakeConfig>; server?: Partial<HandshakeConfig> } = {}): {
  client: HandshakeConfig;
  server: HandshakeConfig;
} {
  return {
    client: {
      identity: clientId,
      expectedRemoteKey: serverId.publicKey,
      caps: DEFAULT_CAPABILITIES,
      now: 0,
      timeoutMs: 5000,
      ...overrides.client,
    },
    server: {
      identity: serverId,
      expectedRemoteKey: clientId.publicKey,
      caps: DEFAULT_CAPABILITIES,
      now: 0,
      timeoutMs: 5000,
      ...overrides.server,
    },
  };
}

/** Frames `from` wants to send, decoded as the peer's reader would see them. */
function drain(from: Handshake): Frame[] {
  const decoder = new FrameDecoder();
  const frames: Frame[] = [];
  for (let bytes = from.pollTransmit(); bytes !== null; bytes = from.pollTransmit()) {
    decoder.push(bytes);
    for (let r = decoder.next(); r.kind === 'frame'; r = decoder.next()) frames.push(r.frame);
  }
  return frames;
}

function deliver(frames: Frame[], to: Handshake, now = 1): void {
  for (const frame of frames) to.handleFrame(frame, now);
}

/** Runs the exchange to its end; `tamper` may rewrite each frame's bytes in flight. */
function run(
  client: Handshake,
  server: Handshake,
  tamper?: (step: 'hello' | 'welcome' | 'finished', frame: Uint8Array) => Uint8Array,
): void {
  const steps = ['hello', 'welcome', 'finished'] as const;
  let sender = client;
  let receiver = server;
  for (const step of steps) {
    const decoder = new FrameDecoder();
    for (let bytes = sender.pollTransmit(); bytes !== null; bytes = sender.pollTransmit()) {
      decoder.push(tamper === undefined ? bytes : tamper(step, bytes.slice()));
    }
    for (let r = decoder.next(); r.kind === 'frame'; r = decoder.next()) receiver.handleFrame(r.frame, 1);
    [sender, receiver] = [receiver, sender];
  }
}

function flipByte(frame: Uint8Array, offsetFromEnd: number): Uint8Array {
  const i = frame.length - offsetFromEnd;
  frame[i] = (frame[i] ?? 0) ^ 0x01;
  return frame;
}

function bodyOf(frame: Frame): Uint8Array {
  if (frame.type !== 'control') throw new Error('expected CONTROL');
  return frame.body;
}

t.test('success: both sides agree on version, caps, transcript and keys', async (t) => {
  const { client: cc, server: sc } = configs({
    client: { caps: { ...DEFAULT_CAPABILITIES, aeadSuites: ['chacha20-poly1305', 'aes-256-gcm'] } },
  });
  const client = Handshake.client(cc);
  const server = Handshake.server(sc);
  t.equal(client.phase, 'await-welcome');
  deliver(drain(client), server);
  t.equal(server.phase, 'await-finished', 'the server waits for Finished before trusting the client');
  t.equal(server.result, undefined);
  deliver(drain(server), client);
  t.equal(client.phase, 'done');
  deliver(drain(client), server);
  t.equal(server.phase, 'done');
  const c = client.result;
  const s = server.result;
  if (c === undefined || s === undefined) throw new Error('no result');
  t.equal(c.version, 1);
  t.same(c.caps, s.caps);
  t.equal(c.caps.aeadSuite, 'chacha20-poly1305', "the client's preference wins");
  t.equal(hex(c.transcriptHash), hex(s.transcriptHash));
  t.equal(hex(c.keys.sendKey), hex(s.keys.receiveKey));
  t.equal(hex(c.keys.receiveKey), hex(s.keys.sendKey));
  t.not(hex(c.keys.sendKey), hex(c.keys.receiveKey));
  t.equal(hex(c.remotePublicKey), hex(serverId.publicKey));
  t.equal(hex(s.remotePublicKey), hex(clientId.publicKey));
  t.equal(client.pollTimeout(), null);
  t.equal(server.pollTimeout(), null);
  // The keys work: a frame sealed by the client opens on the server.
  const sealed = new DataSealer(c.keys.suite, c.keys.sendKey).seal(
    { streamId: 1, sequence: 0, chunkId: new Uint8Array(32), compressed: false, chunkBytes: 3 },
    Uint8Array.of(1, 2, 3),
  );
  const decoder = new FrameDecoder();
  decoder.push(sealed);
  const r = decoder.next();
  if (r.kind !== 'frame' || r.frame.type !== 'data') throw new Error('expected a data frame');
  t.same(
    new DataOpener(s.keys.suite, s.keys.receiveKey).open(r.frame, { streamId: 1, sequence: 0 }),
    Uint8Array.of(1, 2, 3),
  );
});

t.test('deterministic inputs give pinned transcript and keys (regression vector)', async (t) => {
  // The capabilities are pinned too (the defaults as they were when the vector was made): a new
  // negotiable feature changes the defaults, not the wire format.
  const caps = { ...DEFAULT_CAPABILITIES, features: ['sync', 'resume', 'history'] as const };
  const fixed = (byte: number): Partial<HandshakeConfig> => ({
    ephemeral: ephemeralKeyPairFromPrivate(new Uint8Array(32).fill(byte)),
    nonce: new Uint8Array(32).fill(byte + 1),
    caps,
  });
  const { client: cc, server: sc } = configs({ client: fixed(0x10), server: fixed(0x20) });
  const client = Handshake.client(cc);
  const server = Handshake.server(sc);
  const wire: string[] = [];
  run(client, server, (_step, frame) => {
    wire.push(hex(frame));
    return frame;
  });
  const c = client.result;
  if (c === undefined) throw new Error('no result');
  const digest = createHash('sha256').update(wire.join('|')).digest('hex');
  // Ed25519 signatures are deterministic, so the whole exchange is. If any of these change,
  // the wire format, transcript or key schedule changed: that needs a protocol version bump.
  t.equal(wire.length, 3);
  t.equal(digest, 'f005a1e92ef09a778dfa99c40dc9cff6f3885d9ca18ea674647d5b7a8562b569');
  t.equal(hex(c.transcriptHash), '360715aecf6fe073f987c8e2403d2d665384a60400f7d8f94b93aa6ca55fd038');
  t.equal(hex(c.keys.sendKey), '02b0a7e2dd5ee0299397d6845764e278c10ddf31f7329904047a505375cc69d9');

  // Recompute transcript and keys the long way from the wire bytes, as DESIGN.md states them.
  const inner = wire
    .slice(0, 2)
    .map((h) => decodeControlWithRaw(Buffer.from(h, 'hex').subarray(FRAME_HEADER_BYTES), { maxBytes: 4096 }).raw);
  const transcript = createHash('sha256').update('clawpeer v1 transcript\0');
  for (const part of inner) transcript.update(Uint8Array.of(0, 0, part.length >> 8, part.length & 0xff)).update(part);
  const th = new Uint8Array(transcript.digest());
  t.equal(hex(th), hex(c.transcriptHash));
  const shared = diffieHellman({
    privateKey: ephemeralKeyPairFromPrivate(new Uint8Array(32).fill(0x10)).privateKey,
    publicKey: createPublicKey({
      key: {
        kty: 'OKP',
        crv: 'X25519',
        x: Buffer.from(ephemeralKeyPairFromPrivate(new Uint8Array(32).fill(0x20)).publicKey).toString('base64url'),
      },
      format: 'jwk',
    }),
  });
  t.equal(hex(new Uint8Array(hkdfSync('sha256', shared, th, 'clawpeer v1 c2s', 32))), hex(c.keys.sendKey));
  t.equal(hex(new Uint8Array(hkdfSync('sha256', shared, th, 'clawpeer v1 s2c', 32))), hex(c.keys.receiveKey));
});

t.test('the server refuses a Hello from a key the transport did not prove', async (t) => {
  const { client: cc, server: sc } = configs({ server: { expectedRemoteKey: strangerId.publicKey } });
  const client = Handshake.client(cc);
  const server = Handshake.server(sc);
  deliver(drain(client), server);
  t.equal(server.phase, 'failed');
  t.match(server.error, {
    code: 'AUTH_FAILED',
    message: /Hello names node 12D3KooW\w+ but the transport authenticated 12D3KooW\w+/,
  });
  const toClient = drain(server);
  t.equal(toClient.length, 1, 'only an Error goes back, no Welcome');
  deliver(toClient, client);
  t.match(client.error, { code: 'AUTH_FAILED', wire: 'AUTH_FAILED', message: /^peer: Hello names node/ });
});

t.test('the client refuses a Welcome from the wrong server key', async (t) => {
  const { client: cc, server: sc } = configs({ client: { expectedRemoteKey: strangerId.publicKey } });
  const client = Handshake.client(cc);
  const server = Handshake.server(sc);
  run(client, server);
  t.match(client.error, { code: 'AUTH_FAILED', message: /Welcome names node/ });
  t.match(
    server.error,
    { code: 'AUTH_FAILED', message: /^peer: Welcome names node/ },
    "the server learns why from the client's Error",
  );
});

t.test('a Hello signed by another key fails verification', async (t) => {
  // The stranger claims the client's identity: right public key in the Hello, wrong signer.
  const forger = { ...strangerId, publicKey: clientId.publicKey };
  const { client: cc, server: sc } = configs({ client: { identity: forger } });
  const client = Handshake.client(cc);
  const server = Handshake.server(sc);
  deliver(drain(client), server);
  t.match(server.error, { code: 'AUTH_FAILED', message: /Hello signature of 12D3KooW\w+ does not verify/ });
});

t.test('tampering with any handshake message is detected', async (t) => {
  // Flip a byte near the end of each message (inside nonce/signature), and inside the caps.
  const cases: ['hello' | 'welcome' | 'finished', number, RegExp, 'client' | 'server'][] = [
    ['hello', 70, /Hello signature .* does not verify/, 'server'],
    ['welcome', 70, /Welcome signature .* does not verify/, 'client'],
    ['welcome', 3, /Welcome signature .* does not verify/, 'client'],
    ['finished', 3, /Finished signature .* does not verify/, 'server'],
  ];
  for (const [step, offset, message, victim] of cases) {
    const { client: cc, server: sc } = configs();
    const client = Handshake.client(cc);
    const server = Handshake.server(sc);
    run(client, server, (s, frame) => (s === step ? flipByte(frame, offset) : frame));
    const failed = victim === 'client' ? client : server;
    t.match(failed.error, { code: 'AUTH_FAILED', message }, `${step} byte -${offset}`);
  }
});

t.test('a Welcome whose caps were changed in flight fails the signature', async (t) => {
  const { client: cc, server: sc } = configs();
  const client = Handshake.client(cc);
  const server = Handshake.server(sc);
  run(client, server, (step, frame) => {
    if (step !== 'welcome') return frame;
    // max_window_chunks = 64 is encoded as "20 40"; make it 63.
    const at = Buffer.from(frame).indexOf(Buffer.from([0x20, 0x40]));
    frame[at + 1] = 0x3f;
    return frame;
  });
  t.match(client.error, { code: 'AUTH_FAILED', message: /Welcome signature/ });
});

t.test('version mismatch: the server says so first, both name both ranges', async (t) => {
  const { client: cc, server: sc } = configs({ client: { versions: { min: 7, max: 9 } } });
  const client = Handshake.client(cc);
  const server = Handshake.server(sc);
  deliver(drain(client), server);
  t.match(server.error, { code: 'VERSION_MISMATCH', message: 'peer speaks protocol 7..9, we speak 1..1' });
  const frames = drain(server);
  t.equal(frames.length, 1);
  const first = frames[0];
  if (first === undefined) throw new Error('no frame');
  t.same(decodeControl(bodyOf(first), { maxBytes: 1024 }), {
    type: 'error',
    code: 4,
    message: 'peer speaks protocol 7..9, we speak 1..1',
  });
  deliver(frames, client);
  t.match(client.error, {
    code: 'VERSION_MISMATCH',
    message: 'server speaks none of our protocol versions 7..9; it says: peer speaks protocol 7..9, we speak 1..1',
  });
  t.same(drain(client), [], 'no Error answers an Error');
});

t.test('capability mismatch is a PROTOCOL error told to the client', async (t) => {
  const chachaOnly: Capabilities = { ...DEFAULT_CAPABILITIES, aeadSuites: ['chacha20-poly1305'] };
  const gcmOnly: Capabilities = { ...DEFAULT_CAPABILITIES, aeadSuites: ['aes-256-gcm'] };
  const { client: cc, server: sc } = configs({ client: { caps: chachaOnly }, server: { caps: gcmOnly } });
  const client = Handshake.client(cc);
  const server = Handshake.server(sc);
  run(client, server);
  t.match(server.error, { code: 'PROTOCOL', message: /no AEAD suite in common/ });
  t.match(client.error, { code: 'PROTOCOL', message: /^peer: no AEAD suite in common/ });
});

t.test('timeout: reported deadline, no-op before it, TIMEOUT and an Error at it', async (t) => {
  const { client: cc, server: sc } = configs({
    client: { now: 1000, timeoutMs: 250 },
    server: { now: 1000, timeoutMs: 250 },
  });
  const client = Handshake.client(cc);
  const server = Handshake.server(sc);
  drain(client); // the Hello is lost
  t.equal(client.pollTimeout(), 1250);
  t.equal(server.pollTimeout(), 1250);
  client.handleTimeout(1249);
  t.equal(client.phase, 'await-welcome');
  client.handleTimeout(1250);
  t.match(client.error, { code: 'TIMEOUT', message: 'handshake timed out after 250 ms waiting for Welcome' });
  t.equal(client.pollTimeout(), null);
  const sent = drain(client);
  t.equal(sent.length, 1);
  const first = sent[0];
  if (first === undefined) throw new Error('no frame');
  t.match(decodeControl(bodyOf(first), { maxBytes: 1024 }), { type: 'error', code: 14 });
  server.handleTimeout(2000);
  t.match(server.error, { code: 'TIMEOUT', message: /waiting for Hello/ });
});

t.test('a frame arriving after the deadline counts as a timeout', async (t) => {
  const { client: cc, server: sc } = configs({ server: { now: 0, timeoutMs: 100 } });
  const client = Handshake.client(cc);
  const server = Handshake.server(sc);
  deliver(drain(client), server, 100);
  t.match(server.error, { code: 'TIMEOUT' });
});

t.test('out-of-order and non-control frames are PROTOCOL errors', async (t) => {
  const { client: cc, server: sc } = configs();
  const server = Handshake.server(sc);
  server.handleFrame(
    { type: 'control', body: encodeControlFrame({ type: 'ping', seq: 1, sentTimeUs: 2 }).subarray(FRAME_HEADER_BYTES) },
    1,
  );
  t.match(server.error, { code: 'PROTOCOL', message: 'expected Hello during the handshake, got ping' });

  const server2 = Handshake.server(sc);
  server2.handleFrame({ type: 'ack', body: new Uint8Array(4) }, 1);
  t.match(server2.error, { code: 'PROTOCOL', message: /expected a CONTROL frame during the handshake, got ack/ });

  const client = Handshake.client(cc);
  const hello = drain(client);
  client.handleFrame(hello[0] ?? { type: 'ack', body: new Uint8Array(0) }, 1); // its own Hello reflected back
  t.match(client.error, { code: 'PROTOCOL', message: 'expected Welcome during the handshake, got hello' });

  const server3 = Handshake.server(sc);
  server3.handleFrame(
    { type: 'control', body: encodeFrame('control', Uint8Array.of(0x7a, 0x00)).subarray(FRAME_HEADER_BYTES) },
    1,
  );
  t.match(server3.error, { code: 'PROTOCOL', message: /unknown control message/ });
});

t.test('a peer Error during the handshake surfaces as its ClawpeerError', async (t) => {
  const { client: cc } = configs();
  const client = Handshake.client(cc);
  const err = encodeControlFrame({ type: 'error', code: 2, message: 'you are not paired with me' });
  client.handleFrame({ type: 'control', body: err.subarray(FRAME_HEADER_BYTES) }, 1);
  t.match(client.error, { code: 'PEER_NOT_PAIRED', wire: 'NOT_PAIRED', message: 'peer: you are not paired with me' });
});

t.test('unusable local capabilities are a CONFIG_INVALID error at construction', async (t) => {
  const { client: cc } = configs({ client: { caps: { ...DEFAULT_CAPABILITIES, maxStreams: 0 } } });
  t.throws(() => Handshake.client(cc), { code: 'CONFIG_INVALID', message: /local capabilities: maxStreams 0/ });
});
