// Exclude patterns for push and pull (`--exclude`), with rsync's and gitignore's rules:
//   - a pattern without a slash matches a name at any depth (`*.log`, `node_modules`);
//   - a pattern with a slash matches the path from the transferred directory down (`build/out`,
//     `/build`: a leading slash only anchors, it never means the file-system root);
//   - a trailing slash matches directories only (`cache/`);
//   - `*` is any run of characters but `/`, `?` one character but `/`, `[abc]` / `[a-z]` /
//     `[!abc]` a class; `**` as a whole path segment is any number of directories (`a/**/b`,
//     `**/cache`, `logs/**`); a backslash makes the next character literal.
// An excluded directory is not entered. Sans-I/O: the scanner asks, per entry.
//
// Not regular expressions: patterns come from a peer too (a pull's request), and a backtracking
// regex of a pattern like `*a*a*a*a*b` took 37 s on a 40-character name. Here a segment is matched
// by the two-pointer wildcard algorithm (O(name x pattern)) and `**` by a table over segments
// (O(path segments x pattern segments)).
import { ClawpeerError } from '../errors.js';

/** More than this many patterns is almost certainly a mistake (a glob expanded by the shell). */
export const MAX_EXCLUDE_PATTERNS = 1024;
const MAX_PATTERN_CHARS = 1024;
/**
 * All patterns together. Matching one entry costs at most (pattern characters x path
 * characters) steps, so this bounds what a peer's patterns can make a listener do per entry.
 */
export const MAX_EXCLUDE_TOTAL_CHARS = 16 << 10;

/** One position of a segment pattern. */
type Token =
  | { readonly kind: 'char'; readonly char: string }
  | { readonly kind: 'any' } // ?
  | { readonly kind: 'star' } // *
  | { readonly kind: 'class'; readonly test: (c: string) => boolean };

/** A path segment pattern, or `**` (any number of segments). */
type Segment = readonly Token[] | 'globstar';

interface Rule {
  readonly segments: readonly Segment[];
  readonly dirOnly: boolean;
  /** Matched against the whole relative path (the pattern had a slash), else against the name. */
  readonly anchored: boolean;
}

export interface ExcludeRules {
  /** True when `relPath` (relative to the transferred directory, '/'-separated) is excluded. */
  excludes(relPath: string, isDir: boolean): boolean;
  readonly patterns: readonly string[];
}

function usage(pattern: string, why: string): ClawpeerError {
  return new ClawpeerError('USAGE', `--exclude ${JSON.stringify(pattern)}: ${why}`);
}

/** `[...]` starting at `chars[start]` ('['): its token and the index after its ']'. */
function parseClass(chars: readonly string[], start: number, original: string): { token: Token; next: number } {
  let i = start + 1;
  const negate = chars[i] === '!' || chars[i] === '^';
  if (negate) i++;
  const singles = new Set<string>();
  const ranges: [string, string][] = [];
  let first = true;
  for (;;) {
    let c = chars[i];
    if (c === undefined) throw usage(original, 'has a [ without its ]');
    if (c === ']' && !first) break;
    first = false;
    if (c === '\\') {
      c = chars[++i];
      if (c === undefined) throw usage(original, 'ends with a lone backslash');
    }
    const hi = chars[i + 2];
    if (chars[i + 1] === '-' && hi !== undefined && hi !== ']') {
      ranges.push([c, hi]);
      i += 3;
    } else {
      singles.add(c);
      i++;
    }
  }
  const inClass = (ch: string): boolean => singles.has(ch) || ranges.some(([lo, top]) => ch >= lo && ch <= top);
  return { token: { kind: 'class', test: (ch) => ch !== '/' && inClass(ch) !== negate }, next: i + 1 };
}

function parseSegment(text: string, original: string): Segment {
  if (text === '**') return 'globstar';
  const tokens: Token[] = [];
  const chars = Array.from(text); // by code point: `?` and classes take a whole character
  for (let i = 0; i < chars.length; ) {
    const c = chars[i] ?? '';
    if (c === '\\') {
      const next = chars[i + 1];
      if (next === undefined) throw usage(original, 'ends with a lone backslash');
      tokens.push({ kind: 'char', char: next });
      i += 2;
    } else if (c === '[') {
      const { token, next } = parseClass(chars, i, original);
      tokens.push(token);
      i = next;
    } else {
      if (c === '*') {
        if (tokens.at(-1)?.kind !== 'star') tokens.push({ kind: 'star' }); // `**` inside a segment is `*`
      } else {
        tokens.push(c === '?' ? { kind: 'any' } : { kind: 'char', char: c });
      }
      i++;
    }
  }
  return tokens;
}

function tokenMatches(t: Token, c: string): boolean {
  switch (t.kind) {
    case 'char':
      return t.char === c;
    case 'any':
      return c !== '/';
    case 'class':
      return t.test(c);
    case 'star':
      return false;
  }
}

/** Wildcard match of one name: the two-pointer algorithm, backtracking only to the last star. */
function matchSegment(tokens: readonly Token[], name: readonly string[]): boolean {
  let ti = 0;
  let ni = 0;
  let starTi = -1;
  let starNi = 0;
  while (ni < name.length) {
    const t = tokens[ti];
    if (t !== undefined && t.kind === 'star') {
      starTi = ti++;
      starNi = ni;
    } else if (t !== undefined && tokenMatches(t, name[ni] ?? '')) {
      ti++;
      ni++;
    } else if (starTi >= 0) {
      ti = starTi + 1;
      ni = ++starNi;
    } else {
      return false;
    }
  }
  while (tokens[ti]?.kind === 'star') ti++;
  return ti === tokens.length;
}

/** Segments against path segments; `**` takes any number of them. A table, not recursion. */
function matchPath(segments: readonly Segment[], parts: readonly (readonly string[])[]): boolean {
  // can[i][j]: segments from i match parts from j.
  const rows = segments.length + 1;
  const cols = parts.length + 1;
  const can = new Uint8Array(rows * cols);
  can[segments.length * cols + parts.length] = 1;
  for (let i = segments.length - 1; i >= 0; i--) {
    const seg = segments[i];
    for (let j = parts.length; j >= 0; j--) {
      let ok = false;
      if (seg === 'globstar') ok = can[(i + 1) * cols + j] === 1 || (j < parts.length && can[i * cols + j + 1] === 1);
      else if (seg !== undefined && j < parts.length) ok = matchSegment(seg, parts[j] ?? []) && can[(i + 1) * cols + j + 1] === 1;
      can[i * cols + j] = ok ? 1 : 0;
    }
  }
  return can[0] === 1;
}

/** Compiles `patterns`; USAGE naming the pattern for an empty, over-long or malformed one. */
export function compileExcludes(patterns: readonly string[]): ExcludeRules {
  if (patterns.length > MAX_EXCLUDE_PATTERNS) throw new ClawpeerError('USAGE', `${patterns.length} --exclude patterns, more than ${MAX_EXCLUDE_PATTERNS}`);
  const total = patterns.reduce((sum, p) => sum + p.length, 0);
  if (total > MAX_EXCLUDE_TOTAL_CHARS) throw new ClawpeerError('USAGE', `--exclude patterns add up to ${total} characters, more than ${MAX_EXCLUDE_TOTAL_CHARS}`);
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
    const segments = body.split('/').filter((s) => s !== '').map((s) => parseSegment(s, pattern));
    return { segments, dirOnly, anchored };
  });
  return {
    patterns: [...patterns],
    excludes(relPath: string, isDir: boolean): boolean {
      if (relPath === '') return false; // the transferred root itself
      const parts = relPath.split('/').map((p) => Array.from(p));
      const name = parts.slice(-1);
      for (const r of rules) {
        if (r.dirOnly && !isDir) continue;
        if (matchPath(r.segments, r.anchored ? parts : name)) return true;
      }
      return false;
    },
  };
}
