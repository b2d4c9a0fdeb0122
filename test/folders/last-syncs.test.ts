// A folder's last sync times per peer (folders/last-syncs.ts): kept in its .clawpeer/ and read
// back by a new instance (a restarted listener); a missing or broken file is an empty one.
import t from 'tap';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { LastSyncs, lastSyncsFile, readLastSyncs } from '../../src/folders/last-syncs.js';

t.test('times written after a sync are read back by the next run', async (t) => {
  const dir = t.testdir();
  await mkdir(path.join(dir, '.clawpeer'));
  const errors: string[] = [];
  const first = new LastSyncs((_f, err) => errors.push(err.message));
  await first.load('docs', dir);
  t.equal(first.of('docs', 'peer-a'), undefined, 'never synced');
  first.record('docs', 'peer-a', 1_000);
  first.record('docs', 'peer-b', 2_000);
  first.record('docs', 'peer-a', 500); // older: ignored
  await first.flushed();
  t.same(errors, []);
  const again = new LastSyncs(() => undefined);
  await again.load('docs', dir);
  t.equal(again.of('docs', 'peer-a'), 1_000);
  t.equal(again.of('docs', 'peer-b'), 2_000);
  t.equal(again.of('other', 'peer-a'), undefined);
});

t.test('a missing, broken or foreign file reads as empty; a failed write is reported', async (t) => {
  const dir = t.testdir();
  t.same([...(await readLastSyncs(dir))], [], 'no .clawpeer/ at all');
  await mkdir(path.join(dir, '.clawpeer'));
  await writeFile(lastSyncsFile(dir), '{not json');
  t.same([...(await readLastSyncs(dir))], []);
  await writeFile(lastSyncsFile(dir), JSON.stringify({ version: 2, peers: { a: { lastSyncAt: 5 } } }));
  t.same([...(await readLastSyncs(dir))], [], 'another version');
  await writeFile(
    lastSyncsFile(dir),
    JSON.stringify({ version: 1, peers: { a: { lastSyncAt: 'x' }, b: { lastSyncAt: 7 } } }),
  );
  t.same([...(await readLastSyncs(dir))], [['b', 7]], 'only well-formed entries');
  const gone = path.join(dir, 'no-such-folder');
  const errors: string[] = [];
  const s = new LastSyncs((folder, err) => errors.push(`${folder}: ${err.message}`));
  await s.load('gone', gone);
  s.record('gone', 'a', 9);
  await s.flushed();
  t.equal(errors.length, 1, 'the write failed and said so');
  t.equal(s.of('gone', 'a'), 9, 'the time is still known in memory');
  await t.rejects(readFile(lastSyncsFile(gone)), 'nothing written');
});
