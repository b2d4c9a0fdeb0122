import t from 'tap';
import { isClawpeerError } from '../../src/errors.js';
import { FEATURES, type Capabilities } from '../../src/protocol/capabilities.js';
import {
  decodeControl,
  decodeControlWithRaw,
  encodeControl,
  encodeControlFrame,
  encodeControlFromRaw,
  encodeHelloBody,
  HELLO_SIGNATURE_FIELD,
  MAX_ERROR_MESSAGE_CHARS,
  stripField,
  type ControlMessage,
} from '../../src/protocol/messages.js';
import { FRAME_HEADER_BYTES } from '../../src/protocol/frame-codec.js';
import { clawpeer } from '../../src/protocol/gen/clawpeer.js';
import { hex, toHex } from './hex.js';

const fill = (byte: number, n: number): Uint8Array => new Uint8Array(n).fill(byte);

const CAPS: Capabilities = {
  aeadSuites: ['aes-256-gcm', 'chacha20-poly1305'],
  compression: ['zstd', 'none'],
  chunking: [{ minBytes: 65536, avgBytes: 262144, maxBytes: 1048576 }],
  maxWindowChunks: 64,
  maxStreams: 8,
  maxFrameBytes: 16 << 20,
  features: ['sync', 'resume', 'history'],
};

const CAPS_HEX = `
      0a 02 01 02                 #   aead_suites (1, packed): AES_256_GCM, CHACHA20_POLY1305
      12 02 02 01                 #   compression (2, packed): ZSTD, NONE
      1a 0c                       #   chunking (3): ChunkingParams, 12 bytes
        08 808004                 #     min_bytes = 65536
        10 808010                 #     avg_bytes = 262144
        18 808040                 #     max_bytes = 1048576
      20 40                       #   max_window_chunks (4) = 64
      28 08                       #   max_streams (5) = 8
      30 80808008                 #   max_frame_bytes (6) = 16777216
      3a 03 01 02 03              #   features (7, packed): SYNC, RESUME, HISTORY
`;

// Every control message as a whole CONTROL frame, byte for byte.
const VECTORS: { name: string; message: ControlMessage; wire: string }[] = [
  {
    name: 'Hello',
    message: {
      type: 'hello',
      minVersion: 1,
      maxVersion: 2,
      nodePublicKey: fill(0x11, 32),
      caps: CAPS,
      ephemeralPublicKey: fill(0x22, 32),
      nonce: fill(0x33, 32),
      signature: fill(0x44, 64),
    },
    wire: `
      01 000000d5                 # frame: type CONTROL, body 213 bytes
      0a d201                     # Control.hello (field 1, LEN) 210 bytes
      08 01                       #   min_version (1) = 1
      10 02                       #   max_version (2) = 2
      1a 20 11*32                 #   node_public_key (3): 32 bytes
      22 24                       #   caps (4): Capabilities, 36 bytes
      ${CAPS_HEX}
      2a 20 22*32                 #   ephemeral_public_key (5): 32 bytes
      32 20 33*32                 #   nonce (6): 32 bytes
      3a 40 44*64                 #   signature (7): 64 bytes
    `,
  },
  {
    name: 'Welcome',
    message: {
      type: 'welcome',
      version: 1,
      nodePublicKey: fill(0x55, 32),
      caps: { ...CAPS, aeadSuites: ['chacha20-poly1305'], compression: ['none'], features: ['sync'] },
      ephemeralPublicKey: fill(0x66, 32),
      nonce: fill(0x77, 32),
      signature: fill(0x88, 64),
    },
    wire: `
      01 000000cf                 # frame: type CONTROL, body 207 bytes
      12 cc01                     # Control.welcome (field 2, LEN) 204 bytes
      08 01                       #   version (1) = 1
      12 20 55*32                 #   node_public_key (2): 32 bytes
      1a 20                       #   caps (3): Capabilities, 32 bytes
        0a 01 02                  #     aead_suites: CHACHA20_POLY1305
        12 01 01                  #     compression: NONE
        1a 0c 08808004 10808010 18808040  # chunking: 65536 / 262144 / 1048576
        20 40                     #     max_window_chunks = 64
        28 08                     #     max_streams = 8
        30 80808008               #     max_frame_bytes = 16777216
        3a 01 01                  #     features: SYNC
      22 20 66*32                 #   ephemeral_public_key (4): 32 bytes
      2a 20 77*32                 #   nonce (5): 32 bytes
      32 40 88*64                 #   signature (6): 64 bytes
    `,
  },
  {
    name: 'Finished',
    message: { type: 'finished', signature: fill(0x99, 64) },
    wire: `
      01 00000044                 # frame: type CONTROL, body 68 bytes
      1a 42                       # Control.finished (field 3, LEN) 66 bytes
      0a 40 99*64                 #   signature (1): 64 bytes
    `,
  },
  {
    name: 'Error',
    message: { type: 'error', code: 4, message: 'peer speaks protocol 7..9, we speak 1..1' },
    wire: `
      01 0000002e                 # frame: type CONTROL, body 46 bytes
      22 2c                       # Control.error (field 4, LEN) 44 bytes
      08 04                       #   code (1) = 4 (VERSION_MISMATCH)
      12 28                       #   message (2): 40 bytes of UTF-8
        7065657220737065616b732070726f746f636f6c20372e2e392c20776520737065616b20312e2e31
    `,
  },
  {
    name: 'Ping',
    message: { type: 'ping', seq: 1, sentTimeUs: 1_700_000_000_000_000 },
    wire: `
      01 0000000d                 # frame: type CONTROL, body 13 bytes
      2a 0b                       # Control.ping (field 5, LEN) 11 bytes
      08 01                       #   seq (1) = 1
      10 8080f9c0c1c48203         #   sent_time_us (2) = 1.7e15 (uint64 varint)
    `,
  },
  {
    name: 'Pong',
    message: { type: 'pong', seq: 1, echoedTimeUs: 1_700_000_000_000_000 },
    wire: `
      01 0000000d                 # frame: type CONTROL, body 13 bytes
      32 0b                       # Control.pong (field 6, LEN) 11 bytes
      08 01                       #   seq (1) = 1
      10 8080f9c0c1c48203         #   echoed_time_us (2) = 1.7e15
    `,
  },
  {
    name: 'PairRequest',
    message: { type: 'pair-request', proof: fill(0x77, 32), name: 'bob' },
    wire: `
      01 00000029                 # frame: type CONTROL, body 41 bytes
      3a 27                       # Control.pair_request (field 7, LEN) 39 bytes
      0a 20 77*32                 #   proof (1): 32 bytes
      12 03 626f62                #   name (2) = "bob"
    `,
  },
  {
    name: 'PairAccept',
    message: { type: 'pair-accept', proof: fill(0x88, 32), name: '' },
    wire: `
      01 00000024                 # frame: type CONTROL, body 36 bytes
      42 22                       # Control.pair_accept (field 8, LEN) 34 bytes
      0a 20 88*32                 #   proof (1): 32 bytes (an empty name is not sent)
    `,
  },
  {
    name: 'CodePairStart',
    message: { type: 'code-pair-start', nameplate: '7', share: fill(0x11, 32) },
    wire: `
      01 00000027                 # frame: type CONTROL, body 39 bytes
      4a 25                       # Control.code_pair_start (field 9, LEN) 37 bytes
      0a 01 37                    #   nameplate (1) = "7"
      12 20 11*32                 #   share (2): 32 bytes
    `,
  },
  {
    name: 'CodePairReply',
    message: { type: 'code-pair-reply', share: fill(0x22, 32), confirm: fill(0x33, 32) },
    wire: `
      01 00000046                 # frame: type CONTROL, body 70 bytes
      52 44                       # Control.code_pair_reply (field 10, LEN) 68 bytes
      0a 20 22*32                 #   share (1): 32 bytes
      12 20 33*32                 #   confirm (2): 32 bytes
    `,
  },
  {
    name: 'CodePairFinish',
    message: { type: 'code-pair-finish', confirm: fill(0x44, 32), sealed: fill(0x55, 3) },
    wire: `
      01 00000029                 # frame: type CONTROL, body 41 bytes
      5a 27                       # Control.code_pair_finish (field 11, LEN) 39 bytes
      0a 20 44*32                 #   confirm (1): 32 bytes
      12 03 555555                #   sealed (2): 3 bytes
    `,
  },
  {
    name: 'CodePairDone',
    message: { type: 'code-pair-done', sealed: fill(0x66, 2) },
    wire: `
      01 00000006                 # frame: type CONTROL, body 6 bytes
      62 04                       # Control.code_pair_done (field 12, LEN) 4 bytes
      0a 02 6666                  #   sealed (1): 2 bytes
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

t.test('a pairing proof of the wrong length, or an over-long name, is refused both ways', async (t) => {
  t.throws(() => decodeControl(hex('3a 12 0a10 77*16'), { maxBytes: 1024 }), {
    code: 'PROTOCOL',
    message: /PairRequest\.proof must be 32 bytes, got 16/,
  });
  t.throws(() => decodeControl(hex('42 00'), { maxBytes: 1024 }), {
    code: 'PROTOCOL',
    message: /PairAccept\.proof must be 32 bytes, got 0/,
  });
  t.throws(() => encodeControl({ type: 'pair-request', proof: fill(1, 31), name: '' }), RangeError);
  t.throws(() => encodeControl({ type: 'pair-accept', proof: fill(1, 32), name: 'x'.repeat(65) }), {
    name: 'RangeError',
    message: /longer than 64 bytes/,
  });
});

t.test(
  'code-pair messages: a short share, a bad nameplate, empty or over-long sealed info are refused both ways',
  async (t) => {
    t.throws(() => decodeControl(hex('4a 15 0a01 37 1210 11*16'), { maxBytes: 1024 }), {
      code: 'PROTOCOL',
      message: /CodePairStart\.share must be 32 bytes, got 16/,
    });
    t.throws(() => decodeControl(hex('4a 25 0a01 30 1220 11*32'), { maxBytes: 1024 }), {
      code: 'PROTOCOL',
      message: /CodePairStart\.nameplate "0" is not 1 to 6 digits/,
    });
    t.throws(() => decodeControl(hex('62 00'), { maxBytes: 1024 }), {
      code: 'PROTOCOL',
      message: /CodePairDone\.sealed must be 1 to 4096 bytes, got 0/,
    });
    t.throws(() => decodeControl(hex('52 22 0a20 22*32'), { maxBytes: 1024 }), {
      code: 'PROTOCOL',
      message: /CodePairReply\.confirm must be 32 bytes, got 0/,
    });
    t.throws(() => encodeControl({ type: 'code-pair-start', nameplate: '1234567', share: fill(1, 32) }), RangeError);
    t.throws(
      () => encodeControl({ type: 'code-pair-finish', confirm: fill(1, 32), sealed: fill(1, 4097) }),
      RangeError,
    );
  },
);

t.test('uint64 fields decode as plain numbers, never Long objects', async (t) => {
  const big = Number.MAX_SAFE_INTEGER;
  const decoded = decodeControl(encodeControl({ type: 'ping', seq: big, sentTimeUs: 2 ** 40 + 3 }), { maxBytes: 64 });
  t.same(decoded, { type: 'ping', seq: big, sentTimeUs: 2 ** 40 + 3 });
  if (decoded.type !== 'ping') throw new Error('not a ping');
  t.equal(typeof decoded.seq, 'number');
  t.equal(typeof decoded.sentTimeUs, 'number');
});

t.test('a uint64 above 2^53-1 is a PROTOCOL error naming the field', async (t) => {
  // Control.ping { seq = 2^63 }: varint 80 80 80 80 80 80 80 80 80 01
  const body = hex('2a 0b 08 80808080808080808001');
  t.throws(() => decodeControl(body, { maxBytes: 64 }), { code: 'PROTOCOL', message: /Ping\.seq .* exceeds 2\^53-1/ });
});

t.test('decode enforces the maximum length before parsing', async (t) => {
  const body = encodeControl(VECTORS[0]?.message ?? { type: 'finished', signature: fill(1, 64) });
  t.throws(() => decodeControl(body, { maxBytes: body.length - 1 }), { code: 'FRAME_TOO_LARGE' });
  t.doesNotThrow(() => decodeControl(body, { maxBytes: body.length }));
});

t.test('malformed envelopes are PROTOCOL errors that say what was wrong', async (t) => {
  const cases: [string, string, RegExp][] = [
    ['empty', '', /no body/],
    ['unknown member (field 15)', '7a 00', /unknown control message \(envelope field 15\)/],
    ['unknown transfer-range member (field 22)', 'b201 00', /unknown control message \(envelope field 22\)/],
    ['two members', '2a 00 32 00', /2 fields \(5, 6\); exactly one expected/],
    ['truncated length', '2a 0b 08', /malformed control message/],
    ['bad wire type', '2f', /malformed control message/],
    ['member with varint wire type', '28 01', /wire type 0, expected 2/],
    ['Hello with a short key', '0a 04 1a 02 0101', /Hello\.nodePublicKey must be 32 bytes, got 2/],
    ['Finished without signature', '1a 00', /Finished\.signature must be 64 bytes, got 0/],
  ];
  for (const [name, body, message] of cases) {
    t.throws(() => decodeControl(hex(body), { maxBytes: 1024 }), { code: 'PROTOCOL', message }, name);
  }
});

t.test('Hello without caps is rejected', async (t) => {
  const hello = VECTORS[0]?.message;
  if (hello?.type !== 'hello') throw new Error('vector 0 is the Hello');
  const body = encodeControlFromRaw('hello', stripField(encodeHelloBody(hello), 4));
  t.throws(() => decodeControl(body, { maxBytes: 1024 }), { code: 'PROTOCOL', message: /Hello\.caps is missing/ });
});

t.test('a capability list longer than the decoder takes is refused by the encoder too', async (t) => {
  const hello = VECTORS[0]?.message;
  if (hello?.type !== 'hello') throw new Error('vector 0 is the Hello');
  const features = [...FEATURES, ...FEATURES, ...FEATURES, ...FEATURES]; // over 64 entries
  t.ok(features.length > 64);
  t.throws(() => encodeControl({ ...hello, caps: { ...CAPS, features } }), {
    name: 'RangeError',
    message: /caps\.features has \d+ entries, more than 64/,
  });
  t.throws(() => encodeControl({ ...hello, caps: { ...CAPS, aeadSuites: Array(17).fill('aes-256-gcm') } }), {
    name: 'RangeError',
    message: /caps\.aeadSuites has 17 entries, more than 16/,
  });
  const decoded = decodeControl(encodeControl({ ...hello, caps: { ...CAPS, features: features.slice(0, 64) } }), {
    maxBytes: 4096,
  });
  t.same(
    decoded.type === 'hello' ? decoded.caps.features : null,
    [...FEATURES],
    'at 64 it encodes, and duplicates collapse',
  );
});

t.test(
  'beyond 16 features, the rest travel in features_more, which a peer of before December 2026 ignores',
  async (t) => {
    const hello = VECTORS[0]?.message;
    if (hello?.type !== 'hello') throw new Error('vector 0 is the Hello');
    t.ok(FEATURES.length > 16, 'this build has more than 16 features');
    const body = encodeControl({ ...hello, caps: { ...CAPS, features: [...FEATURES] } });
    const decoded = decodeControl(body, { maxBytes: 4096 });
    t.same(
      decoded.type === 'hello' ? decoded.caps.features : null,
      [...FEATURES],
      'this build reads them all back, in order',
    );
    // What an older peer decodes: field 7 only (it refused more than 16 entries there), field 8 unknown to it.
    const wire = clawpeer.v1.Control.decode(body);
    const caps = wire.hello?.caps;
    t.equal(caps?.features?.length, 16, 'field 7 holds the first 16, all an older peer takes');
    t.same(caps?.featuresMore?.length, FEATURES.length - 16, 'field 8 the rest');
    const sixteen = decodeControl(encodeControl({ ...hello, caps: { ...CAPS, features: FEATURES.slice(0, 16) } }), {
      maxBytes: 4096,
    });
    t.same(
      sixteen.type === 'hello' ? sixteen.caps.features : null,
      FEATURES.slice(0, 16),
      "an older peer's 16 (field 7 alone) decode as ever",
    );
  },
);

t.test('unknown enum values from a newer peer are ignored, duplicates collapse', async (t) => {
  const hello = VECTORS[0]?.message;
  if (hello?.type !== 'hello') throw new Error('vector 0 is the Hello');
  const body = encodeControl({ ...hello, caps: { ...CAPS, aeadSuites: ['chacha20-poly1305', 'chacha20-poly1305'] } });
  const decoded = decodeControl(body, { maxBytes: 1024 });
  t.same(decoded.type === 'hello' ? decoded.caps.aeadSuites : null, ['chacha20-poly1305']);
  // Hand-built caps with aead_suites [7, 1] (7 is unknown) and features [99] (unknown):
  const caps = hex('0a 02 07 01  3a 01 63');
  const helloBody = hex(`
    1a 20 11*32  22 ${caps.length.toString(16).padStart(2, '0')} ${toHex(caps)}
    2a 20 22*32  32 20 33*32  3a 40 44*64`);
  const envelope = encodeControlFromRaw('hello', helloBody);
  const got = decodeControl(envelope, { maxBytes: 1024 });
  t.same(got.type === 'hello' ? [got.caps.aeadSuites, got.caps.features] : null, [['aes-256-gcm'], []]);
});

t.test('Error text is cut and stripped of control characters', async (t) => {
  const long = 'x'.repeat(MAX_ERROR_MESSAGE_CHARS + 50);
  const decoded = decodeControl(encodeControl({ type: 'error', code: 5, message: long }), { maxBytes: 4096 });
  t.equal(decoded.type === 'error' ? decoded.message.length : -1, MAX_ERROR_MESSAGE_CHARS);
  const evil = decodeControl(encodeControl({ type: 'error', code: 5, message: 'bad\x1b[2Jthing\r\n' }), {
    maxBytes: 4096,
  });
  t.equal(evil.type === 'error' ? evil.message : '', 'bad [2Jthing  ');
  const bidi = decodeControl(encodeControl({ type: 'error', code: 5, message: 'file\u202Etxt.exe' }), {
    maxBytes: 4096,
  });
  t.equal(bidi.type === 'error' ? bidi.message : '', 'file txt.exe');
  // The cut never falls between the halves of a surrogate pair (a lone half would come back as U+FFFD).
  const emoji = 'x'.repeat(MAX_ERROR_MESSAGE_CHARS - 2) + '\u{1F600}'.repeat(10);
  const cut = decodeControl(encodeControl({ type: 'error', code: 5, message: emoji }), { maxBytes: 8192 });
  const text = cut.type === 'error' ? cut.message : '';
  t.equal(text, 'x'.repeat(MAX_ERROR_MESSAGE_CHARS - 2) + '…', 'the pair that would be split is left out whole');
  const again = decodeControl(encodeControl(cut), { maxBytes: 8192 });
  t.equal(again.type === 'error' ? again.message : '', text, 'and the text survives another round trip');
});

t.test('decodeControlWithRaw returns the exact body bytes; stripField removes the signature', async (t) => {
  const hello = VECTORS[0]?.message;
  if (hello?.type !== 'hello') throw new Error('vector 0 is the Hello');
  const body = encodeControl(hello);
  const { raw } = decodeControlWithRaw(body, { maxBytes: 1024 });
  t.equal(toHex(raw), toHex(encodeHelloBody(hello)));
  t.equal(
    toHex(stripField(raw, HELLO_SIGNATURE_FIELD)),
    toHex(encodeHelloBody({ ...hello, signature: new Uint8Array(0) })),
  );
  // A signature placed first on the wire is stripped just the same.
  const sigField = hex('3a 40 44*64');
  const reordered = new Uint8Array([...sigField, ...stripField(raw, HELLO_SIGNATURE_FIELD)]);
  t.equal(toHex(stripField(reordered, HELLO_SIGNATURE_FIELD)), toHex(stripField(raw, HELLO_SIGNATURE_FIELD)));
  t.throws(() => stripField(hex('3a 40 44'), HELLO_SIGNATURE_FIELD), { code: 'PROTOCOL' });
});

t.test('encode refuses values the wire cannot carry', async (t) => {
  t.throws(() => encodeControl({ type: 'ping', seq: -1, sentTimeUs: 0 }), RangeError);
  t.throws(() => encodeControl({ type: 'pong', seq: 0, echoedTimeUs: 2 ** 53 }), RangeError);
});

t.test('random bytes never escape as anything but ClawpeerError', async (t) => {
  let seed = 12345;
  const rand = (): number => (seed = (seed * 1103515245 + 12345) >>> 0) & 0xff;
  for (let i = 0; i < 2000; i++) {
    const body = Uint8Array.from({ length: rand() % 64 }, rand);
    try {
      decodeControl(body, { maxBytes: 1024 });
    } catch (err) {
      if (!isClawpeerError(err)) t.fail(`non-ClawpeerError for ${toHex(body)}: ${String(err)}`);
    }
  }
  t.pass('2000 random bodies decoded or rejected cleanly');
});
