// RevisionWriter.recordScanned: an edit a scan finds builds on the version this node last had on
// disk. Revisions a sync stored while the path was ignored here (the head left as it was) are
// not counted, so the edit is concurrent with them (a conflict), not newer (a silent overwrite).
import t, { type Test } from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { blake3 } from '../../src/chunking/blake3.js';
import { RevisionStore } from '../../src/store/revision-store.js';
import type { RevisionDraft } from '../../src/store/revision-store.js';
import { conflictPath, pickHead } from '../../src/sync/conflict.js';
import { revisionEntry, type RevisionEntry } from '../../src/sync/revision.js';
import { compareVectors, formatVector, vectorFrom } from '../../src/sync/version-vector.js';

const NODE = 'local-node';
const PEER = 'peer-node';

async function openStore(t: Test): Promise<RevisionStore> {
  const dir = await mkdtemp(join(tmpdir(), 'clawpeer-scanned-'));
  const store = await RevisionStore.open(dir, { nodeId: NODE });
  t.teardown(async () => {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
  return store;
}

function fileDraft(path: string, n: number): RevisionDraft {
  return {
    path,
    kind: 'file',
    contentRoot: blake3(Buffer.from(`content ${n}`)),
    size: n,
    mode: 0o644,
    mtimeNs: BigInt(n) * 1_000_000n,
    deleted: false,
    linkTarget: '',
  };
}

const peerRev = (n: number, vector: Record<string, number>, path = 'doc.txt'): RevisionEntry =>
  revisionEntry({ ...fileDraft(path, n), origin: PEER, vector: vectorFrom(vector) });
const order = (a: RevisionEntry, b: RevisionEntry): string => compareVectors(a.revision.vector, b.revision.vector);

t.test("an edit of a path whose head stayed behind the peers' revisions is concurrent with them", async (t) => {
  const store = await openStore(t);
  const first = store.write((w) => w.recordLocal(fileDraft('doc.txt', 1)));
  // A sync while doc.txt was ignored here: the peer's edit stored, the head left (sync-plan.ts).
  const peers = peerRev(2, { [NODE]: 1, [PEER]: 1 });
  store.write((w) => w.put(peers));
  t.equal(order(first, peers), 'before');

  const edit = store.write((w) => w.recordScanned(fileDraft('doc.txt', 3)));
  t.equal(formatVector(edit.revision.vector), formatVector(vectorFrom({ [NODE]: 2 })), 'built on the head only');
  t.equal(order(edit, peers), 'concurrent', "the edit has not seen the peer's");
  t.equal(store.head('doc.txt')?.revision.contentRoot.length, 32);
  t.same(store.head('doc.txt')?.id, edit.id, 'the edit is the head');
  t.equal(
    formatVector(store.pathVector('doc.txt')),
    formatVector(vectorFrom({ [NODE]: 2, [PEER]: 1 })),
    'the path vector still merges every stored revision',
  );
  t.same(store.checkInvariants(), []);
  const pick = pickHead(store.history('doc.txt'));
  t.equal(pick?.losers.length, 1, 'the two meet as a conflict');

  // The edit wins (later mtime); until the peer's is kept as a conflict copy, a second edit
  // here must not count it either: seen together, it would replace the peer's unseen.
  t.same(pick?.head.id, edit.id);
  const next = store.write((w) => w.recordScanned(fileDraft('doc.txt', 4)));
  t.equal(order(next, edit), 'after');
  t.equal(order(next, peers), 'concurrent', 'the unsettled conflict is still not counted');
  const copy = revisionEntry({ ...peers.revision, path: conflictPath('doc.txt', peers.revision.mtimeNs, PEER) });
  store.write((w) => {
    w.put(copy);
    w.setHead(copy.id);
  });
  const settled = store.write((w) => w.recordScanned(fileDraft('doc.txt', 5)));
  t.equal(order(settled, peers), 'after', 'once copied, the next edit has seen it');
});

t.test('a path the peers added while ignored here, made here too: concurrent, not newer', async (t) => {
  const store = await openStore(t);
  const peers = peerRev(1, { [PEER]: 1 });
  store.write((w) => w.put(peers)); // no head: ignored here
  const made = store.write((w) => w.recordScanned(fileDraft('doc.txt', 2)));
  t.equal(order(made, peers), 'concurrent');
});

t.test('a deletion found by the scan builds on the head the same way', async (t) => {
  const store = await openStore(t);
  store.write((w) => w.recordLocal(fileDraft('doc.txt', 1)));
  const peers = peerRev(2, { [NODE]: 1, [PEER]: 1 });
  store.write((w) => w.put(peers));
  const gone = store.write((w) =>
    w.recordScanned({ ...fileDraft('doc.txt', 3), contentRoot: new Uint8Array(0), size: 0, deleted: true }),
  );
  t.equal(order(gone, peers), 'concurrent');
  t.same(pickHead(store.history('doc.txt'))?.head.id, peers.id, "the peer's edit beats the deletion");
});

t.test('a head that is what the revisions pick: the edit has seen them all, settled losers included', async (t) => {
  const store = await openStore(t);
  store.write((w) => w.recordLocal(fileDraft('doc.txt', 1)));
  // A peer's edit taken by a sync.
  const taken = peerRev(2, { [NODE]: 1, [PEER]: 1 });
  store.write((w) => {
    w.put(taken);
    w.setHead(taken.id);
  });
  const edit = store.write((w) => w.recordScanned(fileDraft('doc.txt', 3)));
  t.equal(order(edit, taken), 'after');

  // A concurrent peer edit that lost, kept as a conflict copy: settled, the next edit counts it.
  const loser = peerRev(1, { [PEER]: 2 }, 'doc.txt');
  const copy = revisionEntry({ ...loser.revision, path: conflictPath('doc.txt', loser.revision.mtimeNs, PEER) });
  store.write((w) => {
    w.put(loser);
    w.put(copy);
    w.setHead(copy.id);
  });
  t.same(pickHead(store.history('doc.txt'))?.head.id, edit.id);
  const next = store.write((w) => w.recordScanned(fileDraft('doc.txt', 4)));
  t.equal(order(next, loser), 'after');
});

t.test('recordLocal (folder override) still builds on every stored revision', async (t) => {
  const store = await openStore(t);
  store.write((w) => w.recordLocal(fileDraft('doc.txt', 1)));
  const peers = peerRev(2, { [NODE]: 1, [PEER]: 1 });
  store.write((w) => w.put(peers));
  const over = store.write((w) => w.recordLocal(fileDraft('doc.txt', 3)));
  t.equal(order(over, peers), 'after');
});

t.test('a path too long for a conflict copy beside it: the edit is recorded, not refused', async (t) => {
  // 4,080 bytes: a valid path, whose conflict copy's name (a longer last segment) is not. Two
  // peers' concurrent edits stored while it was ignored here: the scan asked whether each was
  // copied already by building the copy's revision, which threw PATH_INVALID, so the scan, and
  // every sync after it, failed while the edit stayed on disk.
  const long = [...Array.from({ length: 15 }, () => 'd'.repeat(250)), 'x'.repeat(80), 'y'.repeat(230) + '.txt'].join(
    '/',
  );
  t.equal(Buffer.byteLength(long), 4080);
  const store = await openStore(t);
  store.write((w) => w.recordLocal(fileDraft(long, 1)));
  const a = peerRev(2, { [NODE]: 1, [PEER]: 1 }, long);
  const b = revisionEntry({
    ...fileDraft(long, 3),
    origin: 'other-node',
    vector: vectorFrom({ [NODE]: 1, 'other-node': 1 }),
  });
  store.write((w) => {
    w.put(a);
    w.put(b);
  });
  const edit = store.write((w) => w.recordScanned(fileDraft(long, 4)));
  t.equal(order(edit, a), 'concurrent', "the edit has not seen the peers' edits");
  t.equal(order(edit, b), 'concurrent');
  t.same(store.checkInvariants(), []);
});
