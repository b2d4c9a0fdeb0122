import t from 'tap';
import { execFileSync } from 'node:child_process';
import { chmod, link, mkdir, mkdtemp, rename, rm, symlink, unlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { DEFAULT_CHUNKING } from '../../src/chunking/fastcdc.js';
import { manifestFromBytes } from '../../src/chunking/manifest.js';
import { scanFolder } from '../../src/folder-sync/folder-scanner.js';
import { mtimeMsOf } from '../../src/sync/revision.js';
import { toSeconds } from '../../src/store/staged-file.js';
import { parseIgnoreFile, syncIgnoreFrom } from '../../src/folder-sync/sync-ignore.js';
import type { ScanFolderOptions } from '../../src/folder-sync/folder-scanner.js';
import { RevisionStore } from '../../src/store/revision-store.js';
import type { TreeScanIssue } from '../../src/store/tree-scan.js';

const NODE = 'scanner-node';
const OLD_S = 1_600_000_000; // 2020-09-13: far outside the racy window
const options: ScanFolderOptions = { chunking: DEFAULT_CHUNKING };

interface Fixture {
  folder: string;
  store: RevisionStore;
  sizes: Map<string, number>;
}

async function fixture(): Promise<Fixture> {
  const folder = await mkdtemp(join(tmpdir(), 'clawpeer-folder-'));
  const files = new Map<string, Buffer>([
    ['a.txt', Buffer.from('hello')],
    ['sub/b.bin', randomBytes(200_000)],
    ['sub/deep/c.md', Buffer.from('# c\n')],
  ]);
  await mkdir(join(folder, 'sub/deep'), { recursive: true });
  await mkdir(join(folder, 'empty'));
  for (const [rel, bytes] of files) {
    await writeFile(join(folder, rel), bytes);
    await utimes(join(folder, rel), OLD_S, OLD_S);
  }
  await symlink('a.txt', join(folder, 'link'));
  const store = await RevisionStore.open(folder, { nodeId: NODE });
  t.teardown(async () => {
    await store.close();
    await rm(folder, { recursive: true, force: true });
  });
  return { folder, store, sizes: new Map([...files].map(([k, v]) => [k, v.length])) };
}

t.test('first scan records everything; a second scan of an unchanged tree hashes 0 bytes', async (t) => {
  const { folder, store, sizes } = await fixture();
  const first = await scanFolder(store, folder, options);
  // a.txt, empty, link, sub, sub/b.bin, sub/deep, sub/deep/c.md
  t.match(first, { added: 7, changed: 0, deleted: 0, unchanged: 0, unstable: 0, commits: 1 });
  t.equal(
    first.hashedBytes,
    [...sizes.values()].reduce((a, b) => a + b),
  );
  t.equal(store.size, 7);
  t.same([...store.heads()].map((h) => h.revision.path).sort(), [
    'a.txt',
    'empty',
    'link',
    'sub',
    'sub/b.bin',
    'sub/deep',
    'sub/deep/c.md',
  ]);
  t.notOk(
    [...store.heads()].some((h) => h.revision.path.startsWith('.clawpeer')),
    'the revision log itself is never recorded',
  );
  const link = store.head('link')!.revision;
  t.match(link, { kind: 'symlink', linkTarget: 'a.txt', size: 5 });
  const a = store.head('a.txt')!.revision;
  t.equal(
    Buffer.from(a.contentRoot).toString('hex'),
    Buffer.from(manifestFromBytes(Buffer.from('hello'), DEFAULT_CHUNKING).root).toString('hex'),
  );
  t.equal(a.mtimeNs, BigInt(OLD_S) * 1_000_000_000n);

  const second = await scanFolder(store, folder, options);
  t.match(second, { added: 0, changed: 0, deleted: 0, unchanged: 7, hashedBytes: 0, commits: 0 });
  t.equal(store.size, 7);
  t.same(store.checkInvariants(), []);
});

t.test('editing one file makes exactly one new revision; a touch makes one of the same content', async (t) => {
  const { folder, store } = await fixture();
  await scanFolder(store, folder, options);
  const before = store.head('sub/deep/c.md')!;
  await writeFile(join(folder, 'sub/deep/c.md'), '# c, edited\n');
  await utimes(join(folder, 'sub/deep/c.md'), OLD_S + 10, OLD_S + 10);
  const edit = await scanFolder(store, folder, options);
  t.match(edit, { added: 0, changed: 1, deleted: 0, unchanged: 6, hashedBytes: 12 });
  t.equal(store.size, 8);
  const after = store.head('sub/deep/c.md')!;
  t.notSame(after.revision.contentRoot, before.revision.contentRoot);
  t.equal(store.history('sub/deep/c.md').length, 2);

  // mtime moves, bytes do not: a revision of the same content with the new time (peers take
  // the time too, as rsync -a and Syncthing do), then warm again.
  const untouched = store.head('sub/b.bin')!.revision;
  await utimes(join(folder, 'sub/b.bin'), OLD_S + 20, OLD_S + 20);
  const touch = await scanFolder(store, folder, options);
  t.match(touch, { changed: 1, unchanged: 6, hashedBytes: 200_000 });
  t.equal(store.size, 9);
  const touched = store.head('sub/b.bin')!.revision;
  t.equal(touched.mtimeNs, BigInt(OLD_S + 20) * 1_000_000_000n, 'the new time is recorded');
  t.same(touched.contentRoot, untouched.contentRoot, 'of the same content');
  t.match(await scanFolder(store, folder, options), { hashedBytes: 0, unchanged: 7 });
});

t.test('the ms a sync sets for a revision reads back as that revision: no change of its own', async (t) => {
  const { folder, store } = await fixture();
  await scanFolder(store, folder, options);
  // A peer's time to the ns, as a sync publishes it: whole ms through toSeconds (sync/revision.ts
  // mtimeMsOf). Including a time within a µs below a ms, which the sync sets to the next ms.
  for (const peerNs of [
    BigInt(OLD_S + 30) * 1_000_000_000n + 123_456_789n,
    BigInt(OLD_S + 40) * 1_000_000_000n + 999_999_500n,
  ]) {
    const ms = mtimeMsOf({ mtimeNs: peerNs });
    await utimes(join(folder, 'a.txt'), toSeconds(ms), toSeconds(ms));
    // As if a peer's revision of that time were the head (a local one stands in for it here).
    const { origin: _origin, vector: _vector, ...draft } = store.head('a.txt')!.revision;
    store.write((w) => w.recordLocal({ ...draft, mtimeNs: peerNs }));
    const scan = await scanFolder(store, folder, options);
    t.match(scan, { changed: 0, added: 0, unchanged: 7 }, `a time set for ${peerNs} ns is not a change`);
  }
  // One ms off is a change.
  const head = store.head('a.txt')!.revision;
  const off = mtimeMsOf(head) + 1;
  await utimes(join(folder, 'a.txt'), toSeconds(off), toSeconds(off));
  t.match(await scanFolder(store, folder, options), { changed: 1 });
});

t.test('deleting makes a tombstone; rename is delete + add; coming back is an add', async (t) => {
  const { folder, store } = await fixture();
  await scanFolder(store, folder, options);
  const root = store.head('a.txt')!.revision.contentRoot;
  await unlink(join(folder, 'link'));
  const del = await scanFolder(store, folder, options);
  t.match(del, { deleted: 1, added: 0, changed: 0 });
  t.match(store.head('link')!.revision, { deleted: true, kind: 'symlink', size: 0, linkTarget: '' });

  await rename(join(folder, 'a.txt'), join(folder, 'renamed.txt'));
  const ren = await scanFolder(store, folder, { ...options, nowNs: 5n });
  t.match(ren, { deleted: 1, added: 1, changed: 0, hashedBytes: 5 });
  t.match(store.head('a.txt')!.revision, { deleted: true, mtimeNs: 5n });
  t.same(store.head('renamed.txt')!.revision.contentRoot, root, 'same content under the new name');

  // A tombstone is not deleted again; a path that comes back is an add with a newer vector.
  t.match(await scanFolder(store, folder, options), { deleted: 0, added: 0, unchanged: 6 });
  await writeFile(join(folder, 'a.txt'), 'back');
  await utimes(join(folder, 'a.txt'), OLD_S, OLD_S);
  t.match(await scanFolder(store, folder, options), { added: 1, deleted: 0 });
  const history = store.history('a.txt');
  t.same(
    history.map((e) => e.revision.deleted),
    [false, true, false],
  );

  // Removing a directory tombstones it and everything under it, in one commit.
  await rm(join(folder, 'sub'), { recursive: true });
  const gone = await scanFolder(store, folder, options);
  t.match(gone, { deleted: 4, commits: 1 });
  t.same(store.checkInvariants(), []);
});

t.test('a scan with many changes commits in batches of batchChanges', async (t) => {
  const { folder, store } = await fixture();
  await mkdir(join(folder, 'many'));
  for (let i = 0; i < 25; i++) {
    await writeFile(join(folder, 'many', `f${i}`), `file ${i}`);
    await utimes(join(folder, 'many', `f${i}`), OLD_S, OLD_S);
  }
  const r = await scanFolder(store, folder, { ...options, batchChanges: 10 });
  t.match(r, { added: 33, commits: 4 });
  t.equal(store.localCounter(), 33);
  // Tombstones too are committed in batches, while the heads are being walked.
  await rm(join(folder, 'many'), { recursive: true });
  const gone = await scanFolder(store, folder, { ...options, batchChanges: 10 });
  t.match(gone, { deleted: 26, commits: 3 });
  t.equal([...store.heads()].filter((h) => h.revision.deleted).length, 26);
  t.same(store.checkInvariants(), []);
});

t.test('racily clean files are re-hashed until they are old enough', async (t) => {
  const { folder, store } = await fixture();
  await scanFolder(store, folder, options);
  await writeFile(join(folder, 'fresh.txt'), 'just written'); // mtime = now
  const now = BigInt(Date.now()) * 1_000_000n;
  t.match(await scanFolder(store, folder, { ...options, nowNs: now }), { added: 1, hashedBytes: 12 });
  t.match(
    await scanFolder(store, folder, { ...options, nowNs: now }),
    { unchanged: 8, hashedBytes: 12 },
    'not trusted yet',
  );
  const later = now + 10_000_000_000n;
  t.match(
    await scanFolder(store, folder, { ...options, nowNs: later }),
    { hashedBytes: 12 },
    'hashed once more, now certified',
  );
  t.match(await scanFolder(store, folder, { ...options, nowNs: later }), { hashedBytes: 0 });
  t.equal(store.size, 8, 'no extra revisions along the way');
});

t.test('a path the scan cannot read is reported, never tombstoned; mode changes are revisions', async (t) => {
  const { folder, store } = await fixture();
  await scanFolder(store, folder, options);
  // Replace a recorded file by a FIFO: the walk reports it and must not turn it into a delete.
  await unlink(join(folder, 'a.txt'));
  execFileSync('mkfifo', [join(folder, 'a.txt')]);
  const issues: TreeScanIssue[] = [];
  const r = await scanFolder(store, folder, { ...options, onIssue: (i) => issues.push(i) });
  t.equal(issues.length, 1);
  t.match(issues[0]!.error.message, /FIFO/);
  t.match(r, { deleted: 0 });
  t.equal(store.head('a.txt')!.revision.deleted, false);
  await t.rejects(scanFolder(store, folder, options), /FIFO/, 'without onIssue the problem is thrown');
  await unlink(join(folder, 'a.txt'));

  await chmod(join(folder, 'sub/deep/c.md'), 0o600);
  const m = await scanFolder(store, folder, options);
  t.match(m, { changed: 1, deleted: 1, hashedBytes: 4 });
  t.equal(store.head('sub/deep/c.md')!.revision.mode, 0o600);
});

t.test(
  'a rescan that saw every live path skips the pass over all heads; one that did not finds what vanished',
  async (t) => {
    const { folder, store } = await fixture();
    await scanFolder(store, folder, options);
    let passes = 0;
    const headPathKeys = store.headPathKeys.bind(store);
    store.headPathKeys = function* () {
      passes++;
      yield* headPathKeys();
    };
    t.match(await scanFolder(store, folder, options), { added: 0, changed: 0, deleted: 0 });
    t.equal(passes, 0, 'no-op: the live-head count proves nothing vanished');
    await writeFile(join(folder, 'new.txt'), 'new');
    t.match(await scanFolder(store, folder, options), { added: 1, deleted: 0 });
    t.equal(passes, 0, 'an added path is counted once its revision is recorded');
    // One gone, one new: as many paths as before, but not the same ones.
    await rename(join(folder, 'a.txt'), join(folder, 'renamed.txt'));
    t.match(await scanFolder(store, folder, options), { added: 1, deleted: 1 });
    t.equal(passes, 1, 'the count differs, so every head is checked');
    t.equal(store.head('a.txt')!.revision.deleted, true);
    t.equal(store.liveHeadCount(), [...store.heads()].filter((h) => !h.revision.deleted).length);
    t.same(store.checkInvariants(), []);
  },
);

t.test('ignored paths are neither entered nor recorded; ignoring a recorded path does not delete it', async (t) => {
  const { folder, store } = await fixture();
  await mkdir(join(folder, 'build/out'), { recursive: true });
  await writeFile(join(folder, 'build/out/x.o'), 'obj');
  await writeFile(join(folder, 'notes.tmp'), 'scratch');
  await writeFile(join(folder, '.clawpeerignore'), 'build/\n*.tmp\n');
  const ignore = syncIgnoreFrom(parseIgnoreFile('build/\n*.tmp\n'));
  const first = await scanFolder(store, folder, { ...options, ignore });
  t.match(first, { added: 7 }, 'the fixture only: no build/, no *.tmp, no ignore file');
  const paths = (): string[] =>
    [...store.heads()]
      .filter((h) => !h.revision.deleted)
      .map((h) => h.revision.path)
      .sort();
  t.same(paths(), ['a.txt', 'empty', 'link', 'sub', 'sub/b.bin', 'sub/deep', 'sub/deep/c.md']);
  // sub/ is ignored now: its recorded heads stay live (ignoring is not deleting), nothing in it is looked at.
  await writeFile(join(folder, 'sub/new.txt'), 'not seen');
  const again = await scanFolder(store, folder, { ...options, ignore: syncIgnoreFrom(parseIgnoreFile('sub\n')) });
  t.match(
    again,
    { added: 4, deleted: 0 },
    'build, build/out, build/out/x.o and notes.tmp arrive once no longer ignored; sub/ is not tombstoned',
  );
  t.notOk(paths().includes('sub/new.txt'), 'nothing inside an ignored directory is recorded');
  t.ok(paths().includes('sub/deep/c.md'), 'the heads under it stay live');
  // Without rules, only the ignore file itself stays out.
  const all = await scanFolder(store, folder, options);
  t.match(all, { added: 1, deleted: 0 }, 'sub/new.txt');
  t.notOk(paths().includes('.clawpeerignore'), 'the ignore file is never recorded');
  // A !pattern ahead of the rule it excepts brings a path back; the scan records it.
  await writeFile(join(folder, 'keep.tmp'), 'wanted');
  await writeFile(join(folder, 'other.tmp'), 'scratch');
  const negated = await scanFolder(store, folder, {
    ...options,
    ignore: syncIgnoreFrom(parseIgnoreFile('!keep.tmp\n*.tmp\n')),
  });
  t.match(negated, { added: 1, deleted: 0 }, 'keep.tmp only; notes.tmp, recorded before, is not tombstoned');
  t.ok(paths().includes('keep.tmp'));
  t.notOk(paths().includes('other.tmp'));
});

t.test(
  'onlyChanged: plain file changes alone are looked at; a directory, an ignored or hard-linked path means the whole walk',
  async (t) => {
    const { folder, store } = await fixture();
    t.match(await scanFolder(store, folder, options), { added: 7 });
    const live = (): string[] =>
      [...store.heads()]
        .filter((h) => !h.revision.deleted)
        .map((h) => h.revision.path)
        .sort();
    await writeFile(join(folder, 'a.txt'), 'edited a');
    await writeFile(join(folder, 'sub/deep/new.txt'), 'new in a recorded directory');
    await rm(join(folder, 'sub/b.bin'));
    await rm(join(folder, 'link'));
    const named = await scanFolder(store, folder, {
      ...options,
      onlyChanged: ['a.txt', 'sub/deep/new.txt', 'sub/b.bin', 'link', 'never-existed.txt'],
    });
    t.match(
      named,
      { changed: 1, added: 1, deleted: 2, unchanged: 0 },
      'the edit, the new file and the two removals, and nothing else looked at',
    );
    t.same(live(), ['a.txt', 'empty', 'sub', 'sub/deep', 'sub/deep/c.md', 'sub/deep/new.txt']);

    // A publish's temp name that is gone again (renamed into place) is nothing to record; one still there means the walk (it may need sweeping).
    const temp = 'sub/.clawpeer-tmp-p1-000000000001-c.md';
    await writeFile(join(folder, 'a.txt'), 'edited again');
    t.match(
      await scanFolder(store, folder, { ...options, onlyChanged: [temp, 'a.txt'] }),
      { changed: 1, unchanged: 0 },
      'a gone temp name beside an edit: just the edit',
    );
    await writeFile(join(folder, temp), 'a publish in progress');
    t.ok(
      (await scanFolder(store, folder, { ...options, onlyChanged: [temp] })).unchanged > 0,
      'a temp file still there: the walk',
    );
    await rm(join(folder, temp));

    await mkdir(join(folder, 'newdir'));
    await writeFile(join(folder, 'newdir/x.txt'), 'x');
    const walked = await scanFolder(store, folder, { ...options, onlyChanged: ['newdir'] });
    t.match(walked, { added: 2 }, 'a new directory: the walk finds it and what is in it');
    t.ok(walked.unchanged > 0, 'the walk looked at everything');

    await rm(join(folder, 'sub/deep'), { recursive: true });
    t.match(
      await scanFolder(store, folder, { ...options, onlyChanged: ['sub/deep'] }),
      { deleted: 3 },
      'a removed directory: the walk tombstones it and its contents',
    );

    await link(join(folder, 'a.txt'), join(folder, 'a-link.txt'));
    await scanFolder(store, folder, options);
    await writeFile(join(folder, 'a.txt'), 'edited through one name');
    t.match(
      await scanFolder(store, folder, { ...options, onlyChanged: ['a.txt'] }),
      { changed: 2 },
      'a hard-linked file: the walk finds the other name changed too',
    );
    await writeFile(join(folder, '.clawpeerignore'), 'nothing-matches\n');
    t.ok(
      (await scanFolder(store, folder, { ...options, onlyChanged: ['.clawpeerignore'] })).unchanged > 0,
      'the ignore file (ignored itself): the walk',
    );
    t.same(store.checkInvariants(), []);
  },
);

t.test(
  'onlyChanged: a name no path may have (a control character) means the whole walk, which reports it',
  async (t) => {
    const { folder, store } = await fixture();
    await scanFolder(store, folder, options);
    const before = Buffer.from(store.root()).toString('hex');
    await writeFile(join(folder, 'a\nb'), 'a newline in its name');
    await writeFile(join(folder, 'esc\x1b[31mred'), 'an ESC in its name');
    const issues: TreeScanIssue[] = [];
    // Before, the named path was taken as it was: its revision was refused and the scan threw.
    const r = await scanFolder(store, folder, {
      ...options,
      onlyChanged: ['a\nb', 'esc\x1b[31mred'],
      onIssue: (issue) => issues.push(issue),
    });
    t.ok(r.unchanged > 0, 'the walk looked at everything');
    t.match(r, { added: 0, changed: 0, deleted: 0 }, 'nothing recorded');
    t.same(
      issues.map((i) => [i.localPath, i.error.code]).sort(),
      [
        [join(folder, 'a\nb'), 'PATH_INVALID'],
        [join(folder, 'esc\x1b[31mred'), 'PATH_INVALID'],
      ],
      'both reported as issues',
    );
    t.equal(Buffer.from(store.root()).toString('hex'), before, 'the log is as it was');
  },
);

t.test('a name not NFC on disk is renamed to its NFC form and recorded so (Syncthing autoNormalize)', async (t) => {
  const { folder, store } = await fixture();
  await mkdir(join(folder, 'cafe\u0301'));
  await writeFile(join(folder, 'cafe\u0301', 'e\u0301te\u0301.txt'), 'summer');
  await writeFile(join(folder, 'na\u0308me'), 'NFD twin');
  await writeFile(join(folder, 'n\u00e4me'), 'NFC twin');
  const renamed: string[] = [];
  const issues: string[] = [];
  const scan = await scanFolder(store, folder, {
    ...options,
    onRenamedToNfc: (from, to) => void renamed.push(`${from.slice(folder.length)} -> ${to.slice(folder.length)}`),
    onIssue: (i) => void issues.push(`${i.error.code} ${i.localPath.slice(folder.length)}`),
  });
  t.same(renamed, ['/cafe\u0301 -> /caf\u00e9', '/caf\u00e9/e\u0301te\u0301.txt -> /caf\u00e9/\u00e9t\u00e9.txt']);
  t.same(
    issues,
    ['PATH_INVALID /na\u0308me'],
    'an NFD name whose NFC form is there too is left out, not renamed over it',
  );
  t.equal(store.liveHead('caf\u00e9/\u00e9t\u00e9.txt')?.revision.kind, 'file', 'recorded under its NFC path');
  t.equal(scan.unstable, 0);
  const again = await scanFolder(store, folder, { ...options, onIssue: () => undefined });
  t.match(again, { added: 0, changed: 0, deleted: 0 }, 'the next scan finds nothing new');
});

t.test('names only Windows refuses stay unsyncable: a folder may be shared with a Windows device', async (t) => {
  const { folder, store } = await fixture();
  await mkdir(join(folder, 'w'));
  for (const name of ['aux.c', 'con.h', 'trail.', 'space ', 'ok.c']) await writeFile(join(folder, 'w', name), name);
  const issues: string[] = [];
  await scanFolder(store, folder, {
    ...options,
    onIssue: (i) => void issues.push(`${i.error.code} ${i.localPath.slice(folder.length)}`),
  });
  t.same(
    issues.sort(),
    ['PATH_INVALID /w/aux.c', 'PATH_INVALID /w/con.h', 'PATH_INVALID /w/space ', 'PATH_INVALID /w/trail.'],
    'each reported (as push and pull send them, a sync does not)',
  );
  t.equal(store.liveHead('w/ok.c')?.revision.kind, 'file', 'the rest is recorded');
  for (const name of ['aux.c', 'con.h', 'trail.', 'space ']) t.equal(store.liveHead(`w/${name}`), undefined, name);
});
