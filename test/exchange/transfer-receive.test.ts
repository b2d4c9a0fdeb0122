// exchange/transfer-receive.ts, the receiving side of a push or pull: what its plan asks the
// peer for (nothing held already, identical files, chunks of other files), what it refuses
// before any chunk travels (an existing different file, a read-only share, reserved or repeated
// paths, a manifest that does not add up), and the whole receive over the in-memory transport.
// (Planning only where no session is needed: prepare() and dryRun() read the destination.)
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { copyFile, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { DEFAULT_CHUNKING } from '../../src/chunking/fastcdc.js';
import { TransferReceiver, type Destination } from '../../src/exchange/transfer-receive.js';
import { scanSource } from '../../src/exchange/transfer-source.js';
import { silentLogger } from '../../src/logger.js';
import type { ManifestEntry } from '../../src/protocol/message-types.js';
import { pull, push } from '../../src/push-pull/transfer-client.js';
import { memoryListener, shareIn, tempDir } from '../listener/memory-listener.js';

/** Small chunks, so a few hundred KiB make many of them. */
const CHUNKING = { ...DEFAULT_CHUNKING, minBytes: 4096, avgBytes: 16384, maxBytes: 65536 };
const signal = (): AbortSignal => new AbortController().signal;

/** The manifest entries of `dir` as a push announces them (the directory itself first). */
async function entriesOf(dir: string): Promise<ManifestEntry[]> {
  return (await scanSource(dir, { chunking: CHUNKING, log: silentLogger })).entries;
}

/** A receiver for `entries` into `root`; planning only, so no session or data streams are needed. */
function receiver(
  entries: readonly ManifestEntry[],
  root: string,
  o: { force?: boolean; readOnly?: boolean } = {},
): TransferReceiver {
  const destination: Destination = { root, readOnly: o.readOnly ?? false, basePath: '' };
  return new TransferReceiver({
    session: undefined as never,
    router: undefined as never,
    transferId: 1,
    entries,
    destination,
    force: o.force ?? false,
    chunking: CHUNKING,
    signal: signal(),
    log: silentLogger,
  });
}

function setBits(bitmap: Uint8Array): number {
  let n = 0;
  for (let byte of bitmap) for (; byte !== 0; byte >>= 1) n += byte & 1;
  return n;
}

async function sourceTree(): Promise<{ dir: string; big: Buffer }> {
  const dir = path.join(await tempDir('recv-src'), 'tree');
  await mkdir(dir);
  const big = randomBytes(300_000);
  await writeFile(path.join(dir, 'big.bin'), big);
  await writeFile(path.join(dir, 'small.txt'), 'small');
  return { dir, big };
}

t.test('into an empty destination the plan asks for every distinct chunk', async (t) => {
  const { dir } = await sourceTree();
  const r = receiver(await entriesOf(dir), await tempDir('recv-dst'));
  const plan = await r.prepare();
  t.ok(plan.uniqueCount > 5, `several chunks (${plan.uniqueCount})`);
  t.equal(setBits(plan.lacking), plan.uniqueCount, 'all wanted');
  t.equal(plan.lackingBytes, 300_000 + 'small'.length, 'the bytes of both files');
  await r.abort();
});

t.test('identical files already there are not asked for; a dry run says so and writes nothing', async (t) => {
  const { dir } = await sourceTree();
  const root = await tempDir('recv-dst');
  await mkdir(path.join(root, 'tree'));
  for (const f of ['big.bin', 'small.txt']) await copyFile(path.join(dir, f), path.join(root, 'tree', f));
  const entries = await entriesOf(dir);
  const dry = await receiver(entries, root).dryRun();
  t.equal(dry.filesUnchanged, 2);
  t.equal(dry.files, 0, 'nothing to publish');
  t.equal(setBits(dry.lacking), 0, 'no chunk wanted');
  const r = receiver(entries, root);
  t.equal(setBits((await r.prepare()).lacking), 0, 'the real plan agrees');
  await r.abort();
});

t.test('content the destination holds under another name is taken from there, not from the peer', async (t) => {
  const { dir, big } = await sourceTree();
  const root = await tempDir('recv-dst');
  await writeFile(path.join(root, 'elsewhere.bin'), big);
  const r = receiver(await entriesOf(dir), root);
  const plan = await r.prepare();
  t.equal(plan.lackingBytes, 'small'.length, 'only the small file travels');
  await r.abort();
});

t.test('a different file already there is refused before anything travels, unless forced', async (t) => {
  const { dir } = await sourceTree();
  const root = await tempDir('recv-dst');
  await mkdir(path.join(root, 'tree'));
  await writeFile(path.join(root, 'tree', 'small.txt'), 'other');
  const entries = await entriesOf(dir);
  await t.rejects(receiver(entries, root).prepare(), { code: 'FILE_EXISTS', message: /small\.txt/ });
  t.equal(await readFile(path.join(root, 'tree', 'small.txt'), 'utf8'), 'other', 'left as it was');
  t.same(
    (await readdir(path.join(root, 'tree'))).filter((n) => n.startsWith('.clawpeer-tmp-')),
    [],
    'no temp file left',
  );
  const forced = receiver(entries, root, { force: true });
  t.ok(setBits((await forced.prepare()).lacking) > 0, 'with force it plans the transfer');
  await forced.abort();
});

t.test('a read-only destination refuses a transfer', async (t) => {
  const { dir } = await sourceTree();
  await t.rejects(receiver(await entriesOf(dir), await tempDir('recv-dst'), { readOnly: true }).prepare(), {
    code: 'SHARE_READ_ONLY',
  });
});

t.test('a manifest naming reserved or repeated paths, or chunks that do not add up, is refused', async (t) => {
  const { dir } = await sourceTree();
  const entries = await entriesOf(dir);
  const file = entries.find((e) => e.kind === 'file');
  if (file === undefined) throw new Error('no file entry');
  const root = await tempDir('recv-dst');
  t.throws(() => receiver([{ ...file, path: '.clawpeer/index.bin' }], root), {
    code: 'PATH_INVALID',
    message: /reserved/,
  });
  t.throws(() => receiver([file, { ...file }], root), { code: 'PROTOCOL', message: /announced twice/ });
  t.throws(() => receiver([{ ...file, path: '../escape' }], root), { code: 'PATH_INVALID' });
  await t.rejects(receiver([{ ...file, size: file.size + 1 }], root).prepare(), {
    code: 'PROTOCOL',
    message: /add up/,
  });
});

t.test('over the in-memory transport: a push is received whole, a second one publishes nothing', async (t) => {
  const inbox = await shareIn('inbox');
  const l = await memoryListener([inbox]);
  t.teardown(() => l.stop());
  const { dir } = await sourceTree();
  // Big enough for several chunks of the session's chunking (the listener's, not CHUNKING).
  const big = randomBytes(4 << 20);
  await writeFile(path.join(dir, 'big.bin'), big);
  const o = {
    session: l.session,
    share: 'inbox',
    remotePath: '',
    localPath: dir,
    force: false,
    streams: 3,
    window: 4,
    idleTimeoutMs: 5000,
    log: silentLogger,
  };
  const first = await push({ ...o, signal: signal() });
  t.ok(first.chunksSent > 3, `chunks sent over several streams (${first.chunksSent})`);
  t.ok((await readFile(path.join(inbox.dir, 'tree', 'big.bin'))).equals(big), 'byte for byte');
  const again = await push({ ...o, signal: signal() });
  t.equal(again.files, 0, 'identical: nothing published again');
  // At most the early chunks a push sends before the receiver's Want arrives (dropped there).
  t.ok(
    again.chunksSkipped >= first.chunksSent - again.chunksSent && again.chunksSent < first.chunksSent / 2,
    `the receiver wanted none (${again.chunksSent} early, ${again.chunksSkipped} skipped)`,
  );

  // The pull's receiver is this side's: a local copy of the big file means only the rest comes.
  const local = await tempDir('recv-pull');
  await writeFile(path.join(local, 'seed.bin'), big);
  const pulled = await pull({ ...o, remotePath: 'tree', localPath: local, signal: signal() });
  t.equal(pulled.files, 2);
  t.ok(
    pulled.chunksSkipped >= first.chunksSent - 1,
    `the big file's chunks came from the local copy (${pulled.chunksSkipped} skipped, ${pulled.chunksSent} sent)`,
  );
  t.equal(pulled.chunksSent, 1, 'only the small file travelled');
  t.equal(await readFile(path.join(local, 'tree', 'small.txt'), 'utf8'), 'small');
});
