// Helpers for the state tests (issue 27, items 6 and 7): walking a home for modes others could
// use, and re-exports of the CLI harness.
import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';

// Homes made by the CLI's `init`: the modes it leaves are what these tests look at.
export { initNodeViaCli as initNode, jsonLines, runCli, startListener } from '../e2e/cli-harness.js';

export interface Exposed {
  readonly path: string;
  readonly mode: string;
}

/**
 * Everything under `root` (itself included) whose mode lets group or others read, write or
 * enter it. `skip(rel)` leaves out a subtree (content of a share: modes the user's files came with).
 */
export async function exposedEntries(root: string, skip: (rel: string) => boolean = () => false): Promise<Exposed[]> {
  const out: Exposed[] = [];
  const visit = async (abs: string, rel: string): Promise<void> => {
    const st = await lstat(abs).catch(() => undefined);
    if (st === undefined) return; // removed while we walked (a lock released)
    if (!st.isSymbolicLink() && (st.mode & 0o077) !== 0)
      out.push({ path: rel === '' ? '.' : rel, mode: (st.mode & 0o7777).toString(8) });
    if (!st.isDirectory()) return;
    for (const name of await readdir(abs).catch(() => [] as string[])) {
      const childRel = rel === '' ? name : `${rel}/${name}`;
      if (!skip(childRel)) await visit(path.join(abs, name), childRel);
    }
  };
  await visit(root, '');
  return out;
}
