// The process's open-file limit (RLIMIT_NOFILE, the soft one `ulimit -n` shows; Node raises it
// to the hard limit at start), read from /proc/self/limits (~20 us; it can change while the
// process runs: prlimit). Undefined where there is no such file (not Linux) or it is unlimited.
import { readFileSync } from 'node:fs';

export function openFileLimit(): number | undefined {
  try {
    const m = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'latin1'));
    return m === null ? undefined : Number(m[1]);
  } catch {
    return undefined; // no /proc: the callers' defaults stand
  }
}
