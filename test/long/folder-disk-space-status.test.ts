// A shared folder whose disk is too small for one of its peer's files: the listener syncs every
// file that fits, and `status` shows the pair out of sync with why (the file, the bytes needed
// against the bytes free), as Syncthing's "insufficient space"; once the disk has room, the
// retries bring the file and the pair is in sync. Before, the one big file refused every sync
// of the folder, and the small files beside it never arrived.
// A's folder is a small tmpfs: needs root (mount); skipped otherwise.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  addFolderEverywhere,
  allInSync,
  foldersOf,
  startFolderNodes,
  until,
  type FolderNode,
} from '../e2e/folder-rig.js';

function mount(args: string[]): string | undefined {
  try {
    execFileSync('mount', args, { stdio: 'pipe' });
    return undefined;
  } catch (err) {
    return ((err as { stderr?: Buffer }).stderr?.toString() ?? (err as Error).message).trim();
  }
}

const nodes = await startFolderNodes(['a', 'b']);
const [A, B] = nodes as [FolderNode, FolderNode];
const refused = mount(['-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', A.dir]);
t.teardown(async () => {
  for (const n of nodes) await n.listener.stop('SIGKILL');
  if (refused === undefined) execFileSync('umount', ['-l', A.dir], { stdio: 'pipe' });
});

if (refused !== undefined) {
  t.plan(0, `cannot mount a tmpfs here (needs root / CAP_SYS_ADMIN): ${refused}`);
} else {
  t.test("a file too big for this node's disk: the rest syncs, status says why, space brings it", async (t) => {
    await mkdir(path.join(B.dir, 'docs'));
    await writeFile(path.join(B.dir, 'a-big.bin'), randomBytes(12 << 20));
    for (let i = 0; i < 20; i++) await writeFile(path.join(B.dir, 'docs', `f${i}.txt`), `doc ${i}\n`);
    await addFolderEverywhere(nodes, 'docs');

    const pairOnA = async (): Promise<{ state: string; error?: string } | undefined> =>
      (await foldersOf(A)).find((f) => f.id === 'docs')?.peers.find((p) => p.peer === B.id);
    let seen: { state: string; error?: string } | undefined;
    await until(
      nodes,
      "the small files on A, and A's status saying why the big one is not",
      async () => {
        if (!existsSync(path.join(A.dir, 'docs', 'f19.txt'))) return false;
        const p = await pairOnA();
        if (p?.state === 'error' && /not enough disk space/.test(p.error ?? '')) seen = p;
        return seen !== undefined;
      },
      30_000,
    );
    t.match(
      seen?.error,
      /not enough disk space here for 1 file \(12\.0 MiB needed, [\d.]+ \w+ free, of which [\d.]+ \w+ stay free\): a-big\.bin/,
      `A names the file and the numbers: ${seen?.error ?? ''}`,
    );
    for (let i = 0; i < 20; i++) t.ok(existsSync(path.join(A.dir, 'docs', `f${i}.txt`)), `docs/f${i}.txt landed`);
    t.notOk(existsSync(path.join(A.dir, 'a-big.bin')), 'nothing at the big file’s path');

    execFileSync('mount', ['-o', 'remount,size=40m', A.dir], { stdio: 'pipe' });
    await until(
      nodes,
      'a-big.bin on A once there is room, docs in sync (the retries)',
      async () =>
        (await stat(path.join(A.dir, 'a-big.bin')).catch(() => undefined))?.size === 12 << 20 &&
        (await allInSync(nodes, 'docs')),
      90_000,
    );
    t.pass('in sync once the disk has room');
  });
}
