// A rendezvous the dialer cannot trust: a lookup answered with a forged, expired or other
// node's announcement yields no candidate (the dialer verifies what it gets); a good one does.
import t from 'tap';
import dgram from 'node:dgram';
import { once } from 'node:events';
import { generateIdentity } from '../../src/crypto/identity.js';
import { silentLogger } from '../../src/logger.js';
import { encodeAnnouncement } from '../../src/protocol/announcement.js';
import { decodeTraversal, encodeTraversal } from '../../src/protocol/rendezvous-wire.js';
import { rendezvousSourcesFor } from '../../src/reach/rendezvous-paths.js';

const target = generateIdentity();
const other = generateIdentity();
const dialer = generateIdentity();
const peer = { id: target.nodeId, publicKey: target.publicKey, name: 'target' };
const fields = (issuedAtMs: number) => ({
  seq: 1,
  issuedAtMs,
  ttlMs: 90_000,
  addresses: [{ host: '127.0.0.1', port: 7700, role: 'listen' as const, source: 'local' as const }],
});

/** A fake rendezvous answering every lookup with `answer`. */
async function fakeRendezvous(answer: () => Uint8Array): Promise<dgram.Socket> {
  const s = dgram.createSocket('udp4');
  s.on('message', (msg, r) => {
    const m = decodeTraversal(msg);
    if (m.type === 'lookup')
      s.send(
        encodeTraversal({ type: 'lookupReply', publicKey: m.publicKey, announcement: answer() }),
        r.port,
        r.address,
      );
  });
  s.bind(0, '127.0.0.1');
  await once(s, 'listening');
  return s;
}

async function found(answer: () => Uint8Array): Promise<string[]> {
  const server = await fakeRendezvous(answer);
  try {
    const sources = rendezvousSourcesFor({
      rendezvous: { host: '127.0.0.1', port: server.address().port },
      identity: dialer,
      log: silentLogger,
    });
    const out: string[] = [];
    for await (const c of sources.lookup.find(peer, new AbortController().signal)) out.push(c.describe);
    sources.release();
    return out;
  } finally {
    server.close();
  }
}

t.test('the genuine announcement yields its listen address', async (t) => {
  t.same(await found(() => encodeAnnouncement(target, fields(Date.now()))), ['127.0.0.1:7700']);
});

t.test('forged: one byte changed, the signature fails', async (t) => {
  t.same(
    await found(() => {
      const b = encodeAnnouncement(target, fields(Date.now()));
      b[b.length - 70] = (b[b.length - 70] ?? 0) ^ 1;
      return b;
    }),
    [],
  );
});

t.test('expired', async (t) => {
  t.same(await found(() => encodeAnnouncement(target, fields(Date.now() - 100_000))), []);
});

t.test('validly signed, but by another node', async (t) => {
  t.same(await found(() => encodeAnnouncement(other, fields(Date.now()))), []);
});

t.test('candidates: listen addresses only; mapped ones say so; loopback only with a loopback rendezvous', async (t) => {
  const { lookupCandidates } = await import('../../src/reach/rendezvous-paths.js');
  const addresses = [
    { host: '192.0.2.7', port: 7700, role: 'listen' as const, source: 'local' as const },
    { host: '203.0.113.9', port: 41000, role: 'listen' as const, source: 'mapped' as const },
    { host: '127.0.0.1', port: 7700, role: 'listen' as const, source: 'local' as const },
    { host: '198.51.100.3', port: 5000, role: 'mux' as const, source: 'reflexive' as const },
  ];
  const remote = lookupCandidates(addresses, { host: '198.51.100.1', port: 7800 });
  t.same(
    remote.map((c) => [c.describe, c.path(), c.priority]),
    [
      ['192.0.2.7:7700', 'direct', 1],
      ['mapped 203.0.113.9:41000', 'mapped', 1],
    ],
  );
  t.same(
    lookupCandidates(addresses, { host: '127.0.0.1', port: 7800 }).map((c) => c.describe),
    ['192.0.2.7:7700', 'mapped 203.0.113.9:41000', '127.0.0.1:7700'],
  );
  t.same(
    lookupCandidates(addresses, { host: '198.51.100.1', port: 7800 }, new Set(['mapped'])).map((c) => c.describe),
    ['192.0.2.7:7700'],
  );
});
