// Slow suite: chunkFile() over a 512 MiB file stays in bounded memory (one sliding buffer), and
// the streamed root equals a root computed from the chunk list it yielded.
import t from 'tap';
import { open, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { chunkFile, DEFAULT_CHUNK_BUFFER_BYTES } from '../../../src/file-chunking/file-chunker.js';
import { manifestRoot } from '../../../src/chunking/manifest.js';
import { DEFAULT_CHUNKING } from '../../../src/chunking/fastcdc.js';
import { toHex } from '../../../src/chunking/blake3.js';

const FILE_BYTES = 512 << 20; // 512 MiB
const WRITE_PIECE_BYTES = 8 << 20;

t.test('a 512 MiB file chunks within a few MiB of extra memory', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'clawpeer-slow-chunking-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const path = join(dir, 'big.bin');
  const handle = await open(path, 'w');
  for (let at = 0; at < FILE_BYTES; at += WRITE_PIECE_BYTES) await handle.write(randomBytes(WRITE_PIECE_BYTES));
  await handle.close();

  global.gc?.();
  const before = process.memoryUsage().arrayBuffers;
  let peak = before;
  const list: { id: Uint8Array; length: number }[] = [];
  let end: { size: number; root: Uint8Array } | undefined;
  for await (const ev of chunkFile(path, DEFAULT_CHUNKING)) {
    if (ev.kind === 'chunk') {
      list.push({ id: ev.chunk.id, length: ev.chunk.length });
      if (list.length % 1024 === 0) peak = Math.max(peak, process.memoryUsage().arrayBuffers);
    } else end = ev;
  }
  if (end === undefined) throw new Error('no end event');
  t.equal(end.size, FILE_BYTES);
  t.equal(toHex(end.root), toHex(manifestRoot(list)));
  // The ids themselves are 32 B each (~27k chunks: < 1 MiB, plus per-Buffer overhead); the
  // sliding buffer is 4 MiB. Anything near the file size would mean the file was held.
  const growth = peak - before;
  t.ok(growth < 8 * DEFAULT_CHUNK_BUFFER_BYTES, `array-buffer growth ${(growth / 2 ** 20).toFixed(1)} MiB`);
});
