// paths.json: the path each peer was last reached by; a cache, so a bad file reads as empty.
import t from 'tap';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lastDirectAddress, readLastPaths, recordLastPath } from '../../src/home/last-paths.js';

t.test('recorded paths read back; only lan and direct ones are dialled again', async (t) => {
  const home = await mkdtemp(join(tmpdir(), 'clawpeer-paths-'));
  t.same(await readLastPaths(home), {});
  await recordLastPath(home, 'peer-a', { path: 'lan', address: { host: '198.18.0.7', port: 7700 }, rttMs: 0.41234 });
  await recordLastPath(home, 'peer-b', { path: 'relayed', address: { host: '127.0.0.1', port: 50123 } });
  t.match(await readLastPaths(home), {
    'peer-a': { path: 'lan', address: '198.18.0.7:7700', rttMs: 0.412 },
    'peer-b': { path: 'relayed' },
  });
  t.same(await lastDirectAddress(home, 'peer-a'), { address: { host: '198.18.0.7', port: 7700 }, path: 'lan' });
  t.equal(await lastDirectAddress(home, 'peer-b'), undefined, "a relayed path's forwarder is not an address to dial");
});

t.test('a damaged file is an empty cache, and bad entries are skipped', async (t) => {
  const home = await mkdtemp(join(tmpdir(), 'clawpeer-paths-'));
  await writeFile(join(home, 'paths.json'), '{not json');
  t.same(await readLastPaths(home), {});
  await writeFile(
    join(home, 'paths.json'),
    JSON.stringify({
      version: 1,
      peers: {
        x: { path: 'teleported', address: '1.2.3.4:5', at: '' },
        y: { path: 'direct', address: '192.0.2.1:7700', at: 'now' },
      },
    }),
  );
  t.same(Object.keys(await readLastPaths(home)), ['y']);
});
