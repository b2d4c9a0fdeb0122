// What every command handler gets: resolved home, output, logger. Built once from global options.
import { ClawpeerError, isInterruption } from '../errors.js';
import { createLogger, type Logger } from '../logger.js';
import { resolveHome, type HomeLayout } from '../home/home.js';
import { Output } from './output.js';
import type { ReachConfig } from '../home/facade.js';

export interface GlobalOptions {
  readonly home?: string | undefined;
  readonly json?: boolean | undefined;
  readonly v?: number | undefined;
  /** --quiet (-q): errors only on stderr, no summaries or progress on stdout (rsync -q). */
  readonly quiet?: boolean | undefined;
  /** --rendezvous HOST:PORT: overrides config.json's rendezvous for this command. */
  readonly rendezvous?: string | undefined;
  /** --lan-discovery / --no-lan-discovery: overrides config.json's lanDiscovery. */
  readonly lanDiscovery?: boolean | undefined;
}

export interface CommandContext {
  readonly home: HomeLayout;
  readonly out: Output;
  readonly log: Logger;
  /** Aborted on SIGINT/SIGTERM. */
  readonly signal: AbortSignal;
  /** The command line as given (after the program name): where order matters and yargs keeps none. */
  readonly argv: readonly string[];
  /** How this node reaches peers: the home's config.json with the global flags applied (read once, on first call). */
  reach(): Promise<ReachConfig>;
}

/** What main hands each command module: wraps a handler with the context and the exit code. */
export type Runner = (
  fn: (ctx: CommandContext, args: Record<string, unknown>) => Promise<void>,
) => (args: Record<string, unknown>) => Promise<void>;

/**
 * An AbortSignal for SIGINT/SIGTERM while `fn` runs (the handlers are removed after). Its reason
 * is the INTERRUPTED or TERMINATED error a command that stops because of it ends with.
 */
export async function withInterrupt<T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const abort = new AbortController();
  const onSignal = (sig: NodeJS.Signals): void =>
    abort.abort(new ClawpeerError(sig === 'SIGTERM' ? 'TERMINATED' : 'INTERRUPTED'));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    return await fn(abort.signal);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

export function makeContext(options: GlobalOptions, signal: AbortSignal, argv: readonly string[] = []): CommandContext {
  const home = resolveHome(options.home);
  let reach: Promise<ReachConfig> | undefined;
  return {
    reach: () =>
      (reach ??= import('../home/facade.js').then((m) =>
        m.loadReachConfig(home.dir, { rendezvous: options.rendezvous, lanDiscovery: options.lanDiscovery }),
      )),
    argv,
    home,
    out: new Output(options.json === true, undefined, undefined, options.quiet === true),
    // -v wins over -q for logging (each asks for something explicit); -q alone: errors only.
    log: createLogger('clawpeer', (options.v ?? 0) > 0 ? (options.v ?? 0) : options.quiet === true ? -1 : 0),
    signal,
  };
}

/**
 * What a command that failed after SIGINT/SIGTERM reports: the interruption (exit 130/143), not
 * the abort it caused somewhere inside ("control channel operation aborted").
 */
export function interruptionOf(signal: AbortSignal, err: unknown): unknown {
  const reason: unknown = signal.reason;
  return !isInterruption(err) && signal.aborted && isInterruption(reason) ? reason : err;
}
