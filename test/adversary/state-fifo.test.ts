// The listener's caches that live beside its state (the home's folder-offers.json, a folder's
// .clawpeer/last-syncs.json) are read at its start and at a folder's: a FIFO in a file's place
// blocked the open until a writer came, so the listener never started (and a thread of libuv's
// pool stayed blocked). A FIFO, or a file past the size cap, now reads as an empty cache. The
// same held for a folder's .clawpeer/ignore-applied.json (read after each sync by the unignore
// catch-up: the folder's syncs hung) and its .clawpeerignore (read by every scan): the first
// now reads as no record, the second is an IO error naming it.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { constants } from 'node:fs';
import { mkdir, open, truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { folderOffersFile, readFolderOffers } from '../../src/folders/folder-offers.js';
import { lastSyncsFile, readLastSyncs } from '../../src/folders/last-syncs.js';
import { appliedPatterns, ignoreAppliedFile } from '../../src/folders/unignored-catch-up.js';
import { FOLDERS_STARTED_FILE, StartedFolders } from '../../src/folders/folder-markers.js';
import { IGNORE_FILE_NAME, loadSyncIgnore } from '../../src/folder-sync/sync-ignore.js';

/**
 * What `read` of the FIFO at `file` gives, or 'hung' when it has not settled within a generous
 * while (a liveness check, not a timing one): a writer then opens the FIFO, so the blocked read
 * (the old code's) ends and the test can report it.
 */
async function readOf<T>(file: string, read: () => Promise<T>): Promise<T | 'hung'> {
  execFileSync('mkfifo', [file]);
  const reading = read();
  let timer: NodeJS.Timeout | undefined;
  const hung = new Promise<'hung'>((resolve) => (timer = setTimeout(() => resolve('hung'), 10_000)));
  const first = await Promise.race([reading, hung]);
  clearTimeout(timer);
  if (first !== 'hung') return first;
  const w = await open(file, constants.O_WRONLY | constants.O_NONBLOCK);
  await w.close();
  await reading.catch(() => undefined);
  return 'hung';
}

t.test('a FIFO as folder-offers.json is no offers', { skip: process.platform === 'win32' }, async (t) => {
  const home = t.testdir();
  t.same(await readOf(folderOffersFile(home), () => readFolderOffers(home)), []);
});

t.test("a FIFO as a folder's last-syncs.json is no last sync", { skip: process.platform === 'win32' }, async (t) => {
  const dir = t.testdir();
  await mkdir(path.dirname(lastSyncsFile(dir)), { recursive: true });
  const times = await readOf(lastSyncsFile(dir), () => readLastSyncs(dir));
  t.not(times, 'hung');
  t.equal(times === 'hung' ? -1 : times.size, 0);
});

t.test("a FIFO as a folder's ignore-applied.json is no record", { skip: process.platform === 'win32' }, async (t) => {
  const dir = t.testdir();
  await mkdir(path.dirname(ignoreAppliedFile(dir)), { recursive: true });
  t.equal(await readOf(ignoreAppliedFile(dir), () => appliedPatterns(ignoreAppliedFile(dir))), undefined);
});

t.test(
  "a FIFO as a folder's .clawpeerignore is an IO error naming it",
  { skip: process.platform === 'win32' },
  async (t) => {
    const dir = t.testdir();
    const file = path.join(dir, IGNORE_FILE_NAME);
    const got = await readOf(file, () =>
      loadSyncIgnore(dir).then(
        () => 'read',
        (err: unknown) => err,
      ),
    );
    t.not(got, 'hung');
    t.match(got, { code: 'IO', message: /\.clawpeerignore is not a regular file/ });
  },
);

t.test(
  'ignore-applied.json past its cap or of garbage is no record; .clawpeerignore past its cap is refused',
  async (t) => {
    const dir = t.testdir();
    const file = ignoreAppliedFile(dir);
    await mkdir(path.dirname(file), { recursive: true });
    for (const garbage of ['null', '[1,2]', '{"patterns":', '\u0000'])
      await writeFile(file, garbage).then(async () =>
        t.equal(await appliedPatterns(file), undefined, JSON.stringify(garbage)),
      );
    await writeFile(file, '{"patterns":["*.log"]}');
    t.same(await appliedPatterns(file), ['*.log'], 'a good record reads');
    await truncate(file, 64 << 20);
    t.equal(await appliedPatterns(file), undefined);
    await writeFile(path.join(dir, IGNORE_FILE_NAME), '*.log\n');
    await truncate(path.join(dir, IGNORE_FILE_NAME), 64 << 20);
    await t.rejects(loadSyncIgnore(dir), { code: 'IO', message: /more than/ });
  },
);

// A guard: folders-started.json was read bounded from the start (folder-markers.ts).
t.test('a FIFO as folders-started.json is no folder started', { skip: process.platform === 'win32' }, async (t) => {
  const home = t.testdir();
  const started = await readOf(path.join(home, FOLDERS_STARTED_FILE), () => StartedFolders.load(home));
  t.not(started, 'hung');
  t.equal(started === 'hung' ? true : started.has('f', '/x'), false);
});

// A guard more than a fix: the old code read such a file whole before it checked its length.
t.test('a file past the cap is not read', async (t) => {
  const home = t.testdir();
  // Sparse: a valid start, then more than the caps (64 KiB, 1 MiB) of NULs.
  await writeFile(folderOffersFile(home), '{"version":1,"offers":[]}');
  await truncate(folderOffersFile(home), 8 << 20);
  t.same(await readFolderOffers(home), []);
  const dir = t.testdir();
  await mkdir(path.dirname(lastSyncsFile(dir)), { recursive: true });
  await writeFile(lastSyncsFile(dir), '{"version":1,"peers":{}}');
  await truncate(lastSyncsFile(dir), 8 << 20);
  t.equal((await readLastSyncs(dir)).size, 0);
});
