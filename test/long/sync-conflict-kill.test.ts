// Conflicts settled by a sync that is killed part-way (issue 34, items 1 and 2): the kill lands
// at an exact step (CLAWPEER_TEST_CRASH_AT, test-hooks.ts: the process SIGKILLs itself), and the
// next sync must finish the conflict: one winner at the path and the loser's bytes in a conflict
// copy of its own (never a second name of the live file), the same on both sides, in sync.
import t, { type Test } from 'tap';
import { link, lstat, mkdir, mkdtemp, readdir, readFile, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DEFAULT_CHUNKING } from '../../src/chunking/fastcdc.js';
import { scanFolder } from '../../src/folder-sync/folder-scanner.js';
import { RevisionStore } from '../../src/store/revision-store.js';
import { conflictPath } from '../../src/sync/conflict.js';
import { initNode, jsonLines, pairAdd, runCli, startListener, type CliResult } from '../e2e/cli-harness.js';
import { snapshot as fullSnapshot, type TreeItem } from '../e2e/tree-helpers.js';

async function snapshot(root: string): Promise<TreeItem[]> {
  return (await fullSnapshot(root)).map((i) => (i.kind === 'dir' ? { ...i, mtimeS: 0 } : i));
}

const SHARES = [
  'wedge-server-wins',
  'wedge-client-wins',
  'copy-killed',
  'log-killed',
  'aliased',
  'taken-server',
  'taken-client',
];
const a = await initNode('ska');
const b = await initNode('skb');
const work = await mkdtemp(path.join(tmpdir(), 'clawpeer-sync-kill-'));
await pairAdd(a.home, b.id, 'bob');
const shareArgs: string[] = [];
for (const name of SHARES) {
  await mkdir(path.join(work, 'server', name), { recursive: true });
  shareArgs.push('--share', `${name}=${path.join(work, 'server', name)}`);
}
const listener = await startListener(a.home, ['-v', ...shareArgs]);
await pairAdd(b.home, a.id, 'alice', `127.0.0.1:${listener.port}`);
t.teardown(() => listener.stop('SIGKILL'));

const server = (share: string, ...p: string[]): string => path.join(work, 'server', share, ...p);
const client = (share: string, ...p: string[]): string => path.join(work, 'client', share, ...p);
/** The idle timeout of a sync whose listener dies under it (test-hooks.ts; 15 s by default). */
const KILLED_PEER_IDLE_MS = 6000;
const CONFLICT_NAME = /^notes\.sync-conflict-\d{8}-\d{6}-[^.]+\.txt$/;

async function runSync(share: string, env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  try {
    return await runCli(['--home', b.home, 'sync', client(share), `alice:${share}`, '--json'], { env });
  } catch (err) {
    // A sync that never finished: what the listener was doing says why.
    throw new Error(`${(err as Error).message}\nlistener's log (last 8 KiB):\n${listener.stderr().slice(-8192)}`);
  }
}

async function sync(share: string): Promise<Record<string, unknown>> {
  const r = await runSync(share);
  if (r.code !== 0) throw new Error(`sync ${share} exited ${String(r.code)}: ${r.stderr}`);
  const last = jsonLines(r.stdout).at(-1);
  if (last?.['event'] !== 'done') throw new Error(`no done event: ${r.stdout}`);
  return last;
}

async function setMtime(file: string, secondsAgo: number): Promise<void> {
  const when = new Date(Date.now() - secondsAgo * 1000);
  await utimes(file, when, when);
}

const appliedCount = (): number => listener.stderr().split('sync applied').length - 1;

/** Waits until the listener has logged `n` applied syncs (its side of a sync the client then died in). */
async function listenerApplied(n: number): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (appliedCount() < n) {
    if (Date.now() > deadline)
      throw new Error(`the listener applied ${appliedCount()} syncs, not ${n}:\n${listener.stderr()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Synced base, then a concurrent edit on each side; `winner` has the later mtime. */
async function conflictingEdits(share: string, winner: 'server' | 'client'): Promise<{ win: string; lose: string }> {
  await mkdir(client(share), { recursive: true });
  await writeFile(server(share, 'notes.txt'), 'base\n');
  await sync(share);
  await writeFile(client(share, 'notes.txt'), `client edit of ${share}\n`);
  await writeFile(server(share, 'notes.txt'), `server edit of ${share}, a little longer\n`);
  await setMtime(winner === 'server' ? client(share, 'notes.txt') : server(share, 'notes.txt'), 120);
  return winner === 'server'
    ? { win: `server edit of ${share}, a little longer\n`, lose: `client edit of ${share}\n` }
    : { win: `client edit of ${share}\n`, lose: `server edit of ${share}, a little longer\n` };
}

/** Every regular file outside .clawpeer has one name only (a conflict copy is its own file). */
async function assertNoAliases(t: Test, root: string): Promise<void> {
  for (const name of await readdir(root)) {
    if (name === '.clawpeer') continue;
    const st = await lstat(path.join(root, name));
    if (st.isFile()) t.equal(st.nlink, 1, `${path.join(root, name)} has one name`);
  }
}

/** The next plain sync finishes the conflict: both sides hold the winner and the loser's copy, in sync. */
async function assertSettled(t: Test, share: string, expect: { win: string; lose: string }): Promise<void> {
  const r = await runSync(share);
  t.equal(r.code, 0, `the next sync succeeds: ${r.stderr}`);
  const lines = jsonLines(r.stdout);
  t.match(lines.at(-1), { event: 'done', inSync: true });
  t.same(
    lines.filter((l) => l['event'] === 'skipped'),
    [],
    'no path left as is',
  );
  t.notMatch(r.stderr, 'conflict copy name already taken');
  for (const side of [client(share), server(share)]) {
    t.equal(await readFile(path.join(side, 'notes.txt'), 'utf8'), expect.win, `${side}: the winner at the path`);
    const copies = (await readdir(side)).filter((n) => CONFLICT_NAME.test(n));
    t.equal(copies.length, 1, `${side}: one conflict copy in ${copies.join(', ')}`);
    t.equal(
      await readFile(path.join(side, copies[0] ?? 'none'), 'utf8'),
      expect.lose,
      `${side}: the copy holds the loser's bytes`,
    );
    await assertNoAliases(t, side);
  }
  t.same(await snapshot(client(share)), await snapshot(server(share)), 'the folders match');
  t.match(await sync(share), { roundTrips: 1, inSync: true }, 'and stay in sync');
}

for (const winner of ['server', 'client'] as const) {
  t.test(
    `a client killed after the listener settled a conflict (${winner} wins) does not wedge the pair`,
    async (t) => {
      const share = `wedge-${winner}-wins`;
      const expect = await conflictingEdits(share, winner);
      const before = appliedCount();
      const killed = await runSync(share, { CLAWPEER_TEST_CRASH_AT: 'sync-apply' });
      t.equal(killed.code, null, 'the client died at the step');
      await listenerApplied(before + 1);
      // The listener made and logged its conflict copy; the client has neither: its next sync
      // receives the copy's revision and meets the same conflict itself, in one exchange.
      await assertSettled(t, share, expect);
    },
  );
}

t.test('a sync killed with the conflict copy made and the live file not yet replaced', async (t) => {
  const share = 'copy-killed';
  const expect = await conflictingEdits(share, 'server'); // the client's edit loses: its copy is made here
  const killed = await runSync(share, { CLAWPEER_TEST_CRASH_AT: 'conflict-copy' });
  t.equal(killed.code, null, 'the client died at the step');
  const copies = (await readdir(client(share))).filter((n) => CONFLICT_NAME.test(n));
  t.equal(copies.length, 1, 'the copy is there');
  const copy = client(share, copies[0] ?? 'none');
  t.not(
    (await lstat(copy)).ino,
    (await lstat(client(share, 'notes.txt'))).ino,
    'the copy is its own file, not a second name of notes.txt',
  );
  t.equal(await readFile(copy, 'utf8'), expect.lose);
  await assertSettled(t, share, expect);
});

t.test('a sync killed after changing the disk and before writing its log', async (t) => {
  const share = 'log-killed';
  const expect = await conflictingEdits(share, 'server');
  const killed = await runSync(share, { CLAWPEER_TEST_CRASH_AT: 'sync-log' });
  t.equal(killed.code, null, 'the client died at the step');
  await assertSettled(t, share, expect);
});

t.test(
  'a conflict copy the old code left as a second name of the live file is split off and the conflict finishes',
  async (t) => {
    const share = 'aliased';
    const expect = await conflictingEdits(share, 'server');
    // What a kill between the old code's link(notes.txt, copy) and the publish left: the copy's
    // name (the client's edit, which loses, under its conflict name) on the live file's inode.
    const log = jsonLines(
      (await runCli(['--home', b.home, 'sync', client(share), 'alice:' + share, '--json', '--dry-run'])).stdout,
    );
    const planned = log.find((l) => l['path'] === 'notes.txt' && l['change'] === 'conflict') ?? JSON.stringify(log);
    const copyName = typeof planned === 'object' ? String(planned['copy']) : '';
    t.match(copyName, CONFLICT_NAME, `the dry run names the copy: ${JSON.stringify(planned)}`);
    await link(client(share, 'notes.txt'), client(share, copyName));
    await assertSettled(t, share, expect);
    await writeFile(client(share, 'notes.txt'), 'written after\n', { flag: 'a' });
    t.equal(
      await readFile(client(share, copyName), 'utf8'),
      expect.lose,
      'appending to notes.txt leaves the copy alone',
    );
  },
);

for (const side of ['server', 'client'] as const) {
  t.test(
    `a file already at the conflict copy's name (${side} side) is a conflict in turn, settled alike on both sides`,
    async (t) => {
      const share = `taken-${side}`;
      const expect = await conflictingEdits(share, 'server'); // the client's edit loses
      const loserNs = (await lstat(client(share, 'notes.txt'), { bigint: true })).mtimeNs;
      const copyName = conflictPath('notes.txt', loserNs, b.id);
      if (side === 'client') {
        // The edit is recorded before the user's file appears (as the listener's scan does on its
        // side): recorded in one scan, the file's revision would count as seen by the loser's
        // vector (one counter per node) and be replaced by the copy, kept in history only.
        const store = await RevisionStore.open(client(share), { nodeId: b.id });
        try {
          await scanFolder(store, client(share), { chunking: DEFAULT_CHUNKING });
        } finally {
          await store.close();
        }
      }
      // A user's file of that very name, newer than the loser: it keeps the name, the loser moves on.
      const user = 'a file of the user that happens to have the name\n';
      await writeFile(path.join(side === 'server' ? server(share) : client(share), copyName), user);
      const r = await runSync(share);
      t.equal(r.code, 0, r.stderr);
      t.match(jsonLines(r.stdout).at(-1), { event: 'done', inSync: true });
      t.notMatch(r.stderr, 'already taken');
      const second = conflictPath(copyName, loserNs, b.id);
      for (const dir of [client(share), server(share)]) {
        t.equal(await readFile(path.join(dir, 'notes.txt'), 'utf8'), expect.win, `${dir}: the winner`);
        t.equal(await readFile(path.join(dir, copyName), 'utf8'), user, `${dir}: the user's file keeps its name`);
        t.equal(
          await readFile(path.join(dir, second), 'utf8'),
          expect.lose,
          `${dir}: the loser under the copy's own conflict name`,
        );
        await assertNoAliases(t, dir);
      }
      t.same(await snapshot(client(share)), await snapshot(server(share)), 'the folders match');
      t.match(await sync(share), { roundTrips: 1, inSync: true }, 'and the logs converged');
    },
  );
}

t.test('a listener killed at each step of settling a conflict: restarted, the next sync finishes it', async (t) => {
  for (const step of ['conflict-copy', 'sync-log']) {
    const c = await initNode('skc');
    const dir = path.join(work, `listener-${step}`);
    const mine = path.join(work, `client-listener-${step}`);
    await mkdir(dir, { recursive: true });
    await mkdir(mine, { recursive: true });
    await pairAdd(c.home, b.id, 'bob');
    const args = ['--share', `f=${dir}`];
    let l = await startListener(c.home, args);
    const port = l.port;
    t.teardown(() => l.stop('SIGKILL'));
    await pairAdd(b.home, c.id, `carol-${step}`, `127.0.0.1:${port}`);
    const run = (env: NodeJS.ProcessEnv = {}): Promise<CliResult> =>
      runCli(['--home', b.home, 'sync', mine, `carol-${step}:f`, '--json'], { env });
    await writeFile(path.join(dir, 'notes.txt'), 'base\n');
    t.equal((await run()).code, 0);
    await l.stop();
    l = await startListener(c.home, args, { port, env: { CLAWPEER_TEST_CRASH_AT: step } });
    // The client's edit is newer: the listener's own edit loses and is copied aside there.
    await writeFile(path.join(dir, 'notes.txt'), 'listener edit, older\n');
    await setMtime(path.join(dir, 'notes.txt'), 120);
    await writeFile(path.join(mine, 'notes.txt'), 'client edit, newer\n');
    // Over QUIC the client learns of the dead listener by its idle timeout: a short one here.
    const killed = await run({ CLAWPEER_TEST_IDLE_TIMEOUT_MS: String(KILLED_PEER_IDLE_MS) });
    t.not(killed.code, 0, `the sync failed with its listener (${step})`);
    t.equal(await l.exited, null, 'the listener died at the step');
    l = await startListener(c.home, args, { port });
    const r = await run();
    t.equal(r.code, 0, r.stderr);
    t.match(jsonLines(r.stdout).at(-1), { event: 'done', inSync: true });
    for (const side of [dir, mine]) {
      t.equal(await readFile(path.join(side, 'notes.txt'), 'utf8'), 'client edit, newer\n', `${side}: the winner`);
      const copies = (await readdir(side)).filter((n) => CONFLICT_NAME.test(n));
      t.equal(copies.length, 1, `${side}: one copy in ${copies.join(', ')}`);
      t.equal(
        await readFile(path.join(side, copies[0] ?? 'none'), 'utf8'),
        'listener edit, older\n',
        `${side}: the loser's bytes`,
      );
      await assertNoAliases(t, side);
    }
    t.same(await snapshot(mine), await snapshot(dir), 'the folders match');
    const again = await run();
    t.match(jsonLines(again.stdout).at(-1), { event: 'done', inSync: true, roundTrips: 1 });
    await l.stop('SIGKILL');
  }
});
