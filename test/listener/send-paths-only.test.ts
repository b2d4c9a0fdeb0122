// `clawpeer send` serves only the paths it names, not their siblings (send-by-code.ts
// sharesOfPaths, Share.only): over the listener's real dispatch, a receiver that asks for more
// than it was offered (a sibling by name, the share's root, a symlink inside a named directory
// leading to a sibling, -L following one, a sync or a watch of the share) is refused, and a
// listing shows the named paths alone. A name sent in NFD (its bytes kept on disk) is listed and
// pulled by its NFC form, the wire's, and never reaches an unsent NFC twin beside it.
import t from 'tap';
import { mkdir, readFile, readdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { silentLogger } from '../../src/logger.js';
import { resolveConfig } from '../../src/home/config.js';
import { sharesOfPaths } from '../../src/listener/send-by-code.js';
import { listRemote } from '../../src/push-pull/list-client.js';
import { pull } from '../../src/push-pull/transfer-client.js';
import { serveSync } from '../../src/folder-sync/sync-service.js';
import type { DataStreamRouter } from '../../src/session/data-stream-router.js';
import type { PeerSession } from '../../src/session/session.js';
import { memoryListener, tempDir } from './memory-listener.js';

const base = { force: false, streams: 2, window: 8, idleTimeoutMs: 5000, log: silentLogger } as const;
const signal = (): AbortSignal => new AbortController().signal;

/** src/a.txt, src/secret.txt (the sibling), src/photos/p.jpg with links to the sibling inside. */
async function tree(): Promise<string> {
  const src = await tempDir('send-only');
  await writeFile(path.join(src, 'a.txt'), 'named');
  await writeFile(path.join(src, 'secret.txt'), 'SIBLING');
  await mkdir(path.join(src, 'photos'));
  await writeFile(path.join(src, 'photos', 'p.jpg'), 'photo');
  await symlink('../secret.txt', path.join(src, 'photos', 'to-secret'));
  await symlink('..', path.join(src, 'photos', 'up'));
  return src;
}

async function listAll(session: PeerSession, share: string, recursive: boolean): Promise<string[]> {
  const names: string[] = [];
  for await (const b of listRemote({ session, share, path: '', recursive, signal: signal() }))
    names.push(...b.shares.map((s) => `share:${s.name}`), ...b.entries.map((e) => e.path));
  return names.sort();
}

t.test('sharesOfPaths: one read-only share per parent, serving only the names given', async (t) => {
  const src = await tree();
  const shares = await sharesOfPaths([path.join(src, 'a.txt'), path.join(src, 'photos')]);
  t.match(shares, [{ name: 'send-1', readOnly: true, only: ['a.txt', 'photos'] }]);
  await t.rejects(sharesOfPaths([path.join(src, 'nope')]), { code: 'PATH_INVALID' });
  const other = await tempDir('send-only-b');
  await writeFile(path.join(other, 'a.txt'), 'x');
  await t.rejects(sharesOfPaths([path.join(src, 'a.txt'), path.join(other, 'a.txt')]), {
    code: 'USAGE',
    message: /both land as a\.txt/,
  });
});

t.test('a listing shows the named paths alone; a sibling is not reachable', async (t) => {
  const src = await tree();
  const shares = await sharesOfPaths([path.join(src, 'a.txt'), path.join(src, 'photos')]);
  const l = await memoryListener(shares);
  t.teardown(() => l.stop());
  t.same(await listAll(l.session, '', false), ['share:send-1']);
  t.same(await listAll(l.session, 'send-1', false), ['a.txt', 'photos'], 'no secret.txt at the root');
  const deep = await listAll(l.session, 'send-1', true);
  t.notOk(
    deep.some((p) => p.startsWith('secret')),
    'a recursive listing does not show the sibling',
  );

  const dest = await tempDir('send-only-dest');
  const pulled = await pull({
    ...base,
    session: l.session,
    share: 'send-1',
    remotePath: 'photos',
    localPath: dest,
    signal: signal(),
  });
  t.ok(pulled.files >= 1, 'a named directory pulls');

  const refused = async (remotePath: string, extra: object = {}): Promise<void> => {
    const session = await l.connect();
    await t.rejects(
      pull({ ...base, ...extra, session, share: 'send-1', remotePath, localPath: dest, signal: signal() }),
      { message: /not one of the paths sent|leads outside/ },
      `pull of ${remotePath || 'the root'} refused`,
    );
  };
  await refused('secret.txt');
  await refused('');
  await refused('photos/to-secret');
  await refused('photos/up/secret.txt');
  // -L: links followed only inside the named path, so the sibling's content never travels (it
  // did while links were followed anywhere in the share's directory: to-secret, up/).
  const dest2 = await tempDir('send-only-dest-l');
  const followed = await pull({
    ...base,
    session: await l.connect(),
    share: 'send-1',
    remotePath: 'photos',
    localPath: dest2,
    copyLinks: 'all',
    signal: signal(),
  });
  t.equal(followed.files, 1);
  t.same(await readdir(path.join(dest2, 'photos')), ['p.jpg'], 'links out of the named path are left out');
});

t.test('a sync of the share is refused: it would reach the rest of the directory', async (t) => {
  const src = await tree();
  const shares = await sharesOfPaths([path.join(src, 'a.txt')]);
  const session = { peerId: 'receiver', caps: { features: ['sync'] } } as unknown as PeerSession;
  await t.rejects(
    serveSync(
      session,
      null as unknown as DataStreamRouter,
      { type: 'sync-request', transferId: 1, share: 'send-1', mode: 'receive-only', reconcile: new Uint8Array(0) },
      { shares, config: resolveConfig({}), log: silentLogger, nodeId: 'sender' },
      signal(),
    ),
    { code: 'SHARE_FORBIDDEN', message: /serves only the paths sent/ },
  );
});

t.test('a name sent in NFD is listed and pulled by its NFC form; its unsent NFC twin stays', async (t) => {
  const nfd = 'cafe\u0301.txt';
  const nfc = 'caf\u00e9.txt';
  const src = await tempDir('send-nfd');
  await writeFile(path.join(src, nfd), 'sent, named in NFD');
  await writeFile(path.join(src, nfc), 'SIBLING, named in NFC');
  const shares = await sharesOfPaths([path.join(src, nfd)]);
  t.match(shares, [{ only: [nfd] }], 'the name kept as it is on disk');
  const l = await memoryListener(shares);
  t.teardown(() => l.stop());
  t.same(await listAll(l.session, 'send-1', false), [nfc], 'listed once, in NFC');
  const dest = await tempDir('send-nfd-dest');
  const pulled = await pull({
    ...base,
    session: l.session,
    share: 'send-1',
    remotePath: nfc,
    localPath: dest,
    signal: signal(),
  });
  t.equal(pulled.files, 1);
  t.equal(await readFile(path.join(dest, nfc), 'utf8'), 'sent, named in NFD', 'the file sent, not its twin');

  // Two names the receiver would land as one are refused up front.
  const other = await tempDir('send-nfd-b');
  await writeFile(path.join(other, nfc), 'x');
  await t.rejects(sharesOfPaths([path.join(src, nfd), path.join(other, nfc)]), {
    code: 'USAGE',
    message: /would both land as/,
  });
});
