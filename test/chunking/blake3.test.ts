import t from 'tap';
import fc from 'fast-check';
import { createHash } from 'node:crypto';
import {
  BLAKE3_OUT_BYTES,
  activeBlake3Backend,
  blake3,
  blake3Implementation,
  bytesEqual,
  createBlake3Hasher,
  fromHex,
  SMALL_INPUT_MAX_BYTES,
  toHex,
  useBlake3Backend,
} from '../../src/chunking/blake3.js';
import type { Blake3Implementation } from '../../src/chunking/blake3.js';
import { blake3VectorInput, pseudoRandomBytes } from './fixtures.js';

// Official BLAKE3 test vectors (BLAKE3-team/BLAKE3 test_vectors/test_vectors.json): input byte i
// is i % 251; `hash` there is a 131-byte extended output whose first 32 bytes are the default
// digest, which is what is listed here.
const VECTORS: readonly [number, string][] = [
  [0, 'af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262'],
  [1, '2d3adedff11b61f14c886e35afa036736dcd87a74d27b5c1510225d0f592e213'],
  [1023, '10108970eeda3eb932baac1428c7a2163b0e924c9a9e25b35bba72b28f70bd11'],
  [1024, '42214739f095a406f3fc83deb889744ac00df831c10daa55189b5d121c855af7'],
  [1025, 'd00278ae47eb27b34faecf67b4fe263f82d5412916c1ffd97c8cb7fb814b8444'],
  [2048, 'e776b6028c7cd22a4d0ba182a8bf62205d2ef576467e838ed6f2529b85fba24a'],
  [3073, '7124b49501012f81cc7f11ca069ec9226cecb8a2c850cfe644e327d22d3e1cd3'],
  [8193, 'bab6c09cb8ce8cf459261398d2e7aef35700bf488116ceb94a36d0f5f1b7bc3b'],
  [31744, '62b6960e1a44bcc1eb1a611a8d6235b6b4b78f32e7abc4fb4c6cdcce94895c47'],
  [102400, 'bc3e3d41a1146b069abffad3c0d44860cf664390afce4d9661f7902e7943e085'],
];

const backends: Blake3Implementation[] = [];
for (const name of ['native', 'wasm'] as const) {
  const impl = blake3Implementation(name);
  if (impl !== undefined) backends.push(impl);
}

t.test('both backends load on this platform', async (t) => {
  t.same(
    backends.map((b) => b.backend),
    ['native', 'wasm'],
  );
  t.equal(activeBlake3Backend(), 'native', 'native is preferred when it loads');
});

t.test('official test vectors, one-shot and incremental, on every backend', async (t) => {
  for (const impl of backends) {
    for (const [length, hex] of VECTORS) {
      const input = blake3VectorInput(length);
      t.equal(toHex(impl.hash(input)), hex, `${impl.backend} hash(${length})`);
      const hasher = impl.createHasher();
      for (let at = 0; at < length; at += 1000) hasher.update(input.subarray(at, Math.min(length, at + 1000)));
      t.equal(toHex(hasher.digest()), hex, `${impl.backend} incremental(${length})`);
    }
  }
});

t.test('blake3() gives the official digests on both sides of the small-input switch to wasm', async (t) => {
  // Vectors 0 and 1 go through the small-input path, the rest through the active backend.
  for (const [length, hex] of VECTORS) t.equal(toHex(blake3(blake3VectorInput(length))), hex, `blake3(${length})`);
  for (const length of [SMALL_INPUT_MAX_BYTES - 1, SMALL_INPUT_MAX_BYTES, SMALL_INPUT_MAX_BYTES + 1]) {
    const input = pseudoRandomBytes(length, length);
    for (const impl of backends)
      t.equal(toHex(blake3(input)), toHex(impl.hash(input)), `blake3(${length} bytes) = ${impl.backend}`);
  }
});

t.test('native and wasm agree on arbitrary input and any update split', async (t) => {
  const [native, wasm] = backends;
  if (native === undefined || wasm === undefined) throw new Error('both backends are needed');
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 5000 }), fc.array(fc.nat(), { maxLength: 8 }), (bytes, rawSplits) => {
      const expected = native.hash(bytes);
      if (!bytesEqual(expected, wasm.hash(bytes))) throw new Error('one-shot differs');
      const splits = [...rawSplits.map((s) => s % (bytes.length + 1)), bytes.length].sort((a, b) => a - b);
      for (const impl of [native, wasm]) {
        const h = impl.createHasher();
        let at = 0;
        for (const s of splits) {
          h.update(bytes.subarray(at, s));
          at = s;
        }
        if (!bytesEqual(h.digest(), expected)) throw new Error(`${impl.backend} incremental differs`);
      }
    }),
    { numRuns: 100 },
  );
  const big = pseudoRandomBytes(3 << 20, 5);
  t.equal(toHex(wasm.hash(big)), toHex(native.hash(big)), '3 MiB input');
});

t.test('digests are 32 bytes and differ from SHA-256 (sanity: this is really BLAKE3)', async (t) => {
  const d = blake3(new TextEncoder().encode('abc'));
  t.equal(d.length, BLAKE3_OUT_BYTES);
  t.equal(toHex(d), '6437b3ac38465133ffb63b75273a8db548c558465d79db03fd359c6cd5bd9d85');
  t.not(toHex(d), createHash('sha256').update('abc').digest('hex'));
});

t.test('a hasher is single use', async (t) => {
  const h = createBlake3Hasher().update(new Uint8Array([1, 2, 3]));
  h.digest();
  t.throws(() => h.digest(), TypeError);
  t.throws(() => h.update(new Uint8Array(1)), TypeError);
  const w = blake3Implementation('wasm')!.createHasher();
  w.digest();
  t.throws(() => w.digest(), TypeError);
});

t.test('useBlake3Backend switches the active backend', async (t) => {
  const vec = VECTORS[4]!;
  try {
    useBlake3Backend('wasm');
    t.equal(activeBlake3Backend(), 'wasm');
    t.equal(toHex(blake3(blake3VectorInput(vec[0]))), vec[1]);
  } finally {
    useBlake3Backend('native');
  }
  t.equal(activeBlake3Backend(), 'native');
});

t.test('hex helpers round-trip and reject bad input', async (t) => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => bytesEqual(fromHex(toHex(bytes)), bytes)),
    { numRuns: 100 },
  );
  t.same(fromHex('00FFa0'), new Uint8Array([0, 255, 160]));
  t.throws(() => fromHex('abc'), { code: 'USAGE' });
  t.throws(() => fromHex('zz'), { code: 'USAGE' });
  t.throws(() => fromHex('aabb', 32), { code: 'USAGE', message: /2 bytes, expected 32/ });
  t.notOk(bytesEqual(new Uint8Array([1]), new Uint8Array([1, 2])));
  t.notOk(bytesEqual(new Uint8Array([1, 3]), new Uint8Array([1, 2])));
});
