// Racing the ways to a peer, as iroh and Syncthing dial: every path source (reach/paths.ts)
// searches at once; each candidate it yields is dialled once its priority group's turn comes,
// every group getting a head start (250 ms) over the next, candidates of one group in parallel.
// A group waits no longer once nothing earlier is still being dialled. The first attempt that
// yields an authenticated session wins; every other is aborted, and one that completes anyway is
// closed; each candidate that did not win is released. When everything fails, one error names
// each path tried and why it failed.
import { ClawpeerError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { DialCandidate, PathSource, PeerToReach } from '../reach/paths.js';

/** How long a priority group dials alone before the next one starts. */
export const DIAL_HEAD_START_MS = 250;

export interface DialRaceOptions<T> {
  readonly peer: PeerToReach;
  readonly sources: readonly PathSource[];
  /** Dials one candidate up to an authenticated session; must give up when `signal` aborts. */
  attempt(candidate: DialCandidate, signal: AbortSignal): Promise<T>;
  /** Closes a session that completed after another had won. */
  discard(value: T): Promise<void>;
  readonly headStartMs?: number;
  readonly signal?: AbortSignal;
  readonly log?: Logger;
}

export interface DialRaceWinner<T> {
  readonly value: T;
  /** Not released: the winner's holder releases it once its session is over. */
  readonly candidate: DialCandidate;
}

/** Failures that say only that a path did not work (another path may). */
function isPathFailure(err: unknown): boolean {
  return (
    err instanceof ClawpeerError &&
    (err.code === 'UNREACHABLE' || err.code === 'TIMEOUT' || err.code === 'TRANSPORT_UNAVAILABLE')
  );
}

export function raceDial<T>(o: DialRaceOptions<T>): Promise<DialRaceWinner<T>> {
  const headStartMs = o.headStartMs ?? DIAL_HEAD_START_MS;
  const t0 = Date.now();
  const search = new AbortController();
  const searchSignal = o.signal === undefined ? search.signal : AbortSignal.any([o.signal, search.signal]);
  const pending: DialCandidate[] = [];
  const attemptErrors: { candidate: DialCandidate; err: unknown }[] = [];
  const sourceNotes: string[] = [];
  let sourcesRunning = o.sources.length;
  let inFlight = 0;
  let settled = false;
  let timer: NodeJS.Timeout | undefined;
  const dialled = new Set<string>();

  return new Promise<DialRaceWinner<T>>((resolve, reject) => {
    const finish = (outcome: { winner: DialRaceWinner<T> } | { error: unknown }): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      search.abort();
      for (const c of pending.splice(0)) c.release();
      o.signal?.removeEventListener('abort', onAbort);
      if ('winner' in outcome) resolve(outcome.winner);
      else reject(outcome.error);
    };
    const onAbort = (): void => finish({ error: o.signal?.reason ?? new ClawpeerError('ABORTED', 'dial aborted') });
    if (o.signal?.aborted === true) {
      onAbort();
      return;
    }
    o.signal?.addEventListener('abort', onAbort, { once: true });

    const launch = (c: DialCandidate): void => {
      inFlight++;
      o.log?.debug('dialling', { peer: o.peer.name, path: c.describe });
      o.attempt(c, searchSignal).then(
        (value) => {
          inFlight--;
          if (settled) {
            o.discard(value)
              .catch(() => undefined)
              .finally(() => c.release());
            return;
          }
          o.log?.info('connected', { peer: o.peer.name, path: c.describe, kind: c.path(), ms: Date.now() - t0 });
          finish({ winner: { value, candidate: c } });
        },
        (err: unknown) => {
          inFlight--;
          c.release();
          if (settled) return;
          o.log?.debug('path failed', { peer: o.peer.name, path: c.describe, error: (err as Error).message });
          attemptErrors.push({ candidate: c, err });
          step();
        },
      );
    };

    /** Starts what is due, arms the timer for what is not, and fails the race once nothing is left. */
    const step = (): void => {
      if (settled) return;
      clearTimeout(timer);
      const now = Date.now();
      pending.sort((a, b) => a.priority - b.priority);
      // Nothing earlier is being dialled: the next group need not wait for its turn.
      const idle = inFlight === 0;
      const earliest = pending[0]?.priority;
      const due = (c: DialCandidate): boolean =>
        now >= t0 + c.priority * headStartMs || (idle && c.priority === earliest);
      for (let i = 0; i < pending.length;) {
        const c = pending[i]!;
        if (due(c)) {
          pending.splice(i, 1);
          launch(c);
        } else i++;
      }
      const next = pending[0];
      if (next !== undefined) {
        timer = setTimeout(step, Math.max(0, t0 + next.priority * headStartMs - now));
        return;
      }
      if (inFlight === 0 && sourcesRunning === 0) finish({ error: aggregate() });
    };

    const aggregate = (): ClawpeerError => {
      const only = attemptErrors.length === 1 && sourceNotes.length === 0 ? attemptErrors[0] : undefined;
      if (only?.err instanceof ClawpeerError) return only.err; // one path tried: its own error, as before
      const parts = [
        ...attemptErrors.map(({ candidate, err }) => `${candidate.describe}: ${(err as Error).message}`),
        ...sourceNotes,
      ];
      // A peer that refused us (or a key that is not the peer's) says more than a path that failed.
      const decisive = attemptErrors.find(({ err }) => err instanceof ClawpeerError && !isPathFailure(err))?.err as
        ClawpeerError | undefined;
      const tried = parts.length === 0 ? 'no way to reach it is configured' : parts.join('; ');
      return new ClawpeerError(
        decisive?.code ?? 'UNREACHABLE',
        `cannot reach ${o.peer.name} (${o.peer.id}): ${tried}`,
        decisive === undefined ? undefined : { cause: decisive },
      );
    };

    for (const source of o.sources) {
      void (async () => {
        let found = 0;
        try {
          for await (const c of source.find(o.peer, searchSignal)) {
            if (settled) {
              c.release();
              continue;
            }
            found++;
            // The same address from two sources (pinned, and answered on the LAN) is dialled once.
            const key = `${c.address.host}|${c.address.port}`;
            if (dialled.has(key)) {
              c.release();
              continue;
            }
            dialled.add(key);
            pending.push(c);
            step();
          }
          if (found === 0 && !settled) sourceNotes.push(`${source.name}: found no address`);
        } catch (err) {
          if (!settled && found === 0) sourceNotes.push(`${source.name}: ${(err as Error).message}`);
          else if (!settled) o.log?.debug('path source failed', { source: source.name, error: (err as Error).message });
        } finally {
          sourcesRunning--;
          step();
        }
      })();
    }
    if (o.sources.length === 0) step();
  });
}
