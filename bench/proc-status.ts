// Resident memory of a process from /proc/<pid>/status. VmHWM is the kernel's high-water mark of
// RSS, so no sampling can miss a peak. Linux only: elsewhere undefined. A tiny module of its own
// because launched CLI processes import it in their exit hook (bench/transfer.ts).

import { readFileSync } from 'node:fs';

/** A `kB` field of /proc/<pid>/status ('self': this process) in KiB, or undefined where there is none. */
export function procStatusKiB(pid: number | 'self', field: 'VmHWM' | 'VmRSS'): number | undefined {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB$`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m?.[1] === undefined ? undefined : Number(m[1]);
  } catch {
    return undefined;
  }
}

/** Peak RSS so far (VmHWM) of process `pid`, KiB. */
export function peakRssKiBOf(pid: number | 'self'): number | undefined {
  return procStatusKiB(pid, 'VmHWM');
}
