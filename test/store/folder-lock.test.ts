import t from 'tap';
import { spawn } from 'node:child_process';
import type { ChildProcessByStdio } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rename, rm, rmdir, utimes, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { isClawpeerError } from '../../src/errors.js';
import { FolderLock, folderLockPath, parseLockFile } from '../../src/store/folder-lock.js';

async function tempFolder(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'clawpeer-lock-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

// Takes the lock, says "locked", releases when told "release" on stdin, says "released".
const CHILD = `
const { FolderLock } = await import(process.argv[1]);
const lock = await FolderLock.acquire(process.argv[2]);
process.stdout.write('locked\\n');
process.stdin.setEncoding('utf8');
process.stdin.on('data', async (d) => {
  if (!d.includes('release')) return;
  await lock.release();
  process.stdout.write('released\\n');
  process.exit(0);
});
`;

interface Holder {
  child: ChildProcessByStdio<Writable, Readable, null>;
  events: string[];
  next(line: string): Promise<void>;
}

async function holder(folder: string): Promise<Holder> {
  const url = new URL('../../src/store/folder-lock.js', import.meta.url).href;
  const child = spawn(process.execPath, ['--input-type=module', '-e', CHILD, url, folder], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const events: string[] = [];
  const waiters = new Map<string, () => void>();
  createInterface({ input: child.stdout }).on('line', (line) => {
    events.push(line);
    waiters.get(line)?.();
  });
  const next = (line: string): Promise<void> =>
    events.includes(line) ? Promise.resolve() : new Promise((resolve) => waiters.set(line, resolve));
  await next('locked');
  return { child, events, next };
}

t.test('a second process waits for the first to release', async (t) => {
  const folder = await tempFolder();
  const h = await holder(folder);
  const text = await readFile(folderLockPath(folder), 'utf8');
  t.same(parseLockFile(text), { pid: h.child.pid, host: hostname() });

  const err = await FolderLock.acquire(folder).catch((e: unknown) => e);
  t.ok(isClawpeerError(err, 'FOLDER_BUSY'), 'held: fails at once without waitMs');
  t.match((err as Error).message, new RegExp(`synced by pid ${h.child.pid} on .*sync\\.lock`));

  const events: string[] = [];
  const waiting = FolderLock.acquire(folder, { waitMs: 20_000, pollMs: 20 }).then((lock) => {
    events.push(...h.events, 'acquired');
    return lock;
  });
  await sleep(300); // give a broken lock every chance to be taken early
  h.child.stdin.write('release\n');
  const lock = await waiting;
  t.same(events, ['locked', 'released', 'acquired'], 'acquired only after the holder released');
  t.same(parseLockFile(await readFile(lock.file, 'utf8')), { pid: process.pid, host: hostname() });
  await lock.release();
  await t.rejects(readFile(lock.file), { code: 'ENOENT' }, 'release removes the file');
});

t.test('the lock of a killed process is stale and broken', async (t) => {
  const folder = await tempFolder();
  const h = await holder(folder);
  const exited = new Promise((resolve) => h.child.on('exit', resolve));
  h.child.kill('SIGKILL');
  await exited;
  const lock = await FolderLock.acquire(folder);
  t.same(parseLockFile(await readFile(lock.file, 'utf8')), { pid: process.pid, host: hostname() });
  await lock.release();
});

t.test('in one process the lock is exclusive too; release is idempotent and only removes our own file', async (t) => {
  const folder = await tempFolder();
  const a = await FolderLock.acquire(folder);
  await t.rejects(FolderLock.acquire(folder), { code: 'FOLDER_BUSY' });
  await a.release();
  await a.release();
  t.ok(a.released);
  const b = await FolderLock.acquire(folder);
  // Someone replaced the file (we looked dead to them): release must leave theirs alone.
  await writeFile(b.file, `999999 ${hostname()}\n`);
  await b.release();
  t.equal(await readFile(b.file, 'utf8'), `999999 ${hostname()}\n`);
});

t.test('acquires in one process at once never hold the lock together', async (t) => {
  // A lock file this process has just made, not yet holding its pid (or holding it before the
  // lock counted as held here), was taken for a stale one of this process and broken: four
  // invites redeemed at once lost a pairing from peers.json.
  const folder = await tempFolder();
  let holders = 0;
  let most = 0;
  await Promise.all(
    Array.from({ length: 12 }, async () => {
      const lock = await FolderLock.acquire(folder, { waitMs: 30_000, pollMs: 1 });
      most = Math.max(most, ++holders);
      await sleep(2);
      holders--;
      await lock.release();
    }),
  );
  t.equal(most, 1, 'one holder at a time');
});

// A sync holding the lock while its folder was swapped (moved away and back, a disk unmounted
// and mounted again) could not remove its lock file at release: the path named the new
// directory. Before, that file (this live process's pid) held the folder busy until a restart.
t.test("this process's lock that its release could not reach is stale once the folder is back", async (t) => {
  const parent = await tempFolder();
  const folder = join(parent, 'docs');
  await mkdir(folder);
  const lock = await FolderLock.acquire(folder);
  await rename(folder, `${folder}-disk`);
  await mkdir(folder);
  await lock.release(); // the lock file is in docs-disk now: left there
  await rmdir(folder);
  await rename(`${folder}-disk`, folder);
  t.same(parseLockFile(await readFile(folderLockPath(folder), 'utf8')), { pid: process.pid, host: hostname() });
  const again = await FolderLock.acquire(folder); // at once: no wait allowed
  const held = await FolderLock.acquire(folder).then(
    () => 'taken twice',
    (err: unknown) => (isClawpeerError(err, 'FOLDER_BUSY') ? 'busy' : String(err)),
  );
  t.equal(held, 'busy', 'a lock this process holds still is not taken for stale');
  await again.release();
});

t.test('unparsable and foreign locks', async (t) => {
  const folder = await tempFolder();
  const file = folderLockPath(folder);
  await mkdir(join(folder, '.clawpeer'), { recursive: true });
  // A torn lock (writer died before writing its pid) is waited for while young...
  await writeFile(file, '');
  await t.rejects(FolderLock.acquire(folder), { code: 'FOLDER_BUSY', message: /unreadable lock file/ });
  // ...and broken once old.
  await utimes(file, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));
  const lock = await FolderLock.acquire(folder);
  await lock.release();
  // A lock from another host cannot be checked, so it is never broken.
  await writeFile(file, '999999 some-other-host\n');
  await t.rejects(FolderLock.acquire(folder), { code: 'FOLDER_BUSY', message: /pid 999999 on some-other-host/ });
  // A dead pid on this host is stale.
  await writeFile(file, `999999 ${hostname()}\n`);
  const again = await FolderLock.acquire(folder);
  await again.release();
});

t.test('waiting can be aborted', async (t) => {
  const folder = await tempFolder();
  const held = await FolderLock.acquire(folder);
  const ac = new AbortController();
  const waiting = FolderLock.acquire(folder, { waitMs: 60_000, signal: ac.signal });
  setTimeout(() => ac.abort(new Error('user pressed ^C')), 50);
  await t.rejects(waiting, { code: 'ABORTED' });
  await held.release();
});

t.test('parseLockFile accepts only "<pid> <host>"', async (t) => {
  t.same(parseLockFile('12 host\n'), { pid: 12, host: 'host' });
  t.equal(parseLockFile('0 host\n'), undefined);
  t.equal(parseLockFile('x host\n'), undefined);
  t.equal(parseLockFile(''), undefined);
});

// Several processes contend; each appends "start"/"end" to a log while holding the lock.
const CONTENDER = `
const { appendFileSync } = await import('node:fs');
const { FolderLock } = await import(process.argv[1]);
for (let round = 0; round < 3; round++) {
  const lock = await FolderLock.acquire(process.argv[2], { waitMs: 30000, pollMs: 5 });
  appendFileSync(process.argv[3], 'start ' + process.pid + '\\n');
  await new Promise((r) => setTimeout(r, 10));
  appendFileSync(process.argv[3], 'end ' + process.pid + '\\n');
  await lock.release();
}
`;

t.test('contending processes never hold the lock at the same time', async (t) => {
  const folder = await tempFolder();
  const log = join(folder, 'log.txt');
  const url = new URL('../../src/store/folder-lock.js', import.meta.url).href;
  const runs = Array.from({ length: 4 }, () => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', CONTENDER, url, folder, log], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    return new Promise<number | null>((resolve) => child.on('exit', resolve));
  });
  t.same(await Promise.all(runs), [0, 0, 0, 0]);
  const lines = (await readFile(log, 'utf8')).trim().split('\n');
  t.equal(lines.length, 4 * 3 * 2);
  for (let i = 0; i < lines.length; i += 2) {
    const [start, end] = [lines[i]!.split(' '), lines[i + 1]!.split(' ')];
    t.ok(start[0] === 'start' && end[0] === 'end' && start[1] === end[1], `critical section ${i / 2} not interleaved`);
  }
});
