// A file edited here while ignored, and by the peers meanwhile, then no longer ignored: a
// conflict, both versions kept on every device (Syncthing). Before, B's scan gave its edit a
// vector that counted the peers' revisions stored while the path was ignored, so B's edit
// silently replaced A's everywhere (A's version only in history). Beside it: an edit here
// alone propagates with no copy, and a deletion here loses to the peers' edit (edit beats
// delete, sync/conflict.ts) instead of deleting it everywhere.
import t from 'tap';
import { access, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
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

const applied = (n: FolderNode, patterns: string[]) =>
  hasText(path.join(n.dir, '.clawpeer', 'ignore-applied.json'), `${JSON.stringify({ patterns })}\n`);
const rootsAgree = async (): Promise<boolean> => {
  const [a, b] = await Promise.all([docsOn(A), docsOn(B)]);
  return a?.root !== undefined && a.root === b?.root && a.pending === false && b.pending === false;
};
/** The folder's files with their text (not .clawpeer/, nor a sync's temp files, which come and go). */
const filesOf = async (n: FolderNode): Promise<Record<string, string>> => {
  const out: Record<string, string> = {};
  for (const name of (await readdir(n.dir)).sort()) {
    if (name.startsWith('.clawpeer')) continue;
    const text = await readFile(path.join(n.dir, name), 'utf8').catch(() => undefined);
    if (text !== undefined) out[name] = text;
  }
  return out;
};
const sameFiles = async (): Promise<boolean> => JSON.stringify(await filesOf(A)) === JSON.stringify(await filesOf(B));
const copiesOf = (files: Record<string, string>, stem: string): string[] =>
  Object.keys(files).filter((f) => f.startsWith(`${stem}.sync-conflict-`));

t.test('edits made while a path was ignored meet the peers edits as conflicts once unignored', async (t) => {
  for (const name of ['notes', 'plan', 'solo', 'gone']) await writeFile(path.join(A.dir, `${name}.txt`), 'first\n');
  await addFolderEverywhere(nodes, 'docs');
  await until(nodes, "A's files on B", hasText(path.join(B.dir, 'gone.txt'), 'first\n'), 30_000);
  await until(nodes, 'both in sync', () => allInSync(nodes, 'docs'), 30_000);

  const rules = ['notes.txt', 'plan.txt', 'solo.txt', 'gone.txt'];
  await writeFile(path.join(B.dir, '.clawpeerignore'), `${rules.join('\n')}\n`);
  await until(nodes, "B's listener syncs with the rules", applied(B, rules), 30_000);

  // The peers edit three of them; B stores those revisions but leaves its files alone.
  await writeFile(path.join(A.dir, 'notes.txt'), 'notes, from A\n');
  await writeFile(path.join(A.dir, 'plan.txt'), 'plan, from A\n');
  await writeFile(path.join(A.dir, 'gone.txt'), 'gone, edited on A\n');
  await writeFile(path.join(A.dir, 'marker.txt'), 'A synced\n');
  await until(nodes, "A's marker on B", hasText(path.join(B.dir, 'marker.txt'), 'A synced\n'), 30_000);
  await until(nodes, 'the roots agree', rootsAgree, 30_000);
  t.equal(await readFile(path.join(B.dir, 'notes.txt'), 'utf8'), 'first\n', 'the ignored file is left as is');

  // B edits while the rules still ignore them: notes.txt later than A (B's wins the conflict),
  // plan.txt with an older mtime (A's wins), solo.txt only here, gone.txt deleted here.
  await writeFile(path.join(B.dir, 'notes.txt'), 'notes, from B\n');
  await writeFile(path.join(B.dir, 'plan.txt'), 'plan, from B\n');
  const hourAgo = new Date(Date.now() - 3_600_000);
  await utimes(path.join(B.dir, 'plan.txt'), hourAgo, hourAgo);
  await writeFile(path.join(B.dir, 'solo.txt'), 'solo, from B\n');
  await rm(path.join(B.dir, 'gone.txt'));

  await rm(path.join(B.dir, '.clawpeerignore'));
  await until(nodes, 'B applies no rule', applied(B, []), 30_000);
  await until(nodes, 'both hold the same files', sameFiles, 60_000);
  await until(nodes, 'the roots agree again', rootsAgree, 30_000);
  await until(nodes, 'both in sync again', () => allInSync(nodes, 'docs'), 30_000);
  await until(nodes, 'still the same files', sameFiles, 30_000);

  const files = await filesOf(B);
  t.equal(files['notes.txt'], 'notes, from B\n', "B's later edit of notes.txt wins");
  const notesCopies = copiesOf(files, 'notes');
  t.equal(notesCopies.length, 1, "A's notes.txt is kept as one conflict copy");
  t.equal(files[notesCopies[0] ?? ''], 'notes, from A\n');
  t.equal(files['plan.txt'], 'plan, from A\n', "A's later edit of plan.txt wins");
  const planCopies = copiesOf(files, 'plan');
  t.equal(planCopies.length, 1, "B's plan.txt is kept as one conflict copy");
  t.equal(files[planCopies[0] ?? ''], 'plan, from B\n');
  t.equal(files['solo.txt'], 'solo, from B\n', "B's edit alone propagates");
  t.same(copiesOf(files, 'solo'), [], 'with no conflict copy');
  t.equal(files['gone.txt'], 'gone, edited on A\n', "A's edit beats B's deletion");
  t.same(copiesOf(files, 'gone'), [], 'with no conflict copy');
  t.same(await filesOf(A), files, 'A holds the same files');
  const aside = await access(path.join(B.dir, '.clawpeer', 'unignored')).then(
    () => true,
    () => false,
  );
  t.notOk(aside, 'nothing of B was moved aside: each version is in the folder, once');
});
