// Which files of a transfer the receiver holds completely, as the sender can tell: every distinct
// chunk of the file was acknowledged (written and verified there) or never had to travel (the
// Want did not list it as lacking). Progress shows this as "files done" on the sending side.
//
// Chunks are shared: one acknowledged chunk can complete several files (a copy, a file of zeros),
// so each distinct chunk counts once per file that references it. A file without chunks (empty)
// is done from the start. Sans-I/O: the driver feeds it the Want and the acks.

import type { ChunkKey } from './plan.js';

export class FileDelivery {
  readonly #filesOf = new Map<ChunkKey, number[]>();
  readonly #remaining: number[];
  readonly #delivered = new Set<ChunkKey>();
  #done = 0;

  /** `fileKeys[i]`: the chunk keys of file i, in order (repeats allowed). */
  constructor(fileKeys: readonly (readonly ChunkKey[])[]) {
    this.#remaining = fileKeys.map((keys, file) => {
      const distinct = new Set(keys);
      for (const key of distinct) {
        const files = this.#filesOf.get(key);
        if (files === undefined) this.#filesOf.set(key, [file]);
        else files.push(file);
      }
      if (distinct.size === 0) this.#done++;
      return distinct.size;
    });
  }

  /** Files the receiver holds completely. */
  get done(): number {
    return this.#done;
  }

  get total(): number {
    return this.#remaining.length;
  }

  /** Chunks the receiver acknowledged. True when that completed at least one file. */
  deliver(keys: Iterable<ChunkKey>): boolean {
    const before = this.#done;
    for (const key of keys) {
      if (this.#delivered.has(key)) continue;
      this.#delivered.add(key);
      for (const file of this.#filesOf.get(key) ?? []) {
        const left = (this.#remaining[file] ?? 0) - 1;
        this.#remaining[file] = left;
        if (left === 0) this.#done++;
      }
    }
    return this.#done > before;
  }

  /** The Want: every chunk it does not list as lacking is held already. */
  wantArrived(lacking: ReadonlySet<ChunkKey>): boolean {
    const held: ChunkKey[] = [];
    for (const key of this.#filesOf.keys()) if (!lacking.has(key)) held.push(key);
    return this.deliver(held);
  }
}
