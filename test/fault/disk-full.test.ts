// Disk full (CI): the listener's share on a 4 MiB tmpfs, an 8 MiB file pushed into it. The push
// fails with an error that says the disk is full, nothing appears at a final path, the sender's
// files are untouched, the listener keeps serving, and after the space is freed (the tmpfs
// remounted bigger) a rerun completes byte-identical. The client-side case (a pull into a full
// directory) is in test/slow/fault/disk-full-pull.test.ts. Needs root to mount: skipped with the
// reason otherwise.
import t from 'tap';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { mountTmpfs, partialsAtFinalPaths, remountTmpfs, seededBytes, snapshot, startRig, unmount } from './fault-harness.js';

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
  const digest = async (file: string): Promise<string> => createHash('sha256').update(await readFile(file)).digest('hex');

  t.test('push into a full share: a clear error, nothing published, sender untouched, rerun completes', async (t) => {
    const src = path.join(work, 'src', 'push-tree');
    await mkdir(src, { recursive: true });
    await writeFile(path.join(src, 'big.bin'), seededBytes(1, FILE_BYTES));
    await writeFile(path.join(src, 'small.txt'), 'small\n');
    const before = { digest: await digest(path.join(src, 'big.bin')), mtimeMs: (await stat(path.join(src, 'big.bin'))).mtimeMs };
    const srcTree = await snapshot(src);

    const full = await rig.cli(['push', src, 'alice', '--json'], { timeoutMs: 60_000 });
    t.equal(full.code, 1, `exit 1 (I/O failure); stderr: ${full.stderr}`);
    t.match(full.stderr, /disk is full/, 'the error says the disk is full');
    const expected = new Map(srcTree.map((i) => [i.path, { kind: i.kind, size: i.size, digest: i.digest }] as const));
    t.same(await partialsAtFinalPaths(path.join(share, 'push-tree'), expected), [], 'no partial file at a final path');
    t.notOk((await snapshot(path.join(share, 'push-tree')).catch(() => [])).some((i) => i.path === 'big.bin'), 'big.bin was not published');
    t.same(await snapshot(src), srcTree, 'the sender\'s tree is untouched');
    t.same({ digest: await digest(path.join(src, 'big.bin')), mtimeMs: (await stat(path.join(src, 'big.bin'))).mtimeMs }, before);
    t.match(rig.listener.stderr(), /disk is full/, 'the listener logs it too');

    remountTmpfs(share, '32m');
    const rerun = await rig.cli(['push', src, 'alice', '--json'], { timeoutMs: 60_000 });
    t.equal(rerun.code, 0, `the rerun completes once there is space (the listener kept serving); stderr: ${rerun.stderr}`);
    t.same(await snapshot(path.join(share, 'push-tree')), srcTree, 'byte-identical');
  });
}
