// An identical file that may not take the incoming mode or mtime (another user's file, an
// immutable one: EPERM) is left as it is with a warning, as rsync does ("failed to set times"):
// before, the error failed the whole push or pull, and the files after it never landed.
// Needs root and chattr (an immutable file refuses chmod and utimes even to root); CI runs as
// root, elsewhere the test skips saying why.
import t from 'tap';
import { lstat, mkdtemp, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChunkingParams } from '../../src/chunking/fastcdc.js';
import { manifestFromBytes } from '../../src/chunking/manifest.js';
import { Publisher } from '../../src/store/publisher.js';
import { chattr, immutableUnavailable } from '../support/immutable-files.js';

const PARAMS: ChunkingParams = { minBytes: 64, avgBytes: 256, maxBytes: 1024, normalization: 2 };
const T = 1_600_000_000_000;

const unavailable = await immutableUnavailable();

t.test(
  'an identical file that refuses its new mode and mtime is kept; the transfer goes on',
  { skip: unavailable ?? false },
  async (t) => {
    const share = await mkdtemp(join(tmpdir(), 'clawpeer-meta-refused-'));
    t.teardown(() => rm(share, { recursive: true, force: true }));
    const bytes = Buffer.from('same content on both sides');
    const manifest = manifestFromBytes(bytes, PARAMS);
    const locked = join(share, 'locked.txt');
    await writeFile(locked, bytes, { mode: 0o644 });
    await utimes(locked, new Date(T), new Date(T));
    const refused: string[] = [];
    const set: string[] = [];
    const pub = await Publisher.open({
      shareRoot: share,
      chunking: PARAMS,
      onMetadataRefused: (relPath, what, error) =>
        refused.push(`${relPath} ${what} ${(error as NodeJS.ErrnoException).code}`),
      onMetadataSet: (relPath) => set.push(relPath),
    });
    chattr('+i', locked);
    try {
      t.equal(
        await pub.stageFile({ relPath: 'locked.txt', manifest, mode: 0o600, mtimeMs: T - 3_600_000 }),
        'identical',
        'no error: the file is identical and stays so',
      );
    } finally {
      chattr('-i', locked);
    }
    t.same(refused, ['locked.txt mode EPERM', 'locked.txt mtime EPERM'], 'each refusal is told');
    t.same(set, [], 'nothing claimed as set');
    const st = await lstat(locked);
    t.same([st.mode & 0o777, st.mtimeMs], [0o644, T], 'the file kept its mode and mtime');

    const next = await pub.stageFile({ relPath: 'next.txt', manifest, mode: 0o644, mtimeMs: T });
    if (typeof next === 'string') throw new Error(`expected a staged file, got ${next}`);
    await next.writeChunk(0, bytes);
    await pub.commit([next]);
    t.equal(await readFile(join(share, 'next.txt'), 'utf8'), bytes.toString(), 'the file after it still lands');
  },
);
