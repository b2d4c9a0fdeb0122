// Too few file descriptors (CI): the listener and the sync client each under an open-file limit
// of 64 (`prlimit` on the listener, `ulimit -n 64` for the client), a tree of 1,000 small files
// synced from the listener's share to an empty folder, then 1,000 new ones back. Both syncs
// complete and both folders end identical: the sender keeps fewer files open when it meets the
// limit, and the receiver's commit batches fit in it. Before, both failed with EMFILE ("too many
// open files"), every time: a tree of more than ~40 files never synced under that limit. And at a
// limit too low to load clawpeer's modules (24), the launcher says to raise it, with no stack.
// Files over 1 MiB are staged on disk: LIMIT + 16 of them synced to the listener, then copied
// within the folder (content the listener holds: every file complete before a chunk travels).
// Before, each staged file held its descriptor(s) until published: "cannot open partial ...
// EMFILE" every retry. Now staged files reopen their descriptors on demand, a bounded number open.
import t from 'tap';
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFile, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { CLI, snapshot, startRig, treeDiff, withoutInternals, type CliResult, type TreeItem } from './fault-harness.js';

const LIMIT = 64;
const FILES = 1000;

let prlimit: string | undefined;
try {
  execFileSync('prlimit', ['--version'], { stdio: 'ignore' });
} catch (err) {
  prlimit = (err as Error).message;
}
if (prlimit !== undefined) {
  t.plan(0, `no prlimit here (util-linux) to lower the listener's limit: ${prlimit}`);
} else {
  const rig = await startRig('fd-limit');
  t.teardown(() => rig.close());
  const pid = rig.listener.child.pid;
  if (pid === undefined) throw new Error('the listener has no pid');
  execFileSync('prlimit', ['--pid', String(pid), `--nofile=${LIMIT}:${LIMIT}`]);
  const local = path.join(rig.work, 'local');
  await mkdir(local);

  const makeTree = async (root: string, tag: string): Promise<void> => {
    for (let d = 0; d < FILES / 100; d++) {
      await mkdir(path.join(root, `${tag}-${d}`), { recursive: true });
      for (let i = 0; i < 100; i++) await writeFile(path.join(root, `${tag}-${d}`, `f${i}.txt`), `${tag} ${d} ${i}\n`);
    }
  };
  /** `clawpeer sync` under `ulimit -n LIMIT`. */
  const limitedSync = (): Promise<CliResult> =>
    new Promise((resolve) => {
      execFile(
        'sh',
        [
          '-c',
          `ulimit -n ${LIMIT} && exec "$@"`,
          'sh',
          process.execPath,
          CLI,
          '--home',
          rig.b.home,
          'sync',
          local,
          'alice:inbox',
        ],
        { timeout: 60_000 },
        (err, stdout, stderr) => {
          const code = err === null ? 0 : typeof err.code === 'number' ? err.code : null;
          resolve({ code, stdout, stderr });
        },
      );
    });
  // A sync does not carry directory mtimes (test/e2e/sync.test.ts compares them as 0 too).
  const tree = async (dir: string): Promise<TreeItem[]> =>
    withoutInternals(await snapshot(dir)).map((i) => (i.kind === 'dir' ? { ...i, mtimeS: 0 } : i));

  t.match(await readFile(`/proc/${pid}/limits`, 'latin1'), new RegExp(`Max open files\\s+${LIMIT}\\s`), 'limit set');

  t.test('a limit too low to load clawpeer at all: what to change, not a stack', async (t) => {
    const run = await new Promise<CliResult>((resolve) => {
      execFile(
        'sh',
        ['-c', 'ulimit -n 24 && exec "$@"', 'sh', process.execPath, CLI, '--home', rig.b.home, 'listen', '--port', '0'],
        { timeout: 30_000 },
        (err, stdout, stderr) => resolve({ code: err === null ? 0 : (err.code as number), stdout, stderr }),
      );
    });
    t.equal(run.code, 1, 'exit 1');
    t.match(run.stderr, /too many open files while loading .*raise it \(ulimit -n 1024\)/, `says so; ${run.stderr}`);
    t.notMatch(run.stderr, /node:internal/, "no loader's stack");
  });

  t.test(`the listener sends ${FILES} files to a client, both at ${LIMIT} descriptors`, async (t) => {
    await makeTree(rig.share, 'listener');
    const run = await limitedSync();
    t.equal(run.code, 0, `the sync completes; stderr: ${run.stderr.slice(-2000)}`);
    t.same(treeDiff(await tree(rig.share), await tree(local)), [], 'both folders identical');
  });

  t.test(`the client sends ${FILES} files to the listener, both at ${LIMIT} descriptors`, async (t) => {
    await makeTree(local, 'client');
    const run = await limitedSync();
    t.equal(run.code, 0, `the sync completes; stderr: ${run.stderr.slice(-2000)}`);
    t.same(treeDiff(await tree(local), await tree(rig.share)), [], 'both folders identical');
    t.notMatch(rig.listener.stderr(), /EMFILE|internal error/, 'the listener never ran out of descriptors');
  });

  // Content the receiver holds already (a directory renamed, files copied within the folder):
  // every file is complete before a chunk travels, and the first commit took them all at once.
  t.test(
    `the client renames the ${FILES} files' directories: the listener makes them from its own content`,
    async (t) => {
      await mkdir(path.join(local, 'moved'));
      for (let d = 0; d < FILES / 100; d++)
        await rename(path.join(local, `client-${d}`), path.join(local, 'moved', `client-${d}`));
      const run = await limitedSync();
      t.equal(run.code, 0, `the sync completes; stderr: ${run.stderr.slice(-2000)}`);
      t.same(treeDiff(await tree(local), await tree(rig.share)), [], 'both folders identical');
      t.notMatch(rig.listener.stderr(), /EMFILE|internal error/, 'the listener never ran out of descriptors');
    },
  );

  // More files than descriptors, each just over the in-memory size (bytes cost time, not the test).
  const BIG = LIMIT + 16;
  const BIG_BYTES = (1 << 20) + 4096;
  t.test(`the client sends ${BIG} files over 1 MiB, then copies of them, at ${LIMIT} descriptors`, async (t) => {
    await mkdir(path.join(local, 'big'));
    for (let i = 0; i < BIG; i++) await writeFile(path.join(local, 'big', `p${i}.jpg`), randomBytes(BIG_BYTES));
    const first = await limitedSync();
    t.equal(first.code, 0, `the first sync completes; stderr: ${first.stderr.slice(-2000)}`);
    t.same(treeDiff(await tree(local), await tree(rig.share)), [], 'both folders identical');
    t.notMatch(rig.listener.stderr(), /EMFILE|internal error/, 'the listener never ran out of descriptors');

    await mkdir(path.join(local, 'big-copy'));
    for (let i = 0; i < BIG; i++)
      await copyFile(path.join(local, 'big', `p${i}.jpg`), path.join(local, 'big-copy', `p${i}.jpg`));
    const copies = await limitedSync();
    t.equal(copies.code, 0, `the sync of copies completes; stderr: ${copies.stderr.slice(-2000)}`);
    t.same(treeDiff(await tree(local), await tree(rig.share)), [], 'both folders identical');
    t.notMatch(rig.listener.stderr(), /EMFILE|internal error/, 'the listener never ran out of descriptors');
  });
}
