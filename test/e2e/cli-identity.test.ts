// init / id / pair through the real CLI, as a new user would run them.
import t from 'tap';
import { spawn } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { CLI, initNode, jsonLines, runCli, startListener, tempHome } from './cli-harness.js';

t.test('init creates a 0600 key, refuses to overwrite, --force replaces', async (t) => {
  const home = await tempHome('init');
  const first = await runCli(['--home', home, 'init']);
  t.equal(first.code, 0, first.stderr);
  t.match(first.stdout, /created identity 12D3KooW/);
  t.equal((await stat(join(home, 'identity.key'))).mode & 0o777, 0o600);
  const again = await runCli(['--home', home, 'init']);
  t.equal(again.code, 5, 'refusing to overwrite exits 5');
  t.match(again.stderr, /already exists at .*identity\.key.*--force/);
  const forced = await runCli(['--home', home, 'init', '--force', '--json']);
  t.equal(forced.code, 0);
  const id = await runCli(['--home', home, 'id', '--json']);
  const rec = jsonLines(id.stdout);
  t.equal(rec.length, 1, 'exactly one JSON object on stdout');
  t.equal(rec[0]?.['event'], 'id', 'id --json has an event field like every other command');
  t.equal(rec[0]?.['id'], jsonLines(forced.stdout)[0]?.['id']);
  t.match(String(rec[0]?.['publicKey']), /^[0-9a-f]{64}$/);
});

t.test('CLAWPEER_HOME is honoured; id without init explains what to do', async (t) => {
  const home = await tempHome('env');
  const r = await runCli(['id'], { env: { CLAWPEER_HOME: home } });
  t.equal(r.code, 1);
  t.match(r.stderr, /no identity at .*identity\.key: run `clawpeer init`/);
  t.equal((await runCli(['init'], { env: { CLAWPEER_HOME: home } })).code, 0);
  t.equal((await runCli(['id'], { env: { CLAWPEER_HOME: home } })).code, 0);
});

t.test('listen --init reports the identity it made at info, not as a warning', async (t) => {
  const home = await tempHome('listen-init');
  const listener = await startListener(home, ['--init', '-v']);
  t.teardown(() => listener.stop('SIGKILL'));
  t.match(listener.ready, { id: /^12D3KooW/ });
  await listener.stop();
  t.match(listener.stderr(), /INFO clawpeer: created identity 12D3KooW/);
  t.notMatch(listener.stderr(), /WARN[^\n]*created identity/);
});

t.test('a listener on 127.0.0.1 prints pairing hints with that address, not <THIS_HOST>', async (t) => {
  const home = await tempHome('listen-hint');
  const child = spawn(
    process.execPath,
    [CLI, '--home', home, 'listen', '--init', '--host', '127.0.0.1', '--port', '0'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  t.teardown(() => child.kill('SIGKILL'));
  let stderr = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no pairing hint in 20 s: ${stderr}`)), 20_000);
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      if (/pair join <CODE>[^\n]*\n/.test(stderr)) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  t.match(
    stderr,
    /clawpeer pair add 12D3KooW\S+ --name <NAME> \(on this LAN; elsewhere add --addr 127\.0\.0\.1:\d+\)\n/,
  );
  t.match(stderr, /clawpeer pair join <CODE> \(there; add --addr 127\.0\.0\.1:\d+ if its number is not found\)/);
  t.notMatch(stderr, /<THIS_HOST>/);
});

t.test('pair add / list / remove', async (t) => {
  const a = await initNode('pa');
  const b = await initNode('pb');
  const add = await runCli([
    '--home',
    b.home,
    'pair',
    'add',
    a.id,
    '--name',
    'alice',
    '--addr',
    '127.0.0.1:7700',
    '--json',
  ]);
  t.equal(add.code, 0, add.stderr);
  t.match(jsonLines(add.stdout)[0], { event: 'paired', id: a.id, name: 'alice', addr: '127.0.0.1:7700' });
  const list = await runCli(['--home', b.home, 'pair', 'list', '--json']);
  t.match(jsonLines(list.stdout), [{ event: 'peer', id: a.id, name: 'alice' }]);
  const human = await runCli(['--home', b.home, 'pair', 'list']);
  t.match(human.stdout, new RegExp(`alice\\t${a.id}\\t127\\.0\\.0\\.1:7700`));
  // Adding again without --addr keeps the pinned address (and says so); pair edit --no-addr drops it.
  const again = await runCli(['--home', b.home, 'pair', 'add', a.id, '--name', 'alice']);
  t.match(again.stdout, 'at 127.0.0.1:7700 (the address it had; unpin it with: clawpeer pair edit alice --no-addr)');
  const unpin = await runCli(['--home', b.home, 'pair', 'edit', 'alice', '--no-addr', '--json']);
  t.equal(unpin.code, 0, unpin.stderr);
  t.notOk('addr' in (jsonLines(unpin.stdout)[0] ?? {}), 'no address in the record');
  t.match((await runCli(['--home', b.home, 'pair', 'list'])).stdout, new RegExp(`alice\\t${a.id}\\t-`));
  const nothing = await runCli(['--home', b.home, 'pair', 'edit', 'alice']);
  t.equal(nothing.code, 2, 'pair edit with nothing to change is a usage error');
  const rm = await runCli(['--home', b.home, 'pair', 'remove', 'alice']);
  t.equal(rm.code, 0);
  t.same(jsonLines((await runCli(['--home', b.home, 'pair', 'list', '--json'])).stdout), []);
  const missing = await runCli(['--home', b.home, 'pair', 'remove', 'alice']);
  t.equal(missing.code, 2);
  t.match(missing.stderr, /no paired peer named or with id "alice"/);
});

t.test('usage errors exit 2 and name the problem', async (t) => {
  const home = await tempHome('usage');
  const bad = await runCli(['--home', home, 'pair', 'add', 'not-an-id', '--name', 'x']);
  t.equal(bad.code, 2);
  t.match(bad.stderr, /not a node id: "not-an-id"/);
  const unknown = await runCli(['--home', home, 'frobnicate']);
  t.equal(unknown.code, 2);
  const typo = await runCli(['--home', home, 'doctor', '--hots', '127.0.0.1']);
  t.equal(typo.code, 2);
  t.match(typo.stderr, /Unknown argument: --hots \(did you mean --host\?\)/, "a typo'd flag gets a did-you-mean");
  const json = await runCli(['--home', home, 'pair', 'add', 'nope', '--name', 'x', '--json']);
  t.match(jsonLines(json.stdout)[0], { event: 'error', code: 'USAGE', exitCode: 2 });
  const version = await runCli(['--version']);
  t.equal(version.code, 0);
  t.match(version.stdout, /^\d+\.\d+\.\d+/);
  const help = await runCli(['--help']);
  t.equal(help.code, 0);
  t.match(help.stdout, /listen/);
});

t.test('a reader that goes away (| head) ends the command as SIGPIPE would: exit 141, no stack trace', async (t) => {
  const home = await tempHome('epipe');
  const child = spawn(process.execPath, [CLI, '--home', home, 'init'], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.destroy(); // nobody reads: its first line meets a closed pipe
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  t.equal(code, 141, stderr);
  t.notMatch(stderr, /Unhandled 'error' event|EPIPE/);
});
