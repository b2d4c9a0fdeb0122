import { randomBytes } from 'node:crypto';
import t from 'tap';
import {
  ChunkCompressor,
  decompressChunk,
  localCapabilities,
  looksCompressed,
  maxDecodedBytes,
  receiverCodec,
  senderCodec,
  zstdCodec,
  type ZstdCodec,
} from '../../src/session/chunk-compression.js';
import { DEFAULT_CAPABILITIES, intersectCapabilities } from '../../src/protocol/capabilities.js';
import { ZSTD_MAX_BLOCK_BYTES } from '../../src/transfer/zstd-frame.js';

const zstd = zstdCodec();
const skip = zstd === null ? '@mongodb-js/zstd (an optional dependency) is not installed' : false;
const text = (n: number): Buffer =>
  Buffer.from('clawpeer moves chunks; zstd shrinks the ones that repeat. '.repeat(Math.ceil(n / 58))).subarray(0, n);

/** The real codec, counting compress calls. */
function counting(codec: ZstdCodec): ZstdCodec & { calls: number } {
  const c = {
    calls: 0,
    compress: (d: Buffer, l?: number) => (c.calls++, codec.compress(d, l)),
    decompress: (d: Buffer) => codec.decompress(d),
  };
  return c;
}

t.test('capabilities: zstd is offered first under auto, never under none', async (t) => {
  t.same(localCapabilities('none'), DEFAULT_CAPABILITIES);
  const auto = localCapabilities('auto');
  t.same(auto.compression, zstd === null ? ['none'] : ['zstd', 'none']);
  // The client's order decides: a --no-compress client turns it off for both directions.
  const off = intersectCapabilities(localCapabilities('none'), auto);
  t.same(off.compression, ['none']);
  t.equal(senderCodec(off), null, 'no sender compresses in that session');
  t.throws(() => receiverCodec(off, 3), /data stream 3 sent a compressed chunk, but no codec was negotiated/);
  if (zstd !== null) {
    const on = intersectCapabilities(auto, auto);
    t.same(on.compression, ['zstd', 'none']);
    t.equal(senderCodec(on), zstd);
    t.equal(receiverCodec(on, 3), zstd);
  }
});

t.test('names of compressed formats are not tried', async (t) => {
  for (const name of ['a.zip', 'photo.JPG', 'x/y/z.tar.gz', 'v.mp4', 'pkg.deb', 'data.zst'])
    t.ok(looksCompressed(name), name);
  for (const name of ['notes.txt', 'a.tar', 'Makefile', 'db.sqlite', 'zip']) t.notOk(looksCompressed(name), name);
});

t.test('compressible chunks round-trip; the receiver gets back exactly the bytes', { skip }, async (t) => {
  const c = new ChunkCompressor(zstd!);
  for (const size of [200, 4096, 256 << 10, 1 << 20]) {
    const plain = text(size);
    const packed = await c.compress(plain, 'notes.txt');
    t.ok(packed !== null && packed.length < size * 0.95, `${size} bytes of text compress (${packed?.length})`);
    const back = await decompressChunk(zstd!, packed!, size, 'k');
    t.ok(Buffer.from(back).equals(plain), `${size}: identical after decompression`);
  }
  t.equal(c.compressedChunks, 4);
  t.equal(await c.compress(text(100), 'tiny.txt'), null, 'a chunk under 128 bytes is not tried');
  t.equal(await c.compress(text(4096), 'archive.zip'), null, 'a .zip is not tried');
});

t.test('random chunks of 1 KiB and more go raw untried, whatever their files are named', { skip }, async (t) => {
  const codec = counting(zstd!);
  const c = new ChunkCompressor(codec);
  // Every name its own extension (page.r001 ..): the per-extension backoff never learns from these.
  for (let i = 0; i < 50; i++) t.equal(await c.compress(randomBytes(i % 2 === 0 ? 1024 : 4096), `page.r${i}`), null);
  t.equal(codec.calls, 0, 'no compression attempt for 50 random chunks');
  t.not(await c.compress(text(4096), 'page.r999'), null, 'text under a fresh name is compressed');
  // Half random, half repeated text: the sample sees both, and the attempt pays.
  const mixed = Buffer.concat([randomBytes(32 << 10), text(32 << 10)]);
  t.not(await c.compress(mixed, 'mixed.bin'), null, 'a chunk half of which compresses is tried and compressed');
});

t.test('incompressible chunks go raw, and after misses the next ones are not even tried', { skip }, async (t) => {
  const codec = counting(zstd!);
  const c = new ChunkCompressor(codec);
  // Under 1 KiB the entropy sample says too little, so these reach the codec and miss.
  const random = randomBytes(512);
  let raw = 0;
  for (let i = 0; i < 300; i++) if ((await c.compress(random, 'r.bin')) === null) raw++;
  t.equal(raw, 300, 'every random chunk went raw');
  t.ok(codec.calls <= 12, `only ${codec.calls} of 300 chunks were tried (backoff up to 64)`);
  t.ok(codec.calls >= 5, 'but it keeps probing');
  // Another kind of file is tried at once: misses on .bin say nothing about .txt.
  t.not(await c.compress(text(64 << 10), 't.txt'), null, 'a .txt chunk right after 300 .bin misses is compressed');
  // Compressible data under the same extension: found at the next probe, then every chunk is tried again.
  let firstHit = -1;
  for (let i = 0; i < 80 && firstHit < 0; i++) if ((await c.compress(text(64 << 10), 'r.bin')) !== null) firstHit = i;
  t.ok(firstHit >= 0 && firstHit <= 64, `compressible data is noticed within 65 chunks (${firstHit})`);
  const before = codec.calls;
  for (let i = 0; i < 10; i++) t.not(await c.compress(text(64 << 10), 'r.bin'), null);
  t.equal(codec.calls - before, 10, 'after a hit, every chunk is tried');
});

t.test('decompression refuses what does not fit the chunk, before decoding it', { skip }, async (t) => {
  const never: ZstdCodec = {
    compress: () => Promise.reject(new Error('unused')),
    decompress: () => Promise.reject(new Error('the decoder must not run')),
  };
  // 64 RLE blocks of 128 KiB: 262 bytes that decode to 8 MiB.
  const blocks: number[] = [];
  for (let i = 0; i < 64; i++) {
    const h = (ZSTD_MAX_BLOCK_BYTES << 3) | (1 << 1) | (i === 63 ? 1 : 0);
    blocks.push(h & 0xff, (h >> 8) & 0xff, (h >> 16) & 0xff, 0x41);
  }
  const bomb = Uint8Array.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38, ...blocks]);
  await t.rejects(
    decompressChunk(never, bomb, 4096, 'abc'),
    /compressed chunk abc refused: its blocks decode to 8388608\.\.8388608 bytes, the chunk has 4096/,
  );
  // Many compressed blocks, each promising up to 128 KiB: over the bound for a 64 KiB chunk.
  const many: number[] = [];
  for (let i = 0; i < 8; i++) {
    const h = (2 << 3) | (2 << 1) | (i === 7 ? 1 : 0);
    many.push(h & 0xff, (h >> 8) & 0xff, (h >> 16) & 0xff, 0, 0);
  }
  const wide = Uint8Array.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38, ...many]);
  t.equal(maxDecodedBytes(64 << 10), 4 * ZSTD_MAX_BLOCK_BYTES);
  await t.rejects(
    decompressChunk(never, wide, 64 << 10, 'w'),
    /could decode to 1048576 bytes, more than the 524288 allowed for a 65536-byte chunk/,
  );
  await t.rejects(decompressChunk(never, randomBytes(100), 100, 'g'), /compressed chunk g refused: magic/);
  // A well-formed frame of other content: the decoder runs, and the length is checked after.
  const other = await zstd!.compress(text(5000), 3);
  await t.rejects(
    decompressChunk(zstd!, other, 4096, 'len'),
    /refused|decompressed to 5000 bytes, its header says 4096/,
  );
  // Corrupted frames: refused, a decoder error (PROTOCOL naming the chunk), or other bytes,
  // which the receiver's BLAKE3 check then refuses like any tampered chunk.
  const original = text(60_000);
  const packed = await zstd!.compress(original, 3);
  for (const at of [6, 12, 20, packed.length - 5]) {
    const corrupt = Buffer.from(packed);
    corrupt.fill(0xff, at, at + 4);
    const out = await decompressChunk(zstd!, corrupt, 60_000, 'bad').catch((err: unknown) => err as Error);
    if (out instanceof Error)
      t.match(
        out.message,
        /compressed chunk bad (refused|does not decompress|decompressed to)/,
        `corrupt at ${at}: ${out.message}`,
      );
    else t.notOk(Buffer.from(out).equals(original), `corrupt at ${at}: decodes to other bytes`);
  }
});
