// clawpeer's command line: parses options with yargs, runs one command, maps errors to the
// exit-code table in src/errors.ts. The only module (with output.ts) that prints.
import { readFileSync } from 'node:fs';
import yargs, { type Argv } from 'yargs';
import { ClawpeerError, EXIT_CODES, type ExitCode } from '../errors.js';
import { interruptionOf, makeContext, withInterrupt, type CommandContext, type Runner } from './context.js';
import { Output, reportError } from './output.js';
import { suggestOptions, toYargsWord } from './args.js';
type Register = (cli: Argv, run: Runner) => Argv;

// Command modules by the commands they register. A run imports only the module of the command
// it names (every module for --help, --version, no command or an unknown one): importing all
// of them cost ~190 ms of every start, most of it in modules the command never calls (lmdb for a
// push, the relay and bench code for a sync).
const identity = (): Promise<Register> => import('./commands/identity.js').then((m) => m.registerIdentityCommands);
const pair = (): Promise<Register> => import('./commands/pair.js').then((m) => m.registerPairCommands);
const network = (): Promise<Register> => import('./commands/network.js').then((m) => m.registerNetworkCommands);
const transfer = (): Promise<Register> => import('./commands/transfer.js').then((m) => m.registerTransferCommands);
const relay = (): Promise<Register> => import('./commands/relay.js').then((m) => m.registerRelayCommands);
const sync = (): Promise<Register> => import('./commands/sync.js').then((m) => m.registerSyncCommands);
const history = (): Promise<Register> => import('./commands/history.js').then((m) => m.registerHistoryCommands);
const doctor = (): Promise<Register> => import('./commands/doctor.js').then((m) => m.registerDoctorCommands);
const bench = (): Promise<Register> => import('./commands/bench.js').then((m) => m.registerBenchCommands);
const status = (): Promise<Register> => import('./commands/status.js').then((m) => m.registerStatusCommands);
const list = (): Promise<Register> => import('./commands/list.js').then((m) => m.registerListCommands);
const rendezvous = (): Promise<Register> =>
  import('./commands/rendezvous.js').then((m) => m.registerRendezvousCommands);
const folder = (): Promise<Register> => import('./commands/folder.js').then((m) => m.registerFolderCommands);
const sendReceive = (): Promise<Register> =>
  import('./commands/send-receive.js').then((m) => m.registerSendReceiveCommands);
const ALL_MODULES = [
  identity,
  pair,
  network,
  status,
  transfer,
  sendReceive,
  list,
  relay,
  rendezvous,
  sync,
  folder,
  history,
  doctor,
  bench,
];
const MODULE_OF_COMMAND: ReadonlyMap<string, () => Promise<Register>> = new Map([
  ['init', identity],
  ['id', identity],
  ['pair', pair],
  ['listen', network],
  ['ping', network],
  ['push', transfer],
  ['pull', transfer],
  ['send', sendReceive],
  ['receive', sendReceive],
  ['relay', relay],
  ['sync', sync],
  ['log', history],
  ['restore', history],
  ['gc', history],
  ['doctor', doctor],
  ['bench', bench],
  ['status', status],
  ['ls', list],
  ['rendezvous', rendezvous],
  ['folder', folder],
]);
/** Global options that take a value (the word after them is not the command). */
const GLOBAL_VALUE_OPTIONS = new Set(['--home', '--rendezvous']);

/** The command word of `argv` (the first word that is neither an option nor an option's value). */
export function commandWord(argv: readonly string[]): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') return undefined;
    if (GLOBAL_VALUE_OPTIONS.has(a)) i++;
    else if (!a.startsWith('-')) return a;
  }
  return undefined;
}

/**
 * The registration functions `argv` needs: its command's module, none for a bare `--version`
 * (yargs prints the version before it looks at any command: the thirteen modules cost ~0.1
 * CPU-s of it), or all of them.
 */
export async function registrationsFor(argv: readonly string[]): Promise<Register[]> {
  if (argv.length === 1 && argv[0] === '--version') return [];
  const word = commandWord(argv);
  const one = word === undefined ? undefined : MODULE_OF_COMMAND.get(word);
  return Promise.all((one === undefined ? ALL_MODULES : [one]).map((load) => load()));
}

const VERSION = (
  JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

export function main(argv: readonly string[]): Promise<ExitCode> {
  return withInterrupt((signal) => runCli(argv, signal));
}

async function runCli(argv: readonly string[], signal: AbortSignal): Promise<ExitCode> {
  let exitCode: ExitCode = EXIT_CODES.ok;
  const json = argv.includes('--json');

  // Each handler runs inside this wrapper: it builds the context and records the exit code.
  const run =
    (fn: (ctx: CommandContext, args: Record<string, unknown>) => Promise<void>) =>
    async (args: Record<string, unknown>): Promise<void> => {
      const ctx = makeContext(args, signal, argv);
      try {
        await fn(ctx, args);
      } catch (err) {
        exitCode = reportError(interruptionOf(signal, err), ctx.out);
      }
    };

  const cli = await buildCli(argv, run);
  try {
    await cli.parseAsync();
  } catch (err) {
    exitCode = reportError(err, new Output(json));
    if (exitCode === EXIT_CODES.usage && !json) process.stderr.write('run `clawpeer --help` for usage\n');
  }
  return exitCode;
}

/** The yargs instance `argv` runs with: the global options and the commands it needs (registrationsFor). */
export async function buildCli(argv: readonly string[], run: Runner): Promise<Argv> {
  // The command's module loads (its file is read off the thread pool) while yargs is set up.
  const registering = registrationsFor(argv);
  let cli: Argv = yargs(argv.map(toYargsWord))
    .scriptName('clawpeer')
    .usage(
      "$0 <command> [options]\n\nPeer-to-peer file transfer and sync between machines that pin each other's keys, over QUIC.",
    )
    .option('home', {
      type: 'string',
      global: true,
      describe: 'state directory (default: $CLAWPEER_HOME or the platform config dir)',
    })
    .option('json', { type: 'boolean', global: true, describe: 'machine output: one JSON object per line on stdout' })
    .option('v', { type: 'count', global: true, describe: 'more logging on stderr (repeatable)' })
    .option('rendezvous', {
      type: 'string',
      global: true,
      requiresArg: true,
      describe:
        'HOST:PORT of a rendezvous server to find peers and relay through (overrides "rendezvous" in the home\'s config.json; default none)',
    })
    .option('lan-discovery', {
      type: 'boolean',
      global: true,
      describe: 'find paired peers on the local network and answer their queries (default on; --no-lan-discovery: off)',
    })
    .option('quiet', {
      alias: 'q',
      type: 'boolean',
      global: true,
      describe:
        'errors only: no progress, summaries or warnings (push, pull, sync; rsync -q); --json output is unchanged',
    })
    .version(VERSION)
    .completion('completion', 'print a bash/zsh completion script: clawpeer completion >> ~/.bashrc (zsh: ~/.zshrc)')
    .alias('h', 'help')
    .strict()
    .demandCommand(1, 'name a command (see --help)')
    .recommendCommands()
    .exitProcess(false)
    .fail((message: string | undefined, err: Error | undefined) => {
      if (err instanceof ClawpeerError) throw err;
      const text = message === undefined ? undefined : suggestOptions(message, knownOptions(cli), argv);
      throw new ClawpeerError(
        'USAGE',
        text ?? err?.message ?? 'invalid usage',
        err === undefined ? undefined : { cause: err },
      );
    })
    .wrap(Math.min(100, process.stdout.columns ?? 100));
  for (const register of await registering) cli = register(cli, run);
  skipHelpCache(cli);
  return cli;
}

/** The option names yargs knows at this point of the parse (the command's too, once it is entered). */
function knownOptions(cli: Argv): string[] {
  // getOptions() is in yargs' instance, not in its typings (the version is pinned).
  const options = (cli as unknown as { getOptions?: () => { key?: Record<string, unknown> } }).getOptions?.();
  return Object.keys(options?.key ?? {});
}

/**
 * yargs renders the whole help text right after it starts a command's handler, to show it if
 * the handler fails later. Our handlers report their own errors, and the render (the width of
 * every row of every command) took ~30 ms of every command's start, in the middle of its first
 * network wait. `--help` still renders on demand. Internal yargs API (the version is pinned):
 * if it is not there, nothing changes.
 */
export function skipHelpCache(cli: Argv): void {
  type Usage = { cacheHelpMessage?: () => void };
  const internal = (
    cli as unknown as { getInternalMethods?: () => { getUsageInstance?: () => Usage } }
  ).getInternalMethods?.();
  const usage = internal?.getUsageInstance?.();
  if (typeof usage?.cacheHelpMessage === 'function') usage.cacheHelpMessage = () => undefined;
}
