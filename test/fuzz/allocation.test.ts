// Allocation bounds under hostile length fields. A decoder that sized a buffer from a peer's
// length field (up to 4 GiB in a u32) before the bytes arrived would let one peer exhaust the
// listener's memory. Measured two ways: the decoders' own buffered-byte counters, and the
// process's ArrayBuffer memory retained by many decoders each holding a hostile partial frame.
import t from 'tap';
import { FrameDecoder } from '../../src/protocol/frame-codec.js';
import { decodeControl } from '../../src/protocol/messages.js';
import { decodeReconcileMessage } from '../../src/sync/reconcile-codec.js';
import { FrameDecoder as MuxFrameDecoder, FrameType } from '../../src/transport/mux-codec.js';
import { isClawpeerError } from '../../src/errors.js';
import { concatBytes, pbLenField, pbVarint } from './fuzz-kit.js';

const MIB = 1 << 20;

function frameHeader(type: number, length: number): Uint8Array {
  const h = new Uint8Array(5);
  h[0] = type;
  new DataView(h.buffer).setUint32(1, length);
  return h;
}

t.test('frame decoder: a length field above the limit fails at once and drops what it held', async (t) => {
  for (const length of [0xffff_ffff, 0x8000_0000, MIB + 1]) {
    const d = new FrameDecoder({ maxFrameBytes: MIB });
    d.push(frameHeader(1, length));
    d.push(new Uint8Array(100));
    t.throws(() => d.next(), { code: 'FRAME_TOO_LARGE' }, `length ${length}`);
    t.equal(d.bufferedBytes, 0, 'nothing kept after the error');
  }
});

t.test('frame decoder: 200 decoders each announcing a max-size frame retain only the bytes pushed', async (t) => {
  // Each announces a 1 MiB body and sends 64 bytes of it. Pre-allocating the body would retain
  // 200 MiB; the bound is the bytes actually pushed (~14 KiB) plus allocator noise.
  const before = process.memoryUsage().arrayBuffers;
  const decoders: FrameDecoder[] = [];
  let waiting = 0;
  for (let i = 0; i < 200; i++) {
    const d = new FrameDecoder({ maxFrameBytes: MIB });
    d.push(concatBytes([frameHeader(1, MIB), new Uint8Array(64)]));
    if (d.next().kind === 'need-more') waiting++;
    decoders.push(d);
  }
  t.equal(waiting, 200, 'every decoder waits for the rest of its frame');
  const grownBytes = process.memoryUsage().arrayBuffers - before;
  t.ok(
    grownBytes < 8 * MIB,
    `200 hostile partial frames retain ${(grownBytes / MIB).toFixed(2)} MiB of ArrayBuffers (< 8 MiB; pre-allocation would be 200 MiB)`,
  );
  t.equal(
    decoders.reduce((s, d) => s + d.bufferedBytes, 0),
    200 * 69,
    'buffered = exactly the bytes pushed',
  );
});

t.test('frame decoder: a frame trickled in 1-byte pushes is buffered once, never more than header + max', async (t) => {
  const max = 4096;
  const d = new FrameDecoder({ maxFrameBytes: max });
  const frame = concatBytes([frameHeader(3, max), new Uint8Array(max).fill(9)]);
  let peak = 0;
  let frames = 0;
  for (const byte of frame) {
    d.push(Uint8Array.of(byte));
    peak = Math.max(peak, d.bufferedBytes);
    for (let r = d.next(); r.kind === 'frame'; r = d.next()) frames++;
  }
  t.equal(frames, 1);
  t.equal(peak, 5 + max, 'peak buffered bytes = one whole frame');
  t.equal(d.bufferedBytes, 0);
});

t.test('mux decoder: a DATA frame announcing its maximum streams through without buffering it', async (t) => {
  const max = 256 * 1024;
  const d = new MuxFrameDecoder(max);
  const header = new Uint8Array(9);
  header[0] = FrameType.DATA;
  new DataView(header.buffer).setUint32(1, 1);
  new DataView(header.buffer).setUint32(5, max);
  d.push(header);
  let peak = 0;
  let got = 0;
  for (let sent = 0; sent < max; sent += 1000) {
    d.push(new Uint8Array(Math.min(1000, max - sent)));
    peak = Math.max(peak, d.bufferedBytes);
    for (let r = d.next(); r.kind === 'data'; r = d.next()) got += r.bytes.length;
  }
  t.equal(got, max, 'every payload byte delivered');
  t.ok(peak <= 9 + 1000, `peak buffered ${peak} bytes: one header plus one push`);

  const huge = new MuxFrameDecoder(max);
  header[0] = FrameType.DATA;
  new DataView(header.buffer).setUint32(5, 0xffff_ffff);
  huge.push(header);
  t.throws(() => huge.next(), { code: 'FRAME_TOO_LARGE' }, 'a 4 GiB DATA length is refused from the header');
  const goaway = new MuxFrameDecoder(max);
  const g = new Uint8Array(9);
  g[0] = FrameType.GOAWAY;
  new DataView(g.buffer).setUint32(5, 0xffff_ffff);
  goaway.push(g);
  t.throws(() => goaway.next(), { code: 'PROTOCOL' }, 'a 4 GiB GOAWAY is refused from the header');
});

t.test('reconcile codec: counts that the bytes present cannot hold are refused before allocating', async (t) => {
  // symbols: claims 16,384 cells (~800 KiB of typed arrays) in a 6-byte body.
  const symbols = Uint8Array.of(6, 4, 0, 0x80, 0x80, 0x01, 0);
  t.throws(() => decodeReconcileMessage(symbols), { code: 'PROTOCOL' });
  // ids: claims 32,000 ids (1 MiB) in a 6-byte body.
  const ids = Uint8Array.of(6, 7, 0, 1, 0x80, 0xfa, 0x01);
  t.throws(() => decodeReconcileMessage(ids), { code: 'PROTOCOL' });
  // A length prefix above the limit is refused with no body present (not need-more).
  t.throws(() => decodeReconcileMessage(Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0x0f)), { code: 'PROTOCOL' });
});

t.test('control messages: a manifest of 200,000 empty entries is refused by count, not decoded', async (t) => {
  // 400 KB of "entries {}" (field 2, length 0): protobufjs would build 200,000 objects first.
  const inner = new Uint8Array(200_000 * 2);
  for (let i = 0; i < inner.length; i += 2) inner[i] = 0x12;
  const body = pbLenField(18, inner);
  let error: unknown;
  try {
    decodeControl(Buffer.from(body), { maxBytes: 16 * MIB });
  } catch (err) {
    error = err;
  }
  t.ok(isClawpeerError(error, 'PROTOCOL') && /200000 entries/.test(error.message), 'PROTOCOL naming the entry count');
  // And a length-delimited field claiming more bytes than the frame holds is refused.
  const lying = concatBytes([pbVarint((18 << 3) | 2), pbVarint(0xffff_fff0), new Uint8Array(10)]);
  t.throws(() => decodeControl(Buffer.from(lying), { maxBytes: 16 * MIB }), { code: 'PROTOCOL' });
});
