// `clawpeer push ...` and `clawpeer pull ...` in their plain forms, without loading yargs: the
// launcher tries this first when the command line mentions push or pull.
//
// Why: a push's whole-process time is what issue 33 compares with scp and rsync, and yargs (its
// ~240 KB bundle to load and compile, then building the command table and parsing) was ~80-110
// ms of CPU in every push and pull, before the dial could start.
// Only the plain forms are recognised: the global --home, --json, -q/--quiet and
// --[no-]lan-discovery, and the transfer options listed in OPTIONS, each at most once and spelled
// as below; a value option takes the next word or `--flag=value`. Anything else (--help,
// --version, an unknown or repeated flag, bundled short flags, a value that looks like a flag, a
// --transport or --fsync not among its choices, `--`) returns undefined and the full CLI runs as
// always, reporting any usage error itself. The handler, output, errors and exit codes are the
// full CLI's own (commands/transfer.ts); test/cli/transfer-fast-path.test.ts checks that the
// arguments it gets are the very object yargs would give it.
// Light on purpose (the bundle puts the run in its own file: transfer-run.ts), so it reads the
// command line before anything else loads.
import type { ExitCode } from '../errors.js';
import { toYargsWord } from './args.js';

interface OptionSpec {
  /** The keys yargs sets for it: the name, its aliases and camel-case form. */
  readonly keys: readonly string[];
  readonly kind: 'boolean' | 'string' | 'count';
  readonly choices?: readonly string[];
}

const bool = (...keys: string[]): OptionSpec => ({ keys, kind: 'boolean' });
const str = (keys: string[], choices?: readonly string[]): OptionSpec =>
  choices === undefined ? { keys, kind: 'string' } : { keys, kind: 'string', choices };
const count = (...keys: string[]): OptionSpec => ({ keys, kind: 'count' });

const QUIET = bool('quiet', 'q');
const UPDATE = bool('update', 'u');
const DRY_RUN = bool('dry-run', 'n', 'dryRun');
const ITEMIZE = bool('itemize-changes', 'i', 'itemizeChanges');
const BACKUP = bool('backup', 'b');
const COPY_LINKS = bool('copy-links', 'L', 'copyLinks');

/** Flags as written on the command line. `--no-NAME` turns a long boolean off. */
const OPTIONS: ReadonlyMap<string, OptionSpec> = new Map([
  ['--home', str(['home'])],
  ['--json', bool('json')],
  ['-q', QUIET],
  ['--quiet', QUIET],
  ['-v', count('v')],
  ['--lan-discovery', bool('lan-discovery', 'lanDiscovery')],
  ['--addr', str(['addr'])],
  ['--transport', str(['transport'], ['quic', 'tcp', 'auto'])],
  ['--fsync', str(['fsync'], ['batch', 'none'])],
  ['--connections', str(['connections'])],
  ['--bwlimit', str(['bwlimit'])],
  ['--compress', bool('compress')],
  ['--force', bool('force')],
  ['--ignore-existing', bool('ignore-existing', 'ignoreExisting')],
  ['-u', UPDATE],
  ['--update', UPDATE],
  ['-n', DRY_RUN],
  ['--dry-run', DRY_RUN],
  ['--delete', bool('delete')],
  ['--remove-source-files', bool('remove-source-files', 'removeSourceFiles')],
  ['-i', ITEMIZE],
  ['--itemize-changes', ITEMIZE],
  ['-b', BACKUP],
  ['--backup', BACKUP],
  ['-L', COPY_LINKS],
  ['--copy-links', COPY_LINKS],
  ['--copy-unsafe-links', bool('copy-unsafe-links', 'copyUnsafeLinks')],
]);

/** What yargs sets for push and pull when no flag is given (commands/transfer.ts's defaults). */
function defaults(): Record<string, unknown> {
  return {
    streams: 4,
    connections: 'auto',
    window: 32,
    force: false,
    'ignore-existing': false,
    ignoreExisting: false,
    update: false,
    u: false,
    transport: 'auto',
    compress: true,
    exclude: [],
    include: [],
    'exclude-from': [],
    excludeFrom: [],
    'include-from': [],
    includeFrom: [],
    fsync: 'batch',
    'dry-run': false,
    n: false,
    dryRun: false,
    'remove-source-files': false,
    removeSourceFiles: false,
    delete: false,
    'itemize-changes': false,
    i: false,
    itemizeChanges: false,
    backup: false,
    b: false,
    v: 0,
  };
}

export interface FastTransfer {
  readonly direction: 'push' | 'pull';
  /** The arguments object the yargs command handler would get. */
  readonly args: Record<string, unknown>;
}

/** The push or pull `argv` asks for, when it is one of the plain forms (see the header); else undefined. */
export function parseFastTransfer(argv: readonly string[]): FastTransfer | undefined {
  const set: Record<string, unknown> = {};
  const seen = new Set<OptionSpec>();
  const words: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '-' || !a.startsWith('-')) {
      // yargs reads a word after a boolean flag that says true or false as its value.
      if (a === '' || a === 'true' || a === 'false') return undefined;
      words.push(toYargsWord(a));
      continue;
    }
    const eq = a.indexOf('=');
    const name = eq < 0 ? a : a.slice(0, eq);
    const negated = name.startsWith('--no-') ? OPTIONS.get(`--${name.slice(5)}`) : undefined;
    const spec = negated ?? OPTIONS.get(name);
    if (spec === undefined || seen.has(spec)) return undefined; // unknown, or given twice
    seen.add(spec);
    if (negated !== undefined) {
      if (negated.kind !== 'boolean' || eq >= 0) return undefined;
      for (const k of spec.keys) set[k] = false;
    } else if (spec.kind === 'boolean' || spec.kind === 'count') {
      if (eq >= 0) return undefined;
      for (const k of spec.keys) set[k] = spec.kind === 'boolean' ? true : 1;
    } else {
      const value = eq < 0 ? argv[++i] : a.slice(eq + 1);
      if (value === undefined || value === '' || value.startsWith('-')) return undefined;
      if (spec.choices !== undefined && !spec.choices.includes(value)) return undefined;
      for (const k of spec.keys) set[k] = value;
    }
  }
  const [command, ...paths] = words;
  if ((command !== 'push' && command !== 'pull') || paths.length === 0) return undefined;
  return { direction: command, args: { ...defaults(), ...set, _: [command], paths, $0: 'clawpeer' } };
}

/** Runs the push or pull and returns the exit code, or undefined to let the full CLI run. */
export async function runFastTransfer(argv: readonly string[]): Promise<ExitCode | undefined> {
  const o = parseFastTransfer(argv);
  if (o === undefined) return undefined;
  const { runParsedTransfer } = await import('./transfer-run.js');
  return runParsedTransfer(argv, o.args, o.direction);
}
