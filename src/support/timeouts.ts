// Bounded waits: every wait on a peer has a deadline.
import { ClawpeerError } from '../errors.js';

/** Resolves with `promise`, or rejects with TIMEOUT naming `what` after `ms`. */
export async function withTimeout<T>(promise: Promise<T>, ms: number, what: string, signal?: AbortSignal): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const guard = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ClawpeerError('TIMEOUT', `${what} timed out after ${ms} ms`)), ms);
    if (signal !== undefined) {
      onAbort = () => reject(new ClawpeerError('ABORTED', `${what} aborted`));
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    }
  });
  try {
    return await Promise.race([promise, guard]);
  } finally {
    clearTimeout(timer);
    if (onAbort !== undefined) signal?.removeEventListener('abort', onAbort);
  }
}

/**
 * Waits until `promise` settles or `ms` pass, whichever comes first, and says how it settled
 * (undefined: it did not in time). Unlike racing a sleep(), no timer outlives the wait.
 */
export async function settledWithin<T>(promise: Promise<T>, ms: number): Promise<PromiseSettledResult<T> | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(resolve, ms, undefined)));
  const settled = promise.then(
    (value): PromiseSettledResult<T> => ({ status: 'fulfilled', value }),
    (reason: unknown): PromiseSettledResult<T> => ({ status: 'rejected', reason }),
  );
  try {
    return await Promise.race([settled, late]);
  } finally {
    clearTimeout(timer);
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
