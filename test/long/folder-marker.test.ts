// A shared folder whose disk is not mounted is not synced (Syncthing's "folder marker missing").
// Before, a folder whose directory came back empty (its disk unmounted, the mount point left) or
// was gone had its `.clawpeer/` made anew and every file fetched again from the peers: into the
// disk below the mount point, filling it. Now the folder's `.clawpeer/` is its marker: a folder
// the listener started before that lacks it waits, says why in `status`, fetches nothing and
// asks no peer; it syncs again once the disk is back (or `mkdir DIR/.clawpeer`, to start it
// anew), across a restart too (folders/folder-markers.ts).
import t from 'tap';
import { mkdir, readdir, readFile, rename, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { startListener } from '../e2e/cli-harness.js';
import { allInSync, cli, foldersOf, hasText, startFolderNodes, until, type FolderNode } from '../e2e/folder-rig.js';

const nodes = await startFolderNodes(['a', 'b']);
t.teardown(async () => {
  for (const n of nodes) await n.listener.stop('SIGKILL');
});
const [A, B] = nodes as [FolderNode, FolderNode];
/**
 * Until both sides have been in sync for 3 s running (both sync at start, one is told the folder
 * is busy and retries within a second or two): a disk in use cannot be unmounted, and this test
 * is about the marker a sync looks for when it opens the folder. A sync running through a swap
 * is folder-swapped-mid-sync.test.ts's.
 */
async function quietMoment(): Promise<void> {
  let since = Date.now();
  await until(
    nodes,
    'both sides in sync for 3 s',
    async () => {
      if (!(await allInSync(nodes, 'docs'))) since = Date.now();
      return Date.now() - since >= 3000;
    },
    30_000,
  );
}
const problemOnB = async (): Promise<string | undefined> =>
  ((await foldersOf(B)).find((f) => f.id === 'docs') as { problem?: string } | undefined)?.problem;

t.test('a folder whose disk is gone waits for it, and fetches nothing in its place', async (t) => {
  // An hour's interval: only what the test does syncs.
  for (const [n, other] of [
    [A, B],
    [B, A],
  ] as const)
    await cli(n.home, ['folder', 'add', n.dir, '--id', 'docs', '--with', other.name, '--interval', '3600']);
  await writeFile(path.join(A.dir, 'one.txt'), 'one\n');
  await until(
    nodes,
    'one.txt on B, in sync',
    async () => (await hasText(path.join(B.dir, 'one.txt'), 'one\n')()) && (await allInSync(nodes, 'docs')),
    20_000,
  );

  await quietMoment();
  // B's disk "unmounted": the folder's directory is an empty mount point now.
  const disk = `${B.dir}-disk`;
  await rename(B.dir, disk);
  await mkdir(B.dir);
  await writeFile(path.join(A.dir, 'two.txt'), 'two\n'); // A's service syncs it to B: refused there
  await until(
    nodes,
    "B's status naming the missing marker",
    async () => /\.clawpeer/.test((await problemOnB()) ?? ''),
    20_000,
  );
  t.match(await problemOnB(), /not mounted/, 'status says what may be wrong');
  // A's next sync (its interval is a minute; the change above was its last) is refused too.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const made = await readdir(B.dir, { recursive: true });
  t.same(made, [], `nothing was fetched into the mount point, nor made there: ${made.join(', ')}`);
  t.same((await readdir(A.dir)).filter((n) => !n.startsWith('.')).sort(), ['one.txt', 'two.txt'], 'A lost nothing');

  // Across a restart: still waiting, still nothing made.
  await B.listener.stop('SIGTERM');
  B.listener = await startListener(B.home, ['-v'], { port: B.listener.port });
  await until(nodes, 'B waiting again after its restart', async () => (await problemOnB()) !== undefined, 20_000);
  t.same(await readdir(B.dir), [], 'the restarted listener made nothing either');

  // The disk is back: B syncs by itself, two.txt arrives.
  await rmdir(B.dir);
  await rename(disk, B.dir);
  await until(nodes, 'two.txt on B once its disk is back', hasText(path.join(B.dir, 'two.txt'), 'two\n'), 30_000);
  t.equal(await problemOnB(), undefined, 'no problem any more');
});

t.test('`mkdir DIR/.clawpeer` starts a folder whose disk is gone anew from its peers', async (t) => {
  await quietMoment();
  await rename(B.dir, `${B.dir}-old`);
  await mkdir(B.dir);
  await writeFile(path.join(A.dir, 'three.txt'), 'three\n');
  await until(nodes, 'B waiting for its marker', async () => (await problemOnB()) !== undefined, 20_000);
  await mkdir(path.join(B.dir, '.clawpeer'));
  await until(
    nodes,
    'every file on B again',
    async () => {
      const texts = await Promise.all(
        ['one', 'two', 'three'].map((n) => readFile(path.join(B.dir, `${n}.txt`), 'utf8').catch(() => '')),
      );
      return texts.join('') === 'one\ntwo\nthree\n';
    },
    30_000,
  );
  t.equal(await problemOnB(), undefined);
});
