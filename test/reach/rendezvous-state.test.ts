// The rendezvous state machine with time passed in: what it stores, answers and refuses.
import t from 'tap';
import { generateIdentity, type Identity } from '../../src/crypto/identity.js';
import { encodeAnnouncement, type AnnouncementFields } from '../../src/protocol/announcement.js';
import {
  decodeTraversal,
  encodeTraversal,
  type TraversalMessage,
  type WireAddress,
} from '../../src/protocol/rendezvous-wire.js';
import { RELAY_BIND_TIMEOUT_MS, RendezvousState, type Outgoing } from '../../src/reach/rendezvous-state.js';

const T0 = 1_800_000_000_000;
const A_ADDR = { host: '198.51.100.10', port: 40001 };
const B_ADDR = { host: '203.0.113.20', port: 50002 };
const EVIL = { host: '192.0.2.66', port: 6666 };

const fields = (seq: number, now = T0, extra: Partial<AnnouncementFields> = {}): AnnouncementFields => ({
  seq,
  issuedAtMs: now,
  ttlMs: 90_000,
  addresses: [{ host: '192.0.2.1', port: 7700, role: 'listen', source: 'local' }],
  ...extra,
});

function send(
  s: RendezvousState,
  m: TraversalMessage,
  from: WireAddress,
  now = T0,
  via: 0 | 1 = 0,
): { to: WireAddress; m: TraversalMessage; via: number }[] {
  return s
    .handle(encodeTraversal(m), from, via, now)
    .map((o: Outgoing) => ({ to: o.to, m: decodeTraversal(o.bytes), via: o.via }));
}

function register(
  s: RendezvousState,
  id: Identity,
  from: WireAddress,
  seq = 1,
  now = T0,
): TraversalMessage | undefined {
  return send(s, { type: 'register', announcement: encodeAnnouncement(id, fields(seq, now)) }, from, now)[0]?.m;
}

const lookup = (s: RendezvousState, id: Identity, from: WireAddress = B_ADDR, now = T0): Uint8Array | undefined => {
  const r = send(s, { type: 'lookup', publicKey: id.publicKey }, from, now)[0]?.m;
  return r?.type === 'lookupReply' ? r.announcement : undefined;
};

t.test(
  'register answers the reflexive address; lookup answers the signed bytes unchanged; expiry drops it',
  async (t) => {
    const s = new RendezvousState();
    const a = generateIdentity();
    const reply = register(s, a, A_ADDR);
    t.same(reply, { type: 'registered', ttlS: 90, reflexive: A_ADDR });
    const bytes = encodeAnnouncement(a, fields(2));
    send(s, { type: 'register', announcement: bytes }, A_ADDR);
    t.same(lookup(s, a), bytes, 'the bytes as signed');
    t.equal(lookup(s, a, B_ADDR, T0 + 89_999)?.length, bytes.length, 'alive just before expiry');
    t.equal(lookup(s, a, B_ADDR, T0 + 90_000), undefined, 'gone at expiry');
  },
);

t.test('a forged or expired announcement is never stored', async (t) => {
  const s = new RendezvousState();
  const a = generateIdentity();
  const forged = encodeAnnouncement(a, fields(1));
  forged[62] = (forged[62] ?? 0) ^ 1; // an IP byte of the address: the signature no longer matches
  const r1 = send(s, { type: 'register', announcement: forged }, EVIL)[0]?.m;
  t.match(r1, { type: 'refused', reason: 'invalid', text: /bad signature/ });
  const expired = encodeAnnouncement(a, fields(1, T0 - 100_000));
  t.match(send(s, { type: 'register', announcement: expired }, EVIL)[0]?.m, {
    type: 'refused',
    reason: 'invalid',
    text: /expired/,
  });
  t.equal(lookup(s, a), undefined, 'nothing stored');
  t.same(
    send(s, { type: 'connect', target: a.publicKey, dialer: generateIdentity().publicKey }, B_ADDR)[0]?.m,
    { type: 'connectReply', target: a.publicKey },
    'nor used for punching',
  );
});

t.test('a replayed announcement cannot roll back or redirect a node', async (t) => {
  const s = new RendezvousState();
  const a = generateIdentity();
  const old = encodeAnnouncement(a, fields(1));
  send(s, { type: 'register', announcement: old }, A_ADDR);
  register(s, a, A_ADDR, 5);
  t.match(
    send(s, { type: 'register', announcement: old }, EVIL)[0]?.m,
    { type: 'refused', reason: 'stale' },
    'an older seq',
  );
  const same = encodeAnnouncement(a, fields(5));
  t.match(
    send(s, { type: 'register', announcement: same }, EVIL)[0]?.m,
    { type: 'refused', reason: 'stale' },
    'the same seq from another address',
  );
  const out = send(s, { type: 'connect', target: a.publicKey, dialer: generateIdentity().publicKey }, B_ADDR);
  t.same(
    out.map((o) => o.to),
    [B_ADDR, A_ADDR],
    'CALL_ME_MAYBE still goes to where the node registered',
  );
  t.same(
    out[1]?.m,
    { type: 'callMeMaybe', dialer: (out[1]?.m as { dialer: Uint8Array }).dialer, dialerMux: B_ADDR },
    "carrying the dialer's reflexive address",
  );
});

t.test('lookups go by full key only: no other key, no prefix, finds anything', async (t) => {
  const s = new RendezvousState();
  const a = generateIdentity();
  register(s, a, A_ADDR);
  const near = a.publicKey.slice();
  near[31] = (near[31] ?? 0) ^ 1;
  t.equal(lookup(s, { ...a, publicKey: near }), undefined, 'one bit off');
  t.throws(
    () => encodeTraversal({ type: 'lookup', publicKey: a.publicKey.subarray(0, 16) }),
    /32 bytes/,
    'a prefix cannot be asked',
  );
  t.same(
    s
      .handle(Buffer.concat([Buffer.from('83c1a3775e', 'hex'), a.publicKey.subarray(0, 16)]), B_ADDR, 0, T0)
      .map((o) => decodeTraversal(o.bytes).type),
    ['refused'],
    'nor sent by hand',
  );
});

t.test('requests per IP are rate limited; relay data is not counted against them', async (t) => {
  const s = new RendezvousState({ requestsPerIpPerSecond: 5 });
  const answers = Array.from(
    { length: 8 },
    () => send(s, { type: 'reflect', nonce: new Uint8Array(8) }, B_ADDR)[0]?.m.type,
  );
  t.same(answers, ['reflected', 'reflected', 'reflected', 'reflected', 'reflected', 'refused', 'refused', 'refused']);
  t.equal(
    send(s, { type: 'reflect', nonce: new Uint8Array(8) }, { ...B_ADDR, port: 1 })[0]?.m.type,
    'refused',
    'another port of the same IP shares the budget',
  );
  t.equal(
    send(s, { type: 'reflect', nonce: new Uint8Array(8) }, A_ADDR)[0]?.m.type,
    'reflected',
    'another IP has its own',
  );
  t.equal(
    send(s, { type: 'reflect', nonce: new Uint8Array(8) }, B_ADDR, T0 + 1000)[0]?.m.type,
    'reflected',
    'refilled a second later',
  );
});

t.test('reflect answers from the port it was asked on', async (t) => {
  const s = new RendezvousState();
  const [r] = send(s, { type: 'reflect', nonce: new Uint8Array(8) }, B_ADDR, T0, 1);
  t.equal(r?.via, 1);
  t.same(r?.m, { type: 'reflected', nonce: new Uint8Array(8), address: B_ADDR });
});

function relayPair(s: RendezvousState, a: Identity, b: Identity, token: Uint8Array): void {
  const offer = send(s, { type: 'relayBind', from: b.publicKey, to: a.publicKey, token }, B_ADDR);
  if (offer[0]?.m.type !== 'relayOffer') throw new Error(`no offer: ${JSON.stringify(offer)}`);
  const ready = send(s, { type: 'relayBind', from: a.publicKey, to: b.publicKey, token }, A_ADDR);
  if (ready.length !== 2) throw new Error('not ready');
}

t.test('relay: offered to the registered target, spliced both ways unchanged, strangers ignored', async (t) => {
  const s = new RendezvousState();
  const a = generateIdentity();
  const b = generateIdentity();
  register(s, a, A_ADDR);
  const token = Uint8Array.of(1, 2, 3, 4, 5, 6, 7, 8);
  const offer = send(s, { type: 'relayBind', from: b.publicKey, to: a.publicKey, token }, B_ADDR);
  t.same(offer, [{ to: A_ADDR, via: 0, m: { type: 'relayOffer', from: b.publicKey, token } }]);
  t.same(
    send(s, { type: 'relayBind', from: a.publicKey, to: b.publicKey, token }, EVIL),
    [],
    "the target's bind from elsewhere is ignored",
  );
  const ready = send(s, { type: 'relayBind', from: a.publicKey, to: b.publicKey, token }, A_ADDR);
  t.same(
    ready.map((r) => [r.to, r.m.type]),
    [
      [A_ADDR, 'relayReady'],
      [B_ADDR, 'relayReady'],
    ],
  );
  const data = encodeTraversal({ type: 'relayData', token, payload: Uint8Array.of(7, 7, 7) });
  const out = s.handle(data, B_ADDR, 0, T0);
  t.same(
    out.map((o) => o.to),
    [A_ADDR],
  );
  t.equal(out[0]?.bytes, data, 'the same buffer: nothing copied, nothing read');
  t.same(
    s.handle(data, A_ADDR, 0, T0).map((o) => o.to),
    [B_ADDR],
    'and back',
  );
  t.same(s.handle(data, EVIL, 0, T0), [], 'a third address sends nothing through');
  t.same(
    send(
      s,
      {
        type: 'relayBind',
        from: b.publicKey,
        to: generateIdentity().publicKey,
        token: Uint8Array.of(9, 9, 9, 9, 9, 9, 9, 9),
      },
      B_ADDR,
    )[0]?.m,
    { type: 'relayReady', token: Uint8Array.of(9, 9, 9, 9, 9, 9, 9, 9), status: 'unknown-peer' },
  );
});

t.test('relay caps: sessions per node and bytes per second per node', async (t) => {
  const s = new RendezvousState({ relaySessionsPerNode: 2, relayBytesPerSecond: 100_000 });
  const a = generateIdentity();
  const b = generateIdentity();
  register(s, a, A_ADDR);
  const tokens = [1, 2, 3].map((i) => new Uint8Array(8).fill(i));
  relayPair(s, a, b, tokens[0]!);
  relayPair(s, a, b, tokens[1]!);
  t.same(send(s, { type: 'relayBind', from: b.publicKey, to: a.publicKey, token: tokens[2]! }, B_ADDR)[0]?.m, {
    type: 'relayReady',
    token: tokens[2],
    status: 'over-cap',
  });
  // 64 KiB of burst, then the rate: 100 datagrams of 1200 bytes at one instant pass only the burst.
  const data = encodeTraversal({ type: 'relayData', token: tokens[0]!, payload: new Uint8Array(1200) });
  let passed = 0;
  for (let i = 0; i < 100; i++) passed += s.handle(data, B_ADDR, 0, T0).length;
  t.ok(passed >= 50 && passed <= 56, `the burst passed (${passed} of 100)`);
  t.equal(s.counters.relayDropped, 100 - passed);
  let later = 0;
  for (let i = 0; i < 100; i++) later += s.handle(data, B_ADDR, 0, T0 + 500).length;
  t.ok(later >= 40 && later <= 43, `half a second later, 50 KB more (${later})`);
  // Unbound sessions expire and free their slot.
  s.sweep(T0 + RELAY_BIND_TIMEOUT_MS + 1);
  t.equal(s.counters.relaySessions, 2, 'bound sessions stay while used within the idle time');
});

t.test('nameplates: claim, taken by another, lookup, release only by the holder, expiry', async (t) => {
  const s = new RendezvousState();
  const a = generateIdentity();
  const b = generateIdentity();
  const claim = (id: Identity, seq: number, np: number, now = T0): TraversalMessage | undefined =>
    send(
      s,
      {
        type: 'nameplateClaim',
        announcement: encodeAnnouncement(id, fields(seq, now, { nameplate: np, ttlMs: 60_000 })),
      },
      A_ADDR,
      now,
    )[0]?.m;
  t.match(claim(a, 1, 42), { type: 'nameplateReply', op: 'claim', status: 'ok', nameplate: 42 });
  t.match(claim(b, 1, 42), { status: 'taken' }, 'another node cannot take it');
  const found = send(s, { type: 'nameplateLookup', nameplate: 42 }, B_ADDR)[0]?.m;
  t.match(found, { type: 'nameplateReply', op: 'lookup', status: 'ok' });
  t.ok(found?.type === 'nameplateReply' && found.announcement !== undefined, "with the holder's announcement");
  t.match(send(s, { type: 'nameplateLookup', nameplate: 43 }, B_ADDR)[0]?.m, { status: 'absent' });
  const release = (id: Identity, seq: number): TraversalMessage | undefined =>
    send(
      s,
      { type: 'nameplateRelease', announcement: encodeAnnouncement(id, fields(seq, T0, { nameplate: 42 })) },
      B_ADDR,
    )[0]?.m;
  t.match(release(b, 9), { status: 'taken' }, 'another node cannot release it');
  t.match(release(a, 2), { status: 'ok' });
  t.match(claim(b, 1, 42), { status: 'ok' }, 'free again');
  t.match(
    send(s, { type: 'nameplateLookup', nameplate: 42 }, B_ADDR, T0 + 60_000)[0]?.m,
    { status: 'absent' },
    'expired',
  );
  t.match(send(s, { type: 'nameplateClaim', announcement: encodeAnnouncement(a, fields(3)) }, A_ADDR)[0]?.m, {
    type: 'refused',
    text: /no nameplate/,
  });
});

t.test('garbage and replies sent to the server are dropped or refused, never crash it', async (t) => {
  const s = new RendezvousState();
  t.same(s.handle(Buffer.from('hello'), B_ADDR, 0, T0), []);
  t.same(send(s, { type: 'pong', nonce: new Uint8Array(8) }, B_ADDR), []);
  t.match(
    s.handle(Buffer.from('81c1a3775e00', 'hex'), B_ADDR, 0, T0).map((o) => decodeTraversal(o.bytes)),
    [{ type: 'refused', reason: 'invalid' }],
  );
});
