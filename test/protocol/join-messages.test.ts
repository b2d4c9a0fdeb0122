// Connection-join control messages (envelope fields 64-66, feature 'join'): pinned bytes, round
// trips, and a SessionJoin whose fixed-size fields are the wrong size is refused.
import t from 'tap';
import { isClawpeerError } from '../../src/errors.js';
import { clawpeer } from '../../src/protocol/gen/clawpeer.js';
import { decodeControl, encodeControl, encodeControlFrame, type ControlMessage } from '../../src/protocol/messages.js';
import { hex, toHex } from './hex.js';

const MAX_BYTES = 16 << 20;

// Field 64 takes the two-byte tag (64 << 3 | 2 = 514) 0x82 0x04; 65, 0x8a 0x04; 66, 0x92 0x04.
const VECTORS: { name: string; message: ControlMessage; wire: string }[] = [
  {
    name: 'SessionJoin',
    message: {
      type: 'session-join',
      sessionId: new Uint8Array(16).fill(0x11),
      index: 2,
      proof: new Uint8Array(32).fill(0x22),
    },
    wire: `
      01 00000039                 # frame: type CONTROL, body 57 bytes
      8204 36                     # Control.session_join (field 64, LEN) 54 bytes
      0a 10 ${'11'.repeat(16)}    #   session_id (1), 16 bytes
      10 02                       #   index (2) = 2
      1a 20 ${'22'.repeat(32)}    #   proof (3), 32 bytes
    `,
  },
  {
    name: 'SessionJoined',
    message: { type: 'session-joined', index: 3 },
    wire: `
      01 00000005                 # frame: type CONTROL, body 5 bytes
      8a04 02                     # Control.session_joined (field 65, LEN) 2 bytes
      08 03                       #   index (1) = 3
    `,
  },
  {
    name: 'JoinWanted',
    message: { type: 'join-wanted', connections: 8 },
    wire: `
      01 00000005                 # frame: type CONTROL, body 5 bytes
      9204 02                     # Control.join_wanted (field 66, LEN) 2 bytes
      08 08                       #   connections (1) = 8
    `,
  },
];

for (const v of VECTORS) {
  t.test(`${v.name}: exact bytes and round trip`, async (t) => {
    t.equal(toHex(encodeControlFrame(v.message)), toHex(hex(v.wire)));
    t.same(decodeControl(encodeControl(v.message), { maxBytes: MAX_BYTES }), v.message);
  });
}

t.test('a SessionJoin with a short session id or proof is refused naming the field', async (t) => {
  for (const [field, join] of [
    ['SessionJoin.sessionId', { sessionId: new Uint8Array(15), index: 1, proof: new Uint8Array(32) }],
    ['SessionJoin.proof', { sessionId: new Uint8Array(16), index: 1, proof: new Uint8Array(31) }],
  ] as const) {
    const bytes = clawpeer.v1.Control.encode({ sessionJoin: join }).finish();
    let err: unknown;
    try {
      decodeControl(bytes, { maxBytes: MAX_BYTES });
    } catch (e) {
      err = e;
    }
    t.ok(isClawpeerError(err) && err.code === 'PROTOCOL', `${field}: PROTOCOL`);
    t.match((err as Error).message, field);
  }
  t.throws(
    () => encodeControl({ type: 'session-join', sessionId: new Uint8Array(8), index: 1, proof: new Uint8Array(32) }),
    RangeError,
    'and never encoded',
  );
});
