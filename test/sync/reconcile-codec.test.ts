// Reconcile message codec: pinned bytes per message, round trips, need-more on every prefix,
// and garbage rejected as PROTOCOL (never another exception, never a hang).
import t, { type Test } from 'tap';
import fc from 'fast-check';
import { isClawpeerError } from '../../src/errors.js';
import {
  MAX_IDS_PER_MESSAGE,
  MAX_SYMBOLS_PER_MESSAGE,
  decodeReconcileMessage,
  encodeReconcileMessage,
  encodedLength,
  type ReconcileMessage,
} from '../../src/sync/reconcile-codec.js';
import { allocateSymbols } from '../../src/sync/riblt.js';

/** Hex with spaces and `# comments` stripped, so expected bytes can be annotated. */
function annotated(text: string): Uint8Array {
  return Buffer.from(text.replace(/#[^\n]*/g, '').replace(/\s+/g, ''), 'hex');
}
const hexOf = (b: Uint8Array): string => Buffer.from(b).toString('hex');
const root = Uint8Array.from({ length: 32 }, (_, i) => i); // 00 01 .. 1f

function roundTrip(m: ReconcileMessage): ReconcileMessage {
  const bytes = encodeReconcileMessage(m);
  const d = decodeReconcileMessage(bytes);
  if (d.kind !== 'message') throw new Error('need-more on a whole message');
  if (d.bytesRead !== bytes.length) throw new Error('length mismatch');
  return d.message;
}

function protocolError(t: Test, bytes: Uint8Array, pattern: RegExp, max?: number): void {
  try {
    decodeReconcileMessage(bytes, max);
    t.fail(`expected PROTOCOL for ${hexOf(bytes)}`);
  } catch (err) {
    t.ok(isClawpeerError(err, 'PROTOCOL'), `PROTOCOL, got ${String(err)}`);
    t.match((err as Error).message, pattern);
  }
}

const rootHex = '000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f';

t.test('hello, equal, different, more, send-ids: exact bytes', async (t) => {
  const cases: [ReconcileMessage, string][] = [
    [
      { type: 'hello', version: 1, root, count: 300 },
      `24          # body length 36
       01          # tag hello
       01          # version 1
       ${rootHex}  # root
       ac 02       # count 300 (LEB128)`,
    ],
    [{ type: 'equal' }, '01 02 # length 1, tag equal'],
    [
      { type: 'different', root, count: 0, cells: 16 },
      `23 03 ${rootHex} # length 35, tag different, root
       00             # count 0
       10             # 16 cells follow`,
    ],
    [{ type: 'more', start: 16, cells: 200 }, '04 05 10 c8 01 # length 4, tag more, start 16, 200 cells'],
    [{ type: 'send-ids' }, '01 06 # length 1, tag send-ids'],
  ];
  for (const [m, expected] of cases) {
    const bytes = encodeReconcileMessage(m);
    t.equal(hexOf(bytes), hexOf(annotated(expected)), m.type);
    t.equal(encodedLength(m), bytes.length, `${m.type} length`);
    t.same(roundTrip(m), m, `${m.type} round trip`);
  }
});

t.test('ids and symbols: exact bytes', async (t) => {
  const ids: ReconcileMessage = { type: 'ids', list: 'initiator-lacks', last: true, ids: root };
  t.equal(
    hexOf(encodeReconcileMessage(ids)),
    hexOf(
      annotated(`24 07  # length 36, tag ids
                     01     # list 1 = initiator-lacks
                     01     # last
                     01     # one id
                     ${rootHex}`),
    ),
  );
  const s = allocateSymbols(5, 2);
  new Uint8Array(s.idXor.buffer).set(root, 0); // cell 5: idXor = 00..1f
  s.checksum[0] = 0x04030201; // low word
  s.checksum[1] = 0x08070605; // high word -> u64 0x0807060504030201, little-endian on the wire
  s.count[0] = -1; // zigzag 1
  s.count[1] = 64; // zigzag 128 = 80 01
  const symbols: ReconcileMessage = { type: 'symbols', symbols: s };
  const bytes = encodeReconcileMessage(symbols);
  t.equal(
    hexOf(bytes),
    hexOf(
      annotated(`56 04  # length 86, tag symbols
                 05 02  # start 5, 2 cells
                 ${rootHex} 0102030405060708 01     # cell 5: idXor, checksum LE, count -1
                 ${'00'.repeat(32)} 0000000000000000 8001  # cell 6: empty ids, count 64`),
    ),
  );
  const back = roundTrip(symbols);
  t.equal(back.type, 'symbols');
  if (back.type === 'symbols') {
    t.equal(back.symbols.start, 5);
    t.same([...back.symbols.count], [-1, 64]);
    t.same([...back.symbols.checksum], [...s.checksum]);
    t.same([...back.symbols.idXor], [...s.idXor]);
  }
});

t.test('every strict prefix is need-more; two messages decode back to back', async (t) => {
  const a = encodeReconcileMessage({ type: 'hello', version: 1, root, count: 123456 });
  const b = encodeReconcileMessage({ type: 'more', start: 1, cells: 2 });
  for (let n = 0; n < a.length; n++) t.equal(decodeReconcileMessage(a.subarray(0, n)).kind, 'need-more', `prefix ${n}`);
  const both = Buffer.concat([a, b]);
  const first = decodeReconcileMessage(both);
  t.equal(first.kind === 'message' && first.bytesRead, a.length);
  const second = decodeReconcileMessage(both.subarray(a.length));
  t.equal(second.kind === 'message' && second.message.type, 'more');
});

t.test('malformed input is PROTOCOL with a message naming the fault', async (t) => {
  protocolError(t, annotated('81 80 40'), /length 1048577 exceeds the maximum 1048576/); // 1 MiB + 1
  protocolError(t, annotated('ff ff ff 7f'), /exceeds the maximum/);
  protocolError(t, annotated('05 01'), /exceeds the maximum 4/, 4);
  protocolError(t, annotated('00'), /empty body/);
  protocolError(t, annotated('01 63'), /unknown message tag 99/);
  protocolError(t, annotated('02 02 00'), /equal: 1 trailing bytes/);
  protocolError(t, annotated('03 05 00 80'), /more: truncated cells/);
  protocolError(t, annotated('04 05 00 80 00'), /redundant trailing zero/);
  protocolError(t, annotated(`22 01 01 ${rootHex}`), /hello: truncated count/);
  // symbols claiming 2 cells in 44 bytes: refused before allocating anything
  protocolError(t, annotated(`2c 04 00 02 ${'00'.repeat(41)}`), /2 cells cannot fit in 41 bytes/);
  protocolError(t, annotated(`05 04 00 ff ff 03`), /65535 cells exceed the maximum 16384/);
  // one cell whose count varint runs off the end of the body
  protocolError(t, annotated(`2c 04 00 01 ${'00'.repeat(40)} 80`), /truncated cell 0 count/);
  protocolError(t, annotated('04 07 03 01 00'), /unknown list kind 3/);
  protocolError(t, annotated('04 07 00 02 00'), /last flag must be 0 or 1/);
  protocolError(t, annotated('05 07 00 01 01 00'), /truncated ids/);
  protocolError(t, annotated(`06 07 00 01 81 fa 01`), /32001 ids exceed/);
  protocolError(t, annotated(`0b 05 ${'ff'.repeat(9)} 01`), /longer than 8 bytes/);
});

t.test('encoder refuses oversized messages (a caller bug)', async (t) => {
  t.throws(
    () => encodeReconcileMessage({ type: 'symbols', symbols: allocateSymbols(0, MAX_SYMBOLS_PER_MESSAGE + 1) }),
    RangeError,
  );
  t.throws(
    () =>
      encodeReconcileMessage({
        type: 'ids',
        list: 'full',
        last: true,
        ids: new Uint8Array((MAX_IDS_PER_MESSAGE + 1) * 32),
      }),
    RangeError,
  );
  t.throws(() => encodeReconcileMessage({ type: 'more', start: -1, cells: 1 }), RangeError);
  // the largest allowed messages fit the default maximum
  const big = allocateSymbols(0, MAX_SYMBOLS_PER_MESSAGE);
  big.count.fill(-(2 ** 40));
  t.ok(encodeReconcileMessage({ type: 'symbols', symbols: big }).length <= 1 << 20);
  t.ok(
    encodeReconcileMessage({ type: 'ids', list: 'full', last: true, ids: new Uint8Array(MAX_IDS_PER_MESSAGE * 32) })
      .length <=
      1 << 20,
  );
});

const arbMessage: fc.Arbitrary<ReconcileMessage> = fc.oneof(
  fc.record({
    type: fc.constant('hello' as const),
    version: fc.integer({ min: 0, max: 255 }),
    root: fc.uint8Array({ minLength: 32, maxLength: 32 }),
    count: fc.maxSafeNat(),
  }),
  fc.constant({ type: 'equal' as const }),
  fc.record({
    type: fc.constant('different' as const),
    root: fc.uint8Array({ minLength: 32, maxLength: 32 }),
    count: fc.maxSafeNat(),
    cells: fc.nat(),
  }),
  fc.record({ type: fc.constant('more' as const), start: fc.maxSafeNat(), cells: fc.maxSafeNat() }),
  fc.constant({ type: 'send-ids' as const }),
  fc.record({
    type: fc.constant('ids' as const),
    list: fc.constantFrom('full' as const, 'initiator-lacks' as const, 'responder-lacks' as const),
    last: fc.boolean(),
    ids: fc.integer({ min: 0, max: 5 }).chain((n) => fc.uint8Array({ minLength: n * 32, maxLength: n * 32 })),
  }),
  fc
    .record({
      start: fc.nat(),
      counts: fc.array(fc.integer({ min: -(2 ** 40), max: 2 ** 40 }), { maxLength: 6 }),
      seed: fc.nat(),
    })
    .map(({ start, counts, seed }) => {
      const s = allocateSymbols(start, counts.length);
      counts.forEach((c, i) => (s.count[i] = c));
      for (let i = 0; i < s.idXor.length; i++) s.idXor[i] = Math.imul(seed + i, 0x9e3779b1) >>> 0;
      for (let i = 0; i < s.checksum.length; i++) s.checksum[i] = Math.imul(seed ^ i, 0x85ebca6b) >>> 0;
      return { type: 'symbols' as const, symbols: s };
    }),
);

t.test('property: encode/decode round-trips and encodedLength is exact', async (t) => {
  fc.assert(
    fc.property(arbMessage, (m) => {
      const bytes = encodeReconcileMessage(m);
      if (encodedLength(m) !== bytes.length) return false;
      const back = roundTrip(m);
      return hexOf(encodeReconcileMessage(back)) === hexOf(bytes);
    }),
    { numRuns: 500 },
  );
  t.pass('500 random messages round-tripped');
});

t.test('property: random and mutated bytes give a message, need-more or PROTOCOL only', async (t) => {
  const valid = fc.tuple(arbMessage, fc.nat(), fc.integer({ min: 0, max: 255 })).map(([m, at, v]) => {
    const bytes = encodeReconcileMessage(m);
    if (bytes.length > 0) bytes[at % bytes.length] = v;
    return bytes;
  });
  fc.assert(
    fc.property(fc.oneof(fc.uint8Array({ maxLength: 200 }), valid), (bytes) => {
      try {
        const d = decodeReconcileMessage(bytes);
        return d.kind === 'need-more' || d.bytesRead <= bytes.length;
      } catch (err) {
        return isClawpeerError(err, 'PROTOCOL');
      }
    }),
    { numRuns: 2000 },
  );
  t.pass('2000 garbage inputs handled');
});
