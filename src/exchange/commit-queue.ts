// Group commit of a receiver's complete files (transfer-receive.ts): one fsync round and one
// directory fsync per batch, batches committed one after the other.
//
// Why bounded batches: each small file of a batch holds a descriptor from its write-out to its
// rename, and waits in memory until then. A batch takes at most a quarter of the open-file limit
// (under `ulimit -n 64` batches of 256 failed every sync of a tree with EMFILE) and 64 MiB.
// Before, a flush took everything queued: a directory of 20,000 files renamed on a peer (content
// the receiver holds, so every file is complete before a chunk travels) was one batch of 20,000
// descriptors, EMFILE at any limit below that, every retry the same.
// When: with no commit running, what is queued commits at once, so on a slow link files are
// published while the next chunks travel (a fixed batch of 256 made 100 small files all wait for
// one commit after the last chunk). While one runs, files queue up to a full batch, and what
// queued meanwhile commits when it finishes: the faster files complete, the larger the batches.
import { shareOfOpenFileLimit } from '../support/open-file-limit.js';
import type { StagedFile } from '../store/staged-file.js';

/** Files of one batch: a quarter of the open-file limit, 8 to 256. */
export const commitBatchFiles = (): number => shareOfOpenFileLimit({ divideBy: 4, min: 8, max: 256 });
/** Bytes of one batch (the files of a batch are in memory until written out). */
export const COMMIT_BATCH_BYTES = 64 << 20;

export interface CommitQueueOptions {
  /** Publishes one batch (Publisher.commit). */
  readonly commit: (batch: readonly StagedFile[]) => Promise<void>;
  /** After a batch is committed (its files' states say which were published). */
  readonly committed: (batch: readonly StagedFile[]) => void;
  /** True once the transfer failed: nothing more is handed over (abort() discards the staging). */
  readonly failed: () => boolean;
  /** A failed batch, when no caller waits on it. */
  readonly onError: (err: unknown) => void;
  /** Batch bounds (tests): defaults commitBatchFiles() and COMMIT_BATCH_BYTES. */
  readonly batchFiles?: number;
  readonly batchBytes?: number;
}

export class CommitQueue {
  readonly #o: CommitQueueOptions;
  /** The limit as it is now: a listener's can be lowered while it runs (prlimit). */
  readonly #batchFiles: number;
  readonly #batchBytes: number;
  #queue: StagedFile[] = [];
  #queuedBytes = 0;
  #chain: Promise<void> = Promise.resolve();
  #inFlight = 0;

  constructor(o: CommitQueueOptions) {
    this.#o = o;
    this.#batchFiles = o.batchFiles ?? commitBatchFiles();
    this.#batchBytes = o.batchBytes ?? COMMIT_BATCH_BYTES;
  }

  /** Batches handed to the chain and not finished: a producer waits when two are. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /** Settles when every batch handed over so far is done. */
  get settled(): Promise<void> {
    return this.#chain;
  }

  add(file: StagedFile): void {
    this.#queue.push(file);
    this.#queuedBytes += file.manifest.size;
  }

  /**
   * Hands what is queued to the chain as the rule above says; `all`: everything, in as many
   * batches as it takes (the transfer's end). Resolves when those batches are done.
   */
  flush(all: boolean): Promise<void> {
    if (this.#o.failed() || this.#queue.length === 0) return this.#chain;
    const full = this.#queue.length >= this.#batchFiles || this.#queuedBytes >= this.#batchBytes;
    if (!all && this.#inFlight > 0 && !full) return Promise.resolve();
    do this.#handOver(this.#takeBatch());
    while (all && this.#queue.length > 0);
    return this.#chain;
  }

  /** The first queued files, up to the batch bounds (at least one). */
  #takeBatch(): StagedFile[] {
    let n = 0;
    let bytes = 0;
    while (n < this.#queue.length && n < this.#batchFiles && (n === 0 || bytes < this.#batchBytes))
      bytes += this.#queue[n++]!.manifest.size;
    this.#queuedBytes -= bytes;
    return this.#queue.splice(0, n);
  }

  #handOver(batch: StagedFile[]): void {
    this.#inFlight++;
    this.#chain = this.#chain
      .then(async () => {
        await this.#o.commit(batch);
        this.#o.committed(batch);
      })
      .finally(() => {
        this.#inFlight--;
        if (this.#inFlight === 0) this.flush(false).catch((err: unknown) => this.#o.onError(err));
      });
  }
}
