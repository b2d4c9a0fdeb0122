import type { Argv } from 'yargs';
import type { CommandContext } from '../context.js';
export function registerNetworkCommands(cli: Argv, _run: (fn: (ctx: CommandContext, args: Record<string, unknown>) => Promise<void>) => (args: Record<string, unknown>) => Promise<void>): Argv {
  return cli;
}
