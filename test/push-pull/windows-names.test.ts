// Names only Windows reserves (`aux.c`, `con.h`, `nul`, a trailing dot or space) travel between
// two machines that are not Windows, as rsync, scp and croc send them: a push, a pull and `ls`
// take them. Before, the sender left each out ("segment "aux.c" is a Windows device name") and
// exited 23. A Windows receiver (its publisher on Windows' rules) refuses such a path alone,
// with the reason EWINDOWSNAME, and the rest lands.
import t, { type Test } from 'tap';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { DEFAULT_CHUNKING } from '../../src/chunking/fastcdc.js';
import { TransferReceiver } from '../../src/exchange/transfer-receive.js';
import { scanSource } from '../../src/exchange/transfer-source.js';
import type { ManifestEntry } from '../../src/protocol/message-types.js';
import { silentLogger } from '../../src/logger.js';
import { listRemote } from '../../src/push-pull/list-client.js';
import { offeredNameProblem } from '../../src/push-pull/offered-paths.js';
import { RefusedPaths } from '../../src/push-pull/refused-paths.js';
import { pull, push } from '../../src/push-pull/transfer-client.js';
import { refusedProblem } from '../../src/protocol/transfer-done-lists.js';
import { Publisher } from '../../src/store/publisher.js';
import { WINDOWS_NAME_REFUSAL } from '../../src/transfer/paths.js';
import { memoryListener, shareIn, tempDir } from '../listener/memory-listener.js';

const base = { force: false, streams: 2, window: 8, idleTimeoutMs: 5000, log: silentLogger } as const;
const signal = (): AbortSignal => new AbortController().signal;
/** Relative path -> content: every name Windows alone refuses, in a directory `nul` too. */
const FILES: Record<string, string> = {
  'aux.c': 'int main;',
  'con.h': '#pragma once',
  'prn.txt': 'printer',
  'trail.': 'dot',
  'space ': 'space',
  'nul/com1.log': 'in a device-named directory',
  'plain.txt': 'plain',
};

async function tree(dir: string): Promise<void> {
  await mkdir(path.join(dir, 'nul'), { recursive: true });
  for (const [rel, content] of Object.entries(FILES)) await writeFile(path.join(dir, ...rel.split('/')), content);
}

async function landed(t: Test, dir: string): Promise<void> {
  for (const [rel, content] of Object.entries(FILES))
    t.equal(await readFile(path.join(dir, ...rel.split('/')), 'utf8'), content, `${rel} landed`);
}

t.test('a push of a tree with Windows-reserved names lands every file on a Linux listener', async (t) => {
  const inbox = await shareIn('inbox');
  const l = await memoryListener([inbox]);
  t.teardown(() => l.stop());
  const src = await tempDir('winnames-push');
  await tree(path.join(src, 'w'));
  const dry = await push({
    ...base,
    session: l.session,
    share: 'inbox',
    remotePath: '',
    localPath: path.join(src, 'w'),
    signal: signal(),
    dryRun: true,
  });
  t.equal(dry.dryRun?.files.length, Object.keys(FILES).length, 'a dry run names every file');
  const pushed = await push({
    ...base,
    session: l.session,
    share: 'inbox',
    remotePath: '',
    localPath: path.join(src, 'w'),
    signal: signal(),
  });
  t.equal(pushed.files, Object.keys(FILES).length, 'every file sent');
  t.equal(pushed.unreadableCount, undefined, 'none left out as unreadable');
  t.equal(pushed.refusedCount, undefined, 'none refused by the listener');
  await landed(t, path.join(inbox.dir, 'w'));

  // Into a destination path Windows would refuse, and one such file by itself.
  await writeFile(path.join(src, 'notes.'), 'alone');
  const one = await push({
    ...base,
    session: l.session,
    share: 'inbox',
    remotePath: 'aux',
    localPath: path.join(src, 'notes.'),
    signal: signal(),
  });
  t.equal(one.files, 1);
  t.equal(await readFile(path.join(inbox.dir, 'aux', 'notes.'), 'utf8'), 'alone');
});

t.test('a pull and an ls of such names from a Linux listener take every file', async (t) => {
  const share = await shareIn('src');
  await tree(path.join(share.dir, 'w'));
  const l = await memoryListener([share]);
  t.teardown(() => l.stop());

  const names: string[] = [];
  for await (const batch of listRemote({
    session: l.session,
    share: 'src',
    path: 'w',
    recursive: true,
    signal: signal(),
  }))
    names.push(...batch.entries.map((e) => e.path));
  t.same(names.sort(), ['aux.c', 'con.h', 'nul', 'nul/com1.log', 'plain.txt', 'prn.txt', 'space ', 'trail.'].sort());

  const dest = await tempDir('winnames-pull');
  const pulled = await pull({
    ...base,
    session: l.session,
    share: 'src',
    remotePath: 'w',
    localPath: dest,
    signal: signal(),
  });
  t.equal(pulled.files, Object.keys(FILES).length, 'every file pulled');
  t.equal(pulled.refusedCount, undefined);
  t.equal(pulled.unreadableCount, undefined);
  await landed(t, path.join(dest, 'w'));
  await writeFile(path.join(dest, 'w', 'aux.c'), 'changed here');
  const dry = await pull({
    ...base,
    session: l.session,
    share: 'src',
    remotePath: 'w',
    localPath: dest,
    signal: signal(),
    force: true,
    dryRun: true,
  });
  t.same(
    dry.dryRun?.files.map((f) => f.path),
    ['w/aux.c'],
    'a dry run into the pulled tree finds the one file changed',
  );

  const single = await tempDir('winnames-one');
  const one = await pull({
    ...base,
    session: l.session,
    share: 'src',
    remotePath: 'w/nul/com1.log',
    localPath: single,
    signal: signal(),
  });
  t.equal(one.files, 1, 'one asked for by a device-named path');
  t.same(await readdir(single), ['com1.log']);
});

t.test('on Windows rules, the publisher refuses such a path alone, as a path it may not write', async (t) => {
  const share = await tempDir('winnames-strict');
  const refused = new RefusedPaths();
  const pub = await Publisher.open({
    shareRoot: share,
    chunking: DEFAULT_CHUNKING,
    force: false,
    nameRules: { windowsNames: true },
  });
  for (const rel of ['w/aux', 'w/trail.']) {
    const err = await pub.makeDir(rel).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    t.ok(err, `${rel} refused`);
    if (err !== undefined) refused.refuse(rel, err); // as the receiver's onRefused (receive-tree.ts)
  }
  await pub.makeDir('w/plain');
  t.same(await readdir(path.join(share, 'w')), ['plain']);
  const { refused: listed, refusedCount } = refused.fields();
  t.same(listed, [
    { path: 'w/aux', reason: WINDOWS_NAME_REFUSAL },
    { path: 'w/trail.', reason: WINDOWS_NAME_REFUSAL },
  ]);
  t.equal(refusedProblem(listed ?? [], refusedCount ?? 0), undefined, 'a reason a peer takes as an errno code');
});

t.test('`receive` takes what a `send` offers under such names; a climbing name stays refused', async (t) => {
  for (const path of ['aux.c', 'con.h', 'notes.', 'name '])
    t.equal(offeredNameProblem({ path, kind: 'file' }), undefined, `${JSON.stringify(path)} offered`);
  t.match(offeredNameProblem({ path: '..', kind: 'dir' }), /"\.\." segment/);
  t.match(offeredNameProblem({ path: '.clawpeer.', kind: 'dir' }), /reserved for clawpeer/);
});

/** A receiver of `entries` into `root` (planning only: no session), with these name rules. */
function receiverOf(
  entries: readonly ManifestEntry[],
  root: string,
  extra: Partial<ConstructorParameters<typeof TransferReceiver>[0]> = {},
): TransferReceiver {
  return new TransferReceiver({
    session: undefined as never,
    router: undefined as never,
    transferId: 1,
    entries,
    destination: { root, readOnly: false, basePath: '' },
    force: false,
    chunking: DEFAULT_CHUNKING,
    signal: signal(),
    log: silentLogger,
    ...extra,
  });
}

t.test(
  'a receiver on Windows rules leaves such paths out one by one; a synced folder refuses them whole',
  async (t) => {
    const src = await tempDir('winnames-recv');
    await tree(path.join(src, 'w'));
    const { entries } = await scanSource(path.join(src, 'w'), { chunking: DEFAULT_CHUNKING, log: silentLogger });
    t.throws(
      () => receiverOf(entries, src),
      { code: 'PATH_INVALID', message: /Windows device name|dot or space/ },
      "without nameRules (a synced folder's fetch) the manifest is refused",
    );
    const root = await tempDir('winnames-recv-dst');
    const refused: string[] = [];
    const r = receiverOf(entries, root, {
      nameRules: { windowsNames: true },
      onRefused: (rel, err) => refused.push(`${rel} ${new RefusedPaths().refuse(rel, err).reason}`),
    });
    const plan = await r.prepare();
    t.same(
      refused.sort(),
      ['w/aux.c', 'w/con.h', 'w/nul', 'w/nul/com1.log', 'w/prn.txt', 'w/space ', 'w/trail.'].map(
        (p) => `${p} ${WINDOWS_NAME_REFUSAL}`,
      ),
      'each refused as EWINDOWSNAME',
    );
    t.equal(plan.lackingBytes, 'plain'.length, 'only plain.txt is asked for');
    await r.abort();
  },
);
