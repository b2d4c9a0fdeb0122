// A shared folder whose disk goes while a sync into it runs (the folder moved away and an empty
// directory made in its place, as a lazily unmounted disk leaves its mount point). Before, the
// running sync went on by paths: it published the rest of the peer's files into the new
// directory and made its `.clawpeer/` there, after which the folder counted as present and was
// fetched anew, whole, below the mount point. Now the sync stops at its next commit batch with
// the marker-missing error (exchange/folder-pin.ts), the folder waits for its disk, saying why in
// `status`, and syncs the rest once the disk is back. A's listener sends at 256 KiB/s, so the
// 1.5 MiB take about 6 s: B's disk goes once the first file landed.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { allInSync, cli, foldersOf, startFolderNodes, until, type FolderNode } from '../e2e/folder-rig.js';

const FILES = 48;
const names = Array.from({ length: FILES }, (_, i) => `f${String(i).padStart(2, '0')}.bin`);
// Incompressible: the rate limit is of the bytes on the wire.
const contents = names.map(() => randomBytes(32 << 10));

const nodes = await startFolderNodes(['a', 'b'], { a: ['--bwlimit', '256'] });
t.teardown(async () => {
  for (const n of nodes) await n.listener.stop('SIGKILL');
});
const [A, B] = nodes as [FolderNode, FolderNode];
const problemOnB = async (): Promise<string | undefined> =>
  ((await foldersOf(B)).find((f) => f.id === 'docs') as { problem?: string } | undefined)?.problem;
const landedIn = async (dir: string): Promise<string[]> =>
  (await readdir(dir).catch(() => [] as string[])).filter((n) => names.includes(n));

t.test('a folder whose disk goes mid-sync gets nothing more, and syncs the rest once it is back', async (t) => {
  for (const [i, n] of names.entries()) await writeFile(path.join(A.dir, n), contents[i]!);
  // An hour's interval: only what the test does syncs.
  for (const [n, other] of [
    [A, B],
    [B, A],
  ] as const)
    await cli(n.home, ['folder', 'add', n.dir, '--id', 'docs', '--with', other.name, '--interval', '3600']);

  await until(nodes, 'the first file on B', async () => (await landedIn(B.dir)).length > 0, 30_000);
  const disk = `${B.dir}-disk`;
  await rename(B.dir, disk);
  await mkdir(B.dir);
  const before = (await landedIn(disk)).length;
  t.ok(before < FILES, `B's disk went mid-sync (${before} of ${FILES} files there)`);
  await until(
    nodes,
    "B's status naming the missing marker",
    async () => /\.clawpeer/.test((await problemOnB()) ?? ''),
    30_000,
  );
  // The sync that ran is over (its error restarted the folder); A's side may try once more.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const made = await readdir(B.dir, { recursive: true });
  t.same(made, [], `nothing landed in the mount point, nor was made there: ${made.join(', ')}`);
  t.same((await landedIn(A.dir)).length, FILES, 'A lost nothing');

  // The disk is back: B syncs the rest by itself.
  await rmdir(B.dir);
  await rename(disk, B.dir);
  await until(
    nodes,
    'every file on B, in sync',
    async () => (await landedIn(B.dir)).length === FILES && (await allInSync(nodes, 'docs')),
    60_000,
  );
  t.equal(await problemOnB(), undefined, 'no problem any more');
  const wrong = [];
  for (const [i, n] of names.entries()) if (!(await readFile(path.join(B.dir, n))).equals(contents[i]!)) wrong.push(n);
  t.same(wrong, [], "every file on B is A's");
});
