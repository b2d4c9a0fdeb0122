// The home's folder-log.jsonl as `folder log` reads it: a line that parses but is not an entry
// it can print (a revert without its paths, paths that are no list of paths) is skipped like a
// line a crash cut, instead of failing the whole command with a TypeError.
import t from 'tap';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { FOLDER_LOG_NAME, readFolderLog } from '../../src/folders/folder-log.js';
import { logLines } from '../../src/cli/commands/folder.js';

const sync = {
  time: 1_700_000_000_000,
  folder: 'docs',
  peer: 'p'.repeat(52),
  by: 'peer',
  received: 1,
  added: 1,
  changed: 0,
  deleted: 0,
  paths: [{ path: 'a.txt', change: 'added' }],
  sent: 0,
  conflicts: 0,
  skipped: 0,
  bytes: 1,
  seconds: 1,
};

t.test('entries folder log cannot print are skipped, the others shown', async (t) => {
  const home = t.testdir();
  const lines = [
    sync,
    { kind: 'revert', time: 1_700_000_000_001, folder: 'docs', reverted: 2, withdrawn: 2 },
    { ...sync, paths: 'a.txt' },
    { ...sync, paths: [null] },
    { kind: 'revert', time: 1_700_000_000_002, folder: 'docs', reverted: 1, withdrawn: 1, paths: [{ path: 'b' }] },
  ];
  await writeFile(path.join(home, FOLDER_LOG_NAME), lines.map((l) => JSON.stringify(l) + '\n').join(''));
  const entries = await readFolderLog(home, 'docs');
  t.equal(entries.length, 2, 'the sync and the revert with its paths');
  t.doesNotThrow(() => entries.map((e) => logLines(e, Date.now())), 'each prints');
});
