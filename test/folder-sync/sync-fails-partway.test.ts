// A sync whose connection is killed after some of the peer's files landed (sync-apply.ts),
// over the in-memory transport, both ways: the client applying the listener's files
// (sync-client.ts) and the listener applying the client's (sync-service.ts). The files that
// landed are recorded at once as the peer's revisions; before, nothing was, and the next scan
// recorded them as this node's creations: `log` said "created by this node" then "changed by"
// the peer, and they travelled back to the peer as new revisions. The next sync moves only the
// rest. The sender is slowed (CLAWPEER_TEST_DELAY_PER_CHUNK_MS, read when the modules load)
// so the kill lands mid-transfer.
import t from 'tap';
import { chmod, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

process.env['CLAWPEER_TEST_DELAY_PER_CHUNK_MS'] = '30';
const { syncFolder } = await import('../../src/folder-sync/sync-client.js');
const { silentLogger } = await import('../../src/logger.js');
const { RevisionStore } = await import('../../src/store/revision-store.js');
const { memoryListener, shareIn, tempDir } = await import('../listener/memory-listener.js');

const FILES = 48;
const names = Array.from({ length: FILES }, (_, i) => `sub/f${String(i).padStart(2, '0')}.txt`);
const textOf = (name: string): string => `${name}\n`.repeat(50);

/** The names whose file is in `dir` with its full text. */
async function landedIn(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const n of names) {
    const text = await readFile(path.join(dir, n), 'utf8').catch(() => undefined);
    if (text === textOf(n)) out.push(n);
  }
  return out;
}

/** Each path's history origins in the folder's log, and the paths with a head. */
async function logOf(
  dir: string,
  nodeId: string,
  paths: readonly string[],
): Promise<{ origins: Record<string, string[]>; heads: string[] }> {
  const store = await RevisionStore.open(dir, { nodeId });
  try {
    const origins: Record<string, string[]> = {};
    const heads: string[] = [];
    for (const p of paths) {
      origins[p] = store.history(p).map((e) => e.revision.origin);
      if (store.head(p) !== undefined) heads.push(p);
    }
    return { origins, heads };
  } finally {
    await store.close();
  }
}

/** `paths`, each with the one origin `origin` in its history. */
const only = (paths: readonly string[], origin: string): Record<string, string[]> =>
  Object.fromEntries(paths.map((p) => [p, [origin]]));
const pick = (o: Record<string, string[]>, paths: readonly string[]): Record<string, string[] | undefined> =>
  Object.fromEntries(paths.map((p) => [p, o[p]]));

async function writeFiles(dir: string): Promise<void> {
  await mkdir(path.join(dir, 'sub'));
  await chmod(path.join(dir, 'sub'), 0o775); // not what the receiver's umask gives a new directory
  for (const n of names) await writeFile(path.join(dir, n), textOf(n));
}

t.test("the client's connection is killed while the listener's files arrive", async (t) => {
  const docs = await shareIn('docs');
  const l = await memoryListener([docs]);
  t.teardown(() => l.stop());
  const local = await tempDir('partway-client');
  await writeFiles(docs.dir);
  const base = {
    dir: local,
    share: 'docs',
    mode: 'two-way' as const,
    nodeId: l.clientId,
    log: silentLogger,
    signal: new AbortController().signal,
  };
  let killed = false;
  await t.rejects(
    syncFolder({
      ...base,
      session: l.session,
      onProgress: (p) => {
        if (p.phase !== 'receiving' || p.files === 0 || killed) return;
        killed = true; // a file landed: the connection dies
        void l.session.close('killed');
      },
    }),
    'the sync fails',
  );
  await l.served.catch(() => undefined); // its side of the sync failed too
  const landed = await landedIn(local);
  t.ok(landed.length > 0 && landed.length < FILES, `some files landed, not all (${landed.length})`);

  const after = await logOf(local, l.clientId, ['sub', ...names]);
  t.same(after.heads, ['sub', ...landed], 'the landed files (and their directory) are recorded, only they');
  t.same(
    pick(after.origins, ['sub', ...landed]),
    only(['sub', ...landed], l.listenerId),
    "each the listener's revision",
  );

  const again = await syncFolder({ ...base, session: await l.connect() });
  t.ok(again.inSync);
  t.equal(again.revisionsSent, 0, 'nothing goes back to the listener');
  t.equal(again.revisionsReceived, FILES - landed.length, 'the rest arrives');
  t.same(await landedIn(local), names, 'every file is here');
  const final = await logOf(local, l.clientId, ['sub', ...names]);
  t.same(final.origins, only(['sub', ...names], l.listenerId), 'no creation here in any history');
});

t.test("the listener's side: the client's connection is killed while its files arrive there", async (t) => {
  const docs = await shareIn('docs');
  const l = await memoryListener([docs]);
  t.teardown(() => l.stop());
  const local = await tempDir('partway-served');
  await writeFiles(local);
  const base = {
    dir: local,
    share: 'docs',
    mode: 'two-way' as const,
    nodeId: l.clientId,
    log: silentLogger,
    signal: new AbortController().signal,
  };
  // Killed once a file landed in the share (looked for every 5 ms).
  let stop = false;
  const kill = (async (): Promise<void> => {
    while (!stop) {
      const entries = await readdir(path.join(docs.dir, 'sub')).catch(() => [] as string[]);
      if (entries.some((e) => e.startsWith('f'))) {
        await l.session.close('killed');
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  })();
  await t.rejects(syncFolder({ ...base, session: l.session }), 'the sync fails');
  stop = true;
  await kill;
  await l.served.catch(() => undefined); // its side of the sync failed too
  const landed = await landedIn(docs.dir);
  t.ok(landed.length > 0 && landed.length < FILES, `some files landed there, not all (${landed.length})`);

  const after = await logOf(docs.dir, l.listenerId, ['sub', ...names]);
  t.same(after.heads, ['sub', ...landed], 'the landed files (and their directory) are recorded there, only they');
  t.same(pick(after.origins, ['sub', ...landed]), only(['sub', ...landed], l.clientId), "each the client's revision");

  const again = await syncFolder({ ...base, session: await l.connect() });
  t.ok(again.inSync);
  t.equal(again.revisionsReceived, 0, 'nothing comes back from the listener');
  t.equal(again.revisionsSent, FILES - landed.length, 'the rest is sent');
  t.same(await landedIn(docs.dir), names, 'every file is there');
  const final = await logOf(docs.dir, l.listenerId, ['sub', ...names]);
  t.same(final.origins, only(['sub', ...names], l.clientId), 'no creation there in any history');
});
