// The receiver's disk check: a transfer fits when it leaves 1% of the file system free.
import t from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureFreeSpace, fileSystemSpace, MIN_FREE_FRACTION, spaceShortfall } from '../../src/store/free-space.js';

const MiB = 1 << 20;

t.test('fits while the margin stays free; past it, the numbers say why', async (t) => {
  const space = { availableBytes: 100 * MiB, totalBytes: 1000 * MiB }; // margin: 10 MiB
  t.equal(spaceShortfall(90 * MiB, space), undefined, 'exactly the margin left');
  t.equal(
    spaceShortfall(90 * MiB + 1, space),
    'it writes 90.0 MiB and 100.0 MiB are free, of which 10.0 MiB (1% of the file system) stay free',
  );
  t.equal(
    spaceShortfall(0, { availableBytes: 0, totalBytes: 0 }),
    undefined,
    'nothing to write on an empty file system',
  );
  t.equal(MIN_FREE_FRACTION, 0.01, "Syncthing's default minDiskFree");
});

t.test('the real file system: a small need fits, an impossible one is an IO error naming the place', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'clawpeer-space-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const space = await fileSystemSpace(dir);
  t.ok(
    space.totalBytes > 0 && space.availableBytes <= space.totalBytes,
    `statfs: ${space.availableBytes} of ${space.totalBytes}`,
  );
  await ensureFreeSpace(dir, 1, 'the test dir');
  await t.rejects(ensureFreeSpace(dir, space.totalBytes, 'the test dir'), {
    code: 'IO',
    message: /^not enough disk space in the test dir: it writes /,
  });
});
