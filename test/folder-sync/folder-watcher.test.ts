import t from 'tap';
import { appendFile, chmod, mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_CHUNKING } from '../../src/chunking/fastcdc.js';
import { silentLogger } from '../../src/logger.js';
import { FolderWatcher, MAX_NAMED_PATHS } from '../../src/folder-sync/folder-watcher.js';
import { openSyncedFolder, ResidentFolders } from '../../src/folder-sync/synced-folder.js';

// Events arrive asynchronously: poll for the state the watcher must reach, with a deadline.
async function eventually(what: string, check: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function tree(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'clawpeer-watch-'));
  await mkdir(join(root, 'a/b'), { recursive: true });
  await mkdir(join(root, '.clawpeer'));
  await writeFile(join(root, 'top.txt'), 'top');
  await writeFile(join(root, 'a/b/deep.txt'), 'deep');
  t.teardown(() => rm(root, { recursive: true, force: true }));
  return root;
}

async function started(root: string, o: { now?: () => number; maxSkipAgeMs?: number } = {}): Promise<FolderWatcher> {
  const w = FolderWatcher.start(root, { log: silentLogger, ...o });
  t.teardown(() => w.close());
  await w.whenIdle();
  return w;
}

/**
 * A scan with nothing left out, as openSyncedFolder reports it, once the watcher has followed
 * up its last events (a scan that starts while it still adds watches is not certified).
 */
async function certify(w: FolderWatcher): Promise<void> {
  await w.whenIdle();
  w.scanStarting()(true);
}

t.test('no skip before a certified scan; after one, skip until something changes anywhere in the tree', async (t) => {
  const root = await tree();
  const w = await started(root);
  t.equal(w.watchedDirs, 3, 'root, a, a/b: one watch per directory, none for .clawpeer or files');
  t.notOk(w.canSkipScan(), 'never scanned under this watcher');
  await certify(w);
  t.ok(w.canSkipScan());
  await appendFile(join(root, 'a/b/deep.txt'), 'more');
  await eventually('edit deep in the tree seen', () => !w.canSkipScan());
  await certify(w);
  t.ok(w.canSkipScan(), 'a new scan certifies again');
  await chmod(join(root, 'top.txt'), 0o600);
  await eventually('mode change seen', () => !w.canSkipScan());
  await certify(w);
  await rm(join(root, 'top.txt'));
  await eventually('deletion seen', () => !w.canSkipScan());
});

t.test('new directories are watched before their contents count, vanished ones are dropped', async (t) => {
  const root = await tree();
  const w = await started(root);
  await mkdir(join(root, 'a/new/inner'), { recursive: true });
  await eventually('new directories watched', () => w.watchedDirs === 5);
  await certify(w);
  t.ok(w.canSkipScan());
  await writeFile(join(root, 'a/new/inner/file.txt'), 'x');
  await eventually('a file in a directory made after the start seen', () => !w.canSkipScan());
  await rename(join(root, 'a/new'), join(root, 'moved'));
  await eventually('moved directory tree rewatched at its new place', () => w.watchedDirs === 5);
  await rm(join(root, 'moved'), { recursive: true });
  await eventually('watches of a removed tree closed', () => w.watchedDirs === 3);
  await certify(w);
  await writeFile(join(root, 'a/b/again.txt'), 'y');
  await eventually('still watching the rest', () => !w.canSkipScan());
});

t.test('a directory removed and made again, or the folder itself replaced, is watched afresh', async (t) => {
  const root = await tree();
  const w = await started(root);
  await rm(join(root, 'a/b'), { recursive: true });
  await mkdir(join(root, 'a/b'));
  await eventually('the new a/b watched', () => w.watchedDirs === 3);
  await certify(w);
  t.ok(w.canSkipScan());
  await writeFile(join(root, 'a/b/in-new.txt'), 'x');
  await eventually('a change in the new a/b seen', () => !w.canSkipScan());

  await certify(w);
  await rename(root, root + '.old');
  t.teardown(() => rm(root + '.old', { recursive: true, force: true }));
  await mkdir(root);
  t.notOk(w.canSkipScan(), 'the folder at this path is not the watched one');
  // Either the move's event or the scan starting (the root's inode changed) watches it anew; a
  // scan that starts before that is not certified.
  await certify(w);
  if (!w.canSkipScan()) await certify(w);
  t.ok(w.canSkipScan(), 'the new folder is watched');
  await writeFile(join(root, 'fresh.txt'), 'x');
  await eventually('a change in the new folder seen', () => !w.canSkipScan());
});

t.test(
  'a directory made among files landing is watched, also where an ignored one went in the same burst',
  async (t) => {
    const root = await tree();
    await writeFile(join(root, '.clawpeerignore'), 'skip/\n');
    await mkdir(join(root, 'a/skip'));
    const w = await started(root);
    t.equal(w.watchedDirs, 3, 'root, a, a/b: the ignored a/skip has no watch');
    // Files land in a/b over several follow-ups (its link count does not move: no re-read
    // needed), then a directory comes among them.
    for (let i = 0; i < 5; i++) {
      await writeFile(join(root, `a/b/f${i}.txt`), 'x');
      await new Promise((r) => setTimeout(r, 150));
    }
    await w.whenIdle();
    await mkdir(join(root, 'a/b/sub'));
    await writeFile(join(root, 'a/b/f5.txt'), 'x');
    await eventually('the new a/b/sub watched', () => w.watchedDirs === 4);
    // An ignored directory goes and another comes in one burst: a's link count is as before.
    await rm(join(root, 'a/skip'), { recursive: true });
    await mkdir(join(root, 'a/other'));
    await eventually('a/other watched', () => w.watchedDirs === 5);
    await certify(w);
    t.ok(w.canSkipScan());
    await writeFile(join(root, 'a/other/in.txt'), 'x');
    await eventually('a change in a/other seen', () => !w.canSkipScan());
  },
);

t.test('onEvent hears every event outside .clawpeer, with its directory and name', async (t) => {
  const root = await tree();
  const heard: string[] = [];
  const w = FolderWatcher.start(root, { log: silentLogger, onEvent: (dir, name) => heard.push(join(dir, name ?? '')) });
  t.teardown(() => w.close());
  await w.whenIdle();
  await writeFile(join(root, '.clawpeer/internal'), 'x');
  await writeFile(join(root, 'a/b/new.txt'), 'x');
  await eventually('the new file heard', () => heard.includes(join(root, 'a/b/new.txt')));
  t.notOk(
    heard.some((p) => p.includes('.clawpeer')),
    'nothing from .clawpeer',
  );
});

t.test(
  'ignored paths: no watch on an ignored directory, no event for an ignored file; an edit of the ignore file counts and re-reads the rules',
  async (t) => {
    const root = await tree();
    await mkdir(join(root, 'build/out'), { recursive: true });
    await writeFile(join(root, '.clawpeerignore'), '*.tmp\nbuild/\n');
    const heard: string[] = [];
    const w = FolderWatcher.start(root, {
      log: silentLogger,
      onEvent: (dir, name) => heard.push(join(dir, name ?? '')),
    });
    t.teardown(() => w.close());
    await w.whenIdle();
    t.equal(w.watchedDirs, 3, 'root, a, a/b: nothing under build/');
    await certify(w);
    await writeFile(join(root, 'a/scratch.tmp'), 'x');
    await writeFile(join(root, 'build/out/obj.o'), 'x');
    // A change that does count, after them: once it is heard, the ignored ones were not.
    await writeFile(join(root, 'a/b/seen.txt'), 'x');
    await eventually('the change that counts heard', () => heard.includes(join(root, 'a/b/seen.txt')));
    t.notOk(
      heard.some((p) => p.endsWith('.tmp') || p.includes('build')),
      `no ignored path heard: ${heard.join(', ')}`,
    );
    await certify(w);
    await writeFile(join(root, 'a/other.tmp'), 'x');
    await new Promise((r) => setTimeout(r, 300));
    t.ok(w.canSkipScan(), 'an ignored file alone leaves the scan skippable');
    await writeFile(join(root, '.clawpeerignore'), '*.tmp\n');
    await eventually("the ignore file's edit counts", () => !w.canSkipScan());
    await eventually('build/ and build/out are watched once no longer ignored', () => w.watchedDirs === 5);
  },
);

t.test(
  'changes in .clawpeer (the log, staging) do not count; an uncertified scan or an old one never skips',
  async (t) => {
    const root = await tree();
    let now = 1_000;
    const w = await started(root, { now: () => now, maxSkipAgeMs: 60_000 });
    await certify(w);
    await writeFile(join(root, '.clawpeer/log'), 'internal');
    await new Promise((r) => setTimeout(r, 200));
    t.ok(w.canSkipScan(), 'internal writes are not changes of the folder');
    w.scanStarting()(false); // entries left unrecorded: must be looked at again
    t.notOk(w.canSkipScan());
    await certify(w);
    now += 60_000;
    t.notOk(w.canSkipScan(), 'a full scan again once the last is MAX age old');
  },
);

t.test('a scan that begins while the tree is still being walked does not certify', async (t) => {
  const root = await tree();
  const w = FolderWatcher.start(root, { log: silentLogger });
  t.teardown(() => w.close());
  const ended = w.scanStarting(); // the walk has not even read the root yet
  ended(true);
  await w.whenIdle();
  t.notOk(w.canSkipScan(), 'watches added after the scan began: it may have missed a change');
  await certify(w);
  t.ok(w.canSkipScan());
});

t.test(
  'openSyncedFolder skips the scan only when the watcher vouches, and a change is recorded at the next sync',
  async (t) => {
    const root = await tree();
    const resident = new ResidentFolders({ log: silentLogger });
    t.teardown(() => resident.close());
    const w = resident.watchers.forFolder(root);
    await w.whenIdle();
    const open = () =>
      openSyncedFolder(root, {
        nodeId: 'n1',
        chunking: DEFAULT_CHUNKING,
        lockWaitMs: 1_000,
        log: silentLogger,
        resident,
      });
    let f = await open();
    t.not(f.scan, undefined, 'first sync scans');
    t.equal(f.store.head('top.txt')?.revision.size, 3);
    const firstStore = f.store;
    await f.close();
    f = await open();
    t.equal(f.scan, undefined, 'nothing changed: no scan');
    t.equal(f.store, firstStore, 'the log stayed open between syncs');
    t.equal(f.store.head('top.txt')?.revision.size, 3, 'the log is as the last scan left it');
    await f.close();
    await writeFile(join(root, 'top.txt'), 'changed!');
    await eventually('edit seen', () => !w.canSkipScan());
    f = await open();
    t.not(f.scan, undefined);
    t.equal(f.scan?.changed, 1);
    t.equal(f.store.head('top.txt')?.revision.size, 8);
    await f.close();
  },
);

t.test(
  'changedSinceScan: the paths events named since the last scan began, or undefined when they cannot be trusted or are too many',
  async (t) => {
    const root = await tree();
    const w = await started(root);
    t.equal(w.changedSinceScan(), undefined, 'never scanned under this watcher');
    await certify(w);
    t.equal(w.changedSinceScan(), undefined, 'nothing named yet (canSkipScan answers that case)');
    t.ok(w.canSkipScan());
    await appendFile(join(root, 'a/b/deep.txt'), 'more');
    await eventually('the edit named', () => w.changedSinceScan()?.includes('a/b/deep.txt') === true);
    await w.whenIdle();
    t.same(w.changedSinceScan(), ['a/b/deep.txt'], 'only the edited file');
    w.scanStarting()(false);
    t.equal(w.changedSinceScan(), undefined, 'after an uncertified scan: the whole walk');
    await certify(w);
    t.ok(w.canSkipScan(), 'a certified scan starts a new list');
    for (let i = 0; i <= MAX_NAMED_PATHS; i++) await writeFile(join(root, `many-${i}.txt`), 'x');
    await eventually('too many named', () => w.changedSinceScan() === undefined);
  },
);

t.test(
  'openSyncedFolder looks at just the changed files when those are all the watcher saw; a new directory means the whole walk',
  async (t) => {
    const root = await tree();
    await writeFile(join(root, 'a/other.txt'), 'other');
    const resident = new ResidentFolders({ log: silentLogger });
    t.teardown(() => resident.close());
    const w = resident.watchers.forFolder(root);
    await w.whenIdle();
    const open = () =>
      openSyncedFolder(root, {
        nodeId: 'n1',
        chunking: DEFAULT_CHUNKING,
        lockWaitMs: 1_000,
        log: silentLogger,
        resident,
      });
    const sync = async () => {
      const f = await open();
      const scan = f.scan;
      await f.close();
      return scan;
    };
    t.match(await sync(), { added: 5 }, 'first sync walks: top.txt, a, a/b, a/b/deep.txt, a/other.txt');
    await writeFile(join(root, 'a/b/deep.txt'), 'edited deep');
    await chmod(join(root, 'top.txt'), 0o600);
    await eventually('both named', () =>
      ['a/b/deep.txt', 'top.txt'].every((p) => w.changedSinceScan()?.includes(p) === true),
    );
    await w.whenIdle();
    t.match(
      await sync(),
      { changed: 2, unchanged: 0, added: 0, deleted: 0 },
      'the edit and the chmod, and nothing else was looked at',
    );
    await writeFile(join(root, 'a/new.txt'), 'new');
    await rm(join(root, 'a/other.txt'));
    await eventually('the new and the removed file named', () =>
      ['a/new.txt', 'a/other.txt'].every((p) => w.changedSinceScan()?.includes(p) === true),
    );
    await w.whenIdle();
    t.match(await sync(), { added: 1, deleted: 1, unchanged: 0 }, 'a new and a removed file: just those');
    await mkdir(join(root, 'a/c'));
    await writeFile(join(root, 'a/c/inside.txt'), 'inside');
    await eventually('the new directory named', () => w.changedSinceScan()?.includes('a/c') === true);
    await w.whenIdle();
    const walked = await sync();
    t.match(walked, { added: 2, deleted: 0 }, 'a new directory: the whole walk, which finds what is in it');
    t.ok((walked?.unchanged ?? 0) >= 4, `the walk saw the unchanged entries too (${String(walked?.unchanged)})`);
  },
);

t.test('a released watcher stops (a folder removed from the config); one still subscribed to is kept', async (t) => {
  const root = await tree();
  const watchers = new ResidentFolders({ log: silentLogger }).watchers;
  t.teardown(() => watchers.close());
  const first = watchers.forFolder(root);
  const unsubscribe = first.subscribe(() => undefined);
  watchers.release(root);
  t.equal(watchers.forFolder(root), first, 'a subscribed watcher is kept');
  unsubscribe();
  t.equal(first.subscriberCount, 0);
  watchers.release(root);
  t.not(watchers.forFolder(root), first, 'a released watcher is gone: the next use starts a new one');
  t.equal(first.canSkipScan(), false, 'the released watcher is closed (it vouches for nothing)');
});
