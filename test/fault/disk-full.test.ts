// Disk full (CI): the listener's share on a 4 MiB tmpfs, an 8 MiB file pushed into it. The push
// is refused before anything is written, with the numbers; nothing appears at a final path, the
// sender's files are untouched, and the listener keeps serving. Then the disk fills up during a
// push that fitted when it started (another writer takes the space): the push fails saying the
// disk is full, nothing is published, and once the space is freed a rerun completes
// byte-identical. The client-side case (a pull into a full directory) is in
// test/slow/fault/disk-full-pull.test.ts. Needs root to mount: skipped with the reason otherwise.
import t from 'tap';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { closeSync, openSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  mountTmpfs,
  partialsAtFinalPaths,
  remountTmpfs,
  seededBytes,
  snapshot,
  startRig,
  unmount,
} from './fault-harness.js';

const FILE_BYTES = 8 << 20;
const work = await mkdtemp(path.join(tmpdir(), 'clawpeer-fault-disk-'));
const share = path.join(work, 'share');
await mkdir(share);
const refused = mountTmpfs(share, '4m');
if (refused !== undefined) {
  t.plan(0, `cannot mount a tmpfs here (needs root / CAP_SYS_ADMIN): ${refused}`);
} else {
  t.teardown(() => unmount(share));
  const rig = await startRig('disk', { share });
  t.teardown(() => rig.close());
  const digest = async (file: string): Promise<string> =>
    createHash('sha256')
      .update(await readFile(file))
      .digest('hex');

  t.test('a push that cannot fit is refused before anything is written, with the numbers', async (t) => {
    const src = path.join(work, 'src', 'push-tree');
    await mkdir(src, { recursive: true });
    await writeFile(path.join(src, 'big.bin'), seededBytes(1, FILE_BYTES));
    await writeFile(path.join(src, 'small.txt'), 'small\n');
    const before = {
      digest: await digest(path.join(src, 'big.bin')),
      mtimeMs: (await stat(path.join(src, 'big.bin'))).mtimeMs,
    };
    const srcTree = await snapshot(src);

    const full = await rig.cli(['push', src, 'alice', '--json'], { timeoutMs: 60_000 });
    t.equal(full.code, 1, `exit 1 (I/O failure); stderr: ${full.stderr}`);
    t.match(
      full.stderr,
      /not enough disk space in share inbox: it writes 8\.0 MiB and [0-9.]+ MiB are free/,
      'the error names the share and the numbers',
    );
    const expected = new Map(srcTree.map((i) => [i.path, { kind: i.kind, size: i.size, digest: i.digest }] as const));
    t.same(await partialsAtFinalPaths(path.join(share, 'push-tree'), expected), [], 'no partial file at a final path');
    t.notOk(
      (await snapshot(path.join(share, 'push-tree')).catch(() => [])).some((i) => i.kind === 'file'),
      'no file was published',
    );
    t.same(await snapshot(src), srcTree, "the sender's tree is untouched");
    t.same(
      { digest: await digest(path.join(src, 'big.bin')), mtimeMs: (await stat(path.join(src, 'big.bin'))).mtimeMs },
      before,
    );
    t.match(rig.listener.stderr(), /not enough disk space/, 'the listener logs it too');
  });

  t.test(
    'the disk fills up during a push: a clear error, nothing published, rerun completes once there is space',
    async (t) => {
      remountTmpfs(share, '8m');
      const src = path.join(work, 'src', 'fill-tree');
      await mkdir(src, { recursive: true });
      await writeFile(path.join(src, 'big.bin'), seededBytes(2, 6 << 20));
      const srcTree = await snapshot(src);
      // Slow chunks, so the test's own writer can take the space once the listener is past its check.
      const pushing = rig.cli(['push', src, 'alice', '--json'], {
        timeoutMs: 60_000,
        env: { CLAWPEER_TEST_DELAY_PER_CHUNK_MS: '100' },
      });
      // A new partial's data file (sparse until written) holding blocks: chunks are being written.
      const partials = path.join(share, '.clawpeer', 'partial');
      const earlier = new Set(await readdir(partials).catch(() => []));
      const writing = async (): Promise<boolean> => {
        for (const name of await readdir(partials).catch(() => [])) {
          if (!earlier.has(name) && name.endsWith('.data') && (await stat(path.join(partials, name))).blocks > 0)
            return true;
        }
        return false;
      };
      let waited = 0;
      while (!(await writing()) && waited < 6000)
        waited += await new Promise<number>((r) => setTimeout(() => r(20), 20));
      t.ok(waited < 6000, 'the listener started writing chunks');
      const filler = path.join(share, 'filler.bin');
      const fd = openSync(filler, 'w');
      try {
        const block = Buffer.alloc(64 << 10, 1);
        for (;;) writeSync(fd, block);
      } catch (err) {
        t.equal((err as NodeJS.ErrnoException).code, 'ENOSPC', 'the share is full now');
      } finally {
        closeSync(fd);
      }
      const full = await pushing;
      t.equal(full.code, 1, `exit 1 (I/O failure); stderr: ${full.stderr}`);
      t.match(full.stderr, /disk is full/, 'the error says the disk is full');
      const expected = new Map(srcTree.map((i) => [i.path, { kind: i.kind, size: i.size, digest: i.digest }] as const));
      t.same(
        await partialsAtFinalPaths(path.join(share, 'fill-tree'), expected),
        [],
        'no partial file at a final path',
      );
      t.notOk(
        (await snapshot(path.join(share, 'fill-tree')).catch(() => [])).some((i) => i.path === 'big.bin'),
        'big.bin was not published',
      );

      await rm(filler);
      remountTmpfs(share, '32m');
      const rerun = await rig.cli(['push', src, 'alice', '--json'], { timeoutMs: 60_000 });
      t.equal(
        rerun.code,
        0,
        `the rerun completes once there is space (the listener kept serving); stderr: ${rerun.stderr}`,
      );
      t.same(await snapshot(path.join(share, 'fill-tree')), srcTree, 'byte-identical');
      const first = await rig.cli(['push', path.join(work, 'src', 'push-tree'), 'alice', '--json'], {
        timeoutMs: 60_000,
      });
      t.equal(first.code, 0, `the push refused for space goes through now; stderr: ${first.stderr}`);
    },
  );
}
