// The CLI's own documentation: the shell completion yargs generates, the man page generated from
// the commands' --help (scripts/gen-man.mjs), and the examples in push's and sync's --help.
import t from 'tap';
import { readFile } from 'node:fs/promises';
import { runCli } from './cli-harness.js';

const MAN = new URL('../../../man/clawpeer.1', import.meta.url);

/** The section of the man page for one command (from its .SS line to the next). */
function manSection(page: string, command: string): string {
  return page.split('\n.SS ').find((s) => s.startsWith(`${command}\n`)) ?? '';
}

t.test('clawpeer completion prints a bash/zsh script, and the CLI answers its completion queries', async (t) => {
  const script = await runCli(['completion']);
  t.equal(script.code, 0, script.stderr);
  t.match(script.stdout, /clawpeer --get-yargs-completions/);
  const words = (await runCli(['--get-yargs-completions', 'clawpeer', 'pu'])).stdout.split('\n');
  t.ok(words.includes('push') && words.includes('pull'), 'commands complete');
  const flags = (await runCli(['--get-yargs-completions', 'clawpeer', 'push', '--dr'])).stdout.split('\n');
  t.ok(flags.includes('--dry-run'), "a command's options complete");
});

t.test('the man page has a section for every command, with every option of its --help', async (t) => {
  const page = await readFile(MAN, 'utf8');
  t.match(page, /^\.TH CLAWPEER 1 /);
  const top = (await runCli(['--help'])).stdout;
  const commands = [...top.matchAll(/^ {2}clawpeer ([a-z-]+)/gm)].map((m) => m[1]!).filter((c) => c !== 'completion');
  t.ok(commands.length >= 15, `${commands.length} commands in --help`);
  for (const c of commands)
    t.not(manSection(page, c), '', `man page section for ${c} (run \`npm run man\` after changing a command)`);
  const pushHelp = (await runCli(['push', '--help'])).stdout;
  const pushMan = manSection(page, 'push');
  for (const [flag] of pushHelp.matchAll(/--[a-z][a-z0-9-]+/g))
    t.ok(pushMan.includes(flag), `push's ${flag} is in the man page`);
});

t.test('--help of push and sync shows examples', async (t) => {
  const push = (await runCli(['push', '--help'])).stdout;
  t.match(push, /Examples:\n {2}clawpeer push \.\/photos alice /);
  const sync = (await runCli(['sync', '--help'])).stdout;
  t.match(sync, /Examples:\n {2}clawpeer sync ~\/docs alice:docs /);
  t.match(sync, /--watch ~\/docs alice:docs/);
});
