// `clawpeer sync` waits its turn. A folder that another sync holds at that moment, here
// (FOLDER_BUSY: its lock, after the client's own lock wait) or in the peer's copy (the peer's
// refusal BUSY, PEER_BUSY here, after its wait: 1 s for a shared folder), as the listeners'
// folder services hold it at every start and after each change, made the command exit 4 for a
// person to run it again; users of rsync and Syncthing expect it to wait. So the sync runs again,
// after 0.25 s growing to 2 s, until the other sync has ended, for at most BUSY_WAIT_MS from the
// first refusal; then the last refusal is reported as before (same message, same exit code).
// A sync that is not refused costs nothing more: one try/catch.
import { setTimeout as timerSleep } from 'node:timers/promises';
import { ClawpeerError, isClawpeerError } from '../errors.js';

/** How long a sync waits for the folder's running sync, ms (README: sync). */
export const BUSY_WAIT_MS = 120_000;
/** Tests only: a shorter bound, ms (a test of the bound would otherwise take 2 minutes). */
export const BUSY_WAIT_ENV = 'CLAWPEER_TEST_SYNC_BUSY_WAIT_MS';
const FIRST_DELAY_MS = 250;
const MAX_DELAY_MS = 2_000;

/** The bound: BUSY_WAIT_MS, or the test's BUSY_WAIT_ENV when it is a whole number of ms. */
export function busyWaitMs(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env[BUSY_WAIT_ENV];
  const n = raw === undefined || raw === '' ? NaN : Number(raw);
  return Number.isInteger(n) && n >= 0 ? n : BUSY_WAIT_MS;
}

/** A refusal because the folder is being synced, here or by the peer: worth waiting for. */
export function isBusy(err: unknown): err is ClawpeerError {
  return isClawpeerError(err, 'FOLDER_BUSY') || isClawpeerError(err, 'PEER_BUSY');
}

export interface BusyWaitOptions {
  readonly signal: AbortSignal;
  /** At most this long from the first refusal, ms. */
  readonly boundMs: number;
  /** Told once, at the first refusal (the command says it waits). */
  readonly onWait: (err: ClawpeerError) => void;
  /** Clock, ms (tests). */
  readonly now?: () => number;
  /** Sleep (tests): resolves after `ms`, rejects when `signal` aborts. */
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/** Runs `attempt` until it is not refused as busy, or the bound passes (its last refusal is thrown). */
export async function untilNotBusy<T>(attempt: () => Promise<T>, o: BusyWaitOptions): Promise<T> {
  const now = o.now ?? (() => performance.now());
  const sleep = o.sleep ?? abortableSleep;
  let since: number | undefined;
  let delay = FIRST_DELAY_MS;
  for (;;) {
    try {
      return await attempt();
    } catch (err) {
      if (!isBusy(err) || o.signal.aborted) throw err;
      const t = now();
      if (since === undefined) {
        since = t;
        o.onWait(err);
      }
      const left = since + o.boundMs - t;
      if (left <= 0) throw err;
      await sleep(Math.min(delay, left), o.signal);
      delay = Math.min(delay * 2, MAX_DELAY_MS);
    }
  }
}

/** Resolves after `ms`; rejects with the signal's reason (Ctrl-C: INTERRUPTED) when it aborts first. */
async function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  await timerSleep(ms, undefined, { signal }).catch(() => {
    throw signal.reason instanceof ClawpeerError ? signal.reason : new ClawpeerError('ABORTED', 'interrupted');
  });
}

/** The line a person reads when the sync starts waiting (stderr; --json has its own event). */
export function waitingText(err: ClawpeerError, boundMs: number): string {
  const where = err.code === 'PEER_BUSY' ? "the peer's copy of the folder is busy" : 'the folder is busy here';
  return `${where}: waiting for its running sync to end (at most ${formatBound(boundMs)}): ${err.message}`;
}

/** The JSON event of the same: `{"event":"waiting","code","message","waitSeconds"}`. */
export function waitingEvent(err: ClawpeerError, boundMs: number): Record<string, unknown> {
  return { event: 'waiting', code: err.code, message: err.message, waitSeconds: boundMs / 1000 };
}

function formatBound(ms: number): string {
  return ms % 60_000 === 0 && ms > 0 ? `${ms / 60_000} min` : `${(ms / 1000).toFixed(ms % 1000 === 0 ? 0 : 1)} s`;
}
