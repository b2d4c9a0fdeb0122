// Conflict copies are files of their own (issue 34 item 2): written as a new inode, and a copy
// that shares its inode with the live file (left by older versions killed mid-conflict) is split
// off by the next scan, so writing the live file no longer changes the kept loser.
import t from 'tap';
import { appendFile, link, lstat, mkdtemp, readdir, readFile, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_CHUNKING } from '../../src/chunking/fastcdc.js';
import { splitHardLink, writeOwnCopy } from '../../src/folder-sync/conflict-copy.js';
import { scanFolder } from '../../src/folder-sync/folder-scanner.js';
import { RevisionStore } from '../../src/store/revision-store.js';

const COPY = 'notes.sync-conflict-20260102-030405-AbCdEfG.txt';

t.test(
  'writeOwnCopy: a new inode with the bytes, mode and mtime asked for, replacing what was there, no temp file left',
  async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'clawpeer-ccopy-'));
    await writeFile(join(dir, 'notes.txt'), 'the loser\n');
    await writeFile(join(dir, COPY), 'something older\n');
    await writeOwnCopy(join(dir, 'notes.txt'), join(dir, COPY), 0o600, 1_600_000_000_000);
    const live = await lstat(join(dir, 'notes.txt'));
    const copy = await lstat(join(dir, COPY));
    t.not(copy.ino, live.ino);
    t.equal(copy.nlink, 1);
    t.equal(copy.mode & 0o777, 0o600);
    t.equal(copy.mtimeMs, 1_600_000_000_000);
    t.equal(await readFile(join(dir, COPY), 'utf8'), 'the loser\n');
    t.same((await readdir(dir)).sort(), [COPY, 'notes.txt'].sort());
  },
);

t.test('splitHardLink: gives a second name its own inode, same bytes; leaves a single name alone', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'clawpeer-ccopy-'));
  await writeFile(join(dir, 'notes.txt'), 'shared\n');
  await utimes(join(dir, 'notes.txt'), 1_600_000_000, 1_600_000_000);
  await link(join(dir, 'notes.txt'), join(dir, COPY));
  t.equal(await splitHardLink(join(dir, COPY)), true);
  t.equal((await lstat(join(dir, COPY))).nlink, 1);
  t.equal((await lstat(join(dir, 'notes.txt'))).nlink, 1);
  t.equal((await lstat(join(dir, COPY))).mtimeMs, 1_600_000_000_000, 'mtime kept');
  await appendFile(join(dir, 'notes.txt'), 'more\n');
  t.equal(await readFile(join(dir, COPY), 'utf8'), 'shared\n', 'the copy no longer follows the live file');
  t.equal(await splitHardLink(join(dir, COPY)), false);
});

t.test('a scan splits a conflict copy that is a second name of its live file, before it is recorded', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'clawpeer-ccopy-'));
  await writeFile(join(dir, 'notes.txt'), 'the loser\n');
  const store = await RevisionStore.open(dir, { nodeId: 'scanner-node' });
  t.teardown(() => store.close());
  await scanFolder(store, dir, { chunking: DEFAULT_CHUNKING });
  await link(join(dir, 'notes.txt'), join(dir, COPY));
  const r = await scanFolder(store, dir, { chunking: DEFAULT_CHUNKING });
  t.equal(r.added, 1, 'the copy is recorded');
  t.not((await lstat(join(dir, COPY))).ino, (await lstat(join(dir, 'notes.txt'))).ino, 'as a file of its own');
  t.equal((await lstat(join(dir, 'notes.txt'))).nlink, 1);
  // Another hard-linked name that is not a conflict copy is the user's business: left linked.
  await link(join(dir, 'notes.txt'), join(dir, 'alias.txt'));
  await scanFolder(store, dir, { chunking: DEFAULT_CHUNKING });
  t.equal((await lstat(join(dir, 'alias.txt'))).ino, (await lstat(join(dir, 'notes.txt'))).ino);
});
