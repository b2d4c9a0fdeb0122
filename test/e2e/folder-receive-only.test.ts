// A receive-only copy keeps its own edit of a path when a peer changes that path too: the peer's
// revision is received at each sync and left as is (not stored). Such a revision is no news for
// the folder's other peers. Before, each sync that received it counted as one that brought
// revisions and started a sync with each other peer at once; with two peers that both had the
// revision, C synced with A and B back and forth without end (2-4 syncs a second, each in the
// folder log), whatever the backoff of its failed pairs. Nor is it a failure of either side:
// A's pair with C stays in sync (folders/kept-edit-in-sync.test.ts has the details).
//
// C shares `docs` with A and with B, which do not share it with each other, so B has nothing
// for C: only a pass-on would sync C with B. Interval one hour, so only a change or a retry
// syncs a pair; C is receive-only.
import t from 'tap';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { cli, folderSyncLog, foldersOf, hasText, startFolderNodes, until, type FolderNode } from './folder-rig.js';

const nodes = await startFolderNodes(['a', 'b', 'c']);
t.teardown(async () => {
  for (const n of nodes) await n.listener.stop('SIGKILL');
});
const [A, B, C] = nodes as [FolderNode, FolderNode, FolderNode];

const folderLog = (n: FolderNode): Promise<Record<string, unknown>[]> => folderSyncLog(n, 'docs');

t.test('a peer change a receive-only copy leaves as is is not passed on', async (t) => {
  await writeFile(path.join(A.dir, 'doc.txt'), 'first\n');
  const add = (n: FolderNode, peers: string, ...more: string[]) =>
    cli(n.home, ['folder', 'add', n.dir, '--id', 'docs', '--with', peers, '--interval', '3600', ...more]);
  await add(A, 'c');
  await add(B, 'c');
  await add(C, 'a,b', '--mode', 'receive-only');
  await until(nodes, 'the file on C', hasText(path.join(C.dir, 'doc.txt'), 'first\n'), 20_000);
  const pairOf = async (n: FolderNode, peer: FolderNode) =>
    (await foldersOf(n)).find((f) => f.id === 'docs')?.peers.find((p) => p.peer === peer.id);
  await until(nodes, "C's pairs in sync", async () => {
    const [a, b] = [await pairOf(C, A), await pairOf(C, B)];
    return a?.state === 'in-sync' && b?.state === 'in-sync';
  });
  const synced = async (): Promise<(number | undefined)[]> => [
    (await pairOf(C, A))?.lastSyncAt,
    (await pairOf(C, B))?.lastSyncAt,
  ];
  const first = await synced();

  // C's own edit (never sent; its syncs with A and B run, as for any local change), then A's
  // edit of the same path: C keeps its file.
  await writeFile(path.join(C.dir, 'doc.txt'), 'kept on C\n');
  await until(nodes, "C's syncs after its edit", async () => {
    const now = await synced();
    return now.every((at, i) => at !== undefined && at > (first[i] ?? 0));
  });
  const withB = (await pairOf(C, B))?.lastSyncAt;
  const edited = Date.now();
  await writeFile(path.join(A.dir, 'doc.txt'), 'second, on A\n');
  const skipping = async (): Promise<number> =>
    (await folderLog(C)).filter((e) => e['peer'] === A.id && Number(e['skipped']) > 0).length;
  await until(nodes, 'C leaving it as is', async () => (await skipping()) >= 1, 30_000);
  // A's sync with C after its edit ends in sync: C keeps its own version on purpose.
  await until(nodes, "A's pair with C in sync after the edit", async () => {
    const p = await pairOf(A, C);
    return p?.state === 'in-sync' && (p.lastSyncAt ?? 0) >= edited;
  });
  t.equal((await pairOf(C, B))?.lastSyncAt, withB, 'C did not sync with B: it had nothing new for B');
  t.equal(await hasText(path.join(C.dir, 'doc.txt'), 'kept on C\n')(), true, "C's own edit stays");
  t.equal((await pairOf(C, A))?.state, 'in-sync', "C's pair with A in sync too");

  // C deletes its own file to take A's version: C's own sync with A (served by A) brings it, and
  // A's pair with C stays in sync without a sync of A's own.
  const ownSyncs = (): number => A.listener.stderr().split(`folder synced folder=docs peer=${C.id}`).length;
  const before = ownSyncs();
  await rm(path.join(C.dir, 'doc.txt'));
  await until(nodes, "A's version on C", hasText(path.join(C.dir, 'doc.txt'), 'second, on A\n'));
  // C's sync, which A serves, may still be ending (its check) when the file lands: `syncing` then.
  await until(nodes, "A's pair with C in sync", async () => (await pairOf(A, C))?.state === 'in-sync');
  t.equal(ownSyncs(), before, 'A ran no sync of its own with C to get there');
});
