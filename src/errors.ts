// One error type for every expected failure, with a code from one of two tables:
// LOCAL_ERRORS (what this process reports and exits with) and WIRE_ERRORS (numbers sent to a
// peer in a protocol Error message). Programming bugs stay TypeError/AssertionError and are
// never wrapped. The README's exit-code table is checked against EXIT_CODES by a test.

/** Process exit codes: the CLI contract. */
export const EXIT_CODES = {
  ok: 0,
  failure: 1,
  usage: 2,
  auth: 3,
  unreachable: 4,
  exists: 5,
  // The person asked said no: a `receive` whose offer was declined (and its `send`).
  declined: 6,
  // rsync's 23: some paths could not be read by the sender or written by the receiver, the rest was transferred.
  partial: 23,
  // 128 + the signal's number, as a shell reports a command a signal ended.
  interrupted: 130,
  terminated: 143,
} as const;
export type ExitCode = (typeof EXIT_CODES)[keyof typeof EXIT_CODES];

interface LocalErrorSpec {
  readonly message: string;
  readonly retryable: boolean;
  readonly exit: ExitCode;
}

/** Local error codes. `message` is the generic text; instances carry a specific one. */
export const LOCAL_ERRORS = {
  INTERNAL: { message: 'internal error', retryable: false, exit: EXIT_CODES.failure },
  USAGE: { message: 'invalid argument', retryable: false, exit: EXIT_CODES.usage },
  CONFIG_INVALID: { message: 'invalid configuration', retryable: false, exit: EXIT_CODES.usage },
  IDENTITY_MISSING: { message: 'no identity: run `clawpeer init`', retryable: false, exit: EXIT_CODES.failure },
  IDENTITY_EXISTS: {
    message: 'identity already exists (use --force to replace it)',
    retryable: false,
    exit: EXIT_CODES.exists,
  },
  IDENTITY_INSECURE: {
    message: 'identity key file is readable by group or others',
    retryable: false,
    exit: EXIT_CODES.failure,
  },
  IDENTITY_CORRUPT: { message: 'identity key file is corrupt', retryable: false, exit: EXIT_CODES.failure },
  HOME_INSECURE: {
    message: 'the home directory is writable by group or others, or owned by another user',
    retryable: false,
    exit: EXIT_CODES.failure,
  },
  PEER_UNKNOWN: { message: 'no such paired peer', retryable: false, exit: EXIT_CODES.usage },
  PEER_NOT_PAIRED: { message: 'peer is not paired', retryable: false, exit: EXIT_CODES.auth },
  AUTH_FAILED: { message: 'peer authentication failed', retryable: false, exit: EXIT_CODES.auth },
  UNREACHABLE: { message: 'peer unreachable', retryable: true, exit: EXIT_CODES.unreachable },
  TIMEOUT: { message: 'timed out', retryable: true, exit: EXIT_CODES.unreachable },
  CONNECTION_CLOSED: { message: 'connection closed', retryable: true, exit: EXIT_CODES.unreachable },
  PROTOCOL: { message: 'protocol violation by peer', retryable: false, exit: EXIT_CODES.failure },
  VERSION_MISMATCH: { message: 'no protocol version in common', retryable: false, exit: EXIT_CODES.failure },
  FRAME_TOO_LARGE: { message: 'frame exceeds the maximum size', retryable: false, exit: EXIT_CODES.failure },
  DECRYPT_FAILED: { message: 'frame failed authentication', retryable: false, exit: EXIT_CODES.failure },
  HASH_MISMATCH: { message: 'content hash mismatch', retryable: false, exit: EXIT_CODES.failure },
  PATH_INVALID: { message: 'path refused', retryable: false, exit: EXIT_CODES.failure },
  FILE_EXISTS: {
    message: 'refusing to overwrite an existing file (use --force)',
    retryable: false,
    exit: EXIT_CODES.exists,
  },
  SHARE_UNKNOWN: { message: 'no such share', retryable: false, exit: EXIT_CODES.failure },
  SHARE_PAUSED: { message: 'the folder is paused there', retryable: false, exit: EXIT_CODES.failure },
  SHARE_READ_ONLY: { message: 'share is read-only', retryable: false, exit: EXIT_CODES.failure },
  SHARE_FORBIDDEN: { message: 'this peer may not use that share', retryable: false, exit: EXIT_CODES.auth },
  IO: { message: 'file system error', retryable: false, exit: EXIT_CODES.failure },
  REMOTE: { message: 'the peer reported an error', retryable: false, exit: EXIT_CODES.failure },
  TRANSPORT_UNAVAILABLE: {
    message: 'transport backend unavailable on this runtime',
    retryable: false,
    exit: EXIT_CODES.failure,
  },
  ADDRESS_IN_USE: { message: 'address already in use', retryable: false, exit: EXIT_CODES.failure },
  ABORTED: { message: 'aborted', retryable: false, exit: EXIT_CODES.failure },
  CHECK_FAILED: { message: 'a health check failed', retryable: false, exit: EXIT_CODES.failure },
  FOLDER_BUSY: { message: 'folder is locked by another sync', retryable: true, exit: EXIT_CODES.failure },
  PARTIAL: {
    message: 'some paths could not be read by the sender or written by the receiver; the rest was transferred',
    retryable: false,
    exit: EXIT_CODES.partial,
  },
  DELETE_LIMIT: {
    message: 'more paths to delete than --max-delete allows',
    retryable: false,
    exit: EXIT_CODES.failure,
  },
  PEER_BUSY: {
    message: 'the peer is busy (a connection cap or a destination in use): try again later',
    retryable: true,
    exit: EXIT_CODES.unreachable,
  },
  BUDGET_EXCEEDED: {
    message: 'a listener budget was exceeded (manifest bytes, chunk references)',
    retryable: false,
    exit: EXIT_CODES.failure,
  },
  DECLINED: { message: 'the offer was declined', retryable: false, exit: EXIT_CODES.declined },
  INTERRUPTED: { message: 'interrupted (SIGINT)', retryable: true, exit: EXIT_CODES.interrupted },
  TERMINATED: { message: 'terminated (SIGTERM)', retryable: true, exit: EXIT_CODES.terminated },
} as const satisfies Record<string, LocalErrorSpec>;
export type LocalErrorCode = keyof typeof LOCAL_ERRORS;

/** Wire error codes: stable numbers, sent in protocol Error messages. Never reuse a number. */
export const WIRE_ERRORS = {
  INTERNAL: { wire: 1, local: 'REMOTE' },
  NOT_PAIRED: { wire: 2, local: 'PEER_NOT_PAIRED' },
  AUTH_FAILED: { wire: 3, local: 'AUTH_FAILED' },
  VERSION_MISMATCH: { wire: 4, local: 'VERSION_MISMATCH' },
  PROTOCOL: { wire: 5, local: 'PROTOCOL' },
  FRAME_TOO_LARGE: { wire: 6, local: 'FRAME_TOO_LARGE' },
  DECRYPT_FAILED: { wire: 7, local: 'DECRYPT_FAILED' },
  HASH_MISMATCH: { wire: 8, local: 'HASH_MISMATCH' },
  PATH_INVALID: { wire: 9, local: 'PATH_INVALID' },
  FILE_EXISTS: { wire: 10, local: 'FILE_EXISTS' },
  SHARE_UNKNOWN: { wire: 11, local: 'SHARE_UNKNOWN' },
  SHARE_READ_ONLY: { wire: 12, local: 'SHARE_READ_ONLY' },
  IO: { wire: 13, local: 'IO' },
  TIMEOUT: { wire: 14, local: 'TIMEOUT' },
  SHUTTING_DOWN: { wire: 15, local: 'CONNECTION_CLOSED' },
  SHARE_FORBIDDEN: { wire: 16, local: 'SHARE_FORBIDDEN' },
  BUSY: { wire: 17, local: 'PEER_BUSY' },
  /** The peer's user stopped the command (SIGINT/SIGTERM): not a failure of either side. */
  CANCELLED: { wire: 18, local: 'INTERRUPTED' },
  /** A request would hold more than a listener budget allows (its message names the budget; README "Limits"). */
  BUDGET: { wire: 19, local: 'BUDGET_EXCEEDED' },
  /** The share is a shared folder paused there (`folder pause`); sent only to a peer with feature 'share-paused' (SHARE_UNKNOWN to others). */
  SHARE_PAUSED: { wire: 20, local: 'SHARE_PAUSED' },
  /**
   * A `receive`'s parting word: its user declined what the `send` offers (sent once, then the
   * session closes; an older sender reads it as an unknown error with its message).
   */
  DECLINED: { wire: 21, local: 'DECLINED' },
} as const satisfies Record<string, { wire: number; local: LocalErrorCode }>;
export type WireErrorCode = keyof typeof WIRE_ERRORS;

export class ClawpeerError extends Error {
  override readonly name = 'ClawpeerError';
  readonly code: LocalErrorCode;
  /** Set when the error came from (or is to be sent to) a peer. */
  readonly wire: WireErrorCode | undefined;

  constructor(code: LocalErrorCode, message?: string, options?: { cause?: unknown; wire?: WireErrorCode }) {
    super(message ?? LOCAL_ERRORS[code].message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.wire = options?.wire;
  }

  get retryable(): boolean {
    return LOCAL_ERRORS[this.code].retryable;
  }

  get exitCode(): ExitCode {
    return LOCAL_ERRORS[this.code].exit;
  }
}

export function isClawpeerError(err: unknown, code?: LocalErrorCode): err is ClawpeerError {
  return err instanceof ClawpeerError && (code === undefined || err.code === code);
}

/** The error SIGINT or SIGTERM ended the work with (INTERRUPTED, TERMINATED: cli/context.ts aborts with it). */
export function isInterruption(err: unknown): err is ClawpeerError {
  return isClawpeerError(err, 'INTERRUPTED') || isClawpeerError(err, 'TERMINATED');
}

/** Builds the local error for a wire error a peer sent us. Unknown numbers map to REMOTE. */
export function errorFromWire(wire: number, message: string): ClawpeerError {
  for (const [name, spec] of Object.entries(WIRE_ERRORS) as [WireErrorCode, (typeof WIRE_ERRORS)[WireErrorCode]][]) {
    if (spec.wire === wire) return new ClawpeerError(spec.local, `peer: ${message}`, { wire: name });
  }
  return new ClawpeerError('REMOTE', `peer error ${wire}: ${message}`);
}

/** The wire number to send for a local error (INTERNAL when there is no better one). */
export function wireCodeFor(err: unknown): { code: number; name: WireErrorCode } {
  if (err instanceof ClawpeerError) {
    if (err.wire !== undefined) return { code: WIRE_ERRORS[err.wire].wire, name: err.wire };
    for (const [name, spec] of Object.entries(WIRE_ERRORS) as [WireErrorCode, (typeof WIRE_ERRORS)[WireErrorCode]][]) {
      if (spec.local === err.code && name !== 'INTERNAL') return { code: spec.wire, name };
    }
    // A folder locked here is "busy, retry" to the peer.
    if (err.code === 'FOLDER_BUSY') return { code: WIRE_ERRORS.BUSY.wire, name: 'BUSY' };
    if (err.code === 'TERMINATED') return { code: WIRE_ERRORS.CANCELLED.wire, name: 'CANCELLED' };
  }
  return { code: WIRE_ERRORS.INTERNAL.wire, name: 'INTERNAL' };
}

/**
 * A failed file operation as the IO error a command reports: a full disk and a read-only file
 * system said plainly. Here, not in store/staged-file.ts, so that what only locks a folder or
 * reads the pairs (home/peer-store.ts) loads no hashing (blake3's native addon) with it.
 */
export function ioError(what: string, file: string, err: unknown): ClawpeerError {
  if (isClawpeerError(err)) return err;
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOSPC' || code === 'EDQUOT') {
    return new ClawpeerError('IO', `cannot ${what} ${file}: the disk is full`, { cause: err });
  }
  if (code === 'EROFS')
    return new ClawpeerError('IO', `cannot ${what} ${file}: the file system is read-only`, { cause: err });
  const detail = err instanceof Error ? err.message : String(err);
  return new ClawpeerError('IO', `cannot ${what} ${file}: ${detail}`, { cause: err });
}
