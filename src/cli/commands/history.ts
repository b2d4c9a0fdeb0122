// `log`, `restore`, `gc`: the revision history of a synced folder (folder-sync/folder-history.ts).
import type { Argv } from 'yargs';
import { ClawpeerError } from '../../errors.js';
import { escapeToShow as show, human } from '../../format.js';
import {
  collectFolderGarbage,
  folderLog,
  parseVersioning,
  restoreRevision,
  type LogRow,
  type VersioningPolicy,
} from '../../folder-sync/facade.js';
import { flagText, parseRemote } from '../args.js';
import type { CommandContext, Runner } from '../context.js';

function revisionRecord(row: LogRow): Record<string, unknown> {
  const r = row.revision;
  return {
    event: 'revision',
    path: r.path,
    id: row.id,
    head: row.isHead,
    what: row.what,
    by: row.by,
    kind: r.kind,
    deleted: r.deleted,
    size: r.size,
    mode: r.mode,
    mtime: new Date(Number(r.mtimeNs / 1_000_000n)).toISOString(),
    origin: r.origin,
    vector: Object.fromEntries(r.vector),
    contentRoot: row.contentRoot,
  };
}

/** `2026-12-02 20:44:29`, local time: when a revision was made (a tombstone: when the deletion was seen). */
function logTime(ms: number): string {
  const d = new Date(ms);
  const two = (n: number): string => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

/** Newest first: every kept revision of the folder (or of the paths under `target`), what it did, when and by whom. */
async function runLog(ctx: CommandContext, args: Record<string, unknown>): Promise<void> {
  for (const row of await folderLog({ target: String(args['target']), home: ctx.home })) {
    const r = row.revision;
    const size = r.deleted || r.kind === 'dir' ? '' : `  ${human(r.size)}`;
    const kind = r.kind === 'file' ? '' : ` (${r.kind})`;
    ctx.out.emit(
      revisionRecord(row),
      `${logTime(Number(r.mtimeNs / 1_000_000n))}  ${row.what.padEnd(13)}  ${show(r.path)}${kind}${size}  by ${row.by}  rev ${row.id.slice(0, 12)}${row.isHead ? ' (current)' : ''}`,
    );
  }
}

async function runRestore(ctx: CommandContext, args: Record<string, unknown>): Promise<void> {
  const from =
    args['from'] === undefined
      ? undefined
      : (): { peerId: string; share: string } => {
          const r = parseRemote(flagText(args['from']), false);
          if (r.path !== '')
            throw new ClawpeerError(
              'USAGE',
              `--from names the peer's share the folder syncs with (PEER:SHARE), not a path in it: ${JSON.stringify(flagText(args['from']))}`,
            );
          return { peerId: r.peer, share: r.share };
        };
  const restored = await restoreRevision({
    target: String(args['target']),
    rev: String(args['rev']),
    home: ctx.home,
    explicitHome: args['home'] !== undefined || process.env['CLAWPEER_HOME'] !== undefined,
    from,
    addr: args['addr'] as string | undefined,
    log: ctx.log,
    signal: ctx.signal,
  });
  const { fetchedFrom } = restored;
  ctx.out.emit(
    {
      event: 'restored',
      path: restored.path,
      rev: restored.rev,
      newRev: restored.newRev,
      ...(fetchedFrom === undefined ? {} : { fetchedFrom }),
    },
    `restored ${show(restored.path)} to revision ${restored.rev.slice(0, 16)}${fetchedFrom === undefined ? '' : ` (its content fetched from ${fetchedFrom})`}`,
  );
}

async function runGc(ctx: CommandContext, args: Record<string, unknown>): Promise<void> {
  const policySpec = args['policy'] === undefined ? undefined : flagText(args['policy']);
  if ((policySpec === undefined) === (args['keep-last'] === undefined))
    throw new ClawpeerError('USAGE', 'gc needs one of --keep-last N or --policy SPEC');
  let policy: VersioningPolicy;
  if (policySpec !== undefined) policy = parseVersioning(policySpec);
  else {
    const keepLast = Number(args['keep-last']);
    if (!Number.isInteger(keepLast) || keepLast < 1)
      throw new ClawpeerError('USAGE', `--keep-last must be an integer >= 1, got ${JSON.stringify(args['keep-last'])}`);
    policy = { kind: 'keep-last', count: keepLast };
  }
  const { removedRevisions, removedBlobs } = await collectFolderGarbage({
    dir: flagText(args['dir']),
    policy,
    home: ctx.home,
    signal: ctx.signal,
  });
  ctx.out.emit(
    { event: 'gc', removedRevisions, removedBlobs },
    `removed ${removedRevisions} old revisions and ${removedBlobs} history files`,
  );
}

export function registerHistoryCommands(cli: Argv, run: Runner): Argv {
  return cli
    .command(
      'log <target>',
      'revision history of a synced folder or a path in it',
      (y) => y.positional('target', { type: 'string' }),
      run(runLog),
    )
    .command(
      'restore <target>',
      'bring back an earlier revision of DIR/PATH (atomically; recorded as a new edit)',
      (y) =>
        y
          .positional('target', { type: 'string' })
          .option('rev', {
            type: 'string',
            demandOption: true,
            describe: 'revision id (hex, at least 8 digits) from `clawpeer log`',
          })
          .option('from', {
            type: 'string',
            describe:
              'PEER:SHARE to fetch the content from when it is no longer kept here (default: the peer the folder last synced with)',
          })
          .option('addr', { type: 'string', describe: 'HOST:PORT of the --from peer (default: its paired address)' }),
      run(runRestore),
    )
    .command(
      'gc <dir>',
      'drop old revisions and the history content only they referenced (the next sync tells the peer, which drops them too)',
      (y) =>
        y
          .positional('dir', { type: 'string' })
          .option('keep-last', {
            type: 'number',
            describe: 'revisions to keep per path (the current one always stays)',
          })
          .option('policy', {
            type: 'string',
            describe:
              'versioning policy instead: keep-last:N, trashcan:DAYS (what was replaced in the last DAYS days) or staggered[:DAYS] (one a hour for a day, a day for a month, a week up to DAYS, default 365)',
          }),
      run(runGc),
    );
}
