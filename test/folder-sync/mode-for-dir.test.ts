// A sync of a directory runs within the mode of each shared folder of the home it reaches (the
// folder itself, a directory inside it, one holding it; by any path to it): a receive-only
// folder's sync never sends, a send-only one's never takes; a mode against the folder's is
// refused. Paused folders count too.
import t from 'tap';
import { mkdir, mkdtemp, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { modeForDir } from '../../src/folder-sync/sync-with-peer.js';

const work = await mkdtemp(join(tmpdir(), 'clawpeer-mode-for-dir-'));
const home = join(work, 'home');
const at = (...p: string[]): string => join(work, ...p);
await mkdir(home);
for (const d of ['docs/sub', 'pub', 'docs2', 'plain']) await mkdir(at(d), { recursive: true });
await symlink(at('docs'), at('docs-link'));
await writeFile(
  join(home, 'config.json'),
  JSON.stringify({
    folders: [
      { id: 'docs', path: at('docs'), with: ['bob'], mode: 'receive-only', paused: true },
      { id: 'pub', path: at('pub'), with: ['bob'], mode: 'send-only' },
      { id: 'two', path: at('docs2'), with: ['bob'], mode: 'two-way' },
    ],
  }),
);

t.test('narrowed to the folder it reaches', async (t) => {
  const docs = { mode: 'receive-only', narrowedBy: { folder: 'docs', mode: 'receive-only' } };
  t.same(await modeForDir(home, at('docs'), 'two-way'), docs, 'the folder (paused)');
  t.same(await modeForDir(home, at('docs', 'sub'), 'two-way'), docs, 'a directory inside it');
  t.same(await modeForDir(home, at('docs-link'), 'two-way'), docs, 'a symlink to it');
  t.same(await modeForDir(home, at('docs'), 'receive-only'), { mode: 'receive-only' }, 'nothing to narrow');
  t.same(await modeForDir(home, at('pub'), 'two-way'), {
    mode: 'send-only',
    narrowedBy: { folder: 'pub', mode: 'send-only' },
  });
  t.same(await modeForDir(home, at('docs2'), 'two-way'), { mode: 'two-way' }, 'a two-way folder, not docs');
  t.same(await modeForDir(home, at('plain'), 'two-way'), { mode: 'two-way' }, 'no folder');
  t.same(await modeForDir(home, at('missing'), 'send-only'), { mode: 'send-only' }, 'a directory not made yet');
});

t.test('a directory holding folders of both kinds moves nothing: refused', async (t) => {
  await t.rejects(modeForDir(home, work, 'two-way'), {
    code: 'USAGE',
    message: /reaches folder pub .*send-only.*: a receive-only sync would take the peer's changes$/,
  });
});

t.test("a mode against the folder's is refused", async (t) => {
  await t.rejects(modeForDir(home, at('docs'), 'send-only'), {
    code: 'USAGE',
    message: /a send-only sync would send its local changes \(sync it with --mode receive-only/,
  });
  await t.rejects(modeForDir(home, at('pub'), 'receive-only'), {
    code: 'USAGE',
    message: /would take the peer's changes/,
  });
});
