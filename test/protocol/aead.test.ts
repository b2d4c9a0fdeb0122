import { randomBytes } from 'node:crypto';
import sodium from 'libsodium-wrappers';
import t from 'tap';
import { aeadOpen, aeadSeal, DataOpener, DataSealer, dataNonce } from '../../src/protocol/aead.js';
import type { AeadSuiteName } from '../../src/protocol/capabilities.js';
import { FrameDecoder, FRAME_HEADER_BYTES, type Frame } from '../../src/protocol/frame-codec.js';

type DataFrame = Extract<Frame, { type: 'data' }>;
const SUITES: AeadSuiteName[] = ['aes-256-gcm', 'chacha20-poly1305'];
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

function decodeOne(bytes: Uint8Array): DataFrame {
  const decoder = new FrameDecoder();
  decoder.push(bytes);
  const r = decoder.next();
  if (r.kind !== 'frame' || r.frame.type !== 'data') throw new Error('expected one DATA frame');
  return r.frame;
}

const chunkId = new Uint8Array(32).fill(0x5a);
const header = (sequence: number, streamId = 7) => ({
  streamId,
  sequence,
  chunkId,
  compressed: false,
  chunkBytes: 1000,
});

t.test('nonce = stream id (u32 BE) || sequence (u64 BE)', async (t) => {
  t.equal(hex(dataNonce(7, 2 ** 32 + 2)), '00000007' + '0000000100000002');
  t.equal(hex(dataNonce(0xffffffff, 0)), 'ffffffff' + '0000000000000000');
});

for (const suite of SUITES) {
  t.test(`${suite}: seal/open round trip through the frame codec`, async (t) => {
    const key = new Uint8Array(randomBytes(32));
    const sealer = new DataSealer(suite, key);
    const opener = new DataOpener(suite, key);
    const plaintext = new Uint8Array(randomBytes(1000));
    const wire = sealer.seal(header(0), plaintext);
    t.equal(wire.length, FRAME_HEADER_BYTES + 56 + 1000 + 16);
    const frame = decodeOne(wire);
    t.equal(frame.header.payloadBytes, 1016);
    t.equal(hex(opener.open(frame, { streamId: 7, sequence: 0 })), hex(plaintext));
    const second = decodeOne(sealer.seal(header(1), new Uint8Array(0)));
    t.equal(opener.open(second, { streamId: 7, sequence: 1 }).length, 0, 'empty chunks work');
  });

  t.test(`${suite}: tampering anywhere fails with DECRYPT_FAILED`, async (t) => {
    const key = new Uint8Array(randomBytes(32));
    const wire = new DataSealer(suite, key).seal(header(5), new Uint8Array(64).fill(1));
    const opener = new DataOpener(suite, key);
    // Flip one bit in: chunk id (AAD), chunkBytes (AAD), ciphertext, tag.
    for (const offset of [FRAME_HEADER_BYTES + 12, FRAME_HEADER_BYTES + 55, FRAME_HEADER_BYTES + 56, wire.length - 1]) {
      const copy = wire.slice();
      copy[offset] = (copy[offset] ?? 0) ^ 0x01;
      t.throws(
        () => opener.open(decodeOne(copy), { streamId: 7, sequence: 5 }),
        { code: 'DECRYPT_FAILED' },
        `bit flip at ${offset}`,
      );
    }
    const wrongKey = new DataOpener(suite, new Uint8Array(randomBytes(32)));
    t.throws(() => wrongKey.open(decodeOne(wire), { streamId: 7, sequence: 5 }), {
      code: 'DECRYPT_FAILED',
      message: /failed authentication/,
    });
  });

  t.test(`${suite}: replayed, reordered or moved frames are refused`, async (t) => {
    const key = new Uint8Array(randomBytes(32));
    const sealer = new DataSealer(suite, key);
    const opener = new DataOpener(suite, key);
    const f0 = decodeOne(sealer.seal(header(0), new Uint8Array(10)));
    const f1 = decodeOne(sealer.seal(header(1), new Uint8Array(10)));
    t.throws(() => opener.open(f1, { streamId: 7, sequence: 0 }), {
      code: 'DECRYPT_FAILED',
      message: /stream 7 sequence 1, expected stream 7 sequence 0/,
    });
    opener.open(f0, { streamId: 7, sequence: 0 });
    t.throws(() => opener.open(f0, { streamId: 7, sequence: 1 }), { code: 'DECRYPT_FAILED' }, 'replay');
    t.throws(() => opener.open(f1, { streamId: 8, sequence: 1 }), { code: 'DECRYPT_FAILED' }, 'other stream');
    // A header rewritten to claim the expected position fails the tag (the nonce and AAD changed).
    const moved = sealer.seal(header(2), new Uint8Array(10));
    new DataView(moved.buffer, moved.byteOffset).setUint32(FRAME_HEADER_BYTES, 8);
    t.throws(() => opener.open(decodeOne(moved), { streamId: 8, sequence: 2 }), {
      code: 'DECRYPT_FAILED',
      message: /failed authentication/,
    });
  });

  t.test(`${suite}: the sealer refuses to reuse a nonce`, async (t) => {
    const sealer = new DataSealer(suite, new Uint8Array(32));
    sealer.seal(header(3), new Uint8Array(1));
    t.throws(() => sealer.seal(header(3), new Uint8Array(1)), TypeError);
    t.throws(() => sealer.seal(header(2), new Uint8Array(1)), TypeError);
    t.doesNotThrow(() => sealer.seal(header(0, 8), new Uint8Array(1)), 'other streams are independent');
  });
}

t.test('chacha20-poly1305 wire format equals libsodium crypto_aead_chacha20poly1305_ietf', async (t) => {
  await sodium.ready;
  for (const length of [0, 1, 63, 64, 65, 1000, 65536]) {
    const key = new Uint8Array(randomBytes(32));
    const nonce = dataNonce(length, length * 3 + 1);
    const aad = new Uint8Array(randomBytes(56));
    const plaintext = new Uint8Array(randomBytes(length));
    const ours = aeadSeal('chacha20-poly1305', key, nonce, aad, plaintext);
    const theirs = sodium.crypto_aead_chacha20poly1305_ietf_encrypt(plaintext, aad, null, nonce, key);
    t.equal(hex(ours), hex(theirs), `${length} bytes`);
    t.equal(hex(aeadOpen('chacha20-poly1305', key, nonce, aad, theirs)), hex(plaintext));
  }
});

t.test('aes-256-gcm matches a known-answer vector (NIST GCM test case 16 tag, via the AAD path)', async (t) => {
  // From the GCM spec (McGrew & Viega), test case 16 with a 96-bit IV.
  const key = Buffer.from('feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308', 'hex');
  const iv = Buffer.from('cafebabefacedbaddecaf888', 'hex');
  const pt = Buffer.from(
    'd9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39',
    'hex',
  );
  const aad = Buffer.from('feedfacedeadbeeffeedfacedeadbeefabaddad2', 'hex');
  const sealed = aeadSeal('aes-256-gcm', key, iv, aad, pt);
  t.equal(
    hex(sealed),
    '522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662' +
      '76fc6ece0f4e1768cddf8853bb2d551b',
  );
});

t.test('short sealed payloads are DECRYPT_FAILED, not a crash', async (t) => {
  t.throws(
    () => aeadOpen('aes-256-gcm', new Uint8Array(32), new Uint8Array(12), new Uint8Array(0), new Uint8Array(15)),
    {
      code: 'DECRYPT_FAILED',
      message: /shorter than the 16-byte tag/,
    },
  );
});
