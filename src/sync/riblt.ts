// Rateless invertible Bloom lookup table (RIBLT) over 32-byte revision ids.
//
// Scheme: Yang, Gilad, Alizadeh, "Practical Rateless Set Reconciliation" (SIGCOMM 2024). A set
// defines an endless sequence of coded symbols (cells); id x is added to cell i for the indices
// i of a deterministic pseudo-random sequence seeded by x, where index i is hit with probability
// 1/(1 + i/2) (every id is in cell 0). A receiver subtracts the cells of its own set, which
// leaves the cells of the symmetric difference, and peels: a cell holding one id (count +-1 and
// a matching checksum) reveals it, and removing it from its other cells exposes more. About
// 1.35 cells per difference suffice for large differences; the sender just keeps streaming.
//
// A cell is (XOR of ids: 32 bytes, XOR of 64-bit id checksums, signed count of ids).
//
// Hashing choices. Ids are BLAKE3 outputs, so their bytes are already uniform:
// - the index sequence is seeded directly from the id's last 8 bytes (no hashing at all);
// - the checksum must be a NON-linear function of the id (a linear one, e.g. the id's own
//   bytes, XORs like the id field and then every mixed cell looks pure), so it is a
//   murmur3-style 2x32-bit mix of all 32 bytes: ~20 ns in JS, where a native BLAKE3 call is
//   ~3 µs. Neither is keyed. A peer that grinds ids to collide sequences or checksums gains
//   nothing it could not get by sending garbage cells: decoding stalls or yields a wrong set,
//   the caller's root check (reconcile.ts) rejects the wrong set, and the exchange falls back to
//   the full id list, whose cost is bounded by the set size. Correctness never rests on these
//   hashes, only on the BLAKE3 Merkle root. Keying would also stop cells from being cacheable.
// - Both are computed on 32-bit words read in little-endian order (checked at load).
//
// Non-goals: I/O, wire encoding (reconcile-codec.ts), deciding how many cells to ask for
// (reconcile.ts), ids of other lengths.

/** Bytes per id (a BLAKE3 revision id). */
export const RIBLT_ID_BYTES = 32;
const ID_WORDS = 8;
const CHECKSUM_WORDS = 2;
const TWO_POW_32 = 4294967296;

if (new Uint8Array(new Uint32Array([1]).buffer)[0] !== 1) {
  // The checksum and index sequence read ids as little-endian words: a big-endian host would
  // compute different cells than its peer.
  throw new Error('riblt.ts needs a little-endian host');
}

/**
 * A run of consecutive cells `[start, start + length)`. `idXor` holds 8 words per cell whose
 * byte view is the XOR of the ids' bytes; `checksum` holds [low, high] 32-bit halves of the
 * XORed 64-bit checksums; `count` the signed number of ids in the cell.
 */
export interface CodedSymbols {
  readonly start: number;
  readonly length: number;
  readonly idXor: Uint32Array;
  readonly checksum: Uint32Array;
  readonly count: Float64Array;
}

/** Zeroed cells `[start, start + length)`. */
export function allocateSymbols(start: number, length: number): CodedSymbols {
  return {
    start,
    length,
    idXor: new Uint32Array(length * ID_WORDS),
    checksum: new Uint32Array(length * CHECKSUM_WORDS),
    count: new Float64Array(length),
  };
}

function rotl(x: number, r: number): number {
  return (x << r) | (x >>> (32 - r));
}

function fmix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return h ^ (h >>> 16);
}

/** 64-bit checksum of the id at `words[off..off+8)`, written as [low, high] to `out[outOff..]`. */
function checksumInto(words: Uint32Array, off: number, out: Uint32Array, outOff: number): void {
  let h1 = 0x243f6a88;
  let h2 = 0x85a308d3;
  for (let k = 0; k < ID_WORDS; k++) {
    const w = words[off + k]!;
    let k1 = Math.imul(w, 0xcc9e2d51);
    k1 = Math.imul(rotl(k1, 15), 0x1b873593);
    h1 = rotl(h1 ^ k1, 13);
    h1 = (Math.imul(h1, 5) + 0xe6546b64) | 0;
    let k2 = Math.imul(w, 0x38b34ae5);
    k2 = Math.imul(rotl(k2, 17), 0xa1e38b93);
    h2 = rotl(h2 ^ k2, 15);
    h2 = (Math.imul(h2, 5) + 0x38495ab5) | 0;
  }
  h1 = (h1 + h2) | 0;
  h2 = (h2 + h1) | 0;
  h1 = fmix32(h1);
  h2 = fmix32(h2);
  h1 = (h1 + h2) | 0;
  h2 = (h2 + h1) | 0;
  out[outOff] = h1;
  out[outOff + 1] = h2;
}

/** The 64-bit checksum of one id, as a bigint (for tests and diagnostics). */
export function idChecksum(id: Uint8Array): bigint {
  const words = wordsOf(id);
  const out = new Uint32Array(CHECKSUM_WORDS);
  checksumInto(words, 0, out, 0);
  return (BigInt(out[1]!) << 32n) | BigInt(out[0]!);
}

function wordsOf(packed: Uint8Array): Uint32Array {
  if (packed.length % RIBLT_ID_BYTES !== 0) {
    throw new TypeError(`packed ids must be a multiple of ${RIBLT_ID_BYTES} bytes, got ${packed.length}`);
  }
  // A word view needs 4-byte alignment; copy when the caller's subarray is not aligned.
  const aligned = packed.byteOffset % 4 === 0 ? packed : new Uint8Array(packed); // a copy at offset 0 (Buffer#slice keeps the offset)
  return new Uint32Array(aligned.buffer, aligned.byteOffset, aligned.length / 4);
}

// Index sequence: xoroshiro64** (32-bit state words, so it runs on Math.imul without BigInt)
// draws u in (0, 1]; the gap to the next index is ceil((i + 1.5) * (u^(-1/2) - 1)), which makes
// index i present with probability ~1/(1 + i/2) (the paper's approximation). 32 bits of u are
// enough: the smallest probability we ever need, ~1/(1 + 3*10^6/2) at the cell cap, is 1,500x
// coarser than 2^-32. A gap of 0 (u = 1 exactly) is raised to 1 so an index never repeats.

/** Seeds the sequence of the id at `words[off..]` into `s0[j]`, `s1[j]`; the first index is 0. */
function seedInto(words: Uint32Array, off: number, s0: Uint32Array, s1: Uint32Array, j: number): void {
  const a = words[off + 6]!;
  const b = words[off + 7]!;
  s0[j] = a === 0 && b === 0 ? 1 : a; // xoroshiro's state must not be all zero
  s1[j] = b;
}

/** Advances sequence `j` from index `last`; returns the next index. */
function nextIndex(s0: Uint32Array, s1: Uint32Array, j: number, last: number): number {
  const a = s0[j]!;
  let b = s1[j]!;
  const r = Math.imul(rotl(Math.imul(a, 0x9e3779bb), 5), 5) >>> 0;
  b ^= a;
  s0[j] = rotl(a, 26) ^ b ^ (b << 9);
  s1[j] = rotl(b, 13);
  const u = (r + 1) / TWO_POW_32;
  const gap = Math.ceil((last + 1.5) * (1 / Math.sqrt(u) - 1));
  return last + (gap < 1 ? 1 : gap);
}

/** The first indices (< `limit`) of an id's cell sequence (for tests and diagnostics). */
export function cellIndicesOf(id: Uint8Array, limit: number): number[] {
  const words = wordsOf(id);
  const s0 = new Uint32Array(1);
  const s1 = new Uint32Array(1);
  seedInto(words, 0, s0, s1, 0);
  const out: number[] = [];
  for (let i = 0; i < limit; i = nextIndex(s0, s1, 0, i)) out.push(i);
  return out;
}

interface CellStore {
  idXor: Uint32Array;
  checksum: Uint32Array;
  count: Float64Array;
}

function xorIdInto(
  cells: CellStore,
  c: number,
  words: Uint32Array,
  wOff: number,
  sums: Uint32Array,
  sOff: number,
): void {
  const x = cells.idXor;
  const o = c * ID_WORDS;
  x[o] = x[o]! ^ words[wOff]!;
  x[o + 1] = x[o + 1]! ^ words[wOff + 1]!;
  x[o + 2] = x[o + 2]! ^ words[wOff + 2]!;
  x[o + 3] = x[o + 3]! ^ words[wOff + 3]!;
  x[o + 4] = x[o + 4]! ^ words[wOff + 4]!;
  x[o + 5] = x[o + 5]! ^ words[wOff + 5]!;
  x[o + 6] = x[o + 6]! ^ words[wOff + 6]!;
  x[o + 7] = x[o + 7]! ^ words[wOff + 7]!;
  const k = cells.checksum;
  k[c * 2] = k[c * 2]! ^ sums[sOff]!;
  k[c * 2 + 1] = k[c * 2 + 1]! ^ sums[sOff + 1]!;
}

/**
 * Ids with their checksums and the position each has reached in its index sequence. Applying
 * a range of cells advances every id past it, so consecutive ranges cost O(ids + hits) each.
 */
class SymbolWindow {
  words: Uint32Array;
  sums: Uint32Array;
  s0: Uint32Array;
  s1: Uint32Array;
  next: Float64Array;
  size: number;

  constructor(words: Uint32Array, capacity: number) {
    const n = words.length / ID_WORDS;
    this.size = n;
    this.words = words;
    this.sums = new Uint32Array(capacity * CHECKSUM_WORDS);
    this.s0 = new Uint32Array(capacity);
    this.s1 = new Uint32Array(capacity);
    this.next = new Float64Array(capacity);
    for (let j = 0; j < n; j++) {
      checksumInto(words, j * ID_WORDS, this.sums, j * CHECKSUM_WORDS);
      seedInto(words, j * ID_WORDS, this.s0, this.s1, j);
    }
  }

  /** Adds `sign` times every id to the cells it hits in `[.., end)`; cell i is `cells[i - base]`. */
  applyUpTo(cells: CellStore, base: number, end: number, sign: number): void {
    // The hot loop of both encoding and decoding (~20 hits per id for 10^4 cells): the
    // sequence step of nextIndex() is inlined with its state in locals.
    const { words, sums, s0, s1, next } = this;
    const { idXor, checksum, count } = cells;
    for (let j = 0; j < this.size; j++) {
      let i = next[j]!;
      if (i >= end) continue;
      let a = s0[j]!;
      let b = s1[j]!;
      const w = j * ID_WORDS;
      const w0 = words[w]!,
        w1 = words[w + 1]!,
        w2 = words[w + 2]!,
        w3 = words[w + 3]!;
      const w4 = words[w + 4]!,
        w5 = words[w + 5]!,
        w6 = words[w + 6]!,
        w7 = words[w + 7]!;
      const k0 = sums[j * 2]!,
        k1 = sums[j * 2 + 1]!;
      do {
        const c = i - base;
        const o = c * ID_WORDS;
        idXor[o] = idXor[o]! ^ w0;
        idXor[o + 1] = idXor[o + 1]! ^ w1;
        idXor[o + 2] = idXor[o + 2]! ^ w2;
        idXor[o + 3] = idXor[o + 3]! ^ w3;
        idXor[o + 4] = idXor[o + 4]! ^ w4;
        idXor[o + 5] = idXor[o + 5]! ^ w5;
        idXor[o + 6] = idXor[o + 6]! ^ w6;
        idXor[o + 7] = idXor[o + 7]! ^ w7;
        checksum[c * 2] = checksum[c * 2]! ^ k0;
        checksum[c * 2 + 1] = checksum[c * 2 + 1]! ^ k1;
        count[c] = count[c]! + sign;
        // nextIndex(), inlined
        const r = Math.imul(rotl(Math.imul(a, 0x9e3779bb), 5), 5) >>> 0;
        b ^= a;
        a = rotl(a, 26) ^ b ^ (b << 9);
        b = rotl(b, 13);
        const gap = Math.ceil((i + 1.5) * (1 / Math.sqrt((r + 1) / TWO_POW_32) - 1));
        i += gap < 1 ? 1 : gap;
      } while (i < end);
      s0[j] = a;
      s1[j] = b;
      next[j] = i;
    }
  }

  /** Appends an id (8 words at `src[off..]`), its checksum, and its sequence state. */
  push(src: Uint32Array, off: number, sumLo: number, sumHi: number, s0: number, s1: number, next: number): void {
    if (this.size === this.next.length) this.#grow(Math.max(16, this.size * 2));
    const j = this.size++;
    this.words.set(src.subarray(off, off + ID_WORDS), j * ID_WORDS);
    this.sums[j * 2] = sumLo;
    this.sums[j * 2 + 1] = sumHi;
    this.s0[j] = s0;
    this.s1[j] = s1;
    this.next[j] = next;
  }

  /** The ids as packed bytes (a copy). */
  packed(): Uint8Array {
    return new Uint8Array(this.words.buffer, this.words.byteOffset, this.size * RIBLT_ID_BYTES).slice();
  }

  #grow(capacity: number): void {
    const words = new Uint32Array(capacity * ID_WORDS);
    words.set(this.words.subarray(0, this.size * ID_WORDS));
    this.words = words;
    const sums = new Uint32Array(capacity * CHECKSUM_WORDS);
    sums.set(this.sums.subarray(0, this.size * CHECKSUM_WORDS));
    this.sums = sums;
    const s0 = new Uint32Array(capacity);
    s0.set(this.s0.subarray(0, this.size));
    this.s0 = s0;
    const s1 = new Uint32Array(capacity);
    s1.set(this.s1.subarray(0, this.size));
    this.s1 = s1;
    const next = new Float64Array(capacity);
    next.set(this.next.subarray(0, this.size));
    this.next = next;
  }
}

/**
 * Produces the cell sequence of a fixed set. `ids`: packed 32-byte ids (not copied when
 * 4-byte aligned; do not modify it while encoding). Memory: ~56 bytes per id besides the ids.
 */
export class RibltEncoder {
  readonly #window: SymbolWindow;
  #next = 0;

  constructor(ids: Uint8Array) {
    const words = wordsOf(ids);
    this.#window = new SymbolWindow(words, words.length / ID_WORDS);
  }

  /** Number of ids encoded. */
  get size(): number {
    return this.#window.size;
  }

  /** Index of the next cell `produce` will return. */
  get nextIndex(): number {
    return this.#next;
  }

  /** The next `length` cells. Cost: one pass over the ids plus one XOR per hit. */
  produce(length: number): CodedSymbols {
    const out = allocateSymbols(this.#next, length);
    this.#window.applyUpTo(out, this.#next, this.#next + length, +1);
    this.#next += length;
    return out;
  }
}

/** Outcome of feeding cells to a decoder. */
export type DecodeStatus = 'decoded' | 'need-more' | 'overflow';

/**
 * Receives the peer's cells in order, subtracts the local set's and peels. `remote()` are the
 * ids only the peer has, `local()` the ids only we have. A decode is only a claim: the caller
 * must check it (reconcile.ts compares Merkle roots). `maxDifference` bounds the ids peeled,
 * so a peer sending garbage cannot make peeling run or grow without limit.
 */
export class RibltDecoder {
  readonly #local: SymbolWindow;
  readonly #remoteOnly = new SymbolWindow(new Uint32Array(0), 0);
  readonly #localOnly = new SymbolWindow(new Uint32Array(0), 0);
  readonly #maxDifference: number;
  #cells: CellStore = { idXor: new Uint32Array(0), checksum: new Uint32Array(0), count: new Float64Array(0) };
  #received = 0;
  #status: DecodeStatus = 'need-more';
  // Statistics of the raw difference cells (before peeling), for estimateDifference().
  #rawCount0 = 0;
  #rawZeroCells = 0;
  #varianceSum = 0; // sum over cells i >= 1 of (c_i - c_0 p_i)^2
  #varianceWeight = 0; // sum over cells i >= 1 of p_i (1 - p_i)

  constructor(localIds: Uint8Array, maxDifference: number) {
    const words = wordsOf(localIds);
    this.#local = new SymbolWindow(words, words.length / ID_WORDS);
    this.#maxDifference = maxDifference;
  }

  /** Cells received so far. */
  get received(): number {
    return this.#received;
  }

  get status(): DecodeStatus {
    return this.#status;
  }

  /** Ids peeled so far in either direction. */
  get peeled(): number {
    return this.#remoteOnly.size + this.#localOnly.size;
  }

  /** Ids the peer has and we lack (packed; final once status is 'decoded'). */
  remote(): Uint8Array {
    return this.#remoteOnly.packed();
  }

  /** Ids we have and the peer lacks (packed; final once status is 'decoded'). */
  local(): Uint8Array {
    return this.#localOnly.packed();
  }

  /** Adds the peer's next cells (`symbols.start` must equal `received`) and peels. */
  add(symbols: CodedSymbols): DecodeStatus {
    if (symbols.start !== this.#received) {
      throw new RangeError(`cells must arrive in order: expected index ${this.#received}, got ${symbols.start}`);
    }
    if (this.#status !== 'need-more') return this.#status;
    const begin = this.#received;
    const end = begin + symbols.length;
    this.#reserve(end);
    const cells = this.#cells;
    cells.idXor.set(symbols.idXor.subarray(0, symbols.length * ID_WORDS), begin * ID_WORDS);
    cells.checksum.set(symbols.checksum.subarray(0, symbols.length * CHECKSUM_WORDS), begin * CHECKSUM_WORDS);
    cells.count.set(symbols.count.subarray(0, symbols.length), begin);
    this.#local.applyUpTo(cells, 0, end, -1);
    this.#observeRaw(begin, end);
    this.#remoteOnly.applyUpTo(cells, 0, end, -1);
    this.#localOnly.applyUpTo(cells, 0, end, +1);
    this.#received = end;
    const candidates: number[] = [];
    for (let c = begin; c < end; c++) {
      const n = cells.count[c]!;
      if (n === 1 || n === -1) candidates.push(c);
    }
    this.#status = this.#peel(candidates);
    return this.#status;
  }

  /**
   * Estimated size of the symmetric difference from the raw cells seen so far. While few cells
   * are empty it uses the spread of the counts (each differing id is in cell i with probability
   * p_i, so Var(count_i) = D p_i (1 - p_i)); once enough are empty, the number of empty cells
   * (expected sum of (1 - p_i)^D) is the sharper signal. Never below |count_0| = |a - b| or the
   * ids already peeled.
   */
  estimateDifference(): number {
    if (this.#received === 0) return 0;
    let estimate = this.#varianceWeight > 0 ? this.#varianceSum / this.#varianceWeight : 0;
    if (this.#rawZeroCells >= 8) estimate = solveFromEmptyCells(this.#received, this.#rawZeroCells);
    return Math.max(estimate, Math.abs(this.#rawCount0), this.peeled);
  }

  #observeRaw(begin: number, end: number): void {
    const { idXor, checksum, count } = this.#cells;
    if (begin === 0 && end > 0) this.#rawCount0 = count[0]!;
    for (let c = begin; c < end; c++) {
      const n = count[c]!;
      if (n === 0 && checksum[c * 2] === 0 && checksum[c * 2 + 1] === 0 && isZeroId(idXor, c)) this.#rawZeroCells++;
      if (c === 0) continue;
      const p = 2 / (c + 2);
      const dev = n - this.#rawCount0 * p;
      this.#varianceSum += dev * dev;
      this.#varianceWeight += p * (1 - p);
    }
  }

  #peel(stack: number[]): DecodeStatus {
    const cells = this.#cells;
    const sum = new Uint32Array(CHECKSUM_WORDS);
    const id = new Uint32Array(ID_WORDS);
    const idSum = new Uint32Array(CHECKSUM_WORDS);
    const s0 = new Uint32Array(1);
    const s1 = new Uint32Array(1);
    while (stack.length > 0) {
      const c = stack.pop()!;
      const sign = cells.count[c]!;
      if (sign !== 1 && sign !== -1) continue;
      checksumInto(cells.idXor, c * ID_WORDS, sum, 0);
      if (sum[0] !== cells.checksum[c * 2] || sum[1] !== cells.checksum[c * 2 + 1]) continue;
      if (this.peeled >= this.#maxDifference) return 'overflow';
      // Pure cell: it holds exactly one id. Remove that id from every received cell it hits.
      id.set(cells.idXor.subarray(c * ID_WORDS, (c + 1) * ID_WORDS));
      idSum[0] = sum[0]!;
      idSum[1] = sum[1]!;
      seedInto(id, 0, s0, s1, 0);
      let i = 0;
      while (i < this.#received) {
        xorIdInto(cells, i, id, 0, idSum, 0);
        const n = (cells.count[i] = cells.count[i]! - sign);
        if (n === 1 || n === -1) stack.push(i);
        i = nextIndex(s0, s1, 0, i);
      }
      const window = sign === 1 ? this.#remoteOnly : this.#localOnly;
      window.push(id, 0, idSum[0], idSum[1], s0[0]!, s1[0]!, i);
    }
    return this.#allZero() ? 'decoded' : 'need-more';
  }

  #allZero(): boolean {
    const { idXor, checksum, count } = this.#cells;
    for (let c = 0; c < this.#received; c++) {
      if (count[c] !== 0 || checksum[c * 2] !== 0 || checksum[c * 2 + 1] !== 0 || !isZeroId(idXor, c)) return false;
    }
    return true;
  }

  #reserve(cellsNeeded: number): void {
    const old = this.#cells;
    if (old.count.length >= cellsNeeded) return;
    const capacity = Math.max(cellsNeeded, old.count.length * 2, 64);
    const grown: CellStore = {
      idXor: new Uint32Array(capacity * ID_WORDS),
      checksum: new Uint32Array(capacity * CHECKSUM_WORDS),
      count: new Float64Array(capacity),
    };
    grown.idXor.set(old.idXor.subarray(0, this.#received * ID_WORDS));
    grown.checksum.set(old.checksum.subarray(0, this.#received * CHECKSUM_WORDS));
    grown.count.set(old.count.subarray(0, this.#received));
    this.#cells = grown;
  }
}

function isZeroId(idXor: Uint32Array, c: number): boolean {
  const o = c * ID_WORDS;
  return (
    (idXor[o]! |
      idXor[o + 1]! |
      idXor[o + 2]! |
      idXor[o + 3]! |
      idXor[o + 4]! |
      idXor[o + 5]! |
      idXor[o + 6]! |
      idXor[o + 7]!) ===
    0
  );
}

/** The D for which the expected number of empty cells among the first m, sum (i/(i+2))^D, is `empty`. */
function solveFromEmptyCells(m: number, empty: number): number {
  const logs = new Float64Array(m);
  for (let i = 1; i < m; i++) logs[i] = Math.log(i / (i + 2));
  const expectedEmpty = (d: number): number => {
    let s = 0;
    for (let i = 1; i < m; i++) s += Math.exp(d * logs[i]!);
    return s;
  };
  let lo = 0;
  let hi = 1;
  while (expectedEmpty(hi) > empty && hi < 2 ** 40) hi *= 2;
  for (let k = 0; k < 40 && hi - lo > 0.5; k++) {
    const mid = (lo + hi) / 2;
    if (expectedEmpty(mid) > empty) lo = mid;
    else hi = mid;
  }
  return (lo + hi) / 2;
}
