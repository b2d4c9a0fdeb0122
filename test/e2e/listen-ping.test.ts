// The node end to end, through the real CLI on loopback: pairing, listen, ping over QUIC and
// TCP, pinning on both sides, garbage on the control stream, clean shutdown.
import t from 'tap';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { CLI, initNode, jsonLines, runCli, startListener, type RunningListener } from './cli-harness.js';
import { loadIdentity } from '../../src/home/identity-store.js';
import { backendByName } from '../../src/transport/backends.js';
import { join } from 'node:path';
import { mkdtemp, readdir, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';

const a = await initNode('a');
const b = await initNode('b');
const c = await initNode('c'); // knows A, but A does not know C
const listener: RunningListener = await startListener(a.home);
const addr = `127.0.0.1:${listener.port}`;
await runCli(['--home', b.home, 'pair', 'add', a.id, '--name', 'alice', '--addr', addr]);
await runCli(['--home', c.home, 'pair', 'add', a.id, '--name', 'alice', '--addr', addr]);
await runCli(['--home', a.home, 'pair', 'add', b.id, '--name', 'bob']);
t.teardown(() => listener.stop('SIGKILL'));

t.test('listener reports where it listens', async (t) => {
  t.match(listener.ready, { event: 'listening', host: '127.0.0.1', id: a.id, transports: ['quic', 'tcp'] });
  t.ok(listener.port > 0, '--port 0 picked a real port');
  t.match(listener.ready['shares'], [{ name: 'inbox', readOnly: false }]);
});

t.test(
  'status: the listener of a home says where it listens, who is connected and what runs, while a push runs; no listener is exit 1',
  async (t) => {
    const idle = await runCli(['--home', a.home, 'status', '--json']);
    t.equal(idle.code, 0, idle.stderr);
    t.match(jsonLines(idle.stdout)[0], {
      event: 'status',
      id: a.id,
      host: '127.0.0.1',
      port: listener.port,
      transports: ['quic', 'tcp'],
      shares: [{ name: 'inbox', readOnly: false }],
      activity: [],
    });
    // A push held before its first chunk until the test has looked (CLAWPEER_TEST_HOLD_UNTIL_FILE):
    // it runs for as long as the test needs, however loaded the machine.
    const scratch = await mkdtemp(join(tmpdir(), 'clawpeer-status-'));
    const src = join(scratch, 'slow.bin');
    const releasePush = join(scratch, 'release-push');
    await writeFile(src, randomBytes(1 << 20));
    const push = spawn(process.execPath, [CLI, '--home', b.home, 'push', src, 'alice', '--transport', 'quic'], {
      stdio: 'ignore',
      env: { ...process.env, CLAWPEER_TEST_HOLD_UNTIL_FILE: releasePush },
    });
    const ended = new Promise<number | null>((resolve) => push.once('exit', resolve));
    t.teardown(() => push.kill('SIGKILL'));
    let seen: Record<string, unknown> | undefined;
    for (let i = 0; i < 300 && seen === undefined; i++) {
      const s = jsonLines((await runCli(['--home', a.home, 'status', '--json'])).stdout)[0];
      if (Array.isArray(s?.['activity']) && s['activity'].length > 0) seen = s;
      else await new Promise((resolve) => setTimeout(resolve, 100));
    }
    t.ok(seen, 'the push shows up');
    t.match(seen?.['activity'], [
      { peer: b.id, kind: 'push', share: 'inbox', path: '', totalBytes: 1 << 20, totalFiles: 1 },
    ]);
    t.match(seen?.['peers'], [{ id: b.id, name: 'bob', transport: 'quic' }], 'its peer, under its pair name');
    const pairs = jsonLines((await runCli(['--home', a.home, 'pair', 'list', '--json'])).stdout);
    t.match(
      pairs.find((p) => p['id'] === b.id),
      { name: 'bob', connected: true },
      'pair list asks the running listener who is connected',
    );
    t.notOk(
      jsonLines((await runCli(['--home', b.home, 'pair', 'list', '--json'])).stdout).some((p) => 'connected' in p),
      'a home without a listener does not say',
    );
    const text = await runCli(['--home', a.home, 'status']);
    t.match(text.stdout, /push from bob into inbox: .* of 1\.0 MiB, 0 of 1 files, for /);
    await writeFile(releasePush, '');
    t.equal(await ended, 0, 'the push completes');
    const after = jsonLines((await runCli(['--home', a.home, 'status', '--json'])).stdout)[0];
    t.same(after?.['activity'], [], 'nothing runs once it is done');
    t.match(
      after?.['ended'],
      { push: { count: 1, failed: 0, bytes: 1 << 20 } },
      'and it counts among those that ended',
    );
    // The same push again, of a different file under that name: refused (exit 5), counted as failed.
    await writeFile(src, randomBytes(1 << 10));
    t.equal(
      (await runCli(['--home', b.home, 'push', src, 'alice', '--transport', 'quic'])).code,
      5,
      'a different file is not replaced',
    );
    const refused = await runCli(['--home', a.home, 'status']);
    t.match(
      jsonLines((await runCli(['--home', a.home, 'status', '--json'])).stdout)[0]?.['ended'],
      { push: { count: 2, failed: 1 } },
      'a refused push counts as failed',
    );
    t.match(refused.stdout, /since it started: 2 pushes \(1\.0 MiB, 1 failed\)/);
    // A sync served for a peer shows up too, with the content it moves.
    const folder = await mkdtemp(join(tmpdir(), 'clawpeer-status-sync-'));
    await writeFile(join(folder, 'big.bin'), randomBytes(1 << 20));
    const releaseSync = join(scratch, 'release-sync');
    const sync = spawn(
      process.execPath,
      [CLI, '--home', b.home, 'sync', folder, 'alice:inbox', '--mode', 'send-only', '--transport', 'quic'],
      { stdio: 'ignore', env: { ...process.env, CLAWPEER_TEST_HOLD_UNTIL_FILE: releaseSync } },
    );
    const synced = new Promise<number | null>((resolve) => sync.once('exit', resolve));
    t.teardown(() => sync.kill('SIGKILL'));
    let syncing: Record<string, unknown> | undefined;
    for (let i = 0; i < 300 && syncing === undefined; i++) {
      const s = jsonLines((await runCli(['--home', a.home, 'status', '--json'])).stdout)[0];
      const running = Array.isArray(s?.['activity']) ? (s['activity'] as Record<string, unknown>[]) : [];
      if (running.some((x) => x['kind'] === 'sync' && Number(x['totalBytes']) > 0)) syncing = s;
      else await new Promise((resolve) => setTimeout(resolve, 100));
    }
    t.match(
      syncing?.['activity'],
      [{ peer: b.id, kind: 'sync', share: 'inbox', totalBytes: 1 << 20, totalFiles: 1 }],
      'the sync, once its content moves',
    );
    await writeFile(releaseSync, '');
    t.equal(await synced, 0, 'the sync completes');
    const none = await runCli(['--home', c.home, 'status']);
    t.equal(none.code, 1, none.stderr);
    t.match(none.stderr, /no listener is running for the home .*: no listener on .*control\.sock/);
  },
);

t.test(
  "the launcher sizes libuv's thread pool before its first use (fsync batches need it)",
  { skip: process.platform !== 'linux' && 'reads /proc' },
  async (t) => {
    // Through `env -i`: tap's spawn hook puts its own preload into a child's environment, and that
    // loads a module through the pool before the launcher runs.
    const child = spawn(
      '/usr/bin/env',
      [
        '-i',
        `PATH=${process.env['PATH'] ?? ''}`,
        process.execPath,
        CLI,
        '--home',
        c.home,
        'listen',
        '--host',
        '127.0.0.1',
        '--port',
        '0',
        '--json',
      ],
      { stdio: ['ignore', 'pipe', 'ignore'] },
    );
    t.teardown(() => child.kill('SIGKILL'));
    await new Promise<void>((resolve) => createInterface({ input: child.stdout }).once('line', () => resolve()));
    const threads = (await readdir(`/proc/${child.pid}/task`)).length;
    // The default pool is 4 threads; with the main thread, V8's and quinn's, a listener had 14.
    t.ok(threads > 32, `${threads} threads: the 32-thread pool of bin/thread-pool.cjs is running`);
  },
);

for (const transport of ['quic', 'tcp'] as const) {
  t.test(`ping over ${transport}`, async (t) => {
    const r = await runCli([
      '--home',
      b.home,
      'ping',
      'alice',
      '--count',
      '3',
      '--interval',
      '10',
      '--transport',
      transport,
      '--json',
    ]);
    t.equal(r.code, 0, r.stderr);
    const events = jsonLines(r.stdout);
    const pongs = events.filter((e) => e['event'] === 'pong');
    t.equal(pongs.length, 3);
    for (const p of pongs) {
      t.equal(p['transport'], transport);
      t.equal(p['version'], 1);
      t.ok(typeof p['rttMs'] === 'number' && p['rttMs'] > 0);
      t.ok((p['caps'] as string[]).includes('aead:aes-256-gcm'));
    }
    t.match(events.at(-1), { event: 'summary', sent: 3, received: 3 });
  });
}

t.test('ping by node id, human output', async (t) => {
  const r = await runCli(['--home', b.home, 'ping', a.id, '--count', '1']);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /via quic, protocol v1/);
  t.match(r.stdout, /pong from alice: seq=1 rtt=/);
});

t.test('an unpaired node is refused with exit 3 and the listener keeps serving', async (t) => {
  const r = await runCli(['--home', c.home, 'ping', 'alice', '--count', '1']);
  t.equal(r.code, 3, r.stderr);
  t.match(r.stderr, new RegExp(`node ${c.id} is not paired with ${a.id}`));
  const again = await runCli(['--home', b.home, 'ping', 'alice', '--count', '1', '--json']);
  t.equal(again.code, 0, 'a paired peer still gets in');
  t.match(listener.stderr(), new RegExp(`rejected unpaired peer id=${c.id}`));
});

t.test('pair invite / pair join: a one-time code pins both keys; a wrong or used code pins nothing', async (t) => {
  const d = await initNode('d');
  const e = await initNode('e');
  const invite = await runCli(['--home', a.home, 'pair', 'invite', '--long', '--name', 'dave', '--json']);
  t.equal(invite.code, 0, invite.stderr);
  const code = String(jsonLines(invite.stdout)[0]?.['code']);
  t.match(
    jsonLines(invite.stdout)[0],
    { event: 'invite', port: listener.port, addr },
    "the home's running listener says where it listens",
  );
  t.match(code, /^[a-z2-7]{4}(-[a-z2-7]{4}){5}$/);
  // A wrong code: refused; nothing pinned on either side, and the invite stays open.
  const wrongCode = code.replace(/^./, (ch) => (ch === 'a' ? 'b' : 'a'));
  const wrong = await runCli(['--home', e.home, 'pair', 'join', wrongCode, '--addr', addr]);
  t.equal(wrong.code, 3, wrong.stderr);
  t.match(wrong.stderr, /the invite code was not accepted/);
  t.same(
    jsonLines((await runCli(['--home', e.home, 'pair', 'list', '--json'])).stdout),
    [],
    'the joiner pinned nothing',
  );
  // The right code (any case): both sides pinned.
  const joined = await runCli([
    '--home',
    d.home,
    'pair',
    'join',
    code.toUpperCase(),
    '--addr',
    addr,
    '--name',
    'alice',
    '--json',
  ]);
  t.equal(joined.code, 0, joined.stderr);
  t.match(jsonLines(joined.stdout)[0], { event: 'paired', id: a.id, name: 'alice', addr });
  const aPeers = jsonLines((await runCli(['--home', a.home, 'pair', 'list', '--json'])).stdout);
  t.ok(
    aPeers.some((p) => p['id'] === d.id && p['name'] === 'dave'),
    "the listener pinned the joiner under the invite's name",
  );
  t.notOk(
    aPeers.some((p) => p['id'] === e.id),
    'not the one with the wrong code',
  );
  t.equal((await runCli(['--home', d.home, 'ping', 'alice', '--count', '1'])).code, 0, 'the new pair talks');
  const reused = await runCli(['--home', e.home, 'pair', 'join', code, '--addr', addr]);
  t.equal(reused.code, 3, 'a used code is refused');
  t.match(listener.stderr(), new RegExp(`paired by invite id=${d.id} name=dave`));
  // A lost PairAccept (the listener pinned the joiner, the joiner never saw its proof): the
  // same join again gets the proof and pins the listener, until the invite expires.
  t.equal((await runCli(['--home', d.home, 'pair', 'remove', 'alice'])).code, 0);
  const retried = await runCli(['--home', d.home, 'pair', 'join', code, '--addr', addr, '--name', 'alice', '--json']);
  t.equal(retried.code, 0, retried.stderr);
  t.match(jsonLines(retried.stdout)[0], { event: 'paired', id: a.id, name: 'alice', addr });
  t.match(listener.stderr(), new RegExp(`pairing by invite confirmed again \\(the joiner retried\\) id=${d.id}`));
  t.equal(
    (await runCli(['--home', e.home, 'pair', 'join', code, '--addr', addr])).code,
    3,
    'the used code still pins no other key',
  );
  // A node the listener has pinned already, joining with a wrong code: exit 3 as for any node,
  // saying it is paired there already; no protocol complaint in the listener's log.
  const second = String(
    jsonLines((await runCli(['--home', a.home, 'pair', 'invite', '--long', '--json'])).stdout)[0]?.['code'],
  );
  t.equal((await runCli(['--home', d.home, 'pair', 'remove', 'alice'])).code, 0);
  const wrongSecond = second.replace(/^./, (ch) => (ch === 'a' ? 'b' : 'a'));
  const wrongTwice = await runCli(['--home', d.home, 'pair', 'join', wrongSecond, '--addr', addr]);
  t.equal(wrongTwice.code, 3, wrongTwice.stderr);
  t.match(
    wrongTwice.stderr,
    `the invite code was not accepted (wrong, used or expired); node ${d.id} is paired with ${a.id} already`,
  );
  t.same(
    jsonLines((await runCli(['--home', d.home, 'pair', 'list', '--json'])).stdout),
    [],
    'the wrong code pinned nothing here',
  );
  // ... and with the right code: the code is used up and the pairing confirmed both ways.
  const twice = await runCli(['--home', d.home, 'pair', 'join', second, '--addr', addr, '--json']);
  t.equal(twice.code, 0, twice.stderr);
  t.match(jsonLines(twice.stdout)[0], { event: 'paired', id: a.id, addr, alreadyPaired: false });
  const again = await runCli([
    '--home',
    d.home,
    'pair',
    'join',
    String(jsonLines((await runCli(['--home', a.home, 'pair', 'invite', '--long', '--json'])).stdout)[0]?.['code']),
    '--addr',
    addr,
  ]);
  t.equal(again.code, 0, again.stderr);
  t.match(again.stdout, `already paired with`, 'paired on both sides already: says so');
  t.match(listener.stderr(), new RegExp(`invite used by a node paired already: confirmed id=${d.id}`));
  t.notMatch(listener.stderr(), /expected Hello/, 'no protocol complaint about the PairRequest');
  t.equal((await runCli(['--home', d.home, 'ping', a.id, '--count', '1'])).code, 0, 'the pair still talks');
});

t.test('client side pinning: an unpaired id is not dialled, a wrong key at the address is refused', async (t) => {
  const r = await runCli(['--home', b.home, 'ping', c.id, '--addr', addr, '--count', '1']);
  t.equal(r.code, 3);
  t.match(r.stderr, new RegExp(`peer ${c.id} is not paired`));
  // B pins C's id under a name but points it at A's address: A proves a different key.
  await runCli(['--home', b.home, 'pair', 'add', c.id, '--name', 'carol', '--addr', addr]);
  const wrong = await runCli(['--home', b.home, 'ping', 'carol', '--count', '1']);
  t.equal(wrong.code, 3);
  t.match(wrong.stderr, new RegExp(`the node at ${addr.replace(/\./g, '\\.')} is ${a.id}, not carol`));
});

t.test('unreachable peer exits 4 naming the address', async (t) => {
  const r = await runCli([
    '--home',
    b.home,
    'ping',
    'alice',
    '--addr',
    '127.0.0.1:9',
    '--count',
    '1',
    '--connect-timeout',
    '500',
  ]);
  t.equal(r.code, 4, r.stderr);
  t.match(r.stderr, /127\.0\.0\.1:9/);
});

t.test('unknown peer name and bad flags exit 2', async (t) => {
  t.equal((await runCli(['--home', b.home, 'ping', 'nobody'])).code, 2);
  t.equal((await runCli(['--home', b.home, 'ping', 'alice', '--count', '0'])).code, 2);
  t.equal((await runCli(['--home', b.home, 'ping', 'alice', '--addr', 'nowhere'])).code, 2);
});

t.test('garbage on the control stream closes that connection only', async (t) => {
  const identity = await loadIdentity(join(b.home, 'identity.key'));
  for (const name of ['quic', 'tcp'] as const) {
    const backend = await backendByName(name);
    const conn = await backend.connect({ host: '127.0.0.1', port: listener.port, identity, idleTimeoutMs: 5000 });
    const stream = await conn.openStream();
    await stream.write(Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
    // The listener answers with an Error frame (type 1 = control) and ends the stream.
    const chunks: Uint8Array[] = [];
    for (;;) {
      const piece = await stream.read().catch(() => null);
      if (piece === null) break;
      chunks.push(piece);
    }
    const reply = Buffer.concat(chunks);
    t.equal(reply[0], 1, `${name}: a control frame came back`);
    t.match(reply.toString('latin1'), /frame|protocol|type/i, `${name}: it explains the problem`);
    await conn.close();
  }
  const r = await runCli(['--home', b.home, 'ping', 'alice', '--count', '1']);
  t.equal(r.code, 0, 'the listener still serves');
});

t.test('a removed pair is refused on its next connect', async (t) => {
  const rm = await runCli(['--home', a.home, 'pair', 'remove', 'bob']);
  t.equal(rm.code, 0);
  const r = await runCli(['--home', b.home, 'ping', 'alice', '--count', '1']);
  t.equal(r.code, 3);
  await runCli(['--home', a.home, 'pair', 'add', b.id, '--name', 'bob']);
  t.equal((await runCli(['--home', b.home, 'ping', 'alice', '--count', '1'])).code, 0, 're-pairing lets it back in');
});

t.test('a pair removed while its connection is open is dropped at once', async (t) => {
  const child = spawn(
    process.execPath,
    [CLI, '--home', b.home, 'ping', 'alice', '--count', '600', '--interval', '50', '--json'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
  await new Promise<void>((resolve) => createInterface({ input: child.stdout }).once('line', () => resolve()));
  const removedAt = Date.now();
  t.equal((await runCli(['--home', a.home, 'pair', 'remove', 'bob'])).code, 0);
  const code = await exited;
  t.equal(code, 3, `the connected peer is told it was unpaired (${stderr.trim()})`);
  t.match(stderr, /was unpaired/);
  t.ok(Date.now() - removedAt < 10_000, 'well before its 600 probes would have ended');
  await runCli(['--home', a.home, 'pair', 'add', b.id, '--name', 'bob']);
});

t.test('SIGINT stops the listener cleanly, even with a peer connected', async (t) => {
  const l2 = await startListener(a.home);
  const identity = await loadIdentity(join(b.home, 'identity.key'));
  const conn = await (
    await backendByName('quic')
  ).connect({ host: '127.0.0.1', port: l2.port, identity, idleTimeoutMs: 10_000 });
  const started = Date.now();
  const code = await l2.stop('SIGINT');
  t.equal(code, 0);
  t.ok(Date.now() - started < 5000, 'exits within 5 s');
  t.match(
    l2.lines().map((l) => JSON.parse(l) as unknown),
    [{ event: 'stopped' }],
  );
  await conn.close();
});

t.test('listen refuses a port in use and a bad share, with exit codes', async (t) => {
  const busy = await runCli(['--home', a.home, 'listen', '--host', '127.0.0.1', '--port', String(listener.port)]);
  t.equal(busy.code, 1);
  t.match(busy.stderr, /in use/);
  const share = await runCli(['--home', a.home, 'listen', '--port', '0', '--share', 'nodir']);
  t.equal(share.code, 2);
  t.match(share.stderr, /NAME=DIR/);
});
