// `clawpeer status` on a receive-only copy names its local changes (Syncthing's "Local
// Additions"): the paths changed or added here that its syncs keep and never send. Before, the
// folder said `in-sync` with the peer whose newer version it left as is, and nothing said why.
//
// C shares `docs` with A and with B, which do not share it with each other; C is receive-only.
// A's file reaches C and never B: it is not a change made on C, though B lacks it. C's edit of
// it, a file and a directory added on C count; a deletion on C does not (it is not kept), nor
// a path whose peer version C took back by deleting its own.
import t from 'tap';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { runCli } from './cli-harness.js';
import { cli, foldersOf, hasText, startFolderNodes, until, type FolderNode, type FolderRecord } from './folder-rig.js';

const nodes = await startFolderNodes(['a', 'b', 'c']);
t.teardown(async () => {
  for (const n of nodes) await n.listener.stop('SIGKILL');
});
const [A, B, C] = nodes as [FolderNode, FolderNode, FolderNode];

const docsOn = async (n: FolderNode): Promise<FolderRecord | undefined> =>
  (await foldersOf(n)).find((f) => f.id === 'docs');
const lastSync = async (peer: FolderNode): Promise<number> =>
  (await docsOn(C))?.peers.find((p) => p.peer === peer.id)?.lastSyncAt ?? 0;
const localOnC = async (): Promise<string[] | undefined> => {
  const d = await docsOn(C);
  return d?.localChanges === undefined ? undefined : [String(d.localChanges), ...(d.localChangePaths ?? [])];
};
const seen = (want: string[]) => async (): Promise<boolean> =>
  JSON.stringify(await localOnC()) === JSON.stringify(want);

t.test("status names a receive-only copy's local changes", async (t) => {
  await writeFile(path.join(A.dir, 'shared.txt'), 'from A\n');
  const add = (n: FolderNode, peers: string, ...more: string[]) =>
    cli(n.home, ['folder', 'add', n.dir, '--id', 'docs', '--with', peers, '--interval', '3600', ...more]);
  await add(A, 'c');
  await add(B, 'c');
  await add(C, 'a,b', '--mode', 'receive-only');
  await until(nodes, 'the file on C', hasText(path.join(C.dir, 'shared.txt'), 'from A\n'), 20_000);
  // C passes A's revision on to B (B lacks it, C sends nothing): C's sync with B after it landed.
  const landed = Date.now();
  await until(nodes, 'C synced with B since', async () => (await lastSync(B)) > landed, 20_000);
  t.same(await localOnC(), ['0'], "A's file, which B lacks, is no local change of C's");
  t.notMatch(await statusText(C), /local changes/, 'the text says nothing of local changes');

  await writeFile(path.join(C.dir, 'shared.txt'), 'edited on C\n');
  await writeFile(path.join(C.dir, 'added.txt'), 'added on C\n');
  await mkdir(path.join(C.dir, 'sub'));
  await writeFile(path.join(C.dir, 'sub', 'x.txt'), 'x\n');
  const four = ['4', 'added.txt', 'shared.txt', 'sub', 'sub/x.txt'];
  await until(nodes, "C's four local changes in its status", seen(four), 20_000);
  t.pass('the edit, the added file and directory, and the file in it');
  t.match(
    await statusText(C),
    'local changes kept: 4 (added.txt, shared.txt, sub, sub/x.txt): receive-only, not sent',
    'the text names them',
  );

  // A changes the path C edited: C leaves it as is, and still counts it.
  await writeFile(path.join(A.dir, 'shared.txt'), 'second, on A\n');
  const leftAsIs = async (): Promise<boolean> =>
    (await cli(C.home, ['folder', 'log', 'docs'])).some((e) => e['peer'] === A.id && Number(e['skipped']) > 0);
  await until(nodes, "C leaving A's change as is", leftAsIs, 20_000);
  t.equal(await hasText(path.join(C.dir, 'shared.txt'), 'edited on C\n')(), true, "C's edit stays");
  t.same(await localOnC(), four, 'still four');

  // Deleting takes the peer's version (shared.txt), or removes what only C had (added.txt): neither counts.
  await rm(path.join(C.dir, 'shared.txt'));
  await rm(path.join(C.dir, 'added.txt'));
  await until(nodes, "A's version on C", hasText(path.join(C.dir, 'shared.txt'), 'second, on A\n'), 20_000);
  await until(nodes, 'two local changes left', seen(['2', 'sub', 'sub/x.txt']), 20_000);
  t.pass('a deletion and a path taken back are no local changes');
});

async function statusText(n: FolderNode): Promise<string> {
  const r = await runCli(['--home', n.home, 'status']);
  if (r.code !== 0) throw new Error(`status failed: ${r.stderr}`);
  return r.stdout;
}
