// `clawpeer folder revert` of type changes made on a receive-only copy: a directory of the peers'
// replaced by a file here (the peers' file below it is then "deleted here"), and a file of the
// peers' replaced by a directory here. The revert looked at the peers' file below the local file
// (lstat of `t/inner.txt` where `t` is a file: ENOTDIR) and failed with that raw error, reverting
// nothing; now both paths get the peers' versions back and the local ones are kept aside.
//
// And a directory replaced here by a symlink to a copy of it outside the folder: the revert
// moved the entries below the link aside through it (refused, PATH_INVALID, after it had
// withdrawn the revisions: the log said "directory" where the disk had the link, and status no
// local change). Now the link is moved aside and nothing it points to is touched.
import t from 'tap';
import { cp, lstat, mkdir, readFile, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { jsonLines, runCli } from '../e2e/cli-harness.js';
import {
  addReceiveOnlyDocs,
  cli,
  docsOn,
  docsRootsAgree,
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

const rootsAgree = docsRootsAgree(A, B);

t.test('revert brings back a directory replaced by a file here, and a file replaced by a directory', async (t) => {
  await mkdir(path.join(A.dir, 't'));
  await writeFile(path.join(A.dir, 't', 'inner.txt'), 'inner, from A\n');
  await writeFile(path.join(A.dir, 'f.txt'), 'f, from A\n');
  await addReceiveOnlyDocs(A, B);
  await until(nodes, "A's files on B", hasText(path.join(B.dir, 't', 'inner.txt'), 'inner, from A\n'), 20_000);
  await until(nodes, "A's f.txt on B", hasText(path.join(B.dir, 'f.txt'), 'f, from A\n'), 20_000);
  await until(nodes, 'the roots agree', rootsAgree, 20_000);

  await rm(path.join(B.dir, 't'), { recursive: true });
  await writeFile(path.join(B.dir, 't'), 't is a file on B\n');
  await rm(path.join(B.dir, 'f.txt'));
  await mkdir(path.join(B.dir, 'f.txt'));
  await writeFile(path.join(B.dir, 'f.txt', 'x'), 'x on B\n');
  await until(
    nodes,
    "B's local changes in its status",
    async () => (await docsOn(B))?.localChanges === 3, // t, f.txt, f.txt/x
    20_000,
  );

  const plan = (await cli(B.home, ['folder', 'revert', 'docs', '--dry-run']))[0] ?? {};
  t.same(
    (plan['paths'] as { path: string; local: string; peers: string }[]).map((p) => [p.path, p.local, p.peers]),
    [
      ['f.txt', 'dir', 'file'],
      ['f.txt/x', 'file', 'none'],
      ['t', 'file', 'dir'],
      ['t/inner.txt', 'deleted', 'file'],
    ],
    'the dry run lists both type changes',
  );

  const r = await runCli(['--home', B.home, 'folder', 'revert', 'docs', '--json']);
  t.equal(r.code, 0, `revert exits 0 (${r.stderr})`);
  t.notMatch(r.stderr, /ENOTDIR/);
  const report = jsonLines(r.stdout)[0] ?? {};
  t.equal(report['event'], 'folder-reverted');
  t.equal(report['withdrawn'], 4);
  const keptIn = String(report['keptIn']);

  t.ok((await lstat(path.join(B.dir, 't'))).isDirectory(), 't is a directory again');
  t.equal(await readFile(path.join(B.dir, 't', 'inner.txt'), 'utf8'), 'inner, from A\n', "A's t/inner.txt is back");
  t.ok((await lstat(path.join(B.dir, 'f.txt'))).isFile(), 'f.txt is a file again');
  t.equal(await readFile(path.join(B.dir, 'f.txt'), 'utf8'), 'f, from A\n');
  t.equal(await readFile(path.join(keptIn, 't'), 'utf8'), 't is a file on B\n', "B's file t is kept aside");
  t.equal(await readFile(path.join(keptIn, 'f.txt', 'x'), 'utf8'), 'x on B\n', "B's f.txt/x is kept aside");

  await until(nodes, 'no local changes on B', async () => (await docsOn(B))?.localChanges === 0, 20_000);
  await until(nodes, 'the roots of A and B agree', rootsAgree, 20_000);
  t.pass('status lists no local changes and the roots agree');
});

t.test('revert of a directory replaced by a symlink leaves what the link points to alone', async (t) => {
  await mkdir(path.join(A.dir, 'deep', 'er'), { recursive: true });
  await writeFile(path.join(A.dir, 'deep', 'er', 'f.txt'), 'deep, from A\n');
  await until(nodes, "A's deep/ on B", hasText(path.join(B.dir, 'deep', 'er', 'f.txt'), 'deep, from A\n'), 20_000);
  await until(nodes, 'the roots agree', rootsAgree, 20_000);

  const outside = path.join(path.dirname(B.dir), 'outside');
  await cp(path.join(B.dir, 'deep'), outside, { recursive: true });
  await writeFile(path.join(outside, 'er', 'f.txt'), 'edited outside\n');
  await rm(path.join(B.dir, 'deep'), { recursive: true });
  await symlink(outside, path.join(B.dir, 'deep'));
  await until(nodes, "B's link in its status", async () => (await docsOn(B))?.localChanges === 1, 20_000);

  const r = await runCli(['--home', B.home, 'folder', 'revert', 'docs', '--json']);
  t.equal(r.code, 0, `revert exits 0 (${r.stderr})`);
  const report = jsonLines(r.stdout)[0] ?? {};
  t.same(
    (report['paths'] as { path: string; local: string; peers: string }[]).map((p) => [p.path, p.local, p.peers]),
    [
      ['deep', 'symlink', 'dir'],
      ['deep/er', 'deleted', 'dir'],
      ['deep/er/f.txt', 'deleted', 'file'],
    ],
  );
  const keptIn = String(report['keptIn']);
  t.ok((await lstat(path.join(B.dir, 'deep'))).isDirectory(), 'deep is a directory again');
  t.equal(await readFile(path.join(B.dir, 'deep', 'er', 'f.txt'), 'utf8'), 'deep, from A\n');
  t.equal(await readlink(path.join(keptIn, 'deep')), outside, "B's link is kept aside");
  t.equal(
    await readFile(path.join(outside, 'er', 'f.txt'), 'utf8'),
    'edited outside\n',
    'the outside copy is untouched',
  );

  await until(nodes, 'the roots of A and B agree', rootsAgree, 20_000);
  t.same((await docsOn(B))?.localChanges, 0);
});
