// A sync killed after the fetch published some of the peer's files, before the log recorded them
// (folder-sync/pending-landings.ts): the next scan records each file still holding exactly what
// was published as the peer's revision, and a file edited since as this node's change. The kill
// is played in process: every log write after the note fails, so nothing else is recorded.
import t from 'tap';
import { lstatSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_CHUNKING } from '../../src/chunking/fastcdc.js';
import { scanFolder } from '../../src/folder-sync/folder-scanner.js';
import { landingsNote, recoverLandings } from '../../src/folder-sync/pending-landings.js';
import type { PathPlan } from '../../src/folder-sync/sync-plan.js';
import { applyRemote } from '../../src/folder-sync/sync-apply.js';
import type { FetchRequest } from '../../src/folder-sync/sync-exchange.js';
import { silentLogger } from '../../src/logger.js';
import { RevisionStore } from '../../src/store/revision-store.js';
import type { RevisionEntry } from '../../src/sync/revision.js';
import { publishAsFetched } from '../support/publish-as-fetched.js';
import { fileRevision } from '../support/file-revisions.js';

const ME = '12D3KooWCcccccccccccc';
const PEER = '12D3KooWBbbbbbbbbbbbb';

function peers(path: string, text: string, mtimeNs: bigint, vector: Record<string, number>): RevisionEntry {
  return fileRevision(path, PEER, vector, Buffer.from(text), mtimeNs);
}

t.test('after a kill mid-fetch the scan records landed files as the peer’s, edited ones as ours', async (t) => {
  const folder = await mkdtemp(join(tmpdir(), 'clawpeer-landings-'));
  t.teardown(() => rm(folder, { recursive: true, force: true }));
  await writeFile(join(folder, 'p.txt'), 'our p\n');
  const store = await RevisionStore.open(folder, { nodeId: ME });
  t.teardown(() => store.close());
  await scanFolder(store, folder, { chunking: DEFAULT_CHUNKING });
  const ours = store.head('p.txt');
  if (ours === undefined) throw new Error('no p.txt recorded');
  const t0 = ours.revision.mtimeNs - 60n * 1_000_000_000n;
  const text = new Map([
    ['new1.txt', 'new one\n'],
    ['new2.txt', 'new two\n'],
    ['p.txt', "the peer's p\n"],
    ['later.txt', 'never arrives\n'],
  ]);
  const received = [
    peers('new1.txt', 'new one\n', t0, { [PEER]: 1 }),
    peers('new2.txt', 'new two\n', t0, { [PEER]: 2 }),
    peers('p.txt', "the peer's p\n", t0, { [ME]: 1, [PEER]: 3 }), // saw ours: replaces it
    peers('later.txt', 'never arrives\n', t0, { [PEER]: 4 }),
  ];
  const write = store.write.bind(store);
  let writes = 0;
  store.write = ((fn: Parameters<RevisionStore['write']>[0]) => {
    if (++writes > 1) throw new Error('killed'); // the note went in; nothing after it
    return write(fn);
  }) as RevisionStore['write'];
  await t.rejects(
    applyRemote(received, {
      store,
      folder,
      keepConcurrentLocal: false,
      log: silentLogger,
      chunking: DEFAULT_CHUNKING,
      fsync: 'none',
      fetch: async (requests, beforePublish, beforeReplace, onFilePublished) => {
        await beforePublish(requests);
        const lands: FetchRequest[] = requests.filter((r) => r.destPath !== 'later.txt');
        await publishAsFetched(folder, lands, (dest) => Buffer.from(text.get(dest) ?? ''), beforeReplace);
        for (const r of lands) onFilePublished(r.destPath, lstatSync(join(folder, r.destPath), { bigint: true }));
        throw new Error('the connection was lost');
      },
    }),
  );
  store.write = write;
  t.equal(writes, 2, 'the note, then the record of what landed (which failed)');
  t.ok(store.pendingLandings() !== undefined, 'the note is left');
  t.equal(store.head('new1.txt'), undefined, 'nothing recorded yet');
  // A user's edit after the kill: other bytes, another mtime.
  await writeFile(join(folder, 'new2.txt'), 'edited here\n');

  await scanFolder(store, folder, { chunking: DEFAULT_CHUNKING });
  t.equal(store.pendingLandings(), undefined, 'the scan cleared the note');
  t.same(
    store.history('new1.txt').map((e) => e.id),
    [received[0]?.id],
    "new1.txt: the peer's revision alone",
  );
  t.same(
    store.history('p.txt').map((e) => e.id),
    [ours.id, received[2]?.id],
    "p.txt: ours, then the peer's that replaced it",
  );
  t.same(store.head('p.txt')?.id, received[2]?.id);
  t.same(
    store.history('new2.txt').map((e) => e.revision.origin),
    [ME],
    'new2.txt, edited since: recorded as this node’s',
  );
  t.equal(store.head('later.txt'), undefined, 'what never landed is not recorded');
  t.same(store.checkInvariants(), []);
});

t.test('a note cut short or of another layout is dropped, and the scan decides as before', async (t) => {
  const folder = await mkdtemp(join(tmpdir(), 'clawpeer-landings-'));
  t.teardown(() => rm(folder, { recursive: true, force: true }));
  const store = await RevisionStore.open(folder, { nodeId: ME });
  t.teardown(() => store.close());
  const mtimeNs = 1_700_000_000_000_000_000n;
  const e = peers('a.txt', 'from the peer\n', mtimeNs, { [PEER]: 1 });
  await writeFile(join(folder, 'a.txt'), 'from the peer\n');
  const plan: PathPlan = {
    path: 'a.txt',
    records: [e],
    local: undefined,
    head: e,
    action: { kind: 'fetch', request: { mtimeMs: Number(mtimeNs / 1_000_000n) } } as PathPlan['action'],
    copy: undefined,
    depth: 0,
    unit: 0,
  };
  const note = landingsNote([plan]);
  if (note === undefined) throw new Error('no note for a fetched file');
  for (const bad of [note.subarray(0, note.length - 1), Buffer.concat([note, Buffer.from([0])]), Buffer.from([1, 0])]) {
    store.write((w) => w.setLandings(bad));
    t.equal(await recoverLandings(store, folder, DEFAULT_CHUNKING, 0n), 0, `${bad.length} bytes: nothing recovered`);
    t.equal(store.pendingLandings(), undefined, 'and the note is gone');
    t.equal(store.head('a.txt'), undefined, 'nothing recorded from it');
  }
});
