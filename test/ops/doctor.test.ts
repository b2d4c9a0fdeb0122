// The doctor's checks one by one, with injected /proc files, clocks, sync probes and listener
// probes; ports are real sockets on 127.0.0.1.
import t from 'tap';
import { createSocket, type Socket } from 'node:dgram';
import { chmod, mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MIN_UDP_BUFFER_BYTES } from '../../src/transport/udp-buffers.js';
import {
  CLOCK_BEFORE_BUILD_TOLERANCE_MS,
  checkBlake3,
  checkZstd,
  checkClock,
  checkIdentity,
  checkPeer,
  checkPort,
  checkQuic,
  checkUdpBuffers,
  parseChronycTracking,
  runDoctor,
  summarize,
  tryBind,
  type CheckResult,
} from '../../src/ops/doctor.js';
import { createIdentity } from '../../src/home/identity-store.js';
import { resolveHome } from '../../src/home/home.js';
import { PeerStore } from '../../src/home/peer-store.js';
import { silentLogger } from '../../src/logger.js';
import { generateIdentity } from '../../src/crypto/identity.js';

const LOCAL = ['127.0.0.1'];

async function fakeProc(values: {
  rmem?: string;
  wmem?: string;
  rmemDefault?: string;
  wmemDefault?: string;
}): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'clawpeer-proc-'));
  await mkdir(join(dir, 'sys', 'net', 'core'), { recursive: true });
  if (values.rmem !== undefined) await writeFile(join(dir, 'sys', 'net', 'core', 'rmem_max'), values.rmem);
  if (values.wmem !== undefined) await writeFile(join(dir, 'sys', 'net', 'core', 'wmem_max'), values.wmem);
  if (values.rmemDefault !== undefined)
    await writeFile(join(dir, 'sys', 'net', 'core', 'rmem_default'), values.rmemDefault);
  if (values.wmemDefault !== undefined)
    await writeFile(join(dir, 'sys', 'net', 'core', 'wmem_default'), values.wmemDefault);
  return dir;
}

function holdUdp(): Promise<{ socket: Socket; port: number }> {
  return new Promise((resolve) => {
    const socket = createSocket('udp4');
    socket.bind({ address: '127.0.0.1', port: 0 }, () => resolve({ socket, port: socket.address().port }));
  });
}

function holdTcp(): Promise<{ server: Server; port: number }> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen({ host: '127.0.0.1', port: 0 }, () => {
      const a = server.address();
      resolve({ server, port: typeof a === 'object' && a !== null ? a.port : 0 });
    });
  });
}

/** A port free on 127.0.0.1 for both UDP and TCP at the moment of asking. */
async function freePort(): Promise<number> {
  for (;;) {
    const { server, port } = await holdTcp();
    await new Promise<void>((r) => server.close(() => r()));
    if ((await tryBind('udp', '127.0.0.1', port)) === null) return port;
  }
}

t.test('udp buffers: 4 MiB or more is ok', async (t) => {
  const procDir = await fakeProc({ rmem: `${MIN_UDP_BUFFER_BYTES}\n`, wmem: '7500000\n' });
  const r = await checkUdpBuffers({ procDir, platform: 'linux' });
  t.equal(r.status, 'ok');
  t.match(r.detail, /rmem_max 4194304 \(4\.0 MiB\)/);
  t.equal(r.fix, undefined);
});

t.test('udp buffers: a distribution default (208 KiB) warns with the sysctl fix', async (t) => {
  const procDir = await fakeProc({ rmem: '212992\n', wmem: `${MIN_UDP_BUFFER_BYTES}\n` });
  const r = await checkUdpBuffers({ procDir, platform: 'linux' });
  t.equal(r.status, 'warn');
  t.match(r.detail, /net\.core\.rmem_max 212992 \(208 KiB\)/);
  t.match(r.fix, /sysctl -w net\.core\.rmem_max=7500000 net\.core\.wmem_max=7500000/);
  t.match(r.fix, /\/etc\/sysctl\.d\//, 'says how to keep it across reboots');
});

t.test('udp buffers: big maxima pass whatever the defaults (clawpeer sizes its listener socket itself)', async (t) => {
  const procDir = await fakeProc({
    rmem: '7500000\n',
    wmem: '7500000\n',
    rmemDefault: '212992\n',
    wmemDefault: '212992\n',
  });
  const r = await checkUdpBuffers({ procDir, platform: 'linux' });
  t.equal(r.status, 'ok');
  t.match(r.detail, /net\.core\.rmem_max 7500000/);
});

t.test('udp buffers: unreadable or garbage /proc warns, other platforms are not checked', async (t) => {
  const missing = await checkUdpBuffers({ procDir: await fakeProc({ rmem: '8000000' }), platform: 'linux' });
  t.equal(missing.status, 'warn');
  t.match(missing.detail, /cannot read .*wmem_max/);
  const garbage = await checkUdpBuffers({
    procDir: await fakeProc({ rmem: 'lots', wmem: '8000000' }),
    platform: 'linux',
  });
  t.equal(garbage.status, 'warn');
  t.match(garbage.detail, /not a byte count/);
  const mac = await checkUdpBuffers({ procDir: '/nonexistent', platform: 'darwin' });
  t.equal(mac.status, 'ok');
  t.match(mac.detail, /not checked on darwin/);
});

t.test('port: free for UDP and TCP', async (t) => {
  const port = await freePort();
  for (const protocol of ['udp', 'tcp'] as const) {
    const r = await checkPort(protocol, { port, hosts: LOCAL });
    t.equal(r.status, 'ok', r.detail);
    t.equal(r.name, `port-${protocol}`);
  }
  t.match(await checkPort('udp', { port: 0, hosts: LOCAL }), { status: 'ok', detail: /picks a free/ });
});

t.test('port: held by another program fails and names the tool to find it', async (t) => {
  const udp = await holdUdp();
  const tcp = await holdTcp();
  t.teardown(() => {
    udp.socket.close();
    tcp.server.close();
  });
  const u = await checkPort('udp', { port: udp.port, hosts: LOCAL, probe: async () => undefined });
  t.equal(u.status, 'fail');
  t.match(u.detail, new RegExp(`UDP port ${udp.port} is in use on 127\\.0\\.0\\.1 by another program`));
  t.match(u.fix, new RegExp(`ss -lunp 'sport = :${udp.port}'`));
  const c = await checkPort('tcp', { port: tcp.port, hosts: LOCAL });
  t.equal(c.status, 'fail');
  t.match(c.fix, /ss -ltnp/);
});

t.test('port: held by our own listener is fine; by another clawpeer node is not', async (t) => {
  const udp = await holdUdp();
  t.teardown(() => udp.socket.close());
  const asked: string[] = [];
  const own = await checkPort('udp', {
    port: udp.port,
    hosts: LOCAL,
    ownId: 'OWN',
    probe: async (protocol, host, port) => {
      asked.push(`${protocol} ${host}:${port}`);
      return 'OWN';
    },
  });
  t.equal(own.status, 'ok');
  t.match(own.detail, /this node's own listener \(OWN\)/);
  t.same(asked, [`udp 127.0.0.1:${udp.port}`], 'the probe dials the busy port');
  const other = await checkPort('udp', { port: udp.port, hosts: LOCAL, ownId: 'OWN', probe: async () => 'OTHER' });
  t.equal(other.status, 'fail');
  t.match(other.detail, /another clawpeer node, OTHER/);
  const expected = await checkPort('udp', {
    port: udp.port,
    hosts: LOCAL,
    ownId: 'OWN',
    expectListener: true,
    probe: async () => 'OWN',
  });
  t.equal(expected.status, 'ok', '--expect-listener is satisfied by our own listener');
});

t.test('port: --expect-listener fails on a free port', async (t) => {
  const port = await freePort();
  const r = await checkPort('tcp', { port, hosts: LOCAL, expectListener: true });
  t.equal(r.status, 'fail');
  t.match(r.detail, /no listener is running/);
  t.match(r.fix, new RegExp(`clawpeer listen --port ${port}`));
});

t.test('port: the real listener probe tells a clawpeer node from another program', async (t) => {
  const { makeListenerProbe } = await import('../../src/ops/doctor.js');
  const { backendByName } = await import('../../src/transport/backends.js');
  const identity = generateIdentity();
  const backend = await backendByName('tcp');
  const listener = await backend.listen({ host: '127.0.0.1', port: 0, identity });
  t.teardown(() => listener.close());
  void listener.accept().then((c) => c?.close());
  const probe = makeListenerProbe(generateIdentity(), silentLogger);
  t.equal(
    await probe('tcp', '127.0.0.1', listener.address.port),
    identity.nodeId,
    'a TLS handshake proves who holds the port',
  );
  const plain = await holdTcp();
  t.teardown(() => plain.server.close());
  plain.server.on('connection', (s) => s.destroy());
  t.equal(await probe('tcp', '127.0.0.1', plain.port), undefined, 'anything else is not a clawpeer node');
});

t.test('identity: missing, group-readable, corrupt and good key files', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'clawpeer-doctor-id-'));
  const file = join(dir, 'identity.key');
  const missing = await checkIdentity(file);
  t.equal(missing.result.status, 'fail');
  t.match(missing.result.fix, /clawpeer init/);
  t.equal(missing.identity, undefined);

  const created = await createIdentity(file);
  const good = await checkIdentity(file);
  t.equal(good.result.status, 'ok');
  t.match(good.result.detail, new RegExp(`mode 0600, node id ${created.nodeId}`));
  t.equal(good.identity?.nodeId, created.nodeId);

  await chmod(file, 0o644);
  const open = await checkIdentity(file);
  t.equal(open.result.status, 'fail');
  t.match(open.result.detail, /mode 644/);
  t.match(open.result.fix, new RegExp(`chmod 600 ${file.replace(/[.]/g, '\\.')}`));
  t.equal(open.identity, undefined, 'an exposed key is not used for the other checks');

  await writeFile(file, 'not a key', { mode: 0o600 });
  await chmod(file, 0o600);
  const corrupt = await checkIdentity(file);
  t.equal(corrupt.result.status, 'fail');
  t.match(corrupt.result.fix, /backup|init --force/);
});

t.test('quic and blake3: a missing native binding warns with the fix', async (t) => {
  t.match(await checkQuic(async () => undefined), { name: 'quic', status: 'ok' });
  const noQuic = await checkQuic(async () => {
    throw new Error('GLIBC_2.34 not found');
  });
  t.equal(noQuic.status, 'warn', 'TCP fallback still works: a warning, not a failure');
  t.match(noQuic.detail, /GLIBC_2\.34 not found.*falls back to TLS over TCP/);
  t.match(noQuic.fix, /glibc >= 2\.34/);
  t.match(await checkBlake3(async () => 'native'), { status: 'ok' });
  const wasm = await checkBlake3(async () => 'wasm');
  t.equal(wasm.status, 'warn');
  t.match(wasm.fix, /@napi-rs\/blake-hash/);
  t.match(
    await checkBlake3(async () => {
      throw new Error('nothing');
    }),
    { status: 'fail' },
  );
  t.match(await checkBlake3(), { status: /ok|warn/ }, 'the real backend loads on this machine');
  t.match(await checkZstd(async () => true), { name: 'zstd', status: 'ok' });
  const noZstd = await checkZstd(async () => false);
  t.equal(noZstd.status, 'warn', 'compression is optional: a warning, not a failure');
  t.match(noZstd.detail, /chunks travel uncompressed/);
  t.match(noZstd.fix, /@mongodb-js\/zstd/);
});

t.test('clock: before the build fails; sync status from timedatectl or chronyc', async (t) => {
  const build = Date.UTC(2026, 5, 1);
  const never = async (): Promise<never> => {
    throw new Error('sync probe must not run when the clock is plainly wrong');
  };
  const wrong = await checkClock({
    nowMs: build - CLOCK_BEFORE_BUILD_TOLERANCE_MS - 1,
    buildTimeMs: build,
    sync: never,
  });
  t.equal(wrong.status, 'fail');
  t.match(wrong.detail, /before this build \(2026-06-01/);
  t.match(wrong.fix, /timedatectl set-ntp true/);
  const slightlyAhead = await checkClock({
    nowMs: build - 60_000,
    buildTimeMs: build,
    sync: async () => ({ state: 'synced', source: 'timedatectl' }),
  });
  t.equal(slightlyAhead.status, 'ok', 'a build machine a minute ahead is not an error');
  t.match(slightlyAhead.detail, /synchronised \(timedatectl\)/);
  const unsynced = await checkClock({
    nowMs: build + 1,
    buildTimeMs: build,
    sync: async () => ({ state: 'unsynced', source: 'chronyc' }),
  });
  t.equal(unsynced.status, 'warn');
  t.match(unsynced.fix, /chronyc/);
  const unknown = await checkClock({ nowMs: build + 1, buildTimeMs: build, sync: async () => ({ state: 'unknown' }) });
  t.equal(unknown.status, 'ok');
  t.match(unknown.detail, /sync status unknown/);
});

t.test('chronyc tracking output', async (t) => {
  t.equal(parseChronycTracking('Reference ID    : A9FEA97B (169.254.169.123)\nLeap status     : Normal\n'), 'synced');
  t.equal(parseChronycTracking('Reference ID    : 00000000 ()\nLeap status     : Not synchronised\n'), 'unsynced');
  t.equal(parseChronycTracking('506 Cannot talk to daemon\n'), 'unknown');
});

t.test('peer: without an address it is not dialled; a closed port is unreachable (a warning)', async (t) => {
  const identity = generateIdentity();
  const other = generateIdentity();
  const noAddr = await checkPeer(
    { id: other.nodeId, name: 'nomad', addedAt: '2026-01-01T00:00:00Z' },
    { identity, log: silentLogger },
  );
  t.equal(noAddr.status, 'ok');
  t.equal(noAddr.name, 'peer:nomad');
  t.match(noAddr.detail, /not dialled/);
  const port = await freePort();
  const down = await checkPeer(
    { id: other.nodeId, name: 'down', addr: `127.0.0.1:${port}`, addedAt: '2026-01-01T00:00:00Z' },
    { identity, log: silentLogger, timeoutMs: 300 },
  );
  t.equal(down.status, 'warn', 'an offline peer is worth a warning, not a failed machine');
  t.match(down.detail, new RegExp(`unreachable at 127\\.0\\.0\\.1:${port}`));
  t.match(down.fix, /is clawpeer listen running on down\?/);
});

t.test('runDoctor: every check in order, peers from the pair list', async (t) => {
  const home = resolveHome(await mkdtemp(join(tmpdir(), 'clawpeer-doctor-home-')));
  await createIdentity(home.identityKeyFile);
  await new PeerStore(home.peersFile).add(generateIdentity().nodeId, 'nomad');
  const results: CheckResult[] = [];
  for await (const r of runDoctor({
    home,
    port: await freePort(),
    portHosts: LOCAL,
    log: silentLogger,
    procDir: await fakeProc({ rmem: '212992', wmem: '212992' }),
    nowMs: Date.UTC(2026, 6, 1),
    buildTimeMs: Date.UTC(2026, 5, 1),
    clockSync: async () => ({ state: 'synced', source: 'test' }),
  })) {
    results.push(r);
  }
  t.same(
    results.map((r) => r.name),
    ['identity', 'udp-buffers', 'port-udp', 'port-tcp', 'quic', 'blake3', 'zstd', 'clock', 'rendezvous', 'peer:nomad'],
  );
  t.equal(results[1]?.status, process.platform === 'linux' ? 'warn' : 'ok', 'the injected /proc is what is read');
  t.equal(
    summarize(results).fail,
    0,
    `nothing fails on a healthy home: ${JSON.stringify(results.filter((r) => r.status === 'fail'))}`,
  );
  t.match(results.at(-1), { status: 'ok', detail: /not dialled/ }, 'a peer without an address is listed, not dialled');

  const noPeers: string[] = [];
  for await (const r of runDoctor({
    home: resolveHome(await mkdtemp(join(tmpdir(), 'clawpeer-doctor-empty-'))),
    port: 0,
    log: silentLogger,
    peers: false,
    clockSync: async () => ({ state: 'unknown' }),
  })) {
    noPeers.push(`${r.name}=${r.status}`);
  }
  t.ok(noPeers.includes('identity=fail'), 'an empty home fails the identity check');
  t.notOk(
    noPeers.some((n) => n.startsWith('peer')),
    'peers: false skips dialling',
  );
});

t.test('summarize counts statuses', async (t) => {
  const r = (status: CheckResult['status']): CheckResult => ({ name: 'x', status, detail: '' });
  t.same(summarize([r('ok'), r('warn'), r('fail'), r('fail')]), { ok: 1, warn: 1, fail: 2 });
  t.same(summarize([]), { ok: 0, warn: 0, fail: 0 });
});

t.test(
  'rendezvous: none named is fine; one that answers names the NAT kind; a dead one fails with the fix',
  async (t) => {
    const { checkRendezvous } = await import('../../src/ops/rendezvous-check.js');
    t.match(await checkRendezvous({ rendezvous: undefined, log: silentLogger }), {
      name: 'rendezvous',
      status: 'ok',
      detail: /no rendezvous named/,
    });
    const rv = { host: '203.0.113.1', port: 7800 };
    const seen = { host: '198.51.100.4', port: 40000 };
    const probe = (kind: 'none' | 'endpoint-independent' | 'symmetric') => async () => ({
      kind,
      reflexive: [seen, kind === 'symmetric' ? { ...seen, port: 40001 } : seen] as const,
      local: { host: '0.0.0.0', port: 5000 },
      rttMs: 12,
    });
    t.match(await checkRendezvous({ rendezvous: rv, log: silentLogger, probe: probe('endpoint-independent') }), {
      status: 'ok',
      detail:
        /203\.0\.113\.1:7800 answers in 12 ms and sees this node as 198\.51\.100\.4:40000; NAT with endpoint-independent mapping/,
    });
    t.match(await checkRendezvous({ rendezvous: rv, log: silentLogger, probe: probe('symmetric') }), {
      status: 'warn',
      detail: /symmetric NAT/,
      fix: /UPnP/,
    });
    const { startRendezvousServer } = await import('../../src/reach/rendezvous-server.js');
    const server = await startRendezvousServer({ listen: { host: '127.0.0.1', port: 0 }, log: silentLogger });
    const dead = server.address;
    await server.close();
    t.match(await checkRendezvous({ rendezvous: dead, log: silentLogger }), {
      status: 'fail',
      detail: /does not answer/,
      fix: /clawpeer rendezvous/,
    });
  },
);
