// A `clawpeer sync` of a shared folder's directory keeps the folder's mode, however it runs: a
// receive-only folder only receives (its local changes stay here, named as local changes, and
// the peer learns nothing of them), a send-only folder only sends. Before, a sync the CLI handed
// to the listener ran in the mode the command line asked for (two-way by default): a
// receive-only folder's local edit reached the peer while `status` still counted it as kept
// here, and `folder revert` then withdrew a revision the peer already had; a send-only folder
// was not run by the listener at all and the CLI's own two-way sync took the peer's changes.
// The same held without a listener (config.json says the mode). A sync the peer starts is
// checked in every mode too, and a peer's pull or listing of a receive-only folder (which gave
// its local changes away before) is refused.
//
// A and B share `docs` (two-way on A, receive-only on B) and `pub` (two-way on A, send-only on
// B), with an interval of an hour: only what the test does moves.
import t from 'tap';
import { mkdir, mkdtemp, readdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { jsonLines, runCli } from '../e2e/cli-harness.js';
import { cli, foldersOf, hasText, startFolderNodes, until, type FolderNode } from '../e2e/folder-rig.js';

const nodes = await startFolderNodes(['a', 'b']);
t.teardown(async () => {
  for (const n of nodes) await n.listener.stop('SIGKILL');
});
const [A, B] = nodes as [FolderNode, FolderNode];
const dirOf = (n: FolderNode, id: string): string => path.join(n.dir, id);
const exists = (p: string): Promise<boolean> =>
  stat(p).then(
    () => true,
    () => false,
  );

/** `clawpeer sync` on B's home; the exit code, its done event and every line. */
async function syncOnB(dir: string, remote: string, ...more: string[]) {
  // The folder services may still be syncing the change that was just waited for: the command
  // waits for that sync to end (cli/busy-wait.ts, test/long/sync-waits-busy.test.ts).
  const r = await runCli(['--home', B.home, 'sync', dir, remote, '--json', ...more], { timeoutMs: 60_000 });
  const lines = r.stdout === '' ? [] : jsonLines(r.stdout);
  return { code: r.code, stderr: r.stderr, lines, done: lines.find((l) => l['event'] === 'done') };
}

const localChangesOnB = async (): Promise<string[] | undefined> =>
  (await foldersOf(B)).find((f) => f.id === 'docs')?.localChangePaths;

t.before(async () => {
  for (const n of nodes) {
    const other = n === A ? B : A;
    for (const id of ['docs', 'pub']) {
      await mkdir(dirOf(n, id));
      const mode = n === A ? 'two-way' : id === 'docs' ? 'receive-only' : 'send-only';
      await cli(n.home, [
        ...['folder', 'add', dirOf(n, id), '--id', id, '--with', other.name],
        ...['--interval', '3600', '--mode', mode],
      ]);
    }
  }
  await writeFile(path.join(dirOf(A, 'docs'), 'shared.txt'), 'from A\n');
  await until(nodes, "A's file on B", hasText(path.join(dirOf(B, 'docs'), 'shared.txt'), 'from A\n'), 20_000);
});

t.test("a receive-only folder's sync run by the listener only receives", async (t) => {
  await writeFile(path.join(dirOf(B, 'docs'), 'local.txt'), 'made on B\n');
  await until(nodes, "B's local change in its status", async () => (await localChangesOnB())?.[0] === 'local.txt');

  const r = await syncOnB(dirOf(B, 'docs'), 'a:docs');
  t.equal(r.code, 0, r.stderr);
  t.match(r.done, { resident: true, revisionsSent: 0 }, 'the listener ran it and sent nothing');
  t.match(r.done, { mode: 'receive-only' }, 'in the mode the folder allows');
  t.same(
    r.lines.filter((l) => l['event'] === 'local-only').map((l) => l['path']),
    ['local.txt'],
    'the local change is named as kept, not sent',
  );
  t.equal(await exists(path.join(dirOf(A, 'docs'), 'local.txt')), false, 'the peer has no local.txt');
  t.same(await localChangesOnB(), ['local.txt'], "status still names B's local change");

  // The peer had nothing of it, so a revert takes back exactly the local addition.
  const plan = await cli(B.home, ['folder', 'revert', 'docs', '--dry-run']);
  t.match(plan.at(-1), { withdrawn: 1, paths: [{ path: 'local.txt', local: 'file', peers: 'none' }] });

  const refused = await syncOnB(dirOf(B, 'docs'), 'a:docs', '--mode', 'send-only');
  t.equal(refused.code, 2, 'a send-only sync of a receive-only folder is refused');
  t.match(refused.stderr, /receive-only/);
  t.equal(await exists(path.join(dirOf(A, 'docs'), 'local.txt')), false, 'still nothing on the peer');
});

t.test("a send-only folder's sync run by the listener only sends", async (t) => {
  await writeFile(path.join(dirOf(A, 'pub'), 'from-a.txt'), 'A wrote this\n');
  await writeFile(path.join(dirOf(B, 'pub'), 'from-b.txt'), 'B wrote this\n');
  await until(nodes, "B's file on A", hasText(path.join(dirOf(A, 'pub'), 'from-b.txt'), 'B wrote this\n'), 20_000);

  const r = await syncOnB(dirOf(B, 'pub'), 'a:pub');
  t.equal(r.code, 0, r.stderr);
  t.match(r.done, { resident: true, revisionsReceived: 0, mode: 'send-only' }, 'it took nothing');
  t.equal(await exists(path.join(dirOf(B, 'pub'), 'from-a.txt')), false, "A's change did not land on B");

  const refused = await syncOnB(dirOf(B, 'pub'), 'a:pub', '--mode', 'receive-only');
  t.equal(refused.code, 2, 'a receive-only sync of a send-only folder is refused');
  t.equal(await exists(path.join(dirOf(B, 'pub'), 'from-a.txt')), false, 'still not on B');

  // A dry run is planned in the CLI: it plans what the folder's mode allows.
  const dry = await syncOnB(dirOf(B, 'pub'), 'a:pub', '--dry-run');
  t.equal(dry.code, 0, dry.stderr);
  t.same(
    dry.lines.filter((l) => l['event'] === 'would-receive'),
    [],
    'a dry run plans nothing to take',
  );
});

t.test('a sync the peer starts: each mode against each folder', async (t) => {
  // A's syncs of a scratch directory (no folder of A's, so A's own CLI runs them) with B's shares.
  const scratch = await mkdtemp(path.join(A.dir, 'scratch-'));
  await writeFile(path.join(scratch, 'scratch.txt'), 'from the scratch dir\n');
  const syncOnA = async (share: string, mode: string, ...more: string[]): Promise<number | null> =>
    (await runCli(['--home', A.home, 'sync', scratch, `b:${share}`, '--mode', mode, '--json', ...more])).code;
  for (const dryRun of [[], ['--dry-run']]) {
    for (const mode of ['two-way', 'receive-only'])
      t.not(await syncOnA('docs', mode, ...dryRun), 0, `B's receive-only docs refuses ${mode} ${dryRun.join('')}`);
    for (const mode of ['two-way', 'send-only'])
      t.not(await syncOnA('pub', mode, ...dryRun), 0, `B's send-only pub refuses ${mode} ${dryRun.join('')}`);
  }
  t.equal(await syncOnA('docs', 'send-only'), 0, "B's receive-only docs takes a send-only sync");
  t.equal(await syncOnA('pub', 'receive-only'), 0, "B's send-only pub gives to a receive-only sync");
  t.equal(await exists(path.join(dirOf(B, 'pub'), 'scratch.txt')), false, 'nothing reached the send-only folder');
  t.equal(await exists(path.join(scratch, 'local.txt')), false, "B's local change did not reach A");
  t.equal(await exists(path.join(dirOf(B, 'docs'), 'scratch.txt')), true, 'the receive-only folder took the file');

  // Nor does a pull or a listing of the receive-only folder give its files away.
  const fetched = await mkdtemp(path.join(A.dir, 'pulled-'));
  const pull = await runCli(['--home', A.home, 'pull', 'b:docs/local.txt', fetched, '--json']);
  t.equal(pull.code, 3, 'a pull of a receive-only folder is refused');
  t.match(pull.stderr, /receive-only/);
  t.equal(await exists(path.join(fetched, 'local.txt')), false, 'nothing was pulled');
  const ls = await runCli(['--home', A.home, 'ls', 'b:docs', '--json']);
  t.equal(ls.code, 3, 'so is a listing');
  t.notMatch(ls.stdout, /local\.txt/);
  t.equal((await runCli(['--home', A.home, 'ls', 'b:pub', '--json'])).code, 0, 'a send-only folder is listed');
});

t.test('without a listener, config.json says the mode', async (t) => {
  await B.listener.stop('SIGTERM');
  await writeFile(path.join(dirOf(B, 'docs'), 'offline.txt'), 'made on B, no listener\n');
  const r = await syncOnB(dirOf(B, 'docs'), 'a:docs');
  t.equal(r.code, 0, r.stderr);
  t.match(r.done, { resident: false, revisionsSent: 0, mode: 'receive-only' }, 'the CLI sent nothing');
  const kept = r.lines.filter((l) => l['event'] === 'local-only').map((l) => l['path']);
  t.ok(kept.includes('local.txt') && kept.includes('offline.txt'), 'both local changes named as kept');
  const onA = await readdir(dirOf(A, 'docs'));
  t.notOk(onA.includes('offline.txt') || onA.includes('local.txt'), 'the peer has neither local file');

  const pub = await syncOnB(dirOf(B, 'pub'), 'a:pub');
  t.equal(pub.code, 0, pub.stderr);
  t.match(pub.done, { resident: false, revisionsReceived: 0, mode: 'send-only' });
  t.equal(await exists(path.join(dirOf(B, 'pub'), 'from-a.txt')), false, "A's change did not land on B");
});
