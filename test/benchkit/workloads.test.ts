// Workloads on disk: sizes, striping layout, fresh random content.
import { readdir, readFile, stat } from 'node:fs/promises';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { prepareWorkload, splitEvenly } from '../../src/benchkit/workloads.js';

const root = await mkdtemp(path.join(tmpdir(), 'clawpeer-bench-wl-'));
t.teardown(() => rm(root, { recursive: true, force: true }));

t.test('splitEvenly: parts differ by at most one and add up', async (t) => {
  t.same(splitEvenly(10, 3), [4, 3, 3]);
  t.same(splitEvenly(8, 8), [1, 1, 1, 1, 1, 1, 1, 1]);
  t.same(splitEvenly(5, 1), [5]);
});

t.test('large: one file, or N byte-range part files for N connections', async (t) => {
  const one = await prepareWorkload({ kind: 'large', bytes: 3 << 20 }, path.join(root, 'l1'), { connections: 1 });
  t.equal(one.parts.length, 1);
  t.equal((await stat(one.parts[0]?.localPath ?? '')).size, 3 << 20);
  const striped = await prepareWorkload({ kind: 'large', bytes: 100_001 }, path.join(root, 'l3'), { connections: 3 });
  t.same(
    striped.parts.map((p) => p.bytes),
    [33_334, 33_334, 33_333],
  );
  t.same(await Promise.all(striped.parts.map(async (p) => (await stat(p.localPath)).size)), [33_334, 33_334, 33_333]);
  t.match(path.basename(striped.parts[0]?.localPath ?? ''), /^large\.part-01-of-03\.bin$/);
  t.equal(striped.bytes, 100_001);
  // Incompressible: the two halves of a random file are not equal, and bytes are spread out.
  const bytes = await readFile(one.parts[0]?.localPath ?? '');
  t.not(Buffer.compare(bytes.subarray(0, 1 << 20), bytes.subarray(1 << 20, 2 << 20)), 0);
  t.ok(new Set(bytes.subarray(0, 4096)).size > 200, 'random bytes cover most byte values');
});

t.test('small: files dealt round-robin into one directory per connection, all distinct', async (t) => {
  const w = await prepareWorkload({ kind: 'small', files: 10, fileBytes: 512 }, path.join(root, 's'), {
    connections: 4,
  });
  t.same(
    w.parts.map((p) => p.files),
    [3, 3, 2, 2],
  );
  const counts = await Promise.all(w.parts.map(async (p) => (await readdir(p.localPath)).length));
  t.same(counts, [3, 3, 2, 2]);
  const contents = new Set<string>();
  for (const p of w.parts)
    for (const f of await readdir(p.localPath))
      contents.add((await readFile(path.join(p.localPath, f))).toString('hex'));
  t.equal(contents.size, 10, 'every file has its own content');
  t.equal(w.bytes, 5120);
});

t.test('revisions: one directory of pages; revisions-seq: one page rewritten per revision', async (t) => {
  const r = await prepareWorkload({ kind: 'revisions', revisions: 12, pageBytes: 4096 }, path.join(root, 'r'), {
    connections: 1,
  });
  const names = await readdir(r.parts[0]?.localPath ?? '');
  t.equal(names.length, 12);
  t.ok(names.includes('page.r01') && names.includes('page.r12'));
  await t.rejects(
    prepareWorkload({ kind: 'revisions', revisions: 2, pageBytes: 10 }, path.join(root, 'r2'), { connections: 2 }),
    { code: 'USAGE' },
  );

  const seq = await prepareWorkload({ kind: 'revisions-seq', revisions: 3, pageBytes: 4096 }, path.join(root, 'q'), {
    connections: 1,
  });
  const page = seq.parts[0]?.localPath ?? '';
  const before = await readFile(page);
  await seq.writeRevision?.(1);
  const after = await readFile(page);
  t.equal(after.length, 4096);
  t.not(Buffer.compare(before, after), 0, 'a new revision has new content');
  await t.rejects(seq.writeRevision?.(3) ?? Promise.resolve(), RangeError);
});

t.test('sync: a folder of settled files (old mtimes); changeFiles rewrites exactly the first D', async (t) => {
  const w = await prepareWorkload({ kind: 'sync', folderFiles: 8, fileBytes: 1024, changed: 3 }, path.join(root, 's'), {
    connections: 1,
  });
  const dir = w.parts[0]?.localPath ?? '';
  const names = (await readdir(dir)).sort();
  t.equal(names.length, 8);
  t.same([w.bytes, w.files], [3 * 1024, 3], 'the payload is what changes');
  const hourAgo = Date.now() - 30 * 60_000;
  const before = new Map<string, Buffer>();
  for (const n of names) {
    t.ok((await stat(path.join(dir, n))).mtimeMs < hourAgo, `${n} is settled`);
    before.set(n, await readFile(path.join(dir, n)));
  }
  await w.changeFiles?.();
  const changed = [];
  for (const n of names)
    if (!(await readFile(path.join(dir, n))).equals(before.get(n) ?? Buffer.alloc(0))) changed.push(n);
  t.same(changed, names.slice(0, 3), 'the first three files have new content, the rest are untouched');
  await t.rejects(
    prepareWorkload({ kind: 'sync', folderFiles: 2, fileBytes: 10, changed: 1 }, path.join(root, 's2'), {
      connections: 2,
    }),
    { code: 'USAGE' },
  );
});
