import { hkdfSync } from 'node:crypto';
import t from 'tap';
import {
  deriveDirectionKeys,
  ephemeralKeyPairFromPrivate,
  generateEphemeralKeyPair,
  HKDF_INFO_CLIENT_TO_SERVER,
  sessionKeysFor,
  x25519SharedSecret,
} from '../../src/crypto/session-keys.js';

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
const fromHex = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'hex'));

t.test('X25519 matches the RFC 7748 section 6.1 test vector', async (t) => {
  const alice = ephemeralKeyPairFromPrivate(
    fromHex('77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a'),
  );
  const bob = ephemeralKeyPairFromPrivate(fromHex('5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb'));
  t.equal(hex(alice.publicKey), '8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a');
  t.equal(hex(bob.publicKey), 'de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f');
  const expected = '4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742';
  t.equal(hex(x25519SharedSecret(alice, bob.publicKey)), expected);
  t.equal(hex(x25519SharedSecret(bob, alice.publicKey)), expected);
});

t.test('both sides derive identical per-direction keys, different per direction', async (t) => {
  const client = generateEphemeralKeyPair();
  const server = generateEphemeralKeyPair();
  const transcript = new Uint8Array(32).fill(7);
  const c = deriveDirectionKeys(x25519SharedSecret(client, server.publicKey), transcript);
  const s = deriveDirectionKeys(x25519SharedSecret(server, client.publicKey), transcript);
  t.same(c, s);
  t.equal(c.clientToServer.length, 32);
  t.not(hex(c.clientToServer), hex(c.serverToClient));
  const cv = sessionKeysFor('client', 'aes-256-gcm', c);
  const sv = sessionKeysFor('server', 'aes-256-gcm', s);
  t.equal(hex(cv.sendKey), hex(sv.receiveKey));
  t.equal(hex(cv.receiveKey), hex(sv.sendKey));
  const other = deriveDirectionKeys(x25519SharedSecret(client, server.publicKey), new Uint8Array(32).fill(8));
  t.not(hex(other.clientToServer), hex(c.clientToServer), 'a different transcript gives different keys');
});

t.test('key derivation is HKDF-SHA256(secret, salt = transcript, info = label)', async (t) => {
  const secret = new Uint8Array(32).fill(1);
  const salt = new Uint8Array(32).fill(2);
  const keys = deriveDirectionKeys(secret, salt);
  t.equal(
    hex(keys.clientToServer),
    Buffer.from(hkdfSync('sha256', secret, salt, HKDF_INFO_CLIENT_TO_SERVER, 32)).toString('hex'),
  );
  // Pinned so a change of labels or hash shows up as a failing vector.
  t.equal(hex(keys.clientToServer), hex(new Uint8Array(hkdfSync('sha256', secret, salt, 'clawpeer v1 c2s', 32))));
  t.equal(hex(keys.serverToClient), hex(new Uint8Array(hkdfSync('sha256', secret, salt, 'clawpeer v1 s2c', 32))));
});

t.test('low-order peer keys are refused', async (t) => {
  const own = generateEphemeralKeyPair();
  t.throws(() => x25519SharedSecret(own, new Uint8Array(32)), { code: 'AUTH_FAILED', message: /low-order/ });
  const one = new Uint8Array(32);
  one[0] = 1;
  t.throws(() => x25519SharedSecret(own, one), { code: 'AUTH_FAILED' });
  t.throws(() => x25519SharedSecret(own, new Uint8Array(31)), {
    code: 'PROTOCOL',
    message: /must be 32 bytes, got 31/,
  });
});
