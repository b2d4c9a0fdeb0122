// A synced folder whose directory is swapped while a sync runs (`mv docs docs-old; mkdir docs`:
// the folder moved by its user, a disk unmounted lazily), over the in-memory transport, both
// ways: the client applying the listener's files (sync-client.ts) and the listener applying the
// client's (sync-service.ts). A sync works by paths: before, it went on publishing the peer's
// files into the new, empty directory and made its `.clawpeer/` there, after which the folder
// counted as present and was fetched anew, whole, into it. Now the sync checks the folder it
// opened before each commit batch (exchange/folder-pin.ts) and fails with the marker-missing
// error, which makes the folder service wait for the folder, and nothing lands in the new
// directory. The sender is slowed (CLAWPEER_TEST_DELAY_PER_CHUNK_MS, read when the modules
// load) so the swap lands mid-transfer.
import t from 'tap';
import { mkdirSync, renameSync } from 'node:fs';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';

process.env['CLAWPEER_TEST_DELAY_PER_CHUNK_MS'] = '30';
const { syncFolder } = await import('../../src/folder-sync/sync-client.js');
const { isMarkerMissing } = await import('../../src/folder-sync/synced-folder.js');
const { silentLogger } = await import('../../src/logger.js');
const { memoryListener, shareIn, tempDir } = await import('../listener/memory-listener.js');

const FILES = 48;
// At the folder's root: the directory a swap replaces exists at once, so nothing but the check stops a write.
const names = Array.from({ length: FILES }, (_, i) => `f${String(i).padStart(2, '0')}.txt`);

async function writeFiles(dir: string): Promise<void> {
  for (const n of names) await writeFile(path.join(dir, n), `${n}\n`.repeat(50));
}

/** The folder at `dir` moved to `dir`-old and an empty directory made in its place. */
function swap(dir: string): string {
  renameSync(dir, `${dir}-old`);
  mkdirSync(dir);
  return `${dir}-old`;
}

const fetchedFiles = async (dir: string): Promise<string[]> => (await readdir(dir)).filter((n) => names.includes(n));

t.test("the client's folder is swapped while the listener's files arrive", async (t) => {
  const docs = await shareIn('docs');
  const l = await memoryListener([docs]);
  t.teardown(() => l.stop());
  const local = await tempDir('swapped-client');
  await mkdir(path.join(local, '.clawpeer')); // a folder service's folder, started before
  await writeFiles(docs.dir);
  let old: string | undefined;
  const err = await syncFolder({
    dir: local,
    share: 'docs',
    mode: 'two-way',
    nodeId: l.clientId,
    log: silentLogger,
    signal: new AbortController().signal,
    requireMarker: true,
    session: l.session,
    onProgress: (p) => {
      if (p.phase === 'receiving' && p.files > 0 && old === undefined) old = swap(local);
    },
  }).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(old !== undefined, 'the folder was swapped once a file landed');
  t.ok(isMarkerMissing(err), `the sync fails with the missing marker: ${String(err)}`);
  t.same(await readdir(local, { recursive: true }), [], 'nothing landed in the new directory, no .clawpeer/ made');
  const landed = await fetchedFiles(old ?? local);
  t.ok(landed.length > 0 && landed.length < FILES, `the old directory has what landed before (${landed.length})`);
});

t.test("the listener's folder is swapped while the client's files arrive there", async (t) => {
  const docs = await shareIn('docs', { keptFolder: true });
  const failures: unknown[] = [];
  const l = await memoryListener([docs], { onSyncServeFailed: (_peer, _share, e) => failures.push(e) });
  t.teardown(() => l.stop());
  const local = await tempDir('swapped-served');
  await writeFiles(local);
  let old: string | undefined;
  let stop = false;
  // Swapped once a file landed in the share (looked at every 5 ms).
  const watch = (async (): Promise<void> => {
    while (!stop) {
      if ((await fetchedFiles(docs.dir).catch(() => [])).length > 0) {
        old = swap(docs.dir);
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  })();
  await t.rejects(
    syncFolder({
      dir: local,
      share: 'docs',
      mode: 'two-way',
      nodeId: l.clientId,
      log: silentLogger,
      signal: new AbortController().signal,
      session: l.session,
    }),
    'the sync fails',
  );
  stop = true;
  await watch;
  t.ok(old !== undefined, 'the folder was swapped once a file landed');
  t.ok(
    failures.some(isMarkerMissing),
    `the listener's side fails with the missing marker: ${failures.map(String).join('; ')}`,
  );
  t.same(await readdir(docs.dir, { recursive: true }), [], 'nothing landed in the new directory, no .clawpeer/ made');
  const landed = await fetchedFiles(old ?? docs.dir);
  t.ok(landed.length > 0 && landed.length < FILES, `the old directory has what landed before (${landed.length})`);
});
