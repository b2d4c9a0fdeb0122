// `clawpeer folder revert ID` on a receive-only copy (Syncthing's "Revert Local Changes"): the
// folder then holds the peers' versions of what was changed here, the local bytes are kept under
// .clawpeer/reverted/, status lists no local changes, and both logs have the same root.
//
// A is two-way, B receive-only. On B: `kept.txt` is edited (A never changes it: its bytes come
// back from A), `shared.txt` is edited and A then changes it too (B leaves A's change as is; A no
// longer has the bytes B's edit replaced, so the revert forgets the path and the sync that follows
// brings A's current version), `added.txt` and `sub/x.txt` are added (no peer has them: gone),
// and `gone.txt` is deleted (it comes back with A's bytes).
import t from 'tap';
import { mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { runCli, jsonLines } from './cli-harness.js';
import {
  addReceiveOnlyDocs,
  cli,
  docsOn,
  docsRootsAgree,
  foldersOf,
  hasText,
  startFolderNodes,
  until,
  type FolderNode,
} from './folder-rig.js';

const nodes = await startFolderNodes(['a', 'b']);
t.teardown(async () => {
  for (const n of nodes) await n.listener.stop('SIGKILL');
});
const [A, B] = nodes as [FolderNode, FolderNode];

const localOnB = async (): Promise<string[] | undefined> => {
  const d = await docsOn(B);
  return d?.localChanges === undefined ? undefined : [String(d.localChanges), ...(d.localChangePaths ?? [])];
};
const seen = (want: string[]) => async (): Promise<boolean> =>
  JSON.stringify(await localOnB()) === JSON.stringify(want);
const exists = (p: string): Promise<boolean> =>
  readFile(p).then(
    () => true,
    () => false,
  );
const rootsAgree = docsRootsAgree(A, B);

t.test("a revert the listener refuses is logged as the folder's revert", async (t) => {
  // B's copy of `lone` has never synced with A (A has no such folder): nothing is known of what A lacks.
  await cli(B.home, ['folder', 'add', `${B.dir}-lone`, '--id', 'lone', '--with', A.name, '--mode', 'receive-only']);
  const r = await runCli(['--home', B.home, 'folder', 'revert', 'lone']);
  t.not(r.code, 0, 'refused');
  // Before, the listener said "sync for the CLI failed", naming neither the revert nor the folder.
  t.match(B.listener.stderr(), /INFO [^\n]*: folder revert for the CLI failed folder=lone error=/);
  t.notMatch(B.listener.stderr(), /sync for the CLI failed/);
  // Once A refused B's sync (it has no such folder), A holds nothing the revert waits for: it
  // says that no peer has the folder, not (as before, for good) that A has not synced yet.
  const refusedByA = async (): Promise<boolean> =>
    (await foldersOf(B)).find((f) => f.id === 'lone')?.peers[0]?.state === 'error';
  await until(nodes, "A's refusal of lone in B's status", refusedByA, 20_000);
  const none = await runCli(['--home', B.home, 'folder', 'revert', 'lone']);
  t.equal(none.code, 4, 'refused: no peer to take the versions from');
  t.match(
    none.stderr.replace(/\s+/g, ' '),
    /folder lone has no peer to take the versions from: a \(\S+\) refused it as unknown/,
  );
  await cli(B.home, ['folder', 'remove', 'lone']);
});

t.test('folder revert takes back the local changes of a receive-only copy', async (t) => {
  await writeFile(path.join(A.dir, 'kept.txt'), 'kept, from A\n');
  await writeFile(path.join(A.dir, 'shared.txt'), 'shared v1, from A\n');
  await writeFile(path.join(A.dir, 'gone.txt'), 'deleted on B\n');
  await addReceiveOnlyDocs(A, B);
  await until(nodes, "A's files on B", hasText(path.join(B.dir, 'shared.txt'), 'shared v1, from A\n'), 20_000);
  await until(nodes, "A's kept.txt on B", hasText(path.join(B.dir, 'kept.txt'), 'kept, from A\n'), 20_000);

  // A two-way folder has nothing to revert: refused, exit 2.
  const refused = await runCli(['--home', A.home, 'folder', 'revert', 'docs']);
  t.equal(refused.code, 2, 'revert of a two-way folder is a usage error');
  t.match(refused.stderr, /receive-only/);

  await writeFile(path.join(B.dir, 'kept.txt'), 'kept, edited on B\n');
  await writeFile(path.join(B.dir, 'shared.txt'), 'shared, edited on B\n');
  await writeFile(path.join(B.dir, 'added.txt'), 'added on B\n');
  await mkdir(path.join(B.dir, 'sub'));
  await writeFile(path.join(B.dir, 'sub', 'x.txt'), 'x on B\n');
  await until(nodes, "A's gone.txt on B", hasText(path.join(B.dir, 'gone.txt'), 'deleted on B\n'), 20_000);
  await rm(path.join(B.dir, 'gone.txt')); // a local deletion: not listed (not kept), but reverted
  const five = ['5', 'added.txt', 'kept.txt', 'shared.txt', 'sub', 'sub/x.txt'];
  await until(nodes, "B's local changes in its status", seen(five), 20_000);

  // A changes shared.txt: B leaves it as is (its own edit is kept).
  await writeFile(path.join(A.dir, 'shared.txt'), 'shared v2, from A\n');
  const leftAsIs = async (): Promise<boolean> =>
    (await cli(B.home, ['folder', 'log', 'docs'])).some((e) => Number(e['skipped']) > 0);
  await until(nodes, "B leaving A's change as is", leftAsIs, 20_000);
  t.equal(
    await hasText(path.join(B.dir, 'shared.txt'), 'shared, edited on B\n')(),
    true,
    "B's edit stays before the revert",
  );

  // --dry-run lists and changes nothing.
  const plan = (await cli(B.home, ['folder', 'revert', 'docs', '--dry-run']))[0] ?? {};
  t.equal(plan['event'], 'folder-revert-plan');
  t.same(
    (plan['paths'] as { path: string }[]).map((p) => p.path),
    ['added.txt', 'gone.txt', 'kept.txt', 'shared.txt', 'sub', 'sub/x.txt'],
    'the dry run lists every local change, the deletion too',
  );
  const text = await runCli(['--home', B.home, 'folder', 'revert', 'docs', '--dry-run']);
  t.equal(text.code, 0);
  t.match(
    text.stdout,
    /^would revert 6 paths of folder docs to the peers' version \(6 local revisions to withdraw\)$/m,
  );
  t.match(text.stdout, /^ {2}added\.txt: file here -> gone \(no peer has it\)$/m);
  t.match(text.stdout, /^ {2}gone\.txt: deleted here -> file$/m);
  t.equal(await hasText(path.join(B.dir, 'kept.txt'), 'kept, edited on B\n')(), true, 'the dry run changed nothing');
  t.same(await localOnB(), five);

  const r = await runCli(['--home', B.home, 'folder', 'revert', 'docs', '--json']);
  t.equal(r.code, 0, `revert exits 0 (${r.stderr})`);
  const report = jsonLines(r.stdout)[0] ?? {};
  t.equal(report['event'], 'folder-reverted');
  t.equal(report['withdrawn'], 6, 'one local revision per path withdrawn');
  const keptIn = String(report['keptIn']);
  t.ok(
    keptIn.startsWith(path.join(B.dir, '.clawpeer', 'reverted')),
    'the local bytes are kept under .clawpeer/reverted',
  );
  const byPath = new Map(
    (report['paths'] as { path: string; peers: string; bySync?: boolean }[]).map((p) => [p.path, p]),
  );
  t.equal(byPath.get('added.txt')?.peers, 'none');
  t.equal(byPath.get('kept.txt')?.peers, 'file');
  t.equal(byPath.get('shared.txt')?.bySync, true, "shared.txt: A's v1 bytes are gone, the sync brings v2");

  // The folder log has the revert: how many paths, where the local versions went.
  const revertsLogged = async (): Promise<Record<string, unknown>[]> =>
    (await cli(B.home, ['folder', 'log', 'docs'])).filter((e) => e['event'] === 'folder-revert');
  const entries = await revertsLogged();
  t.equal(entries.length, 1, 'one folder log entry for the revert (none for the dry run)');
  t.match(entries[0], { kind: 'revert', folder: 'docs', reverted: 6, withdrawn: 6, keptIn });
  const logText = (await runCli(['--home', B.home, 'folder', 'log', 'docs'])).stdout;
  t.ok(
    logText.includes(
      `revert: 6 paths back to the peers' version, 6 local revisions withdrawn; the local versions moved to ${keptIn} (`,
    ),
    `folder log says it (${logText})`,
  );
  t.match(logText, /^ {2}added\.txt: file here -> gone \(no peer has it\)$/m, 'and lists the paths');

  // At once: A's bytes of kept.txt (fetched from A), the additions gone and kept aside.
  t.equal(await hasText(path.join(B.dir, 'kept.txt'), 'kept, from A\n')(), true, "kept.txt holds A's bytes");
  t.equal(await hasText(path.join(B.dir, 'gone.txt'), 'deleted on B\n')(), true, 'the file deleted on B is back');
  t.notOk(await exists(path.join(B.dir, 'added.txt')), 'the added file is gone from the folder');
  t.notOk(await exists(path.join(B.dir, 'sub', 'x.txt')), 'the added directory is gone too');
  t.equal(await readFile(path.join(keptIn, 'added.txt'), 'utf8'), 'added on B\n', 'the added file is kept aside');
  t.equal(await readFile(path.join(keptIn, 'kept.txt'), 'utf8'), 'kept, edited on B\n', "B's edit is kept aside");
  t.equal(await readFile(path.join(keptIn, 'shared.txt'), 'utf8'), 'shared, edited on B\n');
  t.equal(await readFile(path.join(keptIn, 'sub', 'x.txt'), 'utf8'), 'x on B\n');

  // The sync that follows lands A's change of shared.txt that B had left as is.
  await until(
    nodes,
    "A's v2 of shared.txt on B",
    hasText(path.join(B.dir, 'shared.txt'), 'shared v2, from A\n'),
    20_000,
  );
  await until(nodes, 'no local changes on B', seen(['0']), 20_000);
  await until(nodes, 'the roots of A and B agree', rootsAgree, 20_000);
  t.pass('status lists no local changes and the roots agree');
  t.same((await readdir(B.dir)).filter((n) => n !== '.clawpeer').sort(), ['gone.txt', 'kept.txt', 'shared.txt']);

  // A later change on A still lands on B.
  await writeFile(path.join(A.dir, 'kept.txt'), 'kept v2, from A\n');
  await until(nodes, "A's later change on B", hasText(path.join(B.dir, 'kept.txt'), 'kept v2, from A\n'), 20_000);
  await until(nodes, 'the roots agree again', rootsAgree, 20_000);
  t.same(await localOnB(), ['0'], 'still no local changes');

  // Nothing left to revert: a no-op.
  const again = (await cli(B.home, ['folder', 'revert', 'docs']))[0] ?? {};
  t.equal(again['withdrawn'], 0);
  t.same(again['paths'], []);
  t.equal((await revertsLogged()).length, 1, 'a revert with nothing to take back is not logged');

  // Without its listener the revert is not run, and says why.
  await B.listener.stop('SIGTERM');
  const none = await runCli(['--home', B.home, 'folder', 'revert', 'docs']);
  t.equal(none.code, 1);
  t.match(none.stderr, /no listener is running/);
});
