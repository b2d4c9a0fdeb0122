// `clawpeer sync` run by a listener of the same home (its control socket), which watches the
// shared folder: an unchanged folder is not scanned again, yet local edits and the peer's
// changes still travel; without a listener (or with a dead one's stale socket) the CLI syncs
// by itself; a bad request on the socket costs only that connection.
import t from 'tap';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createConnection } from 'node:net';
import { lstat, mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CLI, initNode, jsonLines, runCli, startListener, type RunningListener } from './cli-harness.js';

const a = await initNode('ra');
const b = await initNode('rb');
const work = await mkdtemp(path.join(tmpdir(), 'clawpeer-resident-'));
const server = (...p: string[]): string => path.join(work, 'server', ...p);
const local = (...p: string[]): string => path.join(work, 'local', ...p);
await mkdir(server(), { recursive: true });
await mkdir(local(), { recursive: true });
await runCli(['--home', a.home, 'pair', 'add', b.id, '--name', 'bob']);
const peerListener = await startListener(a.home, ['--share', `docs=${server()}`]);
t.teardown(() => peerListener.stop('SIGKILL'));
await runCli(['--home', b.home, 'pair', 'add', a.id, '--name', 'alice', '--addr', `127.0.0.1:${peerListener.port}`]);
let own: RunningListener = await startListener(b.home, ['--share', `mine=${local()}`]);
t.teardown(() => own.stop('SIGKILL'));

async function sync(dir: string): Promise<Record<string, unknown>> {
  const r = await runCli(['--home', b.home, 'sync', dir, 'alice:docs', '--json']);
  if (r.code !== 0) throw new Error(`sync exited ${String(r.code)}: ${r.stderr}`);
  const lines = jsonLines(r.stdout);
  const last = lines.at(-1);
  if (last?.['event'] !== 'done') throw new Error(`no done event: ${r.stdout}`);
  return { ...last, lines };
}

/** Syncs until the listener's watcher vouches for the folder (its first scans certify it). */
async function syncUntilUnscanned(): Promise<Record<string, unknown>> {
  for (let i = 0; i < 10; i++) {
    const r = await sync(local());
    if (r['scanned'] === false) return r;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('every sync scanned: the watcher never vouched for the folder');
}

t.test(
  "the listener runs the sync; an unchanged folder is not rescanned, edits and the peer's changes still travel",
  async (t) => {
    await writeFile(local('first.txt'), 'first\n');
    const first = await sync(local());
    t.match(first, { resident: true, scanned: true, inSync: true, revisionsSent: 1 });
    t.equal(await readFile(server('first.txt'), 'utf8'), 'first\n');

    const idle = await syncUntilUnscanned();
    t.match(idle, {
      resident: true,
      scanned: false,
      inSync: true,
      roundTrips: 1,
      revisionsSent: 0,
      revisionsReceived: 0,
    });

    await mkdir(local('sub'), { recursive: true });
    await writeFile(local('sub', 'new.txt'), 'made while the listener watched\n');
    const edited = await sync(local());
    t.match(
      edited,
      { resident: true, scanned: true, inSync: true, revisionsSent: 2 },
      'the edit made the next sync scan',
    );
    const progress = (edited['lines'] as Record<string, unknown>[]).filter((l) => l['event'] === 'progress');
    t.match(progress.at(-1), { phase: 'sending', files: 1, totalFiles: 1 }, "the listener's progress reaches the CLI");
    t.equal(await readFile(server('sub', 'new.txt'), 'utf8'), 'made while the listener watched\n');

    await syncUntilUnscanned();
    await writeFile(server('from-peer.txt'), 'peer side\n');
    const pulled = await sync(local());
    t.match(
      pulled,
      { resident: true, scanned: false, inSync: true, revisionsReceived: 1 },
      "no local change: no scan, the peer's file still arrives",
    );
    t.equal(await readFile(local('from-peer.txt'), 'utf8'), 'peer side\n');
    const after = await sync(local());
    t.match(
      after,
      { scanned: true, inSync: true, revisionsSent: 0 },
      'the file the sync wrote counts as a change: the next sync checks the folder',
    );
  },
);

t.test("without --json the listener's sync prints the usual line; a usage error is the full CLI's", async (t) => {
  const human = await runCli(['--home', b.home, 'sync', local(), 'alice:docs']);
  t.equal(human.code, 0);
  t.match(human.stdout, /^in sync: 0 revisions sent, 0 received, .* \(run by the listener/);
  const bad = await runCli(['--home', b.home, 'sync', local(), 'alice:docs', '--mode', 'both']);
  t.equal(bad.code, 2, 'usage error exit code');
  t.match(bad.stderr, /Choices: "two-way", "send-only", "receive-only"/);
  const watchless = await runCli(['--home', b.home, 'sync', local(), 'alice:docs', '--json', '-v']);
  t.equal(watchless.code, 0, 'a form the fast path declines still syncs through the listener');
  t.match(jsonLines(watchless.stdout).at(-1), { event: 'done', resident: true });
});

t.test(
  "status shows a sync the listener runs for this home by the peer's pair name, though that peer is not connected to it",
  async (t) => {
    await writeFile(local('slow.bin'), randomBytes(1 << 20));
    const syncing = spawn(
      process.execPath,
      [CLI, '--home', b.home, 'sync', local(), 'alice:docs', '--bwlimit', '256', '--mode', 'send-only'],
      { stdio: 'ignore' },
    );
    const ended = new Promise<number | null>((resolve) => syncing.once('exit', resolve));
    t.teardown(() => syncing.kill('SIGKILL'));
    let seen = '';
    for (let i = 0; i < 100 && !/sync with/.test(seen); i++) {
      seen = (await runCli(['--home', b.home, 'status'])).stdout;
      if (!/sync with/.test(seen)) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    t.match(seen, /^ {2}sync with alice of mine: /m, 'named as this home pairs it');
    t.match(seen, /^0 peers connected$/m, 'although no peer is connected to this listener');
    t.equal(await ended, 0);
  },
);

t.test('a folder the listener does not serve is synced by the CLI itself', async (t) => {
  const other = path.join(work, 'other');
  await mkdir(other);
  await writeFile(path.join(other, 'x.txt'), 'x\n');
  const r = await sync(other);
  t.match(r, { resident: false, scanned: true, inSync: true });
  t.ok((await lstat(server('x.txt'))).isFile());
});

t.test('a bad request on the control socket gets an error naming it; the listener keeps serving', async (t) => {
  const ask = (line: string): Promise<string> =>
    new Promise((resolve, reject) => {
      const s = createConnection(path.join(b.home, 'control.sock'));
      let out = '';
      s.setEncoding('utf8');
      s.on('data', (d: string) => (out += d));
      s.on('end', () => resolve(out));
      s.on('error', reject);
      s.write(line);
    });
  t.match(JSON.parse(await ask('not json\n')), { type: 'error', code: 'USAGE', message: /not JSON/ });
  t.match(
    JSON.parse(
      await ask(
        JSON.stringify({
          op: 'sync',
          dir: local(),
          peer: 'alice',
          share: 'docs',
          mode: 'both',
          compression: 'auto',
          progress: false,
        }) + '\n',
      ),
    ),
    { type: 'error', code: 'USAGE', message: /mode/ },
  );
  t.match(
    JSON.parse(
      await ask(
        JSON.stringify({
          op: 'sync',
          dir: local(),
          peer: 'nobody',
          share: 'docs',
          mode: 'two-way',
          compression: 'auto',
          progress: false,
        }) + '\n',
      ),
    ),
    { type: 'error', code: 'PEER_UNKNOWN' },
  );
  t.match(JSON.parse(await ask('x'.repeat(70_000))), { type: 'error', code: 'USAGE', message: /longer than/ });
  t.match(await sync(local()), { resident: true, inSync: true });
});

t.test(
  'a killed listener leaves its socket file: the CLI syncs by itself, and a new listener takes the socket over',
  async (t) => {
    await own.stop('SIGKILL');
    t.ok((await lstat(path.join(b.home, 'control.sock'))).isSocket(), 'the stale socket file is still there');
    await writeFile(local('while-down.txt'), 'no listener\n');
    t.match(await sync(local()), { resident: false, inSync: true, revisionsSent: 1 });
    own = await startListener(b.home, ['--share', `mine=${local()}`]);
    t.match(await sync(local()), { resident: true, inSync: true });
  },
);

t.test("a control connection that never sends its request does not hold up the listener's shutdown", async (t) => {
  const idle = createConnection(path.join(b.home, 'control.sock'));
  await new Promise<void>((resolve, reject) => {
    idle.once('connect', resolve);
    idle.once('error', reject);
  });
  idle.on('error', () => undefined);
  const closedByListener = new Promise<void>((resolve) => idle.once('close', () => resolve()));
  t.equal(await own.stop('SIGINT'), 0, 'SIGINT: clean exit');
  await closedByListener;
  await t.rejects(
    lstat(path.join(b.home, 'control.sock')),
    { code: 'ENOENT' },
    'the socket file is removed on a clean exit',
  );
});
