// A push or pull that plain-fast-path.ts read. In the bundle this module and all it loads are
// one file (scripts/bundle-cli.mjs): split, a push loaded ~70 chunks, each an ES module to
// resolve, read, compile and link.
import type { ExitCode } from '../errors.js';
import { runTransfer } from './commands/transfer.js';
import { runHandler } from './handler-run.js';

export function runParsedTransfer(
  argv: readonly string[],
  args: Record<string, unknown>,
  direction: 'push' | 'pull',
): Promise<ExitCode> {
  return runHandler(argv, args, (ctx, a) => runTransfer(ctx, a, direction));
}
