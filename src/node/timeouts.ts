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

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
