// What a listener's syncs cannot record (synced-folder.ts UnsyncableEntries): each scan of a
// folder keeps the entries it left out, each with a reason that does not name it, for `clawpeer
// status`; and the listener logs an entry once, when a scan first finds it, not at every scan.
import t from 'tap';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createLogger } from '../../src/logger.js';
import { defaultFolderChunking } from '../../src/folder-sync/folder-history.js';
import { openSyncedFolder, ResidentFolders, UNSYNCABLE_PATHS_KEPT } from '../../src/folder-sync/synced-folder.js';

const dir = await mkdtemp(path.join(tmpdir(), 'clawpeer-unsyncable-'));
const lines: string[] = [];
const log = createLogger('test', 0, (l) => void lines.push(l));
const resident = new ResidentFolders({ log });
t.teardown(async () => {
  await resident.close();
  await rm(dir, { recursive: true, force: true });
});

/** One sync's opening of the folder (its lock, a scan), as the listener's syncs do. */
async function scan(): Promise<void> {
  const f = await openSyncedFolder(dir, {
    nodeId: 'node',
    chunking: defaultFolderChunking(),
    lockWaitMs: 1_000,
    log,
    resident,
  });
  await f.close();
}
const warnings = (): string[] => lines.filter((l) => l.includes(' WARN '));

t.test('entries a scan cannot record are kept per folder with their reason, and logged once', async (t) => {
  await writeFile(path.join(dir, 'plain.txt'), 'fine\n');
  await writeFile(path.join(dir, 'a\nb'), 'a newline\n');
  await writeFile(path.join(dir, 'esc\x1b[31mred'), 'an ESC\n');
  await writeFile(path.join(dir, 'back\\slash'), 'a backslash\n');
  await writeFile(path.join(dir, 'dot.'), 'a trailing dot\n');
  // A name that is not UTF-8 (Latin-1 'é'), written by its bytes.
  writeFileSync(Buffer.concat([Buffer.from(dir + '/caf'), Buffer.from([0xe9])]), 'latin-1\n');
  await scan();
  t.same(
    resident.unsyncable
      .of(dir)
      .flatMap((g) => g.paths.map((p) => [p, g.reason]))
      .sort(),
    [
      ['a\\#012b', 'name has a control character'],
      ['back\\slash', 'name has a backslash'],
      ['caf\\#351', 'name is not valid UTF-8'],
      ['dot.', 'name ends with a dot or space'],
      ['esc\\#033[31mred', 'name has a control character'],
    ],
    'each with its path escaped and a reason that does not name it',
  );
  t.equal(warnings().length, 1, 'one warning for the scan that found them');
  t.match(
    warnings()[0],
    /entries that cannot be synced: .* count=5 entries=.*a\\#012b \(name has a control character\)/,
  );
  const first = warnings()[0] ?? '';
  t.ok(first.indexOf('\n') === first.length - 1 && !first.includes('\x1b'), 'one line, no raw control character');

  await scan();
  await scan();
  t.equal(warnings().length, 1, 'later scans that find the same entries log nothing');

  await rename(path.join(dir, 'a\nb'), path.join(dir, 'a-b'));
  await writeFile(path.join(dir, 'tab\there'), 'a tab\n');
  await scan();
  t.equal(warnings().length, 2, 'a scan that finds a new one logs again');
  t.match(warnings()[1], /count=1 entries=tab\\#011here \(name has a control character\)$/m, 'only the new one');
  t.notOk(
    resident.unsyncable.of(dir).some((g) => g.paths.includes('a\\#012b')),
    'one renamed since is no longer listed',
  );

  for (const name of ['esc\x1b[31mred', 'back\\slash', 'dot.', 'tab\there']) await rm(path.join(dir, name));
  await rm(Buffer.concat([Buffer.from(dir + '/caf'), Buffer.from([0xe9])]));
  await scan();
  t.same(resident.unsyncable.of(dir), [], 'all fixed: none listed');
  t.equal(warnings().length, 2);
});

t.test('a folder of many such entries keeps 100 paths of a reason, and the exact count', async (t) => {
  const names = Array.from({ length: 130 }, (_, i) => `bad\x01${String(i).padStart(3, '0')}`);
  for (const n of names) await writeFile(path.join(dir, n), 'x\n');
  const logged = warnings().length;
  await scan();
  const [group] = resident.unsyncable.of(dir);
  t.equal(group?.count, 130, 'every entry counted');
  t.equal(group?.paths.length, UNSYNCABLE_PATHS_KEPT, 'before, all 130 paths were kept in memory');
  t.same(group?.paths.slice(0, 2), ['bad\\#001000', 'bad\\#001001'], 'the first in path order');
  t.equal(warnings().length, logged + 1, 'the scan that found them logs once');
  t.match(warnings().at(-1), /count=130 /);

  await scan();
  t.equal(warnings().length, logged + 1, 'a rescan finds none new, those only counted included');
  await writeFile(path.join(dir, 'bad\x01000a'), 'x\n'); // sorts among the kept ones: new for sure
  await scan();
  t.equal(warnings().length, logged + 2);
  t.match(warnings().at(-1), /count=1 entries=bad\\#001000a /, 'only the new one');
  t.equal(resident.unsyncable.of(dir)[0]?.count, 131);

  for (const n of [...names, 'bad\x01000a']) await rm(path.join(dir, n));
  await scan();
  t.same(resident.unsyncable.of(dir), []);
});
