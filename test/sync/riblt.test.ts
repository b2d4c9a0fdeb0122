// RIBLT core: index density, checksum nonlinearity, decode against a naive oracle, and bounded
// behaviour on garbage cells.
import t from 'tap';
import fc from 'fast-check';
import { randomBytes } from 'node:crypto';
import { RibltDecoder, RibltEncoder, allocateSymbols, cellIndicesOf, idChecksum } from '../../src/sync/riblt.js';
import { hex, naiveDifference, randomSets } from './harness.js';

const sortedHexOf = (packed: Uint8Array): string[] => {
  const out: string[] = [];
  for (let o = 0; o < packed.length; o += 32) out.push(hex(packed.subarray(o, o + 32)));
  return out.sort();
};

t.test('index sequence: starts at 0, strictly increasing, density ~ 1/(1 + i/2)', async (t) => {
  const cells = 40;
  const trials = 4000;
  const hits = new Float64Array(cells);
  for (let k = 0; k < trials; k++) {
    const seq = cellIndicesOf(randomBytes(32), cells);
    t.equal(seq[0], 0);
    for (let i = 1; i < seq.length; i++) if (seq[i]! <= seq[i - 1]!) t.fail('not increasing');
    for (const i of seq) hits[i]!++;
  }
  t.equal(hits[0], trials);
  for (const i of [2, 5, 10, 20, 39]) {
    const p = 1 / (1 + i / 2);
    const sd = Math.sqrt((p * (1 - p)) / trials);
    t.ok(
      Math.abs(hits[i]! / trials - p) < 5 * sd + 0.01,
      `index ${i}: ${(hits[i]! / trials).toFixed(3)} vs ${p.toFixed(3)}`,
    );
  }
  // deterministic: the same id always gives the same sequence (peers must agree)
  const id = randomBytes(32);
  t.same(cellIndicesOf(id, 1000), cellIndicesOf(Uint8Array.from(id), 1000));
});

t.test('checksum is not linear in the id', async (t) => {
  for (let k = 0; k < 100; k++) {
    const a = randomBytes(32);
    const b = randomBytes(32);
    const x = Uint8Array.from(a, (v, i) => v ^ b[i]!);
    t.not(idChecksum(x), idChecksum(a) ^ idChecksum(b));
  }
  t.equal(idChecksum(new Uint8Array(32)), idChecksum(new Uint8Array(32)));
});

t.test('property: decoding recovers both differences exactly', async (t) => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 300 }),
      fc.integer({ min: 0, max: 60 }),
      fc.integer({ min: 0, max: 60 }),
      fc.integer({ min: 1, max: 40 }),
      (common, onlyA, onlyB, step) => {
        const { a, b } = randomSets(common, onlyA, onlyB);
        const enc = new RibltEncoder(a);
        const dec = new RibltDecoder(b, Infinity);
        let rounds = 0;
        while (dec.add(enc.produce(step)) === 'need-more') if (++rounds > 10_000) return false;
        if (onlyA + onlyB === 0 && dec.received !== step) return false; // equal sets: first batch is all zero
        return (
          sortedHexOf(dec.remote()).join() === naiveDifference(a, b).join() &&
          sortedHexOf(dec.local()).join() === naiveDifference(b, a).join()
        );
      },
    ),
    { numRuns: 80 },
  );
  t.pass();
});

t.test('cells per difference: ~1.4 for D = 1000, independent of N', async (t) => {
  for (const common of [0, 20_000]) {
    const { a, b } = randomSets(common, 500, 500);
    const enc = new RibltEncoder(a);
    const dec = new RibltDecoder(b, Infinity);
    while (dec.add(enc.produce(50)) === 'need-more');
    t.ok(dec.received <= 1.6 * 1000, `N = ${common + 1000}: ${dec.received} cells for D = 1000`);
    const est = dec.estimateDifference();
    t.ok(est >= 1000, `estimate after decoding includes the peeled ids: ${est}`);
  }
});

t.test('estimateDifference is in the right range early', async (t) => {
  const { a, b } = randomSets(5000, 1000, 1000);
  const dec = new RibltDecoder(b, Infinity);
  dec.add(new RibltEncoder(a).produce(64));
  const est = dec.estimateDifference();
  t.ok(est > 2000 / 3 && est < 2000 * 3, `D = 2000 estimated as ${est.toFixed(0)} from 64 cells`);
});

t.test('garbage cells: never more than maxDifference peeled, encoder/decoder stay in order', async (t) => {
  const local = randomBytes(100 * 32);
  fc.assert(
    fc.property(
      fc.array(fc.tuple(fc.nat(), fc.integer({ min: -3, max: 3 })), { minLength: 1, maxLength: 200 }),
      (cells) => {
        const dec = new RibltDecoder(local, 50);
        const s = allocateSymbols(0, cells.length);
        cells.forEach(([seed, count], i) => {
          for (let w = 0; w < 8; w++) s.idXor[i * 8 + w] = Math.imul(seed + w, 0x9e3779b1) >>> 0;
          s.count[i] = count;
        });
        const status = dec.add(s);
        return dec.peeled <= 50 && (status === 'overflow' || status === 'need-more' || status === 'decoded');
      },
    ),
    { numRuns: 100 },
  );
  const dec = new RibltDecoder(local, 10);
  t.throws(() => dec.add(allocateSymbols(5, 1)), RangeError, 'cells out of order');
  // A set's own cells peel to exactly the set when the decoder starts empty.
  const own = new RibltDecoder(new Uint8Array(0), 1000);
  const enc = new RibltEncoder(local);
  while (own.add(enc.produce(32)) === 'need-more');
  t.same(sortedHexOf(own.remote()), sortedHexOf(local));
  t.equal(own.local().length, 0);
});

t.test('unaligned input is accepted', async (t) => {
  const { a, b } = randomSets(50, 3, 2);
  const shifted = new Uint8Array(a.length + 1).subarray(1);
  shifted.set(a);
  const dec = new RibltDecoder(b, Infinity);
  const enc = new RibltEncoder(shifted);
  while (dec.add(enc.produce(8)) === 'need-more');
  t.same(sortedHexOf(dec.remote()), naiveDifference(a, b));
  // A Buffer view (what protobufjs decodes bytes fields to): Buffer#slice is not a copy.
  const fromBuffer = Buffer.alloc(a.length + 1).subarray(1);
  fromBuffer.set(a);
  const dec2 = new RibltDecoder(b, Infinity);
  const enc2 = new RibltEncoder(fromBuffer);
  while (dec2.add(enc2.produce(8)) === 'need-more');
  t.same(sortedHexOf(dec2.remote()), naiveDifference(a, b), 'an unaligned Buffer view works too');
});
