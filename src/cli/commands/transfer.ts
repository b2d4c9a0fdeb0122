// `push` and `pull`: move files and trees to and from a paired peer's shares.
import { readFileSync, statSync } from 'node:fs';
import type { Argv } from 'yargs';
import { ClawpeerError } from '../../errors.js';
import { resolveConfig } from '../../home/facade.js';
import { pullFromPeer, pushToPeer } from '../../push-pull/transfer-with-peer.js';
import {
  checkPullList,
  DEFAULT_BACKUP_SUFFIX,
  parseFileList,
  transferChoices,
} from '../../push-pull/transfer-options.js';
import type { CommandContext, Runner } from '../context.js';
import {
  argWord,
  BWLIMIT_OPTION,
  flagText,
  bwlimitOption,
  COMPRESS_OPTION,
  CONNECTIONS_OPTION,
  connectionsOption,
  compressionFrom,
  filterRulesInOrder,
  FSYNC_OPTION,
  fsyncOption,
  intOption,
  parseRemote,
  TRANSPORT_OPTION,
} from '../args.js';
import {
  partialMessage,
  report,
  reportDeleted,
  reportDryRun,
  reportPublished,
  reportRefused,
  reportSourceKept,
  reportUnreadable,
} from '../transfer-report.js';
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
    .option('connections', CONNECTIONS_OPTION)
    .option('window', {
      type: 'number',
      default: DEFAULT_WINDOW,
      describe: 'unacknowledged chunks in flight per stream',
    })
    .option('force', { type: 'boolean', default: false, describe: 'replace existing different files' })
    .option('ignore-existing', {
      type: 'boolean',
      default: false,
      describe: 'keep different files already at the destination instead of failing (rsync --ignore-existing)',
    })
    .option('update', {
      alias: 'u',
      type: 'boolean',
      default: false,
      describe: 'replace different files already at the destination unless they are newer (mtime; rsync --update)',
    })
    .option('addr', { type: 'string', describe: "HOST:PORT (default: the pair entry's address)" })
    .option('transport', TRANSPORT_OPTION)
    .option('compress', COMPRESS_OPTION)
    .option('exclude', {
      type: 'string',
      array: true,
      nargs: 1,
      default: [] as string[],
      describe: 'leave out matching files and directories (repeatable; rsync-style: *.log, node_modules/, /build)',
    })
    .option('include', {
      type: 'string',
      array: true,
      nargs: 1,
      default: [] as string[],
      describe:
        'keep matching files and directories that a later --exclude would leave out (repeatable; the first matching --include/--exclude decides, as in rsync)',
    })
    .option('exclude-from', {
      type: 'string',
      array: true,
      nargs: 1,
      default: [] as string[],
      describe:
        'read --exclude patterns from FILE, one per line (blank lines and lines starting with # or ; skipped; - is standard input), in place of the flag',
    })
    .option('include-from', {
      type: 'string',
      array: true,
      nargs: 1,
      default: [] as string[],
      describe: 'read --include patterns from FILE, as --exclude-from',
    })
    .option('bwlimit', BWLIMIT_OPTION)
    .option('fsync', FSYNC_OPTION)
    .option('dry-run', {
      alias: 'n',
      type: 'boolean',
      default: false,
      describe: 'show what would be sent and published, without writing anything or sending any chunk',
    })
    .option('remove-source-files', {
      type: 'boolean',
      default: false,
      describe:
        'push: once the listener has published everything, remove the sent files and symlinks here, unless they changed meanwhile (rsync --remove-source-files; directories stay)',
    })
    .option('delete', {
      type: 'boolean',
      default: false,
      describe:
        'once all is published, remove what the transferred directories hold and the source does not (rsync --delete); what --exclude leaves out is never removed',
    })
    .option('itemize-changes', {
      alias: 'i',
      type: 'boolean',
      default: false,
      describe:
        'list each file published and each directory and symlink created, as rsync -i: >f+++++++++ PATH for a new file, >fc........ PATH for one that replaced a different file, cd+++++++++ DIR/, cL+++++++++ LINK -> TARGET, .f..tp..... PATH for an identical file whose mtime (t) or permissions (p) were set',
    })
    .option('files-from', {
      type: 'string',
      requiresArg: true,
      describe:
        'transfer the paths FILE lists, one per line (- is standard input), relative to the one source directory (push: LOCAL, pull: PEER:SHARE[/PATH]), each landing at its relative path with the directories it lies in (rsync --files-from; a listed directory goes whole; blank lines and lines starting with # or ; skipped)',
    })
    .option('from0', {
      type: 'boolean',
      describe: 'the --files-from list is NUL-separated (find -print0; rsync --from0)',
    })
    .option('min-size', {
      type: 'string',
      requiresArg: true,
      describe: 'leave out files smaller than SIZE, e.g. 10K, 1.5MiB, 2GB (rsync --min-size; a pull asks the listener)',
    })
    .option('max-size', {
      type: 'string',
      requiresArg: true,
      describe: 'leave out files larger than SIZE (rsync --max-size); 0: no limit',
    })
    .option('chmod', {
      type: 'string',
      array: true,
      requiresArg: true,
      describe:
        'change the permissions things land with, as chmod(1) does (rsync --chmod): comma-separated clauses, D or F first for directories or files only, e.g. D755,F644 or go-w,+X (repeatable)',
    })
    .option('max-delete', {
      type: 'number',
      describe:
        'with --delete: when more than N paths would be removed, remove none (the rest is still published; exit 1)',
    })
    .option('backup', {
      alias: 'b',
      type: 'boolean',
      default: false,
      describe: `keep what --force, --update or --delete replaces or removes, as NAME${DEFAULT_BACKUP_SUFFIX} beside it (rsync --backup)`,
    })
    .option('backup-dir', {
      type: 'string',
      describe:
        'with --backup (implied): keep backups under DIR, relative to the destination and inside it, at their relative paths',
    })
    .option('suffix', {
      type: 'string',
      describe: `backup suffix (default ${DEFAULT_BACKUP_SUFFIX}, or none with --backup-dir)`,
    });

/** A repeatable option's (or the positionals') words, a lone `-` turned back (args.ts argWord). */
const argWords = (args: Record<string, unknown>, name: string): string[] =>
  ((args[name] as unknown[] | undefined) ?? []).map((w) => argWord(String(w)));

/** Which pattern-file flag (if any) reads standard input (`--exclude-from -`): only one reader may have it. */
const patternFileOnStdin = (args: Record<string, unknown>): string | undefined =>
  ['exclude-from', 'include-from'].find((flag) => argWords(args, flag).includes(STDIN_SOURCE));

/** The name a remote path lands under here: its last segment. */
const landingName = (remotePath: string): string => remotePath.split('/').at(-1) ?? '';

/** push or pull with the arguments yargs parsed (or plain-fast-path.ts, the same object). */
export async function runTransfer(
  ctx: CommandContext,
  args: Record<string, unknown>,
  direction: 'push' | 'pull',
): Promise<void> {
  // push LOCAL... REMOTE and pull REMOTE... LOCAL: the last word is the destination, as with rsync and scp.
  const words = argWords(args, 'paths');
  if (args['from0'] === true && args['files-from'] === undefined)
    throw new ClawpeerError('USAGE', '--from0 says how the --files-from list is separated: give --files-from too');
  if (args['files-from'] !== undefined) {
    await transferListed(ctx, args, direction, words);
    return;
  }
  if (direction === 'pull' && words.length >= 2 && words.at(-1) === STDOUT_DESTINATION) {
    // pull PEER:SHARE/FILE -: the file's bytes on standard output (stdout-pull.ts), no summary.
    const remotes = words.slice(0, -1);
    const paths = remotes.map((w) => parseRemote(w, false).path);
    checkStdoutPull(paths, args);
    await pullToStdout(landingName(paths[0] ?? ''), (dir) =>
      transfer(ctx, args, 'pull', [...remotes, dir], { toStdout: true }),
    );
    return;
  }
  const stdinAt = direction === 'push' ? words.slice(0, -1).indexOf(STDIN_SOURCE) : -1;
  if (stdinAt < 0) {
    if (args['stdin-name'] !== undefined)
      throw new ClawpeerError(
        'USAGE',
        '--stdin-name names what `push -` reads from standard input: give - as a source',
      );
    await transfer(ctx, args, direction, words);
    return;
  }
  // push -: standard input, spooled to a private temp file first (stdin-spool.ts).
  if (words.slice(0, -1).filter((w) => w === STDIN_SOURCE).length > 1)
    throw new ClawpeerError('USAGE', 'push reads standard input (-) once');
  const fromStdin = patternFileOnStdin(args);
  if (fromStdin !== undefined)
    throw new ClawpeerError(
      'USAGE',
      `--${fromStdin} - and the source - both read standard input: give the patterns in a file`,
    );
  if (args['remove-source-files'] === true)
    throw new ClawpeerError('USAGE', '--remove-source-files with the source -: standard input is not a file to remove');
  const spool = await spoolStdin(
    stdinName(flagText(args['stdin-name'] ?? DEFAULT_STDIN_NAME)),
    process.stdin,
    ctx.signal,
  );
  try {
    await transfer(
      ctx,
      args,
      direction,
      words.map((w, i) => (i === stdinAt ? spool.path : w)),
    );
  } finally {
    await spool.remove();
  }
}

/**
 * push --files-from LIST BASE REMOTE and pull --files-from LIST REMOTE LOCAL_DIR: the listed
 * paths, relative to BASE (a local directory) or to REMOTE's path, each at its relative path
 * below the destination (rsync's).
 */
async function transferListed(
  ctx: CommandContext,
  args: Record<string, unknown>,
  direction: 'push' | 'pull',
  words: readonly string[],
): Promise<void> {
  const list = argWord(String(args['files-from']));
  if (direction === 'push') {
    if (words.length !== 2 || words[0] === STDIN_SOURCE)
      throw new ClawpeerError(
        'USAGE',
        'push --files-from LIST takes one base directory the listed paths are relative to: push --files-from LIST DIR PEER[:SHARE[/PATH]]',
      );
    const base = words[0] ?? '';
    if (statSync(base, { throwIfNoEntry: false })?.isDirectory() !== true)
      throw new ClawpeerError(
        'USAGE',
        `--files-from: ${base} is not a directory (the listed paths are relative to it)`,
      );
  } else if (words.length !== 2 || words[1] === STDOUT_DESTINATION) {
    throw new ClawpeerError(
      'USAGE',
      'pull --files-from LIST takes one remote directory the listed paths are relative to, and a local directory: pull --files-from LIST PEER:SHARE[/PATH] LOCAL_DIR',
    );
  }
  if (args['delete'] === true)
    throw new ClawpeerError(
      'USAGE',
      '--delete with --files-from: a list names what to send, not what the destination should hold; transfer the directory to mirror it',
    );
  const fromStdin = patternFileOnStdin(args);
  if (list === STDIN_SOURCE && fromStdin !== undefined)
    throw new ClawpeerError(
      'USAGE',
      `--${fromStdin} - and --files-from - both read standard input: give one of them in a file`,
    );
  let text: string;
  try {
    text = readFileSync(list === STDIN_SOURCE ? 0 : list, 'utf8');
  } catch (err) {
    throw new ClawpeerError(
      'USAGE',
      `--files-from ${list === STDIN_SOURCE ? '- (standard input)' : list}: cannot read it: ${(err as Error).message}`,
      { cause: err },
    );
  }
  const paths = parseFileList(text, { from0: args['from0'] === true });
  if (paths.length === 0) {
    // As rsync: an empty list (a `find` that found nothing) is nothing to do, not a failure.
    ctx.out.summary(
      { event: 'done', files: 0, bytes: 0, listed: 0 },
      `nothing to ${direction}: ${list === STDIN_SOURCE ? 'standard input' : list} lists no paths`,
    );
    return;
  }
  if (direction === 'pull') checkPullList(paths);
  await transfer(ctx, args, direction, words, { filesFrom: paths });
}

/**
 * `how.toStdout`: a pull for standard output: it must be one regular file (refused on its
 * manifest, before any chunk travels), and stdout gets no closing line. `how.filesFrom`: the
 * paths of a --files-from list (transferListed).
 */
async function transfer(
  ctx: CommandContext,
  args: Record<string, unknown>,
  direction: 'push' | 'pull',
  words: readonly string[],
  how: { readonly toStdout?: boolean; readonly filesFrom?: readonly string[] } = {},
): Promise<void> {
  const { toStdout = false, filesFrom } = how;
  if (words.length < 2) {
    throw new ClawpeerError(
      'USAGE',
      direction === 'push'
        ? 'push needs what to send and where: LOCAL... PEER[:SHARE[/PATH]]'
        : 'pull needs what to fetch and where: PEER[:SHARE[/PATH]]... LOCAL_DIR',
    );
  }
  const sources = words.slice(0, -1);
  // Either way a remote without a share means the listener's default share (inbox).
  const remotes =
    direction === 'push' ? [parseRemote(words.at(-1) ?? '', false)] : sources.map((w) => parseRemote(w, false));
  const remote = remotes[0];
  if (remote === undefined) throw new TypeError('no remote');
  if (remotes.some((r) => r.peer !== remote.peer))
    throw new ClawpeerError('USAGE', `pull from one peer at a time: ${remotes.map((r) => r.peer).join(', ')}`);
  const landing = remotes.filter((r) => r.path !== '').map((r) => landingName(r.path));
  const twice = landing.find((name, i) => landing.indexOf(name) !== i);
  if (twice !== undefined)
    throw new ClawpeerError('USAGE', `two of the pulled paths would both land as ${twice}: pull them separately`);
  const localPath = direction === 'push' ? (sources[0] ?? '') : (words.at(-1) ?? '');
  const streams = intOption(args['streams'], '--streams', 1, 64);
  const window = intOption(args['window'], '--window', 1, 4096);
  const bwlimit = bwlimitOption(args['bwlimit']);
  const dryRun = args['dry-run'] === true;
  const config = resolveConfig({ transport: args['transport'], compression: compressionFrom(args) });
  const optional = (name: string): string | undefined => (args[name] === undefined ? undefined : flagText(args[name]));
  const maxDelete =
    args['max-delete'] === undefined
      ? undefined
      : intOption(args['max-delete'], '--max-delete', 0, Number.MAX_SAFE_INTEGER);
  const choices = transferChoices({
    direction,
    force: args['force'] === true,
    ignoreExisting: args['ignore-existing'] === true,
    update: args['update'] === true,
    delete: args['delete'] === true,
    maxDelete,
    removeSourceFiles: args['remove-source-files'] === true,
    backup: args['backup'] === true,
    backupDir: optional('backup-dir'),
    suffix: optional('suffix'),
    minSize: optional('min-size'),
    maxSize: optional('max-size'),
    chmod: argWords(args, 'chmod'),
    copyLinks: args['copy-links'] === true,
    copyUnsafeLinks: args['copy-unsafe-links'] === true,
    filterRules: filterRulesInOrder(ctx.argv, {
      included: argWords(args, 'include'),
      excluded: argWords(args, 'exclude'),
      includeFrom: argWords(args, 'include-from'),
      excludeFrom: argWords(args, 'exclude-from'),
    }),
  });
  const progress = createProgress(ctx.out);
  try {
    const options = {
      home: ctx.home,
      reach: () => ctx.reach(),
      config,
      peerName: remote.peer,
      addr: args['addr'] as string | undefined,
      localPath,
      ...(direction === 'push' && sources.length > 1 ? { sources } : {}),
      force: args['force'] === true,
      streams,
      window,
      log: ctx.log,
      signal: ctx.signal,
      ...(progress.active ? { onProgress: (p: Parameters<typeof progress.update>[0]) => progress.update(p) } : {}),
      ...choices,
      ...(bwlimit === undefined ? {} : { bwlimit }),
      ...(dryRun ? { dryRun } : {}),
      ...(args['delete'] === true ? { delete: true } : {}),
      ...(args['itemize-changes'] === true ? { itemize: true } : {}),
      ...(fsyncOption(args['fsync']) === 'none' ? { fsync: 'none' as const } : {}),
      connections: connectionsOption(args['connections']),
      ...(toStdout ? { singleFile: true } : {}),
      ...(filesFrom === undefined ? {} : { filesFrom }),
    };
    const { result, path, rttMs } =
      direction === 'push'
        ? await pushToPeer({ ...options, to: remote })
        : await pullFromPeer({ ...options, from: remotes });
    progress.stop();
    const verb = direction === 'push' ? 'pushed' : 'pulled';
    reportPublished(ctx, result);
    reportDeleted(ctx, result, result.dryRun !== undefined);
    reportRefused(ctx, result, direction === 'push' ? remote.peer : undefined);
    reportUnreadable(ctx, result, direction === 'pull' ? remote.peer : undefined, args['delete'] === true);
    reportSourceKept(ctx, result);
    if (result.dryRun !== undefined) reportDryRun(ctx, verb, result, result.dryRun);
    else if (!toStdout) report(ctx, verb, result, { path, rttMs });
    if (result.deletesOverLimit !== undefined) {
      const what =
        result.dryRun === undefined
          ? 'none was removed (everything else was published)'
          : 'a real run would remove none';
      throw new ClawpeerError(
        'DELETE_LIMIT',
        `--delete would remove ${result.deletesOverLimit} paths, more than --max-delete ${maxDelete ?? 0}: ${what}`,
      );
    }
    const partial = partialMessage(result, direction, remote.peer);
    if (partial !== undefined) throw new ClawpeerError('PARTIAL', partial);
  } finally {
    progress.stop();
  }
}

export function registerTransferCommands(cli: Argv, runner: Runner): Argv {
  return cli
    .command(
      'push <paths..>',
      'send files or trees to a peer: push LOCAL... PEER[:SHARE[/PATH]] (default share: inbox); each LOCAL lands inside PATH under its own name',
      (y) =>
        transferOptions(
          y.positional('paths', {
            type: 'string',
            array: true,
            describe: 'LOCAL... then PEER[:SHARE[/PATH]]; LOCAL - is standard input',
          }),
        )
          .option('stdin-name', {
            type: 'string',
            requiresArg: true,
            describe: `with the source -: the name what is piped in lands under (default ${DEFAULT_STDIN_NAME})`,
          })
          .option('copy-links', {
            alias: 'L',
            type: 'boolean',
            describe: 'send each symlink as what it points to: the file, or the directory and all in it (rsync -L)',
          })
          .option('copy-unsafe-links', {
            type: 'boolean',
            describe:
              'send only the symlinks that lead out of the tree as what they point to (without it they are skipped; rsync --copy-unsafe-links)',
          })
          .example('$0 push ./photos alice', "lands in alice's inbox share as inbox/photos")
          .example('$0 push report.pdf notes.txt alice:docs/2026', "two files into docs/2026 of alice's share docs")
          .example(
            '$0 push -n --delete ./site alice:www',
            'show what a mirror would publish and remove, change nothing',
          )
          .example('tar c dir | $0 push --stdin-name dir.tar - alice', 'send what is piped in, as inbox/dir.tar'),
      runner((ctx, args) => runTransfer(ctx, args, 'push')),
    )
    .command(
      'pull <paths..>',
      'fetch files or trees from a peer: pull PEER[:SHARE[/PATH]]... LOCAL_DIR (default share: inbox); each lands inside LOCAL_DIR under its own name',
      (y) =>
        transferOptions(
          y.positional('paths', {
            type: 'string',
            array: true,
            describe: 'PEER[:SHARE[/PATH]]... then LOCAL_DIR; LOCAL_DIR - writes one pulled file to standard output',
          }),
        )
          .option('copy-links', {
            alias: 'L',
            type: 'boolean',
            describe: "fetch each symlink as what it points to, when that is inside the peer's share (rsync -L)",
          })
          .option('copy-unsafe-links', {
            type: 'boolean',
            describe:
              "fetch the symlinks that lead out of the pulled tree as what they point to, when that is inside the peer's share (rsync --copy-unsafe-links)",
          }),
      runner((ctx, args) => runTransfer(ctx, args, 'pull')),
    );
}
