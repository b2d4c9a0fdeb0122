// When a listener syncs which shared folder with which peer: the decisions of the folder service
// (folders/folder-service.ts), sans I/O. Time comes in as an argument; `nextWakeAt()` says when
// the driver should call `take()` again.
//
// Goals: a change (local, the peer's, a peer coming online) is followed at once; nothing is
// synced twice at the same time (one sync per peer: the peer's one session carries its folders
// in turn; the syncs of one folder with several peers take the folder's lock in turn, which the
// driver holds only once the peer answered, so an unreachable peer holds up no other); a change during a sync runs the pair again right after; an
// unreachable peer is retried with exponential backoff (capped, jittered) instead of on every
// change, and a peer that comes online is tried at once; every pair is synced at least every
// interval. Non-goals: the sync itself, sessions, timers, what a sync changed.

/** A (folder, peer) pair's state, as `clawpeer status` shows it (`peer-paused`: the peer has paused its copy). */
export type PairState = 'in-sync' | 'syncing' | 'waiting' | 'error' | 'paused' | 'peer-paused';

/** What ended a sync of one pair. */
export type SyncOutcome =
  /** Completed: both sides hold what the mode moves. */
  | { readonly kind: 'done' }
  /** The peer could not be reached (offline, timed out, connection lost). */
  | { readonly kind: 'offline'; readonly error: string }
  /** The folder was busy (a sync of it ran on either side): retried shortly, not counted as a failure. */
  | { readonly kind: 'busy'; readonly error: string }
  /**
   * Completed, but not in sync for no cause a retry must wait out: changes came in while it ran.
   * Run again at once, still `syncing`; after MAX_UNSETTLED_RUNS of them with no sync in sync
   * between, each one more is a failure (`error`, backoff), so a cause nobody named cannot spin.
   */
  | { readonly kind: 'unsettled'; readonly error: string }
  /** Anything else (refused, a file error): shown as `error`, retried with backoff. */
  | { readonly kind: 'failed'; readonly error: string }
  /** The peer has paused its copy of the folder: no failure, tried again at the folder's interval. */
  | { readonly kind: 'peer-paused' };

export interface BackoffPolicy {
  /** First retry after a failure, ms (before jitter). */
  readonly firstMs: number;
  /** Longest wait between retries, ms (before jitter). */
  readonly capMs: number;
  /** Retry of a busy folder, ms (before jitter). */
  readonly busyMs: number;
}

/** Unsettled syncs of a pair that rerun at once until one ends in sync; more count as failed. */
export const MAX_UNSETTLED_RUNS = 5;

export const DEFAULT_BACKOFF: BackoffPolicy = Object.freeze({ firstMs: 1_000, capMs: 5 * 60_000, busyMs: 1_000 });

export interface PairConfig {
  readonly folder: string;
  readonly peer: string;
  /** Fallback interval between syncs, ms. */
  readonly intervalMs: number;
  readonly paused: boolean;
}

export interface PairStatus {
  readonly folder: string;
  readonly peer: string;
  readonly state: PairState;
  /** When the pair entered this state, ms since the epoch. */
  readonly since: number;
  /** The end of the last completed sync, ms since the epoch. */
  readonly lastSyncAt?: number;
  /** The last failure (state `error` or `waiting`). */
  readonly error?: string;
  /** Failed attempts in a row. */
  readonly failures: number;
  /** When the next sync is due, ms since the epoch (undefined while running or paused). */
  readonly nextAt?: number;
}

interface Pair {
  config: PairConfig;
  state: PairState;
  since: number;
  lastSyncAt: number | undefined;
  error: string | undefined;
  failures: number;
  dueAt: number;
  running: boolean;
  /** A request came while running: run again at once. */
  rerun: boolean;
  /** The state before the running sync (a busy folder goes back to it). */
  before: PairState;
  /** First failed attempt to reach the peer in the current run of failures. */
  waitingSince: number | undefined;
  /** When the peer's copy was first found paused, while it stays so. */
  pausedThereSince: number | undefined;
  /** Unsettled syncs since the last one in sync (see SyncOutcome). */
  unsettled: number;
}

const keyOf = (folder: string, peer: string): string => `${folder}\u0000${peer}`;

/** Delay before retry number `failures` (1 = the first): exponential, capped, jittered to 50–100 %. */
export function backoffMs(failures: number, policy: BackoffPolicy, random: () => number): number {
  const exp = Math.min(policy.capMs, policy.firstMs * 2 ** Math.min(30, Math.max(0, failures - 1)));
  return Math.round(exp * (0.5 + 0.5 * random()));
}

export class FolderSchedule {
  readonly #pairs = new Map<string, Pair>();
  readonly #backoff: BackoffPolicy;
  readonly #random: () => number;

  constructor(o: { backoff?: BackoffPolicy; random?: () => number } = {}) {
    this.#backoff = o.backoff ?? DEFAULT_BACKOFF;
    this.#random = o.random ?? Math.random;
  }

  /** Sets the pairs from the config: new ones are due now, gone ones dropped, paused ones wait. */
  configure(pairs: readonly PairConfig[], nowMs: number): void {
    const wanted = new Map(pairs.map((p) => [keyOf(p.folder, p.peer), p]));
    for (const key of [...this.#pairs.keys()]) if (!wanted.has(key)) this.#pairs.delete(key);
    for (const [key, config] of wanted) {
      const pair = this.#pairs.get(key);
      if (pair === undefined) {
        this.#pairs.set(key, {
          config,
          state: config.paused ? 'paused' : 'waiting',
          since: nowMs,
          lastSyncAt: undefined,
          error: undefined,
          failures: 0,
          dueAt: nowMs,
          running: false,
          rerun: false,
          before: 'waiting',
          waitingSince: undefined,
          pausedThereSince: undefined,
          unsettled: 0,
        });
        continue;
      }
      const wasPaused = pair.config.paused;
      pair.config = config;
      if (config.paused && !wasPaused) this.#enter(pair, 'paused', nowMs);
      if (!config.paused && wasPaused) {
        this.#enter(pair, 'waiting', nowMs);
        pair.dueAt = nowMs;
        pair.failures = 0;
      }
      // A shorter interval takes effect now, not after the longer one ran out.
      if (!pair.running && pair.dueAt > nowMs + config.intervalMs) pair.dueAt = nowMs + config.intervalMs;
    }
  }

  /**
   * Something changed: sync the matching pairs (a folder with all its peers, a peer's folders,
   * or one pair) now. A pair backing off from an unreachable peer keeps its backoff (a change
   * does not make the peer reachable; `peerOnline` does). Nor does a pair whose peer paused its
   * copy (each try would only be refused): the folder's interval tries it, or `peerResumed`.
   */
  request(nowMs: number, match: { readonly folder?: string; readonly peer?: string }): void {
    for (const pair of this.#matching(match)) {
      if (pair.config.paused || (pair.state === 'peer-paused' && !pair.running)) continue;
      if (pair.running) pair.rerun = true;
      else if (pair.failures === 0 || pair.state !== 'waiting') pair.dueAt = Math.min(pair.dueAt, nowMs);
    }
  }

  /**
   * The peer is reachable again (its connection arrived, or a dial to it worked): its pairs that
   * were waiting for it are due now. A pair that failed for another reason (the peer refused the
   * folder, a file error) keeps its backoff: reaching the peer does not cure that, and each sync
   * dials first, so a reset here retried such a pair every second for good.
   */
  peerOnline(peer: string, nowMs: number): void {
    for (const pair of this.#matching({ peer })) {
      if (pair.config.paused || pair.failures === 0 || pair.state !== 'waiting') continue;
      pair.failures = 0;
      if (pair.running) pair.rerun = true;
      else pair.dueAt = nowMs;
    }
  }

  /** The pairs to sync now (marked running): due ones, at most one per peer at a time. */
  take(nowMs: number): { folder: string; peer: string }[] {
    const busyPeers = new Set<string>();
    for (const p of this.#pairs.values()) if (p.running) busyPeers.add(p.config.peer);
    const due = [...this.#pairs.values()]
      .filter((p) => !p.running && !p.config.paused && p.dueAt <= nowMs)
      .sort((a, b) => a.dueAt - b.dueAt);
    const out: { folder: string; peer: string }[] = [];
    for (const p of due) {
      const { folder, peer } = p.config;
      if (busyPeers.has(peer)) continue;
      busyPeers.add(peer);
      p.running = true;
      p.rerun = false;
      p.before = p.state;
      // A retry of an unreachable peer stays `waiting` until the peer answers (`connected`).
      if (!(p.state === 'waiting' && p.failures > 0)) this.#enter(p, 'syncing', nowMs);
      out.push({ folder, peer });
    }
    return out;
  }

  /** The peer of a running sync answered: the pair is `syncing` (a retry waited until now). */
  connected(folder: string, peer: string, nowMs: number): void {
    const p = this.#pairs.get(keyOf(folder, peer));
    if (p !== undefined && p.running) this.#enter(p, 'syncing', nowMs);
  }

  /** The pair's last completed sync before this schedule (a listener's earlier run), when none is known since. */
  knownSync(folder: string, peer: string, lastSyncAt: number): void {
    const p = this.#pairs.get(keyOf(folder, peer));
    if (p !== undefined && (p.lastSyncAt === undefined || p.lastSyncAt < lastSyncAt)) p.lastSyncAt = lastSyncAt;
  }

  /** The end of the pair's last completed sync, ms since the epoch (undefined: never, or not a pair). */
  lastSyncAt(folder: string, peer: string): number | undefined {
    return this.#pairs.get(keyOf(folder, peer))?.lastSyncAt;
  }

  /** The peer ran a sync of the folder here: its copy is not paused (any more); a pair `peer-paused` is due now. */
  peerResumed(folder: string, peer: string, nowMs: number): void {
    const p = this.#pairs.get(keyOf(folder, peer));
    if (p === undefined || p.state !== 'peer-paused' || p.config.paused) return;
    if (p.running) p.rerun = true;
    else p.dueAt = nowMs;
  }

  /**
   * A sync the peer ran here ended with both logs equal: a pair not running one of its own is
   * in sync now, not `error` until its backoff retries it (up to 5 min after the cause went).
   */
  servedInSync(folder: string, peer: string, nowMs: number): void {
    const p = this.#pairs.get(keyOf(folder, peer));
    if (p === undefined || p.running || p.config.paused || p.state === 'in-sync') return;
    p.failures = 0;
    p.error = undefined;
    p.waitingSince = undefined;
    p.pausedThereSince = undefined;
    p.lastSyncAt = nowMs;
    this.#enter(p, 'in-sync', nowMs);
    if (p.dueAt > nowMs) p.dueAt = nowMs + p.config.intervalMs; // one due now (a local change) stays due
  }

  /**
   * A sync the peer ran here failed on this side (a disk error, a refusal here): the pair is in
   * `error` now, not `in-sync` until its own next sync finds out, and counts a failure: its own
   * retry comes with backoff (never later than already due: the peer's own retries here must not
   * push ours away). A pair running its own sync waits for that sync's outcome.
   */
  servedFailed(folder: string, peer: string, nowMs: number, error: string): void {
    const p = this.#pairs.get(keyOf(folder, peer));
    if (p === undefined || p.running || p.config.paused) return;
    p.failures++;
    p.error = error;
    p.waitingSince = undefined;
    p.pausedThereSince = undefined;
    this.#enter(p, 'error', nowMs);
    p.dueAt = Math.min(p.dueAt, nowMs + backoffMs(p.failures, this.#backoff, this.#random));
  }

  /** A sync taken by `take` ended. Unknown pairs (removed meanwhile) are ignored. */
  finish(folder: string, peer: string, nowMs: number, ended: SyncOutcome): void {
    const p = this.#pairs.get(keyOf(folder, peer));
    if (p === undefined || !p.running) return;
    p.running = false;
    const again = p.rerun;
    p.rerun = false;
    const outcome: SyncOutcome =
      ended.kind === 'unsettled' && ++p.unsettled > MAX_UNSETTLED_RUNS ? { kind: 'failed', error: ended.error } : ended;
    if (outcome.kind === 'done') p.unsettled = 0;
    if (outcome.kind !== 'peer-paused' && outcome.kind !== 'busy') p.pausedThereSince = undefined;
    switch (outcome.kind) {
      case 'done':
        p.failures = 0;
        p.error = undefined;
        p.waitingSince = undefined;
        p.lastSyncAt = nowMs;
        this.#enter(p, 'in-sync', nowMs);
        p.dueAt = again ? nowMs : nowMs + p.config.intervalMs;
        break;
      case 'unsettled':
        // It completed: what it moved stands, and what came in meanwhile goes now. Failures are
        // kept: past the limit a cause nobody named backs off as long as it lasted.
        p.error = undefined;
        p.waitingSince = undefined;
        p.lastSyncAt = nowMs;
        this.#enter(p, 'syncing', nowMs);
        p.dueAt = nowMs;
        break;
      case 'peer-paused':
        p.failures = 0;
        p.error = undefined;
        p.waitingSince = undefined;
        // "Paused by the peer since" is when it was first found paused, not this try.
        p.pausedThereSince ??= nowMs;
        this.#enter(p, 'peer-paused', nowMs);
        p.since = p.pausedThereSince;
        p.dueAt = again ? nowMs : nowMs + p.config.intervalMs;
        break;
      case 'busy':
        this.#enter(p, p.before, nowMs);
        p.dueAt = nowMs + Math.round(this.#backoff.busyMs * (0.5 + this.#random()));
        break;
      case 'offline':
      case 'failed':
        p.failures++;
        p.error = outcome.error;
        if (outcome.kind === 'offline') {
          // "waiting since" is when the peer was first missed, not this retry.
          p.waitingSince ??= nowMs;
          this.#enter(p, 'waiting', nowMs);
          p.since = p.waitingSince;
        } else {
          p.waitingSince = undefined;
          this.#enter(p, 'error', nowMs);
        }
        p.dueAt = nowMs + backoffMs(p.failures, this.#backoff, this.#random);
        // A local change during a failed sync retries it at once, as one just after would
        // (`request`); an unreachable peer keeps its backoff.
        if (again && outcome.kind === 'failed') p.dueAt = nowMs;
        break;
      default: {
        const never: never = outcome;
        throw new TypeError(`unknown outcome ${JSON.stringify(never)}`);
      }
    }
    if (p.config.paused) this.#enter(p, 'paused', nowMs);
  }

  /** When `take` has something to do next, ms since the epoch; undefined: nothing is scheduled. */
  nextWakeAt(): number | undefined {
    let next: number | undefined;
    for (const p of this.#pairs.values()) {
      if (p.running || p.config.paused) continue;
      if (next === undefined || p.dueAt < next) next = p.dueAt;
    }
    return next;
  }

  snapshot(): PairStatus[] {
    return [...this.#pairs.values()].map((p) => ({
      folder: p.config.folder,
      peer: p.config.peer,
      state: p.state,
      since: p.since,
      failures: p.failures,
      ...(p.lastSyncAt === undefined ? {} : { lastSyncAt: p.lastSyncAt }),
      ...(p.error === undefined || p.state === 'in-sync' || p.state === 'paused' ? {} : { error: p.error }),
      ...(p.running || p.config.paused ? {} : { nextAt: p.dueAt }),
    }));
  }

  #matching(match: { readonly folder?: string; readonly peer?: string }): Pair[] {
    return [...this.#pairs.values()].filter(
      (p) =>
        (match.folder === undefined || p.config.folder === match.folder) &&
        (match.peer === undefined || p.config.peer === match.peer),
    );
  }

  #enter(p: Pair, state: PairState, nowMs: number): void {
    if (p.state !== state) p.since = nowMs;
    p.state = state;
  }
}
