// Option checks and option specs shared by several commands.
import { readFileSync } from 'node:fs';
import { ClawpeerError } from '../errors.js';
import type { CompressionChoice } from '../home/facade.js';
import type { FilterRule } from '../push-pull/transfer-options.js';
import { MAX_RATE_BYTES_PER_SEC } from '../transfer/rate-limiter.js';

/** A flag's value as text. yargs hands values over untyped: strings, numbers or booleans (arrays when repeated). */
export function flagText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  if (Array.isArray(value)) return value.map(flagText).join(',');
  return JSON.stringify(value) ?? '';
}

export const TRANSPORT_OPTION = {
  type: 'string',
  choices: ['quic', 'tcp', 'auto'],
  default: 'auto',
  describe: 'quic, tcp (TLS over TCP, when UDP is blocked) or auto (QUIC, then TCP)',
} as const;

export const COMPRESS_OPTION = {
  type: 'boolean',
  default: true,
  describe: 'zstd-compress chunks when both sides can and it saves space (--no-compress: never)',
} as const;

/** The config's compression setting from the --compress / --no-compress flag. */
export function compressionFrom(args: Record<string, unknown>): CompressionChoice {
  return args['compress'] === false ? 'none' : 'auto';
}

/** An integer flag within [min, max]; a USAGE error naming the flag otherwise. */
export function intOption(value: unknown, flag: string, min: number, max: number): number {
  const n = Number(value);
  // A number option yargs could not parse arrives as NaN (JSON would print it as null).
  const shown = typeof value === 'number' ? String(value) : JSON.stringify(value);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new ClawpeerError('USAGE', `${flag} must be an integer in ${min}..${max}, got ${shown}`);
  return n;
}

export interface RemoteSpec {
  readonly peer: string;
  readonly share: string;
  readonly path: string;
}

export function parseRemote(text: string, requireShare: boolean): RemoteSpec {
  const colon = text.indexOf(':');
  const peer = colon < 0 ? text : text.slice(0, colon);
  const rest = colon < 0 ? '' : text.slice(colon + 1);
  if (peer === '')
    throw new ClawpeerError('USAGE', `invalid remote ${JSON.stringify(text)}: expected PEER[:SHARE[/PATH]]`);
  if (requireShare && rest === '')
    throw new ClawpeerError('USAGE', `invalid remote ${JSON.stringify(text)}: name the share, as PEER:SHARE[/PATH]`);
  const slash = rest.indexOf('/');
  const share = slash < 0 ? rest : rest.slice(0, slash);
  const sub = slash < 0 ? '' : rest.slice(slash + 1).replace(/\/+$/, '');
  return { peer, share, path: sub };
}

/** Per-second units of --bwlimit: bytes (binary for K/M/G, as rsync) or bits. */
const BWLIMIT_UNITS: Readonly<Record<string, number>> = {
  b: 1,
  k: 1024,
  kib: 1024,
  kb: 1e3,
  m: 1 << 20,
  mib: 1 << 20,
  mb: 1e6,
  g: 2 ** 30,
  gib: 2 ** 30,
  gb: 1e9,
  kbit: 1e3 / 8,
  mbit: 1e6 / 8,
  gbit: 1e9 / 8,
};
const MIN_BWLIMIT_BYTES_PER_SEC = 1024;

/**
 * --bwlimit RATE -> bytes per second: "500" (KiB/s, as rsync), "2MiB", "10MB/s", "100mbit".
 * undefined when the flag is absent; a USAGE error naming the flag otherwise.
 */
export function bwlimitOption(value: unknown, flag = '--bwlimit'): number | undefined {
  if (value === undefined) return undefined;
  const text = flagText(value).trim();
  const m = /^([0-9]+(?:\.[0-9]+)?)\s*([a-z]*?)(?:\/s)?$/i.exec(text);
  const unit = m?.[2]?.toLowerCase() ?? '';
  const per = unit === '' ? 1024 : BWLIMIT_UNITS[unit];
  if (m?.[1] === undefined || per === undefined) {
    throw new ClawpeerError(
      'USAGE',
      `${flag} ${JSON.stringify(text)}: expected a rate such as 500 (KiB/s), 2MiB, 10MB/s or 100mbit`,
    );
  }
  const bytes = Math.round(Number(m[1]) * per);
  if (bytes < MIN_BWLIMIT_BYTES_PER_SEC || bytes > MAX_RATE_BYTES_PER_SEC) {
    throw new ClawpeerError('USAGE', `${flag} ${JSON.stringify(text)}: must be between 1 KiB/s and 4 GiB/s`);
  }
  return bytes;
}

/** --fsync for push, pull and sync (store/publisher.ts): batch is the default, none is rsync's and scp's behaviour. */
export const FSYNC_OPTION = {
  type: 'string',
  choices: ['batch', 'none'],
  default: 'batch',
  describe:
    "batch: every published file is fsynced (in batches) before it counts as done; none: renames stay atomic but nothing is fsynced, as rsync and scp (a power loss may lose the last seconds' files); a listener share served with :fsync refuses none",
} as const;

/** The policy --fsync names (yargs checked the choice). */
export function fsyncOption(value: unknown): 'batch' | 'none' {
  return value === 'none' ? 'none' : 'batch';
}

/** --connections for push, pull and sync (session/session-join.ts). */
export const CONNECTIONS_OPTION = {
  type: 'string',
  default: 'auto',
  describe:
    'QUIC connections to stripe the data over: auto (one; more, up to 14, when the sender sees random loss on a path of 5 ms or more), or a number 1..16 (1: one connection, as before)',
} as const;

/** The --connections value: 'auto' or 1..16; USAGE naming the flag otherwise. */
export function connectionsOption(value: unknown): 'auto' | number {
  if (value === undefined || value === 'auto') return 'auto';
  const text = flagText(value);
  if (!/^[0-9]+$/.test(text))
    throw new ClawpeerError('USAGE', `--connections ${JSON.stringify(text)}: must be auto or a number 1..16`);
  return intOption(Number(text), '--connections', 1, 16);
}

export const BWLIMIT_OPTION = {
  type: 'string',
  describe:
    'cap the rate this side sends at, e.g. 500 (KiB/s, as rsync), 2MiB, 10MB/s or 100mbit; a pull asks the peer to cap its sending',
} as const;

/**
 * A lone `-` on the command line (push's standard-input source, `--exclude-from -`): yargs takes
 * it for a flag and drops it, or asks for a value after it. The CLI hands it to yargs as this
 * word, which no path can be (a NUL), and argWord() turns it back.
 */
export const STDIN_WORD = '\0-';

/** A word as yargs should see it (toYargsWord) and as the command should (argWord). */
export const toYargsWord = (word: string): string => (word === '-' ? STDIN_WORD : word);
export const argWord = (word: string): string => (word === STDIN_WORD ? '-' : word);

/** The patterns of an --exclude-from / --include-from file: one per line; blank lines and lines starting with `;` or `#` are skipped (rsync's). */
export function patternsOfFile(text: string): string[] {
  return text.split(/\r?\n/).filter((line) => line.trim() !== '' && !line.startsWith('#') && !line.startsWith(';'));
}

/** What the rules need of the raw command line's values (files read as the CLI reads them). */
export interface FilterSources {
  readonly included: readonly string[];
  readonly excluded: readonly string[];
  /** --include-from / --exclude-from values, as yargs parsed them. */
  readonly includeFrom?: readonly string[];
  readonly excludeFrom?: readonly string[];
  /** Reads a pattern file ('-' is standard input). */
  readonly readPatternFile?: (file: string) => string;
}

const readPatternFileSync = (file: string): string => readFileSync(file === '-' ? 0 : file, 'utf8');

/**
 * --include, --exclude, --include-from and --exclude-from in the order they were given (rsync's:
 * the first rule that matches decides; a file's patterns go where its flag is), from the raw
 * command line, since yargs keeps each flag's values apart. What yargs parsed is the check: a
 * command line whose order cannot be read back to the same values (an unusual spelling) is a
 * usage error rather than a guess. An unreadable pattern file is a usage error naming it.
 */
export function filterRulesInOrder(argv: readonly string[], sources: FilterSources): FilterRule[] {
  const { included, excluded } = sources;
  const includeFrom = sources.includeFrom ?? [];
  const excludeFrom = sources.excludeFrom ?? [];
  const read = sources.readPatternFile ?? readPatternFileSync;
  const fromFile = (flag: string, file: string): string[] => {
    try {
      return patternsOfFile(read(file));
    } catch (err) {
      throw new ClawpeerError(
        'USAGE',
        `${flag} ${file === '-' ? '- (standard input)' : file}: cannot read it: ${(err as Error).message}`,
        { cause: err },
      );
    }
  };
  if (included.length === 0 && includeFrom.length === 0 && excludeFrom.length === 0)
    return excluded.map((pattern) => ({ pattern, include: false }));
  const rules: FilterRule[] = [];
  const given = {
    include: [] as string[],
    exclude: [] as string[],
    'include-from': [] as string[],
    'exclude-from': [] as string[],
  };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--') break;
    const flag = /^--(include|exclude)(-from)?(?:=(.*))?$/s.exec(arg);
    if (flag === null) continue;
    const value = flag[3] ?? argv[++i];
    if (value === undefined) continue;
    const include = flag[1] === 'include';
    if (flag[2] === undefined) {
      rules.push({ pattern: value, include });
      given[include ? 'include' : 'exclude'].push(value);
    } else {
      for (const pattern of fromFile(`--${flag[1]}-from`, value)) rules.push({ pattern, include });
      given[include ? 'include-from' : 'exclude-from'].push(value);
    }
  }
  const same = (found: readonly string[], values: readonly string[]): boolean =>
    found.length === values.length && found.every((p, k) => p === values[k]);
  if (
    !same(given.include, included) ||
    !same(given.exclude, excluded) ||
    !same(given['include-from'], includeFrom) ||
    !same(given['exclude-from'], excludeFrom)
  ) {
    throw new ClawpeerError(
      'USAGE',
      'cannot tell the order of the --include/--exclude rules on this command line: write each as --include=PATTERN, --exclude=PATTERN, --include-from=FILE or --exclude-from=FILE',
    );
  }
  return rules;
}

/** Edit distance between two short words: insert, delete, replace, swap two neighbours (one each). */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}

/** True when `word` was typed as a word of its own (a positional), not as an option: yargs' message names both alike. */
function typedAsPositional(word: string, argv: readonly string[]): boolean {
  if (!argv.includes(word)) return false;
  return !argv.some((a) => a === `--${word}` || a.startsWith(`--${word}=`) || a === `--no-${word}` || a === `-${word}`);
}

/** HOST:PORT, as a listener address is written ([v6]:port too). */
const HOST_PORT = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/;

/**
 * yargs' strict-mode "Unknown argument(s): dry-rn, dryRn" with a "did you mean --dry-run?" for
 * each unknown option close to a known one (yargs suggests commands, not options). `known`: the
 * command's option names. A word the command line holds as a positional (one too many: `pair
 * join CODE 192.0.2.1:7700`) is named as it was typed, not as an option, and a HOST:PORT there
 * gets "did you mean --addr" when the command has that option. `argv`: the raw command line.
 * Other messages come back unchanged.
 */
export function suggestOptions(message: string, known: readonly string[], argv: readonly string[] = []): string {
  const m = /^Unknown arguments?: (.*)$/.exec(message);
  if (m === null) return message;
  // yargs lists each unknown dashed option twice (dry-rn, dryRn): keep the dashed spelling.
  const words = m[1]!.split(', ');
  const named = words.filter(
    (w) =>
      !words.some((o) => o !== w && o.includes('-') && o.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase()) === w),
  );
  const extra = named.filter((w) => typedAsPositional(w, argv));
  const unknown = named.filter((w) => !extra.includes(w));
  const parts: string[] = [];
  if (extra.length > 0) {
    const hint = known.includes('addr') ? extra.find((w) => HOST_PORT.test(w)) : undefined;
    parts.push(
      `Unexpected argument${extra.length === 1 ? '' : 's'}: ${extra.join(', ')} (more words than the command takes` +
        `${hint === undefined ? '' : `; did you mean --addr ${hint}?`})`,
    );
  }
  if (unknown.length > 0) parts.push(unknownOptions(unknown, known));
  return parts.join('; ');
}

/** "Unknown argument(s): --x" with a "did you mean" for each close to a known option. */
function unknownOptions(unknown: readonly string[], known: readonly string[]): string {
  const hints: string[] = [];
  for (const word of unknown) {
    let best: string | undefined;
    let bestDistance = Math.max(2, Math.floor(word.length / 3)) + 1; // --hots: --host is 2 away
    for (const k of known) {
      if (k.length < 2 || /[A-Z]/.test(k)) continue; // one-letter aliases and yargs' camelCase copies
      const d = editDistance(word, k);
      if (d < bestDistance) [best, bestDistance] = [k, d];
    }
    if (best !== undefined)
      hints.push(unknown.length === 1 ? `did you mean --${best}?` : `--${word}: did you mean --${best}?`);
  }
  const head = `Unknown argument${unknown.length === 1 ? '' : 's'}: ${unknown.map((w) => (w.length === 1 ? `-${w}` : `--${w}`)).join(', ')}`;
  return hints.length === 0 ? head : `${head} (${hints.join('; ')})`;
}
