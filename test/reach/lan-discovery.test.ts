// LAN discovery on loopback only (127.255.255.255): a responder answers a query for its key,
// a dialer keeps only answers signed by the key it asked for, unexpired, newest seq first.
import t from 'tap';
import { createSocket } from 'node:dgram';
import { generateIdentity } from '../../src/crypto/identity.js';
import { encodeAnnouncement } from '../../src/protocol/announcement.js';
import { decodeLanQuery, encodeLanQuery, isLanQuery } from '../../src/protocol/lan-query.js';
import {
  findByNameplate,
  lanSource,
  listenAddressesOf,
  queryLan,
  startLanResponder,
} from '../../src/reach/lan-discovery.js';
import { decodeAnnouncement } from '../../src/protocol/announcement.js';
import type { DialCandidate } from '../../src/reach/paths.js';
import { silentLogger } from '../../src/logger.js';

// A port of its own per run: parallel test files and other nodes on this machine stay apart.
const port = (): number => 40_000 + Math.floor(Math.random() * 20_000);

async function collect(it: AsyncIterable<DialCandidate>): Promise<DialCandidate[]> {
  const out: DialCandidate[] = [];
  for await (const c of it) out.push(c);
  return out;
}

t.test('the query wire round-trips and rejects junk', async (t) => {
  const key = generateIdentity().publicKey;
  const q = decodeLanQuery(encodeLanQuery({ kind: 'node', publicKey: key }));
  t.same(q.kind === 'node' ? [...q.publicKey] : [], [...key]);
  t.same(decodeLanQuery(encodeLanQuery({ kind: 'nameplate', nameplate: 4242 })), {
    kind: 'nameplate',
    nameplate: 4242,
  });
  t.throws(() => decodeLanQuery(Uint8Array.from([0x43, 0x50, 0x51, 0x31, 9])), { code: 'PROTOCOL' });
  t.notOk(isLanQuery(Uint8Array.from([1, 2, 3, 4, 5])));
});

t.test('a listener on loopback is found within the timeout, at its bound address', async (t) => {
  const p = port();
  const bob = generateIdentity();
  const responder = await startLanResponder({
    identity: bob,
    bound: [{ host: '127.0.0.1', port: 7123 }],
    port: p,
    log: silentLogger,
  });
  t.teardown(() => responder.close());
  const started = Date.now();
  const ac = new AbortController();
  const found: DialCandidate[] = [];
  for await (const c of lanSource({ port: p, timeoutMs: 1000, loopbackOnly: true }).find(
    { id: bob.nodeId, publicKey: bob.publicKey, name: 'bob' },
    ac.signal,
  )) {
    found.push(c);
    ac.abort();
  }
  t.ok(Date.now() - started < 1000, `found in ${Date.now() - started} ms`);
  t.same(
    found.map((c) => [c.address, c.path(), c.priority]),
    [[{ host: '127.0.0.1', port: 7123 }, 'lan', 0]],
  );
});

t.test('nothing answering: the source ends with an error naming the port and the timeout', async (t) => {
  const bob = generateIdentity();
  const p = port();
  await t.rejects(
    collect(
      lanSource({ port: p, timeoutMs: 200, loopbackOnly: true }).find(
        { id: bob.nodeId, publicKey: bob.publicKey, name: 'bob' },
        new AbortController().signal,
      ),
    ),
    {
      code: 'UNREACHABLE',
      message: new RegExp(`no answer on the LAN \\(UDP port ${p}, loopback\\) within 200 ms`),
    },
  );
});

t.test('another node (not the one asked for) is not answered for', async (t) => {
  const p = port();
  const bob = generateIdentity();
  const carol = generateIdentity();
  const responder = await startLanResponder({
    identity: carol,
    bound: [{ host: '127.0.0.1', port: 7124 }],
    port: p,
    log: silentLogger,
  });
  t.teardown(() => responder.close());
  await t.rejects(
    collect(
      lanSource({ port: p, timeoutMs: 300, loopbackOnly: true }).find(
        { id: bob.nodeId, publicKey: bob.publicKey, name: 'bob' },
        new AbortController().signal,
      ),
    ),
    { code: 'UNREACHABLE' },
  );
});

t.test('forged, expired and unasked-for answers are dropped; the newest seq wins', async (t) => {
  const p = port();
  const bob = generateIdentity();
  const mallory = generateIdentity();
  // A hostile responder: answers every query with a mix of bad and good announcements.
  const hostile = createSocket({ type: 'udp4', reuseAddr: true });
  await new Promise<void>((r) => hostile.bind(p, '127.255.255.255', () => r()));
  t.teardown(() => hostile.close());
  const now = Date.now();
  const good = (seq: number, portNo: number): Uint8Array =>
    encodeAnnouncement(bob, {
      seq,
      issuedAtMs: now,
      ttlMs: 60_000,
      addresses: [{ host: '127.0.0.1', port: portNo, role: 'listen', source: 'local' }],
    });
  const forged = good(50, 6666);
  forged[forged.length - 1]! ^= 1; // signature no longer matches
  const expired = encodeAnnouncement(bob, {
    seq: 60,
    issuedAtMs: now - 120_000,
    ttlMs: 60_000,
    addresses: [{ host: '127.0.0.1', port: 6667, role: 'listen', source: 'local' }],
  });
  const unasked = encodeAnnouncement(mallory, {
    seq: 70,
    issuedAtMs: now,
    ttlMs: 60_000,
    addresses: [{ host: '127.0.0.1', port: 6668, role: 'listen', source: 'local' }],
  });
  const sender = createSocket('udp4');
  await new Promise<void>((r) => sender.bind(0, '127.0.0.1', () => r()));
  t.teardown(() => sender.close());
  let answered = false;
  hostile.on('message', (msg, rinfo) => {
    if (!isLanQuery(msg) || answered) return;
    answered = true;
    for (const d of [forged, expired, unasked, good(10, 7001), good(5, 7002), good(20, 7003)])
      sender.send(d, rinfo.port, rinfo.address);
  });
  const answers = [];
  for await (const a of queryLan({ kind: 'node', publicKey: bob.publicKey }, (x) => x.nodeId === bob.nodeId, {
    port: p,
    timeoutMs: 400,
    loopbackOnly: true,
  }))
    answers.push(a);
  t.same(
    answers.map((a) => [a.announcement.seq, a.announcement.addresses[0]?.port]),
    [
      [10, 7001],
      [20, 7003],
    ],
    'forged, expired, another node and an older seq are skipped',
  );
});

t.test('a nameplate is answered only while it is open', async (t) => {
  const p = port();
  const alice = generateIdentity();
  let open: number[] = [1234];
  const responder = await startLanResponder({
    identity: alice,
    bound: [{ host: '127.0.0.1', port: 7125 }],
    port: p,
    openNameplates: () => open,
    log: silentLogger,
  });
  t.teardown(() => responder.close());
  const holders = await findByNameplate(1234, { port: p, timeoutMs: 1000, loopbackOnly: true });
  t.same(
    holders.map((h) => [h.nodeId, h.addresses]),
    [[alice.nodeId, [{ host: '127.0.0.1', port: 7125 }]]],
  );
  open = [];
  t.same(await findByNameplate(1234, { port: p, timeoutMs: 300, loopbackOnly: true }), [], 'closed: no answer');
});

t.test(
  'an answer from another machine: its loopback addresses are not dialled, its sending address first',
  async (t) => {
    const bob = generateIdentity();
    const now = Date.now();
    const announcement = decodeAnnouncement(
      encodeAnnouncement(bob, {
        seq: 1,
        issuedAtMs: now,
        ttlMs: 60_000,
        addresses: [
          { host: '127.0.0.1', port: 7700, role: 'listen', source: 'local' },
          { host: '198.18.5.1', port: 7700, role: 'listen', source: 'local' },
          { host: '198.18.0.7', port: 7700, role: 'listen', source: 'local' },
          { host: '198.18.0.7', port: 40000, role: 'mux', source: 'local' },
        ],
      }),
      now,
    );
    t.same(listenAddressesOf({ announcement, from: { host: '198.18.0.7', port: 5000 } }), [
      { host: '198.18.0.7', port: 7700 },
      { host: '198.18.5.1', port: 7700 },
    ]);
    t.same(
      listenAddressesOf({ announcement, from: { host: '127.0.0.1', port: 5000 } }).map((a) => a.host),
      ['127.0.0.1', '198.18.5.1', '198.18.0.7'],
      'from this machine, loopback is fine',
    );
  },
);
