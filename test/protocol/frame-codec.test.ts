import fc from 'fast-check';
import t from 'tap';
import { isClawpeerError } from '../../src/errors.js';
import {
  DATA_HEADER_BYTES,
  DEFAULT_MAX_FRAME_BYTES,
  decodeDataHeader,
  encodeDataFrame,
  encodeDataHeader,
  encodeFrame,
  FRAME_HEADER_BYTES,
  FrameDecoder,
  type DataHeader,
  type Frame,
} from '../../src/protocol/frame-codec.js';
import { hex, toHex } from './hex.js';

const NUM_RUNS = 200;

t.test('frame header: exact bytes', async (t) => {
  t.equal(
    toHex(encodeFrame('control', hex('0102'))),
    toHex(
      hex(`
    01          # type CONTROL
    00000002    # body length 2 (u32 BE)
    0102        # body
  `),
    ),
  );
  t.equal(toHex(encodeFrame('ack', new Uint8Array(0))), toHex(hex('03 00000000  # type ACK, empty body')));
  t.equal(DEFAULT_MAX_FRAME_BYTES, 16 * 1024 * 1024);
});

const DATA_HEADER: DataHeader = {
  streamId: 3,
  sequence: 2 ** 32 + 1,
  chunkId: new Uint8Array(32).fill(0xaa),
  compressed: true,
  early: false,
  payloadBytes: 20,
  chunkBytes: 4096,
};
const DATA_HEADER_HEX = `
  00000003            # streamId = 3 (u32 BE)
  0000000100000001    # sequence = 2^32 + 1 (u64 BE)
  aa*32               # chunkId: BLAKE3, 32 bytes
  01                  # flags: bit 0 = compressed
  000000              # reserved, zero
  00000014            # payloadBytes = 20 (ciphertext || tag)
  00001000            # chunkBytes = 4096 (plaintext length)
`;

t.test('data header: exact bytes (it is the AEAD AAD, so the layout is the contract)', async (t) => {
  t.equal(toHex(encodeDataHeader(DATA_HEADER)), toHex(hex(DATA_HEADER_HEX)));
  t.equal(hex(DATA_HEADER_HEX).length, DATA_HEADER_BYTES);
  t.same(decodeDataHeader(hex(DATA_HEADER_HEX)), DATA_HEADER);
});

t.test('data frame: exact bytes and decode to views of the input', async (t) => {
  const payload = new Uint8Array(20).fill(0xcc);
  const frame = encodeDataFrame(DATA_HEADER, payload);
  t.equal(
    toHex(frame),
    toHex(
      hex(`
    02 0000004c         # type DATA, body 76 bytes (56 header + 20 payload)
    ${DATA_HEADER_HEX}
    cc*20               # sealed payload
  `),
    ),
  );
  const decoder = new FrameDecoder();
  decoder.push(frame);
  const result = decoder.next();
  if (result.kind !== 'frame' || result.frame.type !== 'data') throw new Error('expected a data frame');
  t.same(result.frame.header, DATA_HEADER);
  t.equal(result.frame.payload.buffer, frame.buffer, 'payload is a view, not a copy');
  t.equal(result.frame.payload.byteOffset, frame.byteOffset + FRAME_HEADER_BYTES + DATA_HEADER_BYTES);
  t.equal(toHex(result.frame.headerBytes), toHex(encodeDataHeader(DATA_HEADER)));
  t.same(decoder.next(), { kind: 'need-more' });
});

t.test('data header: the early flag is bit 1 and survives a round trip', async (t) => {
  const early = encodeDataHeader({ ...DATA_HEADER, compressed: false, early: true });
  t.equal(early[44], 0x02);
  t.same(decodeDataHeader(early), { ...DATA_HEADER, compressed: false, early: true });
  const { early: _omitted, ...withoutEarly } = DATA_HEADER;
  t.equal(encodeDataHeader(withoutEarly)[44], 0x01, 'absent means not early');
});

t.test('data header fields are validated', async (t) => {
  const bad = (patch: (b: Uint8Array) => void): Uint8Array => {
    const b = hex(DATA_HEADER_HEX);
    patch(b);
    return b;
  };
  t.throws(() => decodeDataHeader(bad((b) => (b[44] = 0x05))), { code: 'PROTOCOL', message: /unknown flag bits 0x05/ });
  t.throws(() => decodeDataHeader(bad((b) => (b[46] = 1))), { code: 'PROTOCOL', message: /reserved/ });
  t.throws(() => decodeDataHeader(bad((b) => b.fill(0xff, 4, 12))), {
    code: 'PROTOCOL',
    message: /sequence .* exceeds 2\^53-1/,
  });
  t.throws(() => decodeDataHeader(new Uint8Array(10)), {
    code: 'PROTOCOL',
    message: /shorter than its 56-byte header/,
  });
  // payloadBytes disagreeing with the frame length
  const frame = encodeDataFrame(DATA_HEADER, new Uint8Array(20));
  frame[FRAME_HEADER_BYTES + 51] = 21;
  const decoder = new FrameDecoder();
  decoder.push(frame);
  t.throws(() => decoder.next(), { code: 'PROTOCOL', message: /says 21 payload bytes but the frame carries 20/ });
  t.throws(() => decoder.next(), { code: 'PROTOCOL' }, 'the decoder stays failed');
});

t.test('oversized frames fail from the header alone, before the body arrives', async (t) => {
  const decoder = new FrameDecoder({ maxFrameBytes: 1024 });
  decoder.push(hex('01 00000401')); // CONTROL, 1025 bytes: nothing of the body pushed
  t.throws(() => decoder.next(), {
    code: 'FRAME_TOO_LARGE',
    message: /control frame of 1025 bytes exceeds the maximum of 1024/,
  });
  const ok = new FrameDecoder({ maxFrameBytes: 1024 });
  ok.push(encodeFrame('control', new Uint8Array(1024)));
  t.equal(ok.next().kind, 'frame');
  const huge = new FrameDecoder();
  huge.push(hex('02 ffffffff'));
  t.throws(() => huge.next(), { code: 'FRAME_TOO_LARGE', message: /4294967295 bytes/ });
});

t.test('garbage: unknown type, short DATA frame, truncation at EOF', async (t) => {
  const unknown = new FrameDecoder();
  unknown.push(hex('07 00000001 00'));
  t.throws(() => unknown.next(), { code: 'PROTOCOL', message: /unknown frame type 7/ });
  const zero = new FrameDecoder();
  zero.push(hex('00 00000000'));
  t.throws(() => zero.next(), { code: 'PROTOCOL', message: /unknown frame type 0/ });
  const short = new FrameDecoder();
  short.push(hex('02 00000010'));
  t.throws(() => short.next(), { code: 'PROTOCOL', message: /DATA frame of 16 bytes is shorter/ });

  const truncatedBody = new FrameDecoder();
  truncatedBody.push(hex('01 00000004 aabb'));
  t.same(truncatedBody.next(), { kind: 'need-more' });
  t.throws(() => truncatedBody.end(), {
    code: 'PROTOCOL',
    message: /stream ended inside a frame: got 2 of 4 body bytes of a control frame/,
  });
  const truncatedHeader = new FrameDecoder();
  truncatedHeader.push(hex('01 00'));
  t.same(truncatedHeader.next(), { kind: 'need-more' });
  t.throws(() => truncatedHeader.end(), { code: 'PROTOCOL', message: /2 byte\(s\) of an incomplete frame header/ });
  const clean = new FrameDecoder();
  clean.push(encodeFrame('ack', hex('01')));
  t.equal(clean.next().kind, 'frame');
  t.doesNotThrow(() => clean.end());
});

t.test('recycle: a spanning frame handed back holds the next spanning frame; views are never reused', async (t) => {
  const payloads = [10_000, 9_000, 12_000, 50].map((n, i) => new Uint8Array(n).fill(i + 1));
  const frames = payloads.map((p, i) => encodeDataFrame({ ...DATA_HEADER, sequence: i }, p));
  const decoder = new FrameDecoder();
  const spanning = (bytes: Uint8Array): Frame => {
    decoder.push(bytes.subarray(0, 100)); // split: the frame spans two pushes, so it is copied
    decoder.push(bytes.subarray(100));
    const r = decoder.next();
    if (r.kind !== 'frame' || r.frame.type !== 'data') throw new Error('expected a data frame');
    return r.frame;
  };
  const first = spanning(frames[0]!);
  const firstBuffer = first.type === 'data' ? first.headerBytes.buffer : undefined;
  decoder.recycle(first);
  const second = spanning(frames[1]!);
  if (second.type !== 'data') throw new Error('expected a data frame');
  t.equal(second.headerBytes.buffer, firstBuffer, 'the recycled buffer holds the next spanning frame');
  t.ok(Buffer.from(second.payload).equals(payloads[1]!), 'with the right bytes');
  t.equal(second.header.sequence, 1);
  // Not recycled: the next spanning frame gets its own buffer and `second` stays intact.
  const third = spanning(frames[2]!);
  if (third.type !== 'data') throw new Error('expected a data frame');
  t.not(third.headerBytes.buffer, second.headerBytes.buffer, 'an unrecycled frame is never overwritten');
  t.ok(Buffer.from(second.payload).equals(payloads[1]!));
  t.ok(Buffer.from(third.payload).equals(payloads[2]!), 'and holds its own bytes');
  // A frame that is a view of a pushed buffer is ignored by recycle().
  decoder.push(frames[3]!);
  const view = decoder.next();
  if (view.kind !== 'frame') throw new Error('expected a frame');
  decoder.recycle(view.frame);
  decoder.recycle(third);
  decoder.recycle(third); // twice: ignored
  const fourth = spanning(frames[0]!);
  if (fourth.type !== 'data' || view.frame.type !== 'data') throw new Error('expected data frames');
  t.equal(fourth.headerBytes.buffer, third.headerBytes.buffer, 'the recycled copy is reused, not the pushed buffer');
  t.ok(Buffer.from(view.frame.payload).equals(payloads[3]!), 'the pushed buffer was left alone');
  t.ok(Buffer.from(fourth.payload).equals(payloads[0]!));
});

t.test('the limit can change between frames', async (t) => {
  const decoder = new FrameDecoder({ maxFrameBytes: 64 });
  decoder.push(encodeFrame('control', new Uint8Array(100)));
  decoder.setMaxFrameBytes(128);
  t.equal(decoder.next().kind, 'frame');
  t.throws(() => new FrameDecoder({ maxFrameBytes: 10 }), RangeError);
});

// ---- properties -------------------------------------------------------------------------------

const arbDataHeader = fc.record({
  streamId: fc.nat({ max: 0xffff_ffff }),
  sequence: fc.maxSafeNat(),
  chunkId: fc.uint8Array({ minLength: 32, maxLength: 32 }),
  compressed: fc.boolean(),
  early: fc.boolean(),
  chunkBytes: fc.nat({ max: 4096 }),
});

type FrameSpec =
  | { type: 'control' | 'ack'; body: Uint8Array }
  | { type: 'data'; header: Omit<DataHeader, 'payloadBytes'>; payload: Uint8Array };

const arbFrame: fc.Arbitrary<FrameSpec> = fc.oneof(
  fc.record({ type: fc.constantFrom('control' as const, 'ack' as const), body: fc.uint8Array({ maxLength: 300 }) }),
  fc.record({ type: fc.constant('data' as const), header: arbDataHeader, payload: fc.uint8Array({ maxLength: 300 }) }),
);

function encodeSpec(spec: FrameSpec): Uint8Array {
  return spec.type === 'data' ? encodeDataFrame(spec.header, spec.payload) : encodeFrame(spec.type, spec.body);
}

function normalise(frame: Frame): unknown {
  return frame.type === 'data'
    ? { type: 'data', header: { ...frame.header, chunkId: toHex(frame.header.chunkId) }, payload: toHex(frame.payload) }
    : { type: frame.type, body: toHex(frame.body) };
}

function specToExpected(spec: FrameSpec): unknown {
  return spec.type === 'data'
    ? {
        type: 'data',
        header: { ...spec.header, chunkId: toHex(spec.header.chunkId), payloadBytes: spec.payload.length },
        payload: toHex(spec.payload),
      }
    : { type: spec.type, body: toHex(spec.body) };
}

function concatAll(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** Cuts `bytes` at the given (sorted, deduplicated) positions. */
function split(bytes: Uint8Array, cuts: readonly number[]): Uint8Array[] {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const pieces: Uint8Array[] = [];
  let last = 0;
  for (const p of points) {
    pieces.push(bytes.subarray(last, p));
    last = p;
  }
  pieces.push(bytes.subarray(last));
  return pieces;
}

function decodeAll(pieces: readonly Uint8Array[], maxFrameBytes?: number): Frame[] {
  const decoder = new FrameDecoder(maxFrameBytes === undefined ? {} : { maxFrameBytes });
  const frames: Frame[] = [];
  for (const piece of pieces) {
    decoder.push(piece);
    for (let r = decoder.next(); r.kind === 'frame'; r = decoder.next()) frames.push(r.frame);
  }
  decoder.end();
  return frames;
}

t.test('property: encode then decode gives the frames back', async (t) => {
  fc.assert(
    fc.property(fc.array(arbFrame, { maxLength: 8 }), (specs) => {
      const frames = decodeAll([concatAll(specs.map(encodeSpec))]);
      t.same(frames.map(normalise), specs.map(specToExpected));
    }),
    { numRuns: NUM_RUNS },
  );
});

t.test('property: any split of the byte stream yields the same frames', async () => {
  fc.assert(
    fc.property(
      fc.array(arbFrame, { minLength: 1, maxLength: 6 }),
      fc.array(fc.nat(), { maxLength: 40 }),
      (specs, cuts) => {
        const bytes = concatAll(specs.map(encodeSpec));
        const whole = decodeAll([bytes]).map(normalise);
        const pieces = decodeAll(split(bytes, cuts)).map(normalise);
        const bytewise = decodeAll(Array.from(bytes, (b) => Uint8Array.of(b))).map(normalise);
        return JSON.stringify(pieces) === JSON.stringify(whole) && JSON.stringify(bytewise) === JSON.stringify(whole);
      },
    ),
    { numRuns: NUM_RUNS },
  );
});

t.test('property: garbage only ever raises ClawpeerError and never yields a frame above the max', async () => {
  const maxFrameBytes = 256;
  fc.assert(
    fc.property(
      // Bias toward plausible headers: a valid-looking type byte first half the time.
      // Three sources: pure noise; noise after a valid type byte; valid frames with bytes flipped.
      fc.oneof(
        fc.uint8Array({ maxLength: 600 }),
        fc
          .tuple(fc.constantFrom(1, 2, 3), fc.uint8Array({ maxLength: 600 }))
          .map(([t0, rest]) => Uint8Array.of(t0, ...rest)),
        fc
          .tuple(
            fc.array(arbFrame, { minLength: 1, maxLength: 4 }),
            fc.array(fc.tuple(fc.nat(), fc.nat({ max: 255 })), { minLength: 1, maxLength: 4 }),
          )
          .map(([specs, flips]) => {
            const bytes = concatAll(specs.map(encodeSpec));
            for (const [at, value] of flips) bytes[at % bytes.length] = value;
            return bytes;
          }),
      ),
      fc.array(fc.nat(), { maxLength: 10 }),
      (bytes, cuts) => {
        const decoder = new FrameDecoder({ maxFrameBytes });
        try {
          for (const piece of split(bytes, cuts)) {
            decoder.push(piece);
            for (let r = decoder.next(); r.kind === 'frame'; r = decoder.next()) {
              const size =
                r.frame.type === 'data' ? r.frame.headerBytes.length + r.frame.payload.length : r.frame.body.length;
              if (size > maxFrameBytes) return false;
            }
            // Bounded buffering: what is held is at most one partial frame plus the last push.
            if (decoder.bufferedBytes > FRAME_HEADER_BYTES + maxFrameBytes + piece.length) return false;
          }
          decoder.end();
        } catch (err) {
          return isClawpeerError(err) && ['PROTOCOL', 'FRAME_TOO_LARGE'].includes(err.code);
        }
        return true;
      },
    ),
    { numRuns: 500 },
  );
});

t.test('property: a header announcing more than the max fails with only the header pushed', async () => {
  fc.assert(
    fc.property(fc.constantFrom(1, 2, 3), fc.integer({ min: 1025, max: 0xffff_ffff }), (type, length) => {
      const decoder = new FrameDecoder({ maxFrameBytes: 1024 });
      const header = new Uint8Array(FRAME_HEADER_BYTES);
      header[0] = type;
      new DataView(header.buffer).setUint32(1, length);
      decoder.push(header);
      try {
        decoder.next();
        return false;
      } catch (err) {
        return isClawpeerError(err, 'FRAME_TOO_LARGE');
      }
    }),
    { numRuns: NUM_RUNS },
  );
});
