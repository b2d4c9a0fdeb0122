// Merkle root over id sets: matches an independent from-scratch build of the documented layout,
// is order-independent, and stays right under incremental adds/deletes and `rootAfter`.
import t from 'tap';
import fc from 'fast-check';
import { randomBytes } from 'node:crypto';
import { blake3 } from '@napi-rs/blake-hash';
import { EMPTY_SET_ROOT, MerkleIdSet, compareIds } from '../../src/sync/merkle-root.js';
import { hex } from './harness.js';

/** The layout documented in merkle-root.ts, built from scratch with no caching. */
function referenceRoot(ids: Uint8Array[]): string {
  const sorted = [...new Map(ids.map((id) => [hex(id), id])).values()].sort((a, b) => compareIds(a, 0, b, 0));
  const leaves: Uint8Array[] = [];
  for (let b = 0; b < 4096; b++) {
    const inBucket = sorted.filter((id) => ((id[0]! << 4) | (id[1]! >>> 4)) === b);
    leaves.push(blake3(Buffer.concat([Buffer.from([0]), ...inBucket])));
  }
  const level = (domain: number, children: Uint8Array[]): Uint8Array[] => {
    const out: Uint8Array[] = [];
    for (let i = 0; i < children.length; i += 16)
      out.push(blake3(Buffer.concat([Buffer.from([domain]), ...children.slice(i, i + 16)])));
    return out;
  };
  const l2 = level(2, level(1, leaves));
  const size = Buffer.alloc(8);
  size.writeBigUInt64LE(BigInt(sorted.length));
  return hex(blake3(Buffer.concat([Buffer.from([3]), size, ...l2])));
}

const arbId = fc.uint8Array({ minLength: 32, maxLength: 32 });
// Ids squeezed into few buckets, so buckets hold many ids and shift/insert paths get exercised.
const arbCrowdedId = fc
  .tuple(fc.integer({ min: 0, max: 3 }), fc.uint8Array({ minLength: 31, maxLength: 31 }))
  .map(([b, rest]) => {
    const id = new Uint8Array(32);
    id[0] = b;
    id.set(rest, 1);
    id[1] = id[1]! & 0x0f;
    return id;
  });

t.test('the root follows the documented layout', async (t) => {
  t.equal(hex(EMPTY_SET_ROOT), referenceRoot([]));
  const ids = [randomBytes(32), randomBytes(32), new Uint8Array(32), new Uint8Array(32).fill(0xff)];
  t.equal(hex(MerkleIdSet.fromIds(ids).root()), referenceRoot(ids));
  // pinned: a change to the layout must be deliberate (it is a wire format)
  t.equal(hex(EMPTY_SET_ROOT), 'cb3cea340f49e9d5b593487a677878a7205599d60853f5c7428c1fbd8c4934ed');
});

t.test('property: root is order-independent, commits to membership and size', async (t) => {
  fc.assert(
    fc.property(fc.array(fc.oneof(arbId, arbCrowdedId), { maxLength: 60 }), fc.integer(), (ids, seed) => {
      const shuffled = [...ids].sort(() => 0).reverse();
      if (seed % 2 === 0) shuffled.push(...ids.slice(0, 3)); // duplicates collapse
      const a = MerkleIdSet.fromIds(ids);
      const b = MerkleIdSet.fromPacked(Buffer.concat(shuffled));
      if (hex(a.root()) !== hex(b.root()) || a.size !== b.size) return false;
      const sorted = MerkleIdSet.fromPacked(Buffer.concat([...ids].sort((x, y) => Buffer.compare(x, y)))); // the store's key order
      if (hex(sorted.root()) !== hex(a.root()) || sorted.size !== a.size) return false;
      if (hex(a.root()) !== referenceRoot(ids)) return false;
      if (ids.length === 0) return true;
      const c = MerkleIdSet.fromIds(ids.slice(1).filter((x) => hex(x) !== hex(ids[0]!)));
      return hex(c.root()) !== hex(a.root());
    }),
    { numRuns: 60 },
  );
  t.pass();
});

t.test('property: incremental add/delete and rootAfter agree with a rebuild', async (t) => {
  fc.assert(
    fc.property(
      fc.array(fc.oneof(arbId, arbCrowdedId), { maxLength: 80 }),
      fc.array(fc.tuple(fc.boolean(), fc.nat()), { maxLength: 80 }),
      (pool, ops) => {
        if (pool.length === 0) return true;
        const set = new MerkleIdSet();
        const model = new Map<string, Uint8Array>();
        for (const [isAdd, k] of ops) {
          const id = pool[k % pool.length]!;
          if (isAdd) {
            if (set.add(id) === model.has(hex(id))) return false;
            model.set(hex(id), id);
          } else {
            if (set.delete(id) !== model.has(hex(id))) return false;
            model.delete(hex(id));
          }
          if (set.has(id) !== model.has(hex(id))) return false;
        }
        const now = [...model.values()];
        if (set.size !== now.length || hex(set.root()) !== referenceRoot(now)) return false;
        // rootAfter: add the absent pool ids, remove every other present one
        const adds = [...new Map(pool.filter((id) => !model.has(hex(id))).map((id) => [hex(id), id])).values()];
        const removes = now.filter((_, i) => i % 2 === 0);
        const after = now.filter((_, i) => i % 2 === 1).concat(adds);
        const before = hex(set.root());
        if (hex(set.rootAfter(adds, removes)!) !== referenceRoot(after)) return false;
        return hex(set.root()) === before; // rootAfter did not modify the set
      },
    ),
    { numRuns: 60 },
  );
  t.pass();
});

t.test('property: a clone has the same ids and root, and the two change independently', async (t) => {
  fc.assert(
    fc.property(
      fc.array(fc.oneof(arbId, arbCrowdedId), { maxLength: 80 }),
      fc.array(fc.oneof(arbId, arbCrowdedId), { minLength: 1, maxLength: 10 }),
      (ids, more) => {
        const set = MerkleIdSet.fromIds(ids);
        set.add(more[0]!); // a pending, not yet hashed change is carried over too
        const copy = set.clone();
        const rootBefore = hex(set.root());
        if (hex(copy.root()) !== rootBefore || copy.size !== set.size) return false;
        if (hex(copy.toPacked()) !== hex(set.toPacked())) return false;
        for (const id of more) copy.add(id);
        copy.delete(ids[0] ?? more[0]!);
        if (hex(set.root()) !== rootBefore) return false; // the original did not change
        const rebuilt = MerkleIdSet.fromPacked(copy.toPacked());
        return hex(copy.root()) === hex(rebuilt.root()) && copy.size === rebuilt.size;
      },
    ),
    { numRuns: 60 },
  );
  t.pass();
});

t.test('rootAfter refuses changes that are not set changes', async (t) => {
  const [x, y, z] = [randomBytes(32), randomBytes(32), randomBytes(32)];
  const set = MerkleIdSet.fromIds([x, y]);
  t.equal(set.rootAfter([x], []), undefined, 'adding a present id');
  t.equal(set.rootAfter([], [z]), undefined, 'removing an absent id');
  t.equal(set.rootAfter([z, z], []), undefined, 'adding one id twice');
  t.equal(set.rootAfter([], [x, x]), undefined, 'removing one id twice');
  t.equal(hex(set.rootAfter([z], [x])!), hex(MerkleIdSet.fromIds([y, z]).root()));
  t.equal(hex(set.rootAfter([], [])!), hex(set.root()));
});

t.test('ids must be 32 bytes; toPacked is sorted', async (t) => {
  const set = new MerkleIdSet();
  t.throws(() => set.add(new Uint8Array(31)), TypeError);
  t.throws(() => MerkleIdSet.fromPacked(new Uint8Array(33)), TypeError);
  const ids = Array.from({ length: 500 }, () => randomBytes(32));
  const packed = MerkleIdSet.fromIds(ids).toPacked();
  const expected = [...ids]
    .sort((a, b) => compareIds(a, 0, b, 0))
    .map(hex)
    .join('');
  t.equal(hex(packed), expected);
});
