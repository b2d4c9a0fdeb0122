// Folder offers (folders/folder-offers.ts): a paired peer's refused sync of a folder this home
// has not added is an offer, logged once; bounded per peer and in all; gone once the folder is
// in config.json, the peer unpaired, or not seen for OFFER_TTL_MS; kept across restarts.
import t from 'tap';
import type { Test } from 'tap';
import { readFile, writeFile } from 'node:fs/promises';
import { ClawpeerError } from '../../src/errors.js';
import { createLogger } from '../../src/logger.js';
import type { FolderConfig } from '../../src/home/folders-config.js';
import type { PeerEntry } from '../../src/home/peer-store.js';
import {
  FolderOffers,
  folderOffersFile,
  LAST_SEEN_WRITE_STEP_MS,
  MAX_OFFERS,
  MAX_OFFERS_PER_PEER,
  OFFER_TTL_MS,
  readFolderOffers,
} from '../../src/folders/folder-offers.js';

const unknown = new ClawpeerError('SHARE_UNKNOWN', 'no share named "docs" here');
const pair = (n: number): PeerEntry => ({ id: `${'p'.repeat(51)}${n}`, name: `peer${n}`, addedAt: '' });
const folder = (id: string, ...peers: string[]): FolderConfig => ({
  id,
  path: `/f/${id}`,
  with: peers,
  mode: 'two-way',
  versioning: 'keep-last:5',
  paused: false,
  intervalS: 60,
});
const T0 = 1_700_000_000_000;

async function offersIn(t: Test): Promise<{ offers: FolderOffers; home: string; lines: string[] }> {
  const home = t.testdir();
  const lines: string[] = [];
  const offers = await FolderOffers.load(
    home,
    createLogger('listen', 1, (l) => lines.push(l)),
  );
  return { offers, home, lines };
}

t.test('a paired peer asking for a folder not here is an offer, logged once', async (t) => {
  const { offers, home, lines } = await offersIn(t);
  const bob = pair(1);
  offers.refused(bob.id, 'docs', unknown, T0);
  t.same(offers.list(T0), [], 'nothing before the folder service read config.json and peers.json');
  offers.follow([folder('photos', 'peer1')], [bob], T0);
  offers.refused(bob.id, 'docs', unknown, T0 + 1);
  offers.refused(bob.id, 'docs', unknown, T0 + 5_000);
  offers.refused(bob.id, 'photos', unknown, T0 + 5_000); // has it (paused, say): no offer
  offers.refused(bob.id, 'notes', new ClawpeerError('SHARE_FORBIDDEN', 'x'), T0); // another refusal
  offers.refused(bob.id, '../etc', unknown, T0); // not a folder id
  offers.refused(pair(2).id, 'docs', unknown, T0); // not paired
  t.same(offers.list(T0 + 6_000), [
    { peer: bob.id, name: 'peer1', folder: 'docs', firstSeen: T0 + 1, lastSeen: T0 + 5_000 },
  ]);
  const logged = lines.filter((l) => l.includes('offers folder'));
  t.equal(logged.length, 1, 'logged once');
  t.match(logged[0], /INFO listen: peer1 offers folder docs: clawpeer folder add DIR --id docs --with peer1/);
  await offers.flushed();
  t.same(
    (await readFolderOffers(home)).map((o) => o.folder),
    ['docs'],
    'kept in the home',
  );
});

t.test("a peer's offers are bounded, and so are all offers together", async (t) => {
  const { offers, home } = await offersIn(t);
  const pairs = Array.from({ length: 8 }, (_, i) => pair(i));
  offers.follow([], pairs, T0);
  const hostile = pairs[0] as PeerEntry;
  for (let i = 0; i < 1000; i++) offers.refused(hostile.id, `f${i}`, unknown, T0 + i);
  t.equal(offers.list(T0 + 1000).length, MAX_OFFERS_PER_PEER, `at most ${MAX_OFFERS_PER_PEER} of one peer`);
  t.same(
    offers.list(T0 + 1000).map((o) => o.folder),
    Array.from({ length: MAX_OFFERS_PER_PEER }, (_, i) => `f${i}`),
    'the first ones stay: none is pushed out',
  );
  for (const p of pairs.slice(1)) for (let i = 0; i < 100; i++) offers.refused(p.id, `g${i}`, unknown, T0 + 2000);
  t.equal(offers.list(T0 + 3000).length, MAX_OFFERS, `at most ${MAX_OFFERS} in all`);
  offers.refused(pairs[7]?.id ?? '', 'late', unknown, T0 + 3000);
  t.notOk(
    offers.list(T0 + 3000).some((o) => o.folder === 'late'),
    'a new one past the bound is dropped',
  );
  await offers.flushed();
  t.equal((await readFolderOffers(home)).length, MAX_OFFERS, 'the file holds no more');
});

t.test('an offer goes once the folder is added, the peer unpaired, or unseen for a day', async (t) => {
  const { offers } = await offersIn(t);
  const [bob, carol] = [pair(1), pair(2)];
  offers.follow([], [bob, carol], T0);
  offers.refused(bob.id, 'docs', unknown, T0);
  offers.refused(bob.id, 'notes', unknown, T0);
  offers.refused(carol.id, 'docs', unknown, T0);
  offers.refused(carol.id, 'old', unknown, T0);
  offers.refused(carol.id, 'docs', unknown, T0 + OFFER_TTL_MS - 10); // seen again: stays
  offers.follow([folder('notes', 'peer1')], [bob, carol], T0 + 1);
  t.same(
    offers.list(T0 + 2).map((o) => `${o.name}:${o.folder}`),
    ['peer1:docs', 'peer2:docs', 'peer2:old'],
    'notes was added',
  );
  offers.follow([folder('notes', 'peer1')], [carol], T0 + 3);
  t.same(
    offers.list(T0 + 4).map((o) => `${o.name}:${o.folder}`),
    ['peer2:docs', 'peer2:old'],
    "bob's went with bob",
  );
  t.same(
    offers.list(T0 + OFFER_TTL_MS).map((o) => o.folder),
    ['docs'],
    'old was not seen for a day',
  );
  await offers.flushed();
});

t.test('kept across restarts; retries move lastSeen in the file only now and then', async (t) => {
  const { offers, home } = await offersIn(t);
  const bob = pair(1);
  offers.follow([], [bob], T0);
  offers.refused(bob.id, 'docs', unknown, T0);
  await offers.flushed();
  offers.refused(bob.id, 'docs', unknown, T0 + 1000);
  await offers.flushed();
  t.equal((await readFolderOffers(home))[0]?.lastSeen, T0, 'a retry a second later is no write');
  offers.refused(bob.id, 'docs', unknown, T0 + LAST_SEEN_WRITE_STEP_MS);
  await offers.flushed();
  t.equal((await readFolderOffers(home))[0]?.lastSeen, T0 + LAST_SEEN_WRITE_STEP_MS, 'ten minutes later is');
  const lines: string[] = [];
  const again = await FolderOffers.load(
    home,
    createLogger('listen', 1, (l) => lines.push(l)),
  );
  again.follow([], [bob], T0 + LAST_SEEN_WRITE_STEP_MS);
  again.refused(bob.id, 'docs', unknown, T0 + LAST_SEEN_WRITE_STEP_MS + 1);
  t.same(
    again.list(T0 + LAST_SEEN_WRITE_STEP_MS + 2).map((o) => [o.folder, o.firstSeen]),
    [['docs', T0]],
    'read back',
  );
  t.same(lines, [], 'not logged again after a restart');
});

t.test('a broken or hostile file reads as what is well-formed in it, capped', async (t) => {
  const home = t.testdir();
  t.same(await readFolderOffers(home), [], 'none');
  await writeFile(folderOffersFile(home), '{nope');
  t.same(await readFolderOffers(home), [], 'not JSON');
  const many = Array.from({ length: 200 }, (_, i) => ({
    peer: pair(i % 20).id,
    folder: `f${i}`,
    firstSeen: T0,
    lastSeen: T0,
  }));
  await writeFile(
    folderOffersFile(home),
    JSON.stringify({
      version: 1,
      offers: [{ peer: pair(1).id, folder: 'a\u202eb', firstSeen: T0, lastSeen: T0 }, { peer: 5 }, null, ...many],
    }),
  );
  const read = await readFolderOffers(home);
  t.equal(read.length, MAX_OFFERS, 'capped');
  t.notOk(
    read.some((o) => o.folder.includes('\u202e')),
    'a name that is no folder id is left out',
  );
  t.ok((await readFile(folderOffersFile(home), 'utf8')).length > 0);
});
