import fc from 'fast-check';
import t from 'tap';
import { fastCdcMask } from '../../src/chunking/fastcdc.js';
import { WASM_BLOCK_BYTES, gearScan, gearScanBackend, gearScanJs } from '../../src/chunking/gear-scan.js';
import { pseudoRandomBytes } from './fixtures.js';

t.test('this runtime uses the wasm loop (so the comparisons below compare two implementations)', async (t) => {
  t.equal(gearScanBackend(), 'wasm');
});

t.test('property: the wasm loop finds the same hit and hash as the JS loop', async (t) => {
  fc.assert(
    fc.property(
      fc.uint8Array({ maxLength: 4000 }),
      fc.nat(),
      fc.nat(),
      fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
      fc.integer({ min: 1, max: 16 }),
      (bytes, a, b, hash, bits) => {
        const start = bytes.length === 0 ? 0 : a % (bytes.length + 1);
        const stop = start + (bytes.length === 0 ? 0 : b % (bytes.length - start + 1));
        const mask = fastCdcMask(bits) | 0;
        t.same(gearScan(bytes, start, stop, hash, mask), gearScanJs(bytes, start, stop, hash, mask));
      },
    ),
    { numRuns: 300 },
  );
});

t.test('runs longer than one wasm block: hits in later blocks, misses, and Buffer views', async (t) => {
  const long = pseudoRandomBytes(Math.floor(2.5 * WASM_BLOCK_BYTES), 7);
  let hitPastFirstBlock = false;
  for (const bits of [12, 15, 16, 17, 18, 20, 31]) {
    const mask = fastCdcMask(bits) | 0;
    const wasm = gearScan(long, 3, long.length, 0, mask);
    t.same(wasm, gearScanJs(long, 3, long.length, 0, mask), `${bits} mask bits`);
    if (wasm.index >= WASM_BLOCK_BYTES) hitPastFirstBlock = true;
  }
  t.ok(hitPastFirstBlock, 'some mask first hit beyond the first block');
  const miss = gearScan(long, 0, long.length, 0, -1); // all 32 bits: a hit needs hash == 0
  t.same(miss, gearScanJs(long, 0, long.length, 0, -1), 'a run without a hit ends with the same hash');
  const shifted = Buffer.alloc(long.length + 1).subarray(1);
  shifted.set(long);
  const mask = fastCdcMask(22) | 0;
  t.same(
    gearScan(shifted, 0, shifted.length, 5, mask),
    gearScanJs(long, 0, long.length, 5, mask),
    'an unaligned Buffer view',
  );
});
