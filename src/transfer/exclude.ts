// Exclude patterns for push and pull (`--exclude`), with rsync's and gitignore's rules:
//   - a pattern without a slash matches a name at any depth (`*.log`, `node_modules`);
//   - a pattern with a slash matches the path from the transferred directory down (`build/out`,
//     `/build`: a leading slash only anchors, it never means the file-system root);
//   - a trailing slash matches directories only (`cache/`);
//   - `*` is any run of characters but `/`, `?` one character but `/`, `[abc]` / `[a-z]` /
//     `[!abc]` a class; `**` as a whole path segment is any number of directories (`a/**/b`,
//     `**/cache`, `logs/**`); a backslash makes the next character literal.
// `--include PATTERN` rules (and an ignore file's `!pattern` lines) sit among the excludes, in
// order, with rsync's rule: the first rule that matches decides, and a path no rule matches is
// included. An excluded directory is not entered, so a file below it cannot be included back
// (include its directories too, e.g. `--include '*/'`). Sans-I/O: the scanner asks, per entry.
//
// Not regular expressions: patterns come from a peer too (a pull's request), and a backtracking
// regex of a pattern like `*a*a*a*a*b` took 37 s on a 40-character name. Here a segment is matched
// by the two-pointer wildcard algorithm (O(name x segment pattern)), and a path segment by
// segment against the set of pattern positions it can be at (`**` stays, others move on), kept
// per directory: an entry costs its own name against the pattern, not its whole path.
import { ClawpeerError } from '../errors.js';
import { MAX_EXCLUDE_PATTERNS, type FilterRule } from '../protocol/wire-limits.js';

export { MAX_EXCLUDE_PATTERNS, type FilterRule };

/** More than this many patterns is almost certainly a mistake (a glob expanded by the shell). */
const MAX_PATTERN_CHARS = 1024;
/**
 * All patterns together. Matching one entry costs at most (pattern characters x name
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

export interface ExcludeRules {
  /** True when `relPath` (relative to the transferred directory, '/'-separated) is excluded. */
  excludes(relPath: string, isDir: boolean): boolean;
  /** The rules, in order. */
  readonly rules: readonly FilterRule[];
  /** True when some rule includes: the rules then travel as a filter, not as plain exclude patterns. */
  readonly hasIncludes: boolean;
}

/** A pattern quoted for an error message; an over-long one cut to its start. */
export function quotePattern(pattern: string): string {
  return JSON.stringify(pattern.length > MAX_PATTERN_CHARS ? pattern.slice(0, 40) + '...' : pattern);
}

/** How errors name rules and the set of them (defaults: the CLI's flags). */
export interface FilterSource {
  /** Where the rules come from, e.g. an ignore file: set-level errors start with it. */
  readonly source?: string;
  /** What an error about rule `index` starts with; default `--include "PATTERN"` or `--exclude "PATTERN"`. */
  readonly labelOf?: (index: number) => string;
}

/** How an error names its rule (a flag and its pattern, or a file's line): built only for an error. */
type Label = () => string;

function usage(label: Label, why: string): ClawpeerError {
  return new ClawpeerError('USAGE', `${label()}: ${why}`);
}

/** `[...]` starting at `chars[start]` ('['): its token and the index after its ']'. */
function parseClass(chars: readonly string[], start: number, label: Label): { token: Token; next: number } {
  let i = start + 1;
  const negate = chars[i] === '!' || chars[i] === '^';
  if (negate) i++;
  const singles = new Set<string>();
  const ranges: [string, string][] = [];
  let first = true;
  for (;;) {
    let c = chars[i];
    if (c === undefined) throw usage(label, 'has a [ without its ]');
    if (c === ']' && !first) break;
    first = false;
    if (c === '\\') {
      c = chars[++i];
      if (c === undefined) throw usage(label, 'ends with a lone backslash');
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

function parseSegment(text: string, label: Label): Segment {
  if (text === '**') return 'globstar';
  const tokens: Token[] = [];
  const chars = Array.from(text); // by code point: `?` and classes take a whole character
  for (let i = 0; i < chars.length;) {
    const c = chars[i] ?? '';
    if (c === '\\') {
      const next = chars[i + 1];
      if (next === undefined) throw usage(label, 'ends with a lone backslash');
      tokens.push({ kind: 'char', char: next });
      i += 2;
    } else if (c === '[') {
      const { token, next } = parseClass(chars, i, label);
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

/**
 * Which segments of a pattern can come next after a path prefix (index i set: segments[i] is
 * next; index segments.length set: the whole pattern matched). `**` may match no segment, so
 * it lets the one after it in at once; a trailing `**` must take at least one segment:
 * `logs/**` is what is inside logs, not logs.
 */
type MatchState = Uint8Array;

function close(segments: readonly Segment[], state: MatchState): void {
  for (let i = 0; i < segments.length - 1; i++) if (state[i] === 1 && segments[i] === 'globstar') state[i + 1] = 1;
}

/** Writes into `next` (zeroed) the state after one more path segment: `**` takes it and stays, a segment pattern moves on. */
function step(segments: readonly Segment[], state: MatchState, part: readonly string[], next: MatchState): void {
  for (let i = 0; i < segments.length; i++) {
    if (state[i] !== 1) continue;
    const seg = segments[i];
    if (seg === 'globstar') {
      next[i] = 1;
      if (i === segments.length - 1) next[i + 1] = 1; // a trailing ** has taken one: a match
    } else if (seg !== undefined && matchSegment(seg, part)) next[i + 1] = 1;
  }
  close(segments, next);
}

/** Directories whose states are kept (all anchored rules packed in one array each); past this the cache starts over. */
const MAX_CACHED_DIRS = 1024;

interface AnchoredRule {
  readonly segments: readonly Segment[];
  /** Where this rule's state sits in a directory's packed array (segments.length + 1 entries). */
  readonly offset: number;
}

/**
 * The anchored rules' matcher: an entry's packed state, where rule r matched the entry when
 * state[r.offset + r.segments.length] is set. The scanner asks about a directory before its
 * entries, so each directory's states are kept: an entry costs one step per rule (its own name
 * against the pattern's segments), not a walk of its whole path. The cache is bounded (a
 * depth-first walk needs only the current directory's ancestors, and a miss recomputes them).
 */
function anchoredMatcher(
  rules: readonly AnchoredRule[],
): (relPath: string, name: readonly string[], isDir: boolean) => MatchState {
  const width = rules.reduce((n, r) => n + r.segments.length + 1, 0);
  const root = new Uint8Array(width);
  for (const r of rules) {
    root[r.offset] = 1;
    close(r.segments, root.subarray(r.offset, r.offset + r.segments.length + 1));
  }
  const dirs = new Map<string, MatchState>();
  const advance = (parent: MatchState, name: readonly string[]): MatchState => {
    const out = new Uint8Array(width);
    for (const r of rules) {
      const end = r.offset + r.segments.length + 1;
      step(r.segments, parent.subarray(r.offset, end), name, out.subarray(r.offset, end));
    }
    return out;
  };
  const parentOf = (relPath: string): string => relPath.slice(0, Math.max(0, relPath.lastIndexOf('/')));
  const dirState = (relPath: string): MatchState => {
    if (relPath === '') return root;
    const cached = dirs.get(relPath);
    if (cached !== undefined) return cached;
    const state = advance(dirState(parentOf(relPath)), Array.from(relPath.slice(relPath.lastIndexOf('/') + 1)));
    if (dirs.size >= MAX_CACHED_DIRS) dirs.clear();
    dirs.set(relPath, state);
    return state;
  };
  return (relPath, name, isDir) => (isDir ? dirState(relPath) : advance(dirState(parentOf(relPath)), name));
}

/** A compiled rule: a pattern without a slash is matched against an entry's name, one with a slash by the anchored matcher. */
type CompiledRule =
  | { readonly kind: 'name'; readonly segment: Segment; readonly dirOnly: boolean; readonly include: boolean }
  | { readonly kind: 'anchored'; readonly end: number; readonly dirOnly: boolean; readonly include: boolean };

/**
 * The path the patterns see for `relPath` of a transfer: below the transferred directory, so
 * without the directory's own leading name, unless the transfer lists a directory's contents at
 * its top (`contentsOnly`: a whole share). '' is the transferred directory itself.
 */
export function belowTransferRoot(relPath: string, contentsOnly: boolean): string {
  return contentsOnly ? relPath : relPath.slice(relPath.indexOf('/') + 1 || relPath.length);
}

/** Compiles exclude `patterns`; USAGE naming the pattern for an empty, over-long or malformed one. */
export function compileExcludes(patterns: readonly string[]): ExcludeRules {
  return compileFilter(patterns.map((pattern) => ({ pattern, include: false })));
}

/**
 * Compiles `rules` (first match decides); USAGE naming the rule (as `names` says, by default the
 * flag and pattern) for an empty, over-long or malformed one.
 */
export function compileFilter(rules: readonly FilterRule[], names: FilterSource = {}): ExcludeRules {
  const at = names.source === undefined ? '' : `${names.source}: `;
  const set = names.source === undefined ? '--include/--exclude patterns' : 'patterns';
  if (rules.length > MAX_EXCLUDE_PATTERNS)
    throw new ClawpeerError('USAGE', `${at}${rules.length} ${set}, more than ${MAX_EXCLUDE_PATTERNS}`);
  const total = rules.reduce((sum, r) => sum + r.pattern.length, 0);
  if (total > MAX_EXCLUDE_TOTAL_CHARS)
    throw new ClawpeerError('USAGE', `${at}${set} add up to ${total} characters, more than ${MAX_EXCLUDE_TOTAL_CHARS}`);
  const compiled: CompiledRule[] = [];
  const anchored: AnchoredRule[] = [];
  let offset = 0;
  for (const [index, { pattern, include }] of rules.entries()) {
    const label = (): string =>
      names.labelOf?.(index) ?? `${include ? '--include' : '--exclude'} ${quotePattern(pattern)}`;
    if (pattern.length === 0) throw usage(label, 'is empty');
    if (pattern.length > MAX_PATTERN_CHARS) throw usage(label, `is longer than ${MAX_PATTERN_CHARS} characters`);
    if (pattern.includes('\0')) throw usage(label, 'contains a NUL character');
    let body = pattern;
    const dirOnly = body.endsWith('/') && !body.endsWith('\\/');
    if (dirOnly) body = body.replace(/\/+$/, '');
    const hasSlash = body.includes('/');
    body = body.replace(/^\/+/, '');
    if (body.length === 0) throw usage(label, 'matches nothing (only slashes)');
    const segments = body
      .split('/')
      .filter((s) => s !== '')
      .map((s) => parseSegment(s, label));
    if (hasSlash) {
      anchored.push({ segments, offset });
      compiled.push({ kind: 'anchored', end: offset + segments.length, dirOnly, include });
      offset += segments.length + 1;
    } else {
      compiled.push({ kind: 'name', segment: segments[0] ?? 'globstar', dirOnly, include });
    }
  }
  const anchoredState = anchored.length === 0 ? undefined : anchoredMatcher(anchored);
  return {
    rules: rules.map((r) => ({ pattern: r.pattern, include: r.include })),
    hasIncludes: rules.some((r) => r.include),
    excludes(relPath: string, isDir: boolean): boolean {
      if (relPath === '') return false; // the transferred root itself
      const name = Array.from(relPath.slice(relPath.lastIndexOf('/') + 1));
      let state: MatchState | undefined; // the anchored rules' state, computed when first needed
      for (const r of compiled) {
        if (r.dirOnly && !isDir) continue;
        let matched: boolean;
        if (r.kind === 'name') matched = r.segment === 'globstar' || matchSegment(r.segment, name);
        else {
          state ??= anchoredState?.(relPath, name, isDir);
          matched = state?.[r.end] === 1;
        }
        if (matched) return !r.include;
      }
      return false;
    },
  };
}
