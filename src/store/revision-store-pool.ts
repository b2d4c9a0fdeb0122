// A long-lived process's open revision logs, one per folder, kept between syncs.
//
// Goals: a sync in a listener starts without opening LMDB, reading every id and hashing the
// Merkle tree again (~25 ms at 10,000 revisions): the open store's id set is kept current by
// its own writes. Safe against other processes (restore, gc, a CLI sync of the same folder):
// a store whose ids another process changed, or whose directory was replaced, is reopened.
// Callers hold the folder lock while they use a store (synced-folder.ts), so one user at a time;
// a store stays open when its user is done, and is closed with the pool.
// Non-goals: the lock itself, eviction (a listener serves a fixed set of shares).
import { stat } from 'node:fs/promises';
import { RevisionStore } from './revision-store.js';

interface Pooled {
  readonly store: RevisionStore;
  /** Inode of the store's directory when it was opened: a replaced folder is a new store (undefined: never reused). */
  readonly ino: bigint | undefined;
}

export class RevisionStorePool {
  readonly #byFolder = new Map<string, Pooled>();
  #closed = false;

  /** The open store of `folder` (opened now, or kept from an earlier sync if still current). */
  async acquire(folder: string, nodeId: string): Promise<RevisionStore> {
    if (this.#closed) throw new TypeError('revision store pool is closed');
    const kept = this.#byFolder.get(folder);
    if (kept !== undefined) {
      const ino = await dirIno(kept.store.dir);
      if (kept.store.nodeId === nodeId && ino !== undefined && ino === kept.ino && kept.store.isCurrent())
        return kept.store;
      this.#byFolder.delete(folder);
      await kept.store.close();
    }
    const store = await RevisionStore.open(folder, { nodeId });
    this.#byFolder.set(folder, { store, ino: await dirIno(store.dir) });
    return store;
  }

  /** The store kept open for `folder`, if any, as it is (for status: its size and root; no reopen, no lock). */
  peek(folder: string): RevisionStore | undefined {
    return this.#byFolder.get(folder)?.store;
  }

  async close(): Promise<void> {
    this.#closed = true;
    const all = [...this.#byFolder.values()];
    this.#byFolder.clear();
    await Promise.all(all.map((p) => p.store.close()));
  }
}

async function dirIno(dir: string): Promise<bigint | undefined> {
  try {
    return (await stat(dir, { bigint: true })).ino;
  } catch {
    return undefined;
  }
}
