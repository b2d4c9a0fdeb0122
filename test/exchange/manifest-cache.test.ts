// ManifestCache: a manifest computed by the scan is reused only while the file is unchanged.
import t from 'tap';
import type { Test } from 'tap';
import { lstat, mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DEFAULT_CHUNKING } from '../../src/chunking/fastcdc.js';
import { manifestFromFile } from '../../src/file-chunking/file-chunker.js';
import type { FileManifest } from '../../src/chunking/manifest.js';
import { fileKeyOf, type FileKey } from '../../src/store/file-key.js';
import { ManifestCache, MAX_CACHED_CHUNKS } from '../../src/exchange/manifest-cache.js';

/** A file written in a fresh directory, with its manifest and the stat it was hashed with. */
async function hashedFile(
  t: Test,
  name: string,
  content: string,
): Promise<{ dir: string; file: string; manifest: FileManifest; stat: FileKey }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'clawpeer-mcache-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = path.join(dir, name);
  await writeFile(file, content);
  return {
    dir,
    file,
    manifest: await manifestFromFile(file, DEFAULT_CHUNKING),
    stat: fileKeyOf(await lstat(file, { bigint: true })),
  };
}

t.test('hit while unchanged; a rewrite, a touch or a deletion is a miss', async (t) => {
  const { dir, file, manifest, stat } = await hashedFile(t, 'a.bin', 'first version');
  const cache = new ManifestCache();
  cache.add('a.bin', manifest, stat);
  t.equal(cache.get('a.bin', file), manifest, 'unchanged: the cached manifest');
  t.equal(cache.get('b.bin', path.join(dir, 'b.bin')), undefined, 'never cached: a miss');
  await utimes(file, new Date(), new Date(Date.now() + 5000));
  t.equal(cache.get('a.bin', file), undefined, 'a new mtime: a miss');
  await rm(file);
  t.equal(cache.get('a.bin', file), undefined, 'gone: a miss');
});

t.test('bounded by the chunks it holds', async (t) => {
  const { file, manifest: small, stat } = await hashedFile(t, 'one-more', 'x');
  const control = new ManifestCache();
  control.add('one-more', small, stat);
  t.equal(control.get('one-more', file), small, 'with room, it is cached');
  const full = new ManifestCache();
  full.add(
    'big',
    {
      size: 1,
      root: new Uint8Array(32),
      chunks: new Array(MAX_CACHED_CHUNKS).fill({ offset: 0, length: 1, id: new Uint8Array(32) }),
    },
    stat,
  );
  full.add('one-more', small, stat);
  t.equal(full.get('one-more', file), undefined, 'not cached once the budget is spent');
});
