// A command that only reports on this home (status, id, pair list, folder list, folder log)
// that plain-fast-path.ts read: the handler the yargs command runs, loaded without yargs. In the
// bundle this module and all it loads are one file, as transfer-run.ts (split: ~30 chunks).
import type { ExitCode } from '../errors.js';
import type { CommandContext } from './context.js';
import { runHandler } from './handler-run.js';

type Handler = (ctx: CommandContext, args: Record<string, unknown>) => Promise<void>;
export type ReportCommandName = 'status' | 'id' | 'pair list' | 'folder list' | 'folder log';

const HANDLERS: Record<ReportCommandName, () => Promise<Handler>> = {
  status: () => import('./commands/status.js').then((m) => m.showStatus),
  id: () => import('./commands/identity.js').then((m) => m.showId),
  'pair list': () => import('./commands/pair-list.js').then((m) => m.listPairs),
  'folder list': () => import('./commands/folder.js').then((m) => m.listFolders),
  'folder log': () => import('./commands/folder.js').then((m) => (ctx, args) => m.showLog(ctx, String(args['id']))),
};

export async function runParsedReport(
  argv: readonly string[],
  args: Record<string, unknown>,
  command: ReportCommandName,
): Promise<ExitCode> {
  return runHandler(argv, args, await HANDLERS[command]());
}
