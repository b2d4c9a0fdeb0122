// Runs `clawpeer bench` as a process, for the end-to-end test: through the real CLI main once it
// registers the bench command, otherwise through a minimal yargs front end with the same global
// options and the same error-to-exit-code mapping as src/cli/main.ts.
import { readFile } from 'node:fs/promises';
import yargs from 'yargs';
import { registerBenchCommands } from '../../src/cli/commands/bench.js';
import { makeContext, type CommandContext, type GlobalOptions } from '../../src/cli/context.js';
import { Output } from '../../src/cli/output.js';
import { ClawpeerError, EXIT_CODES, type ExitCode } from '../../src/errors.js';

const MAIN_URL = new URL('../../src/cli/main.js', import.meta.url);

function report(err: unknown, out: Output): ExitCode {
  if (err instanceof ClawpeerError) {
    out.error(err.code, err.message, err.exitCode);
    return err.exitCode;
  }
  out.error('INTERNAL', err instanceof Error ? (err.stack ?? err.message) : String(err), EXIT_CODES.failure);
  return EXIT_CODES.failure;
}

async function localMain(argv: readonly string[]): Promise<ExitCode> {
  let code: ExitCode = EXIT_CODES.ok;
  const abort = new AbortController();
  const run = (fn: (ctx: CommandContext, args: Record<string, unknown>) => Promise<void>) => async (args: Record<string, unknown>): Promise<void> => {
    const ctx = makeContext(args as GlobalOptions, abort.signal);
    try {
      await fn(ctx, args);
    } catch (err) {
      code = report(err, ctx.out);
    }
  };
  const cli = yargs([...argv])
    .scriptName('clawpeer')
    .option('home', { type: 'string', global: true })
    .option('json', { type: 'boolean', global: true })
    .option('v', { type: 'count', global: true })
    .strict()
    .demandCommand(1)
    .exitProcess(false)
    .fail((message: string | undefined, err: Error | undefined) => {
      if (err instanceof ClawpeerError) throw err;
      throw new ClawpeerError('USAGE', message ?? err?.message ?? 'invalid usage');
    });
  try {
    await registerBenchCommands(cli, run).parseAsync();
  } catch (err) {
    code = report(err, new Output(argv.includes('--json')));
  }
  return code;
}

const argv = process.argv.slice(2);
const mainText = await readFile(MAIN_URL, 'utf8').catch(() => '');
if (mainText.includes('registerBenchCommands')) {
  const { main } = (await import(MAIN_URL.href)) as { main: (a: readonly string[]) => Promise<ExitCode> };
  process.exitCode = await main(argv);
} else {
  process.exitCode = await localMain(argv);
}
