// The plain fast path (src/cli/plain-fast-path.ts) must hand the push, pull and sync handlers the very
// arguments object yargs builds for the same command line, and decline every form it cannot read
// exactly as yargs does.
import t from 'tap';
import { parsePlainCommand } from '../../src/cli/plain-fast-path.js';
import { yargsArgs } from './yargs-args.js';

t.test('the plain forms of push, pull and sync get the arguments yargs gives', async (t) => {
  const forms: string[][] = [
    ['push', 'tiny', 'recv:s0'],
    ['--home', '/h', 'push', 'a', 'b', 'recv:s0', '-q'],
    ['pull', 'recv:s0/x', '-', '--json'],
    ['push', '-', '12', '0x10', '1e3', 'recv'],
    ['push', '--home=/h', 'a', '--quiet', 'recv:docs/2026'],
    ['push', '--bwlimit', '500', '--connections', '4', 'a', 'b'],
    ['push', '--no-quiet', '--no-update', '-v', '--addr=127.0.0.1:7700', 'a', 'b'],
    ['push', '--no-lan-discovery', 'a', 'b'],
    ['pull', '--lan-discovery', '--transport', 'tcp', '--fsync', 'none', 'recv:s0', 'dir'],
    ['push', '--no-compress', '--force', '--ignore-existing', '-u', '-n', 'a', 'recv'],
    ['push', '--compress', '--update', '--dry-run', '--delete', '--remove-source-files', 'a', 'recv'],
    ['push', '-i', '-b', '-L', '--copy-unsafe-links', 'a', 'recv'],
    ['pull', '--itemize-changes', '--backup', '--copy-links', 'recv:s0', '.'],
    ['push', '--no-force', '--no-delete', '--no-copy-links', '--no-backup', 'a', 'recv'],
    ['--json', 'pull', 'recv:s0/a', 'recv:s0/b', '/tmp/x'],
    ['push', 'a b', 'recv:s0/with space'],
    ['--home', 'push', 'push', 'a', 'recv'],
    ['sync', 'docs', 'alice:share'],
    ['sync', '12', 'alice:share', '--json', '-q', '--home', '/h'],
    ['--home=/h', 'sync', '--mode', 'receive-only', 'docs', 'alice:share', '--no-compress', '--transport=tcp'],
    ['sync', '-n', '--watch', '--addr', '127.0.0.1:7700', '--fsync=none', '--connections', '2', 'd', 'a:s'],
    ['sync', '--dry-run', '--no-watch', '--bwlimit', '1MiB', '--compress', '-v', '--no-lan-discovery', 'd', 'a:s'],
  ];
  for (const argv of forms) {
    const fast = parsePlainCommand(argv);
    t.ok(fast, `read: ${argv.join(' ')}`);
    t.equal(
      fast?.command,
      argv.find((w) => w === 'push' || w === 'pull' || w === 'sync'),
    );
    t.same(fast?.args, await yargsArgs(argv), argv.join(' '));
    t.strictSame(fast?.args, await yargsArgs(argv), argv.join(' '));
  }
});

t.test('anything else is left to the full CLI', async (t) => {
  const declined: string[][] = [
    ['push'],
    ['push', '--help'],
    ['push', 'a', 'recv', '--version'],
    ['push', '-nq', 'a', 'recv'],
    ['push', '-vv', 'a', 'recv'],
    ['push', '--force', 'true', 'a', 'recv'],
    ['push', '--force=true', 'a', 'recv'],
    ['push', '--force', '--force', 'a', 'recv'],
    ['push', '-q', '--quiet', 'a', 'recv'],
    ['push', '--streams', '8', 'a', 'recv'],
    ['push', '--exclude', '*.log', 'a', 'recv'],
    ['push', '--transport', 'udp', 'a', 'recv'],
    ['push', '--addr', 'a', 'recv', '--addr', 'b'],
    ['push', '--home', '--json', 'a', 'recv'],
    ['push', '--addr'],
    ['push', '--addr=', 'a', 'recv'],
    ['push', '--', 'a', 'recv'],
    ['push', '-x', 'a', 'recv'],
    ['push', '', 'recv'],
    ['push', '--no-addr', 'a', 'recv'],
    ['--rendezvous', 'h:1', 'push', 'a', 'recv'],
    ['sync', 'a', 'recv:s0', 'x'],
    ['sync', 'a'],
    ['sync', 'a', 'recv:s0', '--interval', '5'],
    ['sync', 'a', 'recv:s0', '--mode', 'both'],
    ['sync', 'a', 'recv:s0', '--force'],
    ['push', 'a', 'recv', '--mode', 'two-way'],
    ['--addr', 'x', 'push', 'a', 'recv'],
    ['ls', 'push', 'pull'],
    ['--json'],
    [],
  ];
  for (const argv of declined) t.equal(parsePlainCommand(argv), undefined, argv.join(' '));
});
