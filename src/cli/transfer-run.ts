// A push or pull that transfer-fast-path.ts read, run as main.ts runs its handler: the context,
// the handler (commands/transfer.ts), the error report and the exit code are main's own.
//
// In the bundle this module and all it loads are one file (scripts/bundle-cli.mjs): a push
// loaded ~70 split chunks, each an ES module to resolve, read, compile and link.
import { EXIT_CODES, type ExitCode } from '../errors.js';
import { runTransfer } from './commands/transfer.js';
import { interruptionOf, makeContext, withInterrupt } from './context.js';
import { Output, reportError } from './output.js';

export async function runParsedTransfer(
  argv: readonly string[],
  args: Record<string, unknown>,
  direction: 'push' | 'pull',
): Promise<ExitCode> {
  return withInterrupt(async (signal) => {
    // As main.ts: its handler wrapper, and (for what escapes that) its report after the parse.
    try {
      const ctx = makeContext(args, signal, argv);
      try {
        await runTransfer(ctx, args, direction);
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
