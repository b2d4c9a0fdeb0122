// The files a peer is about to fetch, looked up while it still plans. In a first sync the peer
// decodes and plans every revision sent (~0.5-0.75 s for 10,000) while this side only waits,
// and then this side's serveFetch spent ~0.5 s of its own on one lstat per file (the manifest
// cache's check that the file is as the scan hashed it) while the peer waited in turn.
// Looking them up in the first wait overlaps the two.
//
// Only what the scan's manifest cache vouches for is taken ahead: nothing is hashed on
// speculation (a peer that holds the content already asks for none of it). serveFetch takes an
// entry when an item asks for the same path and root, and locates anything else as before. An
// entry's check is as old as the peer's planning: a file saved since is caught where it always
// was, by the chunk reader as its bytes are sent (by the scan's stat where the cache gives it:
// manifest-cache.ts sourceFileOf).
import { setImmediate as yieldToEvents } from 'node:timers/promises';
import { bytesEqual } from '../chunking/blake3.js';
import { sourceFileOf, type ManifestCache } from '../exchange/manifest-cache.js';
import type { SourceFile } from '../exchange/transfer-source.js';
import path from 'node:path';

/** Lookups between two turns of the event loop: the peer's messages are not kept waiting. */
const LOOKUPS_PER_TURN = 256;

/** What a prelocation needs to know of the folder (serveFetch's ServableFiles). */
export interface PrelocateScope {
  readonly folder: string;
  readonly cache: ManifestCache | undefined;
  readonly recorded: (relPath: string, root: Uint8Array) => boolean;
  readonly inside: (abs: string) => boolean;
}

/**
 * The file at `relPath` as the scan's manifest cache vouches for it with content `root`, when
 * the log records it so and it lies inside the folder; no hashing (serveFetch's locate looks here
 * first, the prelocation only here).
 */
export function cachedHere(scope: PrelocateScope, relPath: string, root: Uint8Array): SourceFile | undefined {
  const here = path.join(scope.folder, ...relPath.split('/'));
  if (!scope.recorded(relPath, root) || !scope.inside(here)) return undefined;
  const cached = scope.cache?.lookup(relPath, here);
  return cached !== undefined && bytesEqual(cached.manifest.root, root) ? sourceFileOf(here, cached) : undefined;
}

export class PrelocatedFiles {
  readonly #found = new Map<string, SourceFile>();
  #stopped = false;
  #running: Promise<void> = Promise.resolve();

  private constructor() {}

  /** Starts looking up `wanted` (live file heads the peer lacks) in the background. */
  static start(wanted: readonly { path: string; root: Uint8Array }[], scope: PrelocateScope): PrelocatedFiles {
    const p = new PrelocatedFiles();
    // A failed look (the folder gone, its log closed under a failed sync) only ends the lookups.
    p.#running = p.#run(wanted, scope).catch(() => p.stop());
    return p;
  }

  /** Resolves when the lookups ended (all done, stopped or failed). */
  ended(): Promise<void> {
    return this.#running;
  }

  async #run(wanted: readonly { path: string; root: Uint8Array }[], scope: PrelocateScope): Promise<void> {
    for (let i = 0; i < wanted.length && !this.#stopped; i++) {
      if (i > 0 && i % LOOKUPS_PER_TURN === 0) {
        await yieldToEvents();
        if (this.#stopped) return;
      }
      const { path: rel, root } = wanted[i]!;
      const found = cachedHere(scope, rel, root);
      if (found !== undefined) this.#found.set(rel, found);
    }
  }

  /** Ends the lookups (the fetch is here: what is left is located as it is served). */
  stop(): void {
    this.#stopped = true;
  }

  /** The file found for `relPath` with content `root`, once. */
  take(relPath: string, root: Uint8Array): SourceFile | undefined {
    const f = this.#found.get(relPath);
    if (f === undefined || !bytesEqual(f.manifest.root, root)) return undefined;
    this.#found.delete(relPath);
    return f;
  }
}
