// Listener hardening through the real CLI (`clawpeer listen` with its flags), plus in-process
// clients where a test must hold connections open:
// - a push whose client was SIGKILLed is superseded by the immediate rerun from the same peer
//   (destination lock): the rerun completes byte-identical with no staging files left, and the
//   listener logs that it aborted the older push before serving the rerun;
// - stale `.clawpeer-tmp-*` files of dead writers are swept from writable shares at listen start
//   (and from a pull's destination before the pull), live ones stay;
// - connection caps: the connection over the per-peer cap, and the one over the total cap, get a
//   wire error saying so; the listener keeps serving others;
// - an idle session is closed after --session-idle-timeout; one that keeps pinging is not;
// - bad flag values exit 2 with a message naming the flag.
import t from 'tap';
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { resolveConfig } from '../../src/home/config.js';
import { dialPeer } from '../../src/session/dialer.js';
import { loadIdentity } from '../../src/home/identity-store.js';
import { PeerStore } from '../../src/home/peer-store.js';
import { resolvePeer } from '../../src/home/peer-resolve.js';
import { pingPeer } from '../../src/session/ping.js';
import { tempNameFor } from '../../src/store/temp-files.js';
import type { PeerSession } from '../../src/session/session.js';
import { withTimeout } from '../../src/support/timeouts.js';
import { silentLogger } from '../../src/logger.js';
import {
  doneEvent,
  isClawpeerInternal,
  makeSeededTree,
  newHome,
  runCli,
  sleep,
  snapshot,
  spawnCli,
  startRig,
  treeDiff,
  withoutInternals,
  type Rig,
} from './fault-harness.js';

/** A pid that belonged to a process that has exited (so `kill(pid, 0)` says ESRCH). */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' });
  await new Promise((resolve) => child.on('close', resolve));
  const pid = child.pid ?? 0;
  try {
    process.kill(pid, 0);
    throw new Error(`pid ${pid} was reused already`);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
  return pid;
}

async function dialer(rig: Rig, home: string): Promise<() => Promise<PeerSession>> {
  const identity = await loadIdentity(path.join(home, 'identity.key'));
  const peer = await resolvePeer(
    new PeerStore(path.join(home, 'peers.json')),
    'alice',
    `127.0.0.1:${rig.listener.port}`,
  );
  const config = resolveConfig({ transport: 'quic' });
  return () => dialPeer({ identity, peer, config, log: silentLogger });
}

async function namesUnder(root: string): Promise<string[]> {
  return (await snapshot(root))
    .map((i) => i.path)
    .filter((p) => p.split('/').some(isClawpeerInternal) && !p.split('/').includes('.clawpeer'));
}

t.test('bad listen flag values exit 2 with a message naming the flag', async (t) => {
  const { home } = await newHome('flags');
  const cases: [string[], RegExp][] = [
    [['--idle-timeout', 'abc'], /--idle-timeout must be a number of seconds in 0\.1\.\.3600, got "abc"/],
    [['--handshake-timeout', '-1'], /--handshake-timeout must be a number of seconds in 0\.05\.\.600, got "-1"/],
    [['--session-idle-timeout', '1e9'], /--session-idle-timeout must be a number of seconds/],
    [['--max-connections', '0'], /--max-connections must be an integer in 1\.\.65536, got "0"/],
    [['--max-connections-per-peer', '2.5'], /--max-connections-per-peer must be an integer in 1\.\.65536, got "2\.5"/],
  ];
  const results = await Promise.all(
    cases.map(([flags]) => runCli(['--home', home, 'listen', '--port', '0', '--host', '127.0.0.1', ...flags])),
  );
  results.forEach((r, i) => {
    const [flags, pattern] = cases[i] ?? [[], /never/];
    t.equal(r.code, 2, `${flags.join(' ')}: exit 2 (usage)`);
    t.match(r.stderr, pattern, `${flags.join(' ')}: the message names the flag`);
  });
});

// One listener for the sweep, supersede and pull tests: its share is planted before it starts.
const work = await mkdtemp(path.join(tmpdir(), 'clawpeer-limits-'));
const share = path.join(work, 'inbox');
const ro = path.join(work, 'ro');
await mkdir(path.join(share, 'a', 'b'), { recursive: true });
await mkdir(ro);
const dead = await deadPid();
const deadNames = [
  path.join('a', tempNameFor('x.bin', dead)),
  path.join('a', 'b', tempNameFor('y.bin', dead)),
  tempNameFor('top.bin', dead),
];
for (const n of deadNames) await writeFile(path.join(share, n), 'left by a killed receiver');
// Names the sweep must leave alone: a live writer's (this test process), and a young one of the
// old format without a pid (only age can tell; it is seconds old).
const liveNames = [
  path.join('a', tempNameFor('live.bin', process.pid)),
  path.join('a', '.clawpeer-tmp-0a0b0c0d0e0f-young.bin'),
];
for (const n of liveNames) await writeFile(path.join(share, n), 'maybe a live transfer');
const roName = tempNameFor('ro.bin', dead);
await writeFile(path.join(ro, roName), 'read-only share: never written, never swept');
const rig = await startRig('limits', { share, listenArgs: ['--share', `ro=${ro}:ro`] });
t.teardown(() => rig.close());

t.test("listen sweeps dead writers' temp files from writable shares; live and read-only ones stay", async (t) => {
  const swept = await withTimeout(
    (async () => {
      while (!/swept stale temp files share=inbox removed=\d+/.test(rig.listener.stderr())) await sleep(50);
    })(),
    20_000,
    'the sweep log line',
  ).then(
    () => true,
    () => false,
  );
  t.ok(swept, `the listener logs the sweep: ${rig.listener.stderr()}`);
  t.match(rig.listener.stderr(), /swept stale temp files share=inbox removed=3/);
  t.notMatch(rig.listener.stderr(), /swept stale temp files share=ro/, 'read-only shares are not swept');
  const left = await namesUnder(share);
  t.same(
    left.sort(),
    liveNames.map((n) => n.split(path.sep).join('/')).sort(),
    "the dead writer's files are gone, the others stay",
  );
  t.same((await readdir(ro)).sort(), [roName], 'the read-only share is untouched');
});

t.test('a rerun right after the pushing client was SIGKILLed supersedes the stale receiver', async (t) => {
  const src = path.join(rig.work, 'src', 'tree');
  await makeSeededTree(src, 4242, 2 << 20, 12);
  // Slow sends (150 ms per DATA frame), so the kill lands while the listener receives.
  const first = spawnCli(rig.b.home, ['push', src, 'alice'], { CLAWPEER_TEST_DELAY_PER_CHUNK_MS: '150' });
  t.ok(
    await first.waitFor((e) => e['event'] === 'progress' && e['phase'] === 'sending'),
    `the first push started sending; stderr: ${first.stderr()}`,
  );
  await first.kill('SIGKILL');
  const logBefore = rig.listener.stderr().length;

  const rerun = await rig.cli(['push', src, 'alice', '--json'], { timeoutMs: 60_000 });
  t.equal(rerun.code, 0, `the rerun completes; stderr: ${rerun.stderr}`);
  t.ok(Number(doneEvent(rerun.stdout)['files']) > 0, 'the rerun published files');
  const dest = path.join(rig.share, 'tree');
  const got = await snapshot(dest);
  t.same(treeDiff(await snapshot(src), withoutInternals(got)), [], 'byte-identical (modes, mtimes, sizes, SHA-256)');
  t.same(await namesUnder(dest), [], 'no .clawpeer-tmp-* staging files left');

  const log = rig.listener.stderr().slice(logBefore);
  const aborted = log.search(/aborting an earlier push into the same destination/);
  const failed = log.search(/peer session failed .*superseded by a push from node/);
  const received = log.search(/push received/);
  t.ok(aborted >= 0, `the listener logs that it aborted the older push:\n${log}`);
  t.ok(failed >= 0, 'and why the older session ended');
  t.ok(aborted >= 0 && received > aborted && received > failed, 'both before the rerun was received');

  // The older connection is gone at once (not after its 15 s idle timeout): nothing more happens
  // to the tree. A second look after a moment still finds it identical.
  await sleep(1_000);
  t.same(await snapshot(dest), got, 'the tree is unchanged a second later');
});

t.test("a pull sweeps a dead earlier pull's temp files from its destination first", async (t) => {
  await makeSeededTree(path.join(rig.share, 'ptree'), 77, 64 << 10, 2);
  const into = path.join(rig.work, 'pulled');
  await mkdir(path.join(into, 'ptree', 'sub'), { recursive: true });
  await mkdir(path.join(into, 'unrelated'), { recursive: true });
  const stale = [tempNameFor('ptree', dead), path.join('ptree', 'sub', tempNameFor('small-0.bin', dead))];
  for (const n of stale) await writeFile(path.join(into, n), 'left by a killed pull');
  const keep = [
    path.join('ptree', tempNameFor('live.bin', process.pid)),
    path.join('unrelated', tempNameFor('other.bin', dead)),
  ];
  for (const n of keep) await writeFile(path.join(into, n), "not this pull's business");
  const r = await rig.cli(['-v', 'pull', 'alice:inbox/ptree', into, '--json']);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stderr, /removed stale temp files left by an earlier pull .*removed=2/);
  t.same(
    treeDiff(await snapshot(path.join(rig.share, 'ptree')), withoutInternals(await snapshot(path.join(into, 'ptree')))),
    [],
    'pulled byte-identical',
  );
  t.same(
    (await namesUnder(into)).sort(),
    keep.map((n) => n.split(path.sep).join('/')).sort(),
    'only the stale files where this pull lands were removed',
  );
});

t.test('connection caps: over the per-peer and the total cap a clear wire error; others still served', async (t) => {
  // --idle-timeout 3: a newcomer over a cap waits 2 s (not 5) while silent connections are looked for.
  const rig = await startRig('caps', {
    listenArgs: ['--max-connections-per-peer', '3', '--max-connections', '5', '--idle-timeout', '3'],
  });
  t.teardown(() => rig.close());
  const c = await newHome('caps-c');
  await new PeerStore(path.join(rig.a.home, 'peers.json')).add(c.id, 'carol');
  await new PeerStore(path.join(c.home, 'peers.json')).add(rig.a.id, 'alice', `127.0.0.1:${rig.listener.port}`);
  const dialB = await dialer(rig, rig.b.home);
  const dialC = await dialer(rig, c.home);
  const held: PeerSession[] = [];
  t.teardown(() => Promise.all(held.map((s) => s.close().catch(() => undefined))));
  for (let i = 0; i < 3; i++) held.push(await dialB());

  await t.rejects(
    dialB(),
    {
      code: 'PEER_BUSY',
      message: new RegExp(`too many connections from node ${rig.b.id}: 3 open, at most 3 per peer`),
    },
    'the 4th connection of one peer is refused, saying why',
  );
  t.match(
    rig.listener.stderr(),
    new RegExp(`refused connection over the cap id=${rig.b.id}`),
    'the listener logs the refusal',
  );
  const cliRefused = await rig.cli(['ping', 'alice', '--count', '1']);
  t.equal(cliRefused.code, 4, 'the CLI exits 4 (retryable)');
  t.match(cliRefused.stderr, /too many connections from node/, "and prints the listener's reason");

  // Another peer is still served: its first two connections fill the total cap of 5...
  const carolPing = await runCli(['--home', c.home, 'ping', 'alice', '--count', '1']);
  t.equal(carolPing.code, 0, `another peer is served while the first one is at its cap: ${carolPing.stderr}`);
  for (let i = 0; i < 2; i++) held.push(await dialC());
  // ...and the 6th connection overall is refused, although carol is under her own cap.
  await t.rejects(
    dialC(),
    { code: 'PEER_BUSY', message: /too many connections: 5 open, at most 5/ },
    'over the total cap',
  );

  // Closing one frees a slot: the listener serves a ping again.
  await held.shift()?.close();
  const ok = await withTimeout(
    (async () => {
      for (;;) {
        const r = await rig.cli(['ping', 'alice', '--count', '1']);
        if (r.code === 0) return r;
        await sleep(200); // the close may take a moment to be seen
      }
    })(),
    20_000,
    'a ping after a slot was freed',
  ).then(
    () => true,
    () => false,
  );
  t.ok(ok, 'after one connection closed, a ping is answered');
  t.equal(rig.listener.child.exitCode, null, 'the listener never exited');
});

t.test('a killed client leaves no connection that keeps its rerun out; a live one still counts', async (t) => {
  // --idle-timeout 3: keep-alive every second, a connection silent for 2 s is presumed gone, but
  // the idle timeout would take 3 s to end it: a rerun at once met the cap before.
  const rig = await startRig('silent', { listenArgs: ['--max-connections-per-peer', '1', '--idle-timeout', '3'] });
  t.teardown(() => rig.close());
  const holder = spawnCli(rig.b.home, ['ping', 'alice', '--count', '1000', '--interval', '200', '--transport', 'quic']);
  t.teardown(() => holder.kill());
  t.ok(await holder.waitFor((e) => e['event'] === 'pong'), `a ping holds the only slot: ${holder.stderr()}`);
  const ping = (): Promise<{ code: number | null; stderr: string }> =>
    rig.cli(['ping', 'alice', '--count', '1', '--transport', 'quic']);
  const whileLive = await ping();
  t.equal(whileLive.code, 4, 'a live connection is not taken for a dead one: over the cap');
  t.match(whileLive.stderr, /too many connections from node .*: 1 open, at most 1 per peer/);
  await holder.kill('SIGKILL');
  const rerun = await ping();
  t.equal(rerun.code, 0, `right after the kill, the next run is served: ${rerun.stderr}`);
  t.match(rig.listener.stderr(), /closed a connection that heard nothing: its peer is presumed gone/);
});

t.test('an idle session is closed after --session-idle-timeout; a pinging one is not', async (t) => {
  const rig = await startRig('idle', { listenArgs: ['--session-idle-timeout', '1.5'] });
  t.teardown(() => rig.close());
  const dial = await dialer(rig, rig.b.home);

  const busy = await dial();
  let pongs = 0;
  for await (const p of pingPeer(busy, { count: 8, intervalMs: 400, timeoutMs: 10_000 })) if (p.rttMs >= 0) pongs++;
  t.equal(pongs, 8, 'a session that sends a request every 0.4 s stays open for 3 s (more than the idle timeout)');
  await busy.close();

  const idle = await dial();
  const answer = await withTimeout(idle.control.receive(), 20_000, 'the listener closing the idle session').then(
    (m) => m,
    (e: unknown) => e,
  );
  t.match(String(answer), /session idle for 1500 ms/, `the listener says why it closes (${String(answer)})`);
  t.ok(
    await withTimeout(idle.connection.closed, 15_000, 'close').then(
      () => true,
      () => false,
    ),
    'and closes the connection',
  );
  t.match(
    rig.listener.stderr(),
    new RegExp(`closing idle session peer=${rig.b.id} idleMs=1500`),
    'the listener logs it',
  );
  await idle.connection.close().catch(() => undefined);
  const ping = await rig.cli(['ping', 'alice', '--count', '1']);
  t.equal(ping.code, 0, 'the listener still serves');
});
