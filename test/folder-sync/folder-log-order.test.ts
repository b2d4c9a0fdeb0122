// `clawpeer log` lists newest first by time, but a file's mtime can go back: a restore fetched
// from the peer lands with the old revision's mtime, and so does `cp -p` or `touch -d`. The
// current revision must still come first, above the revisions it replaced.
import t from 'tap';
import { mkdtemp, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_CHUNKING } from '../../src/chunking/fastcdc.js';
import { scanFolder } from '../../src/folder-sync/folder-scanner.js';
import { folderLog } from '../../src/folder-sync/folder-history.js';
import { resolveHome } from '../../src/home/home.js';
import { RevisionStore } from '../../src/store/revision-store.js';

t.test('a revision whose mtime went back is still listed above the ones before it', async (t) => {
  const folder = await mkdtemp(join(tmpdir(), 'clawpeer-log-order-'));
  const file = join(folder, 'doc.txt');
  const store = await RevisionStore.open(folder, { nodeId: 'log-order-node' });
  const v = async (text: string, seconds: number): Promise<void> => {
    await writeFile(file, text);
    await utimes(file, seconds, seconds);
    await scanFolder(store, folder, { chunking: DEFAULT_CHUNKING });
  };
  try {
    await v('v1\n', 1_600_000_000);
    await v('v2\n', 1_600_000_100);
    await v('v1 again\n', 1_600_000_000); // back to the first version's time
    // another path edited in between, to keep the order across paths by time
    await writeFile(join(folder, 'other.txt'), 'o\n');
    await utimes(join(folder, 'other.txt'), 1_600_000_050, 1_600_000_050);
    await scanFolder(store, folder, { chunking: DEFAULT_CHUNKING });
  } finally {
    await store.close();
  }
  const home = resolveHome(await mkdtemp(join(tmpdir(), 'clawpeer-log-home-')));
  const rows = await folderLog({ target: folder, home });
  t.same(
    rows.map((r) => [r.revision.path, r.what, r.isHead]),
    [
      ['doc.txt', 'changed', true],
      ['doc.txt', 'changed', false],
      ['other.txt', 'created', true],
      ['doc.txt', 'created', false],
    ],
  );
});
