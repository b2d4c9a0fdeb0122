// Exclude patterns for a push (`--exclude`), with rsync's rules as far as they go here:
//   - a pattern without a slash matches a name at any depth (`*.log`, `node_modules`);
//   - a pattern with a slash matches the path from the pushed directory down (`build/out`,
//     `/build`: a leading slash only anchors, it never means the file-system root);
//   - a trailing slash matches directories only (`cache/`);
//   - `*` is any run of characters but `/`, `**` any run including `/`, `?` one character but
//     `/`, `[abc]` / `[a-z]` / `[!abc]` a class; a backslash makes the next character literal.
// An excluded directory is not entered. Sans-I/O: the scanner asks, per entry.
import { ClawpeerError } from '../errors.js';

/** More than this many patterns is almost certainly a mistake (a glob expanded by the shell). */
export const MAX_EXCLUDE_PATTERNS = 1024;
const MAX_PATTERN_CHARS = 4096;

interface Rule {
  readonly pattern: string;
  readonly regex: RegExp;
  readonly dirOnly: boolean;
  /** Matched against the whole relative path (the pattern had a slash), else against the name. */
  readonly anchored: boolean;
}

export interface ExcludeRules {
  /** True when `relPath` (relative to the pushed directory, '/'-separated) is excluded. */
  excludes(relPath: string, isDir: boolean): boolean;
  readonly patterns: readonly string[];
}

function usage(pattern: string, why: string): ClawpeerError {
  return new ClawpeerError('USAGE', `--exclude ${JSON.stringify(pattern)}: ${why}`);
}

const REGEX_SPECIAL = /[\\^$.*+?()[\]{}|/]/;

/** The regex source of a glob body (no leading or trailing slash handling here). */
function globToRegex(glob: string, original: string): string {
  let out = '';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i] ?? '';
    if (c === '\\') {
      const next = glob[i + 1];
      if (next === undefined) throw usage(original, 'ends with a lone backslash');
      out += REGEX_SPECIAL.test(next) ? `\\${next}` : next;
      i++;
    } else if (c === '*') {
      if (glob[i + 1] === '*') {
        // `**/` also matches no directory at all: `a/**/b` matches `a/b`.
        if (glob[i + 2] === '/') {
          out += '(?:.*/)?';
          i += 2;
        } else {
          out += '.*';
          i++;
        }
      } else {
        out += '[^/]*';
      }
    } else if (c === '?') {
      out += '[^/]';
    } else if (c === '[') {
      const end = glob.indexOf(']', i + 2);
      if (end < 0) throw usage(original, 'has a [ without its ]');
      let body = glob.slice(i + 1, end);
      const negate = body.startsWith('!') || body.startsWith('^');
      if (negate) body = body.slice(1);
      const escaped = body.replace(/[\\\]^]/g, (m) => `\\${m}`);
      out += negate ? `[^/${escaped}]` : `[${escaped}]`;
      i = end;
    } else {
      out += REGEX_SPECIAL.test(c) ? `\\${c}` : c;
    }
  }
  return out;
}

/** Compiles `patterns`; USAGE naming the pattern for an empty, over-long or malformed one. */
export function compileExcludes(patterns: readonly string[]): ExcludeRules {
  if (patterns.length > MAX_EXCLUDE_PATTERNS) throw new ClawpeerError('USAGE', `${patterns.length} --exclude patterns, more than ${MAX_EXCLUDE_PATTERNS}`);
  const rules: Rule[] = patterns.map((pattern) => {
    if (pattern.length === 0) throw usage(pattern, 'is empty');
    if (pattern.length > MAX_PATTERN_CHARS) throw usage(pattern.slice(0, 40) + '...', `is longer than ${MAX_PATTERN_CHARS} characters`);
    if (pattern.includes('\0')) throw usage(pattern, 'contains a NUL character');
    let body = pattern;
    const dirOnly = body.endsWith('/') && !body.endsWith('\\/');
    if (dirOnly) body = body.replace(/\/+$/, '');
    const anchored = body.includes('/');
    body = body.replace(/^\/+/, '');
    if (body.length === 0) throw usage(pattern, 'matches nothing (only slashes)');
    const source = globToRegex(body, pattern);
    let regex: RegExp;
    try {
      regex = new RegExp(`^${source}$`, 'u');
    } catch (err) {
      throw usage(pattern, `is not a valid pattern (${(err as Error).message})`);
    }
    return { pattern, regex, dirOnly, anchored };
  });
  return {
    patterns: [...patterns],
    excludes(relPath: string, isDir: boolean): boolean {
      if (relPath === '') return false; // the pushed root itself
      const name = relPath.slice(relPath.lastIndexOf('/') + 1);
      for (const r of rules) {
        if (r.dirOnly && !isDir) continue;
        if (r.regex.test(r.anchored ? relPath : name)) return true;
      }
      return false;
    },
  };
}
