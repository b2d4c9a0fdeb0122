// Ctrl-C (SIGINT) and SIGTERM in the middle of a push or a pull, through the real CLI: the
// command says it was interrupted and that a rerun resumes, exits 130 / 143 as a shell reports a
// signal, tells the peer first (the listener logs the interruption, not a broken stream), leaves
// nothing at a final path, and the rerun sends only what is missing.
import t from 'tap';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { CLI, initNode, jsonLines, runCli, startListener } from './cli-harness.js';
import { snapshot } from './tree-helpers.js';

const FILE_BYTES = 16 << 20;
const a = await initNode('ia');
const b = await initNode('ib');
const work = await mkdtemp(path.join(tmpdir(), 'clawpeer-interrupt-'));
const inbox = path.join(work, 'inbox');
await runCli(['--home', a.home, 'pair', 'add', b.id, '--name', 'bob']);
// -v: the listener's info lines (where an interruption is told) go to its stderr.
const listener = await startListener(a.home, ['-v', '--share', `inbox=${inbox}`]);
t.teardown(() => listener.stop('SIGKILL'));
await runCli(['--home', b.home, 'pair', 'add', a.id, '--name', 'alice', '--addr', `127.0.0.1:${listener.port}`]);

const doneOf = (stdout: string): Record<string, unknown> | undefined =>
  jsonLines(stdout).find((l) => l['event'] === 'done');

/** Runs the CLI capped at 2 MiB/s and sends `signal` once more than 2 MiB have moved. */
async function interrupted(
  args: readonly string[],
  signal: NodeJS.Signals,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI, '--home', b.home, ...args, '--json', '--bwlimit', '2MiB'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
  await new Promise<void>((resolve) => {
    createInterface({ input: child.stdout }).on('line', (line) => {
      stdout += `${line}\n`;
      const e = JSON.parse(line) as Record<string, unknown>;
      if (
        e['event'] === 'progress' &&
        (e['phase'] === 'sending' || e['phase'] === 'receiving') &&
        (e['bytes'] as number) > 2 << 20
      )
        resolve();
    });
    void closed.then(() => resolve());
  });
  child.kill(signal);
  const code = await closed;
  return { code, stdout, stderr };
}

/** Polls the listener's log for `pattern`, up to 20 s (its line can lag on a loaded machine). */
async function listenerSays(pattern: RegExp): Promise<boolean> {
  for (let i = 0; i < 200; i++) {
    if (pattern.test(listener.stderr())) return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

t.test('SIGINT stops a push: exit 130, the listener told why, nothing published, and the rerun resumes', async (t) => {
  const src = path.join(work, 'up');
  await mkdir(src);
  await writeFile(path.join(src, 'big.bin'), randomBytes(FILE_BYTES));
  const r = await interrupted(['push', src, 'alice'], 'SIGINT');
  t.equal(r.code, 130, r.stderr);
  const error = jsonLines(r.stdout).find((l) => l['event'] === 'error');
  t.match(error, { code: 'INTERRUPTED', exitCode: 130 });
  t.match(
    String(error?.['message']),
    /^push interrupted \(SIGINT\): what the peer received is kept; run the same command again to send the rest$/,
  );
  t.notMatch(r.stderr, /WARN|aborted/, 'one message, not the aborts it caused inside');
  t.ok(
    await listenerSays(/peer stopped .*reason=peer: the push was interrupted \(SIGINT\) on the other side/),
    `listener log: ${listener.stderr().slice(-600)}`,
  );
  t.notMatch(listener.stderr(), /peer session failed/, 'not logged as a failure of the peer');
  t.same(
    (await readdir(path.join(inbox, 'up')).catch(() => [] as string[])).filter((n) => !n.startsWith('.clawpeer')),
    [],
    'nothing at a final path',
  );
  const rerun = await runCli(['--home', b.home, 'push', src, 'alice', '--json']);
  t.equal(rerun.code, 0, rerun.stderr);
  t.ok((doneOf(rerun.stdout)?.['chunksSkipped'] as number) > 0, 'the rerun skipped what had arrived');
  t.same(await snapshot(path.join(inbox, 'up')), await snapshot(src));
});

t.test('SIGTERM stops a pull: exit 143, said so, and the rerun fetches only the rest', async (t) => {
  const local = path.join(work, 'down');
  const r = await interrupted(['pull', 'alice:inbox/up/big.bin', local], 'SIGTERM');
  t.equal(r.code, 143, r.stderr);
  t.match(
    jsonLines(r.stdout).find((l) => l['event'] === 'error'),
    {
      code: 'TERMINATED',
      exitCode: 143,
      message: /^pull terminated \(SIGTERM\): what arrived is kept; run the same command again to fetch the rest$/,
    },
  );
  t.ok(
    await listenerSays(/peer stopped .*reason=peer: the pull was terminated \(SIGTERM\) on the other side/),
    `listener log: ${listener.stderr().slice(-600)}`,
  );
  t.same(
    (await readdir(local).catch(() => [] as string[])).filter((n) => !n.startsWith('.clawpeer')),
    [],
    'nothing at a final path',
  );
  const rerun = await runCli(['--home', b.home, 'pull', 'alice:inbox/up/big.bin', local, '--json']);
  t.equal(rerun.code, 0, rerun.stderr);
  t.ok((doneOf(rerun.stdout)?.['chunksSkipped'] as number) > 0, 'the rerun skipped what had arrived');
  t.same(await snapshot(local), await snapshot(path.join(inbox, 'up')));
});

t.test('SIGINT stops a sync: exit 130, and the listener is told it was interrupted', async (t) => {
  const folder = path.join(work, 'synced');
  await mkdir(folder);
  await writeFile(path.join(folder, 'fresh.bin'), randomBytes(FILE_BYTES));
  const r = await interrupted(['sync', folder, 'alice:inbox'], 'SIGINT');
  t.equal(r.code, 130, r.stderr);
  t.match(
    jsonLines(r.stdout).find((l) => l['event'] === 'error'),
    { code: 'INTERRUPTED', message: 'interrupted (SIGINT)' },
  );
  t.ok(
    await listenerSays(/peer stopped .*reason=peer: the sync was interrupted \(SIGINT\) on the other side/),
    `listener log: ${listener.stderr().slice(-600)}`,
  );
  t.notMatch(listener.stderr(), /peer session failed/);
});
