// A sync that plain-fast-path.ts read (one sync-fast-path.ts did not hand to a listener). In
// the bundle this module and all it loads are one file, as transfer-run.ts.
import type { ExitCode } from '../errors.js';
import { runSync } from './commands/sync.js';
import { runHandler } from './handler-run.js';

export function runParsedSync(argv: readonly string[], args: Record<string, unknown>): Promise<ExitCode> {
  return runHandler(argv, args, runSync);
}
