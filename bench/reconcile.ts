// Benchmark for sync/: what reconciling two revision-id sets costs, against N (set size) and D
// (symmetric difference), with two baselines measured in the same run:
//   naive       the responder sends its full id list: 32 N bytes, 1 round trip;
//   iblt-2n     a classic fixed-size IBLT (3 hash functions, partitioned) of 2 N cells, the size
//               the published pre-flight used, encoded with the same cell format as ours.
// Ours = the full exchange of reconcile.ts through reconcile-codec.ts (hello, different, cells,
// more, and the closing id lists), every byte counted on the wire.
// Data: random 32-byte ids (crypto.randomBytes, i.e. like BLAKE3 output), the difference split
// half/half between the sides (ceil(D/2) only at the initiator, floor(D/2) only at the
// responder); D > N is skipped. Time is wall-clock for the exchange on one thread (both roles),
// excluding building the Merkle sets, which a peer keeps incrementally; that is reported apart.
// Run: node .build-x/bench/reconcile.js  (writes bench/results/reconcile.json); main({ smoke: true })
// runs tiny sizes and writes nothing.

import { randomBytes } from 'node:crypto';
import { arch, cpus, platform, totalmem } from 'node:os';
import { MerkleIdSet, REVISION_ID_BYTES } from '../src/sync/merkle-root.js';
import { decodeReconcileMessage, encodeReconcileMessage, type ReconcileMessage } from '../src/sync/reconcile-codec.js';
import { DEFAULT_FIRST_BATCH_CELLS, ReconcileInitiator, ReconcileResponder } from '../src/sync/reconcile.js';
import { runAsScript, writeJsonFile, writeResult } from './common.js';

export interface ReconcileBenchOptions {
  /** Tiny sizes for CI: checks the benchmark runs, measures nothing meaningful, writes nothing. */
  readonly smoke?: boolean;
  /** Where to write the JSON (default bench/results/reconcile.json when not smoke). */
  readonly outFile?: string;
  /** Print progress to stderr. */
  readonly verbose?: boolean;
}

interface ExchangeCost {
  bytes: number;
  bytesByType: Record<string, number>;
  roundTrips: number;
  cells: number;
  method: string;
  ms: number;
  correct: boolean;
}

/** Runs both roles against each other through the codec, counting wire bytes per message type. */
function exchange(initiatorSet: MerkleIdSet, responderSet: MerkleIdSet, onlyA: number, onlyB: number): ExchangeCost {
  const start = performance.now();
  const initiator = new ReconcileInitiator(initiatorSet);
  const responder = new ReconcileResponder(responderSet);
  const bytesByType: Record<string, number> = {};
  let bytes = 0;
  const wire = (m: ReconcileMessage): ReconcileMessage => {
    const encoded = encodeReconcileMessage(m);
    bytes += encoded.length;
    bytesByType[m.type] = (bytesByType[m.type] ?? 0) + encoded.length;
    const d = decodeReconcileMessage(encoded);
    if (d.kind !== 'message') throw new Error('codec returned need-more for a whole message');
    return d.message;
  };
  let toResponder = [...initiator.start()];
  while (toResponder.length > 0) {
    const toInitiator: ReconcileMessage[] = [];
    for (const m of toResponder) toInitiator.push(...responder.receive(wire(m)));
    toResponder = [];
    for (const m of toInitiator) toResponder.push(...initiator.receive(wire(m)));
  }
  const ms = performance.now() - start;
  const r = initiator.result;
  const q = responder.result;
  const correct =
    r !== undefined &&
    q !== undefined &&
    r.idsWeLack.length === onlyB &&
    r.idsTheyLack.length === onlyA &&
    q.idsWeLack.length === onlyA;
  return {
    bytes,
    bytesByType,
    roundTrips: initiator.stats.roundTrips,
    cells: initiator.stats.cells,
    method: r?.method ?? 'none',
    ms,
    correct,
  };
}

// --- baseline: classic fixed-size IBLT ------------------------------------------------------------

const IBLT_HASHES = 3;

function varintBytes(v: number): number {
  let n = 1;
  while (v >= 0x80) {
    v = Math.floor(v / 128);
    n++;
  }
  return n;
}

class FixedIblt {
  readonly sub: number;
  readonly idXor: Uint32Array;
  readonly sum: Uint32Array;
  readonly count: Int32Array;
  constructor(readonly cells: number) {
    this.sub = Math.max(1, Math.floor(cells / IBLT_HASHES));
    const m = this.sub * IBLT_HASHES;
    this.idXor = new Uint32Array(m * 8);
    this.sum = new Uint32Array(m);
    this.count = new Int32Array(m);
  }
  /** Cell of id word `w` in subtable `t`: ids are uniform, so a word of the id is a fine hash. */
  #cell(words: Uint32Array, o: number, t: number): number {
    return t * this.sub + ((Math.imul(words[o + t]!, 0x9e3779b1) >>> 0) % this.sub);
  }
  static #check(words: Uint32Array, o: number): number {
    let h = 0x243f6a88;
    for (let k = 0; k < 8; k++) {
      h = Math.imul(h ^ words[o + k]!, 0xcc9e2d51);
      h ^= h >>> 15;
    }
    return Math.imul(h ^ (h >>> 13), 0x85ebca6b) >>> 0;
  }
  apply(words: Uint32Array, o: number, sign: number): void {
    const s = FixedIblt.#check(words, o);
    for (let t = 0; t < IBLT_HASHES; t++) {
      const c = this.#cell(words, o, t);
      for (let k = 0; k < 8; k++) this.idXor[c * 8 + k] = this.idXor[c * 8 + k]! ^ words[o + k]!;
      this.sum[c] = this.sum[c]! ^ s;
      this.count[c] = this.count[c]! + sign;
    }
  }
  static of(packed: Uint8Array, cells: number): FixedIblt {
    const f = new FixedIblt(cells);
    const words = new Uint32Array(packed.buffer, packed.byteOffset, packed.length / 4);
    for (let o = 0; o < words.length; o += 8) f.apply(words, o, +1);
    return f;
  }
  /** Encoded size with our cell format: 32 + 8 + zigzag varint count per cell. */
  wireBytes(): number {
    let n = 0;
    for (let c = 0; c < this.count.length; c++) {
      const v = this.count[c]!;
      n += 40 + varintBytes(v >= 0 ? v * 2 : -v * 2 - 1);
    }
    return n;
  }
  /** Subtracts `other`, peels; returns the number of ids recovered, or -1 if peeling stalls. */
  decodeAgainst(other: FixedIblt): number {
    const m = this.count.length;
    for (let i = 0; i < this.idXor.length; i++) this.idXor[i] = this.idXor[i]! ^ other.idXor[i]!;
    for (let c = 0; c < m; c++) {
      this.sum[c] = this.sum[c]! ^ other.sum[c]!;
      this.count[c] = this.count[c]! - other.count[c]!;
    }
    const id = new Uint32Array(8);
    let recovered = 0;
    const stack: number[] = [];
    for (let c = 0; c < m; c++) if (this.count[c] === 1 || this.count[c] === -1) stack.push(c);
    while (stack.length > 0) {
      const c = stack.pop()!;
      const sign = this.count[c]!;
      if (sign !== 1 && sign !== -1) continue;
      id.set(this.idXor.subarray(c * 8, c * 8 + 8));
      if (FixedIblt.#check(id, 0) !== this.sum[c]) continue;
      this.apply(id, 0, -sign);
      recovered++;
      for (let t = 0; t < IBLT_HASHES; t++) {
        const d = this.#cell(id, 0, t);
        if (this.count[d] === 1 || this.count[d] === -1) stack.push(d);
      }
    }
    for (let c = 0; c < m; c++) if (this.count[c] !== 0 || this.sum[c] !== 0) return -1;
    return recovered;
  }
}

// --- the grid -------------------------------------------------------------------------------------

interface Row {
  n: number;
  d: number;
  onlyInitiator: number;
  onlyResponder: number;
  runs: number;
  ours: {
    bytes: number;
    cellBytes: number;
    closingListBytes: number;
    roundTrips: number;
    cells: number;
    cellsPerDifference: number | null;
    bytesPerDifference: number | null;
    methods: string[];
    ms: number;
    allCorrect: boolean;
  };
  naive: { bytes: number; roundTrips: number };
  iblt2n: { cells: number; bytes: number; decoded: boolean; ms: number };
  /** `withoutClosingLists`: ours minus the closing id lists, which the baselines do not send. */
  ratios: { oursOverNaive: number; oursOverIblt2n: number; withoutClosingListsOverNaive: number };
  buildSetsMs: number;
}

const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;

function measure(n: number, d: number, runs: number, withIblt: boolean): Row {
  const onlyA = Math.ceil(d / 2);
  const onlyB = Math.floor(d / 2);
  const common = n - onlyA; // the initiator holds exactly N ids
  const costs: ExchangeCost[] = [];
  const builds: number[] = [];
  let iblt = { cells: 2 * n, bytes: 0, decoded: false, ms: 0 };
  for (let k = 0; k < runs; k++) {
    const all = randomBytes((common + onlyA + onlyB) * REVISION_ID_BYTES);
    const shared = all.subarray(0, common * REVISION_ID_BYTES);
    const a = Buffer.concat([shared, all.subarray(common * REVISION_ID_BYTES, (common + onlyA) * REVISION_ID_BYTES)]);
    const b = Buffer.concat([shared, all.subarray((common + onlyA) * REVISION_ID_BYTES)]);
    let t = performance.now();
    const setA = MerkleIdSet.fromPacked(a);
    const setB = MerkleIdSet.fromPacked(b);
    setA.root();
    setB.root();
    builds.push(performance.now() - t);
    costs.push(exchange(setA, setB, onlyA, onlyB));
    if (withIblt && k === 0) {
      t = performance.now();
      const ta = FixedIblt.of(a, 2 * n);
      const tb = FixedIblt.of(b, 2 * n);
      const bytes = tb.wireBytes();
      const recovered = tb.decodeAgainst(ta);
      iblt = { cells: ta.count.length, bytes, decoded: recovered === d, ms: performance.now() - t };
    }
  }
  const bytes = mean(costs.map((c) => c.bytes));
  const cellBytes = mean(costs.map((c) => c.bytesByType['symbols'] ?? 0));
  const closing = mean(costs.map((c) => (c.method === 'equal' ? 0 : (c.bytesByType['ids'] ?? 0))));
  const cells = mean(costs.map((c) => c.cells));
  const naiveBytes = 32 * (common + onlyB);
  return {
    n,
    d,
    onlyInitiator: onlyA,
    onlyResponder: onlyB,
    runs,
    ours: {
      bytes,
      cellBytes,
      closingListBytes: closing,
      roundTrips: mean(costs.map((c) => c.roundTrips)),
      cells,
      cellsPerDifference: d > 0 ? cells / d : null,
      bytesPerDifference: d > 0 ? bytes / d : null,
      methods: [...new Set(costs.map((c) => c.method))],
      ms: mean(costs.map((c) => c.ms)),
      allCorrect: costs.every((c) => c.correct),
    },
    naive: { bytes: naiveBytes, roundTrips: 1 },
    iblt2n: iblt,
    ratios: {
      oursOverNaive: bytes / naiveBytes,
      oursOverIblt2n: iblt.bytes > 0 ? bytes / iblt.bytes : Number.NaN,
      withoutClosingListsOverNaive: (bytes - closing) / naiveBytes,
    },
    buildSetsMs: mean(builds),
  };
}

export async function main(options: ReconcileBenchOptions = {}): Promise<unknown> {
  const smoke = options.smoke ?? false;
  const log = (s: string): void => {
    if (options.verbose === true) process.stderr.write(s + '\n');
  };
  const sizes = smoke ? [1000] : [1e3, 1e4, 1e5, 1e6];
  const diffs = smoke ? [0, 10] : [0, 1, 10, 100, 1000, 10_000];
  const rows: Row[] = [];
  const started = performance.now();
  for (const n of sizes) {
    for (const d of diffs) {
      if (d > n) continue;
      const runs = smoke ? 1 : n <= 1e4 ? 10 : n <= 1e5 ? 5 : 3;
      const row = measure(n, d, runs, true);
      rows.push(row);
      log(
        `N=${n} D=${d}: ${row.ours.bytes.toFixed(0)} B (${row.ours.methods.join('/')}), ${row.ours.roundTrips.toFixed(1)} RT, ` +
          `${row.ours.cellsPerDifference?.toFixed(2) ?? '-'} cells/diff, ${row.ours.ms.toFixed(0)} ms; ` +
          `naive ${row.naive.bytes} B (x${row.ratios.oursOverNaive.toFixed(4)}), iblt-2n ${row.iblt2n.bytes} B ` +
          `(x${row.ratios.oursOverIblt2n.toFixed(4)}, decoded ${row.iblt2n.decoded})`,
      );
    }
  }
  const cpu = cpus()[0];
  const result = {
    benchmark: 'reconcile',
    date: new Date().toISOString(),
    machine: {
      cpu: cpu?.model ?? 'unknown',
      cores: cpus().length,
      platform: platform(),
      arch: arch(),
      memoryBytes: totalmem(),
      node: process.version,
    },
    data: {
      ids: '32-byte random ids (crypto.randomBytes; incompressible, uniform like BLAKE3 output)',
      split: 'ceil(D/2) ids only at the initiator, floor(D/2) only at the responder; the initiator holds N ids',
    },
    settings: {
      firstBatchCells: DEFAULT_FIRST_BATCH_CELLS,
      cellFormat: '32-byte id XOR + 8-byte checksum + zigzag varint count',
      runsPerPoint: 'N <= 1e4: 10, N = 1e5: 5, N = 1e6: 3 (means reported)',
      bytes:
        'every encoded message of the whole exchange incl. length prefixes and the closing id lists ' +
        '(32 B per difference: the request for what the initiator fetches next and the announcement of what it pushes)',
      baselines: {
        naive: '32 * (responder set size) bytes, 1 round trip',
        iblt2n: 'fixed IBLT, 3 partitioned hashes, 2N cells, same cell encoding; decoded = peeled exactly D ids',
      },
    },
    totalSeconds: (performance.now() - started) / 1000,
    rows,
  };
  if (!smoke || options.outFile !== undefined) {
    log(
      `wrote ${await (options.outFile === undefined ? writeResult('reconcile', result) : writeJsonFile(options.outFile, result))}`,
    );
  }
  return result;
}

runAsScript(import.meta.url, async ({ smoke }) => {
  await main({ smoke, verbose: true });
});
