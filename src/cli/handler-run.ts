// A command plain-fast-path.ts read, run as main.ts runs a yargs handler: its context, error
// report and exit code, and (for what escapes that) the report main makes after the parse.
import { EXIT_CODES, type ExitCode } from '../errors.js';
import { interruptionOf, makeContext, withInterrupt, type CommandContext } from './context.js';
import { Output, reportError } from './output.js';

export function runHandler(
  argv: readonly string[],
  args: Record<string, unknown>,
  handler: (ctx: CommandContext, args: Record<string, unknown>) => Promise<void>,
): Promise<ExitCode> {
  return withInterrupt(async (signal) => {
    try {
      const ctx = makeContext(args, signal, argv);
      try {
        await handler(ctx, args);
      } catch (err) {
        return reportError(interruptionOf(signal, err), ctx.out);
      }
      return EXIT_CODES.ok;
    } catch (err) {
      const json = argv.includes('--json');
      const exitCode = reportError(err, new Output(json));
      if (exitCode === EXIT_CODES.usage && !json) process.stderr.write('run `clawpeer --help` for usage\n');
      return exitCode;
    }
  });
}
