// A synced folder's ignore file: `.clawpeerignore` at its root, one pattern per line, with the
// rules of push's --exclude (transfer/exclude.ts: `*.log`, `node_modules/`, `/build`, `a/**/b`).
// Lines that are empty or start with `#` are skipped. A line `!pattern` includes what it matches
// (Syncthing's negation); the first line that matches a path decides, as rsync's include and
// exclude rules do, and an ignored directory is not entered, so `!` cannot bring back a path
// below one (`!/build/keep` before `/build/*` keeps build/keep; a literal leading `!` is `\!`).
//
// What it means (as Syncthing's .stignore): this side does not sync the paths it matches. Its
// scan does not enter or record them, and a path that was synced before and is ignored now is
// not recorded as deleted; the peer's revisions of them are kept in the log, so both logs still
// converge, but the folder's files are not touched. The file itself is never synced: each side
// keeps its own. The peer's revisions of a path that arrived while it was ignored are applied
// when it stops being ignored by the listener's folder service (folders/unignored-catch-up.ts);
// a CLI sync without a listener applies only the path's next change.
// Non-goals: patterns in subdirectories' own files.
import path from 'node:path';
import { ClawpeerError } from '../errors.js';
import { compileFilter, quotePattern, type ExcludeRules } from '../transfer/exclude.js';
import { readBounded } from '../support/read-bounded.js';

export const IGNORE_FILE_NAME = '.clawpeerignore';
/** An ignore file's size at most: far beyond any list of patterns, short of a file put there by mistake. */
const MAX_IGNORE_FILE_BYTES = 4 << 20;

export interface SyncIgnore {
  /** The patterns as written (`!` and all), in file order. */
  readonly patterns: readonly string[];
  /** True when the entry itself matches (a walk that does not enter ignored directories asks this). */
  matches(relPath: string, isDir: boolean): boolean;
  /**
   * True when the path or any directory above it is ignored. `isDir` 'either': the kind is not
   * known (a watch event), so the path itself must be ignored as a file and as a directory.
   */
  ignores(relPath: string, isDir: boolean | 'either'): boolean;
}

/** One line of an ignore file: its pattern (without a leading `!`), whether it includes, its line (1-based). */
export interface IgnorePattern {
  readonly pattern: string;
  readonly include: boolean;
  readonly line: number;
}

/** The patterns of an ignore file's text: one per line; blank lines and `#` comments are skipped. */
export function parseIgnoreFile(text: string): IgnorePattern[] {
  return text.split('\n').flatMap((raw, i) => {
    const line = raw.replace(/\r$/, '');
    if (line.trim().length === 0 || line.startsWith('#')) return [];
    const include = line.startsWith('!');
    return [{ pattern: include ? line.slice(1) : line, include, line: i + 1 }];
  });
}

function written(p: IgnorePattern): string {
  return p.include ? `!${p.pattern}` : p.pattern;
}

/** The rules of `patterns`; USAGE naming `source` and the line of a malformed pattern. */
export function syncIgnoreFrom(patterns: readonly IgnorePattern[], source = IGNORE_FILE_NAME): SyncIgnore {
  const lineOf = (i: number): string => {
    const p = patterns[i];
    return p === undefined ? source : `${source} line ${p.line}: ${quotePattern(written(p))}`;
  };
  const rules: ExcludeRules | undefined =
    patterns.length === 0 ? undefined : compileFilter(patterns, { source, labelOf: lineOf });
  const matches = (relPath: string, isDir: boolean): boolean =>
    relPath === IGNORE_FILE_NAME || (rules?.excludes(relPath, isDir) ?? false);
  return {
    patterns: patterns.map(written),
    matches,
    ignores(relPath: string, isDir: boolean | 'either'): boolean {
      if (relPath === IGNORE_FILE_NAME) return true;
      if (rules === undefined) return false;
      for (let slash = relPath.indexOf('/'); slash >= 0; slash = relPath.indexOf('/', slash + 1)) {
        if (rules.excludes(relPath.slice(0, slash), true)) return true;
      }
      return isDir === 'either'
        ? rules.excludes(relPath, false) && rules.excludes(relPath, true)
        : rules.excludes(relPath, isDir);
    },
  };
}

/** The ignore rules of the synced folder `dir` (only the ignore file itself when it has none). */
export async function loadSyncIgnore(dir: string): Promise<SyncIgnore> {
  const file = path.join(dir, IGNORE_FILE_NAME);
  let text: string;
  try {
    // Bounded, and a regular file only: a FIFO in its place blocked every scan of the folder.
    text = (await readBounded(file, MAX_IGNORE_FILE_BYTES)).toString('utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return syncIgnoreFrom([]);
    throw new ClawpeerError('IO', `cannot read ${file}: ${(err as Error).message}`, { cause: err });
  }
  return syncIgnoreFrom(parseIgnoreFile(text), file);
}
