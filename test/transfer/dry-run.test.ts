// The dry-run report from a manifest and the receiver's plan: files to publish in manifest
// order, a chunk shared by several counted once, unchanged files counted, bad bitmaps refused.
import t from 'tap';
import { bitmapFromKeys, uniqueChunks } from '../../src/transfer/chunk-order.js';
import { dryRunReport } from '../../src/transfer/dry-run.js';
import { bitmapSet, newBitmap, type ManifestEntry } from '../../src/protocol/messages.js';

const id = (n: number): Uint8Array => new Uint8Array(32).fill(n);
function fileEntry(path: string, chunks: readonly [number, number][]): ManifestEntry {
  const chunkIds = new Uint8Array(chunks.length * 32);
  chunks.forEach(([n], i) => chunkIds.set(id(n), i * 32));
  const lengths = chunks.map(([, len]) => len);
  return {
    path,
    kind: 'file',
    size: lengths.reduce((a, b) => a + b, 0),
    mode: 0o644,
    mtimeMs: 0,
    linkTarget: '',
    root: new Uint8Array(32),
    chunkIds,
    chunkLengths: lengths,
  };
}
const dir: ManifestEntry = {
  path: 'd',
  kind: 'dir',
  size: 0,
  mode: 0o755,
  mtimeMs: 0,
  linkTarget: '',
  root: new Uint8Array(0),
  chunkIds: new Uint8Array(0),
  chunkLengths: [],
};

t.test('files to publish, with the bytes that would travel for each', async (t) => {
  // a: chunks 1, 2; d (a directory); b: chunks 2, 3 (2 shared with a); c: chunk 4, unchanged.
  const entries = [
    fileEntry('a', [
      [1, 100],
      [2, 50],
    ]),
    dir,
    fileEntry('b', [
      [2, 50],
      [3, 30],
    ]),
    fileEntry('c', [[4, 10]]),
  ];
  const { keys } = uniqueChunks(entries);
  const lacking = bitmapFromKeys(keys, new Set([keys[1]!, keys[2]!])); // chunks 2 and 3; 1 is held
  const publish = newBitmap(3);
  bitmapSet(publish, 0);
  bitmapSet(publish, 1);
  const r = dryRunReport(entries, { lacking, uniqueCount: keys.length }, { publish });
  t.same(
    r.files,
    [
      { path: 'a', bytes: 150, sendBytes: 50 },
      { path: 'b', bytes: 80, sendBytes: 30 },
    ],
    'chunk 2 counted once, for a',
  );
  t.equal(r.filesUnchanged, 1);
  t.equal(r.chunksToSend, 2);
  t.equal(r.bytesToSend, 80);
  t.equal(r.others, undefined, 'no create bitmap: the receiver did not say (an older one)');
});

t.test('directories and symlinks to create, from the create bitmap over those entries', async (t) => {
  const link: ManifestEntry = { ...dir, path: 'd/l', kind: 'symlink', linkTarget: '../a', mode: 0o777 };
  const entries = [dir, fileEntry('a', [[1, 10]]), { ...dir, path: 'e' }, link];
  const { keys } = uniqueChunks(entries);
  const create = newBitmap(3);
  bitmapSet(create, 0);
  bitmapSet(create, 2);
  const r = dryRunReport(
    entries,
    { lacking: newBitmap(keys.length), uniqueCount: keys.length },
    { publish: newBitmap(1), create },
  );
  t.same(
    r.others,
    [
      { path: 'd', kind: 'dir' },
      { path: 'd/l', kind: 'symlink', target: '../a' },
    ],
    'e is there already',
  );
  t.throws(
    () =>
      dryRunReport(
        entries,
        { lacking: newBitmap(keys.length), uniqueCount: keys.length },
        { publish: newBitmap(1), create: newBitmap(9) },
      ),
    { code: 'PROTOCOL', message: /create bitmap has 2 bytes for 3 directories and symlinks/ },
  );
});

t.test('bitmaps that do not fit the manifest are PROTOCOL errors', async (t) => {
  const entries = [fileEntry('a', [[1, 100]])];
  const ok = { lacking: newBitmap(1), uniqueCount: 1 };
  t.throws(() => dryRunReport(entries, ok, { publish: newBitmap(9) }), {
    code: 'PROTOCOL',
    message: /publish bitmap has 2 bytes for 1 files/,
  });
  t.throws(() => dryRunReport(entries, { lacking: newBitmap(1), uniqueCount: 2 }, { publish: newBitmap(1) }), {
    code: 'PROTOCOL',
  });
});

t.test('identical files whose mtime or permissions would be set, from the touch bitmaps', async (t) => {
  const entries = [fileEntry('a', [[1, 10]]), dir, fileEntry('b', [[2, 10]]), fileEntry('c', [[3, 10]])];
  const { keys } = uniqueChunks(entries);
  const want = { lacking: newBitmap(keys.length), uniqueCount: keys.length };
  const touchTime = newBitmap(3);
  bitmapSet(touchTime, 0);
  bitmapSet(touchTime, 2);
  const touchPerms = newBitmap(3);
  bitmapSet(touchPerms, 2);
  const r = dryRunReport(entries, want, { publish: newBitmap(3), touchTime, touchPerms });
  t.same(
    r.touched,
    [
      { path: 'a', time: true, perms: false },
      { path: 'c', time: true, perms: true },
    ],
    'b is identical and its metadata matches',
  );
  t.equal(r.filesUnchanged, 3, 'their content is unchanged');
  t.same(
    dryRunReport(entries, want, { publish: newBitmap(3) }).touched,
    [],
    'no touch bitmaps: nothing to say (none, or an older receiver)',
  );
  t.throws(() => dryRunReport(entries, want, { publish: newBitmap(3), touchPerms: newBitmap(17) }), {
    code: 'PROTOCOL',
    message: /touch-perms bitmap has 3 bytes for 3 files/,
  });
});
