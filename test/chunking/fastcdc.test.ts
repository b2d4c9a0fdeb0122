import t from 'tap';
import fc from 'fast-check';
import {
  CHUNKING_LIMITS,
  DEFAULT_CHUNKING,
  FastCdcChunker,
  checkChunkingParams,
  chunkBoundaries,
  fastCdcMask,
  fastCdcMasks,
  validateChunkingParams,
} from '../../src/chunking/fastcdc.js';
import type { ChunkSpan, ChunkingParams, NormalizationLevel } from '../../src/chunking/fastcdc.js';
import { blake3, toHex } from '../../src/chunking/blake3.js';
import { concatBytes, pseudoRandomBytes } from './fixtures.js';

// Small parameters so property runs see many chunks in little data.
const SMALL: ChunkingParams = { minBytes: 256, avgBytes: 1024, maxBytes: 8192, normalization: 1 };

const paramsArb: fc.Arbitrary<ChunkingParams> = fc
  .record({
    avgLog2: fc.integer({ min: 8, max: 11 }),
    minDiv: fc.constantFrom(2, 4, 8),
    maxMul: fc.constantFrom(2, 4, 8),
    normalization: fc.constantFrom<NormalizationLevel>(0, 1, 2, 3),
  })
  .map(({ avgLog2, minDiv, maxMul, normalization }) => {
    const avgBytes = 2 ** avgLog2;
    return { minBytes: Math.max(64, avgBytes / minDiv), avgBytes, maxBytes: avgBytes * maxMul, normalization };
  });

const ends = (spans: readonly ChunkSpan[]): number[] => spans.map((s) => s.offset + s.length);

function chunkInPieces(bytes: Uint8Array, params: ChunkingParams, splits: readonly number[]): number[] {
  const chunker = new FastCdcChunker(params);
  const cuts: number[] = [];
  let at = 0;
  for (const s of [...splits].sort((a, b) => a - b)) {
    cuts.push(...chunker.push(bytes.subarray(at, s)));
    at = s;
  }
  cuts.push(...chunker.push(bytes.subarray(at)));
  const last = chunker.finish();
  if (last !== undefined) cuts.push(last);
  return cuts;
}

t.test('every byte is covered exactly once, in order, within min/max', async () => {
  fc.assert(
    fc.property(paramsArb, fc.integer({ min: 0, max: 40_000 }), fc.integer(), (params, length, seed) => {
      const bytes = pseudoRandomBytes(length, seed);
      const spans = chunkBoundaries(bytes, params);
      let offset = 0;
      spans.forEach((s, i) => {
        if (s.offset !== offset) throw new Error(`chunk ${i} starts at ${s.offset}, expected ${offset}`);
        if (s.length > params.maxBytes) throw new Error(`chunk ${i} length ${s.length} > max`);
        if (s.length <= 0) throw new Error(`chunk ${i} is empty`);
        if (i < spans.length - 1 && s.length < params.minBytes) throw new Error(`chunk ${i} length ${s.length} < min`);
        offset += s.length;
      });
      if (offset !== length) throw new Error(`chunks cover ${offset} of ${length} bytes`);
    }),
    { numRuns: 60 },
  );
});

t.test('low-entropy input (all zeros, short period) is cut at maxBytes and still covered', async (t) => {
  const zeros = new Uint8Array(5 * SMALL.maxBytes + 17);
  const spans = chunkBoundaries(zeros, SMALL);
  t.same(
    spans.map((s) => s.length),
    [8192, 8192, 8192, 8192, 8192, 17],
  );
  const periodic = new Uint8Array(50_000).map((_, i) => i % 7);
  const covered = chunkBoundaries(periodic, SMALL).reduce((n, s) => n + s.length, 0);
  t.equal(covered, periodic.length);
});

t.test('empty input has no chunks; a short input is one chunk', async (t) => {
  t.same(chunkBoundaries(new Uint8Array(0), SMALL), []);
  t.same(chunkBoundaries(new Uint8Array(10), SMALL), [{ offset: 0, length: 10 }]);
  const c = new FastCdcChunker(SMALL);
  t.same(c.push(new Uint8Array(0)), []);
  t.equal(c.finish(), undefined);
});

t.test('feeding any split of the input gives the one-shot boundaries', async () => {
  fc.assert(
    fc.property(
      paramsArb,
      fc.integer({ min: 0, max: 30_000 }),
      fc.integer(),
      fc.array(fc.nat(), { maxLength: 40 }),
      (params, length, seed, rawSplits) => {
        const bytes = pseudoRandomBytes(length, seed);
        const oneShot = ends(chunkBoundaries(bytes, params));
        const splits = rawSplits.map((s) => (length === 0 ? 0 : s % (length + 1)));
        const pieces = chunkInPieces(bytes, params, splits);
        if (JSON.stringify(pieces) !== JSON.stringify(oneShot)) throw new Error('split feeding changed boundaries');
      },
    ),
    { numRuns: 60 },
  );
});

t.test('byte-at-a-time feeding equals one-shot', async (t) => {
  const bytes = pseudoRandomBytes(20_000, 7);
  const splits = Array.from({ length: bytes.length }, (_, i) => i);
  t.same(chunkInPieces(bytes, SMALL, splits), ends(chunkBoundaries(bytes, SMALL)));
});

t.test('a Buffer input cuts the same as a Uint8Array', async (t) => {
  const bytes = pseudoRandomBytes(30_000, 99);
  t.same(chunkBoundaries(Buffer.from(bytes), SMALL), chunkBoundaries(bytes, SMALL));
});

t.test('deterministic: fresh chunkers and a reused one agree', async (t) => {
  const bytes = pseudoRandomBytes(50_000, 3);
  const a = chunkBoundaries(bytes, SMALL);
  const reused = new FastCdcChunker(SMALL);
  reused.push(pseudoRandomBytes(12_345, 4));
  reused.finish(); // resets to offset 0
  t.equal(reused.position, 0);
  const cuts = reused.push(bytes);
  const last = reused.finish();
  if (last !== undefined) cuts.push(last);
  t.same(cuts, ends(a));
  t.same(chunkBoundaries(bytes, SMALL), a);
});

t.test('an insertion leaves earlier boundaries alone and re-synchronises after it', async () => {
  fc.assert(
    fc.property(
      fc.integer(),
      fc.integer({ min: 0, max: 48 * 1024 }),
      fc.integer({ min: 1, max: 200 }),
      (seed, position, insertLength) => {
        const original = pseudoRandomBytes(96 * 1024, seed);
        const inserted = pseudoRandomBytes(insertLength, seed ^ 0x5bd1e995);
        const edited = concatBytes(original.subarray(0, position), inserted, original.subarray(position));
        const before = chunkBoundaries(original, SMALL);
        const after = chunkBoundaries(edited, SMALL);
        const beforeEnds = ends(before);
        const afterEnds = ends(after);
        // Boundaries at or before the edit depend only on bytes before it: unchanged.
        const prefixBefore = beforeEnds.filter((e) => e <= position);
        const prefixAfter = afterEnds.filter((e) => e <= position);
        if (JSON.stringify(prefixBefore) !== JSON.stringify(prefixAfter))
          throw new Error('boundary before the edit moved');
        // After the edit the chunker falls back into step with the original (worst seen in 2000
        // trials: 7.3 KiB); from 4 x maxBytes past the edit every boundary is the shifted original.
        const syncFrom = position + 4 * SMALL.maxBytes;
        const tailBefore = beforeEnds.filter((e) => e > syncFrom);
        const tailAfter = afterEnds.map((e) => e - insertLength).filter((e) => e > syncFrom);
        if (JSON.stringify(tailBefore) !== JSON.stringify(tailAfter))
          throw new Error('no re-synchronisation after the edit');
        // In content-id terms: most chunks of the edited input are chunks of the original.
        const ids = new Set(before.map((s) => toHex(blake3(original.subarray(s.offset, s.offset + s.length)))));
        let reusedBytes = 0;
        for (const s of after) {
          if (ids.has(toHex(blake3(edited.subarray(s.offset, s.offset + s.length))))) reusedBytes += s.length;
        }
        // Lost at most: the chunk the edit falls in (<= maxBytes before it), the re-sync stretch
        // after it (<= 4 x maxBytes, asserted above) and the inserted bytes themselves.
        if (reusedBytes < edited.length - insertLength - 5 * SMALL.maxBytes) {
          throw new Error(`only ${reusedBytes} of ${edited.length} bytes reused`);
        }
      },
    ),
    { numRuns: 40 },
  );
});

t.test('normalization narrows the chunk-size spread', async (t) => {
  const bytes = pseudoRandomBytes(2 << 20, 11);
  const spread = (level: NormalizationLevel): number => {
    const lens = chunkBoundaries(bytes, { ...SMALL, normalization: level }).map((s) => s.length);
    const mean = lens.reduce((a, b) => a + b, 0) / lens.length;
    return Math.sqrt(lens.reduce((a, l) => a + (l - mean) ** 2, 0) / lens.length);
  };
  const s0 = spread(0);
  const s1 = spread(1);
  const s2 = spread(2);
  t.ok(s1 < s0, `level 1 stddev ${s1.toFixed(0)} < level 0 ${s0.toFixed(0)}`);
  t.ok(s2 < s1, `level 2 stddev ${s2.toFixed(0)} < level 1 ${s1.toFixed(0)}`);
  const mean = bytes.length / chunkBoundaries(bytes, SMALL).length;
  t.ok(
    mean > SMALL.minBytes + 0.5 * SMALL.avgBytes && mean < SMALL.minBytes + 2 * SMALL.avgBytes,
    `mean chunk ${mean.toFixed(0)} B`,
  );
});

t.test('masks: documented layout and bit counts', async (t) => {
  t.equal(fastCdcMask(1), 0x80000000);
  t.equal(fastCdcMask(4), 0xaa000000);
  t.equal(fastCdcMask(13), 0xaaaaaa80); // bits 31, 29, ..., 7
  t.equal(fastCdcMask(16), 0xaaaaaaaa);
  t.equal(fastCdcMask(32), 0xffffffff);
  for (let n = 1; n <= 32; n++) {
    const bits = fastCdcMask(n).toString(2).replaceAll('0', '').length;
    t.equal(bits, n, `MASK(${n}) has ${n} bits`);
  }
  const { maskS, maskL } = fastCdcMasks({ minBytes: 2048, avgBytes: 8192, maxBytes: 65536, normalization: 2 });
  t.equal(maskS, fastCdcMask(15));
  t.equal(maskL, fastCdcMask(11));
});

// Boundaries are a wire contract: this pins them for a fixed input so an accidental change to the
// algorithm, the masks or the gear table fails here (a deliberate one bumps GEAR_TABLE_VERSION).
t.test('golden boundaries for a fixed input', async (t) => {
  const bytes = pseudoRandomBytes(1 << 20, 0x12345678);
  const small = ends(chunkBoundaries(bytes, SMALL));
  t.equal(small.length, GOLDEN.smallCount);
  t.equal(toHex(blake3(new TextEncoder().encode(small.join(',')))), GOLDEN.smallEndsHash);
  const big = pseudoRandomBytes(4 << 20, 0x0badf00d);
  const medium = ends(
    chunkBoundaries(big, { minBytes: 16 << 10, avgBytes: 64 << 10, maxBytes: 256 << 10, normalization: 2 }),
  );
  t.same(medium.slice(0, 5), GOLDEN.mediumFirstEnds);
  t.equal(medium.length, GOLDEN.mediumCount);
});

t.test('parameter validation names the bad field', async (t) => {
  t.equal(checkChunkingParams(DEFAULT_CHUNKING), undefined);
  t.equal(checkChunkingParams(SMALL), undefined);
  const bad: [Partial<ChunkingParams>, RegExp][] = [
    [{ avgBytes: 3000 }, /avgBytes 3000 is not a power of two/],
    [{ minBytes: 32 }, /minBytes 32 is below 64/],
    [{ minBytes: 2048 }, /minBytes < avgBytes < maxBytes/],
    [{ maxBytes: 1000 }, /minBytes < avgBytes < maxBytes/],
    [{ maxBytes: CHUNKING_LIMITS.maxBytesCeiling + 1 }, /maxBytes \d+ is above/],
    [{ avgBytes: 128 }, /avgBytes 128 is outside/],
    [{ minBytes: 1.5 }, /minBytes must be a positive integer/],
    [{ normalization: 4 as NormalizationLevel }, /normalization must be 0, 1, 2 or 3/],
  ];
  for (const [patch, re] of bad) {
    const params = { ...SMALL, ...patch };
    t.match(checkChunkingParams(params), re, JSON.stringify(patch));
    t.throws(() => new FastCdcChunker(params), { name: 'ClawpeerError', code: 'CONFIG_INVALID' });
  }
  const frozen = validateChunkingParams(SMALL);
  t.ok(Object.isFrozen(frozen));
});

t.test('position and pendingBytes track the stream', async (t) => {
  const c = new FastCdcChunker(SMALL);
  const first = c.push(new Uint8Array(100));
  t.same(first, []);
  t.equal(c.position, 100);
  t.equal(c.pendingBytes, 100);
  const cuts = c.push(new Uint8Array(SMALL.maxBytes)); // zeros: cut forced at maxBytes
  t.same(cuts, [SMALL.maxBytes]);
  t.equal(c.pendingBytes, 100);
  t.equal(c.finish(), SMALL.maxBytes + 100);
});

const GOLDEN = {
  smallCount: 828,
  smallEndsHash: 'd66d941c9a4c310dfb2296ae52cf6e073f4b64603af2d4b782aeffbdf32f8dad',
  mediumFirstEnds: [114413, 182848, 256197, 338949, 423033],
  mediumCount: 57,
};
