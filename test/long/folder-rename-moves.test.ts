// A directory renamed on one device is renamed on the other: its files keep their inodes there
// (exchange/local-moves.ts), where before each new name was made from the chunks held and the
// old file moved into history (20,000 files of 8 KiB: 54-80 s). The old names' content stays
// restorable: `clawpeer restore` finds it at the new names.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { lstat, mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { addFolderEverywhere, allInSync, cli, startFolderNodes, until, type FolderNode } from '../e2e/folder-rig.js';

const FILES = 200;
const nodes = await startFolderNodes(['a', 'b']);
t.teardown(async () => {
  for (const n of nodes) await n.listener.stop('SIGKILL');
});
const [A, B] = nodes as [FolderNode, FolderNode];
const names = Array.from({ length: FILES }, (_, i) => `p${String(i).padStart(4, '0')}.jpg`);
const count = async (dir: string): Promise<number> => (await readdir(dir).catch(() => [])).length;

t.test("a directory renamed on A is renamed on B: the same inodes, the old names' content restorable", async (t) => {
  await mkdir(path.join(A.dir, 'photos'));
  const bytes = new Map<string, Buffer>();
  for (const n of names) {
    bytes.set(n, randomBytes(8192));
    await writeFile(path.join(A.dir, 'photos', n), bytes.get(n) ?? '');
  }
  await addFolderEverywhere(nodes, 'docs');
  await until(
    nodes,
    'photos on B, in sync',
    async () => (await count(path.join(B.dir, 'photos'))) === FILES && (await allInSync(nodes, 'docs')),
    60_000,
  );
  const inodes = new Map<string, bigint>();
  for (const n of names) inodes.set(n, (await lstat(path.join(B.dir, 'photos', n), { bigint: true })).ino);

  await rename(path.join(A.dir, 'photos'), path.join(A.dir, 'pictures'));
  await until(
    nodes,
    'pictures on B, photos gone, in sync',
    async () =>
      (await count(path.join(B.dir, 'pictures'))) === FILES &&
      (await count(path.join(B.dir, 'photos'))) === 0 &&
      (await allInSync(nodes, 'docs')),
    60_000,
  );
  let same = 0;
  for (const n of names) {
    const st = await lstat(path.join(B.dir, 'pictures', n), { bigint: true });
    if (st.ino === inodes.get(n)) same++;
  }
  t.equal(same, FILES, 'every file on B kept its inode: renamed, not copied');
  t.same(
    (await readdir(path.join(B.dir, '.clawpeer', 'history')).catch(() => [])).length,
    0,
    'nothing copied into history',
  );

  // The old name's revision, restored on B from the content now at the new name.
  const first = names[0] ?? '';
  const revs = await cli(B.home, ['log', path.join(B.dir, 'photos', first)]);
  const id = revs.find((r) => r['what'] === 'created')?.['id'];
  t.type(id, 'string', `a created revision of photos/${first} in the log`);
  await cli(B.home, ['restore', path.join(B.dir, 'photos', first), '--rev', typeof id === 'string' ? id : '']);
  t.same(await readFile(path.join(B.dir, 'photos', first)), bytes.get(first), 'restored with its bytes');
});
