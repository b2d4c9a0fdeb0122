// `clawpeer doctor` through the real CLI: the table and the NDJSON contract, exit codes, a
// paired peer that is reachable or refuses us, and the health-check mode against a running
// listener. Port checks stay on 127.0.0.1.
import t from 'tap';
import { initNode, jsonLines, runCli, startListener, tempHome } from './cli-harness.js';

const a = await initNode('doctor-a');
const b = await initNode('doctor-b');
const listener = await startListener(a.home);
t.teardown(() => listener.stop('SIGKILL'));
const addr = `127.0.0.1:${listener.port}`;
await runCli(['--home', b.home, 'pair', 'add', a.id, '--name', 'alice', '--addr', addr]);

const CHECK_KEYS = ['detail', 'event', 'fix', 'name', 'status'];

t.test('no identity: the table shows the failure and its fix, exit 1', async (t) => {
  const home = await tempHome('doctor-empty');
  const r = await runCli(['--home', home, 'doctor', '--port', '0', '--no-peers']);
  t.equal(r.code, 1, r.stderr);
  t.match(r.stdout, /^FAIL {2}identity {4}.*no identity at/m);
  t.match(r.stdout, /^ +fix: create one: clawpeer init/m);
  t.match(r.stdout, /^ok {4}port-udp/m);
  t.match(r.stdout, /\d+ ok, \d+ warnings?, 1 failed$/m);
  t.match(r.stderr, /1 check failed: identity/);
});

t.test('a peer that has not paired us (yet): that check fails with the command to run over there', async (t) => {
  const r = await runCli(['--home', b.home, 'doctor', '--port', '0', '--json']);
  t.equal(r.code, 1);
  const events = jsonLines(r.stdout);
  t.match(
    events.find((e) => e['name'] === 'peer:alice'),
    { status: 'fail', fix: `on alice, run: clawpeer pair add ${b.id} --name <NAME>` },
  );
  t.match(
    events.at(-1),
    { event: 'error', exitCode: 1 },
    'the failure is reported after the summary, per the --json contract',
  );
  t.equal(events.at(-2)?.['event'], 'summary');
});

t.test('--json: one check event per check, then a summary; a reachable peer', async (t) => {
  await runCli(['--home', a.home, 'pair', 'add', b.id, '--name', 'bob']);
  const r = await runCli(['--home', b.home, 'doctor', '--port', '0', '--json']);
  const events = jsonLines(r.stdout); // throws on any non-JSON line
  const checks = events.filter((e) => e['event'] === 'check');
  for (const c of checks)
    t.same(Object.keys(c).sort(), CHECK_KEYS, `${String(c['name'])} has exactly the documented fields`);
  t.same(
    checks.map((c) => c['name']),
    ['identity', 'udp-buffers', 'port-udp', 'port-tcp', 'quic', 'blake3', 'zstd', 'clock', 'rendezvous', 'peer:alice'],
  );
  const alice = checks.find((c) => c['name'] === 'peer:alice');
  t.match(alice, {
    status: 'ok',
    detail: new RegExp(`reachable at ${addr.replace(/\./g, '\\.')} via quic`),
    fix: null,
  });
  const summary = events.find((e) => e['event'] === 'summary');
  const counted = (s: string): number => checks.filter((c) => c['status'] === s).length;
  t.same(summary, {
    event: 'summary',
    ok: counted('ok'),
    warn: counted('warn'),
    fail: counted('fail'),
    checks: checks.length,
  });
  t.equal(r.code, counted('fail') === 0 ? 0 : 1, 'exit 1 exactly when a check failed');
});

t.test('health-check mode: the running listener holds its port', async (t) => {
  const logBefore = listener.stderr().length;
  const ok = await runCli([
    '--home',
    a.home,
    'doctor',
    '--port',
    String(listener.port),
    '--host',
    '127.0.0.1',
    '--expect-listener',
    '--no-peers',
    '--json',
  ]);
  t.equal(ok.code, 0, ok.stdout + ok.stderr);
  const checks = jsonLines(ok.stdout);
  for (const p of ['port-udp', 'port-tcp'])
    t.match(
      checks.find((e) => e['name'] === p),
      { status: 'ok', detail: new RegExp(`own listener \\(${a.id}\\)`) },
    );
  t.equal(listener.stderr().slice(logBefore), '', 'the probe opens no stream, so the listener logs nothing about it');

  // No --port: the port this home's running listener took (not 7700, where nothing listens).
  const noPort = await runCli([
    '--home',
    a.home,
    'doctor',
    '--host',
    '127.0.0.1',
    '--expect-listener',
    '--no-peers',
    '--json',
  ]);
  t.equal(noPort.code, 0, noPort.stdout + noPort.stderr);
  t.match(
    jsonLines(noPort.stdout).find((e) => e['name'] === 'port-udp'),
    { status: 'ok', detail: new RegExp(`UDP port ${listener.port} is held by this node's own listener`) },
  );

  const other = await runCli([
    '--home',
    b.home,
    'doctor',
    '--port',
    String(listener.port),
    '--host',
    '127.0.0.1',
    '--no-peers',
    '--json',
  ]);
  t.equal(other.code, 1, 'another node on the port we would use is a failure');
  t.match(
    jsonLines(other.stdout).find((e) => e['name'] === 'port-udp'),
    { status: 'fail', detail: new RegExp(`another clawpeer node, ${a.id}`) },
  );
});

t.test('bad arguments are usage errors (exit 2)', async (t) => {
  const r = await runCli(['--home', b.home, 'doctor', '--port', '70000']);
  t.equal(r.code, 2);
  t.match(r.stderr, /--port must be an integer in 0\.\.65535/);
});
