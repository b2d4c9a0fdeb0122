import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import t from 'tap';
import { readZstdFrame, ZSTD_MAX_BLOCK_BYTES, ZstdFrameError } from '../../src/transfer/zstd-frame.js';

const KiB = 1024;

/** A frame header: magic, descriptor, optional window descriptor and content size. */
function header(o: { descriptor: number; window?: number; fcs?: Uint8Array }): number[] {
  return [0x28, 0xb5, 0x2f, 0xfd, o.descriptor, ...(o.window === undefined ? [] : [o.window]), ...(o.fcs ?? [])];
}

/** A 3-byte block header. type: 0 raw, 1 RLE, 2 compressed, 3 reserved. */
function block(type: number, size: number, last: boolean): number[] {
  const h = (size << 3) | (type << 1) | (last ? 1 : 0);
  return [h & 0xff, (h >> 8) & 0xff, (h >> 16) & 0xff];
}

/** Window descriptor for a 2^log window (mantissa 0). */
const windowOf = (log: number): number => (log - 10) << 3;

t.test('raw and RLE blocks count exactly, compressed ones at the block maximum', async (t) => {
  const frame = Uint8Array.from([
    ...header({ descriptor: 0x00, window: windowOf(17) }),
    ...block(0, 5, false),
    1,
    2,
    3,
    4,
    5,
    ...block(1, 1000, false),
    0x41,
    ...block(2, 3, true),
    9,
    9,
    9,
  ]);
  t.same(readZstdFrame(frame), {
    contentSize: undefined,
    exactBytes: 1005,
    maxOutputBytes: 1005 + ZSTD_MAX_BLOCK_BYTES,
    blocks: 3,
  });
});

t.test(
  'a small window lowers the block maximum; single-segment frames take the content size as the window',
  async (t) => {
    const small = Uint8Array.from([...header({ descriptor: 0x00, window: windowOf(10) }), ...block(2, 2, true), 0, 0]);
    t.equal(readZstdFrame(small).maxOutputBytes, 1 * KiB, 'a 1 KiB window caps a compressed block at 1 KiB');
    // Single segment, FCS flag 0: a 1-byte content size, no window descriptor.
    const single = Uint8Array.from([
      ...header({ descriptor: 0x20, fcs: Uint8Array.of(200) }),
      ...block(0, 200, true),
      ...new Array<number>(200).fill(7),
    ]);
    t.same(readZstdFrame(single), { contentSize: 200, exactBytes: 200, maxOutputBytes: 200, blocks: 1 });
    const tooBig = Uint8Array.from([
      ...header({ descriptor: 0x20, fcs: Uint8Array.of(10) }),
      ...block(0, 11, true),
      ...new Array<number>(11).fill(7),
    ]);
    t.throws(() => readZstdFrame(tooBig), /block 0 has 11 bytes, more than the block maximum of 10/);
  },
);

t.test('content sizes in 2, 4 and 8 bytes', async (t) => {
  const two = Uint8Array.from([
    ...header({ descriptor: 0x40, window: windowOf(17), fcs: Uint8Array.of(0x00, 0x01) }),
    ...block(1, 512, true),
    1,
  ]);
  t.equal(readZstdFrame(two).contentSize, 512, '2-byte field is value + 256');
  const four = Uint8Array.from([
    ...header({ descriptor: 0x80, window: windowOf(17), fcs: Uint8Array.of(0x00, 0x02, 0, 0) }),
    ...block(1, 512, true),
    1,
  ]);
  t.equal(readZstdFrame(four).contentSize, 512);
  const eight = Uint8Array.from([
    ...header({ descriptor: 0xc0, window: windowOf(17), fcs: Uint8Array.of(0x00, 0x02, 0, 0, 0, 0, 0, 0) }),
    ...block(1, 512, true),
    1,
  ]);
  t.equal(readZstdFrame(eight).contentSize, 512);
  const lying = Uint8Array.from([
    ...header({ descriptor: 0x80, window: windowOf(17), fcs: Uint8Array.of(0x00, 0x10, 0, 0) }),
    ...block(1, 512, true),
    1,
  ]);
  t.throws(() => readZstdFrame(lying), /declares 4096 bytes of content, but its blocks make 512\.\.512/);
});

t.test('a content checksum is skipped; anything after the frame is refused', async (t) => {
  const withSum = Uint8Array.from([
    ...header({ descriptor: 0x04, window: windowOf(17) }),
    ...block(1, 9, true),
    1,
    0xaa,
    0xbb,
    0xcc,
    0xdd,
  ]);
  t.equal(readZstdFrame(withSum).exactBytes, 9);
  const trailing = Uint8Array.from([...header({ descriptor: 0x00, window: windowOf(17) }), ...block(1, 9, true), 1, 0]);
  t.throws(() => readZstdFrame(trailing), /1 bytes follow the frame/);
});

t.test('malformed frames are refused with what is wrong', async (t) => {
  const ok = [...header({ descriptor: 0x00, window: windowOf(17) })];
  const cases: [string, number[], RegExp][] = [
    ['too short', [0x28, 0xb5, 0x2f], /too short/],
    ['bad magic', [0x29, 0xb5, 0x2f, 0xfd, 0, 0x38, ...block(1, 1, true), 0], /magic 0xfd2fb529/],
    ['reserved bit', [...header({ descriptor: 0x08, window: windowOf(17) }), ...block(1, 1, true), 0], /reserved bit/],
    ['dictionary', [...header({ descriptor: 0x01, window: windowOf(17) }), 5, ...block(1, 1, true), 0], /dictionary/],
    ['reserved block type', [...ok, ...block(3, 1, true), 0], /reserved block type 3/],
    ['truncated block header', [...ok, 0x01], /block 0 header is truncated/],
    ['block past the end', [...ok, ...block(0, 10, true), 1, 2], /block 0 runs past the end/],
    ['no last block', [...ok, ...block(1, 1, false), 0], /block 1 header is truncated/],
    [
      'block over 128 KiB',
      [...header({ descriptor: 0x00, window: windowOf(20) }), ...block(1, ZSTD_MAX_BLOCK_BYTES + 1, true), 0],
      /more than the block maximum of 131072/,
    ],
  ];
  for (const [what, bytes, pattern] of cases) {
    t.throws(() => readZstdFrame(Uint8Array.from(bytes)), pattern, what);
    t.throws(() => readZstdFrame(Uint8Array.from(bytes)), ZstdFrameError, `${what}: a ZstdFrameError`);
  }
});

t.test('an RLE bomb shows its full size before anything is decoded', async (t) => {
  const blocks: number[] = [];
  for (let i = 0; i < 64; i++) blocks.push(...block(1, ZSTD_MAX_BLOCK_BYTES, i === 63), 0x41);
  const bomb = Uint8Array.from([...header({ descriptor: 0x00, window: windowOf(17) }), ...blocks]);
  t.equal(bomb.length, 6 + 64 * 4, '262 bytes');
  t.equal(readZstdFrame(bomb).exactBytes, 8 << 20, '...that decode to 8 MiB');
});

// Frames from the real encoder, when the optional binding is installed.
const zstd = (() => {
  try {
    return createRequire(import.meta.url)('@mongodb-js/zstd') as {
      compress(b: Buffer, level?: number): Promise<Buffer>;
    };
  } catch {
    return null;
  }
})();
t.test(
  'frames of the real encoder: bounds hold the input size',
  { skip: zstd === null ? '@mongodb-js/zstd is not installed' : false },
  async (t) => {
    const text = Buffer.from('the quick brown fox jumps over the lazy dog\n'.repeat(40_000));
    for (const size of [1, 100, 4 * KiB, 128 * KiB, 128 * KiB + 1, 1 << 20]) {
      for (const [kind, input] of [
        ['text', text.subarray(0, size)],
        ['random', randomBytes(size)],
      ] as const) {
        const shape = readZstdFrame(await zstd!.compress(input, 3));
        t.ok(
          shape.exactBytes <= size && size <= shape.maxOutputBytes,
          `${kind} ${size}: ${shape.exactBytes} <= ${size} <= ${shape.maxOutputBytes}`,
        );
        t.ok(
          shape.maxOutputBytes <= size + shape.blocks * ZSTD_MAX_BLOCK_BYTES,
          `${kind} ${size}: ${shape.blocks} blocks`,
        );
      }
    }
  },
);
