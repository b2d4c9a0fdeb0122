import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { open, type RootDatabase } from 'lmdb';
import { blake3 } from '../../src/chunking/blake3.js';
import { RevisionStore } from '../../src/store/revision-store.js';
import type { RevisionDraft } from '../../src/store/revision-store.js';
import { EMPTY_SET_ROOT, MerkleIdSet } from '../../src/sync/merkle-root.js';
import { revisionEntry } from '../../src/sync/revision.js';
import { compareVectors, counterOf, vectorFrom } from '../../src/sync/version-vector.js';

const NODE = 'local-node';
const PEER = 'peer-node';
const THIRD = 'third-node';

async function tempFolder(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'clawpeer-revlog-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

function content(n: number): Uint8Array {
  return blake3(Buffer.from(`content ${n}`));
}

function fileDraft(path: string, n: number, mtimeNs = BigInt(n)): RevisionDraft {
  return { path, kind: 'file', contentRoot: content(n), size: n, mode: 0o644, mtimeNs, deleted: false, linkTarget: '' };
}

/** The folder's LMDB environment opened directly, as a test rewrites what the store wrote. */
function rawRevlog(folder: string): RootDatabase<Buffer, Buffer> {
  return open<Buffer, Buffer>({
    path: join(folder, '.clawpeer', 'revlog'),
    maxDbs: 12,
    encoding: 'binary',
    keyEncoding: 'binary',
  });
}

function hex(b: Uint8Array): string {
  return Buffer.from(b).toString('hex');
}

t.test('a batch of 100 local revisions commits once; ids, heads, root and counter persist across reopen', async (t) => {
  const folder = await tempFolder();
  const store = await RevisionStore.open(folder, { nodeId: NODE });
  t.equal(store.size, 0);
  t.equal(hex(store.root()), hex(EMPTY_SET_ROOT));
  const entries = store.write((w) =>
    Array.from({ length: 100 }, (_, i) => w.recordLocal(fileDraft(`dir/f${i}.txt`, i))),
  );
  t.equal(store.size, 100);
  t.equal(store.localCounter(), 100, 'one counter across paths, one step per revision');
  t.same(
    entries.map((e) => counterOf(e.revision.vector, NODE)),
    Array.from({ length: 100 }, (_, i) => i + 1),
  );
  t.equal(hex(store.root()), hex(MerkleIdSet.fromIds(entries.map((e) => e.id)).root()));
  t.equal([...store.heads()].length, 100);
  t.equal(hex(store.head('dir/f7.txt')!.id), hex(entries[7]!.id));
  t.same(store.checkInvariants(), []);
  const root = store.root();
  await store.close();

  const again = await RevisionStore.open(folder, { nodeId: NODE });
  t.equal(again.size, 100);
  t.equal(hex(again.root()), hex(root));
  t.equal(again.localCounter(), 100);
  t.equal(hex(again.getEncoded(entries[3]!.id)!), hex(entries[3]!.encoded));
  t.equal(again.get(entries[3]!.id)!.revision.path, 'dir/f3.txt');
  const next = again.write((w) => w.recordLocal(fileDraft('dir/f3.txt', 1000)));
  t.equal(counterOf(next.revision.vector, NODE), 101, 'counter continues after reopen');
  t.equal(compareVectors(entries[3]!.revision.vector, next.revision.vector), 'before');
  t.same(
    again.history('dir/f3.txt').map((e) => hex(e.id)),
    [hex(entries[3]!.id), hex(next.id)],
  );
  t.same(again.checkInvariants(), []);
  await again.close();
});

t.test('a write that throws leaves nothing behind', async (t) => {
  const store = await RevisionStore.open(await tempFolder(), { nodeId: NODE });
  t.teardown(() => store.close());
  store.write((w) => w.recordLocal(fileDraft('a', 1)));
  const root = store.root();
  t.throws(
    () =>
      store.write((w) => {
        w.recordLocal(fileDraft('a', 2));
        w.recordLocal(fileDraft('b', 3));
        throw new Error('scan failed half-way');
      }),
    /half-way/,
  );
  t.equal(store.size, 1);
  t.equal(hex(store.root()), hex(root));
  t.equal(store.localCounter(), 1);
  t.equal(store.head('b'), undefined);
  t.equal(store.head('a')!.revision.size, 1);
  t.same(store.checkInvariants(), []);
});

t.test(
  'remote revisions: put is idempotent and does not move the head; a later local edit dominates them',
  async (t) => {
    const store = await RevisionStore.open(await tempFolder(), { nodeId: NODE });
    t.teardown(() => store.close());
    const mine = store.write((w) => w.recordLocal(fileDraft('doc', 1)));
    const theirs = revisionEntry({ ...fileDraft('doc', 2), origin: PEER, vector: vectorFrom({ [PEER]: 40 }) });
    const first = store.write((w) => w.put(theirs));
    const second = store.write((w) => w.put(theirs));
    t.ok(first.added);
    t.notOk(second.added);
    t.equal(store.size, 2);
    t.ok(store.has(theirs.id));
    t.equal(hex(store.head('doc')!.id), hex(mine.id), 'head unchanged by put');
    t.equal(compareVectors(mine.revision.vector, theirs.revision.vector), 'concurrent');
    store.write((w) => w.setHead(theirs.id));
    t.equal(hex(store.head('doc')!.id), hex(theirs.id));
    const edit = store.write((w) => w.recordLocal(fileDraft('doc', 3)));
    t.equal(compareVectors(mine.revision.vector, edit.revision.vector), 'before');
    t.equal(compareVectors(theirs.revision.vector, edit.revision.vector), 'before');
    t.same(store.pathVector('doc'), vectorFrom({ [NODE]: 2, [PEER]: 40 }));
    t.throws(() => store.write((w) => w.setHead(new Uint8Array(32))), TypeError);
    t.throws(() => store.write((w) => w.put({ ...theirs, id: new Uint8Array(32) })), /does not hash to its id/);
    t.same(store.checkInvariants(), []);
  },
);

t.test('gc keeps the last N per path and the head, and releases only unreferenced content roots', async (t) => {
  const store = await RevisionStore.open(await tempFolder(), { nodeId: NODE });
  t.teardown(() => store.close());
  const revs = store.write((w) => [1, 2, 3, 4, 5].map((n) => w.recordLocal(fileDraft('a', n))));
  store.write((w) => w.recordLocal(fileDraft('b', 1))); // shares content 1 with a's first revision
  const c = store.write((w) => [10, 11, 12, 13].map((n) => w.recordLocal(fileDraft('c', n))));
  store.write((w) => w.setHead(c[0]!.id)); // c's head is its oldest revision
  t.equal(store.size, 10);

  const result = store.gc(2);
  t.equal(result.removedRevisions, 4, 'a loses 3 (keeps 4, 5); c loses 11 (keeps newest 12, 13 and its head 10)');
  t.same(
    result.releasedContentRoots.map(hex).sort(),
    [content(2), content(3), content(11)].map(hex).sort(),
    'content 1 is still used by b',
  );
  t.same(
    store.history('a').map((e) => hex(e.id)),
    [revs[3]!, revs[4]!].map((e) => hex(e.id)),
  );
  t.same(
    store.history('c').map((e) => e.revision.size),
    [10, 12, 13],
  );
  t.equal(store.get(revs[0]!.id), undefined);
  t.notOk(store.has(revs[0]!.id));
  t.equal(hex(store.root()), hex(MerkleIdSet.fromPacked(store.allIds()).root()));
  t.same(store.checkInvariants(), []);
  t.same(store.gc(2), { removedRevisions: 0, releasedContentRoots: [] }, 'idempotent');
  t.throws(() => store.gc(0), { code: 'USAGE' });
});

t.test('gc records what it dropped as pruned; prune drops what a peer pruned, never a head', async (t) => {
  const store = await RevisionStore.open(await tempFolder(), { nodeId: NODE });
  t.teardown(() => store.close());
  const a = store.write((w) => [1, 2, 3].map((n) => w.recordLocal(fileDraft('a', n))));
  const b = store.write((w) => [4, 5, 6].map((n) => w.recordLocal(fileDraft('b', n))));
  store.gc(2);
  t.ok(store.isPruned(a[0]!.id), "gc's drop is recorded");
  t.notOk(store.isPruned(a[1]!.id));
  t.same(store.prunedAmong([a[0]!.id, a[1]!.id]).map(hex), [hex(a[0]!.id)]);
  t.ok(store.isPruned(b[0]!.id));
  // A peer says it pruned b's second and b's head: the head stays (and is not recorded).
  const unknown = content(99);
  const result = store.prune([b[1]!.id, b[2]!.id, unknown]);
  t.equal(result.removedRevisions, 1);
  t.same(result.releasedContentRoots.map(hex), [hex(content(5))]);
  t.same(
    store.history('b').map((e) => e.revision.size),
    [6],
  );
  t.ok(store.isPruned(b[1]!.id) && store.isPruned(unknown), 'dropped and unknown ids are recorded');
  t.notOk(store.isPruned(b[2]!.id), 'a head is not');
  t.equal(store.prunedCount(), 4);
  t.same(store.checkInvariants(), []);
  t.equal(hex(store.root()), hex(MerkleIdSet.fromPacked(store.allIds()).root()));
});

t.test('gc and a peer-told prune keep a maximal revision that is not the head', async (t) => {
  // The three-device cycle: edit C loses to edit H here (older mtime); a deletion D that saw H
  // but not C comes later. A node holding C picks C (an edit beats a deletion), so a node that
  // dropped C would refuse it forever and the two would never agree.
  const store = await RevisionStore.open(await tempFolder(), { nodeId: NODE });
  t.teardown(() => store.close());
  const old = store.write((w) => w.recordLocal(fileDraft('p', 1)));
  const c = revisionEntry({ ...fileDraft('p', 3, 100n), origin: PEER, vector: vectorFrom({ [NODE]: 1, [PEER]: 1 }) });
  const h = revisionEntry({ ...fileDraft('p', 2, 200n), origin: THIRD, vector: vectorFrom({ [NODE]: 1, [THIRD]: 1 }) });
  store.write((w) => {
    w.put(c);
    w.put(h);
    w.setHead(h.id);
  });
  t.equal(compareVectors(c.revision.vector, h.revision.vector), 'concurrent');
  t.equal(hex(store.head('p')!.id), hex(h.id), 'H is the head');
  const result = store.gc(1);
  t.equal(result.removedRevisions, 1, 'only the dominated first version goes');
  t.ok(store.isPruned(old.id));
  t.ok(store.has(c.id) && !store.isPruned(c.id), 'the concurrent loser stays');
  t.equal(store.prune([c.id]).removedRevisions, 0, 'a peer saying it pruned C does not drop it here either');
  t.ok(store.has(c.id));
  t.same(store.checkInvariants(), []);
});

t.test('the peer a folder syncs with is recorded for restore', async (t) => {
  const store = await RevisionStore.open(await tempFolder(), { nodeId: NODE });
  t.teardown(() => store.close());
  t.equal(store.syncingPeer(), undefined);
  store.recordSyncingPeer(PEER, 'docs');
  t.same(store.syncingPeer(), { peerId: PEER, share: 'docs' });
  store.recordSyncingPeer(PEER, '');
  t.same(store.syncingPeer(), { peerId: PEER, share: '' });
});

t.test('warm entries are certified for one head', async (t) => {
  const store = await RevisionStore.open(await tempFolder(), { nodeId: NODE });
  t.teardown(() => store.close());
  const mode = fileDraft('f', 5).mode;
  const stat = { size: 5, mtimeNs: 123n, ino: 77n, dev: 9n, mode };
  const first = store.write((w) => {
    const e = w.recordLocal(fileDraft('f', 5));
    w.setWarm('f', stat);
    return e;
  });
  t.equal(store.isWarm('f', stat), true, `warm for ${hex(first.id)}`);
  for (const [field, changed] of [
    ['size', { ...stat, size: 6 }],
    ['mtime', { ...stat, mtimeNs: 124n }],
    ['inode', { ...stat, ino: 78n }],
    ['device', { ...stat, dev: 10n }],
    ['mode', { ...stat, mode: mode ^ 0o100 }],
  ] as const) {
    t.equal(store.isWarm('f', changed), false, `another ${field} is not warm`);
  }
  t.equal(store.isWarm('g', stat), false, 'a path without an entry');
  t.equal(store.isWarm(`d/${'é'.repeat(126)}€`, stat), false, 'a name of exactly 255 bytes has a key');
  // 256 bytes, cut by the key buffer 2 bytes short of its end (before the 3-byte '€'): refused,
  // never a shorter key that another name could share.
  t.throws(() => store.isWarm(`d/${'é'.repeat(126)}a€`, stat), TypeError);
  store.write((w) => w.recordLocal(fileDraft('f', 6)));
  t.equal(store.isWarm('f', stat), false, 'a moved head makes the warm entry stale');
  store.write((w) => w.setWarm('f', stat));
  t.equal(store.isWarm('f', stat), true, 'certified again for the new head');
  store.write((w) => w.setWarm('f', undefined));
  t.equal(store.isWarm('f', stat), false, 'removed');
  t.throws(() => store.write((w) => w.setWarm('nope', stat)), TypeError);
  t.throws(
    () => store.write((w) => w.setWarm('f', { ...stat, mode: mode ^ 0o100 })),
    TypeError,
    "the mode must be the head's",
  );
  const kept = { ...stat, mode: mode ^ 0o100 };
  store.write((w) => w.setWarm('f', kept, { modeKept: true }));
  t.equal(store.isWarm('f', kept), true, 'unless the file could not take it: the mode it kept is certified');
  t.equal(store.isWarm('f', stat), false, "then the head's own mode is not");
  t.same(store.checkInvariants(), [], 'and the store is consistent');
  store.write((w) => w.recordLocal({ ...fileDraft('f', 0), kind: 'dir', contentRoot: new Uint8Array(0) }));
  t.throws(() => store.write((w) => w.setWarm('f', stat)), TypeError, 'only a live file head can be warm');
  const keys = [...store.headPathKeys()];
  t.equal(keys.length, 1);
  t.equal(keys[0], RevisionStore.pathKeyOf('f'));
  t.equal(store.headByKey(keys[0]!)?.revision.path, 'f');
});

t.test('the live-head count follows adds, edits, tombstones, comebacks and remote heads', async (t) => {
  const store = await RevisionStore.open(await tempFolder(), { nodeId: NODE });
  t.teardown(() => store.close());
  const tombstone = (path: string): RevisionDraft => ({
    ...fileDraft(path, 0),
    contentRoot: new Uint8Array(0),
    deleted: true,
  });
  const steps: [string, () => void, number][] = [
    [
      'two new files',
      () => store.write((w) => [w.recordLocal(fileDraft('a', 1)), w.recordLocal(fileDraft('b', 2))]),
      2,
    ],
    ['an edit', () => store.write((w) => w.recordLocal(fileDraft('a', 3))), 2],
    ['a tombstone', () => store.write((w) => w.recordLocal(tombstone('b'))), 1],
    ['a second tombstone of a deleted path', () => store.write((w) => w.recordLocal(tombstone('b'))), 1],
    ['a tombstone for a path never seen', () => store.write((w) => w.recordLocal(tombstone('c'))), 1],
    ['a comeback', () => store.write((w) => w.recordLocal(fileDraft('b', 4))), 2],
    [
      'a remote revision stored, head not moved',
      () =>
        store.write((w) =>
          w.put(revisionEntry({ ...tombstone('a'), origin: PEER, vector: vectorFrom({ [PEER]: 1 }) })),
        ),
      2,
    ],
    [
      'a remote tombstone made the head',
      () =>
        store.write((w) => {
          const e = w.put(
            revisionEntry({ ...tombstone('a'), origin: PEER, vector: vectorFrom({ [PEER]: 2, [NODE]: 9 }) }),
          ).entry;
          w.setHead(e.id);
          w.setHead(e.id); // again: no change
        }),
      1,
    ],
  ];
  for (const [what, step, expected] of steps) {
    step();
    t.equal(store.liveHeadCount(), expected, what);
    t.same(store.checkInvariants(), [], `${what}: invariants`);
  }
  t.throws(
    () =>
      store.write((w) => {
        w.recordLocal(fileDraft('z', 1));
        throw new Error('rolled back');
      }),
    /rolled back/,
  );
  t.equal(store.liveHeadCount(), 1, 'a rolled-back write leaves the count');
});

t.test('a format 1 store is upgraded in place: warm entries still certified move, stale ones go', async (t) => {
  const folder = await tempFolder();
  const mode = fileDraft('x', 1).mode;
  const stat = (n: number): { size: number; mtimeNs: bigint; ino: bigint; dev: bigint; mode: number } => ({
    size: n,
    mtimeNs: BigInt(n),
    ino: BigInt(n),
    dev: 1n,
    mode,
  });
  const store = await RevisionStore.open(folder, { nodeId: NODE });
  store.write((w) => {
    for (const [p, n] of [
      ['top.txt', 1],
      ['dir/sub/deep.txt', 2],
      ['dir/stale.txt', 3],
      ['gone.txt', 4],
    ] as const) {
      w.recordLocal(fileDraft(p, n));
      w.setWarm(p, stat(n));
    }
    w.recordLocal({ ...fileDraft('gone.txt', 0), contentRoot: new Uint8Array(0), deleted: true });
  });
  const staleHead = store.head('dir/stale.txt')!.id;
  store.write((w) => w.recordLocal(fileDraft('dir/stale.txt', 5)));
  await store.close();

  // Rewrite it as format 1 wrote it: warm entries under the path's key (BLAKE3 of the path) in
  // 'warm', no live-head count. One entry is certified for a head that has moved since.
  const env = rawRevlog(folder);
  const sub = (name: string) => env.openDB<Buffer, Buffer>({ name, encoding: 'binary', keyEncoding: 'binary' });
  const [heads, oldWarm, newWarm, meta] = [sub('heads'), sub('warm'), sub('warmfiles'), sub('meta')];
  const pathKey = (p: string): Buffer => Buffer.from(blake3(Buffer.from(p, 'utf8')));
  const v1Entry = (headId: Uint8Array, n: number): Buffer => {
    const v = Buffer.alloc(68);
    v.set(headId, 0);
    v.writeBigUInt64BE(BigInt(n), 32);
    v.writeBigInt64BE(BigInt(n), 40);
    v.writeBigUInt64BE(BigInt(n), 48);
    v.writeBigUInt64BE(1n, 56);
    v.writeUInt32BE(mode, 64);
    return v;
  };
  env.transactionSync(() => {
    newWarm.clearSync();
    for (const [p, n] of [
      ['top.txt', 1],
      ['dir/sub/deep.txt', 2],
    ] as const)
      oldWarm.putSync(pathKey(p), v1Entry(heads.get(pathKey(p))!, n));
    oldWarm.putSync(pathKey('dir/stale.txt'), v1Entry(staleHead, 3));
    meta.removeSync(Buffer.from('liveheads', 'latin1'));
    const v = Buffer.alloc(8);
    v.writeBigUInt64BE(1n);
    meta.putSync(Buffer.from('format', 'latin1'), v);
  });
  await env.close();

  const upgraded = await RevisionStore.open(folder, { nodeId: NODE });
  t.equal(upgraded.isWarm('top.txt', stat(1)), true, 'a top-level entry moved');
  t.equal(upgraded.isWarm('dir/sub/deep.txt', stat(2)), true, 'a nested entry moved');
  t.equal(upgraded.isWarm('dir/stale.txt', stat(3)), false, 'an entry certified for an old head is dropped');
  t.equal(upgraded.liveHeadCount(), 3, 'live heads counted (the tombstone is not)');
  t.same(upgraded.checkInvariants(), []);
  await upgraded.close();
  const again = await RevisionStore.open(folder, { nodeId: NODE });
  t.equal(again.isWarm('top.txt', stat(1)), true, 'the upgrade persisted');
  await again.close();

  const env3 = rawRevlog(folder);
  const v3 = Buffer.alloc(8);
  v3.writeBigUInt64BE(3n);
  env3.transactionSync(() =>
    env3
      .openDB<Buffer, Buffer>({ name: 'meta', encoding: 'binary', keyEncoding: 'binary' })
      .putSync(Buffer.from('format', 'latin1'), v3),
  );
  await env3.close();
  await t.rejects(
    RevisionStore.open(folder, { nodeId: NODE }),
    { code: 'IO', message: /layout version 3/ },
    'a newer layout is refused, not misread',
  );
});

// A child process writes batches of 100 edits (and runs gc now and then) as fast as it can; we
// SIGKILL it mid-stream, reopen, and check the store is exactly some committed prefix.
const CHILD = `
const { RevisionStore } = await import(process.argv[1]);
const { blake3 } = await import(process.argv[2]);
const store = await RevisionStore.open(process.argv[3], { nodeId: 'crash-node' });
for (let batch = 1; ; batch++) {
  store.write((w) => {
    for (let i = 0; i < 100; i++) {
      w.recordLocal({ path: 'p' + i, kind: 'file', contentRoot: blake3(Buffer.from(batch + '/' + i)), size: batch,
        mode: 0o644, mtimeNs: BigInt(batch), deleted: false, linkTarget: '' });
    }
  });
  if (batch % 4 === 0) store.gc(2);
  process.stdout.write(batch + '\\n');
}
`;

async function runAndKill(folder: string, killAfterBatches: number): Promise<number> {
  const storeUrl = new URL('../../src/store/revision-store.js', import.meta.url).href;
  const blakeUrl = new URL('../../src/chunking/blake3.js', import.meta.url).href;
  const child = spawn(process.execPath, ['--input-type=module', '-e', CHILD, storeUrl, blakeUrl, folder], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let seen = 0;
  const lines = createInterface({ input: child.stdout });
  await new Promise<void>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code, signal) =>
      signal === 'SIGKILL' ? resolve() : reject(new Error(`child exited with ${code ?? signal}`)),
    );
    lines.on('line', (line) => {
      seen = Number(line);
      if (seen === killAfterBatches) child.kill('SIGKILL');
    });
  });
  return seen;
}

t.test('SIGKILL mid-write leaves a consistent store that holds whole batches', async (t) => {
  const folder = await tempFolder();
  for (const [round, killAfter] of [3, 9].entries()) {
    const reported = await runAndKill(folder, killAfter);
    const store = await RevisionStore.open(folder, { nodeId: 'crash-node' });
    t.same(store.checkInvariants(), [], `consistent after kill at batch ${killAfter}`);
    const heads = [...store.heads()];
    t.equal(heads.length, 100);
    const batches = new Set(heads.map((h) => h.revision.mtimeNs));
    t.equal(batches.size, 1, 'every head from the same batch: a batch commits whole or not at all');
    const lastBatch = Number([...batches][0]);
    t.ok(lastBatch >= reported, `batch ${lastBatch} >= last reported ${reported}`);
    t.equal(store.localCounter() % 100, round, 'counter: whole batches plus one edit per earlier round');
    t.ok(
      heads.every((h) => store.history(h.revision.path).length <= 8),
      'gc ran: short histories',
    );
    // Carry on writing after the crash: the counter moves on, nothing collides.
    const after = store.write((w) => w.recordLocal(fileDraft('p0', 99_999)));
    t.equal(counterOf(after.revision.vector, 'crash-node'), store.localCounter());
    t.same(store.checkInvariants(), []);
    await store.close();
  }
});

t.test('gcWith trashcan drops what was replaced before its window, keeps the head; keep-last:N is gc(N)', async (t) => {
  const folder = await tempFolder();
  const store = await RevisionStore.open(folder, { nodeId: NODE });
  t.teardown(() => store.close());
  const DAY_NS = 86_400_000_000_000n;
  const now = 100n * DAY_NS;
  // f: versions made on days 10, 50, 95, 99 (each replaced when the next was made).
  const f = [10n, 50n, 95n, 99n].map((d, i) => store.write((w) => w.recordLocal(fileDraft('f', 100 + i, d * DAY_NS))));
  const gone = store.write((w) =>
    w.recordLocal({
      path: 'gone',
      kind: 'file',
      contentRoot: content(200),
      size: 1,
      mode: 0o644,
      mtimeNs: 20n * DAY_NS,
      deleted: false,
      linkTarget: '',
    }),
  );
  store.write((w) =>
    w.recordLocal({
      path: 'gone',
      kind: 'file',
      contentRoot: new Uint8Array(0),
      size: 0,
      mode: 0o644,
      mtimeNs: 98n * DAY_NS,
      deleted: true,
      linkTarget: '',
    }),
  );
  const r = store.gcWith({ kind: 'trashcan', days: 10 }, Number(now / 1_000_000n));
  t.equal(r.removedRevisions, 1, "f's day 10 version (replaced on day 50, before day 90)");
  t.ok(
    store.get(f[1]!.id) !== undefined && store.get(f[2]!.id) !== undefined,
    'replaced on days 95 and 99: in the window',
  );
  t.ok(store.get(f[3]!.id) !== undefined, 'the head');
  t.ok(store.get(gone.id) !== undefined, 'deleted on day 98: the deleted content is in the trash can');
  t.same(r.releasedContentRoots.map(hex), [hex(content(100))]);
  t.ok(store.isPruned(f[0]!.id), 'recorded as pruned, as gc does');
  t.same(store.checkInvariants(), []);
  t.equal(
    store.gcWith({ kind: 'keep-last', count: 1 }, 0).removedRevisions,
    3,
    'keep-last:1 as gc(1): f days 50 and 95, and the deleted content',
  );
  t.same(store.checkInvariants(), []);
});

t.test(
  "gcWith 'touched' visits only the paths that gained revisions since this store's last gc, all on its first",
  async (t) => {
    const folder = await tempFolder();
    const before = await RevisionStore.open(folder, { nodeId: NODE });
    // a and b each with three revisions, recorded by another store object (another process, say).
    for (let i = 0; i < 3; i++)
      before.write((w) => {
        w.recordLocal(fileDraft('a', 10 + i));
        w.recordLocal(fileDraft('b', 20 + i));
      });
    await before.close();
    const store = await RevisionStore.open(folder, { nodeId: NODE });
    t.teardown(() => store.close());
    const keepOne = { kind: 'keep-last', count: 1 } as const;
    const keepTwo = { kind: 'keep-last', count: 2 } as const;
    t.equal(store.fullGcAtMs, undefined);
    // What was stored before this object opened is in no touched set: its first gc walks all.
    t.equal(store.gcWith(keepTwo, 5, 'touched').removedRevisions, 2, "a's and b's oldest");
    t.equal(store.fullGcAtMs, 5, 'a walk of all, recorded');
    store.write((w) => w.recordLocal(fileDraft('a', 13)));
    t.equal(store.gcWith(keepOne, 7, 'touched').removedRevisions, 2, "a's two older revisions; b is not visited");
    t.equal(store.history('b').length, 2, 'b keeps its history');
    t.equal(store.fullGcAtMs, 5, 'not a walk of all');
    t.equal(store.gcWith(keepOne, 8, 'touched').removedRevisions, 0, 'the touched set is emptied by a gc');
    t.equal(store.gcWith(keepOne, 9).removedRevisions, 1, "a walk of all drops b's");
    t.equal(store.fullGcAtMs, 9);
    t.same(store.checkInvariants(), []);
  },
);

t.test('isLiveFileHead answers as the decoded head does, reading the header alone', async (t) => {
  const folder = await tempFolder();
  const store = await RevisionStore.open(folder, { nodeId: NODE });
  t.teardown(() => store.close());
  store.write((w) => {
    w.recordLocal(fileDraft('live.txt', 1));
    w.recordLocal(fileDraft('edited.txt', 2));
    w.recordLocal(fileDraft('edited.txt', 3));
    w.recordLocal(fileDraft('gone.txt', 4));
    w.recordLocal({ ...fileDraft('gone.txt', 4), contentRoot: new Uint8Array(0), size: 0, deleted: true });
    w.recordLocal({ ...fileDraft('dir', 5), kind: 'dir', contentRoot: new Uint8Array(0), size: 0, mode: 0o755 });
  });
  const slow = (rel: string, root: Uint8Array): boolean => {
    const h = store.head(rel)?.revision;
    return h !== undefined && !h.deleted && h.kind === 'file' && hex(h.contentRoot) === hex(root);
  };
  const asked: [string, number][] = [
    ['live.txt', 1],
    ['live.txt', 2],
    ['edited.txt', 2],
    ['edited.txt', 3],
    ['gone.txt', 4],
    ['dir', 5],
    ['never.txt', 1],
  ];
  for (const [rel, n] of asked) t.equal(store.isLiveFileHead(rel, content(n)), slow(rel, content(n)), `${rel} ${n}`);
  t.ok(store.isLiveFileHead('live.txt', content(1)), 'the live head with its root');
  t.notOk(store.isLiveFileHead('edited.txt', content(2)), 'not an earlier revision');
  t.notOk(store.isLiveFileHead('gone.txt', content(4)), 'not a tombstone');
  t.notOk(store.isLiveFileHead('live.txt', content(1).subarray(0, 16)), 'not a shorter root');
});

t.test('a path first recorded in a transaction that stored a peer revision of it sees that revision', async (t) => {
  const folder = await tempFolder();
  const store = await RevisionStore.open(folder, { nodeId: NODE });
  t.teardown(() => store.close());
  const theirs = revisionEntry({ ...fileDraft('doc', 2), origin: PEER, vector: vectorFrom({ [PEER]: 40 }) });
  const mine = store.write((w) => {
    w.put(theirs);
    w.setHead(theirs.id);
    const entry = w.recordLocal(fileDraft('doc', 3));
    w.setWarm('doc', { size: 3, mtimeNs: 3n, ino: 3n, dev: 1n, mode: 0o644 });
    return entry;
  });
  t.equal(compareVectors(mine.revision.vector, theirs.revision.vector), 'after', 'the edit saw the peer revision');
  t.equal(store.history('doc').length, 2);
  t.equal(store.liveHeadCount(), 1, 'one live path, counted once');
  t.equal(hex(store.head('doc')!.id), hex(mine.id));
  t.same(store.checkInvariants(), []);
});

t.test('checkInvariants finds a path whose revisions lost their vector', async (t) => {
  const folder = await tempFolder();
  const store = await RevisionStore.open(folder, { nodeId: NODE });
  store.write((w) => w.recordLocal(fileDraft('a.txt', 1)));
  t.same(store.checkInvariants(), []);
  await store.close();
  const env = rawRevlog(folder);
  env.transactionSync(() =>
    env
      .openDB<Buffer, Buffer>({ name: 'pathvectors', encoding: 'binary', keyEncoding: 'binary' })
      .removeSync(Buffer.from(blake3(Buffer.from('a.txt', 'utf8')))),
  );
  await env.close();
  const again = await RevisionStore.open(folder, { nodeId: NODE });
  t.teardown(() => again.close());
  t.match(again.checkInvariants(), [/has revisions but no vector/]);
});
