// The only place that writes results to stdout. Human mode prints lines; --json prints one
// JSON object per line (NDJSON) and nothing else on stdout.
import { ClawpeerError, EXIT_CODES, type ExitCode } from '../errors.js';
import { escapeToShow } from '../format.js';

export class Output {
  constructor(
    readonly json: boolean,
    private readonly stdout: (text: string) => void = (t) => process.stdout.write(t),
    private readonly stderr: (text: string) => void = (t) => process.stderr.write(t),
    /** --quiet: no summaries or progress for people (rsync -q); --json output is unchanged. */
    readonly quiet = false,
  ) {}

  /** One result: `record` in --json mode, `human` (a line or lines) otherwise. */
  emit(record: Record<string, unknown>, human: string): void {
    this.stdout(this.json ? JSON.stringify(record) + '\n' : human + '\n');
  }

  /** What a transfer or sync tells when it ends: as emit(), but nothing for people with --quiet. */
  summary(record: Record<string, unknown>, human: string): void {
    if (this.silent) return;
    this.emit(record, human);
  }

  /** Something the user should fix, that does not stop the command: a line on stderr, in --json mode too. */
  warn(message: string): void {
    this.stderr(`clawpeer: warning: ${message.split('\n').map(escapeToShow).join('\n')}\n`);
  }

  /**
   * What a command tells while it runs, not a result (a sync waiting for the folder's running
   * sync): `record` on stdout in --json mode, else a line on stderr, none with --quiet.
   */
  notice(record: Record<string, unknown>, human: string): void {
    if (this.json) this.stdout(JSON.stringify(record) + '\n');
    else if (!this.quiet) this.stderr(`clawpeer: ${human.split('\n').map(escapeToShow).join('\n')}\n`);
  }

  /** True when people asked for silence: no progress bar, no summaries. */
  get silent(): boolean {
    return this.quiet && !this.json;
  }

  /**
   * A failure: a JSON error record on stdout in --json mode, and always a line on stderr. A
   * message may name a peer's path (`path "..." is announced twice`; JSON.stringify leaves bidi
   * characters raw): the stderr line escapes control and bidi characters line by line (a stack
   * keeps its lines); the record keeps the message exact, as --json keeps paths.
   */
  error(code: string, message: string, exitCode: number): void {
    if (this.json) this.stdout(JSON.stringify({ event: 'error', code, message, exitCode }) + '\n');
    this.stderr(`clawpeer: ${message.split('\n').map(escapeToShow).join('\n')}\n`);
  }
}

/** Prints a failure the way every command does and returns its exit code. */
export function reportError(err: unknown, out: Output): ExitCode {
  if (err instanceof ClawpeerError) {
    out.error(err.code, err.message, err.exitCode);
    return err.exitCode;
  }
  // A bug, not an expected failure: show the stack so it gets reported and fixed.
  out.error('INTERNAL', err instanceof Error ? (err.stack ?? err.message) : String(err), EXIT_CODES.failure);
  return EXIT_CODES.failure;
}
