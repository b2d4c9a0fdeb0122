import fc from 'fast-check';
import t from 'tap';
import { ACK_BODY_BYTES, ACK_FRAME_BYTES, decodeAckBody, encodeAckFrame } from '../../src/protocol/ack-codec.js';
import { FrameDecoder } from '../../src/protocol/frame-codec.js';
import { hex, toHex } from './hex.js';

t.test('ACK frame: exact wire bytes', async (t) => {
  const wire = hex(`
    03 0000000c                   # frame: type ACK, body 12 bytes
    00000005                      # stream_id (u32 BE) = 5
    0000 0100 0000 0002           # acked_through_seq (u64 BE) = 2^40 + 2
  `);
  t.equal(toHex(encodeAckFrame(5, 2 ** 40 + 2)), toHex(wire));
  t.equal(wire.length, ACK_FRAME_BYTES);
  t.same(decodeAckBody(wire.subarray(5)), { streamId: 5, ackedThroughSeq: 2 ** 40 + 2 });
});

t.test('ACK extremes: stream 2^32-1, seq 2^53-1', async (t) => {
  const wire = hex('03 0000000c ffffffff 001fffffffffffff');
  t.equal(toHex(encodeAckFrame(0xffff_ffff, Number.MAX_SAFE_INTEGER)), toHex(wire));
  t.same(decodeAckBody(wire.subarray(5)), { streamId: 0xffff_ffff, ackedThroughSeq: Number.MAX_SAFE_INTEGER });
});

t.test('property: encode -> frame decoder -> decodeAckBody round-trips', async (t) => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 0xffff_ffff }), fc.maxSafeNat(), (streamId, seq) => {
      const decoder = new FrameDecoder({ maxFrameBytes: 64 });
      decoder.push(encodeAckFrame(streamId, seq));
      const got = decoder.next();
      if (got.kind !== 'frame' || got.frame.type !== 'ack') throw new Error('expected an ACK frame');
      t.same(decodeAckBody(got.frame.body), { streamId, ackedThroughSeq: seq });
    }),
    { numRuns: 200 },
  );
});

t.test('malformed ACK bodies are PROTOCOL errors', async (t) => {
  t.throws(() => decodeAckBody(new Uint8Array(ACK_BODY_BYTES - 1)), {
    code: 'PROTOCOL',
    message: /ACK frame body is 11 bytes, expected 12/,
  });
  t.throws(() => decodeAckBody(new Uint8Array(ACK_BODY_BYTES + 1)), {
    code: 'PROTOCOL',
    message: /13 bytes, expected 12/,
  });
  t.throws(() => decodeAckBody(hex('00000001 0020000000000000')), {
    code: 'PROTOCOL',
    message: /ackedThroughSeq 9007199254740992 exceeds 2\^53-1/,
  });
  t.throws(() => decodeAckBody(hex('00000001 ffffffffffffffff')), { code: 'PROTOCOL' });
});

t.test('a body that is a view into a larger buffer decodes from its own offset', async (t) => {
  const buf = hex('ee*3 00000007 0000000000000009 ee*2');
  t.same(decodeAckBody(buf.subarray(3, 15)), { streamId: 7, ackedThroughSeq: 9 });
});

t.test('encode refuses values the body cannot carry', async (t) => {
  t.throws(() => encodeAckFrame(-1, 0), RangeError);
  t.throws(() => encodeAckFrame(2 ** 32, 0), RangeError);
  t.throws(() => encodeAckFrame(0, 2 ** 53), RangeError);
  t.throws(() => encodeAckFrame(0, 1.5), RangeError);
});
