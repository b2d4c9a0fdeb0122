import t from 'tap';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { removePullState } from '../../src/store/transfer-state.js';

async function folder(): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), 'clawpeer-pullstate-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

t.test('what a completed pull made goes: the chunk index and an empty partial directory', async (t) => {
  const dir = await folder();
  await mkdir(path.join(dir, '.clawpeer', 'partial'), { recursive: true });
  await writeFile(path.join(dir, '.clawpeer', 'index.bin'), 'x');
  await writeFile(path.join(dir, 'kept.txt'), 'content');
  t.ok(await removePullState(dir));
  t.notOk(existsSync(path.join(dir, '.clawpeer')));
  t.ok(existsSync(path.join(dir, 'kept.txt')), 'nothing else is touched');
  t.ok(await removePullState(dir), 'nothing there is fine');
});

t.test("a partial to resume, a synced folder's log or anything unknown keeps .clawpeer/", async (t) => {
  for (const extra of ['partial/abc-def.data', 'revlog/data.mdb', 'history/ab/cd', 'sync.lock']) {
    const dir = await folder();
    await mkdir(path.join(dir, '.clawpeer', 'partial'), { recursive: true });
    await writeFile(path.join(dir, '.clawpeer', 'index.bin'), 'x');
    await mkdir(path.dirname(path.join(dir, '.clawpeer', extra)), { recursive: true });
    await writeFile(path.join(dir, '.clawpeer', extra), 'y');
    t.notOk(await removePullState(dir), extra);
    t.ok(existsSync(path.join(dir, '.clawpeer', 'index.bin')), `${extra}: the index stays too`);
  }
});
