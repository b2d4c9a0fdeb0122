import t from 'tap';
import fc from 'fast-check';
import { isClawpeerError } from '../../src/errors.js';
import {
  EMPTY_VECTOR,
  MAX_VECTOR_ENTRIES,
  compareVectors,
  counterOf,
  decodeVector,
  encodeVector,
  incrementVector,
  mergeVectors,
  vectorFrom,
  vectorsEqual,
} from '../../src/sync/version-vector.js';
import type { VersionVector } from '../../src/sync/version-vector.js';

const NUM_RUNS = 300;
const nodeIds = ['12D3KooWAlice', '12D3KooWBob', 'carol', 'd', 'Zed'];
const arbVector: fc.Arbitrary<VersionVector> = fc
  .dictionary(fc.constantFrom(...nodeIds), fc.integer({ min: 0, max: 5 }), { maxKeys: nodeIds.length })
  .map((o) => vectorFrom(o));

/** The naive oracle: compare every node's counter. */
function oracle(a: VersionVector, b: VersionVector): string {
  let le = true;
  let ge = true;
  for (const id of nodeIds) {
    if (counterOf(a, id) > counterOf(b, id)) le = false;
    if (counterOf(a, id) < counterOf(b, id)) ge = false;
  }
  return le && ge ? 'equal' : le ? 'before' : ge ? 'after' : 'concurrent';
}

t.test('compare agrees with a per-node oracle and is antisymmetric', async (t) => {
  fc.assert(
    fc.property(arbVector, arbVector, (a, b) => {
      const ab = compareVectors(a, b);
      const flip = { equal: 'equal', before: 'after', after: 'before', concurrent: 'concurrent' } as const;
      return ab === oracle(a, b) && compareVectors(b, a) === flip[ab];
    }),
    { numRuns: NUM_RUNS },
  );
  t.pass('property held');
});

t.test('merge is the least upper bound: commutative, idempotent, dominates both', async (t) => {
  fc.assert(
    fc.property(arbVector, arbVector, arbVector, (a, b, c) => {
      const m = mergeVectors(a, b);
      const sameBytes = (x: VersionVector, y: VersionVector): boolean =>
        Buffer.from(encodeVector(x)).equals(encodeVector(y));
      return (
        sameBytes(m, mergeVectors(b, a)) &&
        sameBytes(mergeVectors(m, c), mergeVectors(a, mergeVectors(b, c))) &&
        sameBytes(mergeVectors(a, a), a) &&
        ['after', 'equal'].includes(compareVectors(m, a)) &&
        ['after', 'equal'].includes(compareVectors(m, b))
      );
    }),
    { numRuns: NUM_RUNS },
  );
  t.pass('property held');
});

t.test('increment makes a strictly later vector; two increments by different nodes are concurrent', async (t) => {
  fc.assert(
    fc.property(
      arbVector,
      fc.constantFrom(...nodeIds),
      fc.constantFrom(...nodeIds),
      fc.integer({ min: 0, max: 20 }),
      (v, x, y, floor) => {
        const vx = incrementVector(v, x, floor);
        const ok = compareVectors(v, vx) === 'before' && counterOf(vx, x) === Math.max(counterOf(v, x) + 1, floor);
        if (x === y) return ok;
        return ok && compareVectors(vx, incrementVector(v, y)) === 'concurrent';
      },
    ),
    { numRuns: NUM_RUNS },
  );
  t.pass('property held');
});

t.test('encoding is canonical and round-trips', async (t) => {
  fc.assert(
    fc.property(arbVector, (v) => {
      const bytes = encodeVector(v);
      const back = decodeVector(bytes);
      return vectorsEqual(back, v) && Buffer.from(encodeVector(back)).equals(bytes);
    }),
    { numRuns: NUM_RUNS },
  );
  // Insertion order and zero counters do not change the bytes.
  const a = encodeVector(
    new Map([
      ['b', 2],
      ['a', 1],
      ['z', 0],
    ]),
  );
  const b = encodeVector(vectorFrom({ a: 1, b: 2 }));
  t.same(Buffer.from(a), Buffer.from(b));
  // Pinned bytes: u16 count | (u8 len | id | u64 counter)...
  t.equal(Buffer.from(b).toString('hex'), '0002' + '01' + '61' + '0000000000000001' + '01' + '62' + '0000000000000002');
  t.equal(Buffer.from(encodeVector(EMPTY_VECTOR)).toString('hex'), '0000');
});

t.test('decoder refuses non-canonical and oversized input with PROTOCOL errors', async (t) => {
  const cases: [string, string, RegExp][] = [
    ['truncated count', '00', /truncated before its entry count/],
    ['truncated entry', '0001' + '01' + '61' + '00000000', /truncated in entry 0/],
    ['zero counter', '0001' + '01' + '61' + '0000000000000000', /counter 0/],
    ['unsorted', '0002' + '01' + '62' + '0000000000000001' + '01' + '61' + '0000000000000001', /ascending/],
    ['duplicate', '0002' + '01' + '61' + '0000000000000001' + '01' + '61' + '0000000000000002', /ascending/],
    ['empty id', '0001' + '00' + '0000000000000001', /node id is empty/],
    ['non-ASCII id', '0001' + '01' + 'ff' + '0000000000000001', /printable ASCII/],
    ['counter beyond 2^53', '0001' + '01' + '61' + '0020000000000000', /exceeds 2\^53/],
    ['too many entries', (MAX_VECTOR_ENTRIES + 1).toString(16).padStart(4, '0'), /more than 1024/],
    ['trailing bytes', '0000' + '00', /trailing/],
  ];
  for (const [name, hex, message] of cases) {
    t.throws(() => decodeVector(Buffer.from(hex, 'hex')), message, name);
    try {
      decodeVector(Buffer.from(hex, 'hex'));
    } catch (err) {
      t.ok(isClawpeerError(err, 'PROTOCOL'), `${name}: PROTOCOL code`);
    }
  }
});

t.test('vectorFrom refuses bad ids and counters (programming errors)', async (t) => {
  t.throws(() => vectorFrom({ 'has space': 1 }), TypeError);
  t.throws(() => vectorFrom({ a: -1 }), TypeError);
  t.throws(() => vectorFrom({ a: 1.5 }), TypeError);
  t.throws(
    () =>
      vectorFrom([
        ['a', 1],
        ['a', 2],
      ]),
    TypeError,
  );
  t.throws(() => incrementVector(vectorFrom({ a: Number.MAX_SAFE_INTEGER }), 'a'), RangeError);
});
