// `clawpeer sync DIR PEER:SHARE` for a folder a running listener of this home serves, without
// loading yargs: the launcher tries this first when the command line mentions sync.
//
// Why: that sync takes the listener ~15 ms; the CLI's own start took ~140 ms of which yargs
// and its helpers (load, compile, parse) were ~50-60 ms. Only the plain forms are recognised
// here (the global --home and --json; --mode, --addr, --transport, --compress/--no-compress),
// each value as yargs would read it; anything else (--watch, -v, --help, an unknown flag, a
// value that looks like a flag, a remote with a path) returns undefined, and so does a folder
// no listener serves: the full CLI then runs as always, and reports any usage error itself.
// Output, progress, errors and exit codes are the full CLI's own (shared modules).
import { existsSync } from 'node:fs';
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { EXIT_CODES, type ExitCode } from '../errors.js';
import { resolveHome } from '../home/home.js';
import { controlSocketPath } from '../folder-sync/resident-protocol.js';
import type { SyncModeName } from '../folder-sync/facade.js';
import { parseRemote, type RemoteSpec } from './args.js';
import { busyWaitMs, untilNotBusy, waitingEvent, waitingText } from './busy-wait.js';
import { interruptionOf, withInterrupt } from './context.js';
import { Output, reportError } from './output.js';
import { createProgress } from './progress.js';
import { residentRequest, syncViaListener, type ResidentOutcome } from './resident-client.js';
import { reportSync } from './sync-report.js';

export interface FastSync {
  readonly home: string | undefined;
  readonly json: boolean;
  readonly dir: string;
  readonly remote: RemoteSpec;
  readonly mode: SyncModeName;
  readonly compress: boolean;
  readonly addr: string | undefined;
  readonly transport: string | undefined;
}

const MODES = new Set(['two-way', 'send-only', 'receive-only']);
const TRANSPORTS = new Set(['quic', 'tcp', 'auto']);
const VALUE_OPTIONS = new Set(['--home', '--mode', '--addr', '--transport']);

/** The sync `argv` asks for, when it is one of the plain forms (see the header); else undefined. */
export function parseFastSync(argv: readonly string[]): FastSync | undefined {
  const values = new Map<string, string>();
  const words: string[] = [];
  let json = false;
  let compress: boolean | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (!a.startsWith('-')) {
      words.push(a);
      continue;
    }
    if (a === '--json') json = true;
    else if (a === '--compress' || a === '--no-compress') {
      if (compress !== undefined) return undefined;
      compress = a === '--compress';
    } else {
      const eq = a.indexOf('=');
      const name = eq < 0 ? a : a.slice(0, eq);
      if (!VALUE_OPTIONS.has(name) || values.has(name)) return undefined; // unknown, or given twice (yargs makes an array)
      const value = eq < 0 ? argv[++i] : a.slice(eq + 1);
      if (value === undefined || value === '' || value.startsWith('-')) return undefined;
      values.set(name, value);
    }
  }
  if (words.length !== 3 || words[0] !== 'sync') return undefined;
  const mode = values.get('--mode') ?? 'two-way';
  const transport = values.get('--transport');
  if (!MODES.has(mode) || (transport !== undefined && !TRANSPORTS.has(transport))) return undefined;
  let remote: RemoteSpec;
  try {
    remote = parseRemote(words[2]!, true);
  } catch {
    return undefined;
  }
  if (remote.path !== '') return undefined;
  return {
    home: values.get('--home'),
    json,
    dir: words[1]!,
    remote,
    mode: mode as SyncModeName,
    compress: compress ?? true,
    addr: values.get('--addr'),
    transport,
  };
}

/** Runs the sync in the listener and returns the exit code, or undefined to let the full CLI run. */
export async function runFastSync(argv: readonly string[]): Promise<ExitCode | undefined> {
  const o = parseFastSync(argv);
  if (o === undefined) return undefined;
  const homeDir = resolveHome(o.home).dir;
  const socketPath = controlSocketPath(homeDir);
  if (socketPath === undefined || !existsSync(socketPath)) return undefined;
  const realDir = await realpath(path.resolve(o.dir)).catch(() => undefined);
  if (realDir === undefined) return undefined;
  const out = new Output(o.json);
  return withInterrupt(async (signal) => {
    const request = residentRequest({
      dir: realDir,
      remote: o.remote,
      mode: o.mode,
      compression: o.compress ? 'auto' : 'none',
      addr: o.addr,
      transport: o.transport,
    });
    // One try, its own progress bar (the last one stopped before the command waits and says so).
    const attempt = async (): Promise<ResidentOutcome> => {
      const progress = createProgress(out);
      const onProgress = progress.active ? (p: Parameters<typeof progress.update>[0]) => progress.update(p) : undefined;
      try {
        return await syncViaListener(homeDir, request, onProgress, signal);
      } finally {
        progress.stop();
      }
    };
    // A folder another sync holds, here or in the peer's copy, is waited for (busy-wait.ts).
    const boundMs = busyWaitMs();
    let outcome;
    try {
      outcome = await untilNotBusy(attempt, {
        signal,
        boundMs,
        onWait: (err) => out.notice(waitingEvent(err, boundMs), waitingText(err, boundMs)),
      });
    } catch (err) {
      return reportError(interruptionOf(signal, err), out);
    }
    if (outcome.kind === 'not-served') return undefined;
    reportSync(out, outcome.result, true);
    return EXIT_CODES.ok;
  });
}
