import t from 'tap';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chunkFile, manifestFromFile, WHOLE_READ_MAX_BYTES } from '../../src/file-chunking/file-chunker.js';
import { manifestFromBytes, type ChunkRef, type FileManifest } from '../../src/chunking/manifest.js';
import { blake3, bytesEqual, toHex } from '../../src/chunking/blake3.js';
import { DEFAULT_CHUNKING } from '../../src/chunking/fastcdc.js';
import type { ChunkingParams } from '../../src/chunking/fastcdc.js';
import { pseudoRandomBytes } from '../chunking/fixtures.js';

const SMALL: ChunkingParams = { minBytes: 256, avgBytes: 1024, maxBytes: 8192, normalization: 1 };

const dir = await mkdtemp(join(tmpdir(), 'clawpeer-chunking-'));
t.teardown(() => rm(dir, { recursive: true, force: true }));

const summary = (m: {
  size: number;
  root: Uint8Array;
  chunks: readonly { offset: number; length: number; id: Uint8Array }[];
}) => ({
  size: m.size,
  root: toHex(m.root),
  chunks: m.chunks.map((c) => `${c.offset}+${c.length}:${toHex(c.id)}`),
});

t.test('a file chunks exactly like the same bytes in memory, for any buffer size', async (t) => {
  const cases: [string, number, ChunkingParams, number | undefined][] = [
    ['empty', 0, SMALL, undefined],
    ['one short chunk', 100, SMALL, undefined],
    ['many chunks, minimal buffer (2 x maxBytes) forces sliding', 300_000, SMALL, 1],
    ['odd buffer size', 300_000, SMALL, 20_011],
    ['defaults, 5 MiB > the 4 MiB default buffer', 5 << 20, DEFAULT_CHUNKING, undefined],
  ];
  for (const [name, size, params, bufferBytes] of cases) {
    const bytes = pseudoRandomBytes(size, size + 1);
    const path = join(dir, `f-${size}-${bufferBytes ?? 'default'}`);
    await writeFile(path, bytes);
    const expected = summary(manifestFromBytes(bytes, params));
    t.same(summary(await streamed(path, params, bufferBytes)), expected, `${name}: streamed`);
    t.same(
      summary(await manifestFromFile(path, params)),
      expected,
      `${name}: manifestFromFile (${size <= WHOLE_READ_MAX_BYTES ? 'one whole read' : 'streamed'})`,
    );
  }
});

/** The manifest from chunkFile's events: always the sliding-buffer path, whatever the size. */
async function streamed(path: string, params: ChunkingParams, bufferBytes: number | undefined): Promise<FileManifest> {
  const chunks: ChunkRef[] = [];
  for await (const ev of chunkFile(path, params, bufferBytes === undefined ? {} : { bufferBytes })) {
    if (ev.kind === 'chunk') chunks.push(ev.chunk);
    else return { size: ev.size, chunks, root: ev.root };
  }
  throw new Error('no end event');
}

t.test('chunk events carry the chunk bytes, then one end event', async (t) => {
  const bytes = pseudoRandomBytes(200_000, 77);
  const path = join(dir, 'events');
  await writeFile(path, bytes);
  let chunks = 0;
  let ended = false;
  for await (const ev of chunkFile(path, SMALL, { bufferBytes: 1 })) {
    if (ev.kind === 'chunk') {
      t.notOk(ended, 'no chunk after end');
      const want = bytes.subarray(ev.chunk.offset, ev.chunk.offset + ev.chunk.length);
      if (!bytesEqual(ev.bytes, want)) t.fail(`bytes of chunk at ${ev.chunk.offset}`);
      if (!bytesEqual(ev.chunk.id, blake3(want))) t.fail(`id of chunk at ${ev.chunk.offset}`);
      chunks++;
    } else {
      ended = true;
      t.equal(ev.size, bytes.length);
      t.equal(ev.chunkCount, chunks);
    }
  }
  t.ok(ended);
  t.ok(chunks > 100);
});

t.test('a missing file is an IO error naming the path', async (t) => {
  const path = join(dir, 'does-not-exist');
  await t.rejects(manifestFromFile(path, SMALL), { code: 'IO', message: new RegExp(`cannot open ${path}`) });
});

t.test('an aborted signal stops chunking with ABORTED', async (t) => {
  const path = join(dir, 'abort');
  await writeFile(path, pseudoRandomBytes(100_000, 5));
  const already = new AbortController();
  already.abort();
  await t.rejects(manifestFromFile(path, SMALL, { signal: already.signal }), { code: 'ABORTED' });
  const midway = new AbortController();
  let seen = 0;
  await t.rejects(
    (async () => {
      for await (const ev of chunkFile(path, SMALL, { bufferBytes: 1, signal: midway.signal })) {
        if (ev.kind === 'chunk' && ++seen === 3) midway.abort();
      }
    })(),
    { code: 'ABORTED' },
  );
  t.ok(seen >= 3);
});

t.test('invalid parameters are rejected before the file is opened', async (t) => {
  await t.rejects(manifestFromFile(join(dir, 'nope'), { ...SMALL, avgBytes: 1000 }), { code: 'CONFIG_INVALID' });
});

t.test('a size hint only saves the fstat: a wrong one still gives the bytes on disk', async (t) => {
  const path = join(dir, 'hinted.bin');
  const cases: [string, number, number][] = [
    ['right', 5000, 5000],
    ['grown past it', 5000, 4000],
    ['grown past the whole-read limit', WHOLE_READ_MAX_BYTES + 3000, 4000],
    ['shrunk', 3000, 5000],
    ['empty', 0, 10],
  ];
  for (const [name, size, hint] of cases) {
    const bytes = pseudoRandomBytes(size, size + 7);
    await writeFile(path, bytes);
    const got = await manifestFromFile(path, SMALL, { sizeHint: hint });
    t.same(summary(got), summary(manifestFromBytes(bytes, SMALL)), name);
  }
});
