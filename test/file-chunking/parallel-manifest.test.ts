import t from 'tap';
import fc from 'fast-check';
import { closeSync, existsSync, openSync, readdirSync } from 'node:fs';
import { mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { Worker } from 'node:worker_threads';
import { join } from 'node:path';
import { isClawpeerError } from '../../src/errors.js';
import { chunkFile, manifestFromFile } from '../../src/file-chunking/file-chunker.js';
import { toHex } from '../../src/chunking/blake3.js';
import { DEFAULT_CHUNKING } from '../../src/chunking/fastcdc.js';
import type { ChunkingParams } from '../../src/chunking/fastcdc.js';
import { manifestFromBytes, type ChunkRef } from '../../src/chunking/manifest.js';
import {
  ChunkingThreads,
  IDLE_STOP_MS,
  PARALLEL_MIN_BYTES,
  parallelManifest,
  threadsFor,
} from '../../src/file-chunking/parallel-manifest.js';
import {
  chunkSegment,
  SEGMENT_OVERLAP_MAX_CHUNKS,
  segmentRanges,
  stitchSegments,
  type ChunkedSegment,
} from '../../src/file-chunking/segments.js';
import { concatBytes, pseudoRandomBytes } from '../chunking/fixtures.js';

const SMALL: ChunkingParams = { minBytes: 64, avgBytes: 256, maxBytes: 1024, normalization: 2 };

const dir = await mkdtemp(join(tmpdir(), 'clawpeer-parallel-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));

const oneCore = availableParallelism() < 2 ? 'one core: large files are chunked in one pass' : false;

const listed = (chunks: readonly ChunkRef[]): string[] => chunks.map((c) => `${c.offset}+${c.length}:${toHex(c.id)}`);

/** Every segment of the file at `path` chunked in this thread, as the worker threads would. */
function segmentsOf(path: string, size: number, count: number, params: ChunkingParams): ChunkedSegment[] {
  const fd = openSync(path, 'r');
  try {
    return segmentRanges(size, count, params).map((r) => chunkSegment(fd, r.start, r.stop, params));
  } finally {
    closeSync(fd);
  }
}

let fileNo = 0;
async function fileWith(bytes: Uint8Array): Promise<string> {
  const path = join(dir, `f${fileNo++}`);
  await writeFile(path, bytes);
  return path;
}

t.test(
  'segments start at multiples of maxBytes, overlap the next by the meeting distance, and the last reads to the end',
  async (t) => {
    const ranges = segmentRanges(10_000, 4, SMALL);
    t.same(
      ranges.map((r) => r.start),
      [0, 3072, 6144, 9216],
    );
    t.same(
      ranges.map((r) => r.stop),
      [
        3072 + SEGMENT_OVERLAP_MAX_CHUNKS * 1024,
        6144 + SEGMENT_OVERLAP_MAX_CHUNKS * 1024,
        9216 + SEGMENT_OVERLAP_MAX_CHUNKS * 1024,
        Infinity,
      ],
    );
    t.same(
      segmentRanges(1500, 4, SMALL).map((r) => r.start),
      [0, 1024],
      'no segment starts at or past the end',
    );
  },
);

t.test('stitched segments are exactly the one-pass chunk list (random content, any segment count)', async (t) => {
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 1, max: 60_000 }),
      fc.integer({ min: 2, max: 9 }),
      fc.integer(),
      async (size, count, seed) => {
        const bytes = pseudoRandomBytes(size, seed);
        const path = await fileWith(bytes);
        const stitched = stitchSegments(segmentsOf(path, size, count, SMALL));
        await rm(path);
        if (stitched === undefined) return false;
        return listed(stitched).join() === listed(manifestFromBytes(bytes, SMALL).chunks).join();
      },
    ),
    { numRuns: 60 },
  );
  t.pass('60 random files');
});

t.test('content without content-defined cuts (zeros: every chunk is maxBytes) meets at the first cut', async (t) => {
  const bytes = new Uint8Array(20_000);
  const path = await fileWith(bytes);
  const stitched = stitchSegments(segmentsOf(path, bytes.length, 5, SMALL));
  t.ok(stitched !== undefined, 'the segments met');
  t.same(listed(stitched ?? []), listed(manifestFromBytes(bytes, SMALL).chunks));
});

t.test('passes that fall out of phase and never cut on content again do not meet: undefined', async (t) => {
  // Two segments of 41 KiB: the second pass starts 16 bytes before the end of the only random
  // stretch, so it cuts the zeros after it every maxBytes from its own start, while the first
  // pass cuts them every maxBytes from its last content-defined cut: they never coincide.
  const bytes = concatBytes(new Uint8Array(40_000), pseudoRandomBytes(2_000, 7), new Uint8Array(40_000));
  const path = await fileWith(bytes);
  t.same(
    segmentRanges(bytes.length, 2, SMALL).map((r) => r.start),
    [0, 41_984],
  );
  t.equal(stitchSegments(segmentsOf(path, bytes.length, 2, SMALL)), undefined);
});

t.test("a short last segment inside the previous pass's overlap ends the list with that pass", async (t) => {
  // 3 segments of 2 KiB over 4,200 bytes: the second pass reads to the end of the file itself.
  const bytes = pseudoRandomBytes(4_200, 99);
  const path = await fileWith(bytes);
  const segments = segmentsOf(path, bytes.length, 3, SMALL);
  t.ok(
    segments.slice(0, -1).some((s) => s.reachedEof),
    'a pass before the last reached the end',
  );
  t.same(listed(stitchSegments(segments) ?? []), listed(manifestFromBytes(bytes, SMALL).chunks));
});

t.test('segments that never meet give undefined (the caller chunks in one pass)', async (t) => {
  const id = new Uint8Array(32);
  const ids = (n: number): Uint8Array => new Uint8Array(32 * n);
  const first: ChunkedSegment = { start: 0, ends: [1000, 2000, 3000], ids: ids(3), reachedEof: false };
  const second: ChunkedSegment = { start: 2048, ends: [2500, 3500], ids: ids(2), reachedEof: true };
  t.equal(stitchSegments([first, second]), undefined, 'no cut of the first pass is a start of the second');
  t.equal(stitchSegments([{ ...first, start: 5 }, second]), undefined, 'the first pass must start at 0');
  const meeting: ChunkedSegment = {
    start: 2048,
    ends: [3000, 4000],
    ids: concatBytes(id, new Uint8Array(32).fill(1)),
    reachedEof: true,
  };
  const stitched = stitchSegments([first, meeting]);
  t.same(
    stitched?.map((c) => [c.offset, c.length, c.id[0]]),
    [
      [0, 1000, 0],
      [1000, 1000, 0],
      [2000, 1000, 0],
      [3000, 1000, 1],
    ],
    'they meet at 3000: the second pass goes on from there',
  );
  t.equal(
    stitchSegments([first, { ...meeting, reachedEof: false }]),
    undefined,
    'the last pass must reach the end of the file',
  );
});

t.test('threads are used for large files on machines with cores to spare', async (t) => {
  t.equal(threadsFor(PARALLEL_MIN_BYTES - 1, 8), 0, 'below the threshold: one pass');
  t.equal(threadsFor(1 << 30, 1), 0, 'one core: one pass');
  t.equal(threadsFor(PARALLEL_MIN_BYTES, 8), 2, 'segments of at least 64 MiB');
  t.equal(threadsFor(1 << 30, 2), 2);
  t.equal(threadsFor(1 << 30, 16), 4, 'at most 4 threads');
});

t.test("a large file's manifest from the threads equals the one-pass manifest", { skip: oneCore }, async (t) => {
  const size = PARALLEL_MIN_BYTES + 12_345;
  const bytes = new Uint8Array(size);
  for (let at = 0; at < size; at += 1 << 20) bytes.set(pseudoRandomBytes(Math.min(1 << 20, size - at), at + 1), at);
  const path = await fileWith(bytes);
  let onePassRoot = '';
  let onePassChunks = 0;
  for await (const e of chunkFile(path, DEFAULT_CHUNKING)) {
    if (e.kind === 'end') onePassRoot = toHex(e.root);
    else onePassChunks++;
  }
  const handle = await open(path, 'r');
  try {
    const threaded = await parallelManifest(handle.fd, size, path, DEFAULT_CHUNKING);
    if (threaded === undefined) {
      t.fail('the threads declined a large file on a machine with 2+ cores');
      return;
    }
    t.equal(toHex(threaded.root), onePassRoot, 'same root');
    t.equal(threaded.chunks.length, onePassChunks, 'same chunk count');
    t.equal(threaded.size, size);
  } finally {
    await handle.close();
  }
  if (existsSync('/proc/self/task')) {
    // Idle threads are stopped: their memory is not held through the rest of a push.
    const tasks = (): number => readdirSync('/proc/self/task').length;
    const busy = tasks();
    await new Promise((r) => setTimeout(r, IDLE_STOP_MS + 1_000));
    t.ok(tasks() <= busy - threadsFor(size), `the chunking threads stopped when idle (${busy} -> ${tasks()} threads)`);
  }
  t.equal(
    toHex((await manifestFromFile(path, DEFAULT_CHUNKING)).root),
    onePassRoot,
    'manifestFromFile takes the same path',
  );
});

t.test('a read that fails on a thread is an IO error naming the file', { skip: oneCore }, async (t) => {
  const handle = await open(dir, 'r'); // a directory: every read fails (EISDIR)
  try {
    const err = await parallelManifest(handle.fd, PARALLEL_MIN_BYTES, '/some/big.file', DEFAULT_CHUNKING).then(
      () => undefined,
      (e: unknown) => e,
    );
    t.ok(isClawpeerError(err) && err.code === 'IO', 'an IO error');
    t.match((err as Error).message, /cannot read \/some\/big\.file: .*EISDIR/);
  } finally {
    await handle.close();
  }
});

t.test('a thread that starts after another failed to start is stopped, not left running', async (t) => {
  // The first start fails at once; the second thread is ready only after the set was given up.
  let release: () => void = () => undefined;
  const released = new Promise<void>((r) => (release = r));
  const late = new Worker('setInterval(() => {}, 1000)', { eval: true });
  const lateExited = new Promise<number>((r) => late.once('exit', r));
  let starts = 0;
  const threads = new ChunkingThreads(async () => {
    if (starts++ === 0) throw new Error('no thread for you');
    await released;
    return late;
  });
  await t.rejects(threads.threads(2), /no thread for you/);
  release();
  const exited = await Promise.race([
    lateExited,
    new Promise<string>((r) => setTimeout(() => r('still running'), 5_000).unref()),
  ]);
  if (exited === 'still running') void late.terminate();
  t.type(exited, 'number', 'the late thread was terminated');
});
