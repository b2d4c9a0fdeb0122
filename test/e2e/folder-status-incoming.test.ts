// `clawpeer status` on the node a change is arriving at. A's listener syncs its new file to B
// (A runs the sync, B serves it). B's status said `in-sync` with A all along, the file still
// arriving, since B's own schedule had nothing running: a user who saw it on B could take the
// folder for complete. Now a pair is `syncing` while a sync of the folder with that peer runs
// here either way, with what is left of it, and `in-sync` once it is over.
//
// A sends at most 1 MiB/s (listen --bwlimit), so the 6 MiB file takes some seconds to arrive.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { addFolderEverywhere, allInSync, foldersOf, startFolderNodes, until, type FolderNode } from './folder-rig.js';

const nodes = await startFolderNodes(['a', 'b'], { a: ['--bwlimit', '1MiB'] });
t.teardown(async () => {
  for (const n of nodes) await n.listener.stop('SIGKILL');
});
const [A, B] = nodes as [FolderNode, FolderNode];

t.test('the receiving node says syncing while a peer sends it a change', async (t) => {
  await addFolderEverywhere(nodes, 'docs');
  await until(nodes, 'docs in sync', () => allInSync(nodes, 'docs'), 20_000);
  const bytes = randomBytes(6 << 20);
  await writeFile(path.join(A.dir, 'big.bin'), bytes);
  const pairOnB = async () =>
    (await foldersOf(B)).find((f) => f.id === 'docs')?.peers.find((p) => p.peer === A.id) as
      { state: string; bytesLeft?: number } | undefined;
  let seen: { state: string; bytesLeft?: number } | undefined;
  await until(
    nodes,
    "B's status saying it syncs with A, the file not there yet",
    async () => {
      const p = await pairOnB();
      // Seen before the file is complete there: a sync of B's own after it landed does not count.
      const landed = (await readFile(path.join(B.dir, 'big.bin')).catch(() => undefined))?.equals(bytes) === true;
      if (p?.state === 'syncing' && !landed) seen = p;
      return seen !== undefined;
    },
    20_000,
  );
  t.pass(`B said syncing with A while the file arrived (${seen?.bytesLeft ?? 'unknown'} bytes left)`);
  await until(
    nodes,
    'the file on B, and B in sync',
    async () =>
      (await readFile(path.join(B.dir, 'big.bin')).catch(() => undefined))?.equals(bytes) === true &&
      (await pairOnB())?.state === 'in-sync',
    30_000,
  );
  t.pass('in-sync once it landed');
});
