// `mkdir -p` for paths a user gives (a pull's destination, a share, a synced folder, a home).
// Node 20's recursive mkdir never returns where a directory exists but refuses new entries with
// ENOENT, as /proc and /sys do: it retries the parent and the child forever (mkdirSync too), so
// `clawpeer pull PEER:SHARE/x /proc/y` hung and ignored Ctrl-C. This creates the missing levels
// one by one, top down, and fails with the first level's error.
import { mkdir, stat } from 'node:fs/promises';
import path from 'node:path';

/** Creates `dir` and the levels above it that are missing; EEXIST from a racing creator is fine. */
export async function makeDirs(dir: string, mode?: number): Promise<void> {
  const missing: string[] = [];
  for (let at = path.resolve(dir); ;) {
    const st = await stat(at).catch(() => undefined);
    if (st !== undefined) {
      if (!st.isDirectory())
        throw Object.assign(new Error(`ENOTDIR: not a directory, mkdir '${at}'`), { code: 'ENOTDIR', path: at });
      break;
    }
    missing.push(at);
    const parent = path.dirname(at);
    if (parent === at) break;
    at = parent;
  }
  for (const level of missing.reverse()) {
    try {
      await mkdir(level, mode === undefined ? {} : { mode });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
}
