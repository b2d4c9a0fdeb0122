import t from 'tap';
import {
  decodeTraversal,
  encodeTraversal,
  isTraversalMessage,
  relayDataHeader,
  TRAVERSAL_TYPES,
  type TraversalMessage,
} from '../../src/protocol/rendezvous-wire.js';
import { hex, toHex } from './hex.js';

const K1 = new Uint8Array(32).fill(0x11);
const K2 = new Uint8Array(32).fill(0x22);
const NONCE = Uint8Array.of(1, 2, 3, 4, 5, 6, 7, 8);
const TOKEN = Uint8Array.of(0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7);

t.test('pinned bytes', async (t) => {
  const cases: [TraversalMessage, string][] = [
    [{ type: 'reflect', nonce: NONCE }, '8e c1a3775e 0102030405060708'],
    [
      { type: 'reflected', nonce: NONCE, address: { host: '203.0.113.7', port: 7801 } },
      '8f c1a3775e 0102030405060708  04 cb007107 1e79',
    ],
    [
      { type: 'registered', ttlS: 90, reflexive: { host: '2001:db8::1', port: 443 } },
      '82 c1a3775e 0000005a  06 20010db8000000000000000000000001 01bb',
    ],
    [{ type: 'lookup', publicKey: K1 }, '83 c1a3775e 11*32'],
    [{ type: 'lookupReply', publicKey: K1 }, '84 c1a3775e 11*32 00'],
    [{ type: 'lookupReply', publicKey: K1, announcement: Uint8Array.of(9, 9) }, '84 c1a3775e 11*32 01 0909'],
    [{ type: 'connect', target: K1, dialer: K2 }, '85 c1a3775e 11*32 22*32'],
    [
      { type: 'connectReply', target: K1, mux: { host: '198.51.100.2', port: 40000 } },
      '86 c1a3775e 11*32 01 04 c6336402 9c40',
    ],
    [
      { type: 'callMeMaybe', dialer: K2, dialerMux: { host: '192.0.2.9', port: 1 } },
      '87 c1a3775e 22*32 04 c0000209 0001',
    ],
    [{ type: 'ping', nonce: NONCE, from: K1 }, '88 c1a3775e 0102030405060708 11*32'],
    [{ type: 'pong', nonce: NONCE }, '89 c1a3775e 0102030405060708'],
    [{ type: 'relayBind', from: K1, to: K2, token: TOKEN }, '8a c1a3775e 11*32 22*32 a0a1a2a3a4a5a6a7'],
    [{ type: 'relayOffer', from: K1, token: TOKEN }, '8b c1a3775e 11*32 a0a1a2a3a4a5a6a7'],
    [{ type: 'relayReady', token: TOKEN, status: 'over-cap' }, '8c c1a3775e a0a1a2a3a4a5a6a7 02'],
    [{ type: 'relayData', token: TOKEN, payload: Uint8Array.of(0xc0, 0xff) }, '8d c1a3775e a0a1a2a3a4a5a6a7 c0ff'],
    [{ type: 'register', announcement: Uint8Array.of(0x43, 0x50) }, '81 c1a3775e 4350'],
    [{ type: 'nameplateLookup', nameplate: 4242 }, '91 c1a3775e 00001092'],
    [{ type: 'nameplateReply', op: 'claim', status: 'taken', nameplate: 7 }, '93 c1a3775e 00 01 00000007 00'],
    [{ type: 'refused', request: 0x83, reason: 'rate-limited', text: 'slow' }, '94 c1a3775e 83 00 736c6f77'],
  ];
  for (const [m, bytes] of cases) {
    const enc = encodeTraversal(m);
    t.equal(toHex(enc), toHex(hex(bytes)), m.type);
    t.ok(isTraversalMessage(enc));
    t.same(decodeTraversal(enc), m, `${m.type} decodes back`);
  }
  t.equal(toHex(relayDataHeader(TOKEN)), '8dc1a3775ea0a1a2a3a4a5a6a7', 'the relay header alone');
  t.equal(TRAVERSAL_TYPES.relayData, 0x8d);
});

t.test('every type has 0x80 set and 0x40 clear', async (t) => {
  for (const [name, v] of Object.entries(TRAVERSAL_TYPES)) t.equal(v & 0xc0, 0x80, name);
});

t.test('QUIC packets are never traversal messages, greased fixed bit or not', async (t) => {
  // Long header (Initial, version 1), with and without the fixed bit (quinn greases it).
  t.notOk(isTraversalMessage(hex('c0 00000001 08 0102030405060708')));
  t.notOk(isTraversalMessage(hex('80 00000001 08 0102030405060708')), 'fixed bit clear, version 1');
  t.notOk(
    isTraversalMessage(hex('8d 00000001 08 0102030405060708')),
    'a relay-data type byte, but a QUIC version after it',
  );
  // Short headers: the magic would have to appear in the connection id.
  t.notOk(isTraversalMessage(hex('40 1122334455')));
  t.notOk(isTraversalMessage(hex('0d c1a3775e')), 'the magic after a short-header first byte');
  t.notOk(isTraversalMessage(hex('8d c1a377')), 'too short');
});

t.test('malformed messages throw PROTOCOL naming what was wrong', async (t) => {
  const bad = (h: string, re: RegExp): void => {
    t.throws(() => decodeTraversal(hex(h)), { code: 'PROTOCOL', message: re }, h);
  };
  bad('83 c1a3775e 11*31', /truncated lookup key/);
  bad('83 c1a3775e 11*33', /1 stray bytes/);
  bad('9f c1a3775e', /unknown type 0x9f/);
  bad('8f c1a3775e 0102030405060708 05 00', /family 5/);
  bad('84 c1a3775e 11*32 02', /flag is 2/);
  bad('8c c1a3775e a0a1a2a3a4a5a6a7 09', /unknown relay status 9/);
  bad('c3 c1a3775e', /not a traversal message/);
});
