// Concurrent invite redemptions are all kept, under distinct names (issue 27, item 6): the
// listener read peers.json, picked a name and wrote it back without a lock, so of four joiners
// redeeming at once (all suggesting the same host name) each got PairAccept but one was kept.
import t from 'tap';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createIdentity } from '../../src/home/identity-store.js';
import { InviteStore } from '../../src/home/pair-invite.js';
import { PeerStore } from '../../src/home/peer-store.js';
import { runCli, startListener } from './state-kit.js';

async function home(label: string): Promise<{ home: string; id: string }> {
  const dir = await mkdtemp(path.join(tmpdir(), `clawpeer-${label}-`));
  return { home: dir, id: (await createIdentity(path.join(dir, 'identity.key'))).nodeId };
}

t.test('four joiners redeeming invites at once are all pinned, each under its own name', async (t) => {
  const JOINERS = 4;
  const a = await home('pairs-a');
  const joiners = await Promise.all(Array.from({ length: JOINERS }, (_, i) => home(`pairs-j${i}`)));
  const invites = new InviteStore(path.join(a.home, 'invites'));
  const codes: string[] = [];
  for (let i = 0; i < JOINERS; i++) codes.push((await invites.create({ ttlMs: 120_000 })).code);
  const listener = await startListener(a.home);
  t.teardown(() => listener.stop('SIGKILL'));
  const addr = `127.0.0.1:${listener.port}`;
  const joined = await Promise.all(
    joiners.map((j, i) =>
      runCli(['--home', j.home, 'pair', 'join', codes[i] ?? '', '--addr', addr, '--name', 'alice']),
    ),
  );
  for (const [i, r] of joined.entries()) t.equal(r.code, 0, `joiner ${i} was accepted: ${r.stderr}`);
  const pinned = await new PeerStore(path.join(a.home, 'peers.json')).list();
  t.same(new Set(pinned.map((p) => p.id)), new Set(joiners.map((j) => j.id)), 'the listener kept every joiner');
  t.equal(
    new Set(pinned.map((p) => p.name)).size,
    JOINERS,
    `under distinct names: ${pinned.map((p) => p.name).join(', ')}`,
  );
  for (const j of joiners)
    t.equal(
      (await runCli(['--home', j.home, 'ping', 'alice', '--count', '1'])).code,
      0,
      'each joiner can talk to the listener',
    );
});
