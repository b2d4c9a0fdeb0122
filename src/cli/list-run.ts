// An `ls` that plain-fast-path.ts read. In the bundle this module and all it loads are one file,
// as transfer-run.ts (split, the dial alone loads dozens of chunks).
import type { ExitCode } from '../errors.js';
import { listRemote } from './commands/list.js';
import { runHandler } from './handler-run.js';

export function runParsedList(argv: readonly string[], args: Record<string, unknown>): Promise<ExitCode> {
  return runHandler(argv, args, listRemote);
}
