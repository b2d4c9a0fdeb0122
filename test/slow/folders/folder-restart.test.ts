// A shared folder's listener killed with SIGKILL: its peers say they wait for it, carry on
// among themselves, and it catches up in one go once restarted (its folder service is rebuilt
// from config.json and the folders' logs).
import t from 'tap';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { startListener } from '../../e2e/cli-harness.js';
import { addFolderEverywhere, allInSync, foldersOf, hasText, startFolderNodes, until } from '../../e2e/folder-rig.js';

const nodes = await startFolderNodes(['a', 'b', 'c']);
t.teardown(async () => {
  for (const n of nodes) await n.listener.stop('SIGKILL');
});
const [A, B, C] = nodes as [(typeof nodes)[number], (typeof nodes)[number], (typeof nodes)[number]];
const wait = (what: string, check: () => Promise<boolean>): Promise<number> => until(nodes, what, check, 20_000);

t.test('a listener killed with SIGKILL restarts and catches up; the others wait for it meanwhile', async (t) => {
  await writeFile(path.join(A.dir, 'first.txt'), 'first\n');
  await addFolderEverywhere(nodes, 'docs');
  // Quiet first: a sync running toward B when it dies holds its folder until the transport's idle timeout (15 s).
  await wait('every pair in sync', () => allInSync(nodes, 'docs'));
  const port = B.listener.port;
  await B.listener.stop('SIGKILL');
  await writeFile(path.join(A.dir, 'while-down.txt'), 'B was down\n');
  await wait('the file on C', hasText(path.join(C.dir, 'while-down.txt'), 'B was down\n'));
  await wait(
    'A waiting for B',
    async () => (await foldersOf(A))[0]?.peers.find((p) => p.peer === B.id)?.state === 'waiting',
  );
  B.listener = await startListener(B.home, ['-v'], { port });
  const restarted = Date.now();
  await wait('the file on B after its restart', hasText(path.join(B.dir, 'while-down.txt'), 'B was down\n'));
  t.comment(`restart to catch-up: ${Date.now() - restarted} ms`);
  await wait(
    'A in sync with B again',
    async () => (await foldersOf(A))[0]?.peers.find((p) => p.peer === B.id)?.state === 'in-sync',
  );
  t.pass('caught up');
});
