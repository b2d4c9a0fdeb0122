// A receive-only copy that keeps its own edit of a path a peer changed too leaves the peer's
// revision out on purpose. That is no failure of either side: both show the pair `in-sync`
// (the copy's "local changes kept" line names the path). Before, both sides showed the pair as
// `error` for good ("1 path left as is here" on the receive-only copy, "left as is by the peer"
// on the other) and retried it with backoff, each retry sending the same revision again and
// adding a folder log entry.
//
// A and B are two-way, C receive-only, all sharing `docs` with each other; interval one hour,
// so only a change or a retry syncs a pair. Also: the receive-only refusal that narrows A's and
// B's first syncs with C is no warning in C's log.
import t from 'tap';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  allInSync,
  cli,
  docsOn,
  folderSyncLog,
  hasText,
  startFolderNodes,
  statusOf,
  until,
  type FolderNode,
} from '../e2e/folder-rig.js';

const nodes = await startFolderNodes(['a', 'b', 'c']);
t.teardown(async () => {
  for (const n of nodes) await n.listener.stop('SIGKILL');
});
const [A, B, C] = nodes as [FolderNode, FolderNode, FolderNode];

const folderLog = (n: FolderNode): Promise<Record<string, unknown>[]> => folderSyncLog(n, 'docs');

t.test('a kept edit on a receive-only copy leaves every pair in sync', async (t) => {
  await writeFile(path.join(A.dir, 'one.txt'), 'first\n');
  const add = (n: FolderNode, peers: string, ...more: string[]) =>
    cli(n.home, ['folder', 'add', n.dir, '--id', 'docs', '--with', peers, '--interval', '3600', ...more]);
  await add(A, 'b,c');
  await add(B, 'a,c');
  await add(C, 'a,b', '--mode', 'receive-only');
  await until(nodes, 'the file on C', hasText(path.join(C.dir, 'one.txt'), 'first\n'), 20_000);
  await until(nodes, 'all pairs in sync', () => allInSync(nodes, 'docs'), 20_000);

  await writeFile(path.join(C.dir, 'one.txt'), 'edited on C\n');
  await until(
    nodes,
    "C's local change in its status",
    async () => (await docsOn(C))?.localChangePaths?.includes('one.txt') === true,
    20_000,
  );
  await writeFile(path.join(A.dir, 'one.txt'), 'second, on A\n');
  await until(nodes, "A's edit on B", hasText(path.join(B.dir, 'one.txt'), 'second, on A\n'), 20_000);
  const leftAsIs = async (): Promise<boolean> =>
    (await folderLog(C)).some((e) => e['peer'] === A.id && Number(e['skipped']) > 0);
  await until(nodes, "C leaving A's edit as is", leftAsIs, 20_000);

  await until(nodes, 'every pair in sync again, on each side', () => allInSync(nodes, 'docs'), 20_000);
  t.equal(await hasText(path.join(C.dir, 'one.txt'), 'edited on C\n')(), true, "C's edit stays");
  t.same((await docsOn(C))?.localChangePaths, ['one.txt'], 'C still names its kept edit');
  for (const n of nodes) {
    const docs = await docsOn(n);
    t.same(
      docs?.peers.map((p) => p.state),
      ['in-sync', 'in-sync'],
      `${n.name}: both pairs in sync, no error`,
    );
  }

  // Nothing is retried: the folder logs stop growing (a pair in error retried in 1 s, 2 s, ...).
  const counts = async (): Promise<number[]> => Promise.all(nodes.map(async (n) => (await folderLog(n)).length));
  const before = await counts();
  await new Promise((resolve) => setTimeout(resolve, 4_000));
  t.same(await counts(), before, 'no sync since: no new folder log entries on any node');
  for (const n of nodes)
    t.not(
      (await docsOn(n))?.peers.some((p) => p.state === 'error'),
      true,
      `${n.name}: no error`,
    );

  // The refusal that narrows A's and B's syncs with C is logged as news, not a failed session.
  const warned = C.listener
    .stderr()
    .split('\n')
    .filter((l) => l.includes('WARN') && l.includes('receive-only here'));
  t.same(warned, [], "C's log has no warning of the expected receive-only refusal");
  t.match(C.listener.stderr(), /sync refused: the peer syncs narrowed/, 'it says it refused, at info level');
  t.ok(await statusOf(C), 'status still answers');
});
