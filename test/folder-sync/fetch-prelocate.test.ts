// Files looked up ahead of a peer's fetch (fetch-prelocate.ts): only what the scan's manifest
// cache vouches for, for a path the log records with that root, inside the folder; each taken
// once, for its own root; and the lookups end when stopped, between two turns of the event loop.
import t from 'tap';
import type { Test } from 'tap';
import { lstat, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_CHUNKING } from '../../src/chunking/fastcdc.js';
import { manifestFromBytes } from '../../src/chunking/manifest.js';
import { ManifestCache } from '../../src/exchange/manifest-cache.js';
import { manifestFromFile } from '../../src/file-chunking/file-chunker.js';
import { PrelocatedFiles } from '../../src/folder-sync/fetch-prelocate.js';
import { scanFolder } from '../../src/folder-sync/folder-scanner.js';
import { servableFiles } from '../../src/folder-sync/sync-exchange.js';
import { parseIgnoreFile, syncIgnoreFrom } from '../../src/folder-sync/sync-ignore.js';
import { fileKeyOf } from '../../src/store/file-key.js';
import { RevisionStore } from '../../src/store/revision-store.js';

const rootOf = (text: string): Uint8Array => manifestFromBytes(Buffer.from(text), DEFAULT_CHUNKING).root;

/** A scanned folder whose every file (ignored ones too) has its manifest in a cache, as a sync's scan leaves it. */
async function scannedFolder(t: Test, files: Record<string, string>, rules = '') {
  const base = await mkdtemp(join(tmpdir(), 'clawpeer-prelocate-'));
  t.teardown(() => rm(base, { recursive: true, force: true }));
  const folder = join(base, 'folder');
  await mkdir(folder);
  for (const [rel, text] of Object.entries(files)) {
    await mkdir(join(folder, rel, '..'), { recursive: true });
    await writeFile(join(folder, rel), text);
  }
  if (rules !== '') await writeFile(join(folder, '.clawpeerignore'), rules);
  const store = await RevisionStore.open(folder, { nodeId: '12D3KooWPrelocate' });
  t.teardown(() => store.close());
  await scanFolder(store, folder, { chunking: DEFAULT_CHUNKING, ignore: syncIgnoreFrom(parseIgnoreFile(rules)) });
  const cache = new ManifestCache();
  for (const rel of Object.keys(files)) {
    const abs = join(folder, rel);
    cache.add(rel, await manifestFromFile(abs, DEFAULT_CHUNKING), fileKeyOf(await lstat(abs, { bigint: true })));
  }
  return { base, folder, store, scope: { folder, cache, ...servableFiles(folder, store) } };
}

t.test('what the cache vouches for, recorded and inside the folder, taken once for its root', async (t) => {
  const { base, folder, scope } = await scannedFolder(
    t,
    { 'a.txt': 'alpha\n', 'd/b.txt': 'beta\n', 'edited.txt': 'before\n', 'private.key': 'key\n' },
    '*.key\n',
  );
  await writeFile(join(folder, 'edited.txt'), 'after, longer\n'); // saved since the scan
  await mkdir(join(base, 'outside'));
  await writeFile(join(base, 'outside', 'c.txt'), 'gamma\n');
  await symlink(join(base, 'outside'), join(folder, 'out'));
  const wanted = [
    { path: 'a.txt', root: rootOf('alpha\n') },
    { path: 'd/b.txt', root: rootOf('beta\n') },
    { path: 'edited.txt', root: rootOf('before\n') },
    { path: 'private.key', root: rootOf('key\n') },
    { path: 'out/c.txt', root: rootOf('gamma\n') },
  ];
  const pre = PrelocatedFiles.start(wanted, scope);
  await pre.ended();

  t.equal(pre.take('a.txt', rootOf('other\n')), undefined, 'not for another root');
  const a = pre.take('a.txt', rootOf('alpha\n'));
  t.equal(a?.localPath, join(folder, 'a.txt'), 'a recorded, unchanged file is found');
  t.same(a?.manifest.root, rootOf('alpha\n'));
  t.equal(pre.take('a.txt', rootOf('alpha\n')), undefined, 'taken once');
  t.equal(pre.take('d/b.txt', rootOf('beta\n'))?.localPath, join(folder, 'd', 'b.txt'), 'in a subdirectory too');
  t.equal(pre.take('edited.txt', rootOf('before\n')), undefined, 'a file saved since the scan is left to serveFetch');
  t.equal(pre.take('private.key', rootOf('key\n')), undefined, 'an ignored file is not, though cached');
  t.equal(pre.take('out/c.txt', rootOf('gamma\n')), undefined, 'nor one behind a link out of the folder');
});

t.test('stopped, the lookups end at the next turn of the event loop', async (t) => {
  const files: Record<string, string> = {};
  for (let i = 0; i < 600; i++) files[`f${i}.txt`] = `file ${i}\n`;
  const { scope } = await scannedFolder(t, files);
  const wanted = Object.entries(files).map(([path, text]) => ({ path, root: rootOf(text) }));
  const pre = PrelocatedFiles.start(wanted, scope);
  pre.stop();
  await pre.ended();
  const found = wanted.filter((w) => pre.take(w.path, w.root) !== undefined).length;
  t.ok(found > 0 && found < wanted.length, `stopped part way: ${found} of ${wanted.length} found`);

  const all = PrelocatedFiles.start(wanted, scope);
  await all.ended();
  t.equal(wanted.filter((w) => all.take(w.path, w.root) !== undefined).length, wanted.length, 'unstopped: all');
});

t.test('a failed lookup ends the lookups, it does not throw', async (t) => {
  const { scope } = await scannedFolder(t, { 'a.txt': 'alpha\n' });
  const failing = {
    ...scope,
    recorded: () => {
      throw new Error('log closed');
    },
  };
  const pre = PrelocatedFiles.start([{ path: 'a.txt', root: rootOf('alpha\n') }], failing);
  await pre.ended();
  t.equal(pre.take('a.txt', rootOf('alpha\n')), undefined, 'nothing found');
});
