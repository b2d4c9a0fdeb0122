// A listener's chunk indexes, one per share and chunking, kept in memory between transfers.
//
// Goals: a push into a share does not pay for the whole share on its critical path. Loading and
// saving the persisted index took ~60 ms of every push into a share of 2,000 files here, and the
// rescan (an lstat per file, hashing what changed) ~40 ms more, growing with the share. So the
// index stays in memory; the share is rescanned at most every RESCAN_INTERVAL_MS (the first
// transfer after start always rescans), while the partial store, which a rerun after a kill
// resumes from, is re-read for every transfer. Concurrent transfers into one share join a
// refresh in progress. Changes are saved in the background, debounced, and on close, so a
// restarted listener starts warm.
// What a skipped rescan costs: a file changed or added in the share by someone else since the
// last rescan is not used for dedup until the next one (its chunks travel again), and a stale
// entry is caught when its bytes are read (ChunkIndex.readChunk re-hashes them, drops the file
// and the chunk is requested from the peer instead). Files this listener publishes are added
// as they land (TransferReceiver), so they count at once.
// Non-goals: evicting idle shares (a listener serves a fixed list), watching the file system,
// sharing across processes (each CLI run that receives opens its own index, ChunkIndex.open).

import type { ChunkingParams } from '../chunking/fastcdc.js';
import type { Logger } from '../logger.js';
import { ChunkIndex } from './chunk-index.js';
import type { PartialStore } from './partial-store.js';

/** A share is rescanned for a transfer when its last rescan finished longer ago than this, ms. */
export const RESCAN_INTERVAL_MS = 60_000;
/** After a transfer changed an index, how long to wait for more changes before saving it, ms. */
export const INDEX_SAVE_DELAY_MS = 2_000;

interface PoolEntry {
  readonly opening: Promise<ChunkIndex>;
  refreshing: Promise<void> | undefined;
  /** When the last full rescan finished (performance.now()), or undefined before the first. */
  rescannedAt: number | undefined;
  saveTimer: NodeJS.Timeout | undefined;
}

export interface ChunkIndexPoolOptions {
  readonly log: Logger;
  readonly saveDelayMs?: number;
  readonly rescanIntervalMs?: number;
}

export class ChunkIndexPool {
  readonly #entries = new Map<string, PoolEntry>();
  /** The entries whose index has opened. */
  readonly #byIndex = new Map<ChunkIndex, PoolEntry>();
  readonly #log: Logger;
  readonly #saveDelayMs: number;
  readonly #rescanIntervalMs: number;
  #closed = false;

  constructor(options: ChunkIndexPoolOptions) {
    this.#log = options.log;
    this.#saveDelayMs = options.saveDelayMs ?? INDEX_SAVE_DELAY_MS;
    this.#rescanIntervalMs = options.rescanIntervalMs ?? RESCAN_INTERVAL_MS;
  }

  /**
   * The index of `shareRoot` for `chunking`, refreshed: the partial store always, the share when
   * its last rescan is older than the rescan interval. The first call opens it (loading the
   * persisted cache, with `partials` as its partial store); a refresh in progress is joined.
   */
  async acquire(
    shareRoot: string,
    chunking: ChunkingParams,
    partials: PartialStore,
    signal?: AbortSignal,
  ): Promise<ChunkIndex> {
    if (this.#closed) throw new TypeError('chunk index pool is closed');
    const key = `${shareRoot}\0${chunking.minBytes}/${chunking.avgBytes}/${chunking.maxBytes}/${chunking.normalization}`;
    let entry = this.#entries.get(key);
    if (entry === undefined) {
      const opening = ChunkIndex.open({ shareRoot, chunking, partials });
      const created: PoolEntry = { opening, refreshing: undefined, rescannedAt: undefined, saveTimer: undefined };
      this.#entries.set(key, created);
      opening.then(
        (index) => this.#byIndex.set(index, created),
        () => this.#entries.delete(key), // the next transfer tries again
      );
      entry = created;
    }
    const index = await entry.opening;
    await this.#refresh(entry, index, signal);
    return index;
  }

  async #refresh(entry: PoolEntry, index: ChunkIndex, signal: AbortSignal | undefined): Promise<void> {
    if (entry.refreshing !== undefined) {
      try {
        await entry.refreshing;
        return;
      } catch {
        // That refresh failed (its transfer was aborted, say): run ours.
      }
    }
    const rescan = entry.rescannedAt === undefined || performance.now() - entry.rescannedAt > this.#rescanIntervalMs;
    const run = rescan
      ? index.refresh(signal === undefined ? {} : { signal }).then(() => {
          entry.rescannedAt = performance.now();
        })
      : index.refreshPartials().then(() => undefined);
    entry.refreshing = run;
    try {
      await run;
    } finally {
      if (entry.refreshing === run) entry.refreshing = undefined;
    }
  }

  /** A transfer is done with `index`: saves it after a quiet period if it changed. */
  release(index: ChunkIndex): void {
    if (this.#closed || !index.dirty) return;
    const entry = this.#byIndex.get(index);
    if (entry === undefined || entry.saveTimer !== undefined) return; // not ours, or a save is already scheduled
    entry.saveTimer = setTimeout(() => {
      entry.saveTimer = undefined;
      void this.#save(index);
    }, this.#saveDelayMs);
    entry.saveTimer.unref();
  }

  #save(index: ChunkIndex): Promise<void> {
    return index.save().catch((err: unknown) =>
      this.#log.warn('cannot save the chunk index (the next start re-hashes)', {
        share: index.shareRoot,
        error: (err as Error).message,
      }),
    );
  }

  /** Saves every changed index now; acquire fails afterwards. */
  async close(): Promise<void> {
    this.#closed = true;
    const saves: Promise<void>[] = [];
    for (const [index, entry] of this.#byIndex) {
      clearTimeout(entry.saveTimer);
      entry.saveTimer = undefined;
      saves.push(this.#save(index));
    }
    await Promise.all(saves);
  }
}
