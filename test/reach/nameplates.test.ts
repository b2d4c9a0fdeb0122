// Nameplates through a real rendezvous on 127.0.0.1: a claim, a second node refused with
// PEER_BUSY, a lookup that hands back the holder's verified announcement, release by the holder.
import t from 'tap';
import { generateIdentity } from '../../src/crypto/identity.js';
import { silentLogger } from '../../src/logger.js';
import { claimNameplate, lookupNameplate, releaseNameplate } from '../../src/reach/nameplates.js';
import { RendezvousNameplateDirectory } from '../../src/reach/rendezvous-nameplates.js';
import { startRendezvousServer } from '../../src/reach/rendezvous-server.js';

const server = await startRendezvousServer({ listen: { host: '127.0.0.1', port: 0 }, log: silentLogger });
t.teardown(() => server.close());
const rendezvous = server.address;

t.test('claim, busy, lookup, release', async (t) => {
  const alice = generateIdentity();
  const bob = generateIdentity();
  const addresses = [{ host: '192.0.2.5', port: 7700, role: 'listen' as const, source: 'local' as const }];
  await claimNameplate({ identity: alice, rendezvous, nameplate: 17, fields: { addresses } });
  await t.rejects(claimNameplate({ identity: bob, rendezvous, nameplate: 17 }), {
    code: 'PEER_BUSY',
    message: /nameplate 17 is taken/,
  });
  const found = await lookupNameplate({ rendezvous, nameplate: 17 });
  t.equal(found?.nodeId, alice.nodeId, 'the holder, verified');
  t.same(found?.addresses, addresses);
  t.equal(await lookupNameplate({ rendezvous, nameplate: 18 }), undefined, 'an unclaimed one');
  await releaseNameplate({ identity: bob, rendezvous, nameplate: 17 });
  t.equal(
    (await lookupNameplate({ rendezvous, nameplate: 17 }))?.nodeId,
    alice.nodeId,
    'another node cannot release it',
  );
  await releaseNameplate({ identity: alice, rendezvous, nameplate: 17 });
  t.equal(await lookupNameplate({ rendezvous, nameplate: 17 }), undefined, 'released');
  await claimNameplate({ identity: bob, rendezvous, nameplate: 17 });
  t.equal((await lookupNameplate({ rendezvous, nameplate: 17 }))?.nodeId, bob.nodeId, 'free for the next');
});

t.test('a held nameplate whose holder the rendezvous cannot reach is not "nobody holds it"', async (t) => {
  // The inviter's CLI claimed the number here, but its listener never registered with this
  // rendezvous: no address to dial, nothing to relay to. The joiner is told so.
  const inviter = generateIdentity();
  const joiner = generateIdentity();
  await claimNameplate({ identity: inviter, rendezvous, nameplate: 23 });
  t.teardown(() => releaseNameplate({ identity: inviter, rendezvous, nameplate: 23 }));
  const directory = new RendezvousNameplateDirectory({ identity: joiner, rendezvous, log: silentLogger });
  await t.rejects(directory.lookup(23, {}), {
    code: 'UNREACHABLE',
    message: new RegExp(`says node ${inviter.nodeId} holds nameplate 23, but knows no address of it .*--rendezvous`),
  });
  t.same(await directory.lookup(24, {}), [], 'a number nobody holds: no candidates, no error');
});
