// `clawpeer sync` of a folder another sync holds waits its turn (cli/busy-wait.ts). Before, a
// sync the listener ran for the CLI, or the CLI ran itself, was refused BUSY when the folder was
// being synced at that moment, here (FOLDER_BUSY, after the client's 5 s lock wait) or in the
// peer's copy (PEER_BUSY, exit 4, after the peer's 1 s wait), as the folder services do at every
// start and after each change: the person had to run it again. Now it says once that it waits,
// runs the sync again when that other sync has ended, and past the bound still fails as before.
//
// The other sync is this test holding the folder's lock (store/folder-lock.ts, as a sync does):
// held until the command says it waits, then released. A and B share `docs`, an hour's interval.
import t from 'tap';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { FolderLock } from '../../src/store/folder-lock.js';
import { runCli } from '../e2e/cli-harness.js';
import { cli, hasText, startFolderNodes, until, type FolderNode } from '../e2e/folder-rig.js';
import { exitWithin, spawnCli } from '../fault/fault-harness.js';

const nodes = await startFolderNodes(['a', 'b']);
t.teardown(async () => {
  for (const n of nodes) await n.listener.stop('SIGKILL');
});
const [A, B] = nodes as [FolderNode, FolderNode];
/** The bound of the tests of the bound (tests only: busy-wait.ts BUSY_WAIT_ENV). */
const shortBound = { CLAWPEER_TEST_SYNC_BUSY_WAIT_MS: '1500' };

/** Takes `dir`'s sync lock as a sync does, waiting out the folder services' own syncs. */
const hold = (dir: string): Promise<FolderLock> => FolderLock.acquire(dir, { waitMs: 30_000 });

t.before(async () => {
  for (const n of nodes) {
    const other = n === A ? B : A;
    await cli(n.home, ['folder', 'add', n.dir, '--id', 'docs', '--with', other.name, '--interval', '3600']);
  }
  await writeFile(path.join(A.dir, 'first.txt'), 'from A\n');
  await until(nodes, "A's file on B", hasText(path.join(B.dir, 'first.txt'), 'from A\n'), 20_000);
});

/**
 * Runs `clawpeer sync` on B with `lock` held; when it says it waits, releases the lock. Returns
 * its exit code, events and stderr.
 */
async function syncWhileHeld(lock: FolderLock, ...more: string[]) {
  const run = spawnCli(B.home, ['sync', B.dir, 'a:docs', ...more]);
  let said: boolean;
  try {
    said = await run.waitFor((e) => e['event'] === 'waiting');
  } finally {
    await lock.release();
  }
  const code = await exitWithin(run, 90_000, 'the sync after the lock was released');
  return {
    said,
    code,
    events: run.events,
    waiting: run.events.filter((e) => e['event'] === 'waiting'),
    done: run.events.find((e) => e['event'] === 'done'),
    stderr: run.stderr(),
  };
}

t.test("the listener runs it: the peer's copy busy, the sync waits, then runs", async (t) => {
  await writeFile(path.join(B.dir, 'from-b.txt'), 'made on B\n');
  const r = await syncWhileHeld(await hold(A.dir));
  t.ok(r.said, `it said it waits: ${r.stderr}`);
  t.match(r.waiting, [{ code: 'PEER_BUSY', message: /is being synced by pid \d+/, waitSeconds: 120 }], 'once');
  t.equal(r.code, 0, r.stderr);
  t.match(r.done, { resident: true, inSync: true }, 'the listener ran it to the end');
  t.ok(await hasText(path.join(A.dir, 'from-b.txt'), 'made on B\n')(), "B's file is on A");
});

t.test('the listener runs it: the folder busy here, the sync waits, then runs', async (t) => {
  const r = await syncWhileHeld(await hold(B.dir));
  t.ok(r.said, `it said it waits: ${r.stderr}`);
  t.match(r.waiting, [{ code: 'FOLDER_BUSY', message: /is being synced by pid \d+/ }], 'once');
  t.equal(r.code, 0, r.stderr);
  t.match(r.done, { resident: true, inSync: true });
});

t.test('past the bound it fails as before: exit 4, the same message', async (t) => {
  const lock = await hold(A.dir);
  try {
    const json = await runCli(['--home', B.home, 'sync', B.dir, 'a:docs', '--json'], { env: shortBound });
    t.equal(json.code, 4, json.stderr);
    const events = json.stdout
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    t.equal(events.filter((e) => e['event'] === 'waiting').length, 1, 'it said once that it waits');
    t.match(events.at(-1), { event: 'error', code: 'PEER_BUSY', exitCode: 4, message: /is being synced by pid/ });

    const human = await runCli(['--home', B.home, 'sync', B.dir, 'a:docs'], { env: shortBound });
    t.equal(human.code, 4);
    t.equal(human.stderr.match(/waiting for its running sync to end \(at most 1\.5 s\)/g)?.length, 1, human.stderr);
    t.match(human.stderr, /\nclawpeer: peer: folder docs is being synced by pid \d+/, 'then the refusal as before');

    // --quiet: the full CLI (the fast path takes no -q), and no word of the wait.
    const quiet = await runCli(['--home', B.home, 'sync', B.dir, 'a:docs', '-q'], { env: shortBound });
    t.equal(quiet.code, 4);
    t.notMatch(quiet.stderr, /waiting/, 'quiet');
    t.match(quiet.stderr, /is being synced by pid/);
  } finally {
    await lock.release();
  }
});

t.test('Ctrl-C while it waits ends it at once: exit 130', async (t) => {
  const lock = await hold(A.dir);
  try {
    const run = spawnCli(B.home, ['sync', B.dir, 'a:docs']);
    t.ok(await run.waitFor((e) => e['event'] === 'waiting'), 'it waits');
    run.child.kill('SIGINT');
    t.equal(await exitWithin(run, 10_000, 'the interrupted sync'), 130, run.stderr());
  } finally {
    await lock.release();
  }
});

t.test("no listener here: the CLI's own sync waits for the peer's copy too", async (t) => {
  await B.listener.stop('SIGTERM');
  await writeFile(path.join(B.dir, 'offline.txt'), 'made on B, no listener\n');
  const r = await syncWhileHeld(await hold(A.dir));
  t.ok(r.said, `it said it waits: ${r.stderr}`);
  t.match(r.waiting, [{ code: 'PEER_BUSY' }], 'once');
  t.equal(r.code, 0, r.stderr);
  t.match(r.done, { resident: false, inSync: true }, 'the CLI ran it');
  t.ok(await hasText(path.join(A.dir, 'offline.txt'), 'made on B, no listener\n')(), "B's file is on A");
});
