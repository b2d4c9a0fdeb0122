// A directory ignored on one device, changed on another meanwhile, then no longer ignored: the
// device gets what the others have (Syncthing pulls a path as soon as it is unignored). Before,
// the peers' revisions were stored while the path was ignored but never applied: once the rule
// went both logs held the same revisions, every sync was "equal", and B kept its old file, never
// got the new one and kept the one A deleted, with `status` in-sync and the roots equal.
//
// The ignore-applied marker (`.clawpeer/ignore-applied.json`, unignored-catch-up.ts) is how the
// test knows B's listener runs with a rule: it is written after a sync with the rules in force.
import t from 'tap';
import { access, readdir, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import {
  addFolderEverywhere,
  allInSync,
  docsOn,
  hasText,
  startFolderNodes,
  until,
  type FolderNode,
} from '../e2e/folder-rig.js';

const nodes = await startFolderNodes(['a', 'b']);
t.teardown(async () => {
  for (const n of nodes) await n.listener.stop('SIGKILL');
});
const [A, B] = nodes as [FolderNode, FolderNode];

const gone = (p: string) => async (): Promise<boolean> =>
  access(p).then(
    () => false,
    () => true,
  );
const applied = (n: FolderNode, patterns: string[]) =>
  hasText(path.join(n.dir, '.clawpeer', 'ignore-applied.json'), `${JSON.stringify({ patterns })}\n`);
const rootsAgree = async (): Promise<boolean> => {
  const [a, b] = await Promise.all([docsOn(A), docsOn(B)]);
  return a?.root !== undefined && a.root === b?.root && a.pending === false && b.pending === false;
};

t.test('an unignored directory takes the changes made while it was ignored', async (t) => {
  await mkdir(path.join(A.dir, 'sub'));
  await writeFile(path.join(A.dir, 'sub', 'edit.txt'), 'first\n');
  await writeFile(path.join(A.dir, 'sub', 'gone.txt'), 'to be deleted\n');
  await writeFile(path.join(A.dir, 'top.txt'), 'top\n');
  await mkdir(path.join(A.dir, 'old'));
  await writeFile(path.join(A.dir, 'old', 'a.txt'), 'old, from A\n');
  await addFolderEverywhere(nodes, 'docs');
  await until(nodes, "A's files on B", hasText(path.join(B.dir, 'sub', 'gone.txt'), 'to be deleted\n'), 30_000);
  await until(nodes, 'both in sync', () => allInSync(nodes, 'docs'), 30_000);

  await writeFile(path.join(B.dir, '.clawpeerignore'), 'sub/\nold/\n');
  await until(nodes, "B's listener syncs with the rules", applied(B, ['sub/', 'old/']), 30_000);

  await writeFile(path.join(A.dir, 'sub', 'edit.txt'), 'second, from A\n');
  await writeFile(path.join(A.dir, 'sub', 'new.txt'), 'new on A\n');
  await rm(path.join(A.dir, 'sub', 'gone.txt'));
  await writeFile(path.join(A.dir, 'top.txt'), 'top, edited\n');
  await rm(path.join(A.dir, 'old'), { recursive: true });
  await writeFile(path.join(B.dir, 'old', 'mine.txt'), 'made on B while ignored\n');
  await until(nodes, "A's top.txt on B", hasText(path.join(B.dir, 'top.txt'), 'top, edited\n'), 30_000);
  await until(nodes, 'the roots agree', rootsAgree, 30_000);
  t.equal(await readFile(path.join(B.dir, 'sub', 'edit.txt'), 'utf8'), 'first\n', 'the ignored file is left as is');

  await rm(path.join(B.dir, '.clawpeerignore'));
  await until(nodes, "A's edit on B", hasText(path.join(B.dir, 'sub', 'edit.txt'), 'second, from A\n'), 30_000);
  await until(nodes, "A's new file on B", hasText(path.join(B.dir, 'sub', 'new.txt'), 'new on A\n'), 30_000);
  await until(nodes, "A's deletion on B", gone(path.join(B.dir, 'sub', 'gone.txt')), 30_000);
  await until(nodes, 'the roots agree again', rootsAgree, 30_000);
  await until(nodes, 'both in sync again', () => allInSync(nodes, 'docs'), 30_000);

  t.equal(await readFile(path.join(A.dir, 'sub', 'edit.txt'), 'utf8'), 'second, from A\n', "A's edit stands on A");
  t.same(await readdir(path.join(B.dir, 'old')), ['mine.txt'], "B's own file in the directory A removed stays");
  await until(nodes, "B's own file on A", hasText(path.join(A.dir, 'old', 'mine.txt'), 'made on B while ignored\n'));
  t.same((await readdir(path.join(A.dir, 'sub'))).sort(), ['edit.txt', 'new.txt'], 'A has no file back');
  const [a, b] = await Promise.all([docsOn(A), docsOn(B)]);
  t.equal(b?.revisions, a?.revisions, 'B recorded no revision of its own for the paths it caught up');
  const kept = path.join(B.dir, '.clawpeer', 'unignored');
  const stamps = await readdir(kept);
  t.equal(stamps.length, 1, "B's old versions are kept aside once");
  const aside = path.join(kept, stamps[0] ?? '', 'sub');
  t.same((await readdir(aside)).sort(), ['edit.txt', 'gone.txt'], "B's old edit.txt and gone.txt are kept aside");
  t.same(await readdir(path.join(kept, stamps[0] ?? '')), ['old', 'sub'], "B's old/a.txt is kept aside, not old/");
  t.same(await readdir(path.join(kept, stamps[0] ?? '', 'old')), ['a.txt']);
  t.equal(await readFile(path.join(aside, 'edit.txt'), 'utf8'), 'first\n');
});
