// A folder a paired peer shares with this node, which this node has not added, shows here as an
// offer (as Syncthing's "bob wants to share folder docs. Add?"): bob's folder service syncs docs
// with alice, alice's listener refuses it (SHARE_UNKNOWN) and keeps the offer
// (folders/folder-offers.ts); `status` and `folder list` show it with the command that accepts
// it. Once alice adds the folder, the offer is gone and the pair syncs.
import t from 'tap';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { allInSync, cli, hasText, startFolderNodes, statusOf, until, type FolderNode } from './folder-rig.js';
import { runCli } from './cli-harness.js';

const nodes = await startFolderNodes(['alice', 'bob']);
const [A, B] = nodes as [FolderNode, FolderNode];
t.teardown(async () => {
  for (const n of nodes) await n.listener.stop('SIGKILL');
});

type Offer = { peer: string; name?: string; folder: string; firstSeen: number; lastSeen: number };
const offersOn = async (n: FolderNode): Promise<Offer[]> => ((await statusOf(n))['offers'] ?? []) as Offer[];

t.test("a peer's folder not added here is an offer until it is added", async (t) => {
  await writeFile(path.join(B.dir, 'from-bob.txt'), 'hello from bob\n');
  await cli(B.home, ['folder', 'add', B.dir, '--id', 'docs', '--with', A.name]);
  await until(nodes, "alice's status showing bob's offer", async () => (await offersOn(A)).length > 0, 20_000);
  const [offer] = await offersOn(A);
  t.match(offer, { peer: B.id, name: 'bob', folder: 'docs' }, 'status --json: bob offers docs');
  t.ok((offer?.firstSeen ?? 0) <= (offer?.lastSeen ?? 0), 'first and last seen');

  const text = await runCli(['--home', A.home, 'status']);
  t.match(
    text.stdout,
    /folder offers:\n {2}bob offers folder docs \(since .+ ago\): clawpeer folder add DIR --id docs --with bob/,
    `status says so: ${text.stdout}`,
  );
  t.match(
    A.listener.stderr(),
    /INFO clawpeer:listen: bob offers folder docs: clawpeer folder add DIR --id docs --with bob/,
  );

  const list = await runCli(['--home', A.home, 'folder', 'list']);
  t.match(list.stdout, /no shared folders .*\nfolder offers:\n {2}bob offers folder docs/, list.stdout);
  const listed = await cli(A.home, ['folder', 'list']);
  t.match(listed, [{ event: 'folder-offer', peer: B.id, name: 'bob', folder: 'docs' }], 'folder list --json');
  t.same(await offersOn(B), [], 'bob has no offer: alice asked for nothing');

  const aliceDocs = path.join(path.dirname(A.dir), 'alice-docs');
  await cli(A.home, ['folder', 'add', aliceDocs, '--id', 'docs', '--with', B.name]);
  await until(
    nodes,
    "bob's file on alice and docs in sync",
    async () =>
      (await hasText(path.join(aliceDocs, 'from-bob.txt'), 'hello from bob\n')()) && (await allInSync(nodes, 'docs')),
    20_000,
  );
  t.same(await offersOn(A), [], 'the offer is gone once added');
  const after = await cli(A.home, ['folder', 'list']);
  t.same(
    after.filter((e) => e['event'] === 'folder-offer'),
    [],
    'folder list shows it no more',
  );
  t.notMatch((await runCli(['--home', A.home, 'status'])).stdout, /folder offers/);
});

t.test("a person's `clawpeer sync` of a share alice lacks is no offer", async (t) => {
  const mine = path.join(path.dirname(B.dir), 'bob-photos');
  await mkdir(mine);
  await writeFile(path.join(mine, 'p.jpg'), 'not a photo\n');
  // Run by bob's listener (his home's) or his CLI: no folder service's, and the request says so.
  const r = await runCli(['--home', B.home, 'sync', mine, `${A.name}:photos`]);
  t.not(r.code, 0, 'refused: alice has no share photos');
  t.match(r.stderr, /no share named "photos"/);
  // Alice's listener told the offers of the refusal before it answered (dispatch.ts): none now means none.
  t.same(
    (await offersOn(A)).filter((o) => o.folder === 'photos'),
    [],
    'before, alice showed "bob offers folder photos"',
  );
  t.notMatch(A.listener.stderr(), /bob offers folder photos/);
});
