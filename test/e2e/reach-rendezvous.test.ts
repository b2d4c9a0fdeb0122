// The rendezvous wired through the CLI on loopback: a rendezvous server, two homes whose
// config.json names it (LAN discovery off), pairs pinned with no address; ping and push find the
// peer through it, on each path a dialer may take (its lookup: direct; the traversal socket:
// punched, relayed), and report that path. Then a third home pairs by short code with no
// address: the code's number is looked up at the rendezvous, and so is a `send` code's.
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { CLI, initNode, jsonLines, runCli, startListener } from './cli-harness.js';

const server = spawn(process.execPath, [CLI, '--json', 'rendezvous', '--listen', '127.0.0.1:0'], {
  stdio: ['ignore', 'pipe', 'pipe'],
});
t.teardown(() => void server.kill('SIGKILL'));
const ready = JSON.parse(
  String((await createInterface({ input: server.stdout })[Symbol.asyncIterator]().next()).value),
) as Record<string, unknown>;
const rendezvous = `127.0.0.1:${String(ready['port'])}`;
const viaRendezvous = (home: string): Promise<void> =>
  writeFile(join(home, 'config.json'), JSON.stringify({ rendezvous, lanDiscovery: false }));

const a = await initNode('rv-a');
const b = await initNode('rv-b');
await viaRendezvous(a.home);
await viaRendezvous(b.home);
for (const [home, id, name] of [
  [a.home, b.id, 'bob'],
  [b.home, a.id, 'alice'],
] as const) {
  const added = await runCli(['--home', home, 'pair', 'add', id, '--name', name]); // no address
  if (added.code !== 0) throw new Error(`pair add ${name}: ${added.stderr}`);
}
const listener = await startListener(a.home);
t.teardown(() => listener.stop('SIGKILL'));
const work = await mkdtemp(join(tmpdir(), 'clawpeer-rv-'));

for (const [path, disable] of [
  ['direct', ''],
  ['punched', 'direct'],
  ['relayed', 'direct,punched'],
] as const) {
  t.test(`ping and push through the rendezvous: ${path}`, async (t) => {
    const env = { CLAWPEER_REACH_DISABLE: disable };
    const ping = await runCli(['--home', b.home, 'ping', 'alice', '--count', '1', '--json'], { env });
    t.equal(ping.code, 0, ping.stderr);
    t.match(jsonLines(ping.stdout).at(-1), { path });
    // pair list says the path the ping took (paths.json), not the last direct one.
    const list = await runCli(['--home', b.home, 'pair', 'list', '--json']);
    t.match(jsonLines(list.stdout), [{ event: 'peer', name: 'alice', path }], 'pair list names it');
    const src = join(work, `${path}.bin`);
    const bytes = randomBytes(3 << 20);
    await writeFile(src, bytes);
    const push = await runCli(['--home', b.home, 'push', src, 'alice', '--json'], { env });
    t.equal(push.code, 0, push.stderr);
    t.match(jsonLines(push.stdout).at(-1), { event: 'done', files: 1, path });
    t.ok(bytes.equals(await readFile(join(a.home, 'inbox', `${path}.bin`))), 'the bytes landed intact');
  });
}

t.test('pair join CODE with no address: the number is looked up at the rendezvous', async (t) => {
  const c = await initNode('rv-c');
  await viaRendezvous(c.home);
  const invite = await runCli(['--home', a.home, 'pair', 'invite', '--no-wait', '--json']);
  t.equal(invite.code, 0, invite.stderr);
  const code = String(jsonLines(invite.stdout)[0]?.['code']);
  const joined = await runCli(['--home', c.home, 'pair', 'join', code, '--name', 'alice', '--json']);
  t.equal(joined.code, 0, joined.stderr);
  t.match(jsonLines(joined.stdout).at(-1), { event: 'paired', id: a.id, name: 'alice' });
  const src = join(work, 'by-code.txt');
  await writeFile(src, 'paired through a rendezvous\n');
  const push = await runCli(['--home', c.home, 'push', src, 'alice']);
  t.equal(push.code, 0, push.stderr);
  t.equal(await readFile(join(a.home, 'inbox', 'by-code.txt'), 'utf8'), 'paired through a rendezvous\n');
});

t.test('pair invite warns when the listener is not registered with the rendezvous the code names', async (t) => {
  // a's listener registers with the rendezvous of its config.json: nothing to warn of.
  const fine = await runCli(['--home', a.home, 'pair', 'invite', '--no-wait', '--json']);
  t.equal(fine.code, 0, fine.stderr);
  t.notMatch(fine.stderr, /warning/);
  // The same server by another name (localhost for 127.0.0.1) is not another rendezvous.
  const port = rendezvous.slice(rendezvous.lastIndexOf(':') + 1);
  const byName = await runCli(['--home', a.home, '--rendezvous', `localhost:${port}`, 'pair', 'invite', '--no-wait']);
  t.equal(byName.code, 0, byName.stderr);
  t.notMatch(byName.stderr, /warning/, 'localhost names the rendezvous the listener registered with');
  // d's listener runs with no rendezvous, and the invite names one: the joiner would find the
  // code there but no way to the listener.
  const d = await initNode('rv-d');
  await writeFile(join(d.home, 'config.json'), JSON.stringify({ lanDiscovery: false }));
  const alone = await startListener(d.home);
  t.teardown(() => alone.stop('SIGKILL'));
  const r = await runCli(['--home', d.home, '--rendezvous', rendezvous, 'pair', 'invite', '--no-wait', '--json']);
  t.equal(r.code, 0, 'a warning, not a failure');
  t.match(
    r.stderr,
    `clawpeer: warning: this home's listener (pid ${String(alone.child.pid)}) is not registered with any rendezvous, not ${rendezvous}`,
  );
  t.match(r.stderr, `restart the listener with: clawpeer --rendezvous ${rendezvous} listen`);
  t.match(jsonLines(r.stdout)[0], { event: 'invite' }, 'stdout keeps its one record');
});

t.test('send / receive CODE with no address: found at the rendezvous, sent through its relay', async (t) => {
  const s = await initNode('rv-send');
  const r = await initNode('rv-recv');
  await viaRendezvous(s.home);
  await viaRendezvous(r.home);
  const src = join(work, 'sent-once.bin');
  const bytes = randomBytes(1 << 20);
  await writeFile(src, bytes);
  const sender = spawn(process.execPath, [CLI, '--home', s.home, 'send', src, '--host', '127.0.0.1', '--json'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  t.teardown(() => void sender.kill('SIGKILL'));
  const first = JSON.parse(
    String((await createInterface({ input: sender.stdout })[Symbol.asyncIterator]().next()).value),
  ) as Record<string, unknown>;
  t.match(first, { event: 'send-code', id: s.id });
  const ended = new Promise<number | null>((resolve) => sender.once('close', resolve));
  const dst = await mkdtemp(join(tmpdir(), 'clawpeer-rv-recv-'));
  const env = { CLAWPEER_REACH_DISABLE: 'direct,punched' };
  const got = await runCli(['--home', r.home, 'receive', String(first['code']), dst, '--json'], { env });
  t.equal(got.code, 0, got.stderr);
  t.match(jsonLines(got.stdout).at(-1), { event: 'done', files: 1, path: 'relayed' });
  t.ok(bytes.equals(await readFile(join(dst, 'sent-once.bin'))), 'the bytes landed intact');
  t.equal(await ended, 0);
});
