// A sync into a nearly full disk lands what fits (CI): before, one file too big for the disk
// refused the whole sync up front, so a 12 MiB file that did not fit kept every small file
// beside it from syncing, at every retry. Now each side takes, in the fetch's order, the files
// that fit (keeping 1% of the disk free), leaves the others for the next sync, names them with
// the bytes needed against what is free, and does not read in sync; once space is freed the next
// sync brings the rest and both folders end identical. Both directions: the listener applying
// the client's files (its share on a small tmpfs), and the client applying the listener's.
// Needs root to mount: skipped with the reason otherwise.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, statfs, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  mountTmpfs,
  remountTmpfs,
  snapshot,
  startRig,
  treeDiff,
  unmount,
  withoutInternals,
  type TreeItem,
} from './fault-harness.js';

const work = await mkdtemp(path.join(tmpdir(), 'clawpeer-fault-sync-space-'));
// Each folder one level below its tmpfs: a filler beside it takes space without being synced.
const shareFs = path.join(work, 'share-fs');
const localFs = path.join(work, 'local-fs');
await mkdir(shareFs);
await mkdir(localFs);
const refused = mountTmpfs(shareFs, '8m');
if (refused !== undefined) {
  t.plan(0, `cannot mount a tmpfs here (needs root / CAP_SYS_ADMIN): ${refused}`);
} else {
  t.teardown(() => unmount(shareFs));
  const refusedLocal = mountTmpfs(localFs, '40m');
  if (refusedLocal !== undefined) throw new Error(`second tmpfs: ${refusedLocal}`);
  t.teardown(() => unmount(localFs));
  const share = path.join(shareFs, 'share');
  const local = path.join(localFs, 'folder');
  await mkdir(share);
  await mkdir(local);
  const rig = await startRig('sync-space', { share });
  t.teardown(() => rig.close());

  interface Synced {
    readonly code: number | null;
    readonly stderr: string;
    readonly lines: Record<string, unknown>[];
    readonly done: Record<string, unknown> | undefined;
  }
  const sync = async (): Promise<Synced> => {
    const r = await rig.cli(['sync', local, 'alice:inbox', '--json'], { timeoutMs: 60_000 }).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}\nlistener: ${rig.listener.stderr().slice(-6000)}`);
    });
    const lines = r.stdout
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    return { code: r.code, stderr: r.stderr, lines, done: lines.find((l) => l['event'] === 'done') };
  };
  // A sync does not carry directory mtimes (test/e2e/sync.test.ts compares them as 0 too).
  const tree = async (dir: string): Promise<TreeItem[]> =>
    withoutInternals(await snapshot(dir)).map((i) => (i.kind === 'dir' ? { ...i, mtimeS: 0 } : i));
  const smallFiles = async (dir: string, sub: string, n: number): Promise<string[]> => {
    await mkdir(path.join(dir, sub), { recursive: true });
    const names: string[] = [];
    for (let i = 0; i < n; i++) {
      await writeFile(path.join(dir, sub, `f${i}.txt`), `${sub} ${i}\n`.repeat(200));
      names.push(`${sub}/f${i}.txt`);
    }
    return names;
  };

  t.test("the listener's disk: the small files land, the big one waits for space", async (t) => {
    // Named first: the files after it in the fetch still land.
    await writeFile(path.join(local, 'a-big.bin'), randomBytes(12 << 20));
    const small = await smallFiles(local, 'docs', 50);
    const short = await sync();
    t.equal(short.code, 0, `exit 0, as a sync that leaves paths as is; stderr: ${short.stderr}`);
    t.match(short.done, { inSync: false }, 'not in sync while a file waits for space');
    t.same(
      short.lines.filter((l) => l['event'] === 'peer-skipped').map((l) => l['path']),
      ['a-big.bin'],
      'the client names the file the listener left',
    );
    t.match(
      short.lines.find((l) => l['event'] === 'peer-no-space'),
      { files: 1, needBytes: 12 << 20, paths: ['a-big.bin'] },
      'the client says why the listener left it, with the numbers',
    );
    t.match(
      rig.listener.stderr(),
      /not enough disk space in share inbox for 1 file \(12\.0 MiB needed, [\d.]+ \w+ free, of which [\d.]+ \w+ stay free\): a-big\.bin/,
      'the listener says why, with the numbers',
    );
    const landed = (await tree(share)).filter((i) => i.kind === 'file').map((i) => i.path);
    t.same(landed.sort(), [...small].sort(), 'every small file landed, the big one did not');
    t.notOk(existsSync(path.join(share, 'a-big.bin')), 'no partial file at the final path');

    const again = await sync();
    t.equal(again.code, 0, `a retry with no more space: the same; stderr: ${again.stderr}`);
    t.match(again.done, { inSync: false }, 'still not in sync');

    remountTmpfs(shareFs, '40m');
    const rerun = await sync();
    t.equal(rerun.code, 0, `stderr: ${rerun.stderr}`);
    t.match(rerun.done, { inSync: true }, 'space freed: the next sync brings the big file');
    t.same(treeDiff(await tree(local), await tree(share)), [], 'both folders identical');
  });

  t.test("the client's disk: the listener's small files land, its big one waits for space", async (t) => {
    await writeFile(path.join(share, 'c-big.bin'), randomBytes(12 << 20));
    const small = await smallFiles(share, 'more', 10);
    // Leave the client's disk 4 MiB short of the big file (and its 1% margin).
    const st = await statfs(localFs);
    const filler = path.join(localFs, 'filler.bin');
    await writeFile(filler, Buffer.alloc(st.bavail * st.bsize - (8 << 20), 1));
    const short = await sync();
    t.equal(short.code, 0, `stderr: ${short.stderr}`);
    t.match(short.done, { inSync: false }, 'not in sync while a file waits for space');
    t.same(
      short.lines.filter((l) => l['event'] === 'skipped').map((l) => l['path']),
      ['c-big.bin'],
      'names the file left as is',
    );
    const noSpace = short.lines.find((l) => l['event'] === 'no-space');
    t.match(noSpace, { files: 1, needBytes: 12 << 20, paths: ['c-big.bin'] }, 'says why, with the numbers');
    t.ok(typeof noSpace?.['freeBytes'] === 'number' && noSpace['freeBytes'] < 12 << 20, 'with what was free');
    for (const p of small) t.ok(existsSync(path.join(local, p)), `${p} landed`);
    t.notOk(existsSync(path.join(local, 'c-big.bin')), 'no partial file at the final path');

    await rm(filler);
    const rerun = await sync();
    t.equal(rerun.code, 0, `stderr: ${rerun.stderr}`);
    t.match(rerun.done, { inSync: true }, 'space freed: the next sync brings the big file');
    t.same(treeDiff(await tree(local), await tree(share)), [], 'both folders identical');
  });
}
