// main.ts loads only the module of the command a run names; these check which one it picks.
import t from 'tap';
import yargs, { type Argv } from 'yargs';
import { commandWord, registrationsFor, skipHelpCache } from '../../src/cli/main.js';

t.test('commandWord skips options and the values of global options', async (t) => {
  t.equal(commandWord(['sync', 'dir', 'peer:share']), 'sync');
  t.equal(commandWord(['--home', '/tmp/h', 'push', 'a', 'b:c']), 'push', '--home takes the next word');
  t.equal(
    commandWord(['--rendezvous', '203.0.113.5:7800', '--no-lan-discovery', 'listen']),
    'listen',
    '--rendezvous takes the next word',
  );
  t.equal(commandWord(['--home=/tmp/h', '--json', '-vv', 'pull', 'b:c', 'a']), 'pull');
  t.equal(commandWord(['--json']), undefined);
  t.equal(commandWord(['--help']), undefined);
  t.equal(commandWord(['--', 'sync']), undefined, 'nothing after -- is a command');
});

t.test('a known command loads one module; help and typos load all of them, a bare --version none', async (t) => {
  t.equal((await registrationsFor(['sync', 'd', 'p:s'])).length, 1);
  const [logModule] = await registrationsFor(['log', 'd']);
  const [restoreModule] = await registrationsFor(['restore', 'x']);
  const [syncModule] = await registrationsFor(['sync', 'd', 'p:s']);
  t.equal(logModule, restoreModule, 'log and restore live in the history module');
  t.not(logModule, syncModule, 'sync does not load the history commands');
  const all = await registrationsFor(['--help']);
  t.equal(all.length, 14);
  t.equal(new Set(all).size, 14, 'fourteen different modules');
  t.equal((await registrationsFor(['--version'])).length, 0, 'a bare --version needs no command');
  t.equal((await registrationsFor(['--version', '--json'])).length, 14);
  t.equal((await registrationsFor(['synk', 'd'])).length, 14, 'a typo gets every command, so yargs can suggest one');
  t.ok(all.includes(restoreModule!), 'the one module is one of the fourteen');
});

t.test('running a command does not render the help text; asking for help still does', async (t) => {
  const build = (): { cli: Argv; renders: () => number } => {
    const cli = yargs(['hello'])
      .scriptName('x')
      .command(
        'hello',
        'says hello',
        () => undefined,
        async () => undefined,
      )
      .exitProcess(false);
    const usage = (cli as unknown as { getInternalMethods: () => { getUsageInstance: () => { help: () => string } } })
      .getInternalMethods()
      .getUsageInstance();
    const help = usage.help.bind(usage);
    let n = 0;
    usage.help = () => {
      n++;
      return help();
    };
    return { cli, renders: () => n };
  };
  const plain = build();
  await plain.cli.parseAsync();
  t.equal(plain.renders(), 1, 'yargs on its own renders the help after starting the handler');
  const skipped = build();
  skipHelpCache(skipped.cli);
  await skipped.cli.parseAsync();
  t.equal(skipped.renders(), 0, 'with skipHelpCache it does not');
  t.match(await skipped.cli.getHelp(), /says hello/, 'the help still renders on demand');
});
