// A connection that starts on the relay moves to a punched path while a push is in flight: the
// first punch is held back past relayAfterMs (test hook), so the dial starts relayed; the
// relayed candidate's background punch then opens a hole and both traversal sockets move the
// session's datagrams there, below quinn (same loopback ports, so quinn sees no migration).
// The same QUIC connection and session carry on: pings answered before and after, the pushed bytes
// land intact, and both sides report 'punched' afterwards.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseHostPort } from '../../src/home/address.js';
import { silentLogger } from '../../src/logger.js';
import { push } from '../../src/push-pull/transfer-client.js';
import { pingPeer } from '../../src/session/ping.js';
import { dialThrough, startReachLab } from './reach-kit.js';

/** The relay's default rate cap (4 MiB/s per node) makes this take >1 s relayed; direct, ~50 ms. */
const FILE_BYTES = 16 * 1024 * 1024;
const UPGRADE_AFTER_MS = 1_500;

const lab = await startReachLab();
t.teardown(() => lab.close());
const work = await mkdtemp(path.join(tmpdir(), 'clawpeer-relay-upgrade-'));
t.teardown(() => rm(work, { recursive: true, force: true }));

const listenerPaths = (): string[] =>
  lab.listener.connectedPeers().map((p) => lab.reach.pathOf(parseHostPort(p.addr)) ?? 'direct');

t.test('relayed, then punched mid-push: same session, bytes intact, both sides say punched', async (t) => {
  const d = await dialThrough(lab, 'traversal', {
    relayAfterMs: 100,
    firstPunchAfterMs: 60_000,
    upgradeEveryMs: UPGRADE_AFTER_MS,
    upgradeTries: 1,
  });
  t.teardown(() => d.close());
  t.equal(d.candidate.path(), 'relayed', 'the dial starts on the relay');
  for (let i = 0; i < 50 && listenerPaths().length === 0; i++) await new Promise((r) => setTimeout(r, 20));
  t.same(listenerPaths(), ['relayed'], 'the listener sees it relayed');
  const since = lab.listener.connectedPeers()[0]?.since;

  let closed = false;
  void d.session.connection.closed.then(() => (closed = true));
  const pings = async (): Promise<number> => {
    let n = 0;
    for await (const _ of pingPeer(d.session, { count: 3, intervalMs: 0, timeoutMs: 3_000 })) n++;
    return n;
  };
  t.equal(await pings(), 3, 'pings answered on the relay');

  const relayedBefore = lab.rendezvous.counters().relayedBytes;
  const bytes = randomBytes(FILE_BYTES);
  const src = path.join(work, 'moved.bin');
  await writeFile(src, bytes);
  const seen: string[] = [];
  const note = (): void => {
    const p = d.candidate.path(); // the session the kit dials reads it from here
    if (seen.at(-1) !== p) seen.push(p);
  };
  note();
  await push({
    session: d.session,
    share: 'inbox',
    remotePath: '',
    localPath: src,
    force: true,
    streams: 2,
    window: 16,
    idleTimeoutMs: 10_000,
    log: silentLogger,
    signal: new AbortController().signal,
    onProgress: note,
  });
  note();
  const relayed = lab.rendezvous.counters().relayedBytes - relayedBefore;

  t.ok(
    Buffer.compare(await readFile(path.join(lab.inbox, 'moved.bin')), bytes) === 0,
    'the pushed file landed byte for byte',
  );
  t.same(seen, ['relayed', 'punched'], 'the dial side saw the path change during the push');
  t.ok(
    relayed > 1024 * 1024 && relayed < FILE_BYTES,
    `part of the push went through the relay (${relayed} bytes), the rest did not`,
  );
  t.equal(d.candidate.path(), 'punched');
  t.same(listenerPaths(), ['punched'], 'the listener sees the same connection punched');
  t.equal(lab.listener.connectedPeers()[0]?.since, since, "the listener's session is the one from the start");
  t.notOk(closed, 'the connection never closed');

  // And it keeps working after the move, without the relay.
  const after = lab.rendezvous.counters().relayedBytes;
  t.equal(await pings(), 3, 'pings answered after the move');
  t.equal(lab.rendezvous.counters().relayedBytes, after, 'nothing goes through the relay any more');
});
