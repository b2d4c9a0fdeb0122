// Pairing by short code through the real CLI on loopback: `pair invite` prints NUMBER-word-word
// and waits; `pair join CODE --addr` pairs both sides (the verification strings agree) and then
// a push works; a wrong code pins nothing on either side and burns the code on both.
import t from 'tap';
import { spawn } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { createInterface } from 'node:readline';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { CLI, initNode, jsonLines, runCli, startListener, type RunningListener } from './cli-harness.js';

// LAN discovery on loopback only, on a port of this test's own: `pair join CODE` with no
// --addr asks the LAN who holds the code's nameplate, and must not broadcast beyond this machine.
const lanDiscoveryPort = 40_000 + Math.floor(Math.random() * 20_000);
// 2.5 s of LAN queries: a listener sees a new --no-wait code through a watch of its invites
// directory, or at worst its 1 s poll (listener/nameplate-holder.ts), which a 1 s query window
// could miss on a loaded machine.
const onLoopbackLan = (home: string): Promise<void> =>
  writeFile(
    join(home, 'config.json'),
    JSON.stringify({ lanDiscoveryPort, lanInterfaces: ['lo'], lanDiscoveryTimeoutMs: 2500 }),
  );
const a = await initNode('code-a');
await onLoopbackLan(a.home);
const listener: RunningListener = await startListener(a.home);
const addr = `127.0.0.1:${listener.port}`;
t.teardown(() => listener.stop('SIGKILL'));

/** `pair invite --json` left running: its first line (the code), then how it ended. */
function waitingInvite(args: readonly string[]): {
  first: Promise<Record<string, unknown>>;
  end: Promise<{ code: number | null; lines: Record<string, unknown>[]; stderr: string }>;
} {
  const child = spawn(process.execPath, [CLI, '--home', a.home, 'pair', 'invite', '--json', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.teardown(() => child.kill('SIGKILL'));
  const lines: Record<string, unknown>[] = [];
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const rl = createInterface({ input: child.stdout });
  const first = new Promise<Record<string, unknown>>((resolve) =>
    rl.on('line', (line) => {
      lines.push(JSON.parse(line) as Record<string, unknown>);
      if (lines.length === 1) resolve(lines[0]!);
    }),
  );
  const end = new Promise<{ code: number | null; lines: Record<string, unknown>[]; stderr: string }>((resolve) =>
    child.once('close', (code) => resolve({ code, lines, stderr })),
  );
  return { first, end };
}

async function peerIds(home: string): Promise<string[]> {
  return jsonLines((await runCli(['--home', home, 'pair', 'list', '--json'])).stdout).map((p) => String(p['id']));
}

t.test('pair invite / pair join CODE --verify: both pinned, same verification string, then a push works', async (t) => {
  const d = await initNode('code-d');
  const invite = waitingInvite(['--name', 'dave', '--verify']);
  const first = await invite.first;
  t.match(first, { event: 'invite', code: /^[1-9][0-9]*-[a-z]+-[a-z]+$/, words: 2, bits: 20.7, id: a.id, addr });
  const code = String(first['code']);
  const joined = await runCli([
    '--home',
    d.home,
    'pair',
    'join',
    code,
    '--addr',
    addr,
    '--name',
    'alice',
    '--verify',
    '--yes',
    '--json',
  ]);
  t.equal(joined.code, 0, joined.stderr);
  const [verifyLine, paired] = jsonLines(joined.stdout);
  t.match(verifyLine, { event: 'verify', verify: /^[0-9a-f]{4}(-[0-9a-f]{4}){3}$/ });
  t.match(paired, { event: 'paired', id: a.id, name: 'alice', addr, verify: verifyLine?.['verify'] });
  const ended = await invite.end;
  t.equal(ended.code, 0, ended.stderr);
  t.match(
    ended.lines[1],
    { event: 'paired', id: d.id, name: 'dave', verify: verifyLine?.['verify'] },
    'the inviter shows the same verification string',
  );
  t.match(listener.stderr(), new RegExp(`paired by code id=${d.id}`));
  const src = join(await mkdtemp(join(tmpdir(), 'clawpeer-code-')), 'hello.txt');
  await writeFile(src, 'paired by a short code\n');
  const push = await runCli(['--home', d.home, 'push', src, 'alice']);
  t.equal(push.code, 0, `the new pair pushes: ${push.stderr}`);
  // Single use: the same code again finds no invite.
  const again = await runCli(['--home', d.home, 'pair', 'join', code, '--addr', addr]);
  t.not(again.code, 0);
  t.match(again.stderr, /has no open pairing code with the number/);
  // A node paired already may join with a new code: confirmed both ways, its pin and name kept.
  const fresh = await runCli(['--home', a.home, 'pair', 'invite', '--no-wait', '--json']);
  const repaired = await runCli([
    '--home',
    d.home,
    'pair',
    'join',
    String(jsonLines(fresh.stdout)[0]?.['code']),
    '--addr',
    addr,
    '--json',
  ]);
  t.equal(repaired.code, 0, repaired.stderr);
  t.match(jsonLines(repaired.stdout)[0], { event: 'paired', id: a.id, name: 'alice', alreadyPaired: true });
});

t.test('a wrong code pins nothing on either side and burns the code on both', async (t) => {
  const e = await initNode('code-e');
  const before = await peerIds(a.home);
  const invite = waitingInvite([]);
  const first = await invite.first;
  const code = String(first['code']);
  const [nameplate, w1, w2] = code.split('-');
  const wrongCode = `${nameplate}-${w1 === 'acid' ? 'acorn' : 'acid'}-${w2}`;
  const wrong = await runCli(['--home', e.home, 'pair', 'join', wrongCode, '--addr', addr]);
  t.equal(wrong.code, 3, wrong.stderr);
  t.match(wrong.stderr, /did not match the inviter's .*someone may have tried to guess it/);
  const ended = await invite.end;
  t.not(ended.code, 0, 'the waiting inviter fails');
  t.match(ended.stderr, /is burnt: .*someone may have tried to guess it/);
  t.same(await peerIds(e.home), [], 'the joiner pinned nothing');
  t.same(await peerIds(a.home), before, 'the inviter pinned nothing');
  const right = await runCli(['--home', e.home, 'pair', 'join', code, '--addr', addr]);
  t.not(right.code, 0, 'the right code after a wrong guess is burnt too');
  t.same(await peerIds(e.home), []);
});

t.test('pair join --verify answered no: nothing pinned, the code burnt', async (t) => {
  const g = await initNode('code-g');
  const invite = await runCli(['--home', a.home, 'pair', 'invite', '--no-wait', '--json']);
  const code = String(jsonLines(invite.stdout)[0]?.['code']);
  const refused = await runCli(['--home', g.home, 'pair', 'join', code, '--addr', addr, '--verify'], {
    stdin: Buffer.from('n\n'),
  });
  t.equal(refused.code, 3, refused.stderr);
  t.match(refused.stdout, /verification: [0-9a-f]{4}-/);
  t.match(refused.stderr, /verification not confirmed: nothing pinned/);
  t.same(await peerIds(g.home), []);
  t.notOk((await peerIds(a.home)).includes(g.id), 'the inviter did not pin it');
  t.match(listener.stderr(), new RegExp(`pairing code burnt id=${g.id}`));
});

t.test(
  'pair invite --no-wait returns, the listener holds the code; join with no address finds it on the LAN',
  async (t) => {
    const f = await initNode('code-f');
    await onLoopbackLan(f.home);
    const invite = await runCli(['--home', a.home, 'pair', 'invite', '--no-wait', '--words', '3', '--json']);
    t.equal(invite.code, 0, invite.stderr);
    const code = String(jsonLines(invite.stdout)[0]?.['code']);
    t.match(code, /^[1-9][0-9]*-[a-z]+-[a-z]+-[a-z]+$/);
    t.match(invite.stdout, new RegExp(`"code":"${code}"`));
    const joined = await runCli(['--home', f.home, 'pair', 'join', code, '--name', 'alice', '--json']);
    t.equal(joined.code, 0, joined.stderr);
    t.match(jsonLines(joined.stdout).at(-1), { event: 'paired', id: a.id, name: 'alice', addr });
    t.ok((await peerIds(a.home)).includes(f.id), 'the listener pinned it with no CLI waiting');
    const ping = await runCli(['--home', f.home, 'ping', 'alice', '--count', '1', '--json']);
    t.equal(ping.code, 0, ping.stderr);

    // Nobody holds a number: the LAN was asked, and the error says how to give an address.
    const none = await runCli(['--home', f.home, 'pair', 'join', '999999-acid-zebra']);
    t.equal(none.code, 4, none.stderr);
    t.match(none.stderr, /nobody holds nameplate 999999 \(asked: lan\).*--addr HOST:PORT/);
    // LAN discovery off and no address: nothing to ask, a usage error naming --addr.
    const off = await runCli(['--home', f.home, '--no-lan-discovery', 'pair', 'join', code]);
    t.equal(off.code, 2, off.stderr);
    t.match(off.stderr, /--addr HOST:PORT/);

    // A rendezvous that does not answer did not say nobody holds the number: the error says it
    // could not look it up, and why, rather than blaming the number.
    const silent = createSocket('udp4');
    await new Promise<void>((resolve) => silent.bind(0, '127.0.0.1', resolve));
    t.teardown(() => silent.close());
    const rv = `127.0.0.1:${silent.address().port}`;
    const down = await runCli(['--home', f.home, '--no-lan-discovery', '--rendezvous', rv, 'pair', 'join', code]);
    t.equal(down.code, 4, down.stderr);
    t.match(
      down.stderr,
      new RegExp(
        `cannot reach the holder of nameplate \\d+ \\(asked: rendezvous ${rv}, which failed: rendezvous ${rv} did not answer`,
      ),
    );
    t.notMatch(down.stderr, /nobody holds/);
  },
);
