// One `clawpeer doctor` check's answer (doctor.ts and its checks): ok, warn or fail, what was
// found, and the fix in words a user can paste into a shell.

export type CheckStatus = 'ok' | 'warn' | 'fail';

export interface CheckResult {
  /** Stable kebab-case id: udp-buffers, port-udp, port-tcp, identity, quic, blake3, zstd, clock, peer:<name>. */
  readonly name: string;
  readonly status: CheckStatus;
  /** What was found, with the numbers and paths that matter. */
  readonly detail: string;
  /** How to fix it; absent when there is nothing to do. */
  readonly fix?: string;
}
