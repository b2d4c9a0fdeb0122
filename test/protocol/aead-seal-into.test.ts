// The bulk paths of aead.ts: DataSealer.sealInto (a reused frame buffer) must put exactly the
// bytes of DataSealer.seal on the wire, whatever the buffer held, and guard nonces the same way;
// DataOpener.open into a reused buffer must give the plaintext, and wipe it when the tag fails.
// Sizes straddle CRYPT_SLICE_BYTES: the cipher runs over slices of it.
import { createCipheriv, randomBytes } from 'node:crypto';
import t from 'tap';
import {
  aeadOpen,
  aeadSeal,
  CRYPT_SLICE_BYTES,
  DataOpener,
  DataSealer,
  dataFrameBytes,
} from '../../src/protocol/aead.js';
import type { AeadSuiteName } from '../../src/protocol/capabilities.js';
import { FrameDecoder } from '../../src/protocol/frame-codec.js';

const SUITES: AeadSuiteName[] = ['aes-256-gcm', 'chacha20-poly1305'];
const chunkId = new Uint8Array(32).fill(0x3c);
const header = (sequence: number, chunkBytes: number, streamId = 3) => ({
  streamId,
  sequence,
  chunkId,
  compressed: false,
  chunkBytes,
});
const SIZES = [0, 1, 4096, CRYPT_SLICE_BYTES - 1, CRYPT_SLICE_BYTES, CRYPT_SLICE_BYTES + 1, 256 * 1024 + 7];

function decodeOne(wire: Uint8Array) {
  const decoder = new FrameDecoder();
  decoder.push(wire);
  const r = decoder.next();
  if (r.kind !== 'frame' || r.frame.type !== 'data') throw new Error('expected one DATA frame');
  return r.frame;
}

for (const suite of SUITES) {
  t.test(
    `${suite}: sealInto a dirty reused buffer is byte-identical to seal(), and opens into a reused buffer`,
    async (t) => {
      const key = new Uint8Array(randomBytes(32));
      const frameBuffer = Buffer.alloc(dataFrameBytes(SIZES.at(-1)! + 100), 0xee);
      const plainBuffer = Buffer.alloc(SIZES.at(-1)! + 100, 0xdd);
      for (const [sequence, size] of SIZES.entries()) {
        const plaintext = new Uint8Array(randomBytes(size));
        // Two sealers with the same key: the same (stream, sequence) may be sealed once per sealer.
        const whole = new DataSealer(suite, key).seal(header(sequence, size), plaintext);
        const frame = new DataSealer(suite, key).sealInto(header(sequence, size), plaintext, frameBuffer);
        t.equal(frame.length, dataFrameBytes(size));
        t.equal(frame.buffer, frameBuffer.buffer, 'a view of the buffer given');
        t.ok(Buffer.from(frame).equals(Buffer.from(whole)), `${size}-byte chunk: same wire bytes`);
        const opened = new DataOpener(suite, key).open(decodeOne(frame), { streamId: 3, sequence }, plainBuffer);
        t.equal(opened.buffer, plainBuffer.buffer, 'opened into the buffer given');
        t.ok(Buffer.from(opened).equals(Buffer.from(plaintext)), `${size}-byte chunk opens`);
        t.ok(
          Buffer.from(new DataOpener(suite, key).open(decodeOne(whole), { streamId: 3, sequence })).equals(
            Buffer.from(plaintext),
          ),
          'and into a new buffer',
        );
      }
    },
  );

  t.test(`${suite}: a frame that fails its tag leaves no plaintext in the reused buffer`, async (t) => {
    const key = new Uint8Array(randomBytes(32));
    const size = 2 * CRYPT_SLICE_BYTES + 5;
    const wire = new DataSealer(suite, key).seal(header(0, size), new Uint8Array(randomBytes(size)));
    wire[wire.length - 1]! ^= 0x01;
    const into = Buffer.alloc(size + 10, 0xaa);
    t.throws(() => new DataOpener(suite, key).open(decodeOne(wire), { streamId: 3, sequence: 0 }, into), {
      code: 'DECRYPT_FAILED',
    });
    t.ok(
      into.subarray(0, size).every((b) => b === 0),
      'zeroed over the plaintext',
    );
    t.ok(
      into.subarray(size).every((b) => b === 0xaa),
      'nothing beyond it touched',
    );
    t.throws(
      () => aeadOpen(suite, key, new Uint8Array(12), new Uint8Array(0), new Uint8Array(40), new Uint8Array(10)),
      RangeError,
      'a buffer too small is refused',
    );
    t.throws(
      () =>
        new DataSealer(suite, key).sealInto(header(1, 10), new Uint8Array(10), new Uint8Array(dataFrameBytes(10) - 1)),
      RangeError,
    );
  });

  t.test(`${suite}: sliced sealing equals one-shot sealing at every size`, async (t) => {
    const key = new Uint8Array(randomBytes(32));
    const nonce = new Uint8Array(randomBytes(12));
    const aad = new Uint8Array(randomBytes(56));
    for (const size of SIZES) {
      const plaintext = new Uint8Array(randomBytes(size));
      const sealed = aeadSeal(suite, key, nonce, aad, plaintext);
      // One update() over the whole input, as node:crypto's own reference.
      const cipher = createCipheriv(suite as 'aes-256-gcm', key, nonce, { authTagLength: 16 });
      cipher.setAAD(aad, { plaintextLength: size });
      const oneShot = Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
      t.ok(Buffer.from(sealed).equals(oneShot), `${size} bytes: the same as one update()`);
      t.ok(
        Buffer.from(aeadOpen(suite, key, nonce, aad, sealed)).equals(Buffer.from(plaintext)),
        `${size} bytes round-trip`,
      );
    }
  });

  t.test(`${suite}: sealInto refuses a reused nonce, sharing seal()'s guard`, async (t) => {
    const sealer = new DataSealer(suite, new Uint8Array(32));
    const buf = new Uint8Array(dataFrameBytes(1));
    sealer.sealInto(header(5, 1), new Uint8Array(1), buf);
    t.throws(() => sealer.sealInto(header(5, 1), new Uint8Array(1), buf), TypeError);
    t.throws(() => sealer.seal(header(4, 1), new Uint8Array(1)), TypeError, 'seal() sees sealInto() sequences');
    t.doesNotThrow(() => sealer.sealInto(header(0, 1, 9), new Uint8Array(1), buf), 'other streams are independent');
  });
}
