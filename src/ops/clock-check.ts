// `clawpeer doctor`'s clock check (doctor.ts): a clock before this build is wrong; one that no
// time service keeps synchronised is warned about (file times and sync conflict order depend on
// it). The time, the build time and the sync probe are injectable.
import { execFile } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { CheckResult } from './check-result.js';

export interface ClockSync {
  readonly state: 'synced' | 'unsynced' | 'unknown';
  /** Which tool answered (timedatectl, chronyc), when one did. */
  readonly source?: string;
}

/** A clock this far before the build is wrong, not a build machine a little ahead of us. */
export const CLOCK_BEFORE_BUILD_TOLERANCE_MS = 60 * 60 * 1000; // 1 hour
/** No clawpeer was built before this (2025-01-01): a floor when the build's mtime is meaningless (npm sets 1985). */
export const EARLIEST_BUILD_MS = Date.UTC(2025, 0, 1);
const SYNC_PROBE_TIMEOUT_MS = 2_000;

function runTool(file: string, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: SYNC_PROBE_TIMEOUT_MS, maxBuffer: 64 << 10 }, (err, stdout) => {
      const failure: Error | null = err; // ExecFileException's type does not show it is an Error
      if (failure === null) resolve(stdout);
      else reject(failure);
    });
  });
}

/** Parses `chronyc tracking`: "Leap status : Normal" means synchronised. */
export function parseChronycTracking(text: string): ClockSync['state'] {
  const m = /^Leap status\s*:\s*(.+)$/m.exec(text);
  if (m?.[1] === undefined) return 'unknown';
  return m[1].trim() === 'Not synchronised' ? 'unsynced' : 'synced';
}

/** Asks systemd-timesyncd (timedatectl), then chrony; 'unknown' when neither answers. */
export async function probeClockSync(): Promise<ClockSync> {
  try {
    const v = (await runTool('timedatectl', ['show', '-p', 'NTPSynchronized', '--value'])).trim();
    if (v === 'yes') return { state: 'synced', source: 'timedatectl' };
    if (v === 'no') return { state: 'unsynced', source: 'timedatectl' };
  } catch {
    // no systemd here (containers, macOS): try chrony
  }
  try {
    const state = parseChronycTracking(await runTool('chronyc', ['-n', 'tracking']));
    if (state !== 'unknown') return { state, source: 'chronyc' };
  } catch {
    // no chrony either
  }
  return { state: 'unknown' };
}

/** When this code was built: the compiled module's mtime, floored at EARLIEST_BUILD_MS. */
export async function buildTimeMs(): Promise<number> {
  try {
    return Math.max(EARLIEST_BUILD_MS, (await stat(fileURLToPath(import.meta.url))).mtimeMs);
  } catch {
    return EARLIEST_BUILD_MS;
  }
}

export async function checkClock(options: {
  nowMs: number;
  buildTimeMs: number;
  sync: () => Promise<ClockSync>;
}): Promise<CheckResult> {
  const name = 'clock';
  const now = new Date(options.nowMs).toISOString();
  if (options.nowMs < options.buildTimeMs - CLOCK_BEFORE_BUILD_TOLERANCE_MS) {
    return {
      name,
      status: 'fail',
      detail: `system time ${now} is before this build (${new Date(options.buildTimeMs).toISOString()}): the clock is wrong, so file times and sync conflict order will be wrong`,
      fix: 'set the clock: sudo timedatectl set-ntp true (or sudo chronyc makestep); in a container, fix the host clock',
    };
  }
  const sync = await options.sync();
  switch (sync.state) {
    case 'synced':
      return { name, status: 'ok', detail: `system time ${now}, synchronised (${sync.source ?? 'ntp'})` };
    case 'unsynced':
      return {
        name,
        status: 'warn',
        detail: `system time ${now}, NOT synchronised (${sync.source ?? 'ntp'}): file times sync compares may drift between peers`,
        fix:
          sync.source === 'chronyc'
            ? 'check chrony: chronyc sources; sudo chronyc makestep'
            : 'sudo timedatectl set-ntp true',
      };
    case 'unknown':
      return {
        name,
        status: 'ok',
        detail: `system time ${now}; sync status unknown (neither timedatectl nor chronyc answered)`,
      };
    default: {
      const unreachable: never = sync.state;
      throw new TypeError(`unhandled clock state ${String(unreachable)}`);
    }
  }
}
