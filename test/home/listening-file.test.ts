// The home's listening.json: believed only while its listener's process runs; removed only by its own writer.
import t from 'tap';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readListening, removeListening, writeListening } from '../../src/home/listening-file.js';

t.test('written, read while its process lives, ignored once it is gone, removed by its writer only', async (t) => {
  const home = await mkdtemp(join(tmpdir(), 'clawpeer-listening-'));
  t.teardown(() => rm(home, { recursive: true, force: true }));
  t.equal(await readListening(home), undefined, 'no file');
  await writeListening(home, { pid: process.pid, host: '127.0.0.1', port: 7700 });
  t.same(await readListening(home), { pid: process.pid, host: '127.0.0.1', port: 7700 });
  t.equal(await readListening(home, () => false), undefined, 'a listener that is gone is not believed');
  await removeListening(home, process.pid + 1);
  t.ok(existsSync(join(home, 'listening.json')), 'another process does not remove it');
  await removeListening(home);
  t.notOk(existsSync(join(home, 'listening.json')));
});
