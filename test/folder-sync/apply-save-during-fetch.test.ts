// A file saved while the peer's new content of it is being received (after the apply step's
// checks, before the publisher renames the fetched file over the path) is not overwritten
// unseen (issue 31): the publisher's last look (beforeReplace) moves it aside to
// f.sync-unsynced-<mtime>-<node>, which the next scan records; that is the one look at a fetched
// path (a save holding the peer's very bytes is not copied). The warm entry of a published file
// certifies the file the receiver published (its stat after the commit), not what holds the path
// later. The fake fetch here publishes through a real Publisher, as fetchContent's receiver does,
// and saves between the two.
import t, { type Test } from 'tap';
import { lstatSync, type BigIntStats } from 'node:fs';
import { mkdtemp, readFile, readdir, rename, rm, utimes, writeFile } from 'node:fs/promises';
import { toHex } from '../../src/chunking/blake3.js';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_CHUNKING } from '../../src/chunking/fastcdc.js';
import { manifestFromBytes } from '../../src/chunking/manifest.js';
import { scanFolder } from '../../src/folder-sync/folder-scanner.js';
import { applyRemote, type ApplyOptions } from '../../src/folder-sync/sync-apply.js';
import type { FetchOutcome } from '../../src/folder-sync/sync-exchange.js';
import { silentLogger } from '../../src/logger.js';
import { historyDir } from '../../src/store/sync-history.js';
import { toSeconds } from '../../src/store/staged-file.js';
import { RevisionStore } from '../../src/store/revision-store.js';
import { revisionEntry, type RevisionEntry } from '../../src/sync/revision.js';
import { vectorFrom } from '../../src/sync/version-vector.js';
import { publishAsFetched } from '../support/publish-as-fetched.js';

const ME = '12D3KooWCcccccccccccc';
const PEER = '12D3KooWBbbbbbbbbbbbb';
const SCANNED = 'as scanned\n';
const PEERS = "the peer's version\n";
const SAVED = 'saved while the content came\n';

/** The history blobs as {name: the root of what they hold}. */
async function historyRoots(folder: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const names = await readdir(historyDir(folder)).catch(() => [] as string[]);
  for (const n of names)
    out[n] = toHex(manifestFromBytes(await readFile(join(historyDir(folder), n)), DEFAULT_CHUNKING).root);
  return out;
}

/** A folder holding f as SCANNED, scanned into its log, and the peer's revision of f holding PEERS. */
async function scannedWithPeersF(
  t: Test,
  peerMtimeDeltaNs = 5_000_000_000n,
): Promise<{ folder: string; store: RevisionStore; theirs: RevisionEntry }> {
  const folder = await mkdtemp(join(tmpdir(), 'clawpeer-fetchsave-'));
  t.teardown(() => rm(folder, { recursive: true, force: true }));
  await writeFile(join(folder, 'f'), SCANNED);
  const store = await RevisionStore.open(folder, { nodeId: ME });
  t.teardown(() => store.close());
  await scanFolder(store, folder, { chunking: DEFAULT_CHUNKING });
  const head = store.head('f');
  if (head === undefined) throw new Error('the scan recorded no f');
  const theirs = revisionEntry({
    ...head.revision,
    contentRoot: manifestFromBytes(Buffer.from(PEERS), DEFAULT_CHUNKING).root,
    size: PEERS.length,
    origin: PEER,
    vector: vectorFrom({ [ME]: 1, [PEER]: 1 }),
    mtimeNs: head.revision.mtimeNs + peerMtimeDeltaNs,
  });
  return { folder, store, theirs };
}

/** Applies the peer's revision of f with `fetch` standing in for fetchContent. */
function applyTheirs(
  store: RevisionStore,
  folder: string,
  theirs: RevisionEntry,
  fetch: ApplyOptions['fetch'],
): ReturnType<typeof applyRemote> {
  return applyRemote([theirs], {
    store,
    folder,
    keepConcurrentLocal: false,
    log: silentLogger,
    chunking: DEFAULT_CHUNKING,
    fsync: 'none',
    fetch,
  });
}

interface RunOptions {
  /** The publisher gets the apply's beforeReplace (default true; push and pull pass none). */
  readonly withHook?: boolean;
  /** The user saves f in place while the content travels (default true). */
  readonly save?: boolean;
  readonly afterPublish?: (folder: string) => Promise<void>;
  /** The peer's mtime relative to the scanned one (default 5 s later). */
  readonly peerMtimeDeltaNs?: bigint;
  /** Report each file's lstat right after its commit (FetchOutcome.published), as fetchContent does. */
  readonly reportStats?: boolean;
}

async function run(t: Test, o: RunOptions = {}): Promise<{ folder: string; store: RevisionStore }> {
  const { withHook = true, save = true, afterPublish, peerMtimeDeltaNs = 5_000_000_000n, reportStats = false } = o;
  const { folder, store, theirs } = await scannedWithPeersF(t, peerMtimeDeltaNs);
  const peerBytes = Buffer.from(PEERS);
  await applyTheirs(store, folder, theirs, async (requests, beforePublish, beforeReplace): Promise<FetchOutcome> => {
    t.equal(requests.length, 1, "the peer's f is fetched");
    await beforePublish(requests);
    if (save) await writeFile(join(folder, 'f'), SAVED); // the user saves (in place) while the content travels
    await publishAsFetched(folder, requests, () => peerBytes, withHook ? beforeReplace : undefined);
    const published = new Map<string, BigIntStats>();
    if (reportStats)
      for (const r of requests) published.set(r.destPath, lstatSync(join(folder, r.destPath), { bigint: true }));
    await afterPublish?.(folder);
    return { delivered: [...requests], chunksReceived: 1, published };
  });
  return { folder, store };
}

t.test("a save while the peer's content of the file arrives is kept beside it and recorded", async (t) => {
  const { folder, store } = await run(t);
  t.equal(await readFile(join(folder, 'f'), 'utf8'), PEERS, "the path holds the peer's version");
  const copies = (await readdir(folder)).filter((n) => n.startsWith('f.sync-unsynced-'));
  t.equal(copies.length, 1, 'one copy of the save');
  const copy = copies[0] ?? '';
  t.equal(await readFile(join(folder, copy), 'utf8'), SAVED, "holding the user's bytes");
  await scanFolder(store, folder, { chunking: DEFAULT_CHUNKING });
  const recorded = store.head(copy)?.revision;
  t.ok(recorded !== undefined && !recorded.deleted, 'the next scan records the copy');
  t.same(
    Buffer.from(recorded?.contentRoot ?? []),
    Buffer.from(manifestFromBytes(Buffer.from(SAVED), DEFAULT_CHUNKING).root),
    'with the bytes of the save',
  );
  // Linked into history before the transfer, the blob would share the inode the save rewrote.
  for (const [name, root] of Object.entries(await historyRoots(folder)))
    t.equal(root, name, `history blob ${name.slice(0, 8)} holds the content it is named after`);
});

t.test('a file unchanged while the content came is replaced, its bytes kept in history', async (t) => {
  const { folder } = await run(t, { save: false });
  t.equal(await readFile(join(folder, 'f'), 'utf8'), PEERS);
  t.same(
    (await readdir(folder)).filter((n) => n.startsWith('f.sync-unsynced-')),
    [],
    'no copy',
  );
  const scannedRoot = toHex(manifestFromBytes(Buffer.from(SCANNED), DEFAULT_CHUNKING).root);
  t.same(await historyRoots(folder), { [scannedRoot]: scannedRoot }, 'the scanned version is in history');
});

t.test('a publisher without the hook (push, pull) replaces the file as before', async (t) => {
  const { folder } = await run(t, { withHook: false });
  t.equal(await readFile(join(folder, 'f'), 'utf8'), PEERS);
  t.same(
    (await readdir(folder)).filter((n) => n.startsWith('f.sync-unsynced-')),
    [],
    'nothing kept: a publisher without the hook replaces what it finds',
  );
});

t.test(
  "a save right after the publish, stamped by a skewed clock, is scanned, not certified as the peer's",
  async (t) => {
    // Same size as the peer's bytes and an mtime ten minutes back: outside the racy window, so
    // only the mtime the apply set tells the publish and the save apart.
    const skewed = 'saved on a skewed!\n';
    t.equal(skewed.length, PEERS.length, 'the save keeps the size');
    const { folder, store } = await run(t, {
      save: false,
      afterPublish: async (folder) => {
        await writeFile(join(folder, 'f'), skewed);
        const past = new Date(Date.now() - 10 * 60_000);
        await utimes(join(folder, 'f'), past, past);
      },
    });
    await scanFolder(store, folder, { chunking: DEFAULT_CHUNKING });
    t.same(
      Buffer.from(store.head('f')?.revision.contentRoot ?? []),
      Buffer.from(manifestFromBytes(Buffer.from(skewed), DEFAULT_CHUNKING).root),
      'the next scan records the bytes on disk',
    );
  },
);

t.test("the peer's file as published is certified warm: the next scan hashes nothing", async (t) => {
  // An hour back: outside the racy window, so the publish itself can be certified.
  const { folder, store } = await run(t, { save: false, peerMtimeDeltaNs: -3_600_000_000_000n });
  t.equal(await readFile(join(folder, 'f'), 'utf8'), PEERS);
  const scan = await scanFolder(store, folder, { chunking: DEFAULT_CHUNKING });
  t.equal(scan.hashedBytes, 0, 'nothing hashed');
  t.equal(scan.changed, 0, 'nothing changed');
});

t.test('another file renamed over the published one, same size and mtime, is scanned, not certified', async (t) => {
  // The warm entry certifies the file the receiver published (its stat right after the commit),
  // not whatever holds the path when the log is written: another inode there is hashed next scan.
  const other = "another tool's file\n".slice(0, PEERS.length);
  t.equal(other.length, PEERS.length, "same size as the peer's bytes");
  const { folder, store } = await run(t, {
    save: false,
    afterPublish: async (folder) => {
      const published = lstatSync(join(folder, 'f'));
      await writeFile(join(folder, 'g'), other);
      // The publisher's own rounding (toSeconds): a Date lands 1 ns below its millisecond half the time.
      await utimes(join(folder, 'g'), published.atime, toSeconds(Math.floor(published.mtimeMs)));
      await rename(join(folder, 'g'), join(folder, 'f'));
    },
    peerMtimeDeltaNs: -3_600_000_000_000n,
    reportStats: true,
  });
  const scan = await scanFolder(store, folder, { chunking: DEFAULT_CHUNKING });
  t.ok(scan.hashedBytes > 0, 'f is hashed again');
  t.same(
    Buffer.from(store.head('f')?.revision.contentRoot ?? []),
    Buffer.from(manifestFromBytes(Buffer.from(other), DEFAULT_CHUNKING).root),
    'the next scan records the bytes on disk',
  );
});

t.test('with the stats the receiver reported, the published file is certified warm', async (t) => {
  const { folder, store } = await run(t, { save: false, peerMtimeDeltaNs: -3_600_000_000_000n, reportStats: true });
  t.equal(await readFile(join(folder, 'f'), 'utf8'), PEERS);
  const scan = await scanFolder(store, folder, { chunking: DEFAULT_CHUNKING });
  t.equal(scan.hashedBytes, 0, 'nothing hashed');
  t.equal(scan.changed, 0, 'nothing changed');
});

t.test('a file saved since the scan stays where it is when the peer cannot deliver its content', async (t) => {
  // Only the publisher's last look moves a save aside: a fetch that brings nothing replaces
  // nothing, so nothing is moved.
  const { folder, store, theirs } = await scannedWithPeersF(t);
  await writeFile(join(folder, 'f'), SAVED);
  const result = await applyTheirs(store, folder, theirs, async (_requests, beforePublish): Promise<FetchOutcome> => {
    await beforePublish([]);
    return { delivered: [], chunksReceived: 0 };
  });
  t.same(result.skipped, ['f'], 'f is left for the next sync');
  t.equal(await readFile(join(folder, 'f'), 'utf8'), SAVED, 'the save is still at its path');
  t.same(
    (await readdir(folder)).filter((n) => n.startsWith('f.sync-unsynced-')),
    [],
    'nothing moved aside',
  );
});

t.test("a save since the scan that holds the peer's very bytes is not moved aside", async (t) => {
  // The same edit made here and on the peer: the publisher finds the bytes in place and renames
  // nothing, so there is nothing to keep beside them (a look before the transfer made a copy).
  const { folder, store, theirs } = await scannedWithPeersF(t);
  await writeFile(join(folder, 'f'), PEERS);
  const peerBytes = Buffer.from(PEERS);
  await applyTheirs(store, folder, theirs, async (requests, beforePublish, beforeReplace): Promise<FetchOutcome> => {
    await beforePublish(requests);
    await publishAsFetched(folder, requests, () => peerBytes, beforeReplace);
    return { delivered: [...requests], chunksReceived: 0 };
  });
  t.equal(await readFile(join(folder, 'f'), 'utf8'), PEERS);
  t.same(
    (await readdir(folder)).filter((n) => n.startsWith('f.sync-unsynced-')),
    [],
    'no copy of bytes the path already holds',
  );
  t.equal(store.head('f')?.revision.origin, PEER, "the peer's revision is the head");
});
