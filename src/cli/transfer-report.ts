// What a push or pull (commands/transfer.ts) prints when it ends: --delete's removals,
// --itemize-changes' lines, a dry run's plan, and the done record with the option counts.
// Paths (a pull's come from the peer) are shown with control and bidi characters escaped
// (escapeToShow: `\u202e`, `\#033`), so a name cannot disguise itself or drive the terminal;
// --json records keep them exact (JSON.stringify leaves U+202E raw): a program needs the real name.
import { count, escapeToShow as show, human } from '../format.js';
import type { DryRunReport, TransferResult } from '../push-pull/transfer-with-peer.js';
import type { CommandContext } from './context.js';
import { transferSummaryText } from './transfer-summary.js';

/** --delete: one line (event) per removed path (a dry run: per path it would remove); a push's listener lists the first 1,000. */
export function reportDeleted(ctx: CommandContext, r: TransferResult, dryRun: boolean): void {
  if (r.deleted === undefined) return;
  // A real run's removals are a summary (--quiet drops them); a dry run's are what was asked for.
  const tell = (record: Record<string, unknown>, line: string): void =>
    dryRun ? ctx.out.emit(record, line) : ctx.out.summary(record, line);
  for (const p of r.deleted)
    tell({ event: dryRun ? 'would-delete' : 'deleted', path: p }, `${dryRun ? 'would delete' : 'deleting'} ${show(p)}`);
  const unlisted = (r.deletedCount ?? 0) - r.deleted.length;
  if (unlisted > 0)
    tell({ event: dryRun ? 'would-delete-more' : 'deleted-more', count: unlisted }, `... and ${unlisted} more`);
}

/**
 * The paths the receiver may not write, one line (event) each, with their errno code: a push's
 * listener (`peer`) lists the first 1,000. Told even with --quiet: each is a failure.
 */
export function reportRefused(ctx: CommandContext, r: TransferResult, peer: string | undefined): void {
  if (r.refusedCount === undefined) return;
  const where = (reason: string): string => (peer === undefined ? `here (${reason})` : `(${reason}) on ${peer}`);
  for (const p of r.refused ?? [])
    ctx.out.emit(
      { event: 'refused', path: p.path, reason: p.reason },
      `not written ${where(p.reason)}: ${show(p.path)}`,
    );
  const unlisted = r.refusedCount - (r.refused?.length ?? 0);
  if (unlisted > 0) ctx.out.emit({ event: 'refused-more', count: unlisted }, `... and ${unlisted} more not written`);
}

/**
 * The entries the sender could not read, one line (event) each with why, as sync says of its
 * own (sync-report.ts): here for a push, on the listener (`peer`) for a pull, which lists the
 * first 1,000. Then that --delete was skipped, if asked. Told even with --quiet: each is a failure.
 */
export function reportUnreadable(
  ctx: CommandContext,
  r: TransferResult,
  peer: string | undefined,
  deleteAsked: boolean,
): void {
  if (r.unreadableCount === undefined) return;
  const what = `${r.dryRun === undefined ? 'not sent' : 'would not be sent'}${peer === undefined ? '' : ` by ${peer}`}`;
  const where = peer === undefined ? 'here' : 'there';
  for (const u of r.unreadable ?? [])
    ctx.out.emit(
      { event: 'unreadable', path: u.path, error: u.error },
      `${what}, cannot be read ${where}: ${show(u.path)} (${u.error})`,
    );
  const unlisted = r.unreadableCount - (r.unreadable?.length ?? 0);
  if (unlisted > 0) ctx.out.emit({ event: 'unreadable-more', count: unlisted }, `... and ${unlisted} more ${what}`);
  if (deleteAsked)
    ctx.out.emit(
      { event: 'delete-skipped' },
      '--delete skipped: what the sender could not read would have been removed (rsync\'s "IO error encountered")',
    );
}

/** --remove-source-files: one line (event) per sent file kept because it changed or went since it was sent. */
export function reportSourceKept(ctx: CommandContext, r: TransferResult): void {
  for (const p of r.sourceChanged ?? [])
    ctx.out.emit({ event: 'source-kept', path: p }, `not removed, changed or gone since it was sent: ${show(p)}`);
}

/** PARTIAL's message when the sender left entries out or the receiver refused paths, else undefined. */
export function partialMessage(r: TransferResult, direction: 'push' | 'pull', peer: string): string | undefined {
  const verb = direction === 'push' ? 'pushed' : 'pulled';
  const parts = [
    ...(r.unreadableCount === undefined
      ? []
      : [
          `${count(r.unreadableCount, 'entry', 'entries')} could not be read ${direction === 'push' ? 'here' : `by ${peer}`}`,
        ]),
    ...(r.refusedCount === undefined
      ? []
      : [`${count(r.refusedCount, 'path')} could not be written ${direction === 'push' ? `by ${peer}` : 'here'}`]),
  ];
  return parts.length === 0
    ? undefined
    : `${parts.join(' and ')}; the rest was ${verb} (run it again once they can be)`;
}

/** --itemize-changes: one line (event) per file published, rsync's codes; a push's listener lists the first 10,000. */
export function reportPublished(ctx: CommandContext, r: TransferResult): void {
  if (r.published === undefined) return;
  // In the order they happened: directories before their contents, symlinks once the files are in.
  const created = r.created ?? [];
  for (const e of created)
    if (e.kind === 'dir') ctx.out.emit({ event: 'created', path: e.path, kind: 'dir' }, `cd+++++++++ ${show(e.path)}/`);
  for (const f of r.published)
    ctx.out.emit(
      { event: 'published', path: f.path, replaced: f.replaced },
      `${f.replaced ? '>fc........' : '>f+++++++++'} ${show(f.path)}`,
    );
  for (const e of created) {
    if (e.kind === 'symlink')
      ctx.out.emit(
        { event: 'created', path: e.path, kind: 'symlink', target: e.target, replaced: e.replaced },
        `${e.replaced ? 'cLc........' : 'cL+++++++++'} ${show(e.path)} -> ${show(e.target)}`,
      );
  }
  // rsync's attribute-only line: '.' (nothing transferred), t for the time, p for the permissions.
  for (const u of r.updated ?? [])
    ctx.out.emit(
      { event: 'updated', path: u.path, time: u.time, perms: u.perms },
      `.f..${u.time ? 't' : '.'}${u.perms ? 'p' : '.'}..... ${show(u.path)}`,
    );
  const unlisted = r.files - r.published.length;
  if (unlisted > 0) ctx.out.emit({ event: 'published-more', count: unlisted }, `... and ${unlisted} more published`);
}

/** The done record's counts for the options given: --delete's removals, --ignore-existing's and --update's kept files, --remove-source-files' removals. */
function optionCounts(r: TransferResult): {
  deleted?: number;
  kept?: number;
  sourceRemoved?: number;
  backedUp?: number;
  refused?: number;
  unreadable?: number;
} {
  return {
    ...(r.deletedCount === undefined ? {} : { deleted: r.deletedCount }),
    ...(r.filesKept === undefined ? {} : { kept: r.filesKept }),
    ...(r.sourceRemoved === undefined ? {} : { sourceRemoved: r.sourceRemoved }),
    ...(r.filesBackedUp === undefined ? {} : { backedUp: r.filesBackedUp }),
    ...(r.refusedCount === undefined ? {} : { refused: r.refusedCount }),
    ...(r.unreadableCount === undefined ? {} : { unreadable: r.unreadableCount }),
  };
}

/** The same counts for people, appended to the done line. */
function optionCountsText(r: TransferResult, dryRun: boolean): string {
  const deleted =
    r.deletedCount === undefined
      ? ''
      : dryRun
        ? `; ${count(r.deletedCount, 'path')} to delete`
        : `; ${r.deletedCount} deleted`;
  const kept = r.filesKept === undefined ? '' : `; ${r.filesKept} existing ${dryRun ? 'would be kept' : 'kept'}`;
  const moved =
    r.sourceRemoved === undefined
      ? ''
      : `; ${count(r.sourceRemoved, 'sent source file')} ${dryRun ? 'would be removed' : 'removed'}`;
  const backedUp = r.filesBackedUp === undefined || dryRun ? '' : `; ${r.filesBackedUp} backed up`;
  const refused = r.refusedCount === undefined ? '' : `; ${count(r.refusedCount, 'path')} not written`;
  const unreadable =
    r.unreadableCount === undefined ? '' : `; ${count(r.unreadableCount, 'entry', 'entries')} unreadable, not sent`;
  return deleted + kept + moved + backedUp + refused + unreadable;
}

/** How the session reached the peer, for the done record (--json). */
export interface PathReport {
  readonly path: string;
  readonly rttMs: number;
}

/** A dry run: one line (event) per directory or symlink that would be created and per file that would be published, then the totals. */
export function reportDryRun(ctx: CommandContext, verb: string, r: TransferResult, d: DryRunReport): void {
  for (const e of d.others ?? []) {
    if (e.kind === 'dir')
      ctx.out.emit({ event: 'would-create', path: e.path, kind: 'dir' }, `${show(e.path)}/ (directory)`);
    else
      ctx.out.emit(
        { event: 'would-create', path: e.path, kind: 'symlink', target: e.target ?? '' },
        `${show(e.path)} -> ${show(e.target ?? '')} (symlink)`,
      );
  }
  for (const f of d.files) {
    ctx.out.emit(
      { event: 'would-publish', path: f.path, bytes: f.bytes, sendBytes: f.sendBytes },
      `${show(f.path)} (${human(f.bytes)}, ${human(f.sendBytes)} to send)`,
    );
  }
  for (const f of d.touched) {
    const what = [f.time ? 'mtime' : '', f.perms ? 'permissions' : ''].filter((w) => w !== '').join(' and ');
    ctx.out.emit(
      { event: 'would-update', path: f.path, time: f.time, perms: f.perms },
      `${show(f.path)} (identical: ${what} to set)`,
    );
  }
  const others =
    d.others === undefined
      ? {}
      : {
          dirsToCreate: d.others.filter((e) => e.kind === 'dir').length,
          symlinksToCreate: d.others.filter((e) => e.kind === 'symlink').length,
        };
  ctx.out.emit(
    {
      event: 'done',
      dryRun: true,
      files: r.files,
      bytes: r.bytes,
      filesUnchanged: d.filesUnchanged,
      filesToUpdate: d.touched.length,
      ...others,
      chunksToSend: d.chunksToSend,
      bytesToSend: d.bytesToSend,
      ...optionCounts(r),
      wireBytes: r.wireBytes,
      seconds: Math.round(r.seconds * 1000) / 1000,
    },
    `dry run: would have ${verb} ${count(r.files, 'file')}, ${human(r.bytes)}, sending ${human(d.bytesToSend)} in ${count(d.chunksToSend, 'chunk')}; ${count(d.filesUnchanged, 'file')} unchanged` +
      (d.touched.length === 0 ? '' : ` (${d.touched.length} of them to get the sender's mtime or permissions)`) +
      (d.others === undefined ? '' : `; ${d.others.length} directories and symlinks to create`) +
      `${optionCountsText(r, true)}. Nothing was written.`,
  );
}

/** A real run's done record and line. */
export function report(ctx: CommandContext, verb: string, r: TransferResult, via: PathReport): void {
  ctx.out.summary(
    {
      event: 'done',
      ...via,
      files: r.files,
      bytes: r.bytes,
      wireBytes: r.wireBytes,
      chunksSent: r.chunksSent,
      chunksSkipped: r.chunksSkipped,
      chunksCompressed: r.chunksCompressed,
      streams: r.streams,
      window: r.window,
      ...optionCounts(r),
      seconds: Math.round(r.seconds * 1000) / 1000,
    },
    transferSummaryText(verb, r) + optionCountsText(r, false),
  );
}
