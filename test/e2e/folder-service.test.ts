// Three listeners on loopback share one folder, each set up with `clawpeer folder add` while it
// runs: an edit on one reaches the other two with no command run by hand, a delete travels,
// status says in-sync, `folder log` tells what each sync changed, and a paused folder is left
// alone until resumed. (Killed and restarted: test/slow/folders/folder-restart.test.ts.)
import t from 'tap';
import { rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { jsonLines, runCli } from './cli-harness.js';
import { addFolderEverywhere, allInSync, foldersOf, hasText, startFolderNodes, until } from './folder-rig.js';

const nodes = await startFolderNodes(['a', 'b', 'c']);
t.teardown(async () => {
  for (const n of nodes) await n.listener.stop('SIGKILL');
});
const [A, B, C] = nodes as [(typeof nodes)[number], (typeof nodes)[number], (typeof nodes)[number]];
const exists = (p: string): Promise<boolean> =>
  stat(p).then(
    () => true,
    () => false,
  );
const wait = (what: string, check: () => Promise<boolean>): Promise<number> => until(nodes, what, check);

t.test(
  'folder add while the listeners run; an edit on one reaches the other two by itself; a delete too',
  async (t) => {
    await writeFile(path.join(A.dir, 'before.txt'), 'there before\n');
    const added = await addFolderEverywhere(nodes, 'docs');
    t.match(added, [{ event: 'folder-added', id: 'docs', mode: 'two-way', versioning: 'keep-last:10' }, {}, {}]);
    const listed = jsonLines((await runCli(['--home', A.home, 'folder', 'list', '--json'])).stdout);
    t.match(listed, [{ event: 'folder', id: 'docs', with: ['b', 'c'] }]);
    await wait(
      'the first file everywhere',
      async () =>
        (await hasText(path.join(B.dir, 'before.txt'), 'there before\n')()) &&
        hasText(path.join(C.dir, 'before.txt'), 'there before\n')(),
    );

    await wait('every pair in sync', () => allInSync(nodes, 'docs')); // timed from a quiet state
    const saved = Date.now();
    await writeFile(path.join(A.dir, 'note.txt'), 'written on A\n');
    await wait(
      'the edit on B and C',
      async () =>
        (await hasText(path.join(B.dir, 'note.txt'), 'written on A\n')()) &&
        hasText(path.join(C.dir, 'note.txt'), 'written on A\n')(),
    );
    t.comment(`save on A to arrival on B and C: ${Date.now() - saved} ms (the watcher's quiet time is 300 ms)`);

    await rm(path.join(B.dir, 'before.txt'));
    await wait(
      'the delete on A and C',
      async () => !(await exists(path.join(A.dir, 'before.txt'))) && !(await exists(path.join(C.dir, 'before.txt'))),
    );
    t.pass('a delete on B propagates');
  },
);

t.test('status says in-sync with the last sync time; folder log lists what the syncs changed', async (t) => {
  await wait('every pair in sync', () => allInSync(nodes, 'docs'));
  const human = await runCli(['--home', A.home, 'status']);
  t.match(human.stdout, /^folder docs \(two-way\) /m);
  t.match(human.stdout, /^ {2}b: in-sync, last sync .* ago/m);
  const log = jsonLines((await runCli(['--home', A.home, 'folder', 'log', 'docs', '--json'])).stdout);
  t.ok(
    log.some((e) => e['event'] === 'folder-sync' && e['folder'] === 'docs' && (e['sent'] as number) > 0),
    'A sent its files',
  );
  t.ok(
    log.some(
      (e) =>
        e['by'] === 'peer' &&
        e['deleted'] === 1 &&
        (e['bytes'] as number) > 0 && // what the peer's sync carried here, and how long it took
        (e['seconds'] as number) > 0 &&
        e['added'] === 0 &&
        JSON.stringify(e['paths']) === JSON.stringify([{ path: 'before.txt', change: 'deleted' }]),
    ),
    'the delete B ran here, counted as one file deleted and listed by path',
  );
  const logB = jsonLines((await runCli(['--home', B.home, 'folder', 'log', 'docs', '--json'])).stdout);
  t.ok(
    logB.some((e) => (e['added'] as number) > 0),
    'B logged the files it took as added',
  );
  const humanLog = await runCli(['--home', A.home, 'folder', 'log', 'docs']);
  t.match(humanLog.stdout, /Z by [bc]: 0 added, 0 changed, 1 deleted here; .*\n {2}- before\.txt$/m);
  const humanLogB = await runCli(['--home', B.home, 'folder', 'log', 'docs']);
  t.match(humanLogB.stdout, /^ {2}\+ note\.txt$/m, 'the file B took from A, marked new');
  // The nodes' own word that they hold the same revisions (what the convergence test polls).
  const logsAgree = async (): Promise<boolean> => {
    const docs = await Promise.all(nodes.map(async (n) => (await foldersOf(n)).find((f) => f.id === 'docs')));
    return docs.every(
      (f) =>
        f?.pending === false &&
        typeof f.root === 'string' &&
        f.root === docs[0]?.root &&
        f.revisions === docs[0]?.revisions &&
        (f.revisions ?? 0) > 0,
    );
  };
  await wait('the same revision count and root on every node', logsAgree);
});

t.test('a paused folder is neither synced nor served until resumed', async (t) => {
  t.equal((await runCli(['--home', C.home, 'folder', 'pause', 'docs'])).code, 0);
  await wait('C paused', async () => (await foldersOf(C))[0]?.peers.every((p) => p.state === 'paused') === true);
  await writeFile(path.join(A.dir, 'while-paused.txt'), 'C is paused\n');
  await wait('the file on B', hasText(path.join(B.dir, 'while-paused.txt'), 'C is paused\n'));
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  t.notOk(await exists(path.join(C.dir, 'while-paused.txt')), 'not on the paused node');
  t.equal((await runCli(['--home', C.home, 'folder', 'resume', 'docs'])).code, 0);
  await wait('the file on C once resumed', hasText(path.join(C.dir, 'while-paused.txt'), 'C is paused\n'));
  t.pass('resumed: it catches up');
});

t.test("a folder's versioning policy is applied after the syncs that replace content", async (t) => {
  // B keeps one revision per path; A and C the default ten. (What B drops, its peers drop too at
  // their next sync: gc converges, README "Shared folders".)
  // Changed in place while B's listener runs (`folder edit`): it restarts the folder's syncs.
  const edited = await runCli(['--home', B.home, 'folder', 'edit', 'docs', '--versioning', 'keep-last:1', '--json']);
  t.match(jsonLines(edited.stdout), [{ event: 'folder-changed', versioning: 'keep-last:1', with: ['a', 'c'] }]);
  const note = path.join(A.dir, 'versions.txt');
  for (let i = 1; i <= 4; i++) {
    await writeFile(note, `version ${i}\n`);
    await wait(
      `version ${i} on B and C`,
      async () =>
        (await hasText(path.join(B.dir, 'versions.txt'), `version ${i}\n`)()) &&
        hasText(path.join(C.dir, 'versions.txt'), `version ${i}\n`)(),
    );
  }
  const revisions = async (dir: string): Promise<number> =>
    jsonLines((await runCli(['--home', B.home, 'log', path.join(dir, 'versions.txt'), '--json'])).stdout).filter(
      (e) => e['event'] === 'revision',
    ).length;
  await wait('B down to one kept revision', async () => (await revisions(B.dir)) === 1);
  t.pass('B (keep-last:1) dropped the replaced versions');
});

t.test('a folder the peer does not share: status says error, why, and when it is tried again', async (t) => {
  // A shares "lonely" with B, which has no such folder: each try reaches B and is refused. The
  // pair backs off (sync/folder-schedule.ts; a working dial no longer resets it), and status
  // names the next try.
  const lonely = path.join(A.dir, '..', 'lonely');
  const added = await runCli(['--home', A.home, 'folder', 'add', lonely, '--id', 'lonely', '--with', 'b']);
  t.equal(added.code, 0, added.stderr);
  await wait('the refusal in A status', async () => {
    const f = (await foldersOf(A)).find((x) => x.id === 'lonely');
    return f?.peers[0]?.state === 'error';
  });
  // Read while the pair waits out its backoff (under load a retry may be running at one read).
  let human = await runCli(['--home', A.home, 'status']);
  await wait('the refusal in the human status', async () => {
    human = await runCli(['--home', A.home, 'status']);
    return /^ {2}b: error/m.test(human.stdout);
  });
  t.match(human.stdout, /^ {2}b: error, never synced, next try in \d+ s \(peer: no share named "lonely"/m);
  t.match(human.stdout, /the peer has not added folder lonely, or has paused or removed it\)/, 'and why that may be');
  t.equal((await runCli(['--home', A.home, 'folder', 'remove', 'lonely'])).code, 0);
});

t.test("status lists the sessions A's folder service dialled, not only the ones peers opened", async (t) => {
  // A change on A makes A's own service sync with B and C over sessions it dials (a session
  // dropped after a failed sync is dialled again by the retry): polled until both are listed.
  await writeFile(path.join(A.dir, 'dialled.txt'), 'from A\n');
  let human = '';
  const dialled = async (): Promise<boolean> => {
    const [status] = jsonLines((await runCli(['--home', A.home, 'status', '--json'])).stdout);
    const peers = (status?.['peers'] ?? []) as { id: string; dialed?: boolean }[];
    human = (await runCli(['--home', A.home, 'status'])).stdout;
    return [B, C].every((n) => peers.some((p) => p.id === n.id && p.dialed === true));
  };
  await wait('A listing its dialled sessions to B and C', dialled);
  t.match(human, /^\d+ peers connected:$/m);
  t.match(human, /^ {2}b \(\S+\) to 127\.0\.0\.1:\d+ over quic/m, 'shown as to its address');
});
