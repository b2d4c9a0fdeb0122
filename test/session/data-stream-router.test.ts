// DataStreamRouter: streams that arrive before their transfer registers wait for it (a sender
// with early chunks opens them right after its Manifest), within bounds; late streams of an
// ended transfer are reset at once.
import t from 'tap';
import { generateIdentity } from '../../src/crypto/identity.js';
import { silentLogger } from '../../src/logger.js';
import {
  DataStreamRouter,
  MAX_WAITING_STREAMS,
  type IncomingDataStream,
} from '../../src/session/data-stream-router.js';
import { FrameStream } from '../../src/session/frame-stream.js';
import { encodeControlFrame } from '../../src/protocol/messages.js';
import { MemoryBackend } from '../../src/transport/memory.js';
import type { Connection, DuplexStream } from '../../src/transport/types.js';

const MAX_FRAME = 1 << 20;

async function pair(): Promise<{ client: Connection; server: Connection }> {
  const backend = new MemoryBackend();
  const listener = await backend.listen({ host: '127.0.0.1', port: 0, identity: generateIdentity() });
  const accepted = listener.accept();
  const client = await backend.connect({
    host: '127.0.0.1',
    port: listener.address.port,
    identity: generateIdentity(),
  });
  const server = await accepted;
  if (server === null) throw new Error('no server connection');
  await listener.close();
  return { client, server };
}

let nextStreamId = 1;
/** Opens a data stream for `transferId` the way a sender does (data-open first). */
async function openFor(client: Connection, transferId: number): Promise<DuplexStream> {
  const raw = await client.openStream();
  await new FrameStream(raw, MAX_FRAME, 10_000, 'test').write(
    encodeControlFrame({ type: 'data-open', transferId, streamId: nextStreamId++ }),
  );
  return raw;
}

/** Resolves true when the peer resets `raw` (a read fails), false if it is still open after `ms`. */
async function resetWithin(raw: DuplexStream, ms: number): Promise<boolean> {
  const frames = new FrameStream(raw, MAX_FRAME, 60_000, 'probe');
  const read = frames.next().then(
    () => false,
    () => true,
  );
  const timeout = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), ms).unref());
  return Promise.race([read, timeout]);
}

t.test('a stream that arrives before its transfer registers is delivered at register()', async (t) => {
  const { client, server } = await pair();
  const router = new DataStreamRouter(server, MAX_FRAME, 10_000, silentLogger);
  void router.run();
  await openFor(client, 7);
  await openFor(client, 7);
  await new Promise((r) => setTimeout(r, 50)); // routed and held
  const got: IncomingDataStream[] = [];
  const unregister = router.register(7, (s) => got.push(s));
  t.equal(got.length, 2, 'both waiting streams handed over');
  await openFor(client, 7);
  await new Promise((r) => setTimeout(r, 50));
  t.equal(got.length, 3, 'a later one goes straight to the sink');
  unregister();

  // The transfer has ended: a late stream of it is reset without waiting.
  const late = await openFor(client, 7);
  t.equal(await resetWithin(late, 2_000), true, 'a late stream of an ended transfer is reset');
  await client.close();
  await server.close();
});

t.test(`at most ${MAX_WAITING_STREAMS} streams wait; the next is reset at once`, async (t) => {
  const { client, server } = await pair();
  const router = new DataStreamRouter(server, MAX_FRAME, 10_000, silentLogger);
  void router.run();
  for (let i = 0; i < MAX_WAITING_STREAMS; i++) await openFor(client, 1000 + i);
  await new Promise((r) => setTimeout(r, 100));
  const extra = await openFor(client, 5000);
  t.equal(await resetWithin(extra, 2_000), true, 'the stream beyond the bound is reset');
  let delivered = 0;
  router.register(1000, () => delivered++);
  t.equal(delivered, 1, 'the held ones are still there');
  await client.close();
  await server.close();
});

t.test(
  "an unexpected transfer's streams are reset after the wait; an expected one's wait for register()",
  async (t) => {
    const { client, server } = await pair();
    const router = new DataStreamRouter(server, MAX_FRAME, 10_000, silentLogger, 100);
    void router.run();
    const stray = await openFor(client, 21);
    t.equal(await resetWithin(stray, 2_000), true, 'nobody expects transfer 21: reset after the wait');

    const early = await openFor(client, 22); // arrives before its request is read
    await new Promise((r) => setTimeout(r, 20));
    const forget = router.expect(22); // the request is read: no deadline any more
    await openFor(client, 22); // arrives after: waits the same way
    t.equal(await resetWithin(early, 400), false, 'still waiting well past the unexpected wait');
    const got: IncomingDataStream[] = [];
    const unregister = router.register(22, (s) => got.push(s));
    t.equal(got.length, 2, 'both handed over at register()');
    unregister();
    forget();

    const forgetAbandoned = router.expect(23); // a transfer that fails before its receiver registers
    const abandoned = await openFor(client, 23);
    await new Promise((r) => setTimeout(r, 50));
    forgetAbandoned();
    t.equal(await resetWithin(abandoned, 2_000), true, 'its waiting stream is reset when the wait ends');
    await client.close();
    await server.close();
  },
);
