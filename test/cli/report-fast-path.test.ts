// The plain fast path (src/cli/plain-fast-path.ts) runs status, id, pair list, folder list,
// folder log and ls without yargs: their handlers must get the very arguments object yargs
// builds for the same command line, and every form it cannot read exactly as yargs does must be
// left to the full CLI.
import t from 'tap';
import { parsePlainCommand } from '../../src/cli/plain-fast-path.js';
import { yargsArgs } from './yargs-args.js';

t.test('the plain forms of the commands that report get the arguments yargs gives', async (t) => {
  const forms: [string, string[]][] = [
    ['status', ['status']],
    ['status', ['--home', '/h', 'status', '--json']],
    ['status', ['status', '-q', '-v', '--no-lan-discovery']],
    ['status', ['--home=/h', 'status', '--quiet', '--lan-discovery']],
    ['id', ['id']],
    ['id', ['--json', 'id', '--home', '/h']],
    ['id', ['id', '--no-json']],
    ['pair list', ['pair', 'list']],
    ['pair list', ['--home', '/h', 'pair', 'list', '--json']],
    ['pair list', ['pair', '--json', 'list', '-v']],
    ['pair list', ['--home', 'pair', 'pair', 'list']],
    ['folder list', ['folder', 'list']],
    ['folder list', ['folder', 'list', '--json', '-q', '--home=/h']],
    ['folder log', ['folder', 'log', 'docs']],
    ['folder log', ['--json', 'folder', 'log', '12']],
    ['folder log', ['folder', 'log', '0x10', '--home', '/h', '-v']],
    ['folder log', ['folder', 'log', 'with space']],
    ['ls', ['ls', 'bob']],
    ['ls', ['ls', 'bob:s0', '--json']],
    ['ls', ['ls', 'bob:s0/a/b', '-r']],
    ['ls', ['ls', '--recursive', 'bob:docs/2026', '--home', '/h', '-q']],
    ['ls', ['ls', 'bob:s0', '--no-recursive', '--addr', '127.0.0.1:7700', '--transport', 'tcp']],
    ['ls', ['ls', '--addr=[::1]:7700', '--transport=quic', 'bob:s0', '-v', '--no-lan-discovery']],
    ['ls', ['ls', '12']],
    ['ls', ['ls', '-']],
  ];
  for (const [command, argv] of forms) {
    const fast = parsePlainCommand(argv);
    t.ok(fast, `read: ${argv.join(' ')}`);
    t.equal(fast?.command, command, argv.join(' '));
    t.strictSame(fast?.args, await yargsArgs(argv), argv.join(' '));
  }
});

t.test('any other form of them is left to the full CLI', async (t) => {
  const declined: string[][] = [
    ['status', 'extra'],
    ['status', '--help'],
    ['status', '--version'],
    ['status', '--json', '--json'],
    ['status', '-qv'],
    ['status', '-vv'],
    ['status', '--json=true'],
    ['status', '--json', 'true'],
    ['status', '--addr', 'x'],
    ['--rendezvous', 'h:1', 'status'],
    ['status', '--'],
    ['id', 'x'],
    ['id', '-r'],
    ['pair'],
    ['pair', 'list', 'x'],
    ['pair', 'add', 'ID', '--name', 'bob'],
    ['pair', 'remove', 'bob'],
    ['pair', 'list', '--addr', 'x'],
    ['folder'],
    ['folder', 'log'],
    ['folder', 'log', 'a', 'b'],
    ['folder', 'log', '-x'],
    ['folder', 'list', '--id', 'x'],
    ['folder', 'add', 'dir', '--id', 'x', '--with', 'bob'],
    ['folder', 'pause', 'docs'],
    ['folder', 'revert', 'docs', '--dry-run'],
    ['ls'],
    ['ls', 'a', 'b'],
    ['ls', ''],
    ['ls', 'bob', '-rq'],
    ['ls', 'bob', '--transport', 'udp'],
    ['ls', 'bob', '--addr'],
    ['ls', 'bob', '--addr', '-r'],
    ['ls', 'bob', '-r', '--recursive'],
    ['ls', 'bob', '--recursive=false'],
    ['ls', 'bob', '--no-addr'],
    ['ls', 'bob', '--rendezvous', 'h:1'],
    ['list', 'bob'],
    ['--json', 'pair'],
  ];
  for (const argv of declined) t.equal(parsePlainCommand(argv), undefined, argv.join(' '));
});
