import t from 'tap';
import { mkdtemp, stat, chmod, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  generateIdentity,
  identityFromSeed,
  libp2pPrivateKeyProto,
  signMessage,
  verifySignature,
} from '../../src/crypto/identity.js';
import {
  base58Decode,
  base58Encode,
  isNodeId,
  nodeIdFromPublicKey,
  publicKeyFromNodeId,
} from '../../src/crypto/node-id.js';
import { createIdentity, loadIdentity } from '../../src/home/identity-store.js';
import { isClawpeerError } from '../../src/errors.js';

t.test('node id: known vector from the libp2p peer-id spec form', async (t) => {
  // RFC 8032 test 1 seed -> public key d75a98...; its libp2p peer id is fixed by the encoding.
  const seed = Buffer.from('9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60', 'hex');
  const id = identityFromSeed(seed);
  t.equal(
    Buffer.from(id.publicKey).toString('hex'),
    'd75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a',
  );
  t.match(id.nodeId, /^12D3KooW[1-9A-HJ-NP-Za-km-z]{44}$/);
  t.same(Buffer.from(publicKeyFromNodeId(id.nodeId)), Buffer.from(id.publicKey));
  t.equal(Buffer.from(libp2pPrivateKeyProto(id)).toString('hex').slice(0, 8), '08011240');
});

t.test('base58 round trips, keeps leading zeros, rejects bad characters', async (t) => {
  for (const hex of ['', '00', '0000ff', '0123456789abcdef', 'ff'.repeat(40)]) {
    const b = Buffer.from(hex, 'hex');
    t.same(Buffer.from(base58Decode(base58Encode(b))), b, hex);
  }
  t.equal(base58Encode(Buffer.from('hello world')), 'StV1DL6CwTryKyV');
  t.throws(() => base58Decode('0OIl'), /invalid base58 character/);
});

t.test('node id parsing names the bad input', async (t) => {
  t.equal(isNodeId('alice'), false);
  t.throws(() => publicKeyFromNodeId('QmYyQSo1c1Ym7orWxLYvCrM2EmxFTANf8wXmmE7DWjhx5N'), /not an Ed25519 identity/);
  t.throws(() => publicKeyFromNodeId('not-an-id!'), /not a node id: "not-an-id!"/);
  t.throws(() => nodeIdFromPublicKey(new Uint8Array(31)), TypeError);
});

t.test('sign and verify', async (t) => {
  const a = generateIdentity();
  const b = generateIdentity();
  const msg = Buffer.from('transcript');
  const sig = signMessage(a, msg);
  t.equal(verifySignature(a.publicKey, msg, sig), true);
  t.equal(verifySignature(b.publicKey, msg, sig), false);
  t.equal(verifySignature(a.publicKey, Buffer.from('other'), sig), false);
  t.equal(verifySignature(a.publicKey, msg, sig.subarray(0, 63)), false);
});

t.test('identity store: 0600, no overwrite without force, refuses insecure and corrupt files', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'clawpeer-id-'));
  const file = join(dir, 'home', 'identity.key');
  const created = await createIdentity(file);
  t.equal((await stat(file)).mode & 0o777, 0o600);
  const loaded = await loadIdentity(file);
  t.equal(loaded.nodeId, created.nodeId);
  await t.rejects(createIdentity(file), { code: 'IDENTITY_EXISTS' });
  const replaced = await createIdentity(file, { force: true });
  t.not(replaced.nodeId, created.nodeId);
  await chmod(file, 0o644);
  await t.rejects(loadIdentity(file), { code: 'IDENTITY_INSECURE', message: /chmod 600/ });
  await writeFile(join(dir, 'bad.key'), 'garbage', { mode: 0o600 });
  await t.rejects(loadIdentity(join(dir, 'bad.key')), { code: 'IDENTITY_CORRUPT' });
  try {
    await loadIdentity(join(dir, 'missing.key'));
    t.fail('expected IDENTITY_MISSING');
  } catch (err) {
    t.ok(isClawpeerError(err, 'IDENTITY_MISSING'));
    t.match((err as Error).message, /clawpeer init/);
  }
});
