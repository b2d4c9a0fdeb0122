// Whether a process id names a live process on this host (lock files, temp files and the
// listening file name their writer by pid).

/** False only when `pid` is known to be gone (EPERM: alive under another user). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}
