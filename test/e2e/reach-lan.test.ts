// Two nodes on one machine find each other by LAN discovery (loopback only: each home's
// config.json names the loopback interface and a discovery port of this run's own): pair add
// without --addr, then ping and push report path lan; with discovery off, the error says what
// was tried and how to fix it.
import t from 'tap';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { initNode, jsonLines, runCli, startListener } from './cli-harness.js';

const lanDiscoveryPort = 40_000 + Math.floor(Math.random() * 20_000);
const config = JSON.stringify({ lanDiscoveryPort, lanInterfaces: ['lo'], lanDiscoveryTimeoutMs: 1000 });
const a = await initNode('lan-a');
const b = await initNode('lan-b');
await writeFile(join(a.home, 'config.json'), config);
await writeFile(join(b.home, 'config.json'), config);
const listener = await startListener(a.home);
t.teardown(() => listener.stop('SIGKILL'));
await runCli(['--home', a.home, 'pair', 'add', b.id, '--name', 'bob']);

t.test('pair add without --addr is accepted', async (t) => {
  const r = await runCli(['--home', b.home, 'pair', 'add', a.id, '--name', 'alice', '--json']);
  t.equal(r.code, 0, r.stderr);
  t.match(jsonLines(r.stdout)[0], { event: 'paired', id: a.id, name: 'alice' });
  t.notOk('addr' in (jsonLines(r.stdout)[0] ?? {}), 'no address pinned');
});

t.test('ping finds the listener on the LAN and says so', async (t) => {
  const r = await runCli(['--home', b.home, 'ping', 'alice', '--count', '1', '--json']);
  t.equal(r.code, 0, r.stderr);
  const lines = jsonLines(r.stdout);
  t.match(
    lines.find((l) => l['event'] === 'pong'),
    { path: 'lan' },
  );
  t.match(
    lines.find((l) => l['event'] === 'summary'),
    { path: 'lan', rttMs: Number },
  );
  const human = await runCli(['--home', b.home, 'ping', 'alice', '--count', '1']);
  t.match(
    human.stdout,
    new RegExp(
      `connected to alice \\(${a.id}\\) at 127\\.0\\.0\\.1:${listener.port} via \\w+, protocol v\\d+, path lan`,
    ),
  );
});

t.test('push over the path found, content intact; pair list remembers the path', async (t) => {
  const src = join(await mkdtemp(join(tmpdir(), 'clawpeer-lan-')), 'lan.bin');
  const data = randomBytes(300_000);
  await writeFile(src, data);
  const r = await runCli(['--home', b.home, 'push', src, 'alice', '--json']);
  t.equal(r.code, 0, r.stderr);
  t.match(
    jsonLines(r.stdout).find((l) => l['event'] === 'done'),
    { path: 'lan', rttMs: Number, files: 1 },
  );
  t.ok((await readFile(join(a.home, 'inbox', 'lan.bin'))).equals(data), 'the file arrived whole');
  const list = await runCli(['--home', b.home, 'pair', 'list', '--json']);
  t.match(jsonLines(list.stdout)[0], { id: a.id, path: 'lan' });
});

t.test('a two-way sync over the path found', async (t) => {
  const folder = await mkdtemp(join(tmpdir(), 'clawpeer-lan-sync-'));
  await writeFile(join(folder, 'from-bob.txt'), 'bob\n');
  await writeFile(join(a.home, 'inbox', 'from-alice.txt'), 'alice\n');
  const r = await runCli(['--home', b.home, 'sync', folder, 'alice:inbox', '--json']);
  t.equal(r.code, 0, r.stderr);
  t.match(
    jsonLines(r.stdout).find((l) => l['event'] === 'done'),
    { path: 'lan', inSync: true },
  );
  t.equal(await readFile(join(folder, 'from-alice.txt'), 'utf8'), 'alice\n');
  t.equal(await readFile(join(a.home, 'inbox', 'from-bob.txt'), 'utf8'), 'bob\n');
});

t.test('a pinned address that no longer works: the LAN finds the listener where it is now', async (t) => {
  const e = await initNode('lan-e');
  await writeFile(join(e.home, 'config.json'), config);
  await runCli(['--home', a.home, 'pair', 'add', e.id, '--name', 'erin']);
  await runCli(['--home', e.home, 'pair', 'add', a.id, '--name', 'alice', '--addr', '127.0.0.1:9']); // nothing listens on port 9
  const started = Date.now();
  const r = await runCli(['--home', e.home, 'ping', 'alice', '--count', '1', '--json']);
  t.equal(r.code, 0, r.stderr);
  t.match(
    jsonLines(r.stdout).find((l) => l['event'] === 'summary'),
    { path: 'lan' },
  );
  t.ok(Date.now() - started < 4500, `not held up by the dead address's connect timeout (${Date.now() - started} ms)`);
});

t.test('discovery off and no address: the error names what was tried and how to fix it', async (t) => {
  const c = await initNode('lan-c');
  await runCli(['--home', c.home, 'pair', 'add', a.id, '--name', 'alice']);
  const r = await runCli(['--home', c.home, '--no-lan-discovery', 'ping', 'alice', '--count', '1']);
  t.equal(r.code, 4, 'unreachable (exit 4)');
  t.match(
    r.stderr,
    /cannot reach alice .*lan: LAN discovery is off.*rendezvous: none configured \(name one with --rendezvous HOST:PORT/s,
  );
});

t.test('a bad config.json is named with the key at fault', async (t) => {
  const d = await initNode('lan-d');
  await writeFile(join(d.home, 'config.json'), JSON.stringify({ lanDiscoveryPort: 'x' }));
  await runCli(['--home', d.home, 'pair', 'add', a.id, '--name', 'alice']);
  const r = await runCli(['--home', d.home, 'ping', 'alice', '--count', '1']);
  t.not(r.code, 0);
  t.match(r.stderr, /config\.json: lanDiscoveryPort must be an integer in 1\.\.65535, got "x"/);
});
