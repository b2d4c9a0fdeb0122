// Disk full on the client side: a pull of an 8 MiB file into a 4 MiB tmpfs. The pull is refused
// before anything is written, saying how much it needs and how much is free, nothing appears at a final path, the listener's files are untouched
// and it keeps serving, and a rerun after the tmpfs is remounted bigger completes.
import t from 'tap';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  mountTmpfs,
  partialsAtFinalPaths,
  remountTmpfs,
  seededBytes,
  snapshot,
  startRig,
  unmount,
} from '../../fault/fault-harness.js';

const rig = await startRig('disk-pull');
t.teardown(() => rig.close());
const local = path.join(rig.work, 'local');
await mkdir(local);
const refused = mountTmpfs(local, '4m');
if (refused !== undefined) {
  t.plan(0, `cannot mount a tmpfs here (needs root / CAP_SYS_ADMIN): ${refused}`);
} else {
  t.teardown(() => unmount(local));
  t.test('pull into a full local directory', async (t) => {
    const src = path.join(rig.share, 'tree');
    await mkdir(src);
    await writeFile(path.join(src, 'big.bin'), seededBytes(7, 8 << 20));
    await writeFile(path.join(src, 'small.txt'), 'small\n');
    const srcTree = await snapshot(src);
    const full = await rig.cli(['pull', 'alice:inbox/tree', local, '--json'], { timeoutMs: 60_000 });
    t.equal(full.code, 1, `exit 1; stderr: ${full.stderr}`);
    t.match(full.stderr, /not enough disk space in .*: it writes 8\.0 MiB and [0-9.]+ MiB are free/);
    const expected = new Map(srcTree.map((i) => [i.path, { kind: i.kind, size: i.size, digest: i.digest }] as const));
    t.same(await partialsAtFinalPaths(path.join(local, 'tree'), expected), [], 'no partial file at a final path');
    t.same(await snapshot(src), srcTree, "the sender's (listener's) files are untouched");
    remountTmpfs(local, '32m');
    const rerun = await rig.cli(['pull', 'alice:inbox/tree', local, '--json'], { timeoutMs: 60_000 });
    t.equal(rerun.code, 0, rerun.stderr);
    t.same(await snapshot(path.join(local, 'tree')), srcTree);
    const ping = await rig.cli(['ping', 'alice', '--count', '1'], { timeoutMs: 30_000 });
    t.equal(ping.code, 0, 'the listener still answers a ping');
  });
}
