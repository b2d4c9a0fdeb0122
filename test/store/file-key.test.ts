import t from 'tap';
import { fileKeyOf, isRacy, msToNs, RACY_WINDOW_MS, sameFileKey } from '../../src/store/file-key.js';
import { lstatSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

t.test('a key is racy until the window has passed since its mtime', async (t) => {
  const mtime = msToNs(1_000_000);
  t.equal(isRacy(mtime, mtime), true, 'hashed at its mtime');
  t.equal(isRacy(mtime, mtime + msToNs(RACY_WINDOW_MS) - 1n), true, 'one ns short of the window');
  t.equal(isRacy(mtime, mtime + msToNs(RACY_WINDOW_MS)), false, 'the whole window later');
  t.equal(isRacy(mtime, mtime + msToNs(50), 10), false, 'a shorter window (tests)');
});

t.test('the key of a stat: same file version, or not', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'clawpeer-filekey-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'f');
  writeFileSync(file, 'abc');
  const key = fileKeyOf(lstatSync(file, { bigint: true }));
  t.equal(key.size, 3);
  t.equal(sameFileKey(key, fileKeyOf(lstatSync(file, { bigint: true }))), true);
  t.equal(sameFileKey(key, { ...key, mtimeNs: key.mtimeNs + 1n }), false, 'another mtime');
  t.equal(sameFileKey(key, { ...key, ino: key.ino + 1n }), false, 'another inode (replaced by a rename)');
  t.equal(sameFileKey(key, { ...key, size: 4 }), false, 'another size');
});
