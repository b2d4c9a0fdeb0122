// What a listener is doing right now, for `clawpeer status` (over the control socket,
// resident-sync.ts): the transfers and syncs it serves, each with its peer, share and path and
// how far it got. The services register what they run and end it in a finally; progress is a
// counter update (no I/O, no allocation per chunk), read only when someone asks.
import type { TransportName } from '../transport/types.js';
import type { TransferProgress } from '../transfer/transfer-progress.js';

/** One running push, pull or sync, as `status` shows it. */
export interface ActivitySnapshot {
  readonly peer: string;
  readonly kind: 'push' | 'pull' | 'sync';
  readonly share: string;
  /** Path inside the share ('' = the share root). */
  readonly path: string;
  /** ms since the epoch. */
  readonly startedAt: number;
  /** Payload bytes moved so far, and the total when known (0: not known yet). */
  readonly bytes: number;
  readonly totalBytes: number;
  readonly files: number;
  readonly totalFiles: number;
}

/** A running activity: its counters, and end() once it is over (ok or not). */
export interface Activity {
  /** The totals, once known: a push's manifest, then the chunks not held here; a pull's scan, then its Want. */
  setTotals(totalBytes: number, totalFiles: number): void;
  addBytes(n: number): void;
  setFiles(n: number): void;
  /** All counters at once, from a phase's progress report (a sync receives, then sends). */
  report(p: TransferProgress): void;
  /** Over: `ok` false when it failed (counted apart, as rsync's and Syncthing's logs tell them). */
  end(ok: boolean): void;
  /** Over without having run: a refusal the peer expects (a mode narrowing, sync-service.ts); not counted. */
  discard(): void;
}

/** What has ended since the listener started, per kind: how many (of them, how many failed), and the bytes they moved. */
export type ActivityTotals = Record<ActivitySnapshot['kind'], { count: number; failed: number; bytes: number }>;

export class ListenerActivity {
  readonly #running = new Set<{ -readonly [K in keyof ActivitySnapshot]: ActivitySnapshot[K] }>();
  readonly #ended: ActivityTotals = {
    push: { count: 0, failed: 0, bytes: 0 },
    pull: { count: 0, failed: 0, bytes: 0 },
    sync: { count: 0, failed: 0, bytes: 0 },
  };

  begin(what: Pick<ActivitySnapshot, 'peer' | 'kind' | 'share' | 'path'>, nowMs = Date.now()): Activity {
    const entry = { ...what, startedAt: nowMs, bytes: 0, totalBytes: 0, files: 0, totalFiles: 0 };
    this.#running.add(entry);
    return {
      setTotals: (totalBytes, totalFiles) => {
        entry.totalBytes = totalBytes;
        entry.totalFiles = totalFiles;
      },
      addBytes: (n) => {
        entry.bytes += n;
      },
      setFiles: (n) => {
        entry.files = n;
      },
      report: (p) => {
        entry.bytes = p.bytes;
        entry.totalBytes = p.totalBytes;
        entry.files = p.files;
        entry.totalFiles = p.totalFiles;
      },
      end: (ok) => {
        if (!this.#running.delete(entry)) return;
        const ended = this.#ended[entry.kind];
        ended.count++;
        if (!ok) ended.failed++;
        ended.bytes += entry.bytes;
      },
      discard: () => {
        this.#running.delete(entry);
      },
    };
  }

  /** What runs now, oldest first. */
  snapshot(): ActivitySnapshot[] {
    return [...this.#running].map((e) => ({ ...e }));
  }

  /** What has ended (done or failed) since the start; a failure counts the bytes it moved; a sync its last phase's. */
  totals(): ActivityTotals {
    const { push, pull, sync } = this.#ended;
    return { push: { ...push }, pull: { ...pull }, sync: { ...sync } };
  }
}

/** A peer connected to the listener now, as `status` shows it. */
export interface ConnectedPeer {
  readonly id: string;
  readonly addr: string;
  readonly transport: TransportName;
  /** When its handshake completed, ms since the epoch. */
  readonly since: number;
  /** How its connection reaches us (reach/paths.ts PathKind) and the transport's RTT now. */
  readonly path?: string;
  readonly rttMs?: number;
  /** This node dialled it (the folder service's session for syncing shared folders), not the peer. */
  readonly dialed?: true;
}
