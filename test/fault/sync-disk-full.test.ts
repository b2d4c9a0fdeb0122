// Disk full during a sync (CI): each side's folder on a small tmpfs, filled up after a change was
// made there, so the scan before the sync cannot commit its revisions to the folder's revision
// log (LMDB). The sync fails with exit 1 saying the revision log could not be written because the
// disk is full, on the listener's side as on the client's; the listener keeps serving and does
// not take it for a bug of its own; once the space is freed a sync completes and both folders end
// identical. Needs root to mount: skipped with the reason otherwise.
import t from 'tap';
import { closeSync, openSync, writeSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { mountTmpfs, snapshot, startRig, treeDiff, unmount, withoutInternals, type TreeItem } from './fault-harness.js';

const work = await mkdtemp(path.join(tmpdir(), 'clawpeer-fault-sync-disk-'));
const share = path.join(work, 'share');
const local = path.join(work, 'local');
await mkdir(share);
await mkdir(local);
const refused = mountTmpfs(share, '8m');
if (refused !== undefined) {
  t.plan(0, `cannot mount a tmpfs here (needs root / CAP_SYS_ADMIN): ${refused}`);
} else {
  t.teardown(() => unmount(share));
  const refusedLocal = mountTmpfs(local, '8m');
  if (refusedLocal !== undefined) throw new Error(`second tmpfs: ${refusedLocal}`);
  t.teardown(() => unmount(local));
  const rig = await startRig('sync-disk', { share });
  t.teardown(() => rig.close());
  // A sync that hangs names what the listener was doing (CI saw one rerun hang once, silent).
  const sync = (): ReturnType<typeof rig.cli> =>
    rig.cli(['sync', local, '-v', 'alice:inbox'], { timeoutMs: 60_000 }).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}\nlistener: ${rig.listener.stderr().slice(-6000)}`);
    });

  /** Many new files in `dir` (a commit of many pages), then a filler taking every free block. */
  const changeThenFill = async (dir: string, name: string): Promise<string> => {
    await mkdir(path.join(dir, name));
    for (let i = 0; i < 200; i++) await writeFile(path.join(dir, name, `f${i}.txt`), `${name} ${i}\n`.repeat(20));
    // Room for the sync's lock file (one block), not for the log's pages: freed after filling.
    const spare = path.join(dir, 'spare.bin');
    await writeFile(spare, Buffer.alloc(8 << 10, 1));
    const filler = path.join(dir, 'filler.bin');
    const fd = openSync(filler, 'w');
    try {
      const block = Buffer.alloc(16 << 10, 1);
      for (;;) writeSync(fd, block);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
    } finally {
      closeSync(fd);
    }
    await rm(spare);
    return filler;
  };

  await writeFile(path.join(local, 'hello.txt'), 'hello\n');
  const first = await sync();
  t.equal(first.code, 0, `a first sync; stderr: ${first.stderr}`);

  for (const side of ['listener', 'client'] as const) {
    t.test(`the ${side}'s disk is full: a clear error, then a sync completes once there is space`, async (t) => {
      const dir = side === 'listener' ? share : local;
      const filler = await changeThenFill(dir, `new-on-${side}`);
      const full = await sync();
      t.equal(full.code, 1, `exit 1 (I/O failure); stderr: ${full.stderr}`);
      t.match(full.stderr, /cannot write the revision log in \S+: the disk is full/, 'names the log and the cause');
      t.notMatch(rig.listener.stderr(), /internal error/, 'the listener does not take it for a bug of its own');

      await rm(filler);
      const rerun = await sync();
      t.equal(rerun.code, 0, `a sync completes once there is space; stderr: ${rerun.stderr}`);
      // A sync does not carry directory mtimes (test/e2e/sync.test.ts compares them as 0 too).
      const tree = async (dir: string): Promise<TreeItem[]> =>
        withoutInternals(await snapshot(dir)).map((i) => (i.kind === 'dir' ? { ...i, mtimeS: 0 } : i));
      t.same(treeDiff(await tree(local), await tree(share)), [], 'both folders identical');
    });
  }
}
