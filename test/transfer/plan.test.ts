import fc from 'fast-check';
import t from 'tap';
import { isClawpeerError } from '../../src/errors.js';
import { chunkKey, planTransfer, type FileManifest } from '../../src/transfer/plan.js';
import { fakeChunkId } from './sim.js';

const id = fakeChunkId;
function file(path: string, chunks: [number, number][]): FileManifest {
  return {
    path,
    size: chunks.reduce((s, [, l]) => s + l, 0),
    mode: 0o644,
    mtimeMs: 0,
    chunks: chunks.map(([n, length]) => ({ id: id(n), length })),
  };
}

function protocolError(fn: () => unknown, pattern: RegExp): string {
  try {
    fn();
  } catch (err) {
    if (isClawpeerError(err, 'PROTOCOL') && pattern.test(err.message)) return err.message;
    throw err;
  }
  throw new Error('did not throw');
}

t.test('chunkKey is 64 hex chars and refuses wrong lengths', async (t) => {
  t.equal(chunkKey(new Uint8Array(32).fill(0xab)), 'ab'.repeat(32));
  const big = new Uint8Array(40).fill(1);
  big.set(new Uint8Array(32).fill(0xcd), 4);
  t.equal(chunkKey(big.subarray(4, 36)), 'cd'.repeat(32), 'honours byteOffset');
  protocolError(() => chunkKey(new Uint8Array(31)), /32 bytes, got 31/);
});

t.test('a chunk shared by files and positions is sent once; present chunks are skipped', async (t) => {
  // chunk 1 appears in a (twice) and b; chunk 2 the receiver has; chunk 3 only in b.
  const files = [
    file('a', [
      [1, 100],
      [2, 50],
      [1, 100],
    ]),
    file('b', [
      [3, 10],
      [1, 100],
    ]),
    file('empty', []),
  ];
  const plan = planTransfer(files, [id(3), id(1)]);
  t.same(
    plan.chunks.map((c) => [c.fileIndex, c.chunkIndex, c.offset, c.length]),
    [
      [0, 0, 0, 100],
      [1, 0, 0, 10],
    ],
  );
  t.equal(plan.totalBytes, 110);
  t.same(
    plan.files.map((f) => [f.needed, f.present, f.sendFirst, f.sendEnd, f.sendBytes]),
    [
      [[0, 2], [1], 0, 1, 100],
      [[0, 1], [], 1, 2, 10],
      [[], [], 2, 2, 0],
    ],
  );
  t.same(plan.stats, {
    chunkRefs: 5,
    chunksSent: 2,
    bytesSent: 110,
    chunksSkipped: 3,
    bytesSkipped: 250,
    chunksPresent: 1,
    chunksDeduplicated: 2,
  });
});

t.test('nothing lacking: nothing to send', async (t) => {
  const plan = planTransfer(
    [
      file('a', [
        [1, 5],
        [2, 6],
      ]),
    ],
    [],
  );
  t.equal(plan.chunks.length, 0);
  t.equal(plan.totalBytes, 0);
  t.equal(plan.stats.chunksSkipped, 2);
});

t.test('refuses a bad answer or inconsistent manifests', async (t) => {
  const files = [
    file('a', [
      [1, 100],
      [2, 50],
    ]),
  ];
  t.match(
    protocolError(() => planTransfer(files, [id(9)]), /no offered file/),
    chunkKey(id(9)),
    'names the chunk',
  );
  protocolError(() => planTransfer(files, [id(1), id(1)]), /twice/);
  protocolError(() => planTransfer(files, [new Uint8Array(3)]), /32 bytes/);
  protocolError(() => planTransfer([{ ...files[0]!, size: 151 }], []), /add up to 150 bytes, size says 151/);
  protocolError(
    () => planTransfer([file('a', [[1, 100]]), file('b', [[1, 99]])], []),
    /length 99 here and 100 elsewhere/,
  );
  protocolError(() => planTransfer([file('a', [[1, 0]])], []), /invalid length 0/);
  protocolError(
    () => planTransfer([file('a', []), file('b', [])], [], { maxFiles: 1, maxChunkRefs: 10 }),
    /2 files, more than the limit of 1/,
  );
  protocolError(
    () =>
      planTransfer(
        [
          file('a', [
            [1, 1],
            [2, 1],
            [3, 1],
          ]),
        ],
        [],
        { maxFiles: 1, maxChunkRefs: 2 },
      ),
    /more than 2 chunk references/,
  );
});

t.test('property: matches a naive oracle', async (t) => {
  // Files drawn from a small pool of chunks so that repeats within and across files are common.
  const pool = 12;
  const lengthOf = (n: number): number => 1 + ((n * 7919) % 1000);
  const input = fc.record({
    files: fc.array(fc.array(fc.nat({ max: pool - 1 }), { maxLength: 8 }), { maxLength: 6 }),
    lackMask: fc.array(fc.boolean(), { minLength: pool, maxLength: pool }),
  });
  fc.assert(
    fc.property(input, ({ files: shapes, lackMask }) => {
      const files = shapes.map((ns, i) =>
        file(
          `f${i}`,
          ns.map((n) => [n, lengthOf(n)]),
        ),
      );
      const used = new Set(shapes.flat());
      const lacking = [...used].filter((n) => lackMask[n]).reverse(); // answer order must not matter
      const plan = planTransfer(files, lacking.map(id));

      // Oracle: every lacking chunk exactly once, at its first occurrence in (file, position) order.
      const expected: [number, number, number][] = [];
      const seen = new Set<number>();
      shapes.forEach((ns, f) =>
        ns.forEach((n, c) => {
          if (lacking.includes(n) && !seen.has(n)) {
            seen.add(n);
            expected.push([f, c, n]);
          }
        }),
      );
      const got = plan.chunks.map((c) => [c.fileIndex, c.chunkIndex, c.key] as const);
      if (JSON.stringify(got) !== JSON.stringify(expected.map(([f, c, n]) => [f, c, chunkKey(id(n))]))) {
        throw new Error(`chunks ${JSON.stringify(got)} != ${JSON.stringify(expected)}`);
      }
      const bytes = lacking.reduce((s, n) => s + lengthOf(n), 0);
      if (plan.totalBytes !== bytes || plan.stats.bytesSent !== bytes) throw new Error('byte total');
      const refs = shapes.flat().length;
      const s = plan.stats;
      if (s.chunksSent + s.chunksSkipped !== refs || s.chunksPresent + s.chunksDeduplicated !== s.chunksSkipped)
        throw new Error('stats identity');
      plan.files.forEach((fp, f) => {
        const ns = shapes[f]!;
        const needed = ns.flatMap((n, c) => (lacking.includes(n) ? [c] : []));
        const present = ns.flatMap((n, c) => (lacking.includes(n) ? [] : [c]));
        if (
          JSON.stringify(fp.needed) !== JSON.stringify(needed) ||
          JSON.stringify(fp.present) !== JSON.stringify(present)
        )
          throw new Error('needed/present');
        const range = plan.chunks.slice(fp.sendFirst, fp.sendEnd);
        if (range.some((c) => c.fileIndex !== f)) throw new Error('send range crosses files');
        if (range.reduce((x, c) => x + c.length, 0) !== fp.sendBytes) throw new Error('sendBytes');
      });
    }),
    { numRuns: 400, seed: 7 },
  );
  t.pass('400 random plans agree with the oracle');
});
