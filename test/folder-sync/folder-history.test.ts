// `clawpeer gc` on a folder's revision log: it drops the history of a whole folder, so a path
// inside it is refused rather than widened.
import t from 'tap';
import { mkdir, mkdtemp, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_CHUNKING } from '../../src/chunking/fastcdc.js';
import { scanFolder } from '../../src/folder-sync/folder-scanner.js';
import { collectFolderGarbage, folderLog } from '../../src/folder-sync/folder-history.js';
import { resolveHome } from '../../src/home/home.js';
import { RevisionStore } from '../../src/store/revision-store.js';
import { parseVersioning } from '../../src/sync/versioning.js';

t.test('gc of a directory inside a synced folder is refused and drops nothing', async (t) => {
  const folder = await mkdtemp(join(tmpdir(), 'clawpeer-gc-sub-'));
  await mkdir(join(folder, 'sub'));
  const store = await RevisionStore.open(folder, { nodeId: 'gc-sub-node' });
  try {
    for (const [i, s] of [1_600_000_000, 1_600_000_100].entries()) {
      for (const f of ['sub/x.txt', 'y.txt']) {
        await writeFile(join(folder, f), `v${i}\n`);
        await utimes(join(folder, f), s, s);
      }
      await scanFolder(store, folder, { chunking: DEFAULT_CHUNKING });
    }
  } finally {
    await store.close();
  }
  const home = resolveHome(await mkdtemp(join(tmpdir(), 'clawpeer-gc-home-')));
  const signal = new AbortController().signal;
  await t.rejects(
    collectFolderGarbage({ dir: join(folder, 'sub'), policy: parseVersioning('keep-last:1'), home, signal }),
    { code: 'USAGE', message: /is inside the synced folder .*run clawpeer gc / },
  );
  const files = async (): Promise<number> =>
    (await folderLog({ target: folder, home })).filter((r) => r.revision.kind === 'file').length;
  t.equal(await files(), 4, 'every revision still kept');
  const whole = await collectFolderGarbage({ dir: folder, policy: parseVersioning('keep-last:1'), home, signal });
  t.equal(whole.removedRevisions, 2, 'the folder itself is collected');
  t.equal(await files(), 2);
});
