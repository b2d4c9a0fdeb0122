// Mutual pinning under attack (CI). A real CLI listener, and adversarial clients built in
// process from the node's own parts (dialer, PeerSession, frame codec, DataSealer), so every
// frame they send is legitimately sealed with the session's keys:
// - an unpaired key over the TLS/TCP fallback is refused (QUIC: test/e2e/listen-ping.test.ts);
// - a paired peer replaying, reordering, relabelling or moving captured DATA frames has its
//   session closed with DECRYPT_FAILED, nothing is published, and the listener serves others;
// - a peer that opens thousands of streams gets at most the stream limit;
// - stalled handshakes, stalled data streams and stalled transfers are freed by timeouts (on an
//   in-process listener with short timeouts, so the stream limit and the idle timeout can be set
//   together; the CLI's timeout and connection-cap flags are covered by listener-limits.test.ts).
// After each attack the listener still answers a legitimate ping.
import t, { type Test } from 'tap';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { DEFAULT_CONFIG, resolveConfig, type NodeConfig } from '../../src/home/config.js';
import { dialPeer } from '../../src/session/dialer.js';
import { expectFrame, FrameStream } from '../../src/session/frame-stream.js';
import { loadIdentity } from '../../src/home/identity-store.js';
import { PeerStore } from '../../src/home/peer-store.js';
import { resolvePeer } from '../../src/home/peer-resolve.js';
import { pingPeer } from '../../src/session/ping.js';
import { NodeServer } from '../../src/listener/server.js';
import type { PeerSession } from '../../src/session/session.js';
import { serveSession } from '../../src/listener/dispatch.js';
import { sessionChunking } from '../../src/exchange/transfer-control.js';
import { expectMessage, manifestMessages } from '../../src/exchange/transfer-control.js';
import { scanSource, type TransferSource } from '../../src/exchange/transfer-source.js';
import { chunkIdAt } from '../../src/transfer/chunk-order.js';
import { zstdCodec } from '../../src/session/chunk-compression.js';
import { withTimeout } from '../../src/support/timeouts.js';
import { encodeControlFrame } from '../../src/protocol/messages.js';
import { decodeAckBody } from '../../src/protocol/ack-codec.js';
import { FRAME_HEADER_BYTES } from '../../src/protocol/frame-codec.js';
import { blake3 } from '../../src/chunking/blake3.js';
import { silentLogger } from '../../src/logger.js';
import { backendByName } from '../../src/transport/backends.js';
import type { Connection, DuplexStream } from '../../src/transport/types.js';
import { newHome, runCli, seededBytes, sleep, startRig } from './fault-harness.js';

const rig = await startRig('sec');
t.teardown(() => rig.close());
const identityB = await loadIdentity(path.join(rig.b.home, 'identity.key'));
const peerStoreB = new PeerStore(path.join(rig.b.home, 'peers.json'));

async function dial(port: number, config: NodeConfig = resolveConfig({ transport: 'quic' })): Promise<PeerSession> {
  const peer = await resolvePeer(peerStoreB, 'alice', `127.0.0.1:${port}`);
  return dialPeer({ identity: identityB, peer, config, log: silentLogger });
}

/** A legitimate in-process ping (one fresh connection) against `port`. */
async function legitPing(t: Test, port: number, what: string): Promise<void> {
  const session = await dial(port);
  try {
    let pongs = 0;
    for await (const p of pingPeer(session, { count: 1, intervalMs: 0, timeoutMs: 10_000 })) if (p.seq === 1) pongs++;
    t.equal(pongs, 1, `the listener still answers a ping ${what}`);
  } finally {
    await session.close().catch(() => undefined);
  }
}

/** Settles with whatever the listener says next on the control channel (an Error rejects). */
function nextControl(session: PeerSession, ms = 20_000): Promise<unknown> {
  return withTimeout(session.control.receive(), ms, "the listener's answer").then(
    (m) => m,
    (e: unknown) => e,
  );
}

t.test('an unpaired key is refused over the TCP fallback, and the listener keeps serving', async (t) => {
  const c = await newHome('sec-c');
  await new PeerStore(path.join(c.home, 'peers.json')).add(rig.a.id, 'alice', `127.0.0.1:${rig.listener.port}`);
  const r = await runCli(['--home', c.home, 'ping', 'alice', '--count', '1', '--transport', 'tcp']);
  t.equal(r.code, 3, r.stderr);
  t.match(r.stderr, new RegExp(`node ${c.id} is not paired with ${rig.a.id}`));
  t.match(rig.listener.stderr(), new RegExp(`rejected unpaired peer .*id=${c.id}.*transport=tcp`));
  const ok = await rig.cli(['ping', 'alice', '--count', '1', '--transport', 'tcp']);
  t.equal(ok.code, 0, 'a paired peer still gets in over TCP');
});

// ---------------------------------------------------------------------------------------------
// Replayed and reordered DATA frames

const VICTIM_BYTES = 2 << 20;

interface DataPlane {
  readonly session: PeerSession;
  readonly source: TransferSource;
  readonly transferId: number;
  readonly name: string;
}

/** A legitimate push up to the Want: transfer-request, manifest, want (every chunk lacking). */
async function pushUpToWant(name: string, config?: NodeConfig): Promise<DataPlane> {
  const dir = path.join(rig.work, 'adversary', name);
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, 'victim.bin'), seededBytes(name.length * 7919, VICTIM_BYTES)); // several chunks at the negotiated sizes
  const session = await dial(rig.listener.port, config);
  const source = await scanSource(dir, { chunking: sessionChunking(session), log: silentLogger });
  const transferId = session.allocateTransferId();
  await session.control.send({
    type: 'transfer-request',
    transferId,
    direction: 'push',
    share: 'inbox',
    path: '',
    force: false,
    streams: 2,
    window: 8,
  });
  await expectMessage(session, 'transfer-accept', transferId, 10_000);
  await session.control.sendAll(manifestMessages(session, transferId, source.entries));
  await expectMessage(session, 'want', transferId, 30_000);
  return { session, source, transferId, name };
}

/** Frame `i` of the file sealed for (streamId, sequence), as the real sender would build it. */
function sealChunk(p: DataPlane, i: number, streamId: number, sequence: number, early = false): Uint8Array {
  const entryIndex = p.source.entries.findIndex((e) => e.kind === 'file');
  const entry = p.source.entries[entryIndex];
  const file = p.source.files.get(entryIndex);
  const ref = file?.manifest.chunks[i];
  if (entry === undefined || file === undefined || ref === undefined) throw new TypeError(`no chunk ${i}`);
  const bytes = seededBytes(p.name.length * 7919, VICTIM_BYTES).subarray(ref.offset, ref.offset + ref.length);
  return p.session.sealer.seal(
    { streamId, sequence, chunkId: chunkIdAt(entry, i), compressed: false, early, chunkBytes: ref.length },
    bytes,
  );
}

async function openDataStream(p: DataPlane): Promise<{ raw: DuplexStream; frames: FrameStream; streamId: number }> {
  const raw = await p.session.connection.openStream();
  const streamId = p.session.allocateDataStreamId();
  const frames = new FrameStream(raw, p.session.caps.maxFrameBytes, 10_000, `adversary stream ${streamId}`);
  await frames.write(encodeControlFrame({ type: 'data-open', transferId: p.transferId, streamId }));
  return { raw, frames, streamId };
}

async function expectAck(frames: FrameStream, seq: number): Promise<void> {
  const ack = decodeAckBody(expectFrame(await frames.next(), 'ack', 'adversary').body);
  if (ack.ackedThroughSeq !== seq) throw new Error(`ack ${ack.ackedThroughSeq}, expected ${seq}`);
}

/** The session must end with the listener's DECRYPT_FAILED, nothing published, others served. */
async function expectRefused(t: Test, p: DataPlane, pattern: RegExp): Promise<void> {
  const answer = await nextControl(p.session);
  t.ok(answer instanceof Error, `the listener reports an error on the control channel (${String(answer)})`);
  t.match(String(answer), pattern);
  const closed = await withTimeout(p.session.connection.closed, 15_000, 'the listener closing the session').then(
    () => true,
    () => false,
  );
  t.ok(closed, 'the listener closed that session');
  const published = await readdir(path.join(rig.share, p.name)).catch(() => [] as string[]);
  t.notOk(published.includes('victim.bin'), 'nothing was published at the final path');
  await p.session.connection.close().catch(() => undefined);
  await legitPing(t, rig.listener.port, 'on a new connection');
}

t.test('a replayed DATA frame (same stream, same sequence, sent twice) ends the session', async (t) => {
  const p = await pushUpToWant('replay');
  const s = await openDataStream(p);
  const frame0 = sealChunk(p, 0, s.streamId, 0);
  await s.frames.write(frame0);
  await expectAck(s.frames, 0); // the legitimate frame was accepted
  await s.frames.write(frame0).catch(() => undefined); // captured and sent again
  await expectRefused(t, p, /replayed or reordered DATA frame: stream \d+ sequence 0, expected stream \d+ sequence 1/);
});

t.test('reordered DATA frames (sequence 1 before 0) end the session', async (t) => {
  const p = await pushUpToWant('reorder');
  const s = await openDataStream(p);
  const f0 = sealChunk(p, 0, s.streamId, 0);
  const f1 = sealChunk(p, 1, s.streamId, 1);
  await s.frames.write(f1);
  await s.frames.write(f0).catch(() => undefined); // the listener may have stopped the stream already
  await expectRefused(t, p, /replayed or reordered DATA frame: stream \d+ sequence 1, expected stream \d+ sequence 0/);
});

t.test('a replayed frame relabelled with the expected sequence fails authentication', async (t) => {
  const p = await pushUpToWant('relabel');
  const s = await openDataStream(p);
  const f0 = sealChunk(p, 0, s.streamId, 0);
  await s.frames.write(f0);
  await expectAck(s.frames, 0);
  // Same bytes, header sequence rewritten 0 -> 1: the header is the AAD and names the nonce.
  const forged = Uint8Array.from(f0);
  new DataView(forged.buffer).setBigUint64(FRAME_HEADER_BYTES + 4, 1n);
  await s.frames.write(forged).catch(() => undefined);
  await expectRefused(t, p, /failed authentication|tag does not verify/);
});

t.test('a frame captured on one data stream and replayed on another ends the session', async (t) => {
  const p = await pushUpToWant('cross');
  const s1 = await openDataStream(p);
  const s2 = await openDataStream(p);
  await s1.frames.write(sealChunk(p, 0, s1.streamId, 0));
  await expectAck(s1.frames, 0);
  await s2.frames.write(sealChunk(p, 1, s1.streamId, 1)).catch(() => undefined); // sealed for stream 1, sent on stream 2
  await expectRefused(t, p, new RegExp(`stream ${s1.streamId} sequence 1, expected stream ${s2.streamId} sequence 0`));
});

// Early chunks (sent before the Want) may repeat what the listener holds; only within the first
// window of a stream, only chunks of the manifest, and only when flagged early.
t.test('an early repeat within the first window is acked and dropped; unflagged, it ends the session', async (t) => {
  const p = await pushUpToWant('early-repeat');
  const s = await openDataStream(p);
  await s.frames.write(sealChunk(p, 0, s.streamId, 0, true));
  await expectAck(s.frames, 0);
  await s.frames.write(sealChunk(p, 0, s.streamId, 1, true)); // chunk 0 again: held now
  await expectAck(s.frames, 1);
  await s.frames.write(sealChunk(p, 0, s.streamId, 2)).catch(() => undefined);
  await expectRefused(t, p, /peer sent chunk [0-9a-f]+, which was not asked for \(or was already received\)/);
});

t.test('an early frame past the first window of its stream ends the session', async (t) => {
  const p = await pushUpToWant('early-window');
  const s = await openDataStream(p);
  const window = p.session.caps.maxWindowChunks;
  for (let seq = 0; seq < window; seq++) {
    await s.frames.write(sealChunk(p, 0, s.streamId, seq, true));
    await expectAck(s.frames, seq);
  }
  await s.frames.write(sealChunk(p, 0, s.streamId, window, true)).catch(() => undefined);
  await expectRefused(t, p, /which was not asked for/);
});

t.test('an early frame for a chunk outside the manifest ends the session', async (t) => {
  const p = await pushUpToWant('early-foreign');
  const s = await openDataStream(p);
  const bytes = seededBytes(4242, 70_000);
  const foreign = p.session.sealer.seal(
    {
      streamId: s.streamId,
      sequence: 0,
      chunkId: blake3(bytes),
      compressed: false,
      early: true,
      chunkBytes: bytes.length,
    },
    bytes,
  );
  await s.frames.write(foreign).catch(() => undefined);
  await expectRefused(t, p, /which was not asked for/);
});

// ---------------------------------------------------------------------------------------------
// Compressed chunks (zstd): the frame is checked before the decoder runs.

/** Chunk `i` of the victim as its header would be, with `payload` as its (compressed) bytes. */
function sealCompressed(
  p: DataPlane,
  i: number,
  streamId: number,
  payload: Uint8Array,
  claimedBytes?: number,
): Uint8Array {
  const entryIndex = p.source.entries.findIndex((e) => e.kind === 'file');
  const entry = p.source.entries[entryIndex];
  const ref = p.source.files.get(entryIndex)?.manifest.chunks[i];
  if (entry === undefined || ref === undefined) throw new TypeError(`no chunk ${i}`);
  return p.session.sealer.seal(
    { streamId, sequence: 0, chunkId: chunkIdAt(entry, i), compressed: true, chunkBytes: claimedBytes ?? ref.length },
    payload,
  );
}

t.test(
  'a compressed frame that would decode to far more than its chunk (a zstd bomb) ends the session',
  { skip: zstdCodec() === null ? '@mongodb-js/zstd (optional) is not installed' : false },
  async (t) => {
    const p = await pushUpToWant('zstd-bomb-victim');
    t.same(p.session.caps.compression, ['zstd', 'none'], 'zstd was negotiated');
    // 512 RLE blocks of 128 KiB: 2 KiB of frame that would decode to 64 MiB.
    const blocks: number[] = [];
    for (let i = 0; i < 512; i++) {
      const h = ((128 << 10) << 3) | (1 << 1) | (i === 511 ? 1 : 0);
      blocks.push(h & 0xff, (h >> 8) & 0xff, (h >> 16) & 0xff, 0x41);
    }
    const bomb = Uint8Array.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38, ...blocks]);
    const s = await openDataStream(p);
    await s.frames.write(sealCompressed(p, 0, s.streamId, bomb)).catch(() => undefined);
    await expectRefused(
      t,
      p,
      /compressed chunk [0-9a-f]+ refused: its blocks decode to 67108864\.\.67108864 bytes, the chunk has \d+/,
    );
  },
);

t.test(
  'a compressed frame claiming a larger chunk than the manifest ends the session before decoding',
  { skip: zstdCodec() === null ? '@mongodb-js/zstd (optional) is not installed' : false },
  async (t) => {
    const p = await pushUpToWant('zstd-claims-more-than-manifest');
    // A real zstd frame of 8 MiB of zeros: within the bound of the 16 MiB its header claims.
    const big = await zstdCodec()!.compress(Buffer.alloc(8 << 20), 3);
    const s = await openDataStream(p);
    await s.frames.write(sealCompressed(p, 0, s.streamId, big, 16 << 20)).catch(() => undefined);
    await expectRefused(t, p, /chunk [0-9a-f]+ has \d+ bytes in the manifest, its frame says 16777216/);
  },
);

t.test('a compressed frame in a session without a codec ends it', async (t) => {
  const p = await pushUpToWant('zstd-without-codec-victim', resolveConfig({ transport: 'quic', compression: 'none' }));
  t.same(p.session.caps.compression, ['none'], 'the client offered no codec');
  const s = await openDataStream(p);
  await s.frames.write(sealCompressed(p, 0, s.streamId, Uint8Array.of(1, 2, 3))).catch(() => undefined);
  await expectRefused(t, p, /sent a compressed chunk, but no codec was negotiated/);
});

t.test(
  'a malformed exclude pattern, or a push with patterns but without delete, ends the session; the listener serves on',
  async (t) => {
    for (const [direction, exclude, del, pattern] of [
      [
        'pull',
        ['[unclosed'],
        false,
        /bad exclude pattern in the transfer request: --exclude "\[unclosed": has a \[ without its \]/,
      ],
      ['push', ['*.log'], false, /exclude patterns apply to pulls/],
      ['push', ['[unclosed'], true, /bad exclude pattern in the transfer request: --exclude "\[unclosed"/],
    ] as const) {
      const session = await dial(rig.listener.port);
      t.ok(session.caps.features.includes('exclude'), 'the listener takes exclude patterns');
      await session.control.send({
        type: 'transfer-request',
        transferId: session.allocateTransferId(),
        direction,
        share: 'inbox',
        path: '',
        force: false,
        streams: 1,
        window: 4,
        exclude: [...exclude],
        ...(del ? { delete: true } : {}),
      });
      const answer = await nextControl(session);
      t.match(String(answer), pattern, `${direction}: ${String(answer)}`);
      await session.connection.close().catch(() => undefined);
    }
    await legitPing(t, rig.listener.port, 'after the bad requests');
  },
);

t.test(
  'a malformed filter rule, or a push with filter rules but without delete, ends the session; the listener serves on',
  async (t) => {
    for (const [direction, filter, pattern] of [
      [
        'pull',
        [
          { pattern: '[unclosed', include: true },
          { pattern: '*', include: false },
        ],
        /bad exclude pattern in the transfer request: --include "\[unclosed": has a \[ without its \]/,
      ],
      ['push', [{ pattern: '*.txt', include: true }], /exclude patterns apply to pulls/],
    ] as const) {
      const session = await dial(rig.listener.port);
      t.ok(session.caps.features.includes('filter'), 'the listener takes filter rules');
      await session.control.send({
        type: 'transfer-request',
        transferId: session.allocateTransferId(),
        direction,
        share: 'inbox',
        path: '',
        force: false,
        streams: 1,
        window: 4,
        filter: [...filter],
      });
      const answer = await nextControl(session);
      t.match(String(answer), pattern, `${direction}: ${String(answer)}`);
      await session.connection.close().catch(() => undefined);
    }
    await legitPing(t, rig.listener.port, 'after the bad requests');
  },
);

t.test('an existing-files policy with force, or on a pull, ends the session; the listener serves on', async (t) => {
  for (const [direction, force, pattern] of [
    ['push', true, /force and an existing-files policy/],
    ['pull', false, /existing-files policy applies to pushes/],
  ] as const) {
    const session = await dial(rig.listener.port);
    t.ok(session.caps.features.includes('existing'), 'the listener takes existing-files policies');
    await session.control.send({
      type: 'transfer-request',
      transferId: session.allocateTransferId(),
      direction,
      share: 'inbox',
      path: '',
      force,
      streams: 1,
      window: 4,
      existing: 'keep',
    });
    t.match(String(await nextControl(session)), pattern);
    await session.connection.close().catch(() => undefined);
  }
  await legitPing(t, rig.listener.port, 'after the bad requests');
});

t.test('a pull request asking the listener to delete ends the session; the listener serves on', async (t) => {
  const session = await dial(rig.listener.port);
  t.ok(session.caps.features.includes('delete'), 'the listener takes delete on pushes');
  await session.control.send({
    type: 'transfer-request',
    transferId: session.allocateTransferId(),
    direction: 'pull',
    share: 'inbox',
    path: '',
    force: false,
    streams: 1,
    window: 4,
    delete: true,
  });
  t.match(String(await nextControl(session)), /delete applies to pushes/);
  await session.connection.close().catch(() => undefined);
  await legitPing(t, rig.listener.port, 'after the bad request');
});

t.test('a push request carrying a rate limit ends the session; the listener serves on', async (t) => {
  const session = await dial(rig.listener.port);
  t.ok(session.caps.features.includes('rate-limit'), 'the listener takes rate limits on pulls');
  await session.control.send({
    type: 'transfer-request',
    transferId: session.allocateTransferId(),
    direction: 'push',
    share: 'inbox',
    path: '',
    force: false,
    streams: 1,
    window: 4,
    rateLimit: 4096,
  });
  t.match(String(await nextControl(session)), /a rate limit applies to pulls/);
  await session.connection.close().catch(() => undefined);
  await legitPing(t, rig.listener.port, 'after the bad request');
});

t.test('a push request carrying size bounds ends the session; the listener serves on', async (t) => {
  const session = await dial(rig.listener.port);
  t.ok(
    session.caps.features.includes('size-filter'),
    'the listener takes size bounds on pulls (a 17th feature: features_more)',
  );
  await session.control.send({
    type: 'transfer-request',
    transferId: session.allocateTransferId(),
    direction: 'push',
    share: 'inbox',
    path: '',
    force: false,
    streams: 1,
    window: 4,
    maxSize: 4096,
  });
  t.match(String(await nextControl(session)), /size bounds apply to pulls/);
  await session.connection.close().catch(() => undefined);
  await legitPing(t, rig.listener.port, 'after the bad request');
});

t.test(
  'a files-from list that climbs out, or comes with a push, ends the session; the listener serves on',
  async (t) => {
    for (const [direction, filesFrom, pattern] of [
      [
        'pull',
        ['ok.txt', '../../etc/passwd'],
        /TransferRequest\.filesFrom: path "\.\.\/\.\.\/etc\/passwd" refused: contains a "\.\." segment/,
      ],
      ['pull', ['/abs'], /TransferRequest\.filesFrom: path "\/abs" refused: absolute path/],
      ['push', ['x'], /a files-from list applies to pulls/],
    ] as const) {
      const session = await dial(rig.listener.port);
      await session.control.send({
        type: 'transfer-request',
        transferId: session.allocateTransferId(),
        direction,
        share: 'inbox',
        path: '',
        force: false,
        streams: 1,
        window: 4,
        filesFrom: [...filesFrom],
      });
      t.match(String(await nextControl(session)), pattern);
      await session.connection.close().catch(() => undefined);
    }
    await legitPing(t, rig.listener.port, 'after the bad requests');
  },
);

// ---------------------------------------------------------------------------------------------
// Stream floods

for (const transport of ['quic', 'tcp'] as const) {
  t.test(`a peer that opens 2000 streams over ${transport} gets at most the listener's limit`, async (t) => {
    // A client asking for a generous limit of its own: only the listener's limit may bind it.
    const conn: Connection = await (
      await backendByName(transport)
    ).connect({
      host: '127.0.0.1',
      port: rig.listener.port,
      identity: identityB,
      idleTimeoutMs: 20_000,
      maxStreams: 4096,
    });
    const flood = await dialOnConnection(conn);
    const opened: DuplexStream[] = [];
    const refusedOrReset: number[] = [];
    const attempts = Array.from({ length: 2000 }, async () => {
      const s = await conn.openStream();
      opened.push(s);
      await s.write(Uint8Array.of(1)); // the first byte of a frame header, then nothing
      const r = await s.read().then(
        () => 'data',
        () => 'reset',
      );
      if (r === 'reset') refusedOrReset.push(s.id);
    });
    void Promise.allSettled(attempts);
    const limit = DEFAULT_CONFIG.maxStreams;
    // QUIC: opens beyond the peer's MAX_STREAMS wait for credit. TCP mux: the listener refuses the
    // excess (RESET), which a loaded machine may take seconds to deliver: wait for it, up to 20 s.
    const settleBy = performance.now() + 20_000;
    await sleep(1_000);
    while (opened.length - refusedOrReset.length > limit && performance.now() < settleBy) await sleep(100);
    t.ok(opened.length >= 1, `some streams opened (${opened.length})`);
    const live = opened.length - refusedOrReset.length;
    t.ok(
      live <= limit,
      `at most ${limit} streams are live on the listener (${live}; ${opened.length} opened, ${refusedOrReset.length} refused)`,
    );
    t.comment(
      `${transport}: of 2000 opens, ${opened.length} opened, ${refusedOrReset.length} refused/reset, ${live} live (limit ${limit} incl. the control stream)`,
    );
    await legitPing(t, rig.listener.port, 'while the flood holds its streams');
    await flood.close().catch(() => undefined);
  });
}

/** Runs the client handshake on an already connected transport (the flood needs its own options). */
async function dialOnConnection(conn: Connection): Promise<{ close(): Promise<void> }> {
  const { clientHandshake } = await import('../../src/session/control-channel.js');
  const peer = await resolvePeer(peerStoreB, 'alice', undefined);
  const stream = await conn.openStream();
  await clientHandshake(stream, { identity: identityB, expectedRemoteKey: peer.publicKey, timeoutMs: 10_000 });
  return { close: () => conn.close() };
}

// ---------------------------------------------------------------------------------------------
// Stalls, against an in-process listener with short timeouts

const SHORT = resolveConfig({
  transport: 'auto',
  idleTimeoutMs: 1_500,
  keepAliveMs: 400,
  handshakeTimeoutMs: 1_000,
  maxStreams: 8,
});

t.test('stalled peers are freed by timeouts (short-timeout listener)', async (t) => {
  const identityA = await loadIdentity(path.join(rig.a.home, 'identity.key'));
  const shares = [{ name: 'inbox', dir: path.join(rig.work, 'short-inbox'), readOnly: false }];
  await mkdir(shares[0]?.dir ?? '', { recursive: true });
  const server = await NodeServer.start(
    {
      identity: identityA,
      peers: new PeerStore(path.join(rig.a.home, 'peers.json')),
      shares,
      host: '127.0.0.1',
      port: 0,
      config: SHORT,
      log: silentLogger,
    },
    (session, signal) =>
      serveSession(session, { shares, config: SHORT, log: silentLogger, nodeId: identityA.nodeId }, signal),
  );
  t.teardown(() => server.close());
  const connect = async (transport: 'quic' | 'tcp'): Promise<Connection> =>
    (await backendByName(transport)).connect({
      host: '127.0.0.1',
      port: server.port,
      identity: identityB,
      idleTimeoutMs: 30_000,
      keepAliveMs: 500,
    });
  const closedWithin = (conn: Connection, ms: number): Promise<boolean> =>
    withTimeout(conn.closed, ms, 'close').then(
      () => true,
      () => false,
    );

  await t.test('a connection that never opens its control stream is closed after the handshake timeout', async (t) => {
    for (const transport of ['quic', 'tcp'] as const) {
      const conn = await connect(transport);
      t.ok(
        await closedWithin(conn, 8_000),
        `${transport}: closed by the listener (handshake timeout ${SHORT.handshakeTimeoutMs} ms)`,
      );
      await conn.close().catch(() => undefined);
    }
  });

  await t.test('a handshake that stops half-way is closed after the handshake timeout', async (t) => {
    const conn = await connect('quic');
    const control = await conn.openStream();
    await control.write(Uint8Array.of(1, 0, 0, 0x10)); // a control frame header cut short
    t.ok(await closedWithin(conn, 8_000), 'closed by the listener');
    await conn.close().catch(() => undefined);
  });

  await t.test(
    'stalled data streams are reset after the idle timeout; the listener holds nothing for them',
    async (t) => {
      const conn = await connect('quic');
      const session = await dialOnConnection(conn);
      const stalled: DuplexStream[] = [];
      // SHORT.maxStreams = 8: the control stream plus 7 data streams fill the listener's limit.
      for (let i = 0; i < SHORT.maxStreams - 1; i++) {
        const s = await withTimeout(conn.openStream(), 3_000, `stream ${i}`);
        await s.write(Uint8Array.of(1));
        stalled.push(s);
      }
      const extra = conn.openStream().then(
        () => 'opened',
        () => 'failed',
      );
      const early = await Promise.race([extra, new Promise((r) => setTimeout(() => r('waiting'), 300))]);
      t.equal(early, 'waiting', 'one more stream waits for a slot while the stalled ones hold the limit');
      const resets = await Promise.all(
        stalled.map((s) =>
          withTimeout(s.read(), 10_000, 'reset').then(
            () => 'data',
            (e: unknown) => (e instanceof Error && /timed out/.test(e.message) ? 'still stalled' : 'reset'),
          ),
        ),
      );
      t.same(
        resets,
        stalled.map(() => 'reset'),
        `each stalled stream was reset by the listener (idle timeout ${SHORT.idleTimeoutMs} ms)`,
      );
      // QUIC gives a stream's slot back once both sides are done with it: the listener reset and
      // stopped its halves; a peer that ignores STOP_SENDING keeps only its own slots busy (its own
      // connection's limit). Once it answers with its own reset, as RFC 9000 3.5 requires, the slots return.
      for (const s of stalled) s.reset();
      t.equal(
        await withTimeout(extra, 10_000, 'the waiting open').catch(() => 'never'),
        'opened',
        'the freed slots let new streams open',
      );
      await session.close();
    },
  );

  await t.test('a transfer that stalls after the Want is failed by the idle timeout', async (t) => {
    const session = await dial(server.port);
    const dir = path.join(rig.work, 'adversary', 'stall');
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, 'victim.bin'), seededBytes(99, 64 << 10));
    const source = await scanSource(dir, { chunking: sessionChunking(session), log: silentLogger });
    const transferId = session.allocateTransferId();
    await session.control.send({
      type: 'transfer-request',
      transferId,
      direction: 'push',
      share: 'inbox',
      path: '',
      force: false,
      streams: 1,
      window: 4,
    });
    await expectMessage(session, 'transfer-accept', transferId, 10_000);
    await session.control.sendAll(manifestMessages(session, transferId, source.entries));
    await expectMessage(session, 'want', transferId, 10_000);
    const raw = await session.connection.openStream();
    await raw.write(encodeControlFrame({ type: 'data-open', transferId, streamId: session.allocateDataStreamId() }));
    // ...and nothing more.
    const answer = await nextControl(session, 15_000);
    t.match(String(answer), /timed out/, `the listener gives up with a timeout (${String(answer)})`);
    t.ok(await closedWithin(session.connection, 10_000), 'and closes the session');
    t.same(
      (await readdir(path.join(shares[0]?.dir ?? '', 'stall')).catch(() => [] as string[])).filter(
        (n) => !n.startsWith('.clawpeer'),
      ),
      [],
      'nothing published',
    );
    await session.connection.close().catch(() => undefined);
  });

  await legitPing(t, server.port, 'after every stall');
});

t.test('the CLI listener answers a CLI ping after all of the above', async (t) => {
  const r = await rig.cli(['ping', 'alice', '--count', '1']);
  t.equal(r.code, 0, r.stderr);
  t.equal(rig.listener.child.exitCode, null, 'the listener never exited');
});
