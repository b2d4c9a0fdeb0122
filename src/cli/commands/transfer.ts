// `push` and `pull`: move files and trees to and from a paired peer's shares.
import { readFileSync, statSync } from 'node:fs';
import type { Argv } from 'yargs';
import { ClawpeerError, isInterruption } from '../../errors.js';
import { resolveConfig } from '../../home/config.js';
import { loadIdentity } from '../../home/identity-store.js';
import { PeerStore } from '../../home/peer-store.js';
import { resolvePeer } from '../../home/peer-resolve.js';
import type { TransferResult } from '../../push-pull/transfer-client.js';
import type { SizeRange } from '../../exchange/transfer-source.js';
import { combineResults } from '../../push-pull/transfer-results.js';
import { SequentialProgress } from '../../transfer/transfer-progress.js';
import type { DryRunReport } from '../../transfer/dry-run.js';
import type { CommandContext, Runner } from '../context.js';
import { combineChmods } from '../../transfer/chmod.js';
import { compileFilter } from '../../transfer/exclude.js';
import { parseFileList } from '../../transfer/file-list.js';
import { fileListBytes, MAX_FILES_FROM_BYTES, MAX_FILES_FROM_PATHS } from '../../protocol/messages.js';
import { backupPlan, DEFAULT_BACKUP_SUFFIX, type BackupPlan } from '../../store/backups.js';
import { argWord, BWLIMIT_OPTION, flagText, bwlimitOption, COMPRESS_OPTION, compressionFrom, filterRulesInOrder, FSYNC_OPTION, fsyncOption, intOption, parseRemote, TRANSPORT_OPTION } from '../args.js';
import { count, human, parseSize } from '../../format.js';
import { transferSummaryText } from '../transfer-summary.js';
import { createProgress } from '../progress.js';
import { DEFAULT_STDIN_NAME, spoolStdin, STDIN_SOURCE, stdinName } from '../stdin-spool.js';
import { checkStdoutPull, pullToStdout, STDOUT_DESTINATION } from '../stdout-pull.js';

/**
 * Streams and window when the user does not say (bench/results). Streams: 10,000 x 4 KiB at
 * 50 ms / 100 Mbit/s took 18.4 / 9.9 / 6.3 / 5.3 s with 1 / 2 / 4 / 8 (bench-small-streams.json);
 * one 1 GiB file on loopback (CPU-bound) was slower with 1 and the same with 2 and 4. 4 takes
 * most of the small-file gain; 8 should be measured on large files before it becomes the
 * default. Streams share one congestion window, so under loss more do not help (that is what
 * --connections is for).
 */
export const DEFAULT_STREAMS = 4;
export const DEFAULT_WINDOW = 32;

/** PEER[:SHARE[/SUBPATH]] — peer names and node ids never contain ':'. */
const transferOptions = (y: Argv): Argv =>
  y
    .option('streams', { type: 'number', default: DEFAULT_STREAMS, describe: 'parallel data streams' })
    .option('window', { type: 'number', default: DEFAULT_WINDOW, describe: 'unacknowledged chunks in flight per stream' })
    .option('force', { type: 'boolean', default: false, describe: 'replace existing different files' })
    .option('ignore-existing', { type: 'boolean', default: false, describe: 'keep different files already at the destination instead of failing (rsync --ignore-existing)' })
    .option('update', { alias: 'u', type: 'boolean', default: false, describe: 'replace different files already at the destination unless they are newer (mtime; rsync --update)' })
    .option('addr', { type: 'string', describe: 'HOST:PORT (default: the pair entry\'s address)' })
    .option('transport', TRANSPORT_OPTION)
    .option('compress', COMPRESS_OPTION)
    .option('exclude', { type: 'string', array: true, nargs: 1, default: [] as string[], describe: 'leave out matching files and directories (repeatable; rsync-style: *.log, node_modules/, /build)' })
    .option('include', { type: 'string', array: true, nargs: 1, default: [] as string[], describe: 'keep matching files and directories that a later --exclude would leave out (repeatable; the first matching --include/--exclude decides, as in rsync)' })
    .option('exclude-from', { type: 'string', array: true, nargs: 1, default: [] as string[], describe: 'read --exclude patterns from FILE, one per line (blank lines and lines starting with # or ; skipped; - is standard input), in place of the flag' })
    .option('include-from', { type: 'string', array: true, nargs: 1, default: [] as string[], describe: 'read --include patterns from FILE, as --exclude-from' })
    .option('bwlimit', BWLIMIT_OPTION)
    .option('fsync', FSYNC_OPTION)
    .option('dry-run', { alias: 'n', type: 'boolean', default: false, describe: 'show what would be sent and published, without writing anything or sending any chunk' })
    .option('remove-source-files', { type: 'boolean', default: false, describe: 'push: once the listener has published everything, remove the sent files and symlinks here, unless they changed meanwhile (rsync --remove-source-files; directories stay)' })
    .option('delete', { type: 'boolean', default: false, describe: 'once all is published, remove what the transferred directories hold and the source does not (rsync --delete); what --exclude leaves out is never removed' })
    .option('itemize-changes', { alias: 'i', type: 'boolean', default: false, describe: 'list each file published and each directory and symlink created, as rsync -i: >f+++++++++ PATH for a new file, >fc........ PATH for one that replaced a different file, cd+++++++++ DIR/, cL+++++++++ LINK -> TARGET, .f..tp..... PATH for an identical file whose mtime (t) or permissions (p) were set' })
    .option('files-from', {
      type: 'string',
      requiresArg: true,
      describe: 'transfer the paths FILE lists, one per line (- is standard input), relative to the one source directory (push: LOCAL, pull: PEER:SHARE[/PATH]), each landing at its relative path with the directories it lies in (rsync --files-from; a listed directory goes whole; blank lines and lines starting with # or ; skipped)',
    })
    .option('from0', { type: 'boolean', describe: 'the --files-from list is NUL-separated (find -print0; rsync --from0)' })
    .option('min-size', { type: 'string', requiresArg: true, describe: 'leave out files smaller than SIZE, e.g. 10K, 1.5MiB, 2GB (rsync --min-size; a pull asks the listener)' })
    .option('max-size', { type: 'string', requiresArg: true, describe: 'leave out files larger than SIZE (rsync --max-size); 0: no limit' })
    .option('chmod', {
      type: 'string', array: true, requiresArg: true,
      describe: 'change the permissions things land with, as chmod(1) does (rsync --chmod): comma-separated clauses, D or F first for directories or files only, e.g. D755,F644 or go-w,+X (repeatable)',
    })
    .option('max-delete', { type: 'number', describe: 'with --delete: when more than N paths would be removed, remove none (the rest is still published; exit 1)' })
    .option('backup', { alias: 'b', type: 'boolean', default: false, describe: `keep what --force, --update or --delete replaces or removes, as NAME${DEFAULT_BACKUP_SUFFIX} beside it (rsync --backup)` })
    .option('backup-dir', { type: 'string', describe: 'with --backup (implied): keep backups under DIR, relative to the destination and inside it, at their relative paths' })
    .option('suffix', { type: 'string', describe: `backup suffix (default ${DEFAULT_BACKUP_SUFFIX}, or none with --backup-dir)` });

/** --delete: one line (event) per removed path (a dry run: per path it would remove); a push's listener lists the first 1,000. */
function reportDeleted(ctx: CommandContext, r: TransferResult, dryRun: boolean): void {
  if (r.deleted === undefined) return;
  // A real run's removals are a summary (--quiet drops them); a dry run's are what was asked for.
  const tell = (record: Record<string, unknown>, line: string): void => (dryRun ? ctx.out.emit(record, line) : ctx.out.summary(record, line));
  for (const p of r.deleted) tell({ event: dryRun ? 'would-delete' : 'deleted', path: p }, `${dryRun ? 'would delete' : 'deleting'} ${p}`);
  const unlisted = (r.deletedCount ?? 0) - r.deleted.length;
  if (unlisted > 0) tell({ event: dryRun ? 'would-delete-more' : 'deleted-more', count: unlisted }, `... and ${unlisted} more`);
}

/** --itemize-changes: one line (event) per file published, rsync's codes; a push's listener lists the first 10,000. */
function reportPublished(ctx: CommandContext, r: TransferResult): void {
  if (r.published === undefined) return;
  // In the order they happened: directories before their contents, symlinks once the files are in.
  const created = r.created ?? [];
  for (const e of created) if (e.kind === 'dir') ctx.out.emit({ event: 'created', path: e.path, kind: 'dir' }, `cd+++++++++ ${e.path}/`);
  for (const f of r.published) ctx.out.emit({ event: 'published', path: f.path, replaced: f.replaced }, `${f.replaced ? '>fc........' : '>f+++++++++'} ${f.path}`);
  for (const e of created) {
    if (e.kind === 'symlink') ctx.out.emit({ event: 'created', path: e.path, kind: 'symlink', target: e.target, replaced: e.replaced }, `${e.replaced ? 'cLc........' : 'cL+++++++++'} ${e.path} -> ${e.target}`);
  }
  // rsync's attribute-only line: '.' (nothing transferred), t for the time, p for the permissions.
  for (const u of r.updated ?? []) ctx.out.emit({ event: 'updated', path: u.path, time: u.time, perms: u.perms }, `.f..${u.time ? 't' : '.'}${u.perms ? 'p' : '.'}..... ${u.path}`);
  const unlisted = r.files - r.published.length;
  if (unlisted > 0) ctx.out.emit({ event: 'published-more', count: unlisted }, `... and ${unlisted} more published`);
}

/** The done record's counts for the options given: --delete's removals, --ignore-existing's and --update's kept files, --remove-source-files' removals. */
function optionCounts(r: TransferResult): { deleted?: number; kept?: number; sourceRemoved?: number; backedUp?: number } {
  return {
    ...(r.deletedCount === undefined ? {} : { deleted: r.deletedCount }),
    ...(r.filesKept === undefined ? {} : { kept: r.filesKept }),
    ...(r.sourceRemoved === undefined ? {} : { sourceRemoved: r.sourceRemoved }),
    ...(r.filesBackedUp === undefined ? {} : { backedUp: r.filesBackedUp }),
  };
}

/** The same counts for people, appended to the done line. */
function optionCountsText(r: TransferResult, dryRun: boolean): string {
  const deleted = r.deletedCount === undefined ? '' : dryRun ? `; ${count(r.deletedCount, 'path')} to delete` : `; ${r.deletedCount} deleted`;
  const kept = r.filesKept === undefined ? '' : `; ${r.filesKept} existing ${dryRun ? 'would be kept' : 'kept'}`;
  const moved = r.sourceRemoved === undefined ? '' : `; ${count(r.sourceRemoved, 'sent source file')} ${dryRun ? 'would be removed' : 'removed'}`;
  const backedUp = r.filesBackedUp === undefined || dryRun ? '' : `; ${r.filesBackedUp} backed up`;
  return deleted + kept + moved + backedUp;
}

/** A dry run: one line (event) per directory or symlink that would be created and per file that would be published, then the totals. */
/** How the session reached the peer, for the done record (--json). */
interface PathReport {
  readonly path: string;
  readonly rttMs: number;
}

function reportDryRun(ctx: CommandContext, verb: string, r: TransferResult, d: DryRunReport): void {
  for (const e of d.others ?? []) {
    if (e.kind === 'dir') ctx.out.emit({ event: 'would-create', path: e.path, kind: 'dir' }, `${e.path}/ (directory)`);
    else ctx.out.emit({ event: 'would-create', path: e.path, kind: 'symlink', target: e.target ?? '' }, `${e.path} -> ${e.target ?? ''} (symlink)`);
  }
  for (const f of d.files) {
    ctx.out.emit({ event: 'would-publish', path: f.path, bytes: f.bytes, sendBytes: f.sendBytes }, `${f.path} (${human(f.bytes)}, ${human(f.sendBytes)} to send)`);
  }
  for (const f of d.touched) {
    const what = [f.time ? 'mtime' : '', f.perms ? 'permissions' : ''].filter((w) => w !== '').join(' and ');
    ctx.out.emit({ event: 'would-update', path: f.path, time: f.time, perms: f.perms }, `${f.path} (identical: ${what} to set)`);
  }
  const others = d.others === undefined ? {} : { dirsToCreate: d.others.filter((e) => e.kind === 'dir').length, symlinksToCreate: d.others.filter((e) => e.kind === 'symlink').length };
  ctx.out.emit(
    { event: 'done', dryRun: true, files: r.files, bytes: r.bytes, filesUnchanged: d.filesUnchanged, filesToUpdate: d.touched.length, ...others, chunksToSend: d.chunksToSend, bytesToSend: d.bytesToSend, ...optionCounts(r), wireBytes: r.wireBytes, seconds: Math.round(r.seconds * 1000) / 1000 },
    `dry run: would have ${verb} ${count(r.files, 'file')}, ${human(r.bytes)}, sending ${human(d.bytesToSend)} in ${count(d.chunksToSend, 'chunk')}; ${count(d.filesUnchanged, 'file')} unchanged` +
      (d.touched.length === 0 ? '' : ` (${d.touched.length} of them to get the sender's mtime or permissions)`) +
      (d.others === undefined ? '' : `; ${d.others.length} directories and symlinks to create`) +
      `${optionCountsText(r, true)}. Nothing was written.`,
  );
}

function report(ctx: CommandContext, verb: string, r: TransferResult, via: PathReport): void {
  ctx.out.summary(
    { event: 'done', ...via, files: r.files, bytes: r.bytes, wireBytes: r.wireBytes, chunksSent: r.chunksSent, chunksSkipped: r.chunksSkipped, chunksCompressed: r.chunksCompressed, streams: r.streams, window: r.window, ...optionCounts(r), seconds: Math.round(r.seconds * 1000) / 1000 },
    transferSummaryText(verb, r) + optionCountsText(r, false),
  );
}

/** --ignore-existing or --update; each excludes --force and the other (they say what happens to the same files). */
function existingPolicy(args: Record<string, unknown>): 'keep' | 'update' | undefined {
  const given = (['force', 'ignore-existing', 'update'] as const).filter((flag) => args[flag] === true);
  if (given.length > 1) throw new ClawpeerError('USAGE', `--${given.join(' and --')} exclude each other: they decide the same thing (what happens to a different file already there)`);
  if (args['ignore-existing'] === true) return 'keep';
  return args['update'] === true ? 'update' : undefined;
}

/** --backup, --backup-dir (implies --backup) and --suffix as a plan; undefined without them. */
function backupFrom(args: Record<string, unknown>): BackupPlan | undefined {
  const dir = args['backup-dir'] as string | undefined;
  const suffix = args['suffix'] as string | undefined;
  if (args['backup'] !== true && dir === undefined) {
    if (suffix !== undefined) throw new ClawpeerError('USAGE', '--suffix names backups: give --backup or --backup-dir too');
    return undefined;
  }
  if (dir === '') throw new ClawpeerError('USAGE', '--backup-dir is empty: name a directory, or leave it out to keep backups beside the files');
  return backupPlan(dir, suffix);
}

/** --min-size / --max-size as bounds (0 or absent: none, as rsync); USAGE for text that is not a size, or bounds that leave nothing. */
function sizesFrom(args: Record<string, unknown>): SizeRange | undefined {
  const bound = (flag: 'min-size' | 'max-size'): number | undefined => {
    const value = args[flag];
    if (value === undefined) return undefined;
    const bytes = parseSize(flagText(value));
    if (bytes === undefined) throw new ClawpeerError('USAGE', `--${flag} ${JSON.stringify(flagText(value))}: expected a size such as 4096, 64K, 1.5MiB or 2GB`);
    return bytes === 0 ? undefined : bytes;
  };
  const min = bound('min-size');
  const max = bound('max-size');
  if (min !== undefined && max !== undefined && min > max) throw new ClawpeerError('USAGE', `--min-size ${String(args['min-size'])} is more than --max-size ${String(args['max-size'])}: no file would go`);
  if (min === undefined && max === undefined) return undefined;
  return { ...(min === undefined ? {} : { min }), ...(max === undefined ? {} : { max }) };
}

/** -L (every symlink) or --copy-unsafe-links (those leading out of the tree) sent as what they point to; rsync's. */
function copyLinksFrom(args: Record<string, unknown>): 'all' | 'unsafe' | undefined {
  if (args['copy-links'] === true && args['copy-unsafe-links'] === true) throw new ClawpeerError('USAGE', '--copy-links follows every symlink, --copy-unsafe-links only those leading out of the tree: give one');
  return args['copy-links'] === true ? 'all' : args['copy-unsafe-links'] === true ? 'unsafe' : undefined;
}

/** A repeatable option's (or the positionals') words, a lone `-` turned back (args.ts argWord). */
const argWords = (args: Record<string, unknown>, name: string): string[] => ((args[name] as unknown[] | undefined) ?? []).map((w) => argWord(String(w)));

/** Which pattern-file flag (if any) reads standard input (`--exclude-from -`): only one reader may have it. */
const patternFileOnStdin = (args: Record<string, unknown>): string | undefined => ['exclude-from', 'include-from'].find((flag) => argWords(args, flag).includes(STDIN_SOURCE));

/** The name a remote path lands under here: its last segment. */
const landingName = (remotePath: string): string => remotePath.split('/').at(-1) ?? '';

async function run(ctx: CommandContext, args: Record<string, unknown>, direction: 'push' | 'pull'): Promise<void> {
  // push LOCAL... REMOTE and pull REMOTE... LOCAL: the last word is the destination, as with rsync and scp.
  const words = argWords(args, 'paths');
  if (args['from0'] === true && args['files-from'] === undefined) throw new ClawpeerError('USAGE', '--from0 says how the --files-from list is separated: give --files-from too');
  if (args['files-from'] !== undefined) {
    await transferListed(ctx, args, direction, words);
    return;
  }
  if (direction === 'pull' && words.length >= 2 && words.at(-1) === STDOUT_DESTINATION) {
    // pull PEER:SHARE/FILE -: the file's bytes on standard output (stdout-pull.ts), no summary.
    const remotes = words.slice(0, -1);
    const paths = remotes.map((w) => parseRemote(w, false).path);
    checkStdoutPull(paths, args);
    await pullToStdout(landingName(paths[0] ?? ''), (dir) => transfer(ctx, args, 'pull', [...remotes, dir], { toStdout: true }));
    return;
  }
  const stdinAt = direction === 'push' ? words.slice(0, -1).indexOf(STDIN_SOURCE) : -1;
  if (stdinAt < 0) {
    if (args['stdin-name'] !== undefined) throw new ClawpeerError('USAGE', '--stdin-name names what `push -` reads from standard input: give - as a source');
    await transfer(ctx, args, direction, words);
    return;
  }
  // push -: standard input, spooled to a private temp file first (stdin-spool.ts).
  if (words.slice(0, -1).filter((w) => w === STDIN_SOURCE).length > 1) throw new ClawpeerError('USAGE', 'push reads standard input (-) once');
  const fromStdin = patternFileOnStdin(args);
  if (fromStdin !== undefined) throw new ClawpeerError('USAGE', `--${fromStdin} - and the source - both read standard input: give the patterns in a file`);
  if (args['remove-source-files'] === true) throw new ClawpeerError('USAGE', '--remove-source-files with the source -: standard input is not a file to remove');
  const spool = await spoolStdin(stdinName(flagText(args['stdin-name'] ?? DEFAULT_STDIN_NAME)), process.stdin, ctx.signal);
  try {
    await transfer(ctx, args, direction, words.map((w, i) => (i === stdinAt ? spool.path : w)));
  } finally {
    await spool.remove();
  }
}

/**
 * push --files-from LIST BASE REMOTE and pull --files-from LIST REMOTE LOCAL_DIR: the listed
 * paths, relative to BASE (a local directory) or to REMOTE's path, each at its relative path
 * below the destination (rsync's).
 */
async function transferListed(ctx: CommandContext, args: Record<string, unknown>, direction: 'push' | 'pull', words: readonly string[]): Promise<void> {
  const list = argWord(String(args['files-from']));
  if (direction === 'push') {
    if (words.length !== 2 || words[0] === STDIN_SOURCE) throw new ClawpeerError('USAGE', 'push --files-from LIST takes one base directory the listed paths are relative to: push --files-from LIST DIR PEER[:SHARE[/PATH]]');
    const base = words[0] ?? '';
    if (statSync(base, { throwIfNoEntry: false })?.isDirectory() !== true) throw new ClawpeerError('USAGE', `--files-from: ${base} is not a directory (the listed paths are relative to it)`);
  } else if (words.length !== 2 || words[1] === STDOUT_DESTINATION) {
    throw new ClawpeerError('USAGE', 'pull --files-from LIST takes one remote directory the listed paths are relative to, and a local directory: pull --files-from LIST PEER:SHARE[/PATH] LOCAL_DIR');
  }
  if (args['delete'] === true) throw new ClawpeerError('USAGE', '--delete with --files-from: a list names what to send, not what the destination should hold; transfer the directory to mirror it');
  const fromStdin = patternFileOnStdin(args);
  if (list === STDIN_SOURCE && fromStdin !== undefined) throw new ClawpeerError('USAGE', `--${fromStdin} - and --files-from - both read standard input: give one of them in a file`);
  let text: string;
  try {
    text = readFileSync(list === STDIN_SOURCE ? 0 : list, 'utf8');
  } catch (err) {
    throw new ClawpeerError('USAGE', `--files-from ${list === STDIN_SOURCE ? '- (standard input)' : list}: cannot read it: ${(err as Error).message}`, { cause: err });
  }
  const paths = parseFileList(text, { from0: args['from0'] === true });
  if (paths.length === 0) {
    // As rsync: an empty list (a `find` that found nothing) is nothing to do, not a failure.
    ctx.out.summary({ event: 'done', files: 0, bytes: 0, listed: 0 }, `nothing to ${direction}: ${list === STDIN_SOURCE ? 'standard input' : list} lists no paths`);
    return;
  }
  const listBytes = fileListBytes(paths);
  if (direction === 'pull' && (paths.length > MAX_FILES_FROM_PATHS || listBytes > MAX_FILES_FROM_BYTES)) {
    throw new ClawpeerError('USAGE', `--files-from lists ${paths.length} paths (${human(listBytes)}); a pull asks for at most ${MAX_FILES_FROM_PATHS} paths and ${human(MAX_FILES_FROM_BYTES)} at once: split the list`);
  }
  await transfer(ctx, args, direction, words, { filesFrom: paths });
}

/**
 * `how.toStdout`: a pull for standard output: it must be one regular file (refused on its
 * manifest, before any chunk travels), and stdout gets no closing line. `how.filesFrom`: the
 * paths of a --files-from list (transferListed).
 */
async function transfer(ctx: CommandContext, args: Record<string, unknown>, direction: 'push' | 'pull', words: readonly string[], how: { readonly toStdout?: boolean; readonly filesFrom?: readonly string[] } = {}): Promise<void> {
  const { toStdout = false, filesFrom } = how;
  if (words.length < 2) {
    throw new ClawpeerError('USAGE', direction === 'push' ? 'push needs what to send and where: LOCAL... PEER[:SHARE[/PATH]]' : 'pull needs what to fetch and where: PEER[:SHARE[/PATH]]... LOCAL_DIR');
  }
  const sources = words.slice(0, -1);
  // Either way a remote without a share means the listener's default share (inbox).
  const remotes = direction === 'push' ? [parseRemote(words.at(-1) ?? '', false)] : sources.map((w) => parseRemote(w, false));
  const remote = remotes[0];
  if (remote === undefined) throw new TypeError('no remote');
  if (remotes.some((r) => r.peer !== remote.peer)) throw new ClawpeerError('USAGE', `pull from one peer at a time: ${remotes.map((r) => r.peer).join(', ')}`);
  const landing = remotes.filter((r) => r.path !== '').map((r) => landingName(r.path));
  const twice = landing.find((name, i) => landing.indexOf(name) !== i);
  if (twice !== undefined) throw new ClawpeerError('USAGE', `two of the pulled paths would both land as ${twice}: pull them separately`);
  const localPath = direction === 'push' ? (sources[0] ?? '') : (words.at(-1) ?? '');
  const streams = intOption(args['streams'], '--streams', 1, 64);
  const window = intOption(args['window'], '--window', 1, 4096);
  const bwlimit = bwlimitOption(args['bwlimit']);
  const dryRun = args['dry-run'] === true;
  const config = resolveConfig({ transport: args['transport'], compression: compressionFrom(args) });
  const existing = existingPolicy(args);
  const backup = backupFrom(args);
  const maxDelete = args['max-delete'] === undefined ? undefined : intOption(args['max-delete'], '--max-delete', 0, Number.MAX_SAFE_INTEGER);
  if (maxDelete !== undefined && args['delete'] !== true) throw new ClawpeerError('USAGE', '--max-delete limits --delete: give --delete too');
  const removeSourceFiles = args['remove-source-files'] === true;
  if (removeSourceFiles && direction === 'pull') throw new ClawpeerError('USAGE', '--remove-source-files applies to push: a pull does not remove the listener\'s files');
  if (removeSourceFiles && existing !== undefined) throw new ClawpeerError('USAGE', `--remove-source-files with --${existing === 'keep' ? 'ignore-existing' : 'update'}: a kept file was not copied, and which ones were kept is not known here`);
  const sizes = sizesFrom(args);
  if (sizes !== undefined && args['delete'] === true) throw new ClawpeerError('USAGE', '--delete with --min-size/--max-size: a file left out for its size would look gone from the source and be removed; run them separately');
  const modeChange = combineChmods(argWords(args, 'chmod'));
  const copyLinks = copyLinksFrom(args);
  if (copyLinks !== undefined && removeSourceFiles) throw new ClawpeerError('USAGE', `--remove-source-files with --${copyLinks === 'all' ? 'copy-links' : 'copy-unsafe-links'}: what a link points to was sent, and removing the link would not move it`);
  const rules = filterRulesInOrder(ctx.argv, { included: argWords(args, 'include'), excluded: argWords(args, 'exclude'), includeFrom: argWords(args, 'include-from'), excludeFrom: argWords(args, 'exclude-from') });
  const excludeRules = rules.length === 0 ? undefined : compileFilter(rules);
  if (direction === 'pull' && !dryRun) for (const r of remotes) await sweepPullDestination(ctx, localPath, filesFrom === undefined ? r.path : '');
  const identity = await loadIdentity(ctx.home.identityKeyFile);
  const peer = await resolvePeer(new PeerStore(ctx.home.peersFile), remote.peer, args['addr'] as string | undefined);
  const { dialPeer } = await import('../../session/dialer.js');
  const { push, pull } = await import('../../push-pull/transfer-client.js');
  const { dialPathsFor } = await import('../dial-paths.js');
  const session = await dialPeer({ identity, peer, config, log: ctx.log.child(direction), signal: ctx.signal, paths: await dialPathsFor(ctx, identity, peer) });
  const progress = createProgress(ctx.out);
  let delivered = false;
  const untell = session.tellPeerIfInterrupted(ctx.signal, direction);
  try {
    const options = {
      session, share: remote.share, remotePath: remote.path, localPath, ...(direction === 'push' && sources.length > 1 ? { sources } : {}), force: args['force'] === true, streams, window,
      idleTimeoutMs: config.idleTimeoutMs, log: ctx.log.child(direction), signal: ctx.signal,
      ...(progress.active ? { onProgress: (p: Parameters<typeof progress.update>[0]) => progress.update(p) } : {}),
      ...(excludeRules === undefined ? {} : { excludeRules }),
      ...(bwlimit === undefined ? {} : { bwlimit }),
      ...(dryRun ? { dryRun } : {}),
      ...(args['delete'] === true ? { delete: true } : {}),
      ...(existing === undefined ? {} : { existing }),
      ...(removeSourceFiles ? { removeSourceFiles } : {}),
      ...(backup === undefined ? {} : { backup }),
      ...(maxDelete === undefined ? {} : { maxDelete }),
      ...(args['itemize-changes'] === true ? { itemize: true } : {}),
      ...(fsyncOption(args['fsync']) === 'none' ? { fsync: 'none' as const } : {}),
      ...(toStdout ? { singleFile: true } : {}),
      ...(filesFrom === undefined ? {} : { filesFrom }),
      ...(copyLinks === undefined ? {} : { copyLinks }),
      ...(sizes === undefined ? {} : { sizes }),
      ...(modeChange === undefined ? {} : { modeChange }),
      nodeId: identity.nodeId,
    };
    // Several remotes: one pull after another on this session, reported as one (one count up).
    const pulled: TransferResult[] = [];
    const pullProgress = progress.active && remotes.length > 1 ? new SequentialProgress((p) => progress.update(p)) : undefined;
    if (direction === 'pull') {
      for (const r of remotes) {
        pulled.push(await pull({ ...options, share: r.share, remotePath: r.path, ...(pullProgress === undefined ? {} : { onProgress: pullProgress.next() }) }));
      }
    }
    const result = direction === 'push' ? await push(options) : combineResults(pulled);
    progress.stop();
    const verb = direction === 'push' ? 'pushed' : 'pulled';
    reportPublished(ctx, result);
    reportDeleted(ctx, result, result.dryRun !== undefined);
    for (const p of result.sourceChanged ?? []) ctx.out.emit({ event: 'source-kept', path: p }, `not removed, changed or gone since it was sent: ${p}`);
    if (result.dryRun !== undefined) reportDryRun(ctx, verb, result, result.dryRun);
    else if (!toStdout) report(ctx, verb, result, { path: session.path(), rttMs: Math.round(session.rttMs() * 1000) / 1000 });
    // A push ends on the listener's transfer-done: it has everything we sent, so no linger. A
    // pull ends on our own transfer-done, which the linger sees delivered.
    delivered = direction === 'push';
    if (result.deletesOverLimit !== undefined) {
      const what = result.dryRun === undefined ? 'none was removed (everything else was published)' : 'a real run would remove none';
      throw new ClawpeerError('DELETE_LIMIT', `--delete would remove ${result.deletesOverLimit} paths, more than --max-delete ${maxDelete ?? 0}: ${what}`);
    }
  } catch (err) {
    // Stopped by SIGINT/SIGTERM (the peer was told, above): the user hears that a rerun resumes
    // (partials are kept on both sides).
    const stopped: unknown = ctx.signal.reason;
    if (!ctx.signal.aborted || !isInterruption(stopped)) throw await session.reasonFor(err);
    const kept = direction === 'push' ? 'what the peer received is kept' : 'what arrived is kept';
    throw new ClawpeerError(stopped.code, `${direction} ${stopped.message}: ${kept}; run the same command again to ${direction === 'push' ? 'send' : 'fetch'} the rest`, { cause: err });
  } finally {
    untell();
    progress.stop();
    await session.close('done', { linger: !delivered });
  }
}

/**
 * Before a pull: removes stale `.clawpeer-tmp-*` files a killed earlier pull left where this one
 * stages (LOCAL itself, and the tree it lands in: LOCAL/<last segment of the remote path>, or all
 * of LOCAL for a whole share): those of a writer that is no longer running, and any older than
 * store/temp-files.ts STALE_TEMP_AGE_MS; a younger one of a live process may belong to a pull running
 * right now. A failure here is logged, never fatal.
 */
async function sweepPullDestination(ctx: CommandContext, localPath: string, remotePath: string): Promise<void> {
  const { removeStaleTempFilesAt } = await import('../../store/temp-files.js');
  const lands = remotePath === '' ? '' : (remotePath.split('/').filter((s) => s !== '').at(-1) ?? '');
  try {
    const removed = await removeStaleTempFilesAt(localPath, lands, { nowMs: Date.now(), signal: ctx.signal });
    if (removed > 0) ctx.log.info('removed stale temp files left by an earlier pull', { dir: localPath, removed });
  } catch (err) {
    ctx.log.warn('cannot sweep stale temp files', { dir: localPath, error: (err as Error).message });
  }
}

export function registerTransferCommands(cli: Argv, runner: Runner): Argv {
  return cli
    .command(
      'push <paths..>',
      'send files or trees to a peer: push LOCAL... PEER[:SHARE[/PATH]] (default share: inbox); each LOCAL lands inside PATH under its own name',
      (y) =>
        transferOptions(y.positional('paths', { type: 'string', array: true, describe: 'LOCAL... then PEER[:SHARE[/PATH]]; LOCAL - is standard input' }))
          .option('stdin-name', {
            type: 'string',
            requiresArg: true,
            describe: `with the source -: the name what is piped in lands under (default ${DEFAULT_STDIN_NAME})`,
          })
          .option('copy-links', { alias: 'L', type: 'boolean', describe: 'send each symlink as what it points to: the file, or the directory and all in it (rsync -L)' })
          .option('copy-unsafe-links', { type: 'boolean', describe: 'send only the symlinks that lead out of the tree as what they point to (without it they are skipped; rsync --copy-unsafe-links)' })
          .example('$0 push ./photos alice', 'lands in alice\'s inbox share as inbox/photos')
          .example('$0 push report.pdf notes.txt alice:docs/2026', 'two files into docs/2026 of alice\'s share docs')
          .example('$0 push -n --delete ./site alice:www', 'show what a mirror would publish and remove, change nothing')
          .example('tar c dir | $0 push --stdin-name dir.tar - alice', 'send what is piped in, as inbox/dir.tar'),
      runner((ctx, args) => run(ctx, args, 'push')),
    )
    .command(
      'pull <paths..>',
      'fetch files or trees from a peer: pull PEER[:SHARE[/PATH]]... LOCAL_DIR (default share: inbox); each lands inside LOCAL_DIR under its own name',
      (y) =>
        transferOptions(y.positional('paths', { type: 'string', array: true, describe: 'PEER[:SHARE[/PATH]]... then LOCAL_DIR; LOCAL_DIR - writes one pulled file to standard output' }))
          .option('copy-links', { alias: 'L', type: 'boolean', describe: 'fetch each symlink as what it points to, when that is inside the peer\'s share (rsync -L)' })
          .option('copy-unsafe-links', { type: 'boolean', describe: 'fetch the symlinks that lead out of the pulled tree as what they point to, when that is inside the peer\'s share (rsync --copy-unsafe-links)' }),
      runner((ctx, args) => run(ctx, args, 'pull')),
    );
}
