// Namespaced logging to stderr. Library code gets a Logger injected and never prints to stdout;
// stdout belongs to the CLI's output (human lines or NDJSON).
// Field values may carry a peer's text (a path, a name, an error): control and bidi characters
// in them are escaped (format.ts escapeToShow), so no field can start a forged log line or
// disguise what a line says. Messages are this code's own constants.
import { escapeToShow } from './format.js';

export type LogLevel = 'error' | 'warn' | 'info' | 'debug' | 'trace';
const LEVELS: readonly LogLevel[] = ['error', 'warn', 'info', 'debug', 'trace'];

export interface Logger {
  readonly namespace: string;
  error(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  debug(message: string, fields?: Record<string, unknown>): void;
  trace(message: string, fields?: Record<string, unknown>): void;
  child(name: string): Logger;
}

/** verbosity 0: errors and warnings; 1 (-v): info; 2 (-vv): debug; 3+: trace. */
export function createLogger(
  namespace: string,
  verbosity: number,
  write: (line: string) => void = (l) => process.stderr.write(l),
): Logger {
  // -1 (--quiet): errors only; 0: warnings too; each -v one level more.
  const max = Math.min(LEVELS.length - 1, Math.max(0, 1 + verbosity));
  const log =
    (level: LogLevel) =>
    (message: string, fields?: Record<string, unknown>): void => {
      if (LEVELS.indexOf(level) > max) return;
      const extra =
        fields === undefined
          ? ''
          : ' ' +
            Object.entries(fields)
              .map(([k, v]) => `${k}=${escapeToShow(typeof v === 'string' ? v : String(JSON.stringify(v)))}`)
              .join(' ');
      write(`${new Date().toISOString()} ${level.toUpperCase()} ${namespace}: ${message}${extra}\n`);
    };
  return {
    namespace,
    error: log('error'),
    warn: log('warn'),
    info: log('info'),
    debug: log('debug'),
    trace: log('trace'),
    child: (name) => createLogger(`${namespace}:${name}`, verbosity, write),
  };
}

export const silentLogger: Logger = {
  namespace: 'silent',
  error: () => undefined,
  warn: () => undefined,
  info: () => undefined,
  debug: () => undefined,
  trace: () => undefined,
  child: () => silentLogger,
};
