// Share-watch control messages (envelope fields 54-55, feature 'watch'): pinned bytes, round
// trips, and the checks on what a peer sends.
import t from 'tap';
import { isClawpeerError } from '../../src/errors.js';
import { clawpeer } from '../../src/protocol/gen/clawpeer.js';
import { decodeControl, encodeControl, encodeControlFrame, type ControlMessage } from '../../src/protocol/messages.js';
import { DEFAULT_CAPABILITIES, intersectCapabilities } from '../../src/protocol/capabilities.js';
import { hex, toHex } from './hex.js';

const MAX_BYTES = 16 << 20;

// Field 54 takes the two-byte tag (54 << 3 | 2 = 434) 0xb2 0x03; field 55, 0xba 0x03.
const VECTORS: { name: string; message: ControlMessage; wire: string }[] = [
  {
    name: 'WatchShare',
    message: { type: 'watch-share', share: 'docs' },
    wire: `
      01 00000009                 # frame: type CONTROL, body 9 bytes
      b203 06                     # Control.watch_share (field 54, LEN) 6 bytes
      0a 04 646f6373              #   share (1) = "docs"
    `,
  },
  {
    name: 'ShareChanged',
    message: { type: 'share-changed', share: 'docs', seq: 7 },
    wire: `
      01 0000000b                 # frame: type CONTROL, body 11 bytes
      ba03 08                     # Control.share_changed (field 55, LEN) 8 bytes
      0a 04 646f6373              #   share (1) = "docs"
      10 07                       #   seq (2) = 7
    `,
  },
  {
    name: 'ShareChanged confirming the watch (seq 0, the default, is not written)',
    message: { type: 'share-changed', share: '', seq: 0 },
    wire: `
      01 00000003                 # frame: type CONTROL, body 3 bytes
      ba03 00                     # Control.share_changed (field 55, LEN) 0 bytes
    `,
  },
];

for (const v of VECTORS) {
  t.test(`${v.name}: exact bytes and round trip`, async (t) => {
    t.equal(toHex(encodeControlFrame(v.message)), toHex(hex(v.wire)));
    t.same(decodeControl(encodeControl(v.message), { maxBytes: MAX_BYTES }), v.message);
  });
}

t.test('a share name that is not valid UTF-8, or too long, is refused naming the field', async (t) => {
  const bad = clawpeer.v1.Control.encode({ watchShare: { share: 'x'.repeat(5000) } }).finish();
  const err = (() => {
    try {
      decodeControl(bad, { maxBytes: MAX_BYTES });
      return undefined;
    } catch (e) {
      return e;
    }
  })();
  t.ok(isClawpeerError(err) && err.code === 'PROTOCOL', 'PROTOCOL');
  t.match((err as Error).message, /WatchShare\.share/);
  t.throws(
    () => encodeControl({ type: 'share-changed', share: 'docs', seq: -1 }),
    /ShareChanged\.seq/,
    'the encoder refuses a negative seq',
  );
});

t.test('the watch feature is announced, and a session has it only when both sides do', async (t) => {
  t.ok(DEFAULT_CAPABILITIES.features.includes('watch'));
  t.ok(intersectCapabilities(DEFAULT_CAPABILITIES, DEFAULT_CAPABILITIES).features.includes('watch'));
  const older = { ...DEFAULT_CAPABILITIES, features: DEFAULT_CAPABILITIES.features.filter((f) => f !== 'watch') };
  t.notOk(intersectCapabilities(DEFAULT_CAPABILITIES, older).features.includes('watch'), 'an older listener: no watch');
});
