// What a sync fetch may be served from. The peer names the path and the content root it wants;
// the serving side offers the file only if its log records that path with that root, and never
// through a directory that leads out of the folder. Before, any file at the named path was hashed
// and offered when its bytes matched: a paired peer could learn whether an ignored file, or a
// file out of the folder behind a link, holds bytes it guesses (and make this side hash it).
import t from 'tap';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_CHUNKING } from '../../src/chunking/fastcdc.js';
import { manifestFromBytes } from '../../src/chunking/manifest.js';
import { scanFolder } from '../../src/folder-sync/folder-scanner.js';
import { locate, servableFiles } from '../../src/folder-sync/sync-exchange.js';
import { parseIgnoreFile, syncIgnoreFrom } from '../../src/folder-sync/sync-ignore.js';
import { RevisionStore } from '../../src/store/revision-store.js';

const rootOf = (text: string): Uint8Array => manifestFromBytes(Buffer.from(text), DEFAULT_CHUNKING).root;

t.test('only recorded files inside the folder are served', async (t) => {
  const base = await mkdtemp(join(tmpdir(), 'clawpeer-serve-'));
  t.teardown(() => rm(base, { recursive: true, force: true }));
  const folder = join(base, 'folder');
  const outside = join(base, 'outside');
  await mkdir(folder);
  await mkdir(outside);
  await writeFile(join(outside, 'secret.txt'), 'out of the folder\n');
  await writeFile(join(folder, 'shared.txt'), 'shared\n');
  await writeFile(join(folder, 'ignored.key'), 'private key\n');
  await symlink(outside, join(folder, 'out'));
  const rules = '*.key\n';
  await writeFile(join(folder, '.clawpeerignore'), rules);
  const store = await RevisionStore.open(folder, { nodeId: '12D3KooWServer' });
  t.teardown(() => store.close());
  await scanFolder(store, folder, { chunking: DEFAULT_CHUNKING, ignore: syncIgnoreFrom(parseIgnoreFile(rules)) });
  const may = servableFiles(folder, store);
  const serve = (rel: string, text: string) =>
    locate(folder, rel, rootOf(text), DEFAULT_CHUNKING, () => new Map(), undefined, may);

  t.ok(await serve('shared.txt', 'shared\n'), 'a recorded file is served');
  t.equal(await serve('shared.txt', 'other bytes\n'), undefined, 'not for another root');
  t.equal(await serve('ignored.key', 'private key\n'), undefined, 'an ignored file is not, even for its right root');
  t.equal(
    await serve('out/secret.txt', 'out of the folder\n'),
    undefined,
    'nor a file behind a link that leads out of the folder',
  );
});
