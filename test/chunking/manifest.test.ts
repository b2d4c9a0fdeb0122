import t from 'tap';
import fc from 'fast-check';
import {
  MANIFEST_DOMAIN,
  ManifestRootBuilder,
  encodeManifestCanonical,
  manifestFromBytes,
  manifestRoot,
  verifyManifest,
} from '../../src/chunking/manifest.js';
import type { ChunkRef, FileManifest } from '../../src/chunking/manifest.js';
import { blake3, bytesEqual, toHex } from '../../src/chunking/blake3.js';
import type { ChunkingParams } from '../../src/chunking/fastcdc.js';
import { pseudoRandomBytes } from './fixtures.js';

const SMALL: ChunkingParams = { minBytes: 256, avgBytes: 1024, maxBytes: 8192, normalization: 1 };

const idOf = (n: number): Uint8Array => blake3(new Uint8Array([n]));

t.test('canonical encoding: exact bytes for a two-chunk list', async (t) => {
  const chunks = [
    { id: new Uint8Array(32).fill(0x11), length: 5 },
    { id: new Uint8Array(32).fill(0x22), length: 0x01020304 },
  ];
  const hex = toHex(encodeManifestCanonical(chunks));
  const expected =
    toHex(new TextEncoder().encode('clawpeer/manifest/v1')) +
    '00' + // domain, 21 bytes
    '11'.repeat(32) +
    '00000005' + // chunk 0: id, uint32 BE length
    '22'.repeat(32) +
    '01020304' + // chunk 1
    '0000000000000002' + // count, uint64 BE
    '0000000001020309'; // size, uint64 BE
  t.equal(hex, expected);
  t.equal(MANIFEST_DOMAIN.length, 21);
  t.equal(toHex(manifestRoot(chunks)), toHex(blake3(encodeManifestCanonical(chunks))));
});

t.test('uint64 fields encode sizes above 4 GiB', async (t) => {
  const lengths = [0xffffffff, 0xffffffff, 3]; // 8 GiB + 1
  const chunks = lengths.map((length, i) => ({ id: idOf(i), length }));
  const enc = encodeManifestCanonical(chunks);
  t.equal(toHex(enc.subarray(enc.length - 8)), '0000000200000001');
});

t.test('the incremental builder equals the one-shot encoding across batch boundaries', async (t) => {
  for (const count of [0, 1, 1023, 1024, 1025, 3000]) {
    const chunks = Array.from({ length: count }, (_, i) => ({ id: idOf(i & 0xff), length: 1 + i }));
    const b = new ManifestRootBuilder();
    for (const c of chunks) b.add(c.id, c.length);
    t.equal(b.count, count);
    t.equal(toHex(b.finish()), toHex(blake3(encodeManifestCanonical(chunks))), `${count} chunks`);
  }
});

t.test('the root changes when any chunk id, length or the order changes', async () => {
  fc.assert(
    fc.property(
      fc.array(fc.record({ seed: fc.nat(255), length: fc.integer({ min: 1, max: 1 << 20 }) }), {
        minLength: 2,
        maxLength: 30,
      }),
      fc.nat(),
      fc.nat(),
      (raw, a, b) => {
        const chunks = raw.map((r) => ({ id: idOf(r.seed), length: r.length }));
        const root = manifestRoot(chunks);
        const i = a % chunks.length;
        const c = chunks[i]!;
        const changedId = chunks.map((x, k) => (k === i ? { ...x, id: idOf((raw[i]!.seed + 1) % 256) } : x));
        if (bytesEqual(manifestRoot(changedId), root)) throw new Error('id change kept the root');
        const changedLength = chunks.map((x, k) => (k === i ? { ...x, length: c.length + 1 } : x));
        if (bytesEqual(manifestRoot(changedLength), root)) throw new Error('length change kept the root');
        const j = b % chunks.length;
        const swapped = [...chunks];
        swapped[i] = chunks[j]!;
        swapped[j] = c;
        const same = bytesEqual(chunks[i]!.id, chunks[j]!.id) && chunks[i]!.length === chunks[j]!.length;
        if (!same && bytesEqual(manifestRoot(swapped), root)) throw new Error('reordering kept the root');
        if (bytesEqual(manifestRoot(chunks.slice(0, -1)), root)) throw new Error('dropping a chunk kept the root');
      },
    ),
    { numRuns: 100 },
  );
});

t.test('manifestFromBytes: ids are BLAKE3 of each chunk and the manifest verifies', async (t) => {
  const bytes = pseudoRandomBytes(100_000, 21);
  const m = manifestFromBytes(bytes, SMALL);
  t.equal(m.size, bytes.length);
  t.ok(m.chunks.length > 10);
  for (const c of m.chunks) {
    if (!bytesEqual(c.id, blake3(bytes.subarray(c.offset, c.offset + c.length)))) t.fail(`chunk at ${c.offset}`);
  }
  t.same(m.root, manifestRoot(m.chunks));
  verifyManifest(m, { maxChunkBytes: SMALL.maxBytes, maxChunkCount: 1000 });
  const empty = manifestFromBytes(new Uint8Array(0), SMALL);
  t.same(empty.chunks, []);
  t.equal(toHex(empty.root), toHex(blake3(encodeManifestCanonical([]))));
  verifyManifest(empty);
});

t.test('verifyManifest rejects malformed lists and a wrong root', async (t) => {
  const m = manifestFromBytes(pseudoRandomBytes(30_000, 8), SMALL);
  const withChunks = (chunks: ChunkRef[], extra: Partial<FileManifest> = {}): FileManifest => ({
    ...m,
    chunks,
    ...extra,
  });
  const first = m.chunks[0]!;
  const cases: [string, FileManifest, string, RegExp][] = [
    ['gap', withChunks([{ ...first, offset: 1 }, ...m.chunks.slice(1)]), 'PROTOCOL', /chunk 0 at offset 1, expected 0/],
    ['short size', { ...m, size: m.size - 1 }, 'PROTOCOL', /cover 30000 bytes, size says 29999/],
    ['bad id', withChunks([{ ...first, id: new Uint8Array(31) }, ...m.chunks.slice(1)]), 'PROTOCOL', /id has 31 bytes/],
    ['zero length', withChunks([{ ...first, length: 0 }, ...m.chunks.slice(1)]), 'PROTOCOL', /length 0 not in/],
    ['wrong root', { ...m, root: blake3(new Uint8Array(1)) }, 'HASH_MISMATCH', /does not match its chunk list/],
  ];
  for (const [name, manifest, code, message] of cases) {
    t.throws(() => verifyManifest(manifest), { code, message }, name);
  }
  t.throws(() => verifyManifest(m, { maxChunkBytes: 100, maxChunkCount: 1000 }), {
    code: 'PROTOCOL',
    message: /not in 1\.\.100/,
  });
  t.throws(() => verifyManifest(m, { maxChunkBytes: 8192, maxChunkCount: 2 }), {
    code: 'PROTOCOL',
    message: /limit 2/,
  });
});

t.test('builder rejects misuse', async (t) => {
  const b = new ManifestRootBuilder();
  t.throws(() => b.add(new Uint8Array(31), 1), TypeError);
  t.throws(() => b.add(idOf(1), 0), TypeError);
  b.finish();
  t.throws(() => b.add(idOf(1), 1), TypeError);
  t.throws(() => b.finish(), TypeError);
});
