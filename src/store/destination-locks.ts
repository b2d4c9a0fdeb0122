// Per-destination locks inside one listener process: at most one push or sync writes a given
// path of a share at a time (a sync claims its whole share).
//
// Why: a client killed mid-push leaves its session on the listener until the transport's idle
// timeout (15 s by default). If the user reruns the push at once, the rerun and the stale receiver
// work on the same files; when the stale one finally fails, its cleanup deletes its staging files
// and bumps directory mtimes the rerun has already set. A newer push from the SAME peer into an
// overlapping destination is therefore taken to be the rerun: it aborts the older transfer and
// waits for its cleanup before staging anything. A push from ANOTHER peer waits (bounded) for the
// older one to finish, then fails with FOLDER_BUSY naming the path.
//
// Goals: claims are sets of absolute paths; two claims conflict when a path of one equals or
// contains (segment-wise) a path of the other; waiting is bounded and cancellable; a claim is
// released exactly once. Non-goals: locking across processes (two listeners on one share, or a
// sync from another process: folder-lock.ts does that for syncs), fairness between waiters,
// pulls (they only read).
import path from 'node:path';
import { ClawpeerError } from '../errors.js';
import { withTimeout } from '../support/timeouts.js';

/** More distinct top-level names than this in one push: claim its base directory instead. */
export const MAX_CLAIM_PATHS = 64;

export interface DestinationClaim {
  /** Absolute, normalised paths the transfer writes at or under. */
  readonly paths: readonly string[];
  /** Node id of the peer the transfer serves. */
  readonly peerId: string;
  /** Names the transfer in messages and logs, e.g. "push 3 from <id>". */
  readonly label: string;
  /**
   * Called (once) when a newer claim from the same peer overlaps this one: abort the transfer,
   * clean up, then release the lease.
   */
  readonly supersede: (by: DestinationClaim) => void;
}

export interface DestinationLease {
  readonly claim: DestinationClaim;
  /** Idempotent. */
  release(): void;
}

export interface AcquireOptions {
  /** Longest wait for conflicting claims to be released, ms. */
  readonly waitMs: number;
  readonly signal?: AbortSignal;
  /** Told about each older claim of the same peer this one supersedes (for the log). */
  readonly onSupersede?: (older: DestinationClaim) => void;
}

interface Held {
  readonly claim: DestinationClaim;
  readonly released: Promise<void>;
  readonly resolve: () => void;
  superseded: boolean;
}

/** True when `a` equals `b` or one contains the other, by whole path segments. */
export function pathsOverlap(a: string, b: string): boolean {
  return a === b || contains(a, b) || contains(b, a);
}

function contains(parent: string, child: string): boolean {
  const prefix = parent.endsWith(path.sep) ? parent : parent + path.sep;
  return child.startsWith(prefix);
}

/**
 * The paths a push into `root` claims: for each entry's destination path (relative, POSIX,
 * already normalised and under `basePath`), the path one level below `basePath`, i.e. the
 * top-level names the push creates. Falls back to `basePath` itself when the push has no entries
 * or more than MAX_CLAIM_PATHS top-level names.
 */
export function claimPaths(root: string, basePath: string, destRelPaths: readonly string[]): string[] {
  const abs = (rel: string): string => path.join(root, ...rel.split('/').filter((s) => s !== ''));
  const depth = basePath === '' ? 0 : basePath.split('/').length;
  const tops = new Set<string>();
  for (const rel of destRelPaths) {
    tops.add(
      rel
        .split('/')
        .slice(0, depth + 1)
        .join('/'),
    );
    if (tops.size > MAX_CLAIM_PATHS) return [abs(basePath)];
  }
  return tops.size === 0 ? [abs(basePath)] : [...tops].map(abs);
}

/**
 * The listener's locks: pushes (transfer-service.ts) and syncs (sync-service.ts) of one process
 * claim their destinations here, so a rerun of either supersedes its stale predecessor.
 */
export class DestinationLocks {
  readonly #held = new Set<Held>();

  /** Claims currently held (for tests and diagnostics). */
  get size(): number {
    return this.#held.size;
  }

  /**
   * Waits until no held claim overlaps `claim`, superseding overlapping claims of the same peer,
   * then holds it. Throws FOLDER_BUSY when `waitMs` passes first (naming the path and the
   * holder), ABORTED when `signal` fires.
   */
  async acquire(claim: DestinationClaim, options: AcquireOptions): Promise<DestinationLease> {
    const deadline = performance.now() + options.waitMs;
    const aborted = (): boolean => options.signal?.aborted === true;
    for (;;) {
      if (aborted())
        throw new ClawpeerError('ABORTED', `${claim.label}: aborted while waiting for its destination`, {
          cause: options.signal?.reason,
        });
      const conflicts = [...this.#held].filter((h) =>
        h.claim.paths.some((p) => claim.paths.some((q) => pathsOverlap(p, q))),
      );
      if (conflicts.length === 0) return this.#hold(claim);
      for (const h of conflicts) {
        if (h.claim.peerId !== claim.peerId || h.superseded) continue;
        h.superseded = true;
        options.onSupersede?.(h.claim);
        h.claim.supersede(claim);
      }
      const remainingMs = deadline - performance.now();
      const released =
        remainingMs > 0 &&
        (await withTimeout(
          Promise.race(conflicts.map((h) => h.released)),
          remainingMs,
          claim.label,
          options.signal,
        ).then(
          () => true,
          () => false,
        ));
      if (!released && !aborted()) {
        const first = conflicts[0];
        const where =
          first?.claim.paths.find((p) => claim.paths.some((q) => pathsOverlap(p, q))) ?? claim.paths[0] ?? '';
        const holder = first === undefined ? 'another transfer' : first.claim.label;
        throw new ClawpeerError(
          'FOLDER_BUSY',
          `${where} is busy: ${holder} is writing there (waited ${(options.waitMs / 1000).toFixed(1)} s); try again when it has finished`,
        );
      }
    }
  }

  #hold(claim: DestinationClaim): DestinationLease {
    let resolve!: () => void;
    const released = new Promise<void>((r) => (resolve = r));
    const held: Held = { claim, released, resolve, superseded: false };
    this.#held.add(held);
    return {
      claim,
      release: () => {
        if (!this.#held.delete(held)) return;
        held.resolve();
      },
    };
  }
}

/**
 * One push's or sync's hold on its destination, with the signal its work runs under. The signal
 * fires when the session ends, or when a newer claim of the same peer supersedes this one (its
 * reason then says so, and errorFor() reports that instead of the plain abort it caused).
 * release() after the work's cleanup: the superseding claim waits for exactly that.
 */
export class DestinationHold {
  readonly #locks: DestinationLocks;
  readonly #peerId: string;
  readonly #session: AbortSignal;
  readonly #stop = new AbortController();
  readonly #onSession = (): void => this.#stop.abort(this.#session.reason);
  #lease: DestinationLease | undefined;

  constructor(locks: DestinationLocks, peerId: string, session: AbortSignal) {
    this.#locks = locks;
    this.#peerId = peerId;
    this.#session = session;
    session.addEventListener('abort', this.#onSession, { once: true });
    if (session.aborted) this.#onSession();
  }

  /** Fires when the session ends or this hold is superseded. */
  get signal(): AbortSignal {
    return this.#stop.signal;
  }

  /** Claims `paths` (DestinationLocks.acquire: supersedes this peer's older claims, waits for others'). */
  async claim(paths: readonly string[], label: string, options: Omit<AcquireOptions, 'signal'>): Promise<void> {
    this.#lease = await this.#locks.acquire(
      {
        paths,
        peerId: this.#peerId,
        label,
        supersede: (by) =>
          this.#stop.abort(
            new ClawpeerError(
              'ABORTED',
              `${label} was superseded by ${by.label} (a rerun after this client vanished?)`,
            ),
          ),
      },
      { ...options, signal: this.#session },
    );
  }

  /** What to report for `err`, a failure of the held work: the supersede when that stopped it. */
  errorFor(err: unknown): unknown {
    const reason: unknown = this.#stop.signal.reason;
    return this.#stop.signal.aborted && !this.#session.aborted && reason instanceof ClawpeerError ? reason : err;
  }

  /** Releases the claim (idempotent). */
  release(): void {
    this.#lease?.release();
    this.#session.removeEventListener('abort', this.#onSession);
  }
}

/** The one set of destination locks of this process (a listener serves all its shares from it). */
export const PROCESS_DESTINATION_LOCKS = new DestinationLocks();
