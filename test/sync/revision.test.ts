import t, { type Test } from 'tap';
import fc from 'fast-check';
import { isClawpeerError } from '../../src/errors.js';
import {
  MAX_REVISION_BYTES,
  decodeRevision,
  decodeRevisionWithId,
  encodeRevision,
  revisionEntry,
  revisionIdOf,
  sameContent,
} from '../../src/sync/revision.js';
import type { Revision } from '../../src/sync/revision.js';
import { vectorFrom, vectorsEqual } from '../../src/sync/version-vector.js';

const ROOT = new Uint8Array(32).fill(0x11);

const sample: Revision = {
  path: 'docs/a.txt',
  kind: 'file',
  contentRoot: ROOT,
  size: 5,
  mode: 0o644,
  mtimeNs: 1_700_000_000_123_456_789n,
  deleted: false,
  origin: 'A',
  vector: vectorFrom({ A: 1, B: 2 }),
  linkTarget: '',
};

// The pinned encoding of `sample`, field by field.
const SAMPLE_HEX = [
  '01', //                    format version 1
  '00', //                    kind: file
  '00', //                    flags: live
  '01a4', //                  mode 0o644
  '0000000000000005', //      size 5
  '17979cfe3d85cd15', //      mtimeNs 1700000000123456789
  '20' + '11'.repeat(32), //  content root: 32 bytes
  '000a' + '646f63732f612e747874', // path "docs/a.txt"
  '01' + '41', //             origin "A"
  '0000', //                  link target: empty
  '0002', //                  vector: 2 entries
  '01' + '41' + '0000000000000001', // A:1
  '01' + '42' + '0000000000000002', // B:2
].join('');
// BLAKE3 of the bytes above: a change to the encoding must change this test on purpose.
const SAMPLE_ID_HEX = '824469f827c8f762361b0b04e7030d01bd9c30bc1ccbb461297c9d1b01f07f11';

function same(a: Revision, b: Revision): boolean {
  return (
    a.path === b.path &&
    a.kind === b.kind &&
    Buffer.from(a.contentRoot).equals(b.contentRoot) &&
    a.size === b.size &&
    a.mode === b.mode &&
    a.mtimeNs === b.mtimeNs &&
    a.deleted === b.deleted &&
    a.origin === b.origin &&
    vectorsEqual(a.vector, b.vector) &&
    a.linkTarget === b.linkTarget
  );
}

function expectProtocol(t: Test, bytes: Uint8Array, message: RegExp, name: string, maxBytes?: number): void {
  try {
    decodeRevision(bytes, maxBytes);
    t.fail(`${name}: decoded`);
  } catch (err) {
    t.ok(isClawpeerError(err, 'PROTOCOL'), `${name}: PROTOCOL`);
    t.match((err as Error).message, message, name);
  }
}

t.test('a file revision encodes to the pinned bytes, and its id is BLAKE3 of them', async (t) => {
  const bytes = encodeRevision(sample);
  t.equal(Buffer.from(bytes).toString('hex'), SAMPLE_HEX);
  const entry = revisionEntry(sample);
  t.equal(Buffer.from(entry.id).toString('hex'), SAMPLE_ID_HEX);
  t.ok(same(decodeRevision(bytes), sample));
});

t.test('tombstone, directory and symlink encode their own canonical forms', async (t) => {
  const tomb: Revision = {
    ...sample,
    contentRoot: new Uint8Array(0),
    size: 0,
    deleted: true,
    mtimeNs: -1_000_000_000n,
  };
  const hex = Buffer.from(encodeRevision(tomb)).toString('hex');
  t.equal(hex.slice(0, 6), '010001', 'version 1, kind file, deleted flag');
  t.equal(hex.slice(26, 42), 'ffffffffc4653600', "negative mtime is two's complement");
  t.equal(hex.slice(42, 44), '00', 'no content root');
  t.ok(same(decodeRevision(encodeRevision(tomb)), tomb));

  const link: Revision = {
    ...sample,
    kind: 'symlink',
    contentRoot: new Uint8Array(0),
    linkTarget: 'ü/x',
    size: 4,
    mode: 0o777,
  };
  t.ok(same(decodeRevision(encodeRevision(link)), link));
  const dir: Revision = { ...sample, kind: 'dir', contentRoot: new Uint8Array(0), size: 0, mode: 0o755 };
  t.ok(same(decodeRevision(encodeRevision(dir)), dir));
});

t.test('encoder refuses revisions that break the canonical rules', async (t) => {
  const bad: [string, Partial<Revision>][] = [
    ['file without root', { contentRoot: new Uint8Array(0) }],
    ['dir with root', { kind: 'dir', size: 0 }],
    ['tombstone with size', { deleted: true, contentRoot: new Uint8Array(0) }],
    ['unnormalised path', { path: './docs/a.txt' }],
    ['absolute path', { path: '/etc/passwd' }],
    ['dotdot path', { path: 'a/../b' }],
    ['mode beyond permission bits', { mode: 0o100644 }],
    ['vector misses origin', { vector: vectorFrom({ B: 2 }) }],
    ['symlink size mismatch', { kind: 'symlink', contentRoot: new Uint8Array(0), linkTarget: 'x', size: 5 }],
    ['link target on a file', { linkTarget: 'x' }],
    ['origin with a space', { origin: 'A B', vector: vectorFrom({ B: 1 }) }],
  ];
  for (const [name, patch] of bad) t.throws(() => encodeRevision({ ...sample, ...patch }), TypeError, name);
});

t.test('decoder refuses malformed records a peer could send', async (t) => {
  const good = Buffer.from(SAMPLE_HEX, 'hex');
  const patched = (offset: number, hex: string): Buffer => {
    const b = Buffer.from(good);
    Buffer.from(hex, 'hex').copy(b, offset);
    return b;
  };
  expectProtocol(t, good.subarray(0, 10), /shorter than the 21-byte fixed header/, 'short header');
  expectProtocol(t, good.subarray(0, good.length - 1), /truncated/, 'truncated vector');
  expectProtocol(t, good.subarray(0, 40), /truncated in content root/, 'truncated root');
  expectProtocol(t, Buffer.concat([good, Buffer.from([0])]), /trailing bytes/, 'trailing');
  expectProtocol(t, patched(0, '02'), /format version 2/, 'version');
  expectProtocol(t, patched(1, '07'), /unknown kind code 7/, 'kind');
  expectProtocol(t, patched(2, '02'), /unknown flag bits/, 'flags');
  expectProtocol(t, patched(5, 'ff'), /exceeds 2\^53/, 'size');
  expectProtocol(t, patched(21, '10'), /content root is 16 bytes/, 'root length');
  // Well-formed bytes that break a canonical rule: a live file without a content root.
  const rootless = Buffer.from(SAMPLE_HEX.replace('20' + '11'.repeat(32), '00'), 'hex');
  expectProtocol(t, rootless, /a file needs a 32-byte content root/, 'file without root');
  // Path "docs/a.txt" sits at 21 + 33 + 2 = 56.
  expectProtocol(t, patched(56, '2e2e2f'), /\.\./, 'dotdot path');
  expectProtocol(t, patched(56, '2f'), /absolute/, 'absolute path');
  expectProtocol(t, patched(56, 'ff'), /not valid UTF-8/, 'bad UTF-8');
  expectProtocol(t, good, /more than the 50-byte limit/, 'max size', 50);
  t.equal(MAX_REVISION_BYTES, 128 << 10);
});

t.test('decodeRevisionWithId checks the announced id', async (t) => {
  const bytes = encodeRevision(sample);
  const id = revisionIdOf(bytes);
  t.ok(same(decodeRevisionWithId(bytes, id).revision, sample));
  const wrong = Uint8Array.from(id);
  wrong[0]! ^= 1;
  t.throws(() => decodeRevisionWithId(bytes, wrong), { code: 'HASH_MISMATCH' });
});

t.test('random valid revisions round-trip byte-exactly', async (t) => {
  const arbRevision = fc
    .record({
      path: fc.constantFrom('a', 'dir/b.txt', 'ü/ñ.md', 'x/y/z'),
      kind: fc.constantFrom('file' as const, 'dir' as const, 'symlink' as const),
      deleted: fc.boolean(),
      root: fc.uint8Array({ minLength: 32, maxLength: 32 }),
      size: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
      mode: fc.integer({ min: 0, max: 0o7777 }),
      mtimeNs: fc.bigInt({ min: -(1n << 63n), max: (1n << 63n) - 1n }),
      target: fc.string({ minLength: 1, maxLength: 20 }).filter((s) => !s.includes('\0')),
      vector: fc.dictionary(fc.constantFrom('n1', 'n2', 'n3'), fc.integer({ min: 1, max: 1000 })),
    })
    .map(({ path, kind, deleted, root, size, mode, mtimeNs, target, vector }): Revision => {
      const live = !deleted;
      const linkTarget = live && kind === 'symlink' ? target : '';
      return {
        path,
        kind,
        deleted,
        mode,
        mtimeNs,
        origin: 'n1',
        contentRoot: live && kind === 'file' ? root : new Uint8Array(0),
        size: deleted || kind === 'dir' ? 0 : kind === 'symlink' ? Buffer.byteLength(linkTarget) : size,
        linkTarget,
        vector: vectorFrom({ ...vector, n1: Math.max(1, vector['n1'] ?? 0) }),
      };
    });
  fc.assert(
    fc.property(arbRevision, (rev) => {
      const bytes = encodeRevision(rev);
      const back = decodeRevision(bytes);
      return same(back, rev) && Buffer.from(encodeRevision(back)).equals(bytes);
    }),
    { numRuns: 300 },
  );
  t.pass('property held');
});

t.test('random bytes never crash the decoder: they decode or fail with PROTOCOL', async (t) => {
  const good = encodeRevision(sample);
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: good.length - 1 }),
      fc.integer({ min: 0, max: 255 }),
      fc.integer({ min: 0, max: good.length }),
      (at, value, cut) => {
        const b = Uint8Array.from(good);
        b[at] = value;
        try {
          const rev = decodeRevision(b.subarray(0, cut));
          return Buffer.from(encodeRevision(rev)).equals(b.subarray(0, cut)); // accepted only if canonical
        } catch (err) {
          return isClawpeerError(err, 'PROTOCOL');
        }
      },
    ),
    { numRuns: 500 },
  );
  t.pass('property held');
});

t.test('sameContent compares what is left at the path, not metadata', async (t) => {
  const other = { ...sample, mode: 0o600, mtimeNs: 1n, origin: 'B', vector: vectorFrom({ B: 9 }) };
  t.ok(sameContent(sample, other));
  t.notOk(sameContent(sample, { ...sample, contentRoot: new Uint8Array(32) }));
  const tomb = { ...sample, deleted: true, contentRoot: new Uint8Array(0), size: 0 };
  t.ok(sameContent(tomb, { ...tomb, kind: 'dir' as const }));
  t.notOk(sameContent(tomb, sample));
  const dirA = { ...sample, kind: 'dir' as const, contentRoot: new Uint8Array(0), size: 0 };
  t.ok(sameContent(dirA, { ...dirA, mode: 0o700 }));
  t.notOk(sameContent(dirA, sample));
});
