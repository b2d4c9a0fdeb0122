// ChunkReader: a chunk is sent only while its file is as it was hashed. A file the scan keyed
// (outside the racy window) is checked by its key, without hashing the chunk again; any other
// is checked by hashing, and so is a keyed file whose key moved. Either way a changed file is IO
// "changed while being sent".
import { mkdtempSync, openSync, closeSync, writeSync, statSync, utimesSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { blake3 } from '../../src/chunking/blake3.js';
import { ChunkReader } from '../../src/exchange/chunk-reader.js';
import { fileKeyOf, msToNs } from '../../src/store/file-key.js';

const HOUR_AGO_S = Date.now() / 1000 - 3600;

function fixture(teardown: (fn: () => void) => void): { file: string; bytes: Buffer } {
  const dir = mkdtempSync(join(tmpdir(), 'clawpeer-chunk-reader-'));
  teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'f.bin');
  const bytes = Buffer.alloc(8192, 7);
  writeFileSync(file, bytes);
  return { file, bytes };
}

/** Overwrites the first byte in place: same size and inode. */
function poke(file: string, value: number): void {
  const fd = openSync(file, 'r+');
  writeSync(fd, Uint8Array.of(value), 0, 1, 0);
  closeSync(fd);
}

t.test('a keyed file outside the racy window is trusted by its key, and a change of key is caught', async (t) => {
  const { file, bytes } = fixture((fn) => t.teardown(fn));
  utimesSync(file, HOUR_AGO_S, HOUR_AGO_S);
  const scanned = { key: fileKeyOf(statSync(file, { bigint: true })), hashedAtNs: msToNs(Date.now()) };
  const reader = new ChunkReader();
  t.teardown(() => reader.close());
  const id = blake3(bytes.subarray(0, 4096));
  t.same(Buffer.from(await reader.read(file, 0, 4096, id, undefined, scanned)), bytes.subarray(0, 4096));
  // An id that is not these bytes' hash passes: the key vouches, and no hash is computed here
  // (the receiver's BLAKE3 check is what guards the content).
  await t.resolves(
    reader.read(file, 4096, 4096, new Uint8Array(32), undefined, scanned),
    'no second hash of a trusted file',
  );
  poke(file, 9); // mtime moves to now: the key no longer matches
  await t.rejects(reader.read(file, 0, 4096, id, undefined, scanned), {
    code: 'IO',
    message: /changed while being sent/,
  });
});

t.test('without a key, or inside the racy window, every chunk is hashed', async (t) => {
  const { file, bytes } = fixture((fn) => t.teardown(fn));
  const reader = new ChunkReader();
  t.teardown(() => reader.close());
  const id = blake3(bytes.subarray(0, 4096));
  const racy = { key: fileKeyOf(statSync(file, { bigint: true })), hashedAtNs: msToNs(Date.now()) }; // written just now
  for (const scanned of [undefined, racy]) {
    await t.resolves(reader.read(file, 0, 4096, id, undefined, scanned));
    await t.rejects(
      reader.read(file, 0, 4096, new Uint8Array(32), undefined, scanned),
      { code: 'IO', message: /changed while being sent/ },
      'a wrong id is caught by the hash',
    );
  }
  // A change that keeps size, inode and (restored) mtime inside the racy window: only hashing sees it.
  const st = statSync(file);
  poke(file, 1);
  utimesSync(file, st.atime, st.mtime);
  await t.rejects(reader.read(file, 0, 4096, id, undefined, racy), { code: 'IO', message: /changed while being sent/ });
});

t.test('a trusted key that moved leaves it to the bytes: a touch is still sent, a change is caught', async (t) => {
  const { file, bytes } = fixture((fn) => t.teardown(fn));
  utimesSync(file, HOUR_AGO_S, HOUR_AGO_S);
  const scanned = { key: fileKeyOf(statSync(file, { bigint: true })), hashedAtNs: msToNs(Date.now()) };
  const reader = new ChunkReader();
  t.teardown(() => reader.close());
  const id = blake3(bytes.subarray(0, 4096));
  utimesSync(file, new Date(), new Date()); // touched: the key moved, the bytes did not
  await t.resolves(reader.read(file, 0, 4096, id, undefined, scanned), 'the same bytes are sent');
  await t.rejects(
    reader.read(file, 4096, 4096, new Uint8Array(32), undefined, scanned),
    { code: 'IO', message: /changed while being sent/ },
    'and hashed: bytes that are not the id are caught',
  );
});
