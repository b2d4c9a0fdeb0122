// A synced folder's .clawpeerignore: its lines, what they match (an entry, and a path under an
// ignored directory), and errors that name the file and the line.
import t from 'tap';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  IGNORE_FILE_NAME,
  loadSyncIgnore,
  parseIgnoreFile,
  syncIgnoreFrom,
} from '../../src/folder-sync/sync-ignore.js';

t.test('one pattern per line; blank lines and # comments are skipped; CRLF is fine', async (t) => {
  t.same(parseIgnoreFile('# build output\r\nbuild/\r\n\r\n   \n*.tmp\n#*.keep\n'), [
    { pattern: 'build/', include: false, line: 2 },
    { pattern: '*.tmp', include: false, line: 5 },
  ]);
});

t.test('an entry matches by itself; a path is ignored when any directory above it is', async (t) => {
  const ignore = syncIgnoreFrom(parseIgnoreFile('build/\n*.tmp\n/docs/private\n'));
  t.ok(ignore.matches('build', true));
  t.notOk(ignore.matches('build', false), 'a trailing slash: directories only');
  t.notOk(ignore.matches('build/out.o', false), 'matches asks about the entry, not its parents');
  t.ok(ignore.ignores('build/out.o', false), 'ignores asks about its parents too');
  t.ok(ignore.ignores('src/build/deep/x', false), 'an unanchored name matches at any depth');
  t.ok(ignore.ignores('a/b/c.tmp', false));
  t.ok(ignore.ignores('docs/private/x.txt', false));
  t.notOk(ignore.ignores('src/docs/private', true), 'an anchored pattern matches from the top only');
  t.notOk(ignore.ignores('src/main.ts', false));
  t.ok(syncIgnoreFrom([]).ignores(IGNORE_FILE_NAME, false), 'the ignore file itself, always');
  t.notOk(syncIgnoreFrom([]).ignores(`sub/${IGNORE_FILE_NAME}`, false), 'only the one at the root');
});

t.test(
  'a !pattern line includes; the first line that matches decides; an ignored directory is not entered',
  async (t) => {
    t.same(parseIgnoreFile('!keep.log\n*.log\n\\!literal\n'), [
      { pattern: 'keep.log', include: true, line: 1 },
      { pattern: '*.log', include: false, line: 2 },
      { pattern: '\\!literal', include: false, line: 3 },
    ]);
    const ignore = syncIgnoreFrom(
      parseIgnoreFile('!keep.log\n*.log\n!/build/keep/\n/build/*\n/out\n!/out/wanted\n\\!literal\n'),
    );
    t.same(
      ignore.patterns,
      ['!keep.log', '*.log', '!/build/keep/', '/build/*', '/out', '!/out/wanted', '\\!literal'],
      'as written',
    );
    t.notOk(ignore.ignores('keep.log', false), 'the negation comes first: kept');
    t.notOk(ignore.ignores('deep/keep.log', false));
    t.ok(ignore.ignores('other.log', false));
    t.notOk(ignore.ignores('build/keep/a.o', false), 'inside a directory brought back');
    t.ok(ignore.ignores('build/other/a.o', false));
    t.ok(ignore.ignores('out/wanted', false), "a negation after the directory's own rule cannot reach below it");
    t.ok(ignore.ignores('!literal', false), 'a backslash makes a leading ! literal');
    t.notOk(ignore.ignores('literal', false));
  },
);

t.test('a bad !pattern names the line as written', async (t) => {
  t.throws(() => syncIgnoreFrom(parseIgnoreFile('*.log\n![x\n'), 'IGN'), {
    code: 'USAGE',
    message: 'IGN line 2: "![x": has a [ without its ]',
  });
  t.throws(() => syncIgnoreFrom(parseIgnoreFile('!\n'), 'IGN'), {
    code: 'USAGE',
    message: 'IGN line 1: "!": is empty',
  });
});

t.test(
  "the folder's file: none is no rules; a malformed pattern is a usage error naming the file and its line",
  async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'clawpeer-ignore-'));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    t.same((await loadSyncIgnore(dir)).patterns, []);
    await writeFile(join(dir, IGNORE_FILE_NAME), '# ok\n*.log\n\n[oops\n');
    await t.rejects(loadSyncIgnore(dir), {
      code: 'USAGE',
      message: `${join(dir, IGNORE_FILE_NAME)} line 4: "[oops": has a [ without its ]`,
    });
    await writeFile(join(dir, IGNORE_FILE_NAME), '*.log\nnode_modules/\n');
    t.same((await loadSyncIgnore(dir)).patterns, ['*.log', 'node_modules/']);
  },
);
