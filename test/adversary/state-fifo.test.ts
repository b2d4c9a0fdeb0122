// The listener's caches that live beside its state (the home's folder-offers.json, a folder's
// .clawpeer/last-syncs.json) are read at its start and at a folder's: a FIFO in a file's place
// blocked the open until a writer came, so the listener never started (and a thread of libuv's
// pool stayed blocked). A FIFO, or a file past the size cap, now reads as an empty cache.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { constants } from 'node:fs';
import { mkdir, open, truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { folderOffersFile, readFolderOffers } from '../../src/folders/folder-offers.js';
import { lastSyncsFile, readLastSyncs } from '../../src/folders/last-syncs.js';

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
