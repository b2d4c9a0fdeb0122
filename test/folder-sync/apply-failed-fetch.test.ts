// A sync whose fetch fails partway (a full disk, a lost connection, a peer that stops
// delivering) records the conflict units whose files all landed before the failure, and only
// those: before, nothing was recorded, and the next scan took the peer's files for this node's
// creations (wrong history, keep-last versions, revisions sent back). The fake fetch here
// publishes part of the requests through a real Publisher, as fetchContent's receiver does
// (reporting each file as it lands), then throws.
import t, { type Test } from 'tap';
import { existsSync, lstatSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_CHUNKING } from '../../src/chunking/fastcdc.js';
import { ClawpeerError } from '../../src/errors.js';
import { scanFolder } from '../../src/folder-sync/folder-scanner.js';
import { applyRemote, conflictCopyRevision } from '../../src/folder-sync/sync-apply.js';
import type { FetchRequest } from '../../src/folder-sync/sync-exchange.js';
import { silentLogger } from '../../src/logger.js';
import { historyDir } from '../../src/store/sync-history.js';
import { RevisionStore } from '../../src/store/revision-store.js';
import { conflictPath } from '../../src/sync/conflict.js';
import { revisionEntry, type RevisionEntry } from '../../src/sync/revision.js';
import { vectorFrom } from '../../src/sync/version-vector.js';
import { publishAsFetched } from '../support/publish-as-fetched.js';
import { fileRevision } from '../support/file-revisions.js';

const ME = '12D3KooWCcccccccccccc';
const PEER = '12D3KooWBbbbbbbbbbbbb';
const SECOND_NS = 1_000_000_000n;

/** The peer's revision of `path` holding `text`, concurrent with ours (both saw `vector`). */
function peers(path: string, text: string, mtimeNs: bigint, vector: Record<string, number> = {}): RevisionEntry {
  return fileRevision(path, PEER, { ...vector, [PEER]: 1 }, Buffer.from(text), mtimeNs);
}

interface Setup {
  readonly folder: string;
  readonly store: RevisionStore;
  /** Our scanned p.txt and q.txt. */
  readonly p: RevisionEntry;
  readonly q: RevisionEntry;
  /** What the peer sends: new1.txt, new2.txt, p.txt (wins over ours), q.txt (loses to ours). */
  readonly received: RevisionEntry[];
  readonly text: Map<string, string>;
}

async function setup(t: Test): Promise<Setup> {
  const folder = await mkdtemp(join(tmpdir(), 'clawpeer-failedfetch-'));
  t.teardown(() => rm(folder, { recursive: true, force: true }));
  await writeFile(join(folder, 'p.txt'), 'our p\n');
  await writeFile(join(folder, 'q.txt'), 'our q\n');
  const store = await RevisionStore.open(folder, { nodeId: ME });
  t.teardown(() => store.close());
  await scanFolder(store, folder, { chunking: DEFAULT_CHUNKING });
  const p = store.head('p.txt');
  const q = store.head('q.txt');
  if (p === undefined || q === undefined) throw new Error('the scan recorded no p.txt or q.txt');
  const t0 = p.revision.mtimeNs;
  const received = [
    peers('new1.txt', 'new one\n', t0),
    peers('new2.txt', 'new two\n', t0),
    peers('p.txt', "the peer's p\n", p.revision.mtimeNs + 5n * SECOND_NS), // later: wins
    peers('q.txt', "the peer's q\n", q.revision.mtimeNs - 5n * SECOND_NS), // earlier: loses, kept as a copy
  ];
  const text = new Map(
    received.map((e, i) => [e.revision.path, ['new one\n', 'new two\n', "the peer's p\n"][i] ?? '']),
  );
  text.set(conflictPath('q.txt', received[3]?.revision.mtimeNs ?? 0n, PEER), "the peer's q\n");
  return { folder, store, p, q, received, text };
}

/** Applies `received` with a fetch that publishes the requests to `landing` paths, then fails with `failure`. */
function applyFailing(s: Setup, landing: readonly string[], failure: Error): ReturnType<typeof applyRemote> {
  return applyRemote(s.received, {
    store: s.store,
    folder: s.folder,
    keepConcurrentLocal: false,
    log: silentLogger,
    chunking: DEFAULT_CHUNKING,
    fsync: 'none',
    fetch: async (requests, beforePublish, beforeReplace, onFilePublished) => {
      await beforePublish(requests); // the peer offered everything
      const lands: FetchRequest[] = requests.filter((r) => landing.includes(r.destPath));
      await publishAsFetched(s.folder, lands, (dest) => Buffer.from(s.text.get(dest) ?? ''), beforeReplace);
      for (const r of lands) onFilePublished(r.destPath, lstatSync(join(s.folder, r.destPath), { bigint: true }));
      throw failure;
    },
  });
}

t.test('what landed whole before the fetch failed is recorded as the peer made it', async (t) => {
  const s = await setup(t);
  const [new1, new2, theirP, theirQ] = s.received;
  if (new1 === undefined || new2 === undefined || theirP === undefined || theirQ === undefined) throw new Error('4');
  const pCopy = conflictPath('p.txt', s.p.revision.mtimeNs, ME);
  const qCopy = conflictPath('q.txt', theirQ.revision.mtimeNs, PEER);
  const failure = new ClawpeerError('CONNECTION_CLOSED', 'the connection closed mid-fetch');
  // new1 and the peer's q (as its conflict copy) land; new2 and the peer's p do not.
  await t.rejects(applyFailing(s, ['new1.txt', qCopy], failure), failure, 'the fetch error is rethrown as is');

  t.equal(await readFile(join(s.folder, 'new1.txt'), 'utf8'), 'new one\n');
  t.same(s.store.head('new1.txt')?.id, new1.id, "a landed file's head is the peer's revision");
  t.equal(s.store.head('new1.txt')?.revision.origin, PEER);
  t.notOk(s.store.has(new2.id), 'a file that did not land is not recorded');
  t.equal(s.store.head('new2.txt'), undefined);

  // q: ours wins, the peer's loser is fetched to its copy: that unit landed whole.
  t.same(s.store.head('q.txt')?.id, s.q.id, 'our q stays the head');
  t.ok(s.store.has(theirQ.id), "the peer's losing q is recorded");
  t.same(s.store.head(qCopy)?.id, conflictCopyRevision(theirQ.revision, qCopy).id, 'its copy is recorded');

  // p: the peer's wins, our loser was copied aside before anything landed, the peer's p did
  // not land: the unit is not recorded, its copy is left to the next scan as before.
  t.ok(existsSync(join(s.folder, pCopy)), 'the copy of our p was made before the fetch failed');
  t.equal(await readFile(join(s.folder, 'p.txt'), 'utf8'), 'our p\n', 'p.txt is ours still');
  t.same(s.store.head('p.txt')?.id, s.p.id, "p's head did not move");
  t.notOk(s.store.has(theirP.id), "the peer's p is not recorded");
  t.equal(s.store.head(pCopy), undefined, 'nor the copy of a unit that did not land whole');

  // The next scan records no creation of the landed files here.
  await scanFolder(s.store, s.folder, { chunking: DEFAULT_CHUNKING });
  t.same(
    s.store.history('new1.txt').map((e) => e.revision.origin),
    [PEER],
    "new1.txt's history is the peer's revision alone",
  );
  t.same(
    s.store.history(qCopy).map((e) => e.revision.origin),
    [PEER],
    "the q copy's history is the peer's loser alone",
  );
  t.same(s.store.head('q.txt')?.id, s.q.id);
});

t.test('a log that cannot be written either: the first failure is rethrown, nothing recorded', async (t) => {
  const s = await setup(t);
  const failure = new ClawpeerError('IO', 'the disk is full');
  const write = s.store.write.bind(s.store);
  let writes = 0;
  s.store.write = () => {
    writes++;
    throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
  };
  t.teardown(() => {
    s.store.write = write;
  });
  await t.rejects(applyFailing(s, ['new1.txt'], failure), failure, 'the fetch error, not the log error');
  t.equal(writes, 2, 'the note of what would land (pending-landings.ts), then the landed unit were to be recorded');
  s.store.write = write;
  t.equal(s.store.head('new1.txt'), undefined, 'nothing recorded: the next scan records it, as before');
});

t.test('a fetch failing before anything landed records nothing', async (t) => {
  const s = await setup(t);
  const failure = new ClawpeerError('TIMEOUT', 'the peer stopped sending');
  const before = s.store.root();
  await t.rejects(applyFailing(s, [], failure), failure);
  t.same(s.store.root(), before, 'the log is as it was');
});

t.test('a later step that fails: the fetched files are recorded, the change that failed is not', async (t) => {
  const folder = await mkdtemp(join(tmpdir(), 'clawpeer-failedstep-'));
  t.teardown(() => rm(folder, { recursive: true, force: true }));
  await writeFile(join(folder, 'gone.txt'), 'deleted by the peer\n');
  const store = await RevisionStore.open(folder, { nodeId: ME });
  t.teardown(() => store.close());
  await scanFolder(store, folder, { chunking: DEFAULT_CHUNKING });
  const ours = store.head('gone.txt');
  if (ours === undefined) throw new Error('the scan recorded no gone.txt');
  const tombstone = revisionEntry({
    ...ours.revision,
    contentRoot: new Uint8Array(0),
    size: 0,
    deleted: true,
    origin: PEER,
    vector: vectorFrom({ [ME]: 1, [PEER]: 1 }),
  });
  const fresh = peers('new1.txt', 'new one\n', ours.revision.mtimeNs);
  // The deletion keeps our file in history, which cannot be written (a file where its directory goes).
  await writeFile(historyDir(folder), 'in the way\n');
  await t.rejects(
    applyRemote([tombstone, fresh], {
      store,
      folder,
      keepConcurrentLocal: false,
      log: silentLogger,
      chunking: DEFAULT_CHUNKING,
      fsync: 'none',
      fetch: async (requests, beforePublish, beforeReplace, onFilePublished) => {
        await beforePublish(requests);
        await publishAsFetched(folder, requests, () => Buffer.from('new one\n'), beforeReplace);
        for (const r of requests) onFilePublished(r.destPath, lstatSync(join(folder, r.destPath), { bigint: true }));
        return { delivered: [...requests], chunksReceived: 1 };
      },
    }),
    { message: /cannot keep .* in the folder's history/ },
    'the deletion fails the sync',
  );
  t.same(store.head('new1.txt')?.id, fresh.id, 'the fetched file is recorded');
  t.same(store.head('gone.txt')?.id, ours.id, 'the deletion that failed is not');
  t.ok(existsSync(join(folder, 'gone.txt')));
});
