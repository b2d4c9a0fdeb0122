// An order-independent Merkle root over a set of 32-byte revision ids, maintained incrementally.
//
// Goals: the same root on every peer whatever the insertion order; work per add/delete bounded
// by one bucket plus a fixed-depth path (not by the set size); "what would the root be after
// these changes" without copying the set, which is how a reconciliation is verified; the root
// commits to the set size.
// Shape (fixed, so peers agree without negotiating anything):
//   bucket  = the id's first 12 bits -> 4096 leaves. Ids are BLAKE3 output, hence uniform, so
//             leaves are balanced (~244 ids per leaf at 10^6 ids, ~7.8 KiB to rehash).
//   leaf    = H(0x00 || the bucket's ids in ascending byte order)
//   level 1 = 256 nodes H(0x01 || 16 leaf digests); level 2 = 16 nodes H(0x02 || 16 level-1 digests)
//   root    = H(0x03 || u64le(set size) || 16 level-2 digests)
//   H = BLAKE3 (sync-hash.ts). The leading byte separates the levels.
// Why not one hash over all sorted ids: every change would rehash the whole set (32 MB at 10^6).
// Why not an XOR or sum of the ids: linear, so anyone can build a different set with the same
// root (Gaussian elimination over ~257 chosen ids); the root is what proves a decode right.
// The fixed fanout-16 tree also leaves room for a "descend the tree" fallback (compare 16
// children per round trip) besides the RIBLT exchange; nothing uses that yet.
// Non-goals: persistence (the store holds the ids and rebuilds this at start), membership proofs.

import { SYNC_HASH_BYTES, syncHash } from './sync-hash.js';

/** Length of a revision id (a BLAKE3 digest), bytes. */
export const REVISION_ID_BYTES = 32;
/** Number of leaf buckets: ids are bucketed by their first 12 bits. */
export const MERKLE_LEAF_COUNT = 4096;
const FANOUT = 16;
const LEVEL1_COUNT = MERKLE_LEAF_COUNT / FANOUT; // 256
const LEVEL2_COUNT = LEVEL1_COUNT / FANOUT; // 16
const DOMAIN_LEAF = 0x00;
const DOMAIN_LEVEL1 = 0x01;
const DOMAIN_LEVEL2 = 0x02;
const DOMAIN_ROOT = 0x03;
const NODE_INPUT_BYTES = 1 + FANOUT * SYNC_HASH_BYTES; // 513
const ROOT_INPUT_BYTES = 1 + 8 + FANOUT * SYNC_HASH_BYTES; // 521
const MIN_BUCKET_CAPACITY_IDS = 4;

/** Lexicographic byte order of the ids at `a[aOff..aOff+32)` and `b[bOff..bOff+32)`. */
export function compareIds(a: Uint8Array, aOff: number, b: Uint8Array, bOff: number): number {
  for (let i = 0; i < REVISION_ID_BYTES; i++) {
    const d = a[aOff + i]! - b[bOff + i]!;
    if (d !== 0) return d;
  }
  return 0;
}

/** True when the `n` packed ids are in strictly ascending byte order (sorted, no duplicates). */
function isStrictlyAscending(packed: Uint8Array, n: number): boolean {
  for (let i = 1; i < n; i++)
    if (compareIds(packed, (i - 1) * REVISION_ID_BYTES, packed, i * REVISION_ID_BYTES) >= 0) return false;
  return true;
}

function bucketOf(bytes: Uint8Array, off: number): number {
  return (bytes[off]! << 4) | (bytes[off + 1]! >>> 4);
}

function checkId(id: Uint8Array): void {
  if (id.length !== REVISION_ID_BYTES)
    throw new TypeError(`revision id must be ${REVISION_ID_BYTES} bytes, got ${id.length}`);
}

function leafDigest(sortedIds: Uint8Array): Uint8Array {
  const input = new Uint8Array(1 + sortedIds.length);
  input[0] = DOMAIN_LEAF;
  input.set(sortedIds, 1);
  return syncHash(input);
}

function nodeDigest(domain: number, children: Uint8Array): Uint8Array {
  const input = new Uint8Array(NODE_INPUT_BYTES);
  input[0] = domain;
  input.set(children, 1);
  return syncHash(input);
}

function rootDigest(size: number, level2: Uint8Array): Uint8Array {
  const input = new Uint8Array(ROOT_INPUT_BYTES);
  input[0] = DOMAIN_ROOT;
  new DataView(input.buffer).setBigUint64(1, BigInt(size), true);
  input.set(level2, 9);
  return syncHash(input);
}

function repeatDigest(digest: Uint8Array, times: number): Uint8Array {
  const out = new Uint8Array(times * SYNC_HASH_BYTES);
  for (let i = 0; i < times; i++) out.set(digest, i * SYNC_HASH_BYTES);
  return out;
}

const EMPTY_LEAF = leafDigest(new Uint8Array(0));
const EMPTY_LEVEL1 = nodeDigest(DOMAIN_LEVEL1, repeatDigest(EMPTY_LEAF, FANOUT));
const EMPTY_LEVEL2 = nodeDigest(DOMAIN_LEVEL2, repeatDigest(EMPTY_LEVEL1, FANOUT));

/** Digests of every node below the root; copied wholesale (136 KiB) by `rootAfter` and `clone`. */
interface TreeLevels {
  leaf: Uint8Array; // MERKLE_LEAF_COUNT * 32
  level1: Uint8Array; // LEVEL1_COUNT * 32
  level2: Uint8Array; // LEVEL2_COUNT * 32
}

/** An independent copy of the tree's levels. */
function copyLevels(l: TreeLevels): TreeLevels {
  return { leaf: new Uint8Array(l.leaf), level1: new Uint8Array(l.level1), level2: new Uint8Array(l.level2) };
}

/** Recomputes the level-1, level-2 nodes above the given dirty leaves, then the root. */
function rehashAbove(levels: TreeLevels, dirtyLeaves: Iterable<number>, size: number): Uint8Array {
  const dirty1 = new Set<number>();
  for (const leaf of dirtyLeaves) dirty1.add(Math.floor(leaf / FANOUT));
  const dirty2 = new Set<number>();
  for (const n of dirty1) {
    const children = levels.leaf.subarray(n * FANOUT * SYNC_HASH_BYTES, (n + 1) * FANOUT * SYNC_HASH_BYTES);
    levels.level1.set(nodeDigest(DOMAIN_LEVEL1, children), n * SYNC_HASH_BYTES);
    dirty2.add(Math.floor(n / FANOUT));
  }
  for (const n of dirty2) {
    const children = levels.level1.subarray(n * FANOUT * SYNC_HASH_BYTES, (n + 1) * FANOUT * SYNC_HASH_BYTES);
    levels.level2.set(nodeDigest(DOMAIN_LEVEL2, children), n * SYNC_HASH_BYTES);
  }
  return rootDigest(size, levels.level2);
}

/**
 * A set of revision ids with a cached Merkle root. Ids are stored packed and sorted per bucket
 * (one buffer per bucket, not one object per id: 10^6 ids take ~32-64 MB, not ~150 MB).
 */
export class MerkleIdSet {
  readonly #buckets: (Uint8Array | undefined)[] = new Array<Uint8Array | undefined>(MERKLE_LEAF_COUNT);
  readonly #counts = new Uint32Array(MERKLE_LEAF_COUNT);
  #levels: TreeLevels = {
    leaf: repeatDigest(EMPTY_LEAF, MERKLE_LEAF_COUNT),
    level1: repeatDigest(EMPTY_LEVEL1, LEVEL1_COUNT),
    level2: repeatDigest(EMPTY_LEVEL2, LEVEL2_COUNT),
  };
  readonly #dirty = new Set<number>();
  #size = 0;
  #root: Uint8Array | undefined;

  /** Builds a set from ids packed back to back (length a multiple of 32). Duplicates collapse. */
  static fromPacked(packed: Uint8Array): MerkleIdSet {
    if (packed.length % REVISION_ID_BYTES !== 0) {
      throw new TypeError(`packed ids must be a multiple of ${REVISION_ID_BYTES} bytes, got ${packed.length}`);
    }
    const set = new MerkleIdSet();
    const n = packed.length / REVISION_ID_BYTES;
    if (isStrictlyAscending(packed, n)) {
      // The store lists its ids in key order: each bucket is already a sorted, duplicate-free run.
      let start = 0;
      while (start < n) {
        const b = bucketOf(packed, start * REVISION_ID_BYTES);
        let end = start + 1;
        while (end < n && bucketOf(packed, end * REVISION_ID_BYTES) === b) end++;
        set.#buckets[b] = packed.slice(start * REVISION_ID_BYTES, end * REVISION_ID_BYTES);
        set.#counts[b] = end - start;
        set.#dirty.add(b);
        start = end;
      }
      set.#size = n;
      return set;
    }
    const perBucket = new Uint32Array(MERKLE_LEAF_COUNT);
    for (let i = 0; i < n; i++) perBucket[bucketOf(packed, i * REVISION_ID_BYTES)]!++;
    const scratch: Uint8Array[] = [];
    for (let b = 0; b < MERKLE_LEAF_COUNT; b++) scratch.push(new Uint8Array(perBucket[b]! * REVISION_ID_BYTES));
    const fill = new Uint32Array(MERKLE_LEAF_COUNT);
    for (let i = 0; i < n; i++) {
      const off = i * REVISION_ID_BYTES;
      const b = bucketOf(packed, off);
      scratch[b]!.set(packed.subarray(off, off + REVISION_ID_BYTES), fill[b]! * REVISION_ID_BYTES);
      fill[b]!++;
    }
    for (let b = 0; b < MERKLE_LEAF_COUNT; b++) {
      const k = perBucket[b]!;
      if (k === 0) continue;
      const src = scratch[b]!;
      const order = Array.from({ length: k }, (_, i) => i * REVISION_ID_BYTES);
      order.sort((x, y) => compareIds(src, x, src, y));
      const dst = new Uint8Array(k * REVISION_ID_BYTES);
      let kept = 0;
      for (let i = 0; i < k; i++) {
        const off = order[i]!;
        if (kept > 0 && compareIds(dst, (kept - 1) * REVISION_ID_BYTES, src, off) === 0) continue;
        dst.set(src.subarray(off, off + REVISION_ID_BYTES), kept * REVISION_ID_BYTES);
        kept++;
      }
      set.#buckets[b] = dst;
      set.#counts[b] = kept;
      set.#size += kept;
      set.#dirty.add(b);
    }
    return set;
  }

  /** Builds a set from individual ids. Duplicates collapse. */
  static fromIds(ids: Iterable<Uint8Array>): MerkleIdSet {
    const set = new MerkleIdSet();
    for (const id of ids) set.add(id);
    return set;
  }

  /** Number of distinct ids. */
  get size(): number {
    return this.#size;
  }

  has(id: Uint8Array): boolean {
    checkId(id);
    return this.#find(bucketOf(id, 0), id, 0) >= 0;
  }

  /** Adds `id`; false if it was already present. */
  add(id: Uint8Array): boolean {
    checkId(id);
    const b = bucketOf(id, 0);
    const at = this.#find(b, id, 0);
    if (at >= 0) return false;
    const pos = -at - 1;
    const count = this.#counts[b]!;
    let data = this.#buckets[b];
    if (data === undefined || data.length < (count + 1) * REVISION_ID_BYTES) {
      const grown = new Uint8Array(Math.max(MIN_BUCKET_CAPACITY_IDS, count * 2) * REVISION_ID_BYTES);
      if (data !== undefined) grown.set(data.subarray(0, count * REVISION_ID_BYTES));
      data = grown;
      this.#buckets[b] = data;
    }
    data.copyWithin((pos + 1) * REVISION_ID_BYTES, pos * REVISION_ID_BYTES, count * REVISION_ID_BYTES);
    data.set(id, pos * REVISION_ID_BYTES);
    this.#counts[b] = count + 1;
    this.#changed(b, +1);
    return true;
  }

  /** Removes `id`; false if it was absent. */
  delete(id: Uint8Array): boolean {
    checkId(id);
    const b = bucketOf(id, 0);
    const at = this.#find(b, id, 0);
    if (at < 0) return false;
    const count = this.#counts[b]!;
    const data = this.#buckets[b]!;
    data.copyWithin(at * REVISION_ID_BYTES, (at + 1) * REVISION_ID_BYTES, count * REVISION_ID_BYTES);
    this.#counts[b] = count - 1;
    this.#changed(b, -1);
    return true;
  }

  /**
   * An independent copy: later changes to either set do not show in the other. Copies the sorted
   * buckets and the computed tree (no sorting, no hashing), unlike a round trip through toPacked.
   */
  clone(): MerkleIdSet {
    this.root(); // flush pending changes: the copy starts from a current tree
    const copy = new MerkleIdSet();
    for (let b = 0; b < MERKLE_LEAF_COUNT; b++) {
      const count = this.#counts[b]!;
      if (count > 0) copy.#buckets[b] = new Uint8Array(this.#buckets[b]!.subarray(0, count * REVISION_ID_BYTES));
    }
    copy.#counts.set(this.#counts);
    copy.#levels = copyLevels(this.#levels);
    copy.#size = this.#size;
    copy.#root = this.#root; // never changed in place (root() hands out copies)
    return copy;
  }

  /** The 32-byte root (a copy). Recomputes only the buckets changed since the last call. */
  root(): Uint8Array {
    if (this.#root === undefined) {
      for (const b of this.#dirty) {
        const count = this.#counts[b]!;
        const digest = count === 0 ? EMPTY_LEAF : leafDigest(this.#buckets[b]!.subarray(0, count * REVISION_ID_BYTES));
        this.#levels.leaf.set(digest, b * SYNC_HASH_BYTES);
      }
      this.#root = rehashAbove(this.#levels, this.#dirty, this.#size);
      this.#dirty.clear();
    }
    return new Uint8Array(this.#root);
  }

  /**
   * The root this set would have after adding `adds` and removing `removes`, without changing
   * it; `undefined` if the change is not a valid set change (an add already present, a remove
   * absent, or an id listed twice). Work: the touched buckets plus their tree paths.
   */
  rootAfter(adds: readonly Uint8Array[], removes: readonly Uint8Array[]): Uint8Array | undefined {
    if (adds.length === 0 && removes.length === 0) return this.root();
    this.root(); // flush pending changes so the cached levels are current
    const touched = new Map<number, { adds: Uint8Array[]; removes: Uint8Array[] }>();
    const entry = (id: Uint8Array): { adds: Uint8Array[]; removes: Uint8Array[] } => {
      checkId(id);
      const b = bucketOf(id, 0);
      let e = touched.get(b);
      if (e === undefined) touched.set(b, (e = { adds: [], removes: [] }));
      return e;
    };
    for (const id of adds) entry(id).adds.push(id);
    for (const id of removes) entry(id).removes.push(id);
    const levels = copyLevels(this.#levels);
    const byId = (x: Uint8Array, y: Uint8Array): number => compareIds(x, 0, y, 0);
    for (const [b, change] of touched) {
      const count = this.#counts[b]!;
      const removedAt = new Set<number>();
      for (const id of change.removes) {
        const at = this.#find(b, id, 0);
        if (at < 0 || removedAt.has(at)) return undefined;
        removedAt.add(at);
      }
      change.adds.sort(byId);
      for (let i = 0; i < change.adds.length; i++) {
        const id = change.adds[i]!;
        if (this.#find(b, id, 0) >= 0) return undefined;
        if (i > 0 && byId(change.adds[i - 1]!, id) === 0) return undefined;
      }
      // Merge the surviving current ids (already sorted) with the sorted adds.
      const data = this.#buckets[b];
      const out = new Uint8Array((count - removedAt.size + change.adds.length) * REVISION_ID_BYTES);
      let o = 0;
      let i = 0;
      let j = 0;
      while (i < count || j < change.adds.length) {
        if (i < count && removedAt.has(i)) {
          i++;
          continue;
        }
        const takeCurrent =
          j >= change.adds.length || (i < count && compareIds(data!, i * REVISION_ID_BYTES, change.adds[j]!, 0) < 0);
        if (takeCurrent) {
          out.set(data!.subarray(i * REVISION_ID_BYTES, (i + 1) * REVISION_ID_BYTES), o);
          i++;
        } else {
          out.set(change.adds[j]!, o);
          j++;
        }
        o += REVISION_ID_BYTES;
      }
      levels.leaf.set(out.length === 0 ? EMPTY_LEAF : leafDigest(out), b * SYNC_HASH_BYTES);
    }
    return rehashAbove(levels, touched.keys(), this.#size + adds.length - removes.length);
  }

  /** All ids, ascending, packed back to back in a new buffer (size * 32 bytes). */
  toPacked(): Uint8Array {
    const out = new Uint8Array(this.#size * REVISION_ID_BYTES);
    let o = 0;
    for (let b = 0; b < MERKLE_LEAF_COUNT; b++) {
      const bytes = this.#counts[b]! * REVISION_ID_BYTES;
      if (bytes === 0) continue;
      out.set(this.#buckets[b]!.subarray(0, bytes), o);
      o += bytes;
    }
    return out;
  }

  #changed(bucket: number, delta: number): void {
    this.#size += delta;
    this.#dirty.add(bucket);
    this.#root = undefined;
  }

  /** Index of `key[off..off+32)` in bucket `b`, or -(insertion point + 1). */
  #find(b: number, key: Uint8Array, off: number): number {
    const data = this.#buckets[b];
    let lo = 0;
    let hi = this.#counts[b]! - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const c = compareIds(data!, mid * REVISION_ID_BYTES, key, off);
      if (c === 0) return mid;
      if (c < 0) lo = mid + 1;
      else hi = mid - 1;
    }
    return -lo - 1;
  }
}

/** Root of the empty set (what a peer with no revisions announces). */
export const EMPTY_SET_ROOT: Uint8Array = new MerkleIdSet().root();
