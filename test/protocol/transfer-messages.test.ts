import fc from 'fast-check';
import t, { type Test } from 'tap';
import { isClawpeerError } from '../../src/errors.js';
import { FRAME_HEADER_BYTES } from '../../src/protocol/frame-codec.js';
import { clawpeer } from '../../src/protocol/gen/clawpeer.js';
import {
  bitmapGet,
  bitmapSet,
  decodeControl,
  encodeControl,
  encodeControlFrame,
  manifestEntryWireBytes,
  MAX_ENTRY_PATH_BYTES,
  MAX_MANIFEST_ENTRIES_PER_MESSAGE,
  newBitmap,
  splitManifest,
  type ControlMessage,
  type ManifestEntry,
  type ManifestMessage,
} from '../../src/protocol/messages.js';
import { hex, toHex } from './hex.js';

const pb = clawpeer.v1;
const fill = (byte: number, n: number): Uint8Array => new Uint8Array(n).fill(byte);
const EMPTY = new Uint8Array(0);
const MAX_BYTES = 16 << 20;

const dir = (path: string): ManifestEntry => ({
  path,
  kind: 'dir',
  size: 0,
  mode: 0o755,
  mtimeMs: 0,
  linkTarget: '',
  root: EMPTY,
  chunkIds: EMPTY,
  chunkLengths: [],
});

/** A file of `lengths.length` chunks whose ids are filled with their index byte. */
function file(path: string, lengths: readonly number[], mtimeMs = 1_700_000_000_000): ManifestEntry {
  const chunkIds = new Uint8Array(32 * lengths.length);
  lengths.forEach((_, i) => chunkIds.fill((i + 1) & 0xff, 32 * i, 32 * (i + 1)));
  return {
    path,
    kind: 'file',
    size: lengths.reduce((a, b) => a + b, 0),
    mode: 0o644,
    mtimeMs,
    linkTarget: '',
    root: fill(0xaa, 32),
    chunkIds,
    chunkLengths: lengths,
  };
}

// Every transfer message as a whole CONTROL frame, byte for byte. Envelope fields 16..21 take
// two-byte tags: (field << 3 | 2) as a varint.
const VECTORS: { name: string; message: ControlMessage; wire: string }[] = [
  {
    name: 'TransferRequest',
    message: {
      type: 'transfer-request',
      transferId: 7,
      direction: 'push',
      share: 'docs',
      path: 'a/b',
      force: true,
      streams: 4,
      window: 64,
    },
    wire: `
      01 00000018                 # frame: type CONTROL, body 24 bytes
      8201 15                     # Control.transfer_request (field 16, LEN) 21 bytes
      08 07                       #   transfer_id (1) = 7
      10 01                       #   direction (2) = PUSH
      1a 04 646f6373              #   share (3) = "docs"
      22 03 612f62                #   path (4) = "a/b"
      28 01                       #   force (5) = true
      30 04                       #   streams (6) = 4
      38 40                       #   window (7) = 64
    `,
  },
  {
    name: 'TransferRequest (pull, defaults omitted)',
    message: {
      type: 'transfer-request',
      transferId: 0,
      direction: 'pull',
      share: '',
      path: '',
      force: false,
      streams: 1,
      window: 8,
    },
    wire: `
      01 00000009                 # frame: type CONTROL, body 9 bytes
      8201 06                     # Control.transfer_request (field 16, LEN) 6 bytes
      10 02                       #   direction (2) = PULL (zero and empty fields are not sent)
      30 01                       #   streams (6) = 1
      38 08                       #   window (7) = 8
    `,
  },
  {
    name: 'TransferRequest (pull with exclude patterns)',
    message: {
      type: 'transfer-request',
      transferId: 1,
      direction: 'pull',
      share: 's',
      path: '',
      force: false,
      streams: 1,
      window: 8,
      exclude: ['*.log', 'tmp/'],
    },
    wire: `
      01 0000001b                 # frame: type CONTROL, body 27 bytes
      8201 18                     # Control.transfer_request (field 16, LEN) 24 bytes
      08 01                       #   transfer_id (1) = 1
      10 02                       #   direction (2) = PULL
      1a 01 73                    #   share (3) = "s"
      30 01                       #   streams (6) = 1
      38 08                       #   window (7) = 8
      42 05 2a2e6c6f67            #   exclude (8) = "*.log"
      42 04 746d702f              #   exclude (8) = "tmp/"
    `,
  },
  {
    name: 'TransferRequest (pull with filter rules: an include, then an exclude)',
    message: {
      type: 'transfer-request',
      transferId: 0,
      direction: 'pull',
      share: '',
      path: '',
      force: false,
      streams: 1,
      window: 8,
      filter: [
        { pattern: '*.txt', include: true },
        { pattern: '*', include: false },
      ],
    },
    wire: `
      01 00000019                 # frame: type CONTROL, body 25 bytes
      8201 16                     # Control.transfer_request (field 16, LEN) 22 bytes
      10 02                       #   direction (2) = PULL
      30 01                       #   streams (6) = 1
      38 08                       #   window (7) = 8
      62 09                       #   filter (12) 9 bytes
      0a 05 2a2e747874            #     pattern (1) = "*.txt"
      10 01                       #     include (2) = true
      62 03                       #   filter (12) 3 bytes
      0a 01 2a                    #     pattern (1) = "*" (include false: not sent)
    `,
  },
  {
    name: 'TransferRequest (pull with a rate limit)',
    message: {
      type: 'transfer-request',
      transferId: 0,
      direction: 'pull',
      share: '',
      path: '',
      force: false,
      streams: 1,
      window: 8,
      rateLimit: 1 << 20,
    },
    wire: `
      01 0000000d                 # frame: type CONTROL, body 13 bytes
      8201 0a                     # Control.transfer_request (field 16, LEN) 10 bytes
      10 02                       #   direction (2) = PULL
      30 01                       #   streams (6) = 1
      38 08                       #   window (7) = 8
      48 808040                   #   rate_limit (9) = 1048576 bytes per second
    `,
  },
  {
    name: 'TransferRequest (pull with size bounds)',
    message: {
      type: 'transfer-request',
      transferId: 0,
      direction: 'pull',
      share: '',
      path: '',
      force: false,
      streams: 1,
      window: 8,
      minSize: 1024,
      maxSize: 5_000_000_000,
    },
    wire: `
      01 00000014                 # frame: type CONTROL, body 20 bytes
      8201 11                     # Control.transfer_request (field 16, LEN) 17 bytes
      10 02                       #   direction (2) = PULL
      30 01                       #   streams (6) = 1
      38 08                       #   window (7) = 8
      8801 8008                   #   min_size (17) = 1024
      9001 80e497d012             #   max_size (18) = 5000000000 (above 2^32)
    `,
  },
  {
    name: 'TransferRequest (pull, dry run)',
    message: {
      type: 'transfer-request',
      transferId: 0,
      direction: 'pull',
      share: '',
      path: '',
      force: false,
      streams: 1,
      window: 8,
      dryRun: true,
    },
    wire: `
      01 0000000b                 # frame: type CONTROL, body 11 bytes
      8201 08                     # Control.transfer_request (field 16, LEN) 8 bytes
      10 02                       #   direction (2) = PULL
      30 01                       #   streams (6) = 1
      38 08                       #   window (7) = 8
      50 01                       #   dry_run (10) = true
    `,
  },
  {
    name: 'TransferRequest (push, --fsync=none)',
    message: {
      type: 'transfer-request',
      transferId: 0,
      direction: 'push',
      share: '',
      path: '',
      force: false,
      streams: 1,
      window: 8,
      noFsync: true,
    },
    wire: `
      01 0000000c                 # frame: type CONTROL, body 12 bytes
      8201 09                     # Control.transfer_request (field 16, LEN) 9 bytes
      10 01                       #   direction (2) = PUSH
      30 01                       #   streams (6) = 1
      38 08                       #   window (7) = 8
      a801 01                     #   no_fsync (21) = true
    `,
  },
  {
    name: 'TransferAccept',
    message: { type: 'transfer-accept', transferId: 7, streams: 2, window: 32 },
    wire: `
      01 00000009                 # frame: type CONTROL, body 9 bytes
      8a01 06                     # Control.transfer_accept (field 17, LEN) 6 bytes
      08 07                       #   transfer_id (1) = 7
      10 02                       #   streams (2) = 2
      18 20                       #   window (3) = 32
    `,
  },
  {
    name: 'Manifest',
    message: {
      type: 'manifest',
      transferId: 7,
      last: true,
      entries: [
        dir('a'),
        file('a/x.bin', [200, 100]),
        {
          path: 'a/l',
          kind: 'symlink',
          size: 0,
          mode: 0o777,
          mtimeMs: -1000,
          linkTarget: 'x.bin',
          root: EMPTY,
          chunkIds: EMPTY,
          chunkLengths: [],
        },
      ],
    },
    wire: `
      01 000000ac                 # frame: type CONTROL, body 172 bytes
      9201 a801                   # Control.manifest (field 18, LEN) 168 bytes
      08 07                       #   transfer_id (1) = 7
      12 08                       #   entries (2): ManifestEntry, 8 bytes
        0a 01 61                  #     path (1) = "a"
        10 02                     #     kind (2) = DIR
        20 ed03                   #     mode (4) = 0o755 (size, mtime, target, root, chunks empty)
      12 8101                     #   entries (2): ManifestEntry, 129 bytes
        0a 07 612f782e62696e      #     path (1) = "a/x.bin"
        10 01                     #     kind (2) = FILE
        18 ac02                   #     size (3) = 300
        20 a403                   #     mode (4) = 0o644
        28 80a0abfef962           #     mtime_ms (5) = 1.7e12 (sint64 zigzag: 3.4e12)
        3a 20 aa*32               #     root (7): 32 bytes
        42 40 01*32 02*32         #     chunk_ids (8): 2 ids of 32 bytes
        4a 03 c801 64             #     chunk_lengths (9, packed) = [200, 100]
      12 14                       #   entries (2): ManifestEntry, 20 bytes
        0a 03 612f6c              #     path (1) = "a/l"
        10 03                     #     kind (2) = SYMLINK
        20 ff03                   #     mode (4) = 0o777
        28 cf0f                   #     mtime_ms (5) = -1000 (zigzag 1999)
        32 05 782e62696e          #     link_target (6) = "x.bin"
      18 01                       #   last (3) = true
    `,
  },
  {
    name: 'Want',
    message: { type: 'want', transferId: 7, lacking: Uint8Array.of(0b0000_1001, 0b0000_0010), uniqueChunks: 10 },
    wire: `
      01 0000000b                 # frame: type CONTROL, body 11 bytes
      9a01 08                     # Control.want (field 19, LEN) 8 bytes
      08 07                       #   transfer_id (1) = 7
      12 02 09 02                 #   lacking (2): chunks 0, 3 (byte 0) and 9 (byte 1), LSB first
      18 0a                       #   unique_chunks (3) = 10
    `,
  },
  {
    name: 'Want (a dry run: which files would be published)',
    message: {
      type: 'want',
      transferId: 7,
      lacking: Uint8Array.of(0b0000_0001),
      uniqueChunks: 2,
      publish: Uint8Array.of(0b0000_0101),
    },
    wire: `
      01 0000000d                 # frame: type CONTROL, body 13 bytes
      9a01 0a                     # Control.want (field 19, LEN) 10 bytes
      08 07                       #   transfer_id (1) = 7
      12 01 01                    #   lacking (2): chunk 0
      18 02                       #   unique_chunks (3) = 2
      22 01 05                    #   publish (4): files 0 and 2
    `,
  },
  {
    name: 'Want (a dry run: which directories and symlinks would be created)',
    message: {
      type: 'want',
      transferId: 7,
      lacking: Uint8Array.of(0),
      uniqueChunks: 1,
      publish: Uint8Array.of(1),
      create: Uint8Array.of(0b0000_0010),
    },
    wire: `
      01 00000010                 # frame: type CONTROL, body 16 bytes
      9a01 0d                     # Control.want (field 19, LEN) 13 bytes
      08 07                       #   transfer_id (1) = 7
      12 01 00                    #   lacking (2): nothing
      18 01                       #   unique_chunks (3) = 1
      22 01 01                    #   publish (4): file 0
      2a 01 02                    #   create (5): the second directory or symlink
    `,
  },
  {
    name: 'Want (a dry run: identical files whose mtime or permissions would be set)',
    message: {
      type: 'want',
      transferId: 7,
      lacking: Uint8Array.of(0),
      uniqueChunks: 1,
      publish: Uint8Array.of(0),
      touchTime: Uint8Array.of(0b0000_0011),
      touchPerms: Uint8Array.of(0b0000_0010),
    },
    wire: `
      01 00000013                 # frame: type CONTROL, body 19 bytes
      9a01 10                     # Control.want (field 19, LEN) 16 bytes
      08 07                       #   transfer_id (1) = 7
      12 01 00                    #   lacking (2): nothing
      18 01                       #   unique_chunks (3) = 1
      22 01 00                    #   publish (4): no file
      32 01 03                    #   touch_time (6): files 0 and 1
      3a 01 02                    #   touch_perms (7): file 1
    `,
  },
  {
    name: 'DataOpen',
    message: { type: 'data-open', transferId: 7, streamId: 3 },
    wire: `
      01 00000007                 # frame: type CONTROL, body 7 bytes
      a201 04                     # Control.data_open (field 20, LEN) 4 bytes
      08 07                       #   transfer_id (1) = 7
      10 03                       #   stream_id (2) = 3
    `,
  },
  {
    name: 'TransferDone',
    message: { type: 'transfer-done', transferId: 7, files: 2, bytes: 300, chunksReceived: 1, chunksSkipped: 1 },
    wire: `
      01 0000000e                 # frame: type CONTROL, body 14 bytes
      aa01 0b                     # Control.transfer_done (field 21, LEN) 11 bytes
      08 07                       #   transfer_id (1) = 7
      10 02                       #   files (2) = 2
      18 ac02                     #   bytes (3) = 300
      20 01                       #   chunks_received (4) = 1
      28 01                       #   chunks_skipped (5) = 1
    `,
  },
  {
    name: 'TransferRequest (push, update: keep newer existing files)',
    message: {
      type: 'transfer-request',
      transferId: 0,
      direction: 'push',
      share: '',
      path: '',
      force: false,
      streams: 1,
      window: 8,
      existing: 'update',
    },
    wire: `
      01 0000000b                 # frame: type CONTROL, body 11 bytes
      8201 08                     # Control.transfer_request (field 16, LEN) 8 bytes
      10 01                       #   direction (2) = PUSH
      30 01                       #   streams (6) = 1
      38 08                       #   window (7) = 8
      68 02                       #   existing (13) = UPDATE
    `,
  },
  {
    name: 'TransferDone (a push that kept existing files)',
    message: {
      type: 'transfer-done',
      transferId: 1,
      files: 2,
      bytes: 3,
      chunksReceived: 4,
      chunksSkipped: 5,
      filesKept: 6,
    },
    wire: `
      01 0000000f                 # frame: type CONTROL, body 15 bytes
      aa01 0c                     # Control.transfer_done (field 21, LEN) 12 bytes
      08 01                       #   transfer_id (1) = 1
      10 02                       #   files (2) = 2
      18 03                       #   bytes (3) = 3
      20 04                       #   chunks_received (4) = 4
      28 05                       #   chunks_skipped (5) = 5
      40 06                       #   files_kept (8) = 6
    `,
  },
  {
    name: 'TransferRequest (push, delete)',
    message: {
      type: 'transfer-request',
      transferId: 0,
      direction: 'push',
      share: '',
      path: '',
      force: false,
      streams: 1,
      window: 8,
      delete: true,
    },
    wire: `
      01 0000000b                 # frame: type CONTROL, body 11 bytes
      8201 08                     # Control.transfer_request (field 16, LEN) 8 bytes
      10 01                       #   direction (2) = PUSH
      30 01                       #   streams (6) = 1
      38 08                       #   window (7) = 8
      58 01                       #   delete (11) = true
    `,
  },
  {
    name: 'TransferDone (a push with delete)',
    message: {
      type: 'transfer-done',
      transferId: 1,
      files: 2,
      bytes: 3,
      chunksReceived: 4,
      chunksSkipped: 5,
      deleted: ['a/b'],
      deletedCount: 2,
    },
    wire: `
      01 00000014                 # frame: type CONTROL, body 20 bytes
      aa01 11                     # Control.transfer_done (field 21, LEN) 17 bytes
      08 01                       #   transfer_id (1) = 1
      10 02                       #   files (2) = 2
      18 03                       #   bytes (3) = 3
      20 04                       #   chunks_received (4) = 4
      28 05                       #   chunks_skipped (5) = 5
      32 03 612f62                #   deleted (6) = "a/b"
      38 02                       #   deleted_count (7) = 2 (one more than listed)
    `,
  },
];

for (const vector of VECTORS) {
  t.test(`${vector.name}: exact wire bytes and round trip`, async (t) => {
    const wire = hex(vector.wire);
    t.equal(toHex(encodeControlFrame(vector.message)), toHex(wire));
    const decoded = decodeControl(wire.subarray(FRAME_HEADER_BYTES), { maxBytes: 1024 });
    t.same(decoded, vector.message);
  });
}

t.test('decoded bytes are copies, not views of the frame buffer', async (t) => {
  const manifest = VECTORS.find((v) => v.name === 'Manifest')?.message;
  if (manifest === undefined) throw new Error('no Manifest vector');
  const body = encodeControl(manifest);
  const decoded = decodeControl(body, { maxBytes: 1024 });
  if (decoded.type !== 'manifest') throw new Error('not a manifest');
  const root = decoded.entries[1]?.root;
  body.fill(0);
  t.equal(root?.[0], 0xaa);
});

t.test('uint64 counters and sizes decode as plain numbers up to 2^53-1', async (t) => {
  const big = Number.MAX_SAFE_INTEGER;
  const done: ControlMessage = {
    type: 'transfer-done',
    transferId: 0xffff_ffff,
    files: big,
    bytes: big,
    chunksReceived: 2 ** 40,
    chunksSkipped: 0,
  };
  const decoded = decodeControl(encodeControl(done), { maxBytes: 64 });
  t.same(decoded, done);
  if (decoded.type !== 'transfer-done') throw new Error('not transfer-done');
  t.equal(typeof decoded.bytes, 'number');
  const extremes = [
    file('big', [0xffff_ffff, 0xffff_ffff], -Number.MAX_SAFE_INTEGER),
    file('late', [1], Number.MAX_SAFE_INTEGER),
  ];
  const manifest: ControlMessage = { type: 'manifest', transferId: 1, entries: extremes, last: false };
  t.same(decodeControl(encodeControl(manifest), { maxBytes: 4096 }), manifest);
});

// ---------------------------------------------------------------------------------------------
// Properties

const arbPath = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 24 });
const arbMeta = { mode: fc.integer({ min: 0, max: 0o7777 }), mtimeMs: fc.maxSafeInteger() };
const arbFile: fc.Arbitrary<ManifestEntry> = fc
  .record({
    path: arbPath,
    ...arbMeta,
    root: fc.uint8Array({ minLength: 32, maxLength: 32 }),
    chunks: fc.array(
      fc.tuple(fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.integer({ min: 1, max: 0xffff_ffff })),
      { maxLength: 8 },
    ),
  })
  .map(({ path, mode, mtimeMs, root, chunks }) => {
    const chunkIds = new Uint8Array(32 * chunks.length);
    chunks.forEach(([id], i) => chunkIds.set(id, 32 * i));
    const chunkLengths = chunks.map(([, length]) => length);
    return {
      path,
      kind: 'file',
      size: chunkLengths.reduce((a, b) => a + b, 0),
      mode,
      mtimeMs,
      linkTarget: '',
      root,
      chunkIds,
      chunkLengths,
    };
  });
const arbDir: fc.Arbitrary<ManifestEntry> = fc
  .record({ path: arbPath, ...arbMeta })
  .map((m) => ({ ...m, kind: 'dir', size: 0, linkTarget: '', root: EMPTY, chunkIds: EMPTY, chunkLengths: [] }));
const arbSymlink: fc.Arbitrary<ManifestEntry> = fc
  .record({ path: arbPath, ...arbMeta, linkTarget: arbPath })
  .map((m) => ({ ...m, kind: 'symlink', size: 0, root: EMPTY, chunkIds: EMPTY, chunkLengths: [] }));
const arbEntry = fc.oneof(
  { weight: 3, arbitrary: arbFile },
  { weight: 1, arbitrary: arbDir },
  { weight: 1, arbitrary: arbSymlink },
);
const arbU32 = fc.integer({ min: 0, max: 0xffff_ffff });

const arbBitmap = fc.array(fc.boolean(), { maxLength: 70 }).map((bits) => {
  const lacking = newBitmap(bits.length);
  bits.forEach((b, i) => b && bitmapSet(lacking, i));
  return { lacking, uniqueChunks: bits.length, bits };
});

const arbMessage: fc.Arbitrary<ControlMessage> = fc.oneof(
  fc
    .record({
      type: fc.constant('transfer-request' as const),
      transferId: arbU32,
      direction: fc.constantFrom('push' as const, 'pull' as const),
      share: fc.string({ unit: 'grapheme', maxLength: 10 }),
      path: fc.string({ unit: 'grapheme', maxLength: 30 }),
      force: fc.boolean(),
      streams: arbU32,
      window: arbU32,
    })
    .chain((r) =>
      fc
        .option(
          fc.array(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 4 }),
          { nil: undefined },
        )
        .map((exclude) => (exclude === undefined ? r : { ...r, exclude })),
    )
    .chain((r) =>
      'exclude' in r
        ? fc.constant(r)
        : fc
            .option(
              fc.array(
                fc.record({
                  pattern: fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 }),
                  include: fc.boolean(),
                }),
                { minLength: 1, maxLength: 4 },
              ),
              { nil: undefined },
            )
            .map((filter) => (filter === undefined ? r : { ...r, filter })),
    )
    .chain((r) =>
      fc
        .option(fc.integer({ min: 1, max: 0xffff_ffff }), { nil: undefined })
        .map((rateLimit) => (rateLimit === undefined ? r : { ...r, rateLimit })),
    )
    .chain((r) =>
      fc
        .option(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), { nil: undefined })
        .map((minSize) => (minSize === undefined ? r : { ...r, minSize })),
    )
    .chain((r) =>
      fc
        .option(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), { nil: undefined })
        .map((maxSize) => (maxSize === undefined ? r : { ...r, maxSize })),
    )
    .chain((r) =>
      fc
        .option(
          fc.array(fc.string({ unit: 'grapheme', minLength: 1, maxLength: 20 }), { minLength: 1, maxLength: 5 }),
          { nil: undefined },
        )
        .map((filesFrom) => (filesFrom === undefined ? r : { ...r, filesFrom })),
    )
    .chain((r) =>
      fc
        .option(fc.constantFrom('all' as const, 'unsafe' as const), { nil: undefined })
        .map((copyLinks) => (copyLinks === undefined ? r : { ...r, copyLinks })),
    )
    .chain((r) => fc.boolean().map((dryRun) => (dryRun ? { ...r, dryRun } : r)))
    .chain((r) => fc.boolean().map((del) => (del ? { ...r, delete: del } : r)))
    .chain((r) =>
      fc
        .option(fc.constantFrom('keep' as const, 'update' as const), { nil: undefined })
        .map((existing) => (existing === undefined ? r : { ...r, existing })),
    ),
  fc.record({ type: fc.constant('transfer-accept' as const), transferId: arbU32, streams: arbU32, window: arbU32 }),
  fc.record({
    type: fc.constant('manifest' as const),
    transferId: arbU32,
    entries: fc.array(arbEntry, { maxLength: 12 }),
    last: fc.boolean(),
  }),
  fc.tuple(arbU32, arbBitmap).map(([transferId, b]) => ({
    type: 'want' as const,
    transferId,
    lacking: b.lacking,
    uniqueChunks: b.uniqueChunks,
  })),
  fc.record({ type: fc.constant('data-open' as const), transferId: arbU32, streamId: arbU32 }),
  fc
    .record({
      type: fc.constant('transfer-done' as const),
      transferId: arbU32,
      files: fc.maxSafeNat(),
      bytes: fc.maxSafeNat(),
      chunksReceived: fc.maxSafeNat(),
      chunksSkipped: fc.maxSafeNat(),
    })
    .chain((d) =>
      fc
        .option(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), { nil: undefined })
        .map((filesKept) => (filesKept === undefined ? d : { ...d, filesKept })),
    ),
);

t.test('property: every transfer message round-trips exactly', async (t) => {
  fc.assert(
    fc.property(arbMessage, (message) => {
      t.same(decodeControl(encodeControl(message), { maxBytes: MAX_BYTES }), message);
    }),
    { numRuns: 300 },
  );
});

t.test('property: bitmap helpers agree with a boolean array and survive a Want round trip', async (t) => {
  fc.assert(
    fc.property(arbBitmap, ({ lacking, uniqueChunks, bits }) => {
      const decoded = decodeControl(encodeControl({ type: 'want', transferId: 1, lacking, uniqueChunks }), {
        maxBytes: 1024,
      });
      if (decoded.type !== 'want') throw new Error('not a want');
      t.same(
        bits.map((_, i) => bitmapGet(decoded.lacking, i)),
        bits,
      );
    }),
    { numRuns: 200 },
  );
});

t.test('bitmap helpers: size, LSB-first layout, range checks', async (t) => {
  t.equal(newBitmap(0).length, 0);
  t.equal(newBitmap(8).length, 1);
  t.equal(newBitmap(9).length, 2);
  const b = newBitmap(16);
  bitmapSet(b, 0);
  bitmapSet(b, 9);
  t.equal(toHex(b), '0102');
  t.equal(bitmapGet(b, 9), true);
  t.equal(bitmapGet(b, 8), false);
  t.throws(() => bitmapSet(b, 16), RangeError);
  t.throws(() => bitmapGet(b, -1), RangeError);
});

// ---------------------------------------------------------------------------------------------
// Malformed input

/** A Control envelope built by the generated encoder, bypassing our validation. */
const raw = (control: clawpeer.v1.Control.$Properties): Uint8Array => pb.Control.encode(control).finish();
const wireFile = (over: clawpeer.v1.ManifestEntry.$Properties): clawpeer.v1.Control.$Properties => ({
  manifest: {
    transferId: 1,
    entries: [
      {
        path: 'a/f',
        kind: pb.EntryKind.ENTRY_KIND_FILE,
        size: 64,
        root: fill(0xaa, 32),
        chunkIds: fill(1, 64),
        chunkLengths: [32, 32],
        ...over,
      },
    ],
  },
});

t.test('malformed transfer messages are PROTOCOL errors naming what was wrong', async (t) => {
  const cases: [string, Uint8Array, RegExp][] = [
    [
      'id/length count mismatch',
      raw(wireFile({ chunkLengths: [64] })),
      /entries\[0\] "a\/f": chunkIds holds 2 ids but chunkLengths holds 1 lengths/,
    ],
    [
      'chunkIds not a multiple of 32',
      raw(wireFile({ chunkIds: fill(1, 33), size: 64 })),
      /"a\/f": chunkIds is 33 bytes, not a multiple of 32/,
    ],
    ['short root', raw(wireFile({ root: fill(0xaa, 31) })), /"a\/f": root must be 32 bytes for a file, got 31/],
    ['file without root', raw(wireFile({ root: EMPTY })), /"a\/f": root must be 32 bytes for a file, got 0/],
    [
      'dir with a root',
      raw(wireFile({ kind: pb.EntryKind.ENTRY_KIND_DIR, size: 0, chunkIds: EMPTY, chunkLengths: [] })),
      /"a\/f": root must be empty for a dir, got 32 bytes/,
    ],
    [
      'dir with chunks',
      raw(wireFile({ kind: pb.EntryKind.ENTRY_KIND_DIR, root: EMPTY })),
      /"a\/f": a dir carries no chunks/,
    ],
    [
      'unspecified kind',
      raw(wireFile({ kind: pb.EntryKind.ENTRY_KIND_UNSPECIFIED })),
      /entries\[0\] "a\/f" kind is unspecified \(0\)/,
    ],
    ['unknown kind', raw(wireFile({ kind: 9 as clawpeer.v1.EntryKind })), /"a\/f" kind is unknown value 9/],
    ['sizes do not add up', raw(wireFile({ size: 65 })), /"a\/f": chunk lengths add up to 64 bytes but size is 65/],
    [
      'zero-length chunk',
      raw(wireFile({ size: 32, chunkLengths: [32, 0] })),
      /"a\/f": chunk 1 length 0 is not in 1\.\.2\^32-1/,
    ],
    ['empty path', raw(wireFile({ path: '' })), /entries\[0\] "": path is empty/],
    ['path too long', raw(wireFile({ path: 'é'.repeat(2049) })), /path is 4098 UTF-8 bytes, more than 4096/],
    ['mode with file type bits', raw(wireFile({ mode: 0o100644 })), /"a\/f": mode 33188 is not in 0\.\.0o7777/],
    [
      'symlink without target',
      raw(wireFile({ kind: pb.EntryKind.ENTRY_KIND_SYMLINK, size: 0, root: EMPTY, chunkIds: EMPTY, chunkLengths: [] })),
      /linkTarget is empty for a symlink/,
    ],
    ['file with a link target', raw(wireFile({ linkTarget: '../x' })), /linkTarget must be empty for a file/],
    ['size above 2^53-1', raw(wireFile({ size: 2 ** 53 })), /"a\/f" size 9007199254740992 exceeds 2\^53-1/],
    ['mtime below -(2^53-1)', raw(wireFile({ mtimeMs: -(2 ** 53) })), /mtimeMs -9007199254740992 is outside/],
    [
      'unspecified direction',
      raw({ transferRequest: { transferId: 1, streams: 1, window: 1 } }),
      /TransferRequest\.direction is unspecified \(0\)/,
    ],
    [
      'unknown direction',
      raw({ transferRequest: { transferId: 1, direction: 3 as clawpeer.v1.TransferDirection } }),
      /TransferRequest\.direction is unknown value 3/,
    ],
    [
      'share name too long',
      raw({ transferRequest: { direction: 1, share: 'x'.repeat(MAX_ENTRY_PATH_BYTES + 1) } }),
      /TransferRequest\.share is 4097 UTF-8 bytes/,
    ],
    [
      'oversize bitmap',
      raw({ want: { transferId: 1, lacking: fill(0, 3), uniqueChunks: 10 } }),
      /Want\.lacking: 3 bytes for 10 chunks, expected 2/,
    ],
    [
      'short bitmap',
      raw({ want: { transferId: 1, lacking: fill(0, 1), uniqueChunks: 10 } }),
      /Want\.lacking: 1 bytes for 10 chunks, expected 2/,
    ],
    [
      'bitmap padding bits set',
      raw({ want: { transferId: 1, lacking: Uint8Array.of(0, 0b0000_0100), uniqueChunks: 10 } }),
      /padding bits after chunk 9 are set/,
    ],
    [
      'TransferDone bytes above 2^53-1',
      raw({ transferDone: { bytes: 2 ** 60 } }),
      /TransferDone\.bytes 1152921504606846976 exceeds 2\^53-1/,
    ],
    [
      'TransferDone listing more removed paths than it counts',
      raw({ transferDone: { deleted: ['a', 'b'], deletedCount: 1 } }),
      /TransferDone\.deletedCount 1 is less than the 2 paths listed/,
    ],
    [
      'TransferDone listing too many removed paths',
      raw({ transferDone: { deleted: Array.from({ length: 1001 }, () => 'x'), deletedCount: 5000 } }),
      /TransferDone\.deleted lists 1001 paths, more than 1000/,
    ],
  ];
  for (const [name, body, message] of cases) {
    t.throws(() => decodeControl(body, { maxBytes: MAX_BYTES }), { code: 'PROTOCOL', message }, name);
  }
});

t.test('a Manifest with too many entries is refused before they are decoded', async (t) => {
  const count = MAX_MANIFEST_ENTRIES_PER_MESSAGE + 1;
  // Control.manifest { entries: count x empty ManifestEntry (12 00) }: the length prefix is
  // 2 * count = 200002 = varint c2 9a 0c.
  const body = new Uint8Array(2 + 3 + 2 * count);
  body.set(hex('9201 c29a0c'));
  for (let i = 0; i < count; i++) body.set([0x12, 0x00], 5 + 2 * i);
  t.throws(() => decodeControl(body, { maxBytes: MAX_BYTES }), {
    code: 'PROTOCOL',
    message: /Manifest has 100001 entries, more than 100000/,
  });
});

t.test('a TransferRequest with more than 1024 exclude patterns is refused both ways', async (t) => {
  // Control.transfer_request { direction: PULL (10 02), exclude: 1025 x "a" (42 01 61) }:
  // 3077 bytes = varint 85 18.
  const count = 1025;
  const body = new Uint8Array(2 + 2 + 2 + 3 * count);
  body.set(hex('8201 8518 1002'));
  for (let i = 0; i < count; i++) body.set([0x42, 0x01, 0x61], 6 + 3 * i);
  t.throws(() => decodeControl(body, { maxBytes: MAX_BYTES }), {
    code: 'PROTOCOL',
    message: /TransferRequest\.exclude has 1025 patterns, more than 1024/,
  });
  const request: ControlMessage = {
    type: 'transfer-request',
    transferId: 1,
    direction: 'pull',
    share: '',
    path: '',
    force: false,
    streams: 1,
    window: 1,
    exclude: new Array<string>(count).fill('a'),
  };
  t.throws(() => encodeControl(request), { name: 'RangeError', message: /1025 patterns, more than 1024/ });
});

t.test('a TransferRequest with an unknown existing-files value is refused', async (t) => {
  // Control.transfer_request { direction: PUSH (10 01), existing: 3 (68 03) }
  t.throws(() => decodeControl(hex('8201 04 1001 6803'), { maxBytes: MAX_BYTES }), {
    code: 'PROTOCOL',
    message: /TransferRequest\.existing is unknown value 3/,
  });
});

t.test('a TransferRequest carrying both exclude patterns and filter rules is refused both ways', async (t) => {
  // Control.transfer_request { direction: PULL (10 02), exclude: "a" (42 01 61), filter: { pattern "b" } (62 03 0a 01 62) }
  t.throws(() => decodeControl(hex('8201 0a 1002 420161 6203 0a0162'), { maxBytes: MAX_BYTES }), {
    code: 'PROTOCOL',
    message: /both exclude patterns and filter rules/,
  });
  const request: ControlMessage = {
    type: 'transfer-request',
    transferId: 1,
    direction: 'pull',
    share: '',
    path: '',
    force: false,
    streams: 1,
    window: 1,
    exclude: ['a'],
    filter: [{ pattern: 'b', include: true }],
  };
  t.throws(() => encodeControl(request), { name: 'RangeError', message: /both exclude and filter/ });
});

t.test('encode refuses entries and messages the wire cannot carry (RangeError: a local bug)', async (t) => {
  const manifest = (entry: ManifestEntry): ControlMessage => ({
    type: 'manifest',
    transferId: 1,
    entries: [entry],
    last: true,
  });
  const good = file('a/f', [10, 20]);
  t.throws(() => encodeControl(manifest({ ...good, chunkLengths: [30] })), {
    name: 'RangeError',
    message: /"a\/f": chunkIds holds 2 ids but chunkLengths holds 1/,
  });
  t.throws(() => encodeControl(manifest({ ...good, size: 31 })), {
    name: 'RangeError',
    message: /add up to 30 bytes but size is 31/,
  });
  t.throws(() => encodeControl(manifest({ ...good, mtimeMs: 1.5 })), { name: 'RangeError', message: /mtimeMs 1\.5/ });
  t.throws(() => encodeControl(manifest({ ...good, path: '' })), { name: 'RangeError', message: /path is empty/ });
  t.throws(() => encodeControl(manifest({ ...good, root: fill(1, 31) })), {
    name: 'RangeError',
    message: /root must be 32 bytes/,
  });
  t.throws(() => encodeControl({ type: 'want', transferId: 1, lacking: fill(0, 2), uniqueChunks: 8 }), {
    name: 'RangeError',
    message: /2 bytes for 8 chunks, expected 1/,
  });
  t.throws(() => encodeControl({ type: 'data-open', transferId: 2 ** 32, streamId: 0 }), RangeError);
  t.throws(
    () =>
      encodeControl({
        type: 'transfer-done',
        transferId: 1,
        files: 0,
        bytes: 2 ** 53,
        chunksReceived: 0,
        chunksSkipped: 0,
      }),
    RangeError,
  );
});

t.test('random bytes inside transfer envelope members never escape as anything but ClawpeerError', async (t) => {
  let seed = 4242;
  const rand = (): number => (seed = (seed * 1103515245 + 12345) >>> 0) >>> 24;
  for (let i = 0; i < 3000; i++) {
    const field = 16 + (i % 6);
    const inner = Uint8Array.from({ length: rand() % 48 }, rand);
    const body = new Uint8Array([(field << 3) | 2 | 0x80, 0x01, inner.length, ...inner]);
    try {
      decodeControl(body, { maxBytes: 1024 });
    } catch (err) {
      if (!isClawpeerError(err)) t.fail(`non-ClawpeerError for ${toHex(body)}: ${String(err)}`);
    }
  }
  t.pass('3000 random transfer bodies decoded or rejected cleanly');
});

// ---------------------------------------------------------------------------------------------
// splitManifest

function checkBatches(
  t: Test,
  batches: readonly ManifestMessage[],
  entries: readonly ManifestEntry[],
  maxBytes: number,
  transferId: number,
): void {
  t.ok(batches.length >= 1, 'at least one batch');
  t.same(
    batches.map((b) => b.last),
    batches.map((_, i) => i === batches.length - 1),
    'last only on the final batch',
  );
  t.ok(batches.every((b) => b.transferId === transferId && b.type === 'manifest'));
  const flat = batches.flatMap((b) => b.entries);
  t.equal(flat.length, entries.length);
  t.ok(
    flat.every((e, i) => e === entries[i]),
    'concatenation equals the input, in order',
  );
  batches.forEach((b, i) => {
    const size = encodeControl(b).length;
    if (size > maxBytes) t.fail(`batch ${i} encodes to ${size} > ${maxBytes} bytes`);
    if (b.entries.length > MAX_MANIFEST_ENTRIES_PER_MESSAGE) t.fail(`batch ${i} has ${b.entries.length} entries`);
    if (batches.length > 1 && b.entries.length === 0) t.fail(`batch ${i} of ${batches.length} is empty`);
    // Greedy: a batch is only cut when the next entry would not fit.
    const next = batches[i + 1]?.entries[0];
    if (next !== undefined && b.entries.length < MAX_MANIFEST_ENTRIES_PER_MESSAGE) {
      // The splitter reserves room for `last = true` in every batch (it may become the final one).
      const grown = encodeControl({ ...b, entries: [...b.entries, next], last: true }).length;
      if (grown <= maxBytes) t.fail(`batch ${i} was cut although the next entry fits (${grown} <= ${maxBytes})`);
    }
  });
}

t.test('property: splitManifest batches fit the limit and concatenate to the input', async (t) => {
  fc.assert(
    fc.property(
      fc.array(arbEntry, { maxLength: 40 }),
      fc.integer({ min: 700, max: 4000 }),
      arbU32,
      (entries, maxBytes, transferId) => {
        const batches = splitManifest(transferId, entries, maxBytes);
        checkBatches(t, batches, entries, maxBytes, transferId);
        for (const b of batches) t.same(decodeControl(encodeControl(b), { maxBytes }), b);
      },
    ),
    { numRuns: 150 },
  );
});

t.test('splitManifest: an empty list gives one batch with last = true', async (t) => {
  t.same(splitManifest(3, [], 64), [{ type: 'manifest', transferId: 3, entries: [], last: true }]);
});

t.test('splitManifest: a 10,000-file tree with 16 chunks per file fits 64 KiB frames', async (t) => {
  const maxBytes = 64 << 10;
  const entries = Array.from({ length: 10_000 }, (_, i) =>
    file(
      `dir${i % 50}/file-${i}.dat`,
      Array.from({ length: 16 }, (_, j) => 65_536 + j),
    ),
  );
  const batches = splitManifest(9, entries, maxBytes);
  checkBatches(t, batches, entries, maxBytes, 9);
  // ~600 bytes per entry: about 100 entries per 64 KiB batch.
  t.ok(batches.length > 80 && batches.length < 120, `${batches.length} batches`);
  const entryBytes = manifestEntryWireBytes(entries[0] ?? dir('x'));
  t.ok(entryBytes > 16 * 36 && entryBytes < 16 * 36 + 64, `${entryBytes} bytes per entry`);
});

t.test('splitManifest: at most MAX_MANIFEST_ENTRIES_PER_MESSAGE entries per batch', async (t) => {
  const entries = Array.from({ length: MAX_MANIFEST_ENTRIES_PER_MESSAGE + 1 }, () => dir('d'));
  const batches = splitManifest(1, entries, MAX_BYTES);
  t.same(
    batches.map((b) => [b.entries.length, b.last]),
    [
      [MAX_MANIFEST_ENTRIES_PER_MESSAGE, false],
      [1, true],
    ],
  );
});

t.test('splitManifest: an entry that alone exceeds the limit names its path and chunk count', async (t) => {
  const huge = file(
    'video/huge.mkv',
    Array.from({ length: 2000 }, () => 1 << 20),
  );
  t.throws(() => splitManifest(1, [dir('video'), huge], 64 << 10), {
    code: 'FRAME_TOO_LARGE',
    message: /"video\/huge\.mkv" with 2000 chunks needs \d+ bytes, more than the 65536-byte frame limit/,
  });
  t.throws(() => splitManifest(1, [{ ...huge, size: 1 }], MAX_BYTES), RangeError, 'entries are validated');
});

t.test('ListReply: entries are checked as manifest metadata, and counted before they are decoded', async (t) => {
  const entry = { path: 'a', kind: 1, size: 3, mode: 0o644, mtimeMs: 1 };
  const cases: [string, Uint8Array, RegExp][] = [
    [
      'empty path',
      raw({ listReply: { entries: [{ ...entry, path: '' }] } }),
      /ListReply\.entries\[0\] "": path is empty/,
    ],
    [
      'symlink without target',
      raw({ listReply: { entries: [{ ...entry, kind: 3 }] } }),
      /linkTarget is empty for a symlink/,
    ],
    [
      'file with a target',
      raw({ listReply: { entries: [{ ...entry, linkTarget: 'x' }] } }),
      /linkTarget must be empty for a file/,
    ],
    [
      'mode beyond 0o7777',
      raw({ listReply: { entries: [{ ...entry, mode: 0o10000 }] } }),
      /mode 4096 is not in 0\.\.0o7777/,
    ],
  ];
  for (const [name, body, message] of cases) {
    t.throws(() => decodeControl(body, { maxBytes: MAX_BYTES }), { code: 'PROTOCOL', message }, name);
  }
  const ok = decodeControl(
    raw({ listReply: { requestId: 7, entries: [entry], shares: [{ name: 'docs', readOnly: true }], last: true } }),
    { maxBytes: MAX_BYTES },
  );
  t.same(ok, {
    type: 'list-reply',
    requestId: 7,
    entries: [{ path: 'a', kind: 'file', size: 3, mode: 0o644, mtimeMs: 1, linkTarget: '' }],
    shares: [{ name: 'docs', readOnly: true, noDelete: false }],
    last: true,
  });
  // Control.list_reply (field 57: tag ca 03) { entries: 100001 x empty ListEntry (12 00) }.
  const count = 100_001;
  const body = new Uint8Array(2 + 3 + 2 * count);
  body.set(hex('ca03 c29a0c'));
  for (let i = 0; i < count; i++) body.set([0x12, 0x00], 5 + 2 * i);
  t.throws(() => decodeControl(body, { maxBytes: MAX_BYTES }), {
    code: 'PROTOCOL',
    message: /ListReply has 100001 entries, more than 100000/,
  });
});

t.test('TransferDone.published: at most the files it counts, and at most 10,000', async (t) => {
  const files = (n: number): { path: string }[] => Array.from({ length: n }, (_, i) => ({ path: `f${i}` }));
  t.throws(() => decodeControl(raw({ transferDone: { files: 1, published: files(2) } }), { maxBytes: MAX_BYTES }), {
    code: 'PROTOCOL',
    message: /lists 2 files, more than the 1 it counts/,
  });
  t.throws(
    () => decodeControl(raw({ transferDone: { files: 20_000, published: files(10_001) } }), { maxBytes: MAX_BYTES }),
    { code: 'PROTOCOL', message: /lists 10001 files, more than 10000/ },
  );
  t.match(
    decodeControl(raw({ transferDone: { files: 3, published: [{ path: 'a', replaced: true }] } }), {
      maxBytes: MAX_BYTES,
    }),
    { published: [{ path: 'a', replaced: true }] },
  );
});

t.test(
  'TransferDone.created: directories and symlinks round-trip; other kinds, unspecified kinds and over 10,000 entries are refused',
  async (t) => {
    const created = [
      { path: 'd', kind: 'dir' as const },
      { path: 'd/l', kind: 'symlink' as const, target: '../x', replaced: true },
    ];
    const done = {
      type: 'transfer-done' as const,
      transferId: 7,
      files: 0,
      bytes: 0,
      chunksReceived: 0,
      chunksSkipped: 0,
      created,
    };
    t.match(decodeControl(encodeControl(done), { maxBytes: MAX_BYTES }), { type: 'transfer-done', created });
    t.notOk(
      'created' in decodeControl(encodeControl({ ...done, created: [] }), { maxBytes: MAX_BYTES }),
      'none: no field',
    );
    const kind = clawpeer.v1.EntryKind;
    t.throws(
      () =>
        decodeControl(raw({ transferDone: { created: [{ path: 'f', kind: kind.ENTRY_KIND_FILE }] } }), {
          maxBytes: MAX_BYTES,
        }),
      { code: 'PROTOCOL', message: /lists "f" as a file: only directories and symlinks/ },
    );
    t.throws(() => decodeControl(raw({ transferDone: { created: [{ path: 'f' }] } }), { maxBytes: MAX_BYTES }), {
      code: 'PROTOCOL',
      message: /created kind is unspecified/,
    });
    const many = Array.from({ length: 10_001 }, (_, i) => ({ path: `d${i}`, kind: kind.ENTRY_KIND_DIR }));
    t.throws(() => decodeControl(raw({ transferDone: { created: many } }), { maxBytes: MAX_BYTES }), {
      code: 'PROTOCOL',
      message: /lists 10001 entries, more than 10000/,
    });
    t.throws(
      () => encodeControl({ ...done, created: many.map((e) => ({ path: e.path, kind: 'dir' as const })) }),
      RangeError,
      'nor will it encode them',
    );
  },
);

t.test('TransferDone.updated (itemize) round-trips, and is capped like published', async (t) => {
  const message: ControlMessage = {
    type: 'transfer-done',
    transferId: 3,
    files: 0,
    bytes: 0,
    chunksReceived: 0,
    chunksSkipped: 0,
    updated: [
      { path: 'a/b.txt', time: true, perms: false },
      { path: 'c', time: false, perms: true },
    ],
  };
  const back = decodeControl(encodeControl(message), { maxBytes: MAX_BYTES });
  t.same(back.type === 'transfer-done' ? back.updated : null, message.updated);
  const tooMany = Array.from({ length: 10_001 }, (_, i) => ({ path: `f${i}`, time: true, perms: true }));
  t.throws(() => encodeControl({ ...message, updated: tooMany }), {
    name: 'RangeError',
    message: /TransferDone\.updated lists 10001 files, more than 10000/,
  });
  const wire = clawpeer.v1.Control.encode({ transferDone: { transferId: 3, updated: tooMany } }).finish();
  t.throws(() => decodeControl(wire, { maxBytes: MAX_BYTES }), {
    code: 'PROTOCOL',
    message: /TransferDone\.updated lists 10001 files/,
  });
});

t.test('TransferDone.refused round-trips with its count, capped and checked like deleted', async (t) => {
  const message: ControlMessage = {
    type: 'transfer-done',
    transferId: 4,
    files: 1,
    bytes: 6,
    chunksReceived: 1,
    chunksSkipped: 0,
    refused: [
      { path: 'tree/locked/b.txt', reason: 'EPERM' },
      { path: 'tree/x', reason: 'ENAMETOOLONG' },
    ],
    refusedCount: 3,
  };
  const back = decodeControl(encodeControl(message), { maxBytes: MAX_BYTES });
  t.match(back, { type: 'transfer-done', refused: message.refused, refusedCount: 3 });
  const none = decodeControl(encodeControl({ ...message, refused: [], refusedCount: 0 }), { maxBytes: MAX_BYTES });
  t.notOk('refused' in none || 'refusedCount' in none, 'nothing refused: neither field');

  const tooMany = Array.from({ length: 1001 }, (_, i) => ({ path: `f${i}`, reason: 'EACCES' }));
  t.throws(() => encodeControl({ ...message, refused: tooMany, refusedCount: 5000 }), {
    name: 'RangeError',
    message: /TransferDone\.refused lists 1001 paths, more than 1000/,
  });
  const cases: [string, clawpeer.v1.TransferDone.$Properties, RegExp][] = [
    ['too many', { refused: tooMany, refusedCount: 5000 }, /TransferDone\.refused lists 1001 paths, more than 1000/],
    [
      'a count below the list',
      {
        refused: [
          { path: 'a', reason: 'EPERM' },
          { path: 'b', reason: 'EPERM' },
        ],
        refusedCount: 1,
      },
      /TransferDone\.refusedCount 1 is less than the 2 paths listed/,
    ],
    ['a list without a count', { refused: [{ path: 'a', reason: 'EPERM' }] }, /refusedCount 0 is less than the 1/],
    [
      'a reason that is no errno code',
      { refused: [{ path: 'a', reason: 'rm -rf /' }], refusedCount: 1 },
      /TransferDone\.refused gives "a" the reason "rm -rf \/", not an errno code/,
    ],
    ['an empty path', { refused: [{ path: '', reason: 'EPERM' }], refusedCount: 1 }, /lists an empty path/],
    // Printed to the user's terminal: an escape sequence could repaint what the CLI says.
    [
      'a path with a terminal escape',
      { refused: [{ path: 'a\u001b[2Jb', reason: 'EPERM' }], refusedCount: 1 },
      /TransferDone\.refused lists "a\\u001b\[2Jb": a control or bidi character/,
    ],
  ];
  for (const [name, done, messageRe] of cases) {
    const wire = clawpeer.v1.Control.encode({ transferDone: { transferId: 4, ...done } }).finish();
    t.throws(() => decodeControl(wire, { maxBytes: MAX_BYTES }), { code: 'PROTOCOL', message: messageRe }, name);
  }
  t.throws(() => encodeControl({ ...message, refused: [{ path: 'a', reason: 'nope' }] }), {
    name: 'RangeError',
    message: /not an errno code/,
  });
});

t.test("Manifest.unreadable (a pull's sender) round-trips with its count, capped and checked", async (t) => {
  const message: ManifestMessage = {
    type: 'manifest',
    transferId: 5,
    entries: [],
    last: true,
    unreadable: [
      { path: 'tree/caf\\#377.txt', error: 'its name is not valid UTF-8' },
      { path: 'tree/secret', error: 'EACCES: permission denied' },
    ],
    unreadableCount: 3,
  };
  const back = decodeControl(encodeControl(message), { maxBytes: MAX_BYTES });
  t.match(back, { type: 'manifest', last: true, unreadable: message.unreadable, unreadableCount: 3 });
  const none = decodeControl(encodeControl({ ...message, unreadable: [], unreadableCount: 0 }), {
    maxBytes: MAX_BYTES,
  });
  t.notOk('unreadable' in none || 'unreadableCount' in none, 'all read: neither field');

  const tooMany = Array.from({ length: 1001 }, (_, i) => ({ path: `f${i}`, error: 'EIO: i/o error' }));
  t.throws(() => encodeControl({ ...message, unreadable: tooMany, unreadableCount: 5000 }), {
    name: 'RangeError',
    message: /Manifest\.unreadable lists 1001 paths, more than 1000/,
  });
  t.throws(() => encodeControl({ ...message, last: false }), {
    name: 'RangeError',
    message: /on a batch that is not the last/,
  });
  const cases: [string, clawpeer.v1.Manifest.$Properties, RegExp][] = [
    ['too many', { last: true, unreadable: tooMany, unreadableCount: 5000 }, /lists 1001 paths, more than 1000/],
    [
      'a count below the list',
      {
        last: true,
        unreadable: [
          { path: 'a', error: 'x' },
          { path: 'b', error: 'x' },
        ],
        unreadableCount: 1,
      },
      /Manifest\.unreadableCount 1 is less than the 2 paths listed/,
    ],
    ['a list without a count', { last: true, unreadable: [{ path: 'a', error: 'x' }] }, /unreadableCount 0 is less/],
    ['not on the last batch', { last: false, unreadable: [], unreadableCount: 2 }, /not the last/],
    ['an empty path', { last: true, unreadable: [{ path: '', error: 'x' }], unreadableCount: 1 }, /an empty path/],
    [
      'a reason too long',
      { last: true, unreadable: [{ path: 'a', error: 'e'.repeat(1025) }], unreadableCount: 1 },
      /a reason of 1025 bytes, more than 1024/,
    ],
    [
      'a path with a bidi override',
      { last: true, unreadable: [{ path: 'txt.\u202eexe', error: 'x' }], unreadableCount: 1 },
      /Manifest\.unreadable lists .*: a control or bidi character/,
    ],
  ];
  for (const [name, manifest, messageRe] of cases) {
    const wire = pb.Control.encode({ manifest: { transferId: 5, ...manifest } }).finish();
    t.throws(() => decodeControl(wire, { maxBytes: MAX_BYTES }), { code: 'PROTOCOL', message: messageRe }, name);
  }
  // A reason is free text: its control characters are blanked, not refused, as a peer's Error's.
  const escaped = pb.Control.encode({
    manifest: {
      transferId: 5,
      last: true,
      unreadable: [{ path: 'a', error: 'EACCES\u001b[31m red' }],
      unreadableCount: 1,
    },
  }).finish();
  t.match(
    decodeControl(escaped, { maxBytes: MAX_BYTES }),
    { unreadable: [{ path: 'a', error: 'EACCES [31m red' }] },
    "a reason's escape is blanked",
  );
});

t.test("TransferDone's listed paths: a control or bidi character is refused both ways", async (t) => {
  // What the CLI prints as it comes (--delete's removals, --itemize-changes' lines): an escape
  // sequence could repaint the user's terminal, a bidi override disguise a name.
  const done = {
    type: 'transfer-done' as const,
    transferId: 9,
    files: 1,
    bytes: 0,
    chunksReceived: 0,
    chunksSkipped: 0,
  };
  const normal: ControlMessage = {
    ...done,
    deleted: ['old/gone.txt'],
    deletedCount: 2,
    published: [{ path: 'a/b.txt', replaced: false }],
    created: [
      { path: 'a', kind: 'dir' },
      { path: 'a/l', kind: 'symlink', target: '../b.txt', replaced: false },
    ],
    updated: [{ path: 'a/c.txt', time: true, perms: false }],
  };
  t.same(decodeControl(encodeControl(normal), { maxBytes: MAX_BYTES }), normal, 'safe paths round-trip');

  const kind = clawpeer.v1.EntryKind;
  for (const [bad, label] of [
    ['a\u001b[2Jb', 'an ESC [2J'],
    ['txt.\u202eexe', 'a U+202E'],
  ] as const) {
    const shown = JSON.stringify(bad).replace(/[[\]\\.]/g, '\\$&');
    const cases: [string, clawpeer.v1.TransferDone.$Properties, Partial<ControlMessage>][] = [
      ['deleted', { deleted: [bad], deletedCount: 1 }, { deleted: [bad], deletedCount: 1 }],
      ['published', { files: 1, published: [{ path: bad }] }, { published: [{ path: bad, replaced: false }] }],
      ['updated', { updated: [{ path: bad, time: true }] }, { updated: [{ path: bad, time: true, perms: false }] }],
      [
        'created',
        { created: [{ path: bad, kind: kind.ENTRY_KIND_DIR }] },
        { created: [{ path: bad, kind: 'dir' as const }] },
      ],
      [
        'created',
        { created: [{ path: bad, kind: kind.ENTRY_KIND_SYMLINK, linkTarget: 't' }] },
        { created: [{ path: bad, kind: 'symlink' as const, target: 't', replaced: false }] },
      ],
    ];
    for (const [field, wireDone, message] of cases) {
      const wire = clawpeer.v1.Control.encode({ transferDone: { transferId: 9, ...wireDone } }).finish();
      const messageRe = new RegExp(`TransferDone\\.${field} lists ${shown}: a control or bidi character`);
      t.throws(
        () => decodeControl(wire, { maxBytes: MAX_BYTES }),
        { code: 'PROTOCOL', message: messageRe },
        `decode: ${field} with ${label}`,
      );
      t.throws(
        () => encodeControl({ ...done, ...message } as ControlMessage),
        { name: 'RangeError', message: messageRe },
        `encode: ${field} with ${label}`,
      );
    }
  }
});

t.test("TransferDone.created: a symlink's target is free text, its unsafe characters blanked both ways", async (t) => {
  // A manifest's linkTarget may hold any character (only its length and Unicode are checked),
  // so a listener may have made such a link: the target is shown blanked, not refused.
  const created = [{ path: 'l', kind: 'symlink' as const, target: 'x\u001b[2J\u202ey', replaced: true }];
  const blanked = [{ ...created[0], target: 'x [2J y' }];
  const done: ControlMessage = {
    type: 'transfer-done',
    transferId: 9,
    files: 0,
    bytes: 0,
    chunksReceived: 0,
    chunksSkipped: 0,
    created,
  };
  const encoded = encodeControl(done);
  const sent = clawpeer.v1.Control.decode(encoded).transferDone?.created?.[0]?.linkTarget;
  t.equal(sent, 'x [2J y', 'encoded blanked');
  t.same(decodeControl(encoded, { maxBytes: MAX_BYTES }), { ...done, created: blanked });
  const kind = clawpeer.v1.EntryKind;
  const wire = clawpeer.v1.Control.encode({
    transferDone: {
      transferId: 9,
      created: [{ path: 'l', kind: kind.ENTRY_KIND_SYMLINK, linkTarget: 'x\u001b[2J\u202ey', replaced: true }],
    },
  }).finish();
  t.same(decodeControl(wire, { maxBytes: MAX_BYTES }), { ...done, created: blanked }, "a peer's raw target: blanked");
});
