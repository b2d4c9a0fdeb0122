// End to end on 127.0.0.1: a rendezvous, a listener with its traversal socket, and a dialer that
// finds it through the rendezvous alone: by lookup (announced listen address), punched through
// both traversal sockets, and relayed. Each path: the Welcome comes promptly (a forwarder that
// carried only one direction at first stalled it for 10 s once), ping and push work, and the
// listener reports the path of the forwarded connection.
import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseHostPort } from '../../src/home/address.js';
import { push } from '../../src/push-pull/transfer-client.js';
import { pingPeer } from '../../src/session/ping.js';
import { silentLogger } from '../../src/logger.js';
import { dialThrough, startReachLab, type Dialled, type ReachLab } from './reach-kit.js';

/** Well above a loopback handshake (~50 ms), well below the 10 s stall this guards against. */
const PROMPT_WELCOME_MS = 3_000;

const lab = await startReachLab();
t.teardown(() => lab.close());
const work = await mkdtemp(path.join(tmpdir(), 'clawpeer-reach-src-'));
t.teardown(() => rm(work, { recursive: true, force: true }));

async function exercise(t: Test, d: Dialled, name: string): Promise<void> {
  t.ok(d.welcomeMs < PROMPT_WELCOME_MS, `Welcome after ${d.welcomeMs} ms, promptly`);
  const pings = [];
  for await (const p of pingPeer(d.session, { count: 3, intervalMs: 0, timeoutMs: 5_000 })) pings.push(p);
  t.equal(pings.length, 3, 'three pings answered');
  const bytes = randomBytes(2 * 1024 * 1024 + 17);
  const src = path.join(work, `${name}.bin`);
  await writeFile(src, bytes);
  const ac = new AbortController();
  await push({
    session: d.session,
    share: 'inbox',
    remotePath: '',
    localPath: src,
    force: true,
    streams: 2,
    window: 16,
    idleTimeoutMs: 10_000,
    log: silentLogger,
    signal: ac.signal,
  });
  t.ok(
    Buffer.compare(await readFile(path.join(lab.inbox, `${name}.bin`)), bytes) === 0,
    'the pushed file landed byte for byte',
  );
}

/** What the listener reports (ServerOptions.pathOf through the reach); no path: an address dialled directly. */
function listenerPaths(l: ReachLab): (string | undefined)[] {
  return l.listener.connectedPeers().map((p) => {
    if ((p.path ?? 'direct') !== (l.reach.pathOf(parseHostPort(p.addr)) ?? 'direct'))
      throw new Error('connectedPeers and pathOf disagree');
    return p.path ?? 'direct';
  });
}

t.test('lookup: the announced listen address, dialled directly', async (t) => {
  const d = await dialThrough(lab, 'lookup');
  t.teardown(() => d.close());
  t.equal(d.candidate.path(), 'direct');
  t.equal(d.candidate.priority, 1);
  t.same(d.candidate.address, { host: '127.0.0.1', port: lab.listener.port }, 'the listener itself');
  await exercise(t, d, 'lookup');
  t.same(listenerPaths(lab), ['direct'], 'the listener sees a direct connection');
});

t.test('traversal, punched: through both traversal sockets', async (t) => {
  const d = await dialThrough(lab, 'traversal', { disable: ['relayed'] });
  t.teardown(() => d.close());
  t.equal(d.candidate.path(), 'punched');
  t.equal(d.candidate.transport, 'quic', 'a forwarder carries QUIC only');
  t.not(d.candidate.address.port, lab.listener.port, 'through a forwarder, not the listener itself');
  await exercise(t, d, 'punched');
  t.same(listenerPaths(lab), ['punched'], 'the listener reports the punched path (pathOf)');
});

t.test('traversal, relayed: through the rendezvous relay', async (t) => {
  const before = lab.rendezvous.counters().relayedBytes;
  const d = await dialThrough(lab, 'traversal', { disable: ['punched'] });
  t.teardown(() => d.close());
  t.equal(d.candidate.path(), 'relayed');
  await exercise(t, d, 'relayed');
  t.same(listenerPaths(lab), ['relayed'], 'the listener reports the relayed path');
  t.ok(lab.rendezvous.counters().relayedBytes - before > 2 * 1024 * 1024, 'the bytes went through the relay');
});

t.test('a second dial reuses nothing stale: punched twice in a row, each prompt', async (t) => {
  for (let i = 0; i < 2; i++) {
    const d = await dialThrough(lab, 'traversal', { disable: ['relayed'] });
    t.ok(d.welcomeMs < PROMPT_WELCOME_MS, `dial ${i + 1}: Welcome after ${d.welcomeMs} ms`);
    await d.close();
  }
});

t.test('an unknown node: the sources find nothing', async (t) => {
  const { generateIdentity } = await import('../../src/crypto/identity.js');
  const stranger = generateIdentity();
  const { rendezvousSourcesFor } = await import('../../src/reach/rendezvous-paths.js');
  const s = rendezvousSourcesFor({ rendezvous: lab.rendezvous.address, identity: lab.dialerId, log: silentLogger });
  const peer = { id: stranger.nodeId, publicKey: stranger.publicKey, name: 'stranger' };
  const found = [];
  const ac = new AbortController();
  for await (const c of s.lookup.find(peer, ac.signal)) found.push(c);
  for await (const c of s.traversal.find(peer, ac.signal)) found.push(c);
  s.release();
  t.equal(found.length, 0);
});

t.test('after the dial closes and the sources are released, no socket of theirs is left', async (t) => {
  const udp = (): number => process.getActiveResourcesInfo().filter((r) => r === 'UDPWrap').length;
  await new Promise((r) => setTimeout(r, 300)); // sockets of earlier tests finish closing
  const before = udp();
  const d = await dialThrough(lab, 'traversal', { disable: ['relayed'] });
  t.equal(
    udp(),
    before + 3,
    "while connected: the dialer's traversal socket and forwarder, the listener's forwarder for it",
  );
  await d.close();
  for (let i = 0; i < 50 && udp() > before + 1; i++) await new Promise((r) => setTimeout(r, 20));
  t.equal(
    udp(),
    before + 1,
    "the dialer's are closed (nothing keeps its process alive); the listener's forwarder waits out its idle time",
  );
});
