import fc from 'fast-check';
import t from 'tap';
import { isClawpeerError } from '../../src/errors.js';
import {
  FRAME_HEADER_BYTES,
  FrameDecoder,
  FrameType,
  MAX_DATA_FRAME_BYTES,
  MAX_GOAWAY_REASON_BYTES,
  decodeFrameHeader,
  encodeFrame,
  encodeFrameHeader,
  truncateUtf8,
  type DecodeResult,
  type MuxFrame,
} from '../../src/transport/mux-codec.js';

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
/** Annotated hex: everything after '#' on a line is a comment, whitespace is ignored. */
const unhex = (annotated: string): string => annotated.replace(/#.*$/gm, '').replace(/\s+/g, '');
const concat = (parts: Uint8Array[]): Uint8Array => new Uint8Array(Buffer.concat(parts));
const encode = (frame: MuxFrame): string => hex(concat(encodeFrame(frame)));

/** Collects decoded frames; DATA pieces (possibly spread over several pushes) are joined back. */
class Collector {
  readonly frames: MuxFrame[] = [];
  #pending: { streamId: number; parts: Uint8Array[] } | undefined;

  drain(decoder: FrameDecoder): this {
    for (;;) {
      const r: DecodeResult = decoder.next();
      if (r.kind === 'need-more') return this;
      if (r.kind === 'frame') {
        if (this.#pending !== undefined) throw new Error('control frame inside a DATA frame');
        this.frames.push(r.frame);
        continue;
      }
      if (this.#pending !== undefined && this.#pending.streamId !== r.streamId)
        throw new Error('DATA piece changed stream mid-frame');
      this.#pending ??= { streamId: r.streamId, parts: [] };
      this.#pending.parts.push(r.bytes);
      if (r.last) {
        this.frames.push({
          type: FrameType.DATA,
          streamId: this.#pending.streamId,
          payload: concat(this.#pending.parts),
        });
        this.#pending = undefined;
      }
    }
  }
}

/** Normalises frames for deep comparison (Uint8Array views vs copies). */
const plain = (frames: MuxFrame[]): unknown[] =>
  frames.map((f) => ('payload' in f ? { ...f, payload: hex(f.payload) } : { ...f }));

const streamId = fc.integer({ min: 1, max: 0xffff_ffff });
const u32 = fc.integer({ min: 0, max: 0xffff_ffff });
const arbFrame: fc.Arbitrary<MuxFrame> = fc.oneof(
  streamId.map((id) => ({ type: FrameType.OPEN, streamId: id }) as const),
  fc
    .tuple(streamId, fc.uint8Array({ maxLength: 3000 }))
    .map(([id, payload]) => ({ type: FrameType.DATA, streamId: id, payload }) as const),
  streamId.map((id) => ({ type: FrameType.FIN, streamId: id }) as const),
  fc.tuple(streamId, u32).map(([id, code]) => ({ type: FrameType.RESET, streamId: id, code }) as const),
  fc
    .tuple(streamId, fc.integer({ min: 1, max: 0xffff_ffff }))
    .map(([id, increment]) => ({ type: FrameType.WINDOW_UPDATE, streamId: id, increment }) as const),
  fc.uint8Array({ minLength: 8, maxLength: 8 }).map((payload) => ({ type: FrameType.PING, payload }) as const),
  fc.uint8Array({ minLength: 8, maxLength: 8 }).map((payload) => ({ type: FrameType.PONG, payload }) as const),
  fc
    .tuple(u32, fc.string({ unit: 'grapheme', maxLength: 40 }))
    .map(([code, reason]) => ({ type: FrameType.GOAWAY, code, reason }) as const),
);

/** Cuts `bytes` at the given offsets (sorted, deduplicated) into pieces. */
function split(bytes: Uint8Array, cuts: number[]): Uint8Array[] {
  const points = [...new Set(cuts.map((c) => c % (bytes.length + 1)))].sort((a, b) => a - b);
  const out: Uint8Array[] = [];
  let prev = 0;
  for (const p of points) {
    out.push(bytes.subarray(prev, p));
    prev = p;
  }
  out.push(bytes.subarray(prev));
  return out;
}

function codeOf(f: () => unknown): string | undefined {
  try {
    f();
  } catch (err) {
    return isClawpeerError(err) ? err.code : `not a ClawpeerError: ${String(err)}`;
  }
  return undefined;
}

t.test('exact bytes of every frame type', async (t) => {
  t.equal(
    encode({ type: FrameType.OPEN, streamId: 1 }),
    unhex(`01         # type OPEN
           00000001   # stream 1
           00000000   # length 0`),
  );
  t.equal(
    encode({ type: FrameType.DATA, streamId: 0x0102_0304, payload: Buffer.from('hi') }),
    unhex(`02 01020304 00000002   # DATA, stream 0x01020304, 2 bytes
           6869                   # "hi"`),
  );
  t.equal(encode({ type: FrameType.FIN, streamId: 2 }), unhex('03 00000002 00000000 # FIN stream 2'));
  t.equal(
    encode({ type: FrameType.RESET, streamId: 3, code: 1 }),
    unhex(`04 00000003 00000004   # RESET stream 3, 4-byte payload
           00000001               # code REFUSED`),
  );
  t.equal(
    encode({ type: FrameType.WINDOW_UPDATE, streamId: 5, increment: 0x003c_0000 }),
    unhex(`05 00000005 00000004   # WINDOW_UPDATE stream 5
           003c0000               # +3932160 bytes (4 MiB - 256 KiB)`),
  );
  t.equal(
    encode({ type: FrameType.PING, payload: Uint8Array.of(0, 0, 0, 0, 0, 0, 0, 1) }),
    unhex(`06 00000000 00000008   # PING on stream 0
           0000000000000001       # nonce 1`),
  );
  t.equal(
    encode({ type: FrameType.PONG, payload: Uint8Array.of(0, 0, 0, 0, 0, 0, 0, 1) }),
    unhex('07 00000000 00000008 0000000000000001 # PONG echoes it'),
  );
  t.equal(
    encode({ type: FrameType.GOAWAY, code: 0, reason: 'bye' }),
    unhex(`08 00000000 00000007   # GOAWAY, 7 bytes
           00000000               # code NORMAL
           627965                 # "bye"`),
  );
  t.equal(FRAME_HEADER_BYTES, 9);
});

t.test('the DATA payload is passed through, not copied', async (t) => {
  const payload = new Uint8Array(100);
  const parts = encodeFrame({ type: FrameType.DATA, streamId: 1, payload });
  t.equal(parts.length, 2);
  t.equal(parts[1], payload, 'same object');
});

t.test('round trip: any frame sequence, any split of the byte stream', async (t) => {
  fc.assert(
    fc.property(fc.array(arbFrame, { maxLength: 20 }), fc.array(fc.nat(), { maxLength: 30 }), (frames, cuts) => {
      const bytes = concat(frames.flatMap((f) => encodeFrame(f)));
      const decoder = new FrameDecoder();
      const out = new Collector();
      for (const piece of split(bytes, cuts)) {
        decoder.push(piece);
        out.drain(decoder);
      }
      return decoder.bufferedBytes === 0 && JSON.stringify(plain(out.frames)) === JSON.stringify(plain(frames));
    }),
    { numRuns: 300 },
  );
  t.pass('300 random frame sequences decoded back exactly');
});

t.test('byte-at-a-time feeding yields need-more until each frame is complete', async (t) => {
  const bytes = concat(encodeFrame({ type: FrameType.GOAWAY, code: 4, reason: 'x' }));
  const decoder = new FrameDecoder();
  for (let i = 0; i < bytes.length - 1; i++) {
    decoder.push(bytes.subarray(i, i + 1));
    t.equal(decoder.next().kind, 'need-more', `after ${i + 1} bytes`);
  }
  decoder.push(bytes.subarray(bytes.length - 1));
  const r = decoder.next();
  t.same(r.kind === 'frame' ? r.frame : r, { type: FrameType.GOAWAY, code: 4, reason: 'x' });
  t.same(
    decodeFrameHeader(bytes, bytes.length - 3, MAX_DATA_FRAME_BYTES),
    { kind: 'need-more' },
    'header decoder: need-more as a value',
  );
});

t.test('DATA streams through as pieces: views of large chunks, copies of small slivers', async (t) => {
  const payload = new Uint8Array(100_000).fill(7);
  const bytes = concat(encodeFrame({ type: FrameType.DATA, streamId: 9, payload }));
  const decoder = new FrameDecoder();
  decoder.push(bytes.subarray(0, 60_000));
  const first = decoder.next();
  if (first.kind !== 'data') throw new Error(`expected data, got ${first.kind}`);
  t.equal(first.bytes.length, 60_000 - FRAME_HEADER_BYTES, 'payload delivered before the frame is complete');
  t.equal(first.bytes.buffer, bytes.buffer, 'a large piece is a view (no copy)');
  t.equal(first.last, false);
  t.equal(decoder.next().kind, 'need-more');
  // The rest arrives in a chunk that also holds a big next frame: the small tail is copied, so it
  // does not pin the large chunk.
  const next = concat(encodeFrame({ type: FrameType.DATA, streamId: 11, payload: new Uint8Array(200_000) }));
  const chunk = concat([bytes.subarray(60_000), next]);
  decoder.push(chunk);
  const second = decoder.next();
  if (second.kind !== 'data') throw new Error('expected data');
  t.equal(second.last, true);
  t.equal(second.bytes.length, bytes.length - 60_000);
  t.not(second.bytes.buffer, chunk.buffer, 'a sliver is copied');
  const third = decoder.next();
  t.ok(
    third.kind === 'data' && third.streamId === 11 && third.bytes.buffer === chunk.buffer,
    'the big frame is a view',
  );
});

t.test('oversized DATA is rejected from the header, before its payload arrives', async (t) => {
  const decoder = new FrameDecoder(1024);
  decoder.push(encodeFrameHeader(FrameType.DATA, 1, 1025));
  t.equal(
    codeOf(() => decoder.next()),
    'FRAME_TOO_LARGE',
  );
  t.equal(
    codeOf(() => decoder.next()),
    'FRAME_TOO_LARGE',
    'stays failed',
  );
  const huge = new FrameDecoder();
  huge.push(encodeFrameHeader(FrameType.DATA, 1, 0xffff_ffff));
  t.equal(
    codeOf(() => huge.next()),
    'FRAME_TOO_LARGE',
    '4 GiB length: rejected, nothing allocated',
  );
  const ok = new FrameDecoder(1024);
  ok.push(encodeFrameHeader(FrameType.DATA, 1, 1024));
  t.equal(ok.next().kind, 'need-more', 'exactly the limit is fine');
  t.throws(() => new FrameDecoder(0), RangeError);
  t.throws(() => new FrameDecoder(17 * 1024 * 1024), RangeError);
});

t.test('malformed frames are PROTOCOL errors naming what was wrong', async (t) => {
  const cases: [string, Uint8Array][] = [
    ['type 0 (zeroed bytes)', new Uint8Array(9)],
    ['unknown type 0x47 ("GET / HTTP")', Buffer.from('GET / HTTP/1.1\r\n')],
    ['OPEN on stream 0', encodeFrameHeader(FrameType.OPEN, 0, 0)],
    ['DATA on stream 0', encodeFrameHeader(FrameType.DATA, 0, 1)],
    ['PING on stream 1', encodeFrameHeader(FrameType.PING, 1, 8)],
    ['GOAWAY on stream 3', encodeFrameHeader(FrameType.GOAWAY, 3, 4)],
    ['OPEN with a payload', encodeFrameHeader(FrameType.OPEN, 1, 1)],
    ['FIN with a payload', encodeFrameHeader(FrameType.FIN, 1, 4)],
    ['RESET without its code', encodeFrameHeader(FrameType.RESET, 1, 0)],
    ['WINDOW_UPDATE of 5 bytes', encodeFrameHeader(FrameType.WINDOW_UPDATE, 1, 5)],
    ['PING of 9 bytes', encodeFrameHeader(FrameType.PING, 0, 9)],
    ['GOAWAY of 3 bytes', encodeFrameHeader(FrameType.GOAWAY, 0, 3)],
    ['GOAWAY with an oversized reason', encodeFrameHeader(FrameType.GOAWAY, 0, 4 + MAX_GOAWAY_REASON_BYTES + 1)],
    ['WINDOW_UPDATE of 0', concat([encodeFrameHeader(FrameType.WINDOW_UPDATE, 1, 4), new Uint8Array(4)])],
    [
      'GOAWAY with invalid UTF-8',
      concat([encodeFrameHeader(FrameType.GOAWAY, 0, 5), new Uint8Array(4), Uint8Array.of(0xff)]),
    ],
  ];
  for (const [what, bytes] of cases) {
    const decoder = new FrameDecoder();
    decoder.push(bytes);
    let err: unknown;
    try {
      decoder.next();
    } catch (e) {
      err = e;
    }
    t.ok(isClawpeerError(err, 'PROTOCOL'), `${what}: PROTOCOL (got ${String(err)})`);
  }
});

t.test('random garbage never crashes the decoder: frames, need-more, or a ClawpeerError', async (t) => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 2000 }), (bytes) => {
      const decoder = new FrameDecoder(4096);
      decoder.push(bytes);
      try {
        new Collector().drain(decoder);
      } catch (err) {
        return isClawpeerError(err, 'PROTOCOL') || isClawpeerError(err, 'FRAME_TOO_LARGE');
      }
      return true;
    }),
    { numRuns: 500 },
  );
  t.pass('no TypeError or RangeError escaped');
});

t.test('encoder range checks and GOAWAY reason truncation', async (t) => {
  t.throws(() => encodeFrame({ type: FrameType.WINDOW_UPDATE, streamId: 1, increment: 0 }), RangeError);
  t.throws(() => encodeFrame({ type: FrameType.RESET, streamId: 1, code: -1 }), RangeError);
  t.throws(() => encodeFrame({ type: FrameType.PING, payload: new Uint8Array(7) }), RangeError);
  t.throws(() => encodeFrameHeader(FrameType.OPEN, 2 ** 32, 0), RangeError);
  const long = 'é'.repeat(MAX_GOAWAY_REASON_BYTES); // 2 bytes each
  const bytes = concat(encodeFrame({ type: FrameType.GOAWAY, code: 0, reason: long }));
  t.equal(bytes.length, FRAME_HEADER_BYTES + 4 + MAX_GOAWAY_REASON_BYTES, 'reason cut to the limit');
  const decoder = new FrameDecoder();
  decoder.push(bytes);
  const r = decoder.next();
  t.ok(
    r.kind === 'frame' &&
      r.frame.type === FrameType.GOAWAY &&
      r.frame.reason === 'é'.repeat(MAX_GOAWAY_REASON_BYTES / 2),
    'decodes to whole characters',
  );
  t.equal(truncateUtf8('a€', 3).length, 1, 'never splits a character (€ is 3 bytes)');
});
