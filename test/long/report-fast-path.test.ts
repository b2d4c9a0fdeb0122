// status, id, pair list, folder list, folder log and ls run without yargs (plain-fast-path.ts):
// each prints the same stdout and stderr, with the same exit code, as the full CLI
// (CLAWPEER_NO_FAST_PATH=1), in text and --json, on success and on error.
import t, { type Test } from 'tap';
import { mkdir, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parsePlainCommand } from '../../src/cli/plain-fast-path.js';
import { initNode, pairAdd, runCli, startListener, type CliResult } from '../e2e/cli-harness.js';

const me = await initNode('report-fast');
const bob = await initNode('report-fast-bob');
const share = path.join(bob.home, 's0');
await mkdir(path.join(share, 'sub'), { recursive: true });
for (const [name, text] of [
  ['a.txt', 'a\n'],
  ['sub/b.txt', 'bb\n'],
]) {
  await writeFile(path.join(share, name!), text!);
  await utimes(path.join(share, name!), 1_700_000_000, 1_700_000_000);
}
await pairAdd(bob.home, me.id, 'me');
const listener = await startListener(bob.home, ['--share', `s0=${share}`]);
t.teardown(() => listener.stop('SIGKILL'));
await pairAdd(me.home, bob.id, 'bob', `127.0.0.1:${listener.port}`);
const added = await runCli([
  '--home',
  me.home,
  'folder',
  'add',
  path.join(me.home, 'docs'),
  '--id',
  'docs',
  '--with',
  'bob',
]);
if (added.code !== 0) throw new Error(`folder add failed: ${added.stderr}`);

/** The clock's part of status (how long the listener has been up): all else must match. */
const timeless = (r: CliResult): CliResult => ({
  ...r,
  stdout: r.stdout.replace(/, up [^\n]*/, ', up T').replace(/"uptimeSeconds":\d+/, '"uptimeSeconds":T'),
});

async function bothWays(t: Test, argv: string[]): Promise<void> {
  t.ok(parsePlainCommand(argv), `the fast path takes ${argv.slice(2).join(' ')}`);
  const fast = await runCli(argv);
  const full = await runCli(argv, { env: { CLAWPEER_NO_FAST_PATH: '1' } });
  t.strictSame(timeless(fast), timeless(full), argv.slice(2).join(' '));
}

// Before any ls: the listener's peers (what status and pair list show) do not change meanwhile.
t.test('the listener home: status and pair list', async (t) => {
  for (const extra of [[], ['--json']]) {
    await bothWays(t, ['--home', bob.home, 'status', ...extra]);
    await bothWays(t, ['--home', bob.home, 'pair', 'list', ...extra]);
  }
});

t.test('a home without a listener: id, pair list, folder list and log, status (an error)', async (t) => {
  for (const extra of [[], ['--json']]) {
    await bothWays(t, ['--home', me.home, 'id', ...extra]);
    await bothWays(t, ['--home', me.home, 'pair', 'list', ...extra]);
    await bothWays(t, ['--home', me.home, 'folder', 'list', ...extra]);
    await bothWays(t, ['--home', me.home, 'folder', 'log', 'docs', ...extra]);
    await bothWays(t, ['--home', me.home, 'folder', 'log', 'nope', ...extra]);
    await bothWays(t, ['--home', me.home, 'status', ...extra]);
  }
});

t.test('ls of a peer, a share, and recursively', async (t) => {
  await bothWays(t, ['--home', me.home, 'ls', 'bob']);
  await bothWays(t, ['--home', me.home, 'ls', 'bob:s0', '--json']);
  await bothWays(t, ['--home', me.home, 'ls', 'bob:s0', '-r']);
  await bothWays(t, ['--home', me.home, 'ls', 'bob:nope']);
});
