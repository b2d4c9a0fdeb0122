// Sync control messages (envelope fields 48-53): pinned bytes, round trips, and the structural
// checks a peer's messages must pass.
import t, { type Test } from 'tap';
import { isClawpeerError } from '../../src/errors.js';
import { clawpeer } from '../../src/protocol/gen/clawpeer.js';
import {
  decodeControl,
  encodeControl,
  encodeControlFrame,
  MAX_SYNC_ITEMS_PER_MESSAGE,
  MAX_SYNC_RECONCILE_BYTES,
  MAX_SYNC_RECORD_BYTES,
  type ControlMessage,
} from '../../src/protocol/messages.js';
import { hex, toHex } from './hex.js';

const pb = clawpeer.v1;
const MAX_BYTES = 16 << 20;

// Envelope fields 48..53 take two-byte tags: (field << 3 | 2) as a varint, 0x82 0x03 for 48.
const VECTORS: { name: string; message: ControlMessage; wire: string }[] = [
  {
    name: 'SyncRequest',
    message: { type: 'sync-request', transferId: 3, share: 'docs', mode: 'two-way', reconcile: Uint8Array.of(1, 2) },
    wire: `
      01 00000011                 # frame: type CONTROL, body 17 bytes
      8203 0e                     # Control.sync_request (field 48, LEN) 14 bytes
      08 03                       #   transfer_id (1) = 3
      12 04 646f6373              #   share (2) = "docs"
      18 01                       #   mode (3) = TWO_WAY
      22 02 0102                  #   reconcile (4): 2 bytes
    `,
  },
  {
    name: 'SyncRequest (with a rate limit, hello to follow)',
    message: {
      type: 'sync-request',
      transferId: 3,
      share: '',
      mode: 'two-way',
      reconcile: new Uint8Array(0),
      rateLimit: 1 << 20,
    },
    wire: `
      01 0000000b                 # frame: type CONTROL, body 11 bytes
      8203 08                     # Control.sync_request (field 48, LEN) 8 bytes
      08 03                       #   transfer_id (1) = 3
      18 01                       #   mode (3) = TWO_WAY
      28 808040                   #   rate_limit (5) = 1048576 bytes per second
    `,
  },
  {
    name: 'SyncRequest (dry run)',
    message: {
      type: 'sync-request',
      transferId: 3,
      share: '',
      mode: 'two-way',
      reconcile: new Uint8Array(0),
      dryRun: true,
    },
    wire: `
      01 00000009                 # frame: type CONTROL, body 9 bytes
      8203 06                     # Control.sync_request (field 48, LEN) 6 bytes
      08 03                       #   transfer_id (1) = 3
      18 01                       #   mode (3) = TWO_WAY
      30 01                       #   dry_run (6) = true
    `,
  },
  {
    name: 'SyncRequest (--fsync=none)',
    message: {
      type: 'sync-request',
      transferId: 3,
      share: '',
      mode: 'two-way',
      reconcile: new Uint8Array(0),
      noFsync: true,
    },
    wire: `
      01 00000009                 # frame: type CONTROL, body 9 bytes
      8203 06                     # Control.sync_request (field 48, LEN) 6 bytes
      08 03                       #   transfer_id (1) = 3
      18 01                       #   mode (3) = TWO_WAY
      50 01                       #   no_fsync (10) = true
    `,
  },
  {
    name: 'SyncRequest (fetch only)',
    message: {
      type: 'sync-request',
      transferId: 3,
      share: '',
      mode: 'receive-only',
      reconcile: new Uint8Array(0),
      fetchOnly: true,
    },
    wire: `
      01 00000009                 # frame: type CONTROL, body 9 bytes
      8203 06                     # Control.sync_request (field 48, LEN) 6 bytes
      08 03                       #   transfer_id (1) = 3
      18 03                       #   mode (3) = RECEIVE_ONLY
      38 01                       #   fetch_only (7) = true
    `,
  },
  {
    name: "SyncRequest of a listener's folder service",
    message: {
      type: 'sync-request',
      transferId: 3,
      share: '',
      mode: 'two-way',
      reconcile: new Uint8Array(0),
      byFolderService: true,
    },
    wire: `
      01 00000009                 # frame: type CONTROL, body 9 bytes
      8203 06                     # Control.sync_request (field 48, LEN) 6 bytes
      08 03                       #   transfer_id (1) = 3
      18 01                       #   mode (3) = TWO_WAY
      58 01                       #   by_folder_service (11) = true
    `,
  },
  {
    name: "SyncRequest (send-only, asking for the server's heads)",
    message: {
      type: 'sync-request',
      transferId: 3,
      share: '',
      mode: 'send-only',
      reconcile: new Uint8Array(0),
      peerHeads: true,
    },
    wire: `
      01 00000009                 # frame: type CONTROL, body 9 bytes
      8203 06                     # Control.sync_request (field 48, LEN) 6 bytes
      08 03                       #   transfer_id (1) = 3
      18 02                       #   mode (3) = SEND_ONLY
      60 01                       #   peer_heads (12) = true
    `,
  },
  {
    name: "SyncAccept of a send-only folder asking for the client's heads",
    message: { type: 'sync-accept', transferId: 3, keptFolder: true, peerHeads: true },
    wire: `
      01 00000009                 # frame: type CONTROL, body 9 bytes
      8a03 06                     # Control.sync_accept (field 49, LEN) 6 bytes
      08 03                       #   transfer_id (1) = 3
      10 01                       #   kept_folder (2) = true
      18 01                       #   peer_heads (3) = true
    `,
  },
  {
    name: 'SyncAccept',
    message: { type: 'sync-accept', transferId: 3 },
    wire: `
      01 00000005                 # frame: type CONTROL, body 5 bytes
      8a03 02                     # Control.sync_accept (field 49, LEN) 2 bytes
      08 03                       #   transfer_id (1) = 3
    `,
  },
  {
    name: 'SyncAccept of a folder a folder service keeps',
    message: { type: 'sync-accept', transferId: 3, keptFolder: true },
    wire: `
      01 00000007                 # frame: type CONTROL, body 7 bytes
      8a03 04                     # Control.sync_accept (field 49, LEN) 4 bytes
      08 03                       #   transfer_id (1) = 3
      10 01                       #   kept_folder (2) = true
    `,
  },
  {
    name: 'SyncReconcile',
    message: { type: 'sync-reconcile', transferId: 3, payload: Uint8Array.of(1, 2) },
    wire: `
      01 00000009                 # frame: type CONTROL, body 9 bytes
      9203 06                     # Control.sync_reconcile (field 50, LEN) 6 bytes
      08 03                       #   transfer_id (1) = 3
      12 02 0102                  #   payload (2): 2 bytes
    `,
  },
  {
    name: 'SyncRevisions',
    message: {
      type: 'sync-revisions',
      transferId: 3,
      records: [Uint8Array.of(0xaa, 0xbb), Uint8Array.of(0xcc)],
      last: true,
    },
    wire: `
      01 0000000e                 # frame: type CONTROL, body 14 bytes
      9a03 0b                     # Control.sync_revisions (field 51, LEN) 11 bytes
      08 03                       #   transfer_id (1) = 3
      12 02 aabb                  #   records (2) [0]
      12 01 cc                    #   records (2) [1]
      18 01                       #   last (3) = true
    `,
  },
  {
    name: 'SyncRevisions (pruned ids)',
    message: {
      type: 'sync-revisions',
      transferId: 3,
      records: [],
      last: true,
      pruned: [new Uint8Array(32).fill(0x22)],
    },
    wire: `
      01 00000029                 # frame: type CONTROL, body 41 bytes
      9a03 26                     # Control.sync_revisions (field 51, LEN) 38 bytes
      08 03                       #   transfer_id (1) = 3
      18 01                       #   last (3) = true
      22 20 2222222222222222222222222222222222222222222222222222222222222222 #   pruned (4) [0]
    `,
  },
  {
    name: 'SyncFetch',
    message: {
      type: 'sync-fetch',
      transferId: 3,
      fetchId: 4,
      items: [{ path: 'a', root: new Uint8Array(32).fill(0x11) }],
      last: true,
    },
    wire: `
      01 00000030                 # frame: type CONTROL, body 48 bytes
      a203 2d                     # Control.sync_fetch (field 52, LEN) 45 bytes
      08 03                       #   transfer_id (1) = 3
      10 04                       #   fetch_id (2) = 4
      1a 25                       #   items (3): 37 bytes
      0a 01 61                    #     path (1) = "a"
      12 20 11*32                 #     root (2): 32 bytes
      20 01                       #   last (4) = true
    `,
  },
  {
    name: 'SyncDone',
    message: { type: 'sync-done', transferId: 3 },
    wire: `
      01 00000005                 # frame: type CONTROL, body 5 bytes
      aa03 02                     # Control.sync_done (field 53, LEN) 2 bytes
      08 03                       #   transfer_id (1) = 3
    `,
  },
];

for (const v of VECTORS) {
  t.test(`${v.name}: exact bytes and round trip`, async (t) => {
    t.equal(toHex(encodeControlFrame(v.message)), toHex(hex(v.wire)));
    t.same(decodeControl(encodeControl(v.message), { maxBytes: MAX_BYTES }), v.message);
  });
}

t.test("SyncDone's no-space report round-trips; a peer's unfit one is PROTOCOL, ours a RangeError", async (t) => {
  const noSpace = {
    files: 3,
    needBytes: 12 << 30,
    freeBytes: 8 << 20,
    keepBytes: 1 << 20,
    paths: ['big.bin', 'v/x.mp4'],
  };
  const m: ControlMessage = { type: 'sync-done', transferId: 3, noSpace };
  t.same(decodeControl(encodeControl(m), { maxBytes: MAX_BYTES }), m);
  const enc = (paths: string[]): Uint8Array =>
    pb.Control.encode({ syncDone: { transferId: 1, noSpace: { ...noSpace, paths } } }).finish();
  refuses(t, enc(['a\u202eb']), /SyncDone\.noSpace\.paths lists .*a control or bidi character/, 'a bidi path');
  refuses(t, enc(Array.from({ length: 21 }, (_, i) => `f${i}`)), /lists 21 paths, more than 20/, 'too many paths');
  refuses(t, enc(['a', 'b', 'c', 'd']), /names 4 paths of 3 files/, 'more paths than files it counts');
  t.throws(
    () => encodeControl({ type: 'sync-done', transferId: 1, noSpace: { ...noSpace, paths: ['a\nb'] } }),
    RangeError,
  );
});

t.test('every mode round-trips', async (t) => {
  for (const mode of ['two-way', 'send-only', 'receive-only'] as const) {
    const m: ControlMessage = { type: 'sync-request', transferId: 1, share: '', mode, reconcile: Uint8Array.of(9) };
    t.same(decodeControl(encodeControl(m), { maxBytes: MAX_BYTES }), m);
  }
});

function refuses(t: Test, bytes: Uint8Array, pattern: RegExp, what: string): void {
  try {
    decodeControl(bytes, { maxBytes: MAX_BYTES });
    t.fail(`${what}: decoded`);
  } catch (err) {
    t.ok(isClawpeerError(err, 'PROTOCOL') && pattern.test(err.message), `${what}: ${(err as Error).message}`);
  }
}

t.test("a peer's malformed sync messages are PROTOCOL errors naming the field", async (t) => {
  const enc = (body: clawpeer.v1.Control.$Properties): Uint8Array => pb.Control.encode(body).finish();
  refuses(
    t,
    enc({ syncRequest: { transferId: 1, share: 's', mode: 0, reconcile: Uint8Array.of(1) } }),
    /SyncRequest\.mode is unspecified/,
    'mode 0',
  );
  refuses(
    t,
    enc({ syncRequest: { transferId: 1, share: 's', mode: 9 as clawpeer.v1.SyncMode, reconcile: Uint8Array.of(1) } }),
    /SyncRequest\.mode is unknown value 9/,
    'unknown mode',
  );
  refuses(
    t,
    enc({
      syncRequest: { transferId: 1, share: 's', mode: 1, reconcile: new Uint8Array(MAX_SYNC_RECONCILE_BYTES + 1) },
    }),
    /SyncRequest\.reconcile is \d+ bytes/,
    'oversized hello',
  );
  refuses(
    t,
    enc({ syncReconcile: { transferId: 1, payload: new Uint8Array(MAX_SYNC_RECONCILE_BYTES + 1) } }),
    /SyncReconcile\.payload is \d+ bytes/,
    'oversized payload',
  );
  refuses(
    t,
    enc({ syncRevisions: { transferId: 1, records: [new Uint8Array(MAX_SYNC_RECORD_BYTES + 1)], last: true } }),
    /SyncRevisions\.records\[0\] is \d+ bytes/,
    'oversized record',
  );
  refuses(
    t,
    enc({ syncRevisions: { transferId: 1, records: [new Uint8Array(0)], last: true } }),
    /records\[0\] is 0 bytes/,
    'empty record',
  );
  refuses(
    t,
    enc({ syncFetch: { transferId: 1, fetchId: 2, items: [{ path: 'a', root: new Uint8Array(31) }] } }),
    /SyncFetch\.items\[0\] "a": root must be 32 bytes/,
    'short root',
  );
  refuses(
    t,
    enc({ syncFetch: { transferId: 1, fetchId: 2, items: [{ path: '', root: new Uint8Array(32) }] } }),
    /path is empty/,
    'empty path',
  );
  const many = Array.from({ length: MAX_SYNC_ITEMS_PER_MESSAGE + 1 }, () => Uint8Array.of(1));
  refuses(
    t,
    enc({ syncRevisions: { transferId: 1, records: many, last: true } }),
    /has 100001 items/,
    'too many records, counted before decoding',
  );
});

t.test('the encoder refuses what the decoder would (our own bug, RangeError)', async (t) => {
  t.throws(() => encodeControl({ type: 'sync-reconcile', transferId: 1, payload: new Uint8Array(0) }), RangeError);
  t.throws(
    () =>
      encodeControl({
        type: 'sync-fetch',
        transferId: 1,
        fetchId: 1,
        items: [{ path: 'x', root: new Uint8Array(3) }],
        last: true,
      }),
    RangeError,
  );
  t.throws(
    () =>
      encodeControl({
        type: 'sync-request',
        transferId: 1,
        share: '',
        mode: 'both' as never,
        reconcile: Uint8Array.of(1),
      }),
    RangeError,
  );
  t.throws(
    () =>
      encodeControl({
        type: 'sync-request',
        transferId: 1,
        share: '',
        mode: 'two-way',
        reconcile: Uint8Array.of(1),
        rateLimit: 0,
      }),
    /rateLimit must be > 0/,
  );
});

t.test('a SyncRequest may leave its hello for the first SyncReconcile (empty reconcile)', async (t) => {
  const m: ControlMessage = {
    type: 'sync-request',
    transferId: 7,
    share: 'docs',
    mode: 'send-only',
    reconcile: new Uint8Array(0),
  };
  const back = decodeControl(encodeControl(m), { maxBytes: MAX_BYTES });
  t.equal(back.type, 'sync-request');
  t.equal(back.type === 'sync-request' ? back.reconcile.length : -1, 0);
});
