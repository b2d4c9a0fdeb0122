// A paired peer asking for a share that does not exist is told the names it could list, not
// every share and shared folder of the listener: a folder shared with other peers only (or
// paused for them) is none of its business. serveList's share listing already filtered them.
import t from 'tap';
import { findShare, type Share } from '../../src/home/shares.js';
import { isClawpeerError } from '../../src/errors.js';

const mallory = 'm'.repeat(52);
const bob = 'b'.repeat(52);
const shares: Share[] = [
  { name: 'inbox', dir: '/srv/inbox', readOnly: false },
  { name: 'bob-taxes', dir: '/srv/taxes', readOnly: false, allow: [bob] },
  { name: 'shared', dir: '/srv/shared', readOnly: false, allow: [bob, mallory] },
];

function refusal(name: string, peer: string): string {
  try {
    findShare(shares, name, peer);
  } catch (err) {
    if (isClawpeerError(err, 'SHARE_UNKNOWN')) return err.message;
    throw err;
  }
  throw new Error('not refused');
}

t.test("an unknown share's refusal names only the shares the peer may use", async (t) => {
  const told = refusal('guess', mallory);
  t.notMatch(told, /bob-taxes/, "another peer's share is not named");
  t.match(told, /shares: inbox, shared\)/);
  t.match(refusal('guess', bob), /shares: inbox, bob-taxes, shared\)/, 'a peer on the allow list sees it');
});

t.test('with no share of its own, the peer is told none', async (t) => {
  t.match(refusal('guess', 'c'.repeat(52)), /shares: inbox\)/);
  const only = [{ name: 'bob-taxes', dir: '/srv/taxes', readOnly: false, allow: [bob] }];
  t.throws(() => findShare(only, 'guess', mallory), /shares: none\)/);
});
