// Which push/pull options combine, and what they mean for transfer-client.ts: the rules a
// command line (or any other caller) is checked against before anything connects. Every
// refusal is a USAGE error naming the flags as the CLI spells them.
import { ClawpeerError } from '../errors.js';
import { human, parseSize } from '../format.js';
import { fileListBytes, MAX_FILES_FROM_BYTES, MAX_FILES_FROM_PATHS } from '../protocol/messages.js';
import { backupPlan, type BackupPlan } from '../store/backups.js';
import { combineChmods, type ModeChange } from '../transfer/chmod.js';
import { compileFilter, type ExcludeRules, type FilterRule } from '../transfer/exclude.js';
import type { SizeRange } from '../exchange/transfer-source.js';

export { DEFAULT_BACKUP_SUFFIX } from '../store/backups.js';
export { parseFileList } from '../transfer/file-list.js';
export type { FilterRule } from '../transfer/exclude.js';

/** The flags of one push or pull, as given (absent: undefined or false). */
export interface TransferFlags {
  readonly direction: 'push' | 'pull';
  readonly force: boolean;
  readonly ignoreExisting: boolean;
  readonly update: boolean;
  readonly delete: boolean;
  /** --max-delete, already checked to be a count. */
  readonly maxDelete?: number | undefined;
  readonly removeSourceFiles: boolean;
  readonly backup: boolean;
  readonly backupDir?: string | undefined;
  readonly suffix?: string | undefined;
  /** --min-size / --max-size as typed (4096, 64K, 1.5MiB, 2GB). */
  readonly minSize?: string | undefined;
  readonly maxSize?: string | undefined;
  /** --chmod clauses, in order. */
  readonly chmod: readonly string[];
  readonly copyLinks: boolean;
  readonly copyUnsafeLinks: boolean;
  /** --include/--exclude rules in command-line order (the first match decides). */
  readonly filterRules: readonly FilterRule[];
}

/** What the flags ask of transfer-client.ts (only what was given). */
export interface TransferChoices {
  readonly existing?: 'keep' | 'update';
  readonly backup?: BackupPlan;
  readonly maxDelete?: number;
  readonly removeSourceFiles?: boolean;
  readonly sizes?: SizeRange;
  readonly modeChange?: ModeChange;
  readonly copyLinks?: 'all' | 'unsafe';
  readonly excludeRules?: ExcludeRules;
}

/** Checks how the flags combine and turns them into transfer options; USAGE naming the clash otherwise. */
export function transferChoices(f: TransferFlags): TransferChoices {
  const existing = existingPolicy(f);
  const backup = backupFrom(f);
  const { maxDelete } = f;
  if (maxDelete !== undefined && !f.delete)
    throw new ClawpeerError('USAGE', '--max-delete limits --delete: give --delete too');
  const removeSourceFiles = f.removeSourceFiles;
  if (removeSourceFiles && f.direction === 'pull')
    throw new ClawpeerError(
      'USAGE',
      "--remove-source-files applies to push: a pull does not remove the listener's files",
    );
  if (removeSourceFiles && existing !== undefined)
    throw new ClawpeerError(
      'USAGE',
      `--remove-source-files with --${existing === 'keep' ? 'ignore-existing' : 'update'}: a kept file was not copied, and which ones were kept is not known here`,
    );
  const sizes = sizesFrom(f);
  if (sizes !== undefined && f.delete)
    throw new ClawpeerError(
      'USAGE',
      '--delete with --min-size/--max-size: a file left out for its size would look gone from the source and be removed; run them separately',
    );
  const modeChange = combineChmods(f.chmod);
  const copyLinks = copyLinksFrom(f);
  if (copyLinks !== undefined && removeSourceFiles)
    throw new ClawpeerError(
      'USAGE',
      `--remove-source-files with --${copyLinks === 'all' ? 'copy-links' : 'copy-unsafe-links'}: what a link points to was sent, and removing the link would not move it`,
    );
  const excludeRules = f.filterRules.length === 0 ? undefined : compileFilter(f.filterRules);
  return {
    ...(removeSourceFiles ? { removeSourceFiles } : {}),
    ...(existing === undefined ? {} : { existing }),
    ...(backup === undefined ? {} : { backup }),
    ...(maxDelete === undefined ? {} : { maxDelete }),
    ...(sizes === undefined ? {} : { sizes }),
    ...(modeChange === undefined ? {} : { modeChange }),
    ...(copyLinks === undefined ? {} : { copyLinks }),
    ...(excludeRules === undefined ? {} : { excludeRules }),
  };
}

/** A pull's --files-from list goes to the listener in one request: refused when over its caps. */
export function checkPullList(paths: readonly string[]): void {
  const listBytes = fileListBytes(paths);
  if (paths.length > MAX_FILES_FROM_PATHS || listBytes > MAX_FILES_FROM_BYTES) {
    throw new ClawpeerError(
      'USAGE',
      `--files-from lists ${paths.length} paths (${human(listBytes)}); a pull asks for at most ${MAX_FILES_FROM_PATHS} paths and ${human(MAX_FILES_FROM_BYTES)} at once: split the list`,
    );
  }
}

/** --ignore-existing or --update; each excludes --force and the other (they say what happens to the same files). */
function existingPolicy(f: TransferFlags): 'keep' | 'update' | undefined {
  const given = (['force', 'ignore-existing', 'update'] as const).filter((flag) =>
    flag === 'force' ? f.force : flag === 'ignore-existing' ? f.ignoreExisting : f.update,
  );
  if (given.length > 1)
    throw new ClawpeerError(
      'USAGE',
      `--${given.join(' and --')} exclude each other: they decide the same thing (what happens to a different file already there)`,
    );
  if (f.ignoreExisting) return 'keep';
  return f.update ? 'update' : undefined;
}

/** --backup, --backup-dir (implies --backup) and --suffix as a plan; undefined without them. */
function backupFrom(f: TransferFlags): BackupPlan | undefined {
  const dir = f.backupDir;
  const suffix = f.suffix;
  if (!f.backup && dir === undefined) {
    if (suffix !== undefined)
      throw new ClawpeerError('USAGE', '--suffix names backups: give --backup or --backup-dir too');
    return undefined;
  }
  if (dir === '')
    throw new ClawpeerError(
      'USAGE',
      '--backup-dir is empty: name a directory, or leave it out to keep backups beside the files',
    );
  return backupPlan(dir, suffix);
}

/** --min-size / --max-size as bounds (0 or absent: none, as rsync); USAGE for text that is not a size, or bounds that leave nothing. */
function sizesFrom(f: TransferFlags): SizeRange | undefined {
  const bound = (flag: 'min-size' | 'max-size', value: string | undefined): number | undefined => {
    if (value === undefined) return undefined;
    const bytes = parseSize(value);
    if (bytes === undefined)
      throw new ClawpeerError(
        'USAGE',
        `--${flag} ${JSON.stringify(value)}: expected a size such as 4096, 64K, 1.5MiB or 2GB`,
      );
    return bytes === 0 ? undefined : bytes;
  };
  const min = bound('min-size', f.minSize);
  const max = bound('max-size', f.maxSize);
  if (min !== undefined && max !== undefined && min > max)
    throw new ClawpeerError(
      'USAGE',
      `--min-size ${f.minSize ?? ''} is more than --max-size ${f.maxSize ?? ''}: no file would go`,
    );
  if (min === undefined && max === undefined) return undefined;
  return { ...(min === undefined ? {} : { min }), ...(max === undefined ? {} : { max }) };
}

/** -L (every symlink) or --copy-unsafe-links (those leading out of the tree) sent as what they point to; rsync's. */
function copyLinksFrom(f: TransferFlags): 'all' | 'unsafe' | undefined {
  if (f.copyLinks && f.copyUnsafeLinks)
    throw new ClawpeerError(
      'USAGE',
      '--copy-links follows every symlink, --copy-unsafe-links only those leading out of the tree: give one',
    );
  return f.copyLinks ? 'all' : f.copyUnsafeLinks ? 'unsafe' : undefined;
}
