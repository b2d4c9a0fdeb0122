// Which pairs the folder service watches (peer-share-watches.ts): the watch itself is the e2e
// test's (e2e/folder-hub-watch); here only the bookkeeping (each watch's dial fails at once:
// its peer resolves to nothing, and a failed watch waits RETRY_MS before it tries again).
import t from 'tap';
import {
  MAX_WATCHES_PER_PEER,
  PeerShareWatches,
  type PeerShareWatchesOptions,
} from '../../src/folders/peer-share-watches.js';

/** A peer store that knows no one: a watch's dial fails before it sends anything. */
const unused = {
  peers: { find: () => Promise.resolve(undefined) },
  log: { child: () => ({ info: () => undefined, debug: () => undefined }) },
} as unknown as PeerShareWatchesOptions;

t.test('a synced pair is watched unless its peer syncs the folder here itself', async (t) => {
  const w = new PeerShareWatches(unused, () => undefined);
  t.teardown(() => w.close());
  w.synced('docs', 'hub');
  w.synced('docs', 'laptop');
  w.synced('docs', 'hub'); // once
  t.same(w.watched(), [
    ['docs', 'hub'],
    ['docs', 'laptop'],
  ]);
  w.selfSyncing('docs', 'laptop');
  t.same(w.watched(), [['docs', 'hub']], "the laptop's folder service syncs here: its watch ends");
  w.synced('docs', 'laptop');
  t.same(w.watched(), [['docs', 'hub']], 'and a later sync with it starts none');
});

t.test('a folder forgotten (removed, changed) drops its watches and what it knew', async (t) => {
  const w = new PeerShareWatches(unused, () => undefined);
  t.teardown(() => w.close());
  w.synced('docs', 'hub');
  w.synced('music', 'hub');
  w.selfSyncing('docs', 'laptop');
  w.forget('docs');
  t.same(w.watched(), [['music', 'hub']]);
  w.synced('docs', 'laptop');
  t.same(
    w.watched(),
    [
      ['music', 'hub'],
      ['docs', 'laptop'],
    ],
    'the laptop may run no folder service for the new docs: watched again',
  );
});

t.test('at most MAX_WATCHES_PER_PEER watches per peer (each is a session)', async (t) => {
  const w = new PeerShareWatches(unused, () => undefined);
  t.teardown(() => w.close());
  for (let i = 0; i < MAX_WATCHES_PER_PEER + 3; i++) w.synced(`f${i}`, 'hub');
  w.synced('f0', 'other');
  t.equal(w.watched().filter(([, p]) => p === 'hub').length, MAX_WATCHES_PER_PEER);
  t.equal(w.watched().filter(([, p]) => p === 'other').length, 1, "another peer's budget is its own");
});

t.test('closed: nothing more is watched', async (t) => {
  const w = new PeerShareWatches(unused, () => undefined);
  w.synced('docs', 'hub');
  w.close();
  t.same(w.watched(), []);
  w.synced('docs', 'hub');
  t.same(w.watched(), []);
});
