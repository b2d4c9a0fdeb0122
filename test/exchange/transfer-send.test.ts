// sendChunks against a receiver that stops a data stream: harmless when every frame on it was an
// early chunk the receiver turned out to hold and nothing wanted was left unsent (it finished
// without reading the stream: the router resets late streams of ended transfers), an error when
// the stream carried a wanted chunk or stopped before sending one.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { silentLogger } from '../../src/logger.js';
import { bitmapFromKeys, uniqueChunks, type WantInfo } from '../../src/transfer/chunk-order.js';
import { PeerSession } from '../../src/session/session.js';
import { sendChunks } from '../../src/exchange/transfer-send.js';
import { scanSource, type TransferSource } from '../../src/exchange/transfer-source.js';
import type { Connection } from '../../src/transport/types.js';
import { DEFAULT_CHUNKING } from '../../src/chunking/fastcdc.js';
import { memoryHandshake } from '../session/memory-session.js';

async function sessionPair(): Promise<{ sender: PeerSession; receiver: Connection }> {
  const { client, handshake, server } = await memoryHandshake();
  return { sender: new PeerSession(client, handshake), receiver: server };
}

const smallChunked = (dir: string): Promise<TransferSource> =>
  scanSource(dir, { chunking: DEFAULT_CHUNKING, log: silentLogger });

async function smallFiles(n: number): Promise<TransferSource> {
  const dir = await mkdtemp(path.join(tmpdir(), 'clawpeer-send-'));
  for (let i = 0; i < n; i++) await writeFile(path.join(dir, `p${i}.bin`), randomBytes(4096));
  return smallChunked(dir);
}

/** Plays the receiver: resets every data stream as it arrives; the Want comes `afterMs` later. */
function stopEveryStream(
  receiver: Connection,
  source: TransferSource,
  lacking: (keys: readonly string[]) => Set<string>,
  afterMs: number,
): Promise<WantInfo> {
  void (async () => {
    for (;;) {
      const s = await receiver.acceptStream().catch(() => null);
      if (s === null) return;
      s.reset();
    }
  })();
  const { keys } = uniqueChunks(source.entries);
  return new Promise((resolve) =>
    setTimeout(() => resolve({ lacking: bitmapFromKeys(keys, lacking(keys)), uniqueCount: keys.length }), afterMs),
  );
}

const options = (
  sender: PeerSession,
  source: TransferSource,
  want: Promise<WantInfo>,
  window = 16,
): Parameters<typeof sendChunks>[0] => ({
  session: sender,
  transferId: 1,
  source,
  want,
  streams: 1,
  window,
  idleTimeoutMs: 5000,
  signal: new AbortController().signal,
  log: silentLogger,
});

t.test('a stream stopped by a receiver that wanted none of its early chunks ends quietly', async (t) => {
  const { sender, receiver } = await sessionPair();
  const source = await smallFiles(4);
  // All four chunks go early (one window); the receiver holds them all and stops the stream.
  const want = stopEveryStream(receiver, source, () => new Set(), 100);
  const stats = await sendChunks(options(sender, source, want));
  t.equal(stats.chunksSent, 4, 'the early frames were sent');
  t.equal(stats.chunksSkipped, 4, 'and none was wanted');
  await sender.connection.close();
});

t.test('a stream stopped while it carried a wanted chunk fails the transfer', async (t) => {
  const { sender, receiver } = await sessionPair();
  const source = await smallFiles(4);
  const want = stopEveryStream(receiver, source, (keys) => new Set(keys.slice(0, 1)), 100);
  await t.rejects(sendChunks(options(sender, source, want)), { code: 'REMOTE' });
  await sender.connection.close();
});

t.test(
  'a stream stopped before it could send a wanted chunk fails the transfer, though what it sent was unwanted',
  async (t) => {
    const { sender, receiver } = await sessionPair();
    const source = await smallFiles(4);
    // Window 2: two early frames (held by the receiver), then the stream waits; the Want asks for
    // the last chunk, which the stopped stream never sent.
    const want = stopEveryStream(receiver, source, (keys) => new Set(keys.slice(3)), 100);
    await t.rejects(sendChunks(options(sender, source, want, 2)), { code: 'REMOTE' });
    await sender.connection.close();
  },
);

t.test('the byte window bounds what a transfer keeps unacknowledged, split over its streams', async (t) => {
  const { sender, receiver } = await sessionPair();
  const dir = await mkdtemp(path.join(tmpdir(), 'clawpeer-send-'));
  // Two files (two units of work, so two streams) of ~190 chunks of 4-64 KiB each.
  for (const name of ['a.bin', 'b.bin']) await writeFile(path.join(dir, name), randomBytes(3 << 20));
  const source = await smallChunked(dir);
  const { keys } = uniqueChunks(source.entries);
  const maxChunk = Math.max(...source.entries.flatMap((e) => e.chunkLengths));
  // The receiver wants everything, reads every data stream to the end and never acks.
  const received: number[] = [];
  void (async () => {
    for (;;) {
      const s = await receiver.acceptStream().catch(() => null);
      if (s === null) return;
      const slot = received.push(0) - 1;
      void (async () => {
        for (let b = await s.read().catch(() => null); b !== null; b = await s.read().catch(() => null))
          received[slot] = (received[slot] ?? 0) + b.length;
      })();
    }
  })();
  const windowBytes = 2 << 20;
  const abort = new AbortController();
  const sending = sendChunks({
    ...options(
      sender,
      source,
      Promise.resolve({ lacking: bitmapFromKeys(keys, new Set(keys)), uniqueCount: keys.length }),
      1000,
    ),
    streams: 2,
    windowBytes,
    signal: abort.signal,
  });
  sending.catch(() => undefined);
  // Wait until nothing more arrives: every stream sits at its byte window.
  let last = -1;
  for (let total = 0; total !== last;) {
    last = total;
    await new Promise((r) => setTimeout(r, 300));
    total = received.reduce((a, b) => a + b, 0);
  }
  const frameOverhead = 1024; // data-open, frame headers and tags: far below one chunk
  t.equal(received.length, 2, 'two data streams');
  for (const bytes of received) {
    t.ok(bytes >= windowBytes / 2 - maxChunk, `a stream filled its share (${bytes} bytes)`);
    t.ok(
      bytes <= windowBytes / 2 + maxChunk + frameOverhead,
      `and stopped there: ${bytes} <= its 1 MiB share + one chunk`,
    );
  }
  abort.abort();
  await t.rejects(sending, { code: 'ABORTED' });
  await sender.connection.close();
});
