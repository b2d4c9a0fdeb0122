// clawpeer's command line: parses options with yargs, runs one command, maps errors to the
// exit-code table in src/errors.ts. The only module (with output.ts) that prints.
import { readFileSync } from 'node:fs';
import yargs, { type Argv } from 'yargs';
import { ClawpeerError, EXIT_CODES, type ExitCode } from '../errors.js';
import { makeContext, type CommandContext, type GlobalOptions } from './context.js';
import { Output } from './output.js';
import { registerIdentityCommands } from './commands/identity.js';
import { registerPairCommands } from './commands/pair.js';
import { registerNetworkCommands } from './commands/network.js';
import { registerTransferCommands } from './commands/transfer.js';
import { registerRelayCommands } from './commands/relay.js';
import { registerSyncCommands } from './commands/sync.js';
import { registerDoctorCommands } from './commands/doctor.js';
import { registerBenchCommands } from './commands/bench.js';

const VERSION = (JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

export async function main(argv: readonly string[]): Promise<ExitCode> {
  const abort = new AbortController();
  const onSignal = (): void => abort.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  let exitCode: ExitCode = EXIT_CODES.ok;
  const json = argv.includes('--json');

  // Each handler runs inside this wrapper: it builds the context and records the exit code.
  const run = (fn: (ctx: CommandContext, args: Record<string, unknown>) => Promise<void>) => async (args: Record<string, unknown>): Promise<void> => {
    const ctx = makeContext(args as GlobalOptions, abort.signal);
    try {
      await fn(ctx, args);
    } catch (err) {
      exitCode = reportError(err, ctx.out);
    }
  };

  let cli: Argv = yargs([...argv])
    .scriptName('clawpeer')
    .usage('$0 <command> [options]\n\nPeer-to-peer file transfer and sync between machines that pin each other\'s keys, over QUIC.')
    .option('home', { type: 'string', global: true, describe: 'state directory (default: $CLAWPEER_HOME or the platform config dir)' })
    .option('json', { type: 'boolean', global: true, describe: 'machine output: one JSON object per line on stdout' })
    .option('v', { type: 'count', global: true, describe: 'more logging on stderr (repeatable)' })
    .version(VERSION)
    .alias('h', 'help')
    .strict()
    .demandCommand(1, 'name a command (see --help)')
    .recommendCommands()
    .exitProcess(false)
    .fail((message: string | undefined, err: Error | undefined) => {
      if (err instanceof ClawpeerError) throw err;
      throw new ClawpeerError('USAGE', message ?? err?.message ?? 'invalid usage', err === undefined ? undefined : { cause: err });
    })
    .wrap(Math.min(100, process.stdout.columns ?? 100));
  cli = registerIdentityCommands(cli, run);
  cli = registerPairCommands(cli, run);
  cli = registerNetworkCommands(cli, run);
  cli = registerTransferCommands(cli, run);
  cli = registerRelayCommands(cli, run);
  cli = registerSyncCommands(cli, run);
  cli = registerDoctorCommands(cli, run);
  cli = registerBenchCommands(cli, run);

  try {
    await cli.parseAsync();
  } catch (err) {
    exitCode = reportError(err, new Output(json));
    if (exitCode === EXIT_CODES.usage && !json) process.stderr.write('run `clawpeer --help` for usage\n');
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  return exitCode;
}

function reportError(err: unknown, out: Output): ExitCode {
  if (err instanceof ClawpeerError) {
    out.error(err.code, err.message, err.exitCode);
    return err.exitCode;
  }
  // A bug, not an expected failure: show the stack so it gets reported and fixed.
  out.error('INTERNAL', err instanceof Error ? (err.stack ?? err.message) : String(err), EXIT_CODES.failure);
  return EXIT_CODES.failure;
}
