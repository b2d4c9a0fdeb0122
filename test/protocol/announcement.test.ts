import t from 'tap';
import { generateIdentity } from '../../src/crypto/identity.js';
import {
  decodeAnnouncement,
  encodeAnnouncement,
  MAX_ANNOUNCED_ADDRESSES,
  type AnnouncementFields,
} from '../../src/protocol/announcement.js';

const id = generateIdentity();
const now = 1_800_000_000_000;
const fields: AnnouncementFields = {
  seq: 7,
  issuedAtMs: now,
  ttlMs: 90_000,
  addresses: [
    { host: '192.0.2.2', port: 7700, role: 'listen', source: 'local' },
    { host: '203.0.113.2', port: 40000, role: 'mux', source: 'reflexive' },
    { host: '2001:db8::1', port: 7700, role: 'listen', source: 'mapped' },
    { host: '::ffff:198.51.100.9', port: 1, role: 'mux', source: 'local' },
  ],
};

t.test('round trip: every field, signer named by its key', async (t) => {
  const got = decodeAnnouncement(encodeAnnouncement(id, fields), now + 1000);
  t.equal(got.nodeId, id.nodeId);
  t.equal(got.seq, 7);
  t.equal(got.expiresAtMs, now + 90_000);
  t.same(
    got.addresses.map((a) => a.host),
    ['192.0.2.2', '203.0.113.2', '2001:db8::1', '::ffff:c633:6409'],
  );
  t.same(
    got.addresses.map((a) => [a.port, a.role, a.source]),
    [
      [7700, 'listen', 'local'],
      [40000, 'mux', 'reflexive'],
      [7700, 'listen', 'mapped'],
      [1, 'mux', 'local'],
    ],
  );
  t.equal(got.nameplate, undefined);
  const withPlate = decodeAnnouncement(encodeAnnouncement(id, { ...fields, nameplate: 42 }), now);
  t.equal(withPlate.nameplate, 42);
});

t.test('a flipped bit anywhere is refused, never misread', async (t) => {
  const bytes = encodeAnnouncement(id, fields);
  for (let i = 0; i < bytes.length; i++) {
    const bad = bytes.slice();
    bad[i] = (bad[i] ?? 0) ^ 0x01;
    t.throws(() => decodeAnnouncement(bad, now), { code: 'PROTOCOL' }, `byte ${i}`);
  }
});

t.test('another key cannot sign for a node: the key named is the signer', async (t) => {
  const other = generateIdentity();
  const bytes = encodeAnnouncement(other, fields);
  bytes.set(id.publicKey, 4); // claim to be `id`
  t.throws(() => decodeAnnouncement(bytes, now), /bad signature/);
});

t.test('expired, from the future, truncated, too many addresses', async (t) => {
  const bytes = encodeAnnouncement(id, fields);
  t.throws(() => decodeAnnouncement(bytes, now + 90_000), /expired/);
  t.throws(
    () => decodeAnnouncement(encodeAnnouncement(id, { ...fields, issuedAtMs: now + 10 * 60_000 }), now),
    /future/,
  );
  t.throws(() => decodeAnnouncement(bytes.subarray(0, bytes.length - 1), now), { code: 'PROTOCOL' });
  t.throws(() => decodeAnnouncement(bytes.subarray(0, 20), now), /too short/);
  const many = Array.from({ length: MAX_ANNOUNCED_ADDRESSES + 1 }, () => fields.addresses[0]!);
  t.throws(() => encodeAnnouncement(id, { ...fields, addresses: many }), { code: 'USAGE' });
  t.throws(
    () =>
      encodeAnnouncement(id, {
        ...fields,
        addresses: [{ host: 'example.com', port: 1, role: 'listen', source: 'local' }],
      }),
    /not an IP literal/,
  );
});
