// config.json: defaults without one, each key checked and named on error, flags over the file.
import t from 'tap';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_REACH_CONFIG, loadReachConfig, parseReachConfig } from '../../src/home/config-file.js';

t.test('no config.json: the defaults (no rendezvous, LAN discovery on port 21029)', async (t) => {
  const home = await mkdtemp(join(tmpdir(), 'clawpeer-config-'));
  const c = await loadReachConfig(home);
  t.same(c, DEFAULT_REACH_CONFIG);
  t.equal(c.rendezvous, undefined);
  t.equal(c.lanDiscoveryPort, 21029);
});

t.test('every key is read; flags win over the file', async (t) => {
  const home = await mkdtemp(join(tmpdir(), 'clawpeer-config-'));
  await writeFile(
    join(home, 'config.json'),
    JSON.stringify({
      rendezvous: '203.0.113.5:7800',
      lanDiscovery: true,
      lanDiscoveryPort: 4000,
      lanDiscoveryTimeoutMs: 300,
      lanInterfaces: ['lo'],
      portMapping: false,
    }),
  );
  t.same(await loadReachConfig(home), {
    rendezvous: { host: '203.0.113.5', port: 7800 },
    lanDiscovery: true,
    lanDiscoveryPort: 4000,
    lanDiscoveryTimeoutMs: 300,
    lanInterfaces: ['lo'],
    portMapping: false,
  });
  const over = await loadReachConfig(home, { rendezvous: '198.51.100.1:9000', lanDiscovery: false });
  t.same(
    [over.rendezvous, over.lanDiscovery, over.lanDiscoveryPort],
    [{ host: '198.51.100.1', port: 9000 }, false, 4000],
  );
  await t.rejects(loadReachConfig(home, { rendezvous: 'nope' }), {
    code: 'USAGE',
    message: /invalid --rendezvous "nope"/,
  });
});

t.test('bad files and values are named', async (t) => {
  const home = await mkdtemp(join(tmpdir(), 'clawpeer-config-'));
  await writeFile(join(home, 'config.json'), '{"lanDiscovery": tru');
  await t.rejects(loadReachConfig(home), { code: 'CONFIG_INVALID', message: /config\.json is not valid JSON/ });
  const bad: [unknown, RegExp][] = [
    [[], /expected a JSON object/],
    [{ rendevous: 'x:1' }, /unknown key "rendevous"/],
    [{ lanDiscovery: 'yes' }, /lanDiscovery must be true or false, got "yes"/],
    [{ lanDiscoveryPort: 70000 }, /lanDiscoveryPort must be an integer in 1\.\.65535, got 70000/],
    [{ lanInterfaces: [] }, /lanInterfaces must be a non-empty list/],
    [{ rendezvous: 7800 }, /rendezvous must be "HOST:PORT", got 7800/],
    [{ rendezvous: '203.0.113.5' }, /invalid rendezvous in f\.json "203\.0\.113\.5"/],
  ];
  for (const [raw, message] of bad) t.throws(() => parseReachConfig(raw, 'f.json'), { message }, JSON.stringify(raw));
});
