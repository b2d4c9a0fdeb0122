// RevisionStore.withdraw (`folder revert`): local revisions no peer has are removed without
// being pruned; the head, path vector, warm entry, live-head count and Merkle root follow.
import t from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { blake3 } from '../../src/chunking/blake3.js';
import { RevisionStore } from '../../src/store/revision-store.js';
import type { RevisionDraft } from '../../src/store/revision-store.js';
import { MerkleIdSet } from '../../src/sync/merkle-root.js';
import { revisionEntry, type RevisionEntry } from '../../src/sync/revision.js';
import { formatVector, vectorFrom } from '../../src/sync/version-vector.js';

const NODE = 'local-node';
const PEER = 'peer-node';

async function tempFolder(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'clawpeer-withdraw-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

function fileDraft(path: string, n: number): RevisionDraft {
  const contentRoot = blake3(Buffer.from(`content ${n}`));
  return {
    path,
    kind: 'file',
    contentRoot,
    size: n,
    mode: 0o644,
    mtimeNs: BigInt(n) * 1_000_000n,
    deleted: false,
    linkTarget: '',
  };
}

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

/** The root of the ids a store holds as a set built from scratch. */
function rootOf(entries: readonly RevisionEntry[]): string {
  return hex(MerkleIdSet.fromIds(entries.map((e) => e.id)).root());
}

t.test('withdraw puts back the peer head, vector and root, and the ids can be stored again', async (t) => {
  const folder = await tempFolder();
  const store = await RevisionStore.open(folder, { nodeId: NODE });
  t.teardown(() => store.close());
  const peerV1 = revisionEntry({ ...fileDraft('doc.txt', 1), origin: PEER, vector: vectorFrom({ [PEER]: 1 }) });
  const peerOther = revisionEntry({ ...fileDraft('other.txt', 2), origin: PEER, vector: vectorFrom({ [PEER]: 2 }) });
  store.write((w) => {
    for (const e of [peerV1, peerOther]) {
      w.put(e);
      w.setHead(e.id);
    }
  });
  const rootBefore = hex(store.root());
  t.equal(rootBefore, rootOf([peerV1, peerOther]));
  // Two local edits of doc.txt and a local addition (with a warm entry each).
  const [edit1, edit2, added] = store.write((w) => {
    const a = w.recordLocal(fileDraft('doc.txt', 3));
    const b = w.recordLocal(fileDraft('doc.txt', 4));
    const c = w.recordLocal(fileDraft('new/added.txt', 5));
    const stat = { size: 5, mtimeNs: 5_000_000n, ino: 7n, dev: 1n, mode: 0o644 };
    w.setWarm('new/added.txt', stat);
    w.setWarm('doc.txt', { ...stat, size: 4, mtimeNs: 4_000_000n });
    return [a, b, c];
  });
  t.equal(store.size, 5);
  t.equal(store.liveHeadCount(), 3);
  t.equal(store.localCounter(), 3);
  t.not(hex(store.root()), rootBefore);

  const result = store.withdraw([edit1.id, edit2.id, added.id]);
  t.same(store.checkInvariants(), [], 'the store is consistent after the withdrawal');
  t.equal(result.removed.length, 3);
  t.equal(store.size, 2);
  t.equal(hex(store.root()), rootBefore, 'the Merkle root is the one before the local edits');
  t.equal(hex(store.head('doc.txt')!.id), hex(peerV1.id), "the peer's revision is the head again");
  t.equal(
    formatVector(store.pathVector('doc.txt')),
    formatVector(peerV1.revision.vector),
    'the vector of what is left',
  );
  t.equal(store.head('new/added.txt'), undefined, 'a local addition has no head any more');
  t.equal(store.pathVector('new/added.txt').size, 0);
  t.same(store.history('new/added.txt'), []);
  t.equal(store.liveHeadCount(), 2);
  t.notOk(store.isWarm('doc.txt', { size: 4, mtimeNs: 4_000_000n, ino: 7n, dev: 1n, mode: 0o644 }));
  t.notOk(store.isPruned(edit1.id), 'withdrawn, not pruned');
  t.equal(store.localCounter(), 3, 'the local counter is kept: no counter is reused');
  const doc = result.paths.find((p) => p.path === 'doc.txt')!;
  t.equal(hex(doc.headBefore!.id), hex(edit2.id));
  t.equal(hex(doc.headAfter!.id), hex(peerV1.id));
  t.equal(doc.withdrawn.length, 2);

  // A new local edit dominates what is left and takes a fresh counter.
  const again = store.write((w) => w.recordLocal(fileDraft('doc.txt', 6)));
  t.equal(again.revision.vector.get(NODE), 4);
  t.equal(again.revision.vector.get(PEER), 1);
  store.withdraw([again.id]);

  // Withdrawn ids are stored again when they come back (as a peer would send them).
  store.write((w) => {
    t.ok(w.put(added).added, 'a withdrawn revision is stored again');
    w.setHead(added.id);
  });
  t.ok(store.has(added.id));
  t.equal(hex(store.head('new/added.txt')!.id), hex(added.id));
  t.same(store.checkInvariants(), []);
  t.equal(hex(store.root()), rootOf([peerV1, peerOther, added]));

  // Reopened: what the log holds on disk agrees (ids, root, heads).
  await store.close();
  const reopened = await RevisionStore.open(folder, { nodeId: NODE });
  t.teardown(() => reopened.close());
  t.same(reopened.checkInvariants(), []);
  t.equal(hex(reopened.root()), rootOf([peerV1, peerOther, added]));
  t.equal(hex(reopened.head('doc.txt')!.id), hex(peerV1.id));
});

t.test('withdrawing a head that beat a peer revision makes the peer revision the head', async (t) => {
  const folder = await tempFolder();
  const store = await RevisionStore.open(folder, { nodeId: NODE });
  t.teardown(() => store.close());
  const local = store.write((w) => w.recordLocal(fileDraft('x', 1)));
  // A concurrent peer revision, stored and losing (as history): withdrawing ours leaves it.
  const theirs = revisionEntry({ ...fileDraft('x', 2), origin: PEER, vector: vectorFrom({ [PEER]: 1 }) });
  store.write((w) => w.put(theirs));
  t.equal(hex(store.head('x')!.id), hex(local.id));
  const r = store.withdraw([local.id, blake3(Buffer.from('not stored'))]);
  t.equal(r.removed.length, 1, 'an unknown id is ignored');
  t.equal(hex(store.head('x')!.id), hex(theirs.id));
  t.equal(store.liveHeadCount(), 1);
  t.same(store.checkInvariants(), []);
  t.equal(r.releasedContentRoots.length, 1, "the local revision's content root is released");
});
