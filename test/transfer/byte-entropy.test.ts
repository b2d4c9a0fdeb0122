import { randomBytes } from 'node:crypto';
import t from 'tap';
import { ENTROPY_SAMPLE_BYTES, sampledEntropyBits } from '../../src/transfer/byte-entropy.js';

t.test('random bytes read ~8 bits per byte from 1 KiB up (bias-corrected)', async (t) => {
  for (const n of [1024, 4096, 64 << 10, 1 << 20]) {
    const h = sampledEntropyBits(randomBytes(n));
    t.ok(h > 7.9 && h < 8.1, `${n} random bytes: ${h.toFixed(3)}`);
  }
});

t.test('known distributions', async (t) => {
  t.equal(sampledEntropyBits(new Uint8Array(0)), 0, 'nothing: 0');
  t.equal(sampledEntropyBits(Buffer.alloc(8192, 7)), 0, 'one value repeated: 0');
  // Two values, equally often: 1 bit plus the correction (1 / (2 n ln 2)).
  const two = Buffer.alloc(4096);
  for (let i = 0; i < two.length; i++) two[i] = i % 2 === 0 ? 0x41 : 0x42;
  t.ok(Math.abs(sampledEntropyBits(two) - (1 + 1 / (2 * 4096 * Math.LN2))) < 1e-9, 'two values: 1 bit');
  // All 256 values, equally often: exactly 8 bits before the correction.
  const flat = Buffer.alloc(4096);
  for (let i = 0; i < flat.length; i++) flat[i] = i & 0xff;
  t.ok(Math.abs(sampledEntropyBits(flat) - (8 + 255 / (2 * 4096 * Math.LN2))) < 1e-9, 'uniform: 8 bits');
  const text = Buffer.from('the quick brown fox jumps over the lazy dog; '.repeat(200));
  t.ok(sampledEntropyBits(text) < 5, 'English-like text reads under 5 bits');
});

t.test('a large chunk is sampled across its whole length', async (t) => {
  // Random first half, zeros after: a sample of the first 4 KiB only would read 8 bits.
  const half = Buffer.concat([randomBytes(128 << 10), Buffer.alloc(128 << 10)]);
  const h = sampledEntropyBits(half);
  t.ok(h > 4 && h < 6, `half random, half zeros: ${h.toFixed(3)} (about 0.5 x 8 + 1 for the zero/non-zero split)`);
  // Bytes outside the sample do not count: only ENTROPY_SAMPLE_BYTES are read from a big chunk.
  t.equal(ENTROPY_SAMPLE_BYTES, 4096);
  const sparse = Buffer.alloc(1 << 20);
  sparse[1000] = 1; // between the first and the second slice
  t.equal(sampledEntropyBits(sparse), 0, 'a byte between the slices is not seen');
});
