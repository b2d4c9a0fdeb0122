// A temp file this process will never touch again is swept at once, not after the hour the
// sweep gives a live writer's files (convergence seed 4107): a user renamed a directory while
// the listener published into it, the temp file moved along, the rename into place failed, and
// the temp file stayed hidden in the renamed directory.
import t from 'tap';
import { mkdtemp, readdir, rename } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChunkingParams } from '../../src/chunking/fastcdc.js';
import { manifestFromBytes } from '../../src/chunking/manifest.js';
import { Publisher } from '../../src/store/publisher.js';
import { IN_MEMORY_MAX_BYTES, StagedFile } from '../../src/store/staged-file.js';
import { removeStaleTempFiles } from '../../src/store/temp-files.js';

const PARAMS: ChunkingParams = { minBytes: 4 << 10, avgBytes: 16 << 10, maxBytes: 64 << 10, normalization: 2 };
const temps = async (dir: string): Promise<string[]> =>
  (await readdir(dir)).filter((n) => n.startsWith('.clawpeer-tmp-'));

async function stageWhole(pub: Publisher, relPath: string): Promise<StagedFile> {
  // Above IN_MEMORY_MAX_BYTES: staged in a temp file beside its final path.
  const bytes = randomBytes(IN_MEMORY_MAX_BYTES + 4000);
  const manifest = manifestFromBytes(bytes, PARAMS);
  const staged = await pub.stageFile({ relPath, manifest, mode: 0o644, mtimeMs: Date.now() });
  if (!(staged instanceof StagedFile)) throw new Error(`expected a staged file, got ${staged}`);
  for (const [i, c] of manifest.chunks.entries())
    await staged.writeChunk(i, bytes.subarray(c.offset, c.offset + c.length));
  return staged;
}

t.test("a live publish's temp file stays; one left behind a renamed directory goes at once", async (t) => {
  const share = await mkdtemp(join(tmpdir(), 'clawpeer-orphans-'));
  const pub = await Publisher.open({ shareRoot: share, chunking: PARAMS });
  const live = await stageWhole(pub, 'kept/live.bin');
  const moved = await stageWhole(pub, 'd0/moved.bin');
  t.equal(await removeStaleTempFiles(share, { nowMs: Date.now() }), 0, 'files still being published stay');

  await rename(join(share, 'd0'), join(share, 'd1')); // the user renames the directory meanwhile
  await t.rejects(pub.commit([moved]), { code: 'IO' }, 'its rename into place fails');
  t.equal((await temps(join(share, 'd1'))).length, 1, 'the temp file moved with the directory');
  t.equal(await removeStaleTempFiles(share, { nowMs: Date.now() }), 1, 'the orphan is swept at once');
  t.same(await temps(join(share, 'd1')), []);
  t.equal((await temps(join(share, 'kept'))).length, 1, 'the live one is untouched');

  await pub.commit([live]);
  t.same(await readdir(join(share, 'kept')), ['live.bin'], 'and it publishes');
});
