import t from 'tap';
import path from 'node:path';
import {
  claimPaths,
  DestinationLocks,
  MAX_CLAIM_PATHS,
  pathsOverlap,
  type DestinationClaim,
} from '../../src/store/destination-locks.js';

const ROOT = path.resolve('/srv/share');

function claim(
  peerId: string,
  rels: string[],
  onSupersede: (by: DestinationClaim) => void = () => undefined,
): DestinationClaim {
  return {
    paths: rels.map((r) => path.join(ROOT, r)),
    peerId,
    label: `push from ${peerId} into ${rels.join(',')}`,
    supersede: onSupersede,
  };
}

/** Settles to 'pending' if `p` has not settled within a few event-loop turns. */
async function state<T>(p: Promise<T>): Promise<'pending' | 'resolved' | 'rejected'> {
  let s: 'pending' | 'resolved' | 'rejected' = 'pending';
  p.then(
    () => (s = 'resolved'),
    () => (s = 'rejected'),
  );
  await new Promise((r) => setImmediate(r));
  await new Promise((r) => setImmediate(r));
  return s;
}

t.test('overlap is by whole path segments', async (t) => {
  t.ok(pathsOverlap('/a/b', '/a/b'));
  t.ok(pathsOverlap('/a/b', '/a/b/c'), 'a parent and its child');
  t.ok(pathsOverlap('/a/b/c', '/a/b'), 'either order');
  t.notOk(pathsOverlap('/a/b', '/a/bc'), 'a shared name prefix is not a path prefix');
  t.notOk(pathsOverlap('/a/b', '/a/c'));
  t.ok(pathsOverlap('/', '/x'), 'the root contains everything');
});

t.test('claimPaths: the top-level names a push creates under its base path', async (t) => {
  t.same(claimPaths(ROOT, '', ['tree', 'tree/a', 'tree/sub/b']), [path.join(ROOT, 'tree')]);
  t.same(claimPaths(ROOT, 'docs', ['docs/f.txt', 'docs/g.txt']), [
    path.join(ROOT, 'docs/f.txt'),
    path.join(ROOT, 'docs/g.txt'),
  ]);
  t.same(claimPaths(ROOT, 'a/b', ['a/b/t/x']), [path.join(ROOT, 'a/b/t')]);
  t.same(claimPaths(ROOT, 'docs', []), [path.join(ROOT, 'docs')], 'no entries: the base itself');
  t.same(claimPaths(ROOT, '', []), [ROOT], 'no entries at the root: the whole share');
  const many = Array.from({ length: MAX_CLAIM_PATHS + 1 }, (_, i) => `d/f${i}`);
  t.same(claimPaths(ROOT, 'd', many), [path.join(ROOT, 'd')], `more than ${MAX_CLAIM_PATHS} names: the base instead`);
});

t.test('disjoint claims are held at once; overlapping ones of another peer wait for the release', async (t) => {
  const locks = new DestinationLocks();
  const a = await locks.acquire(claim('A', ['tree']), { waitMs: 1_000 });
  const b = await locks.acquire(claim('B', ['other']), { waitMs: 1_000 });
  t.equal(locks.size, 2);
  const c = locks.acquire(claim('B', ['tree/sub']), { waitMs: 5_000 });
  t.equal(await state(c), 'pending', 'B waits for A (tree contains tree/sub)');
  a.release();
  const lease = await c;
  t.same(lease.claim.paths, [path.join(ROOT, 'tree/sub')], 'and gets it once A is released');
  a.release(); // idempotent: must not drop B's claim
  t.equal(locks.size, 2);
  lease.release();
  b.release();
  t.equal(locks.size, 0);
});

t.test('another peer waits at most waitMs, then FOLDER_BUSY names the path and the holder', async (t) => {
  const locks = new DestinationLocks();
  const held = await locks.acquire(claim('A', ['tree']), { waitMs: 1_000 });
  let superseded = false;
  await t.rejects(locks.acquire(claim('B', ['tree']), { waitMs: 50, onSupersede: () => (superseded = true) }), {
    code: 'FOLDER_BUSY',
    message: new RegExp(
      `${path.join(ROOT, 'tree').replace(/[/\\]/g, '.')} is busy: push from A into tree is writing there`,
    ),
  });
  t.notOk(superseded, 'another peer never supersedes');
  t.equal(locks.size, 1, 'the holder keeps its claim');
  held.release();
});

t.test('the same peer supersedes its older overlapping claim and waits for its cleanup', async (t) => {
  const locks = new DestinationLocks();
  const events: string[] = [];
  let old: { release(): void } | undefined = undefined; // assigned once acquired, read by the supersede callback
  const older = claim('A', ['tree'], (by) => {
    events.push(`superseded by ${by.label}`);
    // The older transfer aborts and cleans up asynchronously, then releases.
    setTimeout(() => {
      events.push('old cleanup done');
      old?.release();
    }, 20);
  });
  old = await locks.acquire(older, { waitMs: 1_000 });
  const newer = await locks.acquire(claim('A', ['tree/x']), {
    waitMs: 5_000,
    onSupersede: (c) => events.push(`told about ${c.label}`),
  });
  events.push('newer holds');
  t.same(events, [
    'told about push from A into tree',
    'superseded by push from A into tree/x',
    'old cleanup done',
    'newer holds',
  ]);
  t.equal(locks.size, 1);
  newer.release();
});

t.test(
  'an older claim that never cleans up makes the newer one fail after waitMs; supersede is called once',
  async (t) => {
    const locks = new DestinationLocks();
    let calls = 0;
    const stuck = await locks.acquire(
      claim('A', ['tree'], () => calls++),
      { waitMs: 1_000 },
    );
    await t.rejects(locks.acquire(claim('A', ['tree']), { waitMs: 30 }), { code: 'FOLDER_BUSY' });
    await t.rejects(locks.acquire(claim('A', ['tree']), { waitMs: 30 }), { code: 'FOLDER_BUSY' });
    t.equal(calls, 1, 'a claim is superseded once');
    stuck.release();
  },
);

t.test('a waiter is cancelled by its signal', async (t) => {
  const locks = new DestinationLocks();
  const held = await locks.acquire(claim('A', ['tree']), { waitMs: 1_000 });
  const ac = new AbortController();
  const waiting = locks.acquire(claim('B', ['tree']), { waitMs: 10_000, signal: ac.signal });
  ac.abort();
  await t.rejects(waiting, { code: 'ABORTED' });
  t.equal(locks.size, 1);
  held.release();
});

t.test('two waiters for one released claim: one gets it, the other keeps waiting', async (t) => {
  const locks = new DestinationLocks();
  const held = await locks.acquire(claim('A', ['tree']), { waitMs: 1_000 });
  const b = locks.acquire(claim('B', ['tree']), { waitMs: 5_000 });
  const c = locks.acquire(claim('C', ['tree']), { waitMs: 5_000 });
  held.release();
  const first = await Promise.race([b.then(() => 'B'), c.then(() => 'C')]);
  const other = first === 'B' ? c : b;
  t.equal(await state(other), 'pending', `${first} holds; the other still waits`);
  (await (first === 'B' ? b : c)).release();
  (await other).release();
  t.equal(locks.size, 0);
});
