// A second `clawpeer sync` of a folder started while a first one runs (a `sync` beside a
// `sync --watch`, as a user does). The second waits for the folder's lock, or gives up on it
// with FOLDER_BUSY; the first must not notice. Before, the second asked the peer for its sync
// before it had the lock, the listener took that for a rerun of a vanished client and dropped
// the first one: it ended with "stream reset by peer", or hung holding the lock.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { jsonLines, runCli } from './cli-harness.js';
import { startSyncPair } from '../support/sync-pair-rig.js';

const rig = await startSyncPair(['sa', 'sb'], ['beside'], 'sync-beside');
t.teardown(() => rig.listener.stop('SIGKILL'));
const { a, b, client, server } = rig;

t.test('a second sync of the folder leaves the running one alone', async (t) => {
  const content = randomBytes(4 * 1024 * 1024);
  await mkdir(client('beside'), { recursive: true });
  await writeFile(client('beside', 'big.bin'), content);
  const syncArgs = ['--home', b.home, 'sync', client('beside'), 'alice:beside', '--json'];
  // About 4 s at 1 MiB/s: long enough for the second to start while it runs.
  const first = runCli([...syncArgs, '--bwlimit', '1MiB'], { timeoutMs: 60_000 });
  const running = async (): Promise<boolean> => {
    const r = await runCli(['--home', a.home, 'status', '--json']);
    const status = jsonLines(r.stdout)[0] as { activity?: { kind: string }[] } | undefined;
    return status?.activity?.some((x) => x.kind === 'sync') === true;
  };
  for (let i = 0; i < 100 && !(await running()); i++) await new Promise((resolve) => setTimeout(resolve, 100));
  const second = await runCli(syncArgs, { timeoutMs: 60_000 });
  const firstDone = await first;
  t.equal(firstDone.code, 0, `the first sync ends well: ${firstDone.stderr}`);
  t.match(jsonLines(firstDone.stdout).at(-1), { event: 'done', inSync: true });
  t.ok(
    second.code === 0 || /is being synced by pid \d+/.test(second.stderr),
    `the second waited for the lock, or said the folder is busy: exit ${String(second.code)} ${second.stderr}`,
  );
  t.ok((await readFile(server('beside', 'big.bin'))).equals(content), 'the file landed whole');
});
