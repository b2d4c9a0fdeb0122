// A listener's chunk indexes, one per share and chunking, kept in memory between transfers.
//
// Goals: a push into a share costs a rescan of its tree (lstat per file, hashing only what
// changed), not also a load and a save of the whole persisted index on the transfer's critical
// path: with 2,000 files in a share, load + save took ~60 ms of every push here. Concurrent
// transfers into one share join a refresh in progress instead of scanning twice. Changes are
// saved in the background, debounced, and on close, so a restarted listener starts warm.
// Non-goals: evicting idle shares (a listener serves a fixed list), sharing across processes
// (each CLI run that receives opens its own index, ChunkIndex.open).

import type { ChunkingParams } from '../chunking/fastcdc.js';
import type { Logger } from '../logger.js';
import { ChunkIndex } from './chunk-index.js';
import type { PartialStore } from './partial-store.js';

/** After a transfer changed an index, how long to wait for more changes before saving it, ms. */
export const INDEX_SAVE_DELAY_MS = 2_000;

interface PoolEntry {
  readonly opening: Promise<ChunkIndex>;
  /** Set once `opening` resolved. */
  index: ChunkIndex | undefined;
  refreshing: Promise<void> | undefined;
  saveTimer: NodeJS.Timeout | undefined;
}

export interface ChunkIndexPoolOptions {
  readonly log: Logger;
  readonly saveDelayMs?: number;
}

export class ChunkIndexPool {
  readonly #entries = new Map<string, PoolEntry>();
  readonly #byIndex = new Map<ChunkIndex, PoolEntry>();
  readonly #log: Logger;
  readonly #saveDelayMs: number;
  #closed = false;

  constructor(options: ChunkIndexPoolOptions) {
    this.#log = options.log;
    this.#saveDelayMs = options.saveDelayMs ?? INDEX_SAVE_DELAY_MS;
  }

  /**
   * The index of `shareRoot` for `chunking`, refreshed against the disk. The first call opens it
   * (loading the persisted cache, with `partials` as its partial store); a refresh already in
   * progress is joined rather than repeated.
   */
  async acquire(shareRoot: string, chunking: ChunkingParams, partials: PartialStore, signal?: AbortSignal): Promise<ChunkIndex> {
    if (this.#closed) throw new TypeError('chunk index pool is closed');
    const key = `${shareRoot}\0${chunking.minBytes}/${chunking.avgBytes}/${chunking.maxBytes}/${chunking.normalization}`;
    let entry = this.#entries.get(key);
    if (entry === undefined) {
      const opening = ChunkIndex.open({ shareRoot, chunking, partials });
      const created: PoolEntry = { opening, index: undefined, refreshing: undefined, saveTimer: undefined };
      this.#entries.set(key, created);
      opening.then(
        (index) => {
          created.index = index;
          this.#byIndex.set(index, created);
        },
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
    const run = index.refresh(signal === undefined ? {} : { signal }).then(() => undefined);
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
      this.#save(index);
    }, this.#saveDelayMs);
    entry.saveTimer.unref();
  }

  #save(index: ChunkIndex): Promise<void> {
    return index.save().catch((err: unknown) => this.#log.warn('cannot save the chunk index (the next start re-hashes)', { share: index.shareRoot, error: (err as Error).message }));
  }

  /** Saves every changed index now; acquire fails afterwards. */
  async close(): Promise<void> {
    this.#closed = true;
    const saves: Promise<void>[] = [];
    for (const entry of this.#entries.values()) {
      clearTimeout(entry.saveTimer);
      entry.saveTimer = undefined;
      if (entry.index !== undefined) saves.push(this.#save(entry.index));
    }
    await Promise.all(saves);
  }
}
