// Builds and compares directory trees for the transfer tests.
import { createHash, randomBytes } from 'node:crypto';
import { lstat, mkdir, readdir, readFile, readlink, symlink, utimes, writeFile, chmod } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import path from 'node:path';

export interface TreeItem {
  readonly path: string;
  readonly kind: 'file' | 'dir' | 'symlink';
  readonly mode: number;
  readonly size: number;
  readonly mtimeS: number;
  readonly digest: string;
}

/** One entry of a tree walk: its path relative to the root ('/'-separated), absolute path and lstat. */
export interface WalkedEntry {
  readonly rel: string;
  readonly abs: string;
  readonly st: Stats;
}

/** Every entry under `root` except clawpeer's own `.clawpeer` dir, depth first in path order. */
export async function walkTree(root: string): Promise<WalkedEntry[]> {
  const out: WalkedEntry[] = [];
  const walk = async (dir: string, rel: string): Promise<void> => {
    for (const name of (await readdir(dir)).sort()) {
      if (rel === '' && name === '.clawpeer') continue;
      const abs = path.join(dir, name);
      const r = rel === '' ? name : `${rel}/${name}`;
      const st = await lstat(abs);
      out.push({ rel: r, abs, st });
      if (st.isDirectory()) await walk(abs, r);
    }
  };
  await walk(root, '');
  return out;
}

/** Every entry under `root` except clawpeer's own `.clawpeer` dir, sorted by path. */
export async function snapshot(root: string): Promise<TreeItem[]> {
  const out: TreeItem[] = [];
  for (const { rel: r, abs, st } of await walkTree(root)) {
    const mtimeS = Math.floor(st.mtimeMs / 1000);
    if (st.isSymbolicLink())
      out.push({ path: r, kind: 'symlink', mode: 0, size: 0, mtimeS: 0, digest: await readlink(abs) });
    else if (st.isDirectory()) out.push({ path: r, kind: 'dir', mode: st.mode & 0o777, size: 0, mtimeS, digest: '' });
    else
      out.push({
        path: r,
        kind: 'file',
        mode: st.mode & 0o777,
        size: st.size,
        mtimeS,
        digest: createHash('sha256')
          .update(await readFile(abs))
          .digest('hex'),
      });
  }
  return out;
}

/** A tree with the awkward cases: empty file, empty dir, nesting, modes, old mtimes, a symlink, a big random file. */
export async function makeTree(root: string, bigBytes = 3 << 20): Promise<void> {
  await mkdir(path.join(root, 'docs', 'deep', 'deeper'), { recursive: true });
  await mkdir(path.join(root, 'empty-dir'), { recursive: true });
  await writeFile(path.join(root, 'hello.txt'), 'hello\n');
  await writeFile(path.join(root, 'empty.txt'), '');
  await writeFile(path.join(root, 'docs', 'deep', 'deeper', 'note.md'), '# note\n'.repeat(100));
  await writeFile(path.join(root, 'docs', 'big.bin'), randomBytes(bigBytes));
  await writeFile(path.join(root, 'run.sh'), '#!/bin/sh\necho hi\n');
  await chmod(path.join(root, 'run.sh'), 0o755);
  await writeFile(path.join(root, 'secret.txt'), 'x');
  await chmod(path.join(root, 'secret.txt'), 0o600);
  await symlink('hello.txt', path.join(root, 'link-to-hello'));
  const old = new Date('2020-01-02T03:04:05Z');
  await utimes(path.join(root, 'hello.txt'), old, old);
  await utimes(path.join(root, 'docs', 'deep'), old, old);
}
