// What both dead-peer tests do first: a listener's own sync of `dir` with a peer (handed to it by
// `clawpeer sync`), waited for until its fetch is receiving (a partial exists), so that the peer
// can be killed mid-sync.
import { spawn } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import type { Test } from 'tap';
import { CLI } from '../e2e/cli-harness.js';

/** The listener idle timeout both tests run with: long, so only the silent-sync rule frees the folder. */
export const IDLE = { CLAWPEER_TEST_IDLE_TIMEOUT_MS: '60000' };

/** Starts `clawpeer --home HOME sync DIR PEER:docs` and resolves once its fetch is receiving. */
export async function syncReceiving(t: Test, home: string, dir: string, peer: string): Promise<void> {
  const child = spawn(process.execPath, [CLI, '--home', home, 'sync', dir, `${peer}:docs`, '--transport', 'quic'], {
    env: { ...process.env, ...IDLE },
    stdio: 'ignore',
  });
  t.teardown(() => child.kill('SIGKILL'));
  const partials = path.join(dir, '.clawpeer', 'partial');
  const fetching = async (): Promise<boolean> =>
    (await readdir(partials).catch(() => [] as string[])).some((n) => n.endsWith('.data'));
  for (let waited = 0; !(await fetching()) && waited < 20_000; waited += 50)
    await new Promise((r) => setTimeout(r, 50));
  t.ok(await fetching(), `the sync with ${peer} is receiving`);
}
