import t from 'tap';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { blake3 } from '../../src/chunking/blake3.js';
import type { RevisionDraft } from '../../src/store/revision-store.js';
import { RevisionStorePool } from '../../src/store/revision-store-pool.js';

const NODE = 'pool-node';
const STORE_MODULE = new URL('../../src/store/revision-store.js', import.meta.url).href;

function fileDraft(path: string, n: number): RevisionDraft {
  return {
    path,
    kind: 'file',
    contentRoot: blake3(Buffer.from(`content ${n}`)),
    size: n,
    mode: 0o644,
    mtimeNs: BigInt(n),
    deleted: false,
    linkTarget: '',
  };
}

/** Another process (as `clawpeer restore` or `gc` would be) writes to the folder's log. */
async function otherProcess(folder: string, action: 'record' | 'gc'): Promise<void> {
  const script = `
    import { RevisionStore } from ${JSON.stringify(STORE_MODULE)};
    const s = await RevisionStore.open(${JSON.stringify(folder)}, { nodeId: 'other-node' });
    if (${JSON.stringify(action)} === 'record') {
      s.write((w) => w.recordLocal({ path: 'by-other', kind: 'file', contentRoot: new Uint8Array(32).fill(7), size: 1, mode: 0o644, mtimeNs: 1n, deleted: false, linkTarget: '' }));
    } else {
      s.gc(1);
    }
    await s.close();`;
  await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script]);
}

t.test('a kept store is reused while current, and reopened once another process changed its ids', async (t) => {
  const folder = await mkdtemp(join(tmpdir(), 'clawpeer-pool-'));
  t.teardown(() => rm(folder, { recursive: true, force: true }));
  const pool = new RevisionStorePool();
  t.teardown(() => pool.close());

  t.equal(pool.peek(folder), undefined, 'nothing to peek at before the first acquire');
  const first = await pool.acquire(folder, NODE);
  t.equal(pool.peek(folder), first, 'peek gives the kept store (status reads its size and root)');
  first.write((w) => {
    w.recordLocal(fileDraft('a', 1));
    w.recordLocal(fileDraft('a', 2));
  });
  const again = await pool.acquire(folder, NODE);
  t.equal(again, first, 'our own writes keep it current: same open store');
  t.ok(again.isCurrent());

  await otherProcess(folder, 'record');
  t.notOk(first.isCurrent(), "the other process's revision is not in our id set");
  const reopened = await pool.acquire(folder, NODE);
  t.not(reopened, first, 'reopened');
  t.equal(reopened.size, 3, "with the other process's revision");
  t.ok(reopened.head('by-other'));

  await otherProcess(folder, 'gc');
  const afterGc = await pool.acquire(folder, NODE);
  t.not(afterGc, reopened, 'a gc elsewhere also reopens');
  t.equal(afterGc.size, 2, "a's first revision collected");
  t.same(afterGc.checkInvariants(), []);

  await rm(join(folder, '.clawpeer'), { recursive: true });
  const fresh = await pool.acquire(folder, NODE);
  t.not(fresh, afterGc, 'a removed log is not served from memory');
  t.equal(fresh.size, 0);
});
