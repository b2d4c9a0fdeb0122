// The traversal socket's forwarding, with plain UDP sockets standing in for quinn: one forwarder
// per remote, reused for every datagram and carrying both directions from the first; a dial
// forwarder released by one candidate leaves another's alone; traversal messages never reach
// quinn, QUIC datagrams never reach the handlers.
import t, { type Test } from 'tap';
import dgram from 'node:dgram';
import { once } from 'node:events';
import { silentLogger } from '../../src/logger.js';
import { encodeTraversal } from '../../src/protocol/rendezvous-wire.js';
import { TraversalSocket } from '../../src/reach/traversal-socket.js';

async function udp(): Promise<dgram.Socket> {
  const s = dgram.createSocket('udp4');
  s.bind(0, '127.0.0.1');
  await once(s, 'listening');
  return s;
}
const port = (s: dgram.Socket): number => s.address().port;
function next(s: dgram.Socket): Promise<{ msg: Buffer; from: number }> {
  return new Promise((resolve) => s.once('message', (msg, r) => resolve({ msg, from: r.port })));
}
/** A QUIC-looking datagram (long header, version 1). */
const quic = (n: number): Buffer => Buffer.from([0xc0, 0, 0, 0, 1, n]);
/** Resolves once `done()` holds (datagrams arrive on later turns of the event loop); 5 s at most. */
async function until(done: () => boolean): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!done()) {
    if (Date.now() > deadline) throw new Error('timed out waiting for datagrams');
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** A listener's traversal socket forwarding to a stand-in quinn server, and a remote that sends to it. */
async function listenerRig(t: Test): Promise<{ quinn: dgram.Socket; mux: TraversalSocket; remote: dgram.Socket }> {
  const quinn = await udp(); // stands in for the quinn server
  const mux = await TraversalSocket.open({ host: '127.0.0.1', port: 0, log: silentLogger });
  mux.serveInbound({ host: '127.0.0.1', port: port(quinn) });
  const remote = await udp();
  t.teardown(async () => {
    quinn.close();
    remote.close();
    await mux.close();
  });
  return { quinn, mux, remote };
}

t.test('listener side: one forwarder per remote, reused, both directions from the first datagram', async (t) => {
  const { quinn, mux, remote } = await listenerRig(t);
  const got: { msg: Buffer; from: number }[] = [];
  quinn.on('message', (msg, r) => got.push({ msg, from: r.port }));
  // Three datagrams at once, before the forwarder has even bound: none lost, one forwarder.
  for (let i = 0; i < 3; i++) remote.send(quic(i), mux.address.port, '127.0.0.1');
  await until(() => got.length >= 3);
  t.same(
    got.map((g) => g.msg[5]),
    [0, 1, 2],
    'in order, all of them',
  );
  t.equal(new Set(got.map((g) => g.from)).size, 1, 'all from one forwarder');
  const fwd = got[0]!.from;
  t.equal(mux.pathOf({ host: '127.0.0.1', port: fwd }), 'punched', 'pathOf knows it');
  t.equal(mux.pathOf({ host: '127.0.0.1', port: port(quinn) }), undefined, 'and nothing else');
  // quinn answers the forwarder: the answer leaves the traversal socket toward the remote.
  const back = next(remote);
  quinn.send(quic(9), fwd, '127.0.0.1');
  const answer = await back;
  t.equal(answer.msg[5], 9);
  t.equal(answer.from, mux.address.port, 'from the traversal socket (the public port)');
  for (let i = 3; i < 50; i++) remote.send(quic(i), mux.address.port, '127.0.0.1');
  await until(() => got.length >= 50);
  t.equal(new Set(got.map((g) => g.from)).size, 1, '50 datagrams, still the one forwarder');
  const other = await udp();
  t.teardown(() => other.close());
  other.send(quic(1), mux.address.port, '127.0.0.1');
  await until(() => got.length >= 51);
  t.not(got[50]!.from, fwd, 'another remote gets its own');
});

t.test('traversal messages go to the handlers (PING answered), never to quinn', async (t) => {
  const { quinn, mux, remote } = await listenerRig(t);
  let toQuinn = 0;
  quinn.on('message', () => toQuinn++);
  const seen: string[] = [];
  mux.on((m) => seen.push(m.type));
  const pong = next(remote);
  remote.send(
    encodeTraversal({ type: 'ping', nonce: new Uint8Array(8).fill(3), from: new Uint8Array(32) }),
    mux.address.port,
    '127.0.0.1',
  );
  const reply = await pong;
  t.equal(reply.msg[0], 0x89, 'a PONG comes back');
  t.same(seen, ['ping']);
  // A greased QUIC long header whose first byte looks like a traversal type: still QUIC.
  remote.send(Buffer.from([0x88, 0, 0, 0, 1, 7]), mux.address.port, '127.0.0.1');
  await until(() => toQuinn === 1);
  t.equal(toQuinn, 1, 'forwarded to quinn');
  t.same(seen, ['ping'], 'not taken for a traversal message');
});

t.test('dial side: each candidate its own forwarder; releasing one leaves the other working', async (t) => {
  const peer = await udp(); // the peer's traversal socket
  const mux = await TraversalSocket.open({ host: '127.0.0.1', port: 0, log: silentLogger });
  const client = await udp(); // stands in for the quinn Client
  t.teardown(async () => {
    peer.close();
    client.close();
    await mux.close();
  });
  const route = { kind: 'direct' as const, remote: { host: '127.0.0.1', port: port(peer) } };
  const loser = await mux.openDialForwarder(route);
  const winner = await mux.openDialForwarder(route);
  t.not(loser.address.port, winner.address.port);
  const out = next(peer);
  client.send(quic(1), winner.address.port, '127.0.0.1');
  t.equal((await out).msg[5], 1, "the client's datagram reaches the peer");
  loser.close(); // the race's loser is released
  const back = next(client);
  peer.send(quic(2), mux.address.port, '127.0.0.1');
  const answer = await back;
  t.equal(answer.msg[5], 2, "the peer's answer still reaches the winner's client");
  t.equal(answer.from, winner.address.port, "through the winner's forwarder");
  winner.close();
});

t.test(
  'a relay session moves to a punched address only after that address pinged, on the same forwarder',
  async (t) => {
    const quinn = await udp();
    const relay = await udp(); // stands in for the rendezvous relay
    const peer = await udp(); // the dialer's traversal socket, once a hole is open
    const stranger = await udp(); // knows the token, never punched
    const mux = await TraversalSocket.open({ host: '127.0.0.1', port: 0, log: silentLogger });
    mux.serveInbound({ host: '127.0.0.1', port: port(quinn) });
    const token = Uint8Array.of(1, 2, 3, 4, 5, 6, 7, 8);
    mux.acceptRelay({ host: '127.0.0.1', port: port(relay) }, token);
    t.teardown(async () => {
      for (const s of [quinn, relay, peer, stranger]) s.close();
      await mux.close();
    });
    const framed = (n: number): Uint8Array => encodeTraversal({ type: 'relayData', token, payload: quic(n) });
    /** The next relayed datagram `s` receives (PONGs skipped). */
    const nextData = (s: dgram.Socket): Promise<Buffer> =>
      new Promise((resolve) => {
        const on = (msg: Buffer): void => {
          if (msg[0] !== 0x8d) return;
          s.off('message', on);
          resolve(msg);
        };
        s.on('message', on);
      });
    const roundTrip = async (from: dgram.Socket, n: number): Promise<{ via: number }> => {
      const got = next(quinn);
      from.send(framed(n), mux.address.port, '127.0.0.1');
      const g = await got;
      t.equal(g.msg[5], n);
      return { via: g.from };
    };
    const { via } = await roundTrip(relay, 1);
    t.equal(mux.pathOf({ host: '127.0.0.1', port: via }), 'relayed');
    const toRelay = nextData(relay);
    quinn.send(quic(2), via, '127.0.0.1');
    t.equal((await toRelay).at(-1), 2, 'answers go through the relay');

    t.equal(
      (await roundTrip(stranger, 3)).via,
      via,
      'a framed datagram from elsewhere still reaches quinn through the same forwarder',
    );
    const stillRelay = nextData(relay);
    quinn.send(quic(4), via, '127.0.0.1');
    t.equal((await stillRelay).at(-1), 4, 'but an address that never pinged does not move the session');
    t.equal(mux.pathOf({ host: '127.0.0.1', port: via }), 'relayed');
    t.equal(mux.counters.moved, 0);

    const pong = next(peer);
    peer.send(
      encodeTraversal({ type: 'ping', nonce: new Uint8Array(8), from: new Uint8Array(32) }),
      mux.address.port,
      '127.0.0.1',
    );
    await pong;
    t.equal((await roundTrip(peer, 5)).via, via, 'after a PING: the same forwarder (quinn sees no new address)');
    t.equal(mux.pathOf({ host: '127.0.0.1', port: via }), 'punched', 'and it is punched now');
    const toPeer = nextData(peer);
    quinn.send(quic(6), via, '127.0.0.1');
    t.equal((await toPeer).at(-1), 6, 'answers go straight to the peer, still framed');
    t.equal(mux.counters.moved, 1);
  },
);
