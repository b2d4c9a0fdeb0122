// The syncs this process runs now, by folder and peer, and how quiet each one's connection is.
//
// Why: over QUIC a peer killed mid-sync sends nothing, so the sync here (the listener's own
// client sync of a shared folder, or a sync the peer ran here) learns of it only at the
// connection's idle timeout (15 s), holding the folder's lock all that time. When a new sync
// wants the folder (with that peer back, or with any other peer of the folder), a sync of that
// folder on another connection that has received nothing for a while is taken to be a dead one:
// its connection is closed, so the sync fails at once and lets go of the folder. A live
// connection is never that quiet: both ends send a keep-alive every keepAliveMs when idle, and
// each answers the other's (sync-service.ts asks before it waits for the lock; so does
// sync-client.ts). Before, only a sync with the same peer was ended: with three devices, one
// killed (or suspended) mid-sync held the folder from the others for the idle timeout, and a
// convergence run's quiet phase gave up on a link (seed 51103).
// Within one process only, as destination-locks.ts (the same-peer rerun of a sync the listener
// serves supersedes its stale predecessor there, on any connection's age).
import path from 'node:path';
import type { Logger } from '../logger.js';
import type { Connection } from '../transport/types.js';

/** How often a running sync's connection is sampled for received bytes, ms. */
const SAMPLE_MS = 500;

interface Running {
  readonly folder: string;
  readonly peerId: string;
  readonly connection: Connection;
  rx: number;
  /** performance.now() when `rx` last moved (or the sync began). */
  rxAt: number;
}

function bytesReceived(c: Connection): number | undefined {
  try {
    return c.stats().bytesReceived;
  } catch {
    return undefined; // gone: its sync is failing anyway
  }
}

export class RunningSyncs {
  readonly #running = new Set<Running>();
  #timer: NodeJS.Timeout | undefined;

  /** Registers a sync of `folder` (an absolute path) with `peerId` over `connection`; call the result when it ends. */
  register(folder: string, peerId: string, connection: Connection): () => void {
    const entry: Running = { folder, peerId, connection, rx: bytesReceived(connection) ?? 0, rxAt: performance.now() };
    this.#running.add(entry);
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => this.#sample(), SAMPLE_MS);
      this.#timer.unref();
    }
    return () => {
      this.#running.delete(entry);
      if (this.#running.size === 0) {
        clearInterval(this.#timer);
        this.#timer = undefined;
      }
    };
  }

  #sample(): void {
    const now = performance.now();
    for (const r of this.#running) {
      const rx = bytesReceived(r.connection);
      if (rx !== undefined && rx !== r.rx) {
        r.rx = rx;
        r.rxAt = now;
      }
    }
  }

  /**
   * Closes the connections of the other syncs of `folder` (with any peer, not over `connection`)
   * that have received nothing for `quietMs`: their peer is gone. Returns how many were closed.
   */
  endStale(folder: string, connection: Connection, quietMs: number, log: Logger): number {
    this.#sample();
    const now = performance.now();
    let ended = 0;
    for (const r of this.#running) {
      if (r.folder !== folder || r.connection === connection) continue;
      const quiet = now - r.rxAt;
      if (quiet < quietMs) continue;
      log.warn('closing the connection of an earlier sync of the folder: nothing came over it for a while', {
        peer: r.peerId,
        folder,
        quietMs: Math.round(quiet),
      });
      void r.connection
        .close('a new sync of the folder found this one silent', { linger: false })
        .catch(() => undefined);
      ended++;
    }
    return ended;
  }
}

/** The process's registry: a listener's served syncs and its own client syncs share it. */
export const PROCESS_RUNNING_SYNCS = new RunningSyncs();

/**
 * How quiet a connection must have been to be taken for dead: a keep-alive interval (keepAliveMs
 * of the node's config) and 2 s more. An idle live peer answers our keep-alive within a round
 * trip, and sends its own.
 */
export function staleAfterMs(keepAliveMs: number): number {
  return keepAliveMs + 2_000;
}

/**
 * Registers a sync of `dir` with the session's peer for as long as it runs: `endStale` frees the
 * folder from a dead earlier sync of it (call it before and while waiting for the folder's
 * lock), `unregister` when the sync ends.
 */
export function trackSync(
  dir: string,
  session: { readonly peerId: string; readonly connection: Connection },
  keepAliveMs: number,
  log: Logger,
): { endStale: () => void; unregister: () => void } {
  const folder = path.resolve(dir);
  const quietMs = staleAfterMs(keepAliveMs);
  return {
    endStale: () => {
      PROCESS_RUNNING_SYNCS.endStale(folder, session.connection, quietMs, log);
    },
    unregister: PROCESS_RUNNING_SYNCS.register(folder, session.peerId, session.connection),
  };
}
