// The bench plan: what `clawpeer bench` was asked to measure, turned into an ordered list of runs.
//
// Goals: parse the user's flags (sizes such as 1GiB, lists such as 1,4,16,64, an impairment spec,
// an RTT sweep) with error messages that name the flag, the value and the accepted forms; expand
// them into the matrix of runs (transport x loss x RTT x connections x streams x window x repeat) in an
// order that keeps runs of one simulated link together; refuse combinations that cannot be
// measured honestly (loss through the TCP relay, an RTT sweep against a real peer, striping the
// sequential revision workload). Hard limits on every number, so a typo cannot ask for 1 PiB.
// Non-goals: running anything (runner.ts), generating data (workloads.ts). Sans-I/O: no fs, no
// clocks; the run directory's timestamp comes in as an argument.
import { ClawpeerError } from '../errors.js';
import { parseSize } from '../format.js';
import { formatImpairSpec, parseImpairSpec, type ImpairSpec } from '../relay/impair-spec.js';

export type WorkloadKind = 'large' | 'small' | 'revisions' | 'revisions-seq' | 'sync';
export const WORKLOAD_KINDS: readonly WorkloadKind[] = ['large', 'small', 'revisions', 'revisions-seq', 'sync'];
export type BenchTransport = 'quic' | 'tcp';

/** What is pushed in each run. Every byte is random (incompressible) and fresh per run. */
export type WorkloadSpec =
  /** One file of `bytes` (split into N byte-range part files when striped over N connections). */
  | { readonly kind: 'large'; readonly bytes: number }
  /** `files` files of `fileBytes` each, in one directory. */
  | { readonly kind: 'small'; readonly files: number; readonly fileBytes: number }
  /** `revisions` revisions of one page of `pageBytes`, pipelined: one push carrying every
   *  revision as its own file, so up to W revisions are in flight unacknowledged (the
   *  published sliding-window benchmark). */
  | { readonly kind: 'revisions'; readonly revisions: number; readonly pageBytes: number }
  /** The same revisions as separate, sequential pushes of one file (each waits for the last):
   *  the per-push round trips of the request/manifest/want/done exchange. W cannot matter here. */
  | { readonly kind: 'revisions-seq'; readonly revisions: number; readonly pageBytes: number }
  /** A folder of `folderFiles` files of `fileBytes`, synced once (untimed); then `changed` of them
   *  are rewritten and the second, timed sync finds and moves exactly those (0: a no-op sync). */
  | { readonly kind: 'sync'; readonly folderFiles: number; readonly fileBytes: number; readonly changed: number };

export type BenchTarget =
  | { readonly kind: 'simulate'; readonly spec: ImpairSpec }
  | { readonly kind: 'peer'; readonly peer: string; readonly addr?: string };

export interface BenchRunSetting {
  /** 0-based position in the plan. */
  readonly index: number;
  /** 0-based repetition of an otherwise identical setting. */
  readonly repeat: number;
  readonly transport: BenchTransport;
  /** The simulated link of this run (the --simulate spec with --rtt applied); undefined with --peer. */
  readonly spec?: ImpairSpec;
  /** Canonical spec text, or "peer" for a real link. */
  readonly link: string;
  /** Configured RTT of the simulated link, ms; undefined with --peer. */
  readonly rttMs?: number;
  /** Configured random loss of the simulated link, percent; undefined with --peer. */
  readonly lossPct?: number;
  readonly window: number;
  readonly streams: number;
  readonly connections: number;
  /** QUIC connections inside each session (push's --connections): a number, or 'auto'. */
  readonly sessionConnections: SessionConnections;
}

/** push's --connections: joined connections of one session (session/session-join.ts). */
export type SessionConnections = number | 'auto';

export interface BenchPlan {
  readonly target: BenchTarget;
  readonly workload: WorkloadSpec;
  readonly settings: readonly BenchRunSetting[];
  /** Distinct simulated links, in run order (one relay self-check each). */
  readonly links: readonly ImpairSpec[];
  /** Configured link rate, bits/s, when the simulated spec has one. */
  readonly linkRateBitsPerSec?: number;
  /** Where runs push, inside the peer's share: clawpeer-bench/<timestamp>. */
  readonly remoteBase: string;
  /** Bytes pushed (untimed) on each connection before a run's timed push, to leave slow start; 0 = cold. */
  readonly warmupBytes: number;
}

/** What the user typed, before validation. Lists and sizes are text, as on the command line. */
export interface BenchPlanInput {
  readonly peer?: string;
  readonly addr?: string;
  readonly simulate?: string;
  readonly workload?: string;
  readonly size?: string;
  readonly files?: number;
  readonly fileSize?: string;
  readonly window?: string;
  readonly streams?: string;
  readonly connections?: string;
  /** push's --connections values to sweep, e.g. "1,auto" (default 1). */
  readonly sessionConnections?: string;
  readonly rtt?: string;
  readonly loss?: string;
  readonly transport?: string;
  readonly repeat?: number;
  /** Untimed push per connection before each run, e.g. 1MiB; absent or 0: a cold connection. */
  readonly warmup?: string;
  /** Sync workload: files rewritten between the two syncs. */
  readonly changed?: number;
}

export interface BenchDefaults {
  readonly window: number;
  readonly streams: number;
}

/** Defaults when the flags are absent. 64 MiB: ~6 s at 100 Mbit/s, enough to leave slow start. */
export const DEFAULT_LARGE_BYTES = 64 << 20;
export const DEFAULT_SMALL_FILES = 1000;
export const DEFAULT_SMALL_FILE_BYTES = 4 << 10;
/** The published sliding-window benchmark: 100 revisions of one 4 KiB page. */
export const DEFAULT_REVISIONS = 100;
export const DEFAULT_PAGE_BYTES = 4 << 10;
/** Sync workload: files changed between the two syncs. */
export const DEFAULT_SYNC_CHANGED = 10;

/** Bounds. 64 GiB and 1M files are far beyond a useful bench here, but still bounds. */
export const MAX_WORKLOAD_BYTES = 64 * 2 ** 30;
export const MAX_FILES = 1_000_000;
export const MAX_WINDOW = 4096;
export const MAX_STREAMS = 64;
export const MAX_CONNECTIONS = 64;
export const MAX_REPEAT = 100;
/** Most runs in one plan: a matrix bigger than this is almost surely a typo. */
export const MAX_RUNS = 2000;
/** Longest list a flag accepts. */
const MAX_LIST_ITEMS = 64;

function usage(message: string): ClawpeerError {
  return new ClawpeerError('USAGE', message);
}

/** "1GiB", "64KiB", "500MB", "4096" -> bytes (binary units for KiB/MiB/GiB and bare K/M/G). */
export function parseByteSize(text: string, flag: string): number {
  const bytes = parseSize(text);
  if (bytes === undefined)
    throw usage(`${flag} ${JSON.stringify(text)}: expected a size such as 4096, 64KiB, 256MiB or 1GiB`);
  if (bytes < 1 || bytes > MAX_WORKLOAD_BYTES)
    throw usage(`${flag} ${JSON.stringify(text)}: must be between 1 byte and 64 GiB`);
  return bytes;
}

/**
 * A comma-separated list of at most MAX_LIST_ITEMS values, each parsed by `parse` (which throws
 * the USAGE error naming the bad item); duplicates removed, order kept.
 */
function parseList(text: string, flag: string, parse: (item: string) => number): number[] {
  const parts = text.split(',').map((s) => s.trim());
  if (parts.length > MAX_LIST_ITEMS) throw usage(`${flag}: at most ${MAX_LIST_ITEMS} values`);
  const out: number[] = [];
  for (const p of parts) {
    const n = parse(p);
    if (!out.includes(n)) out.push(n);
  }
  return out;
}

/** "1,4,16" -> [1, 4, 16], each an integer in min..max; duplicates removed, order kept. */
export function parseIntList(text: string, flag: string, min: number, max: number): number[] {
  return parseList(text, flag, (p) => {
    const n = /^[0-9]+$/.test(p) ? Number(p) : Number.NaN;
    if (!Number.isInteger(n) || n < min || n > max) {
      throw usage(
        `${flag} ${JSON.stringify(text)}: ${JSON.stringify(p)} is not an integer in ${min}..${max} (give a comma-separated list, e.g. 1,4,16)`,
      );
    }
    return n;
  });
}

/** "0,0.1,1%" -> percent values (a trailing % is optional). */
export function parseLossList(text: string, flag: string): number[] {
  return parseList(text, flag, (p) => {
    const m = /^([0-9]+(?:\.[0-9]+)?)\s*%?$/.exec(p);
    const pct = m?.[1] === undefined ? Number.NaN : Number(m[1]);
    if (!(pct >= 0 && pct <= 100))
      throw usage(
        `${flag} ${JSON.stringify(text)}: ${JSON.stringify(p)} is not a percentage in 0..100 (e.g. 0,0.1,0.5,1)`,
      );
    return pct;
  });
}

/** "1,5,50ms,0.1s" -> ms values; a bare number is ms. Parsed by the impairment-spec grammar. */
export function parseRttList(text: string, flag: string): number[] {
  return parseList(text, flag, (p) => {
    const withUnit = /^[0-9.]+$/.test(p) ? `${p}ms` : p;
    try {
      return parseImpairSpec(`rtt=${withUnit}`).rttMs;
    } catch (err) {
      throw new ClawpeerError(
        'USAGE',
        `${flag} ${JSON.stringify(text)}: ${JSON.stringify(p)} is not a time (e.g. 1,5,50,100 in ms, or 250us, 0.1s)`,
        { cause: err },
      );
    }
  });
}

function parseWorkload(input: BenchPlanInput): WorkloadSpec {
  const kindText = input.workload ?? (input.files !== undefined ? 'small' : 'large');
  if (!(WORKLOAD_KINDS as readonly string[]).includes(kindText)) {
    throw usage(`--workload ${JSON.stringify(kindText)}: expected one of ${WORKLOAD_KINDS.join(', ')}`);
  }
  const kind = kindText as WorkloadKind;
  const files = input.files;
  if (files !== undefined && (!Number.isInteger(files) || files < 1 || files > MAX_FILES)) {
    throw usage(`--files must be an integer in 1..${MAX_FILES}, got ${JSON.stringify(files)}`);
  }
  switch (kind) {
    case 'large':
      if (input.files !== undefined || input.fileSize !== undefined)
        throw usage(
          '--files and --file-size describe the small and revision workloads; the large workload takes --size',
        );
      return { kind, bytes: input.size === undefined ? DEFAULT_LARGE_BYTES : parseByteSize(input.size, '--size') };
    case 'small': {
      const fileBytes =
        input.fileSize === undefined ? DEFAULT_SMALL_FILE_BYTES : parseByteSize(input.fileSize, '--file-size');
      const n =
        files ??
        (input.size === undefined
          ? DEFAULT_SMALL_FILES
          : Math.max(1, Math.round(parseByteSize(input.size, '--size') / fileBytes)));
      if (n * fileBytes > MAX_WORKLOAD_BYTES)
        throw usage(`--files ${n} x --file-size ${fileBytes} bytes is more than 64 GiB`);
      return { kind, files: n, fileBytes };
    }
    case 'revisions':
    case 'revisions-seq': {
      if (input.size !== undefined)
        throw usage(
          `--size does not apply to the ${kind} workload: use --files (revisions, default ${DEFAULT_REVISIONS}) and --file-size (page size, default 4KiB)`,
        );
      const pageBytes =
        input.fileSize === undefined ? DEFAULT_PAGE_BYTES : parseByteSize(input.fileSize, '--file-size');
      const revisions = files ?? DEFAULT_REVISIONS;
      if (revisions * pageBytes > MAX_WORKLOAD_BYTES)
        throw usage(`${revisions} revisions of ${pageBytes} bytes is more than 64 GiB`);
      return { kind, revisions, pageBytes };
    }
    case 'sync': {
      if (input.size !== undefined)
        throw usage('--size does not apply to the sync workload: use --files, --file-size and --changed');
      const fileBytes =
        input.fileSize === undefined ? DEFAULT_SMALL_FILE_BYTES : parseByteSize(input.fileSize, '--file-size');
      const n = files ?? DEFAULT_SMALL_FILES;
      if (n * fileBytes > MAX_WORKLOAD_BYTES)
        throw usage(`--files ${n} x --file-size ${fileBytes} bytes is more than 64 GiB`);
      const changed = input.changed ?? Math.min(DEFAULT_SYNC_CHANGED, n);
      if (!Number.isInteger(changed) || changed < 0 || changed > n)
        throw usage(`--changed must be an integer in 0..${n} (the --files), got ${JSON.stringify(input.changed)}`);
      return { kind, folderFiles: n, fileBytes, changed };
    }
    default: {
      const never: never = kind;
      throw new TypeError(`unhandled workload ${String(never)}`);
    }
  }
}

function parseTarget(input: BenchPlanInput): BenchTarget {
  if ((input.peer === undefined) === (input.simulate === undefined)) {
    throw usage(
      'name exactly one link: --peer NAME (a real paired peer) or --simulate SPEC (e.g. rtt=50ms,loss=1%,rate=100mbit)',
    );
  }
  if (input.peer !== undefined) {
    if (input.peer === '') throw usage('--peer needs a pair name or node id');
    return { kind: 'peer', peer: input.peer, ...(input.addr === undefined ? {} : { addr: input.addr }) };
  }
  if (input.addr !== undefined) throw usage('--addr applies to --peer only');
  try {
    return { kind: 'simulate', spec: parseImpairSpec(input.simulate ?? '') };
  } catch (err) {
    if (err instanceof ClawpeerError) throw new ClawpeerError('USAGE', `--simulate: ${err.message}`, { cause: err });
    throw err;
  }
}

function parseTransports(text: string | undefined): BenchTransport[] {
  const parts = (text ?? 'quic').split(',').map((s) => s.trim().toLowerCase());
  const out: BenchTransport[] = [];
  for (const p of parts) {
    if (p !== 'quic' && p !== 'tcp') throw usage(`--transport ${JSON.stringify(text)}: expected quic, tcp or quic,tcp`);
    if (!out.includes(p)) out.push(p);
  }
  return out;
}

/** The --session-connections list: integers 1..16 and `auto`. */
function parseSessionConnections(text: string | undefined): SessionConnections[] {
  if (text === undefined) return [1];
  const out: SessionConnections[] = [];
  for (const item of text.split(',').map((x) => x.trim())) {
    if (item === 'auto') out.push('auto');
    else if (/^[0-9]+$/.test(item) && Number(item) >= 1 && Number(item) <= 16) out.push(Number(item));
    else throw usage(`--session-connections ${JSON.stringify(text)}: each value must be auto or an integer 1..16`);
  }
  if (out.length === 0 || out.length > MAX_LIST_ITEMS)
    throw usage(`--session-connections takes 1..${MAX_LIST_ITEMS} values`);
  return out;
}

/** Validates the input and expands the run matrix. `timestamp` names the remote run directory. */
export function planBench(input: BenchPlanInput, defaults: BenchDefaults, timestamp: string): BenchPlan {
  const target = parseTarget(input);
  const workload = parseWorkload(input);
  const windows =
    input.window === undefined ? [defaults.window] : parseIntList(input.window, '--window', 1, MAX_WINDOW);
  const streams =
    input.streams === undefined ? [defaults.streams] : parseIntList(input.streams, '--streams', 1, MAX_STREAMS);
  const connections =
    input.connections === undefined ? [1] : parseIntList(input.connections, '--connections', 1, MAX_CONNECTIONS);
  const sessionConnections = parseSessionConnections(input.sessionConnections);
  const transports = parseTransports(input.transport);
  const repeat = input.repeat ?? 1;
  if (!Number.isInteger(repeat) || repeat < 1 || repeat > MAX_REPEAT)
    throw usage(`--repeat must be an integer in 1..${MAX_REPEAT}, got ${JSON.stringify(input.repeat)}`);
  if (!/^[0-9A-Za-z._-]{1,64}$/.test(timestamp))
    throw new TypeError(`timestamp ${JSON.stringify(timestamp)} is not a safe path segment`);

  if (workload.kind === 'revisions-seq' && connections.some((c) => c > 1)) {
    throw usage(
      '--connections > 1 cannot stripe the revisions-seq workload: its pushes are sequential by definition (use --workload revisions, small or large)',
    );
  }
  if (input.changed !== undefined && workload.kind !== 'sync') throw usage('--changed applies to --workload sync only');
  if (workload.kind === 'sync') {
    if (target.kind === 'peer')
      throw usage("--workload sync runs with --simulate only: a two-way sync of a real peer's share would change it");
    if (connections.some((c) => c > 1))
      throw usage('--connections > 1 cannot stripe the sync workload: a sync is one session');
    if (windows.length > 1 || streams.length > 1 || input.window !== undefined || input.streams !== undefined) {
      throw usage("--window and --streams do not apply to --workload sync: a sync fetches with the session's defaults");
    }
  }
  if (workload.kind === 'revisions-seq' && windows.length > 1) {
    throw usage(
      '--window with several values and --workload revisions-seq: each sequential push is one chunk, so the window cannot matter; use --workload revisions for the window sweep',
    );
  }

  const links: ImpairSpec[] = [];
  if (target.kind === 'peer') {
    if (input.rtt !== undefined || input.loss !== undefined)
      throw usage('--rtt and --loss sweep a simulated link; with --peer the link is what it is (use --simulate)');
  } else {
    const rtts = input.rtt === undefined ? [target.spec.rttMs] : parseRttList(input.rtt, '--rtt');
    const losses = input.loss === undefined ? [target.spec.lossPct] : parseLossList(input.loss, '--loss');
    for (const lossPct of losses) {
      for (const rttMs of rtts) links.push(Object.freeze({ ...target.spec, rttMs, lossPct }));
    }
    const lossy = links.some((l) => l.lossPct > 0) || target.spec.reorderPct > 0 || target.spec.duplicatePct > 0;
    if (lossy && transports.includes('tcp')) {
      throw usage(
        `--transport tcp with --simulate ${JSON.stringify(formatImpairSpec(target.spec))}: the TCP relay cannot model loss, reorder or dup (TCP is terminated and retransmitted locally at the relay); keep to rtt, jitter and rate for TCP`,
      );
    }
  }

  const settings: BenchRunSetting[] = [];
  for (const transport of transports) {
    for (const spec of target.kind === 'simulate' ? links : [undefined]) {
      for (const c of connections) {
        for (const sc of sessionConnections) {
          for (const s of streams) {
            for (const w of windows) {
              for (let r = 0; r < repeat; r++) {
                if (settings.length >= MAX_RUNS)
                  throw usage(`the matrix has more than ${MAX_RUNS} runs: shorten the lists or --repeat`);
                settings.push({
                  index: settings.length,
                  repeat: r,
                  transport,
                  ...(spec === undefined ? {} : { spec, rttMs: spec.rttMs, lossPct: spec.lossPct }),
                  link: spec === undefined ? 'peer' : formatImpairSpec(spec),
                  window: w,
                  streams: s,
                  connections: c,
                  sessionConnections: sc,
                });
              }
            }
          }
        }
      }
    }
  }
  const rate = target.kind === 'simulate' ? target.spec.rateBitsPerSec : undefined;
  return {
    target,
    workload,
    settings,
    links,
    ...(rate === undefined ? {} : { linkRateBitsPerSec: rate }),
    remoteBase: `clawpeer-bench/${timestamp}`,
    warmupBytes:
      input.warmup === undefined || input.warmup.trim() === '0' ? 0 : parseByteSize(input.warmup, '--warmup'),
  };
}

/** Payload bytes one run moves (every revision counted once; a sync: the changed files). */
export function workloadBytes(w: WorkloadSpec): number {
  switch (w.kind) {
    case 'large':
      return w.bytes;
    case 'small':
      return w.files * w.fileBytes;
    case 'sync':
      return w.changed * w.fileBytes;
    case 'revisions':
    case 'revisions-seq':
      return w.revisions * w.pageBytes;
    default: {
      const never: never = w;
      throw new TypeError(`unhandled workload ${JSON.stringify(never)}`);
    }
  }
}

/** Files one run moves (a sync: the changed ones). */
export function workloadFiles(w: WorkloadSpec): number {
  switch (w.kind) {
    case 'large':
      return 1;
    case 'small':
      return w.files;
    case 'sync':
      return w.changed;
    case 'revisions':
    case 'revisions-seq':
      return w.revisions;
    default: {
      const never: never = w;
      throw new TypeError(`unhandled workload ${JSON.stringify(never)}`);
    }
  }
}

/** One line describing the workload, for tables and logs. */
export function describeWorkload(w: WorkloadSpec): string {
  switch (w.kind) {
    case 'large':
      return `one large file of ${w.bytes} bytes`;
    case 'small':
      return `${w.files} files of ${w.fileBytes} bytes`;
    case 'revisions':
      return `${w.revisions} revisions of one ${w.pageBytes}-byte page, pipelined in one push (up to W in flight)`;
    case 'revisions-seq':
      return `${w.revisions} revisions of one ${w.pageBytes}-byte page, one push each, sequential`;
    case 'sync':
      return `a two-way sync of ${w.folderFiles} files of ${w.fileBytes} bytes after ${w.changed} of them changed (the first sync untimed)`;
    default: {
      const never: never = w;
      throw new TypeError(`unhandled workload ${JSON.stringify(never)}`);
    }
  }
}
