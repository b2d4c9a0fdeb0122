// Pairing by invite: the code's format, the proofs, the store's single use and expiry, names.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  formatInviteCode,
  INVITE_SECRET_BYTES,
  InviteStore,
  MAX_OPEN_INVITES,
  pairProof,
  parseInviteCode,
  pickPeerName,
  proofMatches,
  suggestedName,
} from '../../src/home/pair-invite.js';

t.test('a code is 24 base32 characters in groups of four, and reads back in any case and spacing', async (t) => {
  for (let i = 0; i < 200; i++) {
    const secret = randomBytes(INVITE_SECRET_BYTES);
    const code = formatInviteCode(secret);
    t.match(code, /^[a-z2-7]{4}(-[a-z2-7]{4}){5}$/);
    t.same(Buffer.from(parseInviteCode(code)), secret);
    t.same(Buffer.from(parseInviteCode(` ${code.toUpperCase().replace(/-/g, ' ')} `)), secret);
  }
  t.equal(formatInviteCode(new Uint8Array(INVITE_SECRET_BYTES)), 'aaaa-aaaa-aaaa-aaaa-aaaa-aaaa');
  t.equal(formatInviteCode(new Uint8Array(INVITE_SECRET_BYTES).fill(0xff)), '7777-7777-7777-7777-7777-7777');
  for (const bad of ['', 'aaaa-aaaa', 'aaaa-aaaa-aaaa-aaaa-aaaa-aaa1', 'aaaa-aaaa-aaaa-aaaa-aaaa-aaaa-a']) {
    t.throws(() => parseInviteCode(bad), { code: 'USAGE', message: /is malformed/ }, JSON.stringify(bad));
  }
});

t.test('a proof binds the secret, the role and both keys', async (t) => {
  const secret = randomBytes(INVITE_SECRET_BYTES);
  const inviter = randomBytes(32);
  const joiner = randomBytes(32);
  const proof = pairProof(secret, 'joiner', inviter, joiner);
  t.equal(proof.length, 32);
  t.ok(proofMatches(pairProof(secret, 'joiner', inviter, joiner), proof));
  t.notOk(proofMatches(pairProof(secret, 'inviter', inviter, joiner), proof), 'the other role');
  t.notOk(proofMatches(pairProof(secret, 'joiner', joiner, inviter), proof), 'keys swapped');
  t.notOk(
    proofMatches(pairProof(randomBytes(INVITE_SECRET_BYTES), 'joiner', inviter, joiner), proof),
    'another secret',
  );
  t.notOk(
    proofMatches(pairProof(secret, 'joiner', inviter, randomBytes(32)), proof),
    'another joiner key (a relayed proof)',
  );
  t.notOk(proofMatches(proof, proof.subarray(0, 31)), 'a short proof');
});

t.test(
  'the store: an invite is redeemed once, confirms its joiner until it expires, and the file is private',
  async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'clawpeer-invites-'));
    t.teardown(() => rm(dir, { recursive: true, force: true }));
    const store = new InviteStore(join(dir, 'invites'));
    t.equal(await store.hasOpen(), false, 'no directory: nothing open');
    const now = 1_000_000;
    const { code, expiresAt } = await store.create({ name: 'bob', ttlMs: 60_000, nowMs: now });
    t.equal(expiresAt, now + 60_000);
    t.equal((await stat(join(dir, 'invites'))).mode & 0o777, 0o700);
    const files = await readdir(join(dir, 'invites'));
    t.equal(files.length, 1);
    t.equal((await stat(join(dir, 'invites', files[0] ?? ''))).mode & 0o777, 0o600);
    t.notOk(files[0]?.includes(code.replace(/-/g, '')), 'the file is not named by the secret');
    const secret = parseInviteCode(code);
    const matches = (s: Uint8Array): boolean => Buffer.from(s).equals(Buffer.from(secret));
    t.equal(await store.hasOpen(now + 59_999), true);
    t.equal(await store.redeem(() => false, now), undefined, 'a proof that matches nothing');
    t.equal(await store.redeem(matches, now + 60_000), undefined, 'expired');
    const again = await store.create({ ttlMs: 60_000, nowMs: now });
    const redeemed = await store.redeem(
      (s) => Buffer.from(s).equals(Buffer.from(parseInviteCode(again.code))),
      now + 1,
    );
    t.same(redeemed && Buffer.from(redeemed.secret), Buffer.from(parseInviteCode(again.code)));
    t.equal(redeemed?.name, undefined, 'no name set');
    const matchesAgain = (s: Uint8Array): boolean => Buffer.from(s).equals(Buffer.from(parseInviteCode(again.code)));
    t.equal(await store.redeem(matchesAgain, now + 2), undefined, 'single use');
    // A used invite stays for its joiner's retry (confirm) until it expires, and opens nothing.
    t.same((await store.confirm(matchesAgain, now + 3))?.secret, parseInviteCode(again.code), 'a used invite confirms');
    t.same((await store.confirm(matchesAgain, now + 4))?.secret, parseInviteCode(again.code), 'as often as asked');
    t.equal(await store.confirm(matches, now + 5), undefined, 'an open (unused) invite does not confirm');
    t.equal(await store.hasOpen(now + 60_001), false, 'the first one expired, the second is used');
    t.equal(await store.confirm(matchesAgain, now + 60_001), undefined, 'a used invite expires too');
    t.same(await readdir(join(dir, 'invites')), [], 'used and expired invites leave no file once expired');
    for (let i = 0; i < MAX_OPEN_INVITES; i++) await store.create({ ttlMs: 60_000, nowMs: now });
    await t.rejects(store.create({ ttlMs: 60_000, nowMs: now }), {
      code: 'USAGE',
      message: /invites are open already/,
    });
  },
);

t.test('names: the first free valid choice, else peer-<id end>, never one in use', async (t) => {
  const id = '12D3KooWFEGht6khjm71Yyzjmiwe8pr15zQe27wbjyz8JPbCTgwd';
  t.equal(pickPeerName(['bob', 'vm'], id, new Set(), 'laptop'), 'bob');
  t.equal(pickPeerName(['bob', 'vm'], id, new Set(['bob']), 'laptop'), 'vm');
  t.equal(pickPeerName([undefined, '', 'bad name!'], id, new Set(), 'laptop'), 'peer-JPbCTgwd');
  t.equal(pickPeerName(['bob'], id, new Set(['bob', 'peer-JPbCTgwd']), 'laptop'), 'peer-JPbCTgwd-2');
  // Nodes on this machine all suggest its host name: each gets its id's tail, so they differ.
  t.equal(pickPeerName(['vm'], id, new Set(), 'vm'), `vm-${id.slice(-6)}`);
  t.not(pickPeerName(['vm'], id, new Set(), 'vm'), pickPeerName(['vm'], `${id.slice(0, -6)}abcdef`, new Set(), 'vm'));
  t.equal(suggestedName('laptop.example.org'), 'laptop');
  t.equal(suggestedName('my host'), 'my-host');
  t.equal(suggestedName('---'), '');
});
