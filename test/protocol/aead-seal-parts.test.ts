// DataSealer.sealParts (the bulk path) must put exactly the bytes of DataSealer.seal on the wire,
// and guard nonces the same way.
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { DataOpener, DataSealer } from '../../src/protocol/aead.js';
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

for (const suite of SUITES) {
  t.test(`${suite}: prefix || ciphertext || tag is byte-identical to seal(), and opens`, async (t) => {
    const key = new Uint8Array(randomBytes(32));
    for (const [sequence, size] of [
      [0, 0],
      [1, 1],
      [2, 4096],
      [3, 256 * 1024 + 7],
    ] as const) {
      const plaintext = new Uint8Array(randomBytes(size));
      // Two sealers with the same key: the same (stream, sequence) may be sealed once per sealer.
      const whole = new DataSealer(suite, key).seal(header(sequence, size), plaintext);
      const parts = new DataSealer(suite, key).sealParts(header(sequence, size), plaintext);
      t.equal(parts.prefix.length, 61, 'frame header + data header');
      t.equal(parts.tag.length, 16);
      t.equal(parts.ciphertext.length, size);
      const joined = Buffer.concat([parts.prefix, parts.ciphertext, parts.tag]);
      t.ok(joined.equals(Buffer.from(whole)), `${size}-byte chunk: same wire bytes`);
      // Fed piece by piece, the decoder sees one frame that opens to the plaintext.
      const decoder = new FrameDecoder();
      for (const piece of [parts.prefix, parts.ciphertext, parts.tag]) decoder.push(piece);
      const r = decoder.next();
      if (r.kind !== 'frame' || r.frame.type !== 'data') throw new Error('expected one DATA frame');
      t.ok(
        Buffer.from(new DataOpener(suite, key).open(r.frame, { streamId: 3, sequence })).equals(Buffer.from(plaintext)),
      );
    }
  });

  t.test(`${suite}: sealParts refuses a reused nonce, sharing seal()'s guard`, async (t) => {
    const sealer = new DataSealer(suite, new Uint8Array(32));
    sealer.sealParts(header(5, 1), new Uint8Array(1));
    t.throws(() => sealer.sealParts(header(5, 1), new Uint8Array(1)), TypeError);
    t.throws(() => sealer.seal(header(4, 1), new Uint8Array(1)), TypeError, 'seal() sees sealParts() sequences');
    t.doesNotThrow(() => sealer.sealParts(header(0, 1, 9), new Uint8Array(1)), 'other streams are independent');
  });
}
