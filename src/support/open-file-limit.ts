// The process's open-file limit (RLIMIT_NOFILE, the soft one `ulimit -n` shows; Node raises it
// to the hard limit at start), read from /proc/self/limits (~20 us; it can change while the
// process runs: prlimit). Undefined where there is no such file (not Linux) or it is unlimited.
import { readFileSync } from 'node:fs';

/**
 * The limit assumed when it cannot be read: 1,024, Linux's default soft limit. The smaller of
 * the two fallbacks the callers had (commit batches 1,024, staged files 4,096): too small a
 * guess only makes batches smaller and reopens staged files more often, too large a one fails
 * every large transfer with EMFILE, every retry.
 */
export const UNKNOWN_OPEN_FILE_LIMIT = 1024;

export function openFileLimit(): number | undefined {
  try {
    const m = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'latin1'));
    return m === null ? undefined : Number(m[1]);
  } catch {
    return undefined; // no /proc: UNKNOWN_OPEN_FILE_LIMIT stands
  }
}

/** How much of the open-file limit a caller may hold: `limit / share.divideBy`, held to min..max. */
export interface OpenFileShare {
  readonly divideBy: number;
  readonly min: number;
  readonly max: number;
}

/** A caller's share of the open-file limit as it is now (`readLimit`: tests). */
export function shareOfOpenFileLimit(
  share: OpenFileShare,
  readLimit: () => number | undefined = openFileLimit,
): number {
  const part = Math.floor((readLimit() ?? UNKNOWN_OPEN_FILE_LIMIT) / share.divideBy);
  return Math.max(share.min, Math.min(share.max, part));
}
