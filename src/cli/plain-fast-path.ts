// push, pull and sync in their plain forms, and the commands that only report (status, id,
// pair list, folder list, folder log, ls), without loading yargs: the launcher tries this when
// the command line mentions one of them (a sync after sync-fast-path.ts, which hands a folder a
// listener of this home serves to that listener).
//
// Why: a push's whole-process time is what issue 33 compares with scp and rsync, and yargs (its
// ~240 KB bundle to load and compile, then building the command table and parsing) was ~60-110
// ms of CPU in every push, pull and sync, before the dial could start; of the 0.27 CPU-s of a
// `status` that a script or a Syncthing-like user polls, ~0.10 was yargs' (node itself: 0.11;
// bench/results/startup.json).
// Only the plain forms are recognised: the global --home, --json, -q/--quiet, -v and
// --[no-]lan-discovery, and the command's options listed below, each at most once and spelled
// as there; a value option takes the next word or `--flag=value`. Anything else (--help,
// --version, an unknown or repeated flag, bundled short flags, a value that looks like a flag, a
// value not among its choices, `--`, a missing or extra word) returns undefined and the full CLI
// runs as always, reporting any usage error itself. The handlers, output, errors and exit codes
// are the full CLI's own (commands/*.ts); test/cli/plain-fast-path.test.ts and
// test/cli/report-fast-path.test.ts check that the arguments they get are the very object yargs
// would give them.
// Light on purpose: the bundle puts the runs in their own files (transfer-run.ts, sync-run.ts,
// list-run.ts, report-run.ts), so the command line is read before anything else loads.
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
const RECURSIVE = bool('recursive', 'r');

const GLOBAL: readonly (readonly [string, OptionSpec])[] = [
  ['--home', str(['home'])],
  ['--json', bool('json')],
  ['-q', QUIET],
  ['--quiet', QUIET],
  ['-v', count('v')],
  ['--lan-discovery', bool('lan-discovery', 'lanDiscovery')],
];
/** Options push, pull and sync share (commands/transfer.ts, commands/sync.ts, args.ts). */
const DIAL: readonly (readonly [string, OptionSpec])[] = [
  ['--addr', str(['addr'])],
  ['--transport', str(['transport'], ['quic', 'tcp', 'auto'])],
  ['--fsync', str(['fsync'], ['batch', 'none'])],
  ['--connections', str(['connections'])],
  ['--bwlimit', str(['bwlimit'])],
  ['--compress', bool('compress')],
  ['-n', DRY_RUN],
  ['--dry-run', DRY_RUN],
];

/** Flags as written on the command line, by command. `--no-NAME` turns a long boolean off. */
const TRANSFER_OPTIONS: ReadonlyMap<string, OptionSpec> = new Map([
  ...GLOBAL,
  ...DIAL,
  ['--force', bool('force')],
  ['--ignore-existing', bool('ignore-existing', 'ignoreExisting')],
  ['-u', UPDATE],
  ['--update', UPDATE],
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
const SYNC_OPTIONS: ReadonlyMap<string, OptionSpec> = new Map([
  ...GLOBAL,
  ...DIAL,
  ['--mode', str(['mode'], ['two-way', 'send-only', 'receive-only'])],
  ['--watch', bool('watch')],
]);

/** What yargs sets for push and pull when no flag is given (commands/transfer.ts's defaults). */
function transferDefaults(): Record<string, unknown> {
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

/** What yargs sets for sync when no flag is given (commands/sync.ts's defaults). */
function syncDefaults(): Record<string, unknown> {
  return {
    mode: 'two-way',
    watch: false,
    'dry-run': false,
    n: false,
    dryRun: false,
    transport: 'auto',
    fsync: 'batch',
    connections: 'auto',
    compress: true,
    v: 0,
  };
}

const LS_OPTIONS: ReadonlyMap<string, OptionSpec> = new Map([
  ...GLOBAL,
  ['-r', RECURSIVE],
  ['--recursive', RECURSIVE],
  ['--addr', str(['addr'])],
  ['--transport', str(['transport'], ['quic', 'tcp', 'auto'])],
]);
const GLOBAL_ONLY: ReadonlyMap<string, OptionSpec> = new Map(GLOBAL);

/** Each command the fast path runs: its flags, what yargs sets without them, its positionals. */
interface CommandSpec {
  readonly options: ReadonlyMap<string, OptionSpec>;
  readonly defaults: () => Record<string, unknown>;
  /** The words after the command's own, as yargs names them; undefined when they do not fit. */
  readonly positionals: (rest: readonly string[]) => Record<string, unknown> | undefined;
}

const none = (rest: readonly string[]): Record<string, unknown> | undefined => (rest.length === 0 ? {} : undefined);
const one =
  (name: string) =>
  (rest: readonly string[]): Record<string, unknown> | undefined =>
    rest.length === 1 ? { [name]: rest[0] } : undefined;
const justV = (): Record<string, unknown> => ({ v: 0 });

const COMMANDS = {
  push: {
    options: TRANSFER_OPTIONS,
    defaults: transferDefaults,
    positionals: (r) => (r.length > 0 ? { paths: r } : undefined),
  },
  pull: {
    options: TRANSFER_OPTIONS,
    defaults: transferDefaults,
    positionals: (r) => (r.length > 0 ? { paths: r } : undefined),
  },
  sync: {
    options: SYNC_OPTIONS,
    defaults: syncDefaults,
    positionals: (r) => (r.length === 2 ? { dir: r[0], remote: r[1] } : undefined),
  },
  status: { options: GLOBAL_ONLY, defaults: justV, positionals: none },
  id: { options: GLOBAL_ONLY, defaults: justV, positionals: none },
  'pair list': { options: GLOBAL_ONLY, defaults: justV, positionals: none },
  'folder list': { options: GLOBAL_ONLY, defaults: justV, positionals: none },
  'folder log': { options: GLOBAL_ONLY, defaults: justV, positionals: one('id') },
  ls: {
    options: LS_OPTIONS,
    defaults: () => ({ recursive: false, r: false, transport: 'auto', v: 0 }),
    positionals: one('remote'),
  },
} satisfies Record<string, CommandSpec>;

export type PlainCommandName = keyof typeof COMMANDS;
/** Commands with subcommands: the fast path knows only some of theirs (see COMMANDS). */
const GROUPS = new Set(['pair', 'folder']);

export interface PlainCommand {
  readonly command: PlainCommandName;
  /** The arguments object the yargs command handler would get. */
  readonly args: Record<string, unknown>;
}

const commandOf = (name: string): CommandSpec | undefined =>
  Object.hasOwn(COMMANDS, name) ? COMMANDS[name as PlainCommandName] : undefined;

/** The command `argv` asks for, when it is one of the plain forms (see the header); else undefined. */
export function parsePlainCommand(argv: readonly string[]): PlainCommand | undefined {
  // The command word: the first word that is no option's value (only --home takes one before it).
  let command: string | undefined;
  for (let i = 0; i < argv.length && command === undefined; i++) {
    if (argv[i] === '--home') i++;
    else if (!argv[i]!.startsWith('-')) command = argv[i];
  }
  if (command === undefined) return undefined;
  // A group's subcommands take only the global flags here.
  const options = GROUPS.has(command) ? GLOBAL_ONLY : commandOf(command)?.options;
  if (options === undefined) return undefined;
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
    const negated = name.startsWith('--no-') ? options.get(`--${name.slice(5)}`) : undefined;
    const spec = negated ?? options.get(name);
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
  if (words[0] !== command) return undefined;
  const path = GROUPS.has(command) ? words.slice(0, 2) : words.slice(0, 1);
  const name = path.join(' ');
  const spec = commandOf(name);
  const positionals = spec?.positionals(words.slice(path.length));
  if (spec === undefined || positionals === undefined) return undefined;
  return {
    command: name as PlainCommandName,
    args: { ...spec.defaults(), ...set, _: path, ...positionals, $0: 'clawpeer' },
  };
}

/** Runs the command and returns the exit code, or undefined to let the full CLI run. */
export async function runPlainCommand(argv: readonly string[]): Promise<ExitCode | undefined> {
  const o = parsePlainCommand(argv);
  if (o === undefined) return undefined;
  if (o.command === 'sync') return (await import('./sync-run.js')).runParsedSync(argv, o.args);
  if (o.command === 'push' || o.command === 'pull')
    return (await import('./transfer-run.js')).runParsedTransfer(argv, o.args, o.command);
  if (o.command === 'ls') return (await import('./list-run.js')).runParsedList(argv, o.args);
  return (await import('./report-run.js')).runParsedReport(argv, o.args, o.command);
}
