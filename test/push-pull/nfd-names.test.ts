// Names not in NFC on disk (Linux keeps a name's bytes as they are; macOS hands out NFD names, and
// files copied from a Mac keep them): paths travel in NFC, and each side finds the file by its
// name on disk. Before, a push or pull of a tree with such names left them out as "vanished
// while it was scanned" and said it had sent 0 files, and a pull of one by name did not find it.
import t from 'tap';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { silentLogger } from '../../src/logger.js';
import { pull, push } from '../../src/push-pull/transfer-client.js';
import { memoryListener, shareIn, tempDir } from '../listener/memory-listener.js';

const base = { force: false, streams: 2, window: 8, idleTimeoutMs: 5000, log: silentLogger } as const;
const signal = (): AbortSignal => new AbortController().signal;
const NFD_DIR = 'cafe\u0301'; // café, as a Mac names it
const NFD_FILE = 'e\u0301te\u0301.txt'; // été
const NFC_DIR = NFD_DIR.normalize('NFC');
const NFC_FILE = NFD_FILE.normalize('NFC');

/** DIR/café/été.txt and DIR/café/plain.txt, the names in NFD on disk. */
async function nfdTree(prefix: string): Promise<string> {
  const dir = await tempDir(prefix);
  await mkdir(path.join(dir, NFD_DIR));
  await writeFile(path.join(dir, NFD_DIR, NFD_FILE), 'summer');
  await writeFile(path.join(dir, NFD_DIR, 'plain.txt'), 'plain');
  return dir;
}

t.test('a push of a tree with NFD names sends every file; they land under NFC names', async (t) => {
  const inbox = await shareIn('inbox');
  const l = await memoryListener([inbox]);
  t.teardown(() => l.stop());
  const src = await nfdTree('nfd-push');
  const pushed = await push({
    ...base,
    session: l.session,
    share: 'inbox',
    remotePath: '',
    localPath: path.join(src, NFD_DIR),
    signal: signal(),
    removeSourceFiles: true,
  });
  t.equal(pushed.files, 2, 'both files sent');
  t.equal(await readFile(path.join(inbox.dir, NFC_DIR, NFC_FILE), 'utf8'), 'summer');
  t.same(await readdir(path.join(src, NFD_DIR)), [], '--remove-source-files found them by their names on disk');
});

t.test('a pull from a share whose names are NFD on disk: the tree, and one file by its NFC name', async (t) => {
  const share = await shareIn('photos');
  const tree = await nfdTree('nfd-share');
  await mkdir(path.join(share.dir, 'x'));
  for (const name of [NFD_FILE, 'plain.txt'])
    await writeFile(path.join(share.dir, 'x', name), await readFile(path.join(tree, NFD_DIR, name)));
  const l = await memoryListener([share]);
  t.teardown(() => l.stop());
  const dest = await tempDir('nfd-dest');
  const pulled = await pull({
    ...base,
    session: l.session,
    share: 'photos',
    remotePath: 'x',
    localPath: dest,
    signal: signal(),
  });
  t.equal(pulled.files, 2, 'both files pulled');
  t.equal(await readFile(path.join(dest, 'x', NFC_FILE), 'utf8'), 'summer');

  const one = await tempDir('nfd-one');
  const single = await pull({
    ...base,
    session: l.session,
    share: 'photos',
    remotePath: `x/${NFC_FILE}`,
    localPath: one,
    signal: signal(),
  });
  t.equal(single.files, 1, 'asked for in NFC, found under its NFD name');
  t.same(await readdir(one), [NFC_FILE]);
});
