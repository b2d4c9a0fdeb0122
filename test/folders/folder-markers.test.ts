// The home's record of the folders its listener started (folders/folder-markers.ts): kept across
// loads, forgotten by folder id, bounded, and a damaged file is an empty record.
import t, { type Test } from 'tap';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { FOLDERS_STARTED_FILE, StartedFolders } from '../../src/folders/folder-markers.js';

const home = async (t: Test): Promise<string> => {
  const dir = await mkdtemp(path.join(tmpdir(), 'clawpeer-started-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
};

t.test('a started folder is remembered by id and path, across loads, until forgotten', async (t) => {
  const dir = await home(t);
  const started = await StartedFolders.load(dir);
  t.notOk(started.has('docs', '/srv/docs'));
  await started.add('docs', '/srv/docs');
  await started.add('docs', '/mnt/docs');
  await started.add('pics', '/srv/pics');
  const again = await StartedFolders.load(dir);
  t.ok(again.has('docs', '/srv/docs'));
  t.notOk(again.has('docs', '/elsewhere'), 'another path of the same id is new');
  await again.forget('docs');
  const third = await StartedFolders.load(dir);
  t.notOk(third.has('docs', '/srv/docs'));
  t.notOk(third.has('docs', '/mnt/docs'), 'every path of the id forgotten');
  t.ok(third.has('pics', '/srv/pics'));
});

t.test('a damaged file is an empty record, and the next start writes a good one', async (t) => {
  const dir = await home(t);
  const file = path.join(dir, FOLDERS_STARTED_FILE);
  for (const bad of ['{"version":1,"folders":[null,', '{"version":2,"folders":[]}', '[1,2]']) {
    await writeFile(file, bad);
    const started = await StartedFolders.load(dir);
    t.notOk(started.has('docs', '/srv/docs'), JSON.stringify(bad));
  }
  await writeFile(file, JSON.stringify({ version: 1, folders: [null, { id: 'docs', path: '/srv/docs', at: 1 }] }));
  const started = await StartedFolders.load(dir);
  t.ok(started.has('docs', '/srv/docs'), 'a bad entry beside a good one is skipped');
  await started.add('pics', '/srv/pics');
  t.match(JSON.parse(await readFile(file, 'utf8')), { version: 1, folders: [{ id: 'docs' }, { id: 'pics' }] });
});
