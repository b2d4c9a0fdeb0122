// Fault injection for end-to-end tests, read once from the environment. Unset in normal use;
// each hook only makes a transfer slower or broken (or kills this process), never less safe for the receiver.
import { existsSync } from 'node:fs';

function envInt(name: string): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  return Number.isInteger(n) && n >= 0 ? n : undefined;
}

export const TEST_HOOKS = Object.freeze({
  /** Flip one ciphertext byte of the Nth DATA frame this process sends (0-based). */
  tamperDataFrame: envInt('CLAWPEER_TEST_TAMPER_FRAME'),
  /** Sleep this many ms before each DATA frame, so a test can kill a transfer midway. */
  delayPerChunkMs: envInt('CLAWPEER_TEST_DELAY_PER_CHUNK_MS'),
  /** Sleep this many ms before a receiver prepares (a slow destination lock or share rescan). */
  delayPrepareMs: envInt('CLAWPEER_TEST_DELAY_PREPARE_MS'),
  /** How long a push waits for the listener's done after its last chunk (PREPARE_TIMEOUT_MS otherwise). */
  publishTimeoutMs: envInt('CLAWPEER_TEST_PUBLISH_TIMEOUT_MS'),
  /** How long a data stream of a transfer nobody expects is held (data-stream-router.ts). */
  waitingStreamMs: envInt('CLAWPEER_TEST_WAITING_STREAM_MS'),
  /** Free bytes a receiver's disk check sees at most (free-space.ts): a nearly full disk. */
  freeBytes: envInt('CLAWPEER_TEST_FREE_BYTES'),
  /** A named step (see crashPoint) where this process SIGKILLs itself: a kill at an exact point. */
  crashAt: process.env['CLAWPEER_TEST_CRASH_AT'] || undefined,
  /** How often a listener registers with its rendezvous, ms (a test restarts the rendezvous). */
  reregisterMs: envInt('CLAWPEER_TEST_REREGISTER_MS'),
  /**
   * The default connection idle timeout, ms (home/config.ts): a client whose listener a test
   * SIGKILLs learns of it over QUIC only by this timeout (15 s otherwise).
   */
  idleTimeoutMs: envInt('CLAWPEER_TEST_IDLE_TIMEOUT_MS'),
  /** A sender sends no DATA frame until this file exists: a test looks at a transfer that surely runs, then lets it go. */
  holdUntilFile: process.env['CLAWPEER_TEST_HOLD_UNTIL_FILE'] || undefined,
  /** This process's clock runs off by this many ms, either way (a device whose clock is wrong). */
  clockSkewMs: signedEnvInt('CLAWPEER_TEST_CLOCK_SKEW_MS') ?? 0,
});

function signedEnvInt(name: string): number | undefined {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  const n = Number(raw);
  return Number.isSafeInteger(n) ? n : undefined;
}

/**
 * The wall clock as this node reads it for what it records (a tombstone's time): Date.now(),
 * off by CLAWPEER_TEST_CLOCK_SKEW_MS in a test of a device with a wrong clock.
 */
export function wallClockMs(): number {
  return Date.now() + TEST_HOOKS.clockSkewMs;
}

/** Waits while CLAWPEER_TEST_HOLD_UNTIL_FILE names a file that does not exist yet (or `signal` aborts). */
export async function holdForTest(signal?: AbortSignal): Promise<void> {
  const file = TEST_HOOKS.holdUntilFile;
  while (file !== undefined && !existsSync(file) && signal?.aborted !== true)
    await new Promise((resolve) => setTimeout(resolve, 20));
}

/**
 * Dies by SIGKILL right here when CLAWPEER_TEST_CRASH_AT names `step`: no cleanup, no flush,
 * as a user's kill -9 or a power cut would (tests of what the next run recovers). Steps:
 * sync-apply (before this side applies the peer's revisions), conflict-copy (a conflict copy is
 * on disk, the live file not yet replaced), sync-log (the disk changed, its log not yet written).
 */
export function crashPoint(step: string): void {
  if (TEST_HOOKS.crashAt === step) process.kill(process.pid, 'SIGKILL');
}
