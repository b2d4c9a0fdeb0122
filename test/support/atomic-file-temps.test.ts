// The temp files a writer killed mid-write left next to a cache it rewrites after every sync
// (last-syncs.json, folder-offers.json) are removed when the cache is loaded again; a live
// writer's temp file and names that only look alike stay.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { removeDeadTemps } from '../../src/support/atomic-file.js';
import { LastSyncs, lastSyncsFile } from '../../src/folders/last-syncs.js';

/** A pid that was a process of this host and is gone now. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], {
    encoding: 'utf8',
  });
  return Number(child.stdout);
}

const hex = '0123456789abcdef';

t.test("a dead writer's temp files go, a live one's and look-alikes stay", async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'clawpeer-temps-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'cache.json');
  const dead = `cache.json.tmp-${deadPid()}-${hex}`;
  const live = `cache.json.tmp-${process.pid}-${hex}`;
  const other = `other.json.tmp-${deadPid()}-${hex}`;
  const odd = `cache.json.tmp-notapid`;
  for (const name of [dead, live, other, odd]) await writeFile(path.join(dir, name), '{');
  t.equal(await removeDeadTemps(file), 1);
  t.same((await readdir(dir)).sort(), [live, odd, other].sort());
  t.equal(await removeDeadTemps(path.join(dir, 'missing', 'x.json')), 0, 'no directory: nothing to do');
});

t.test("a folder's last-syncs temp file from a killed listener goes when the folder starts", async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'clawpeer-temps-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const file = lastSyncsFile(dir);
  await mkdir(path.dirname(file), { recursive: true });
  const temp = `${file}.tmp-${deadPid()}-${hex}`;
  await writeFile(temp, '{"version":1');
  const syncs = new LastSyncs(() => undefined);
  await syncs.load('docs', dir);
  t.notOk(existsSync(temp));
});
