// WatchShare end to end in process: a real NodeServer with serveSession, and the client side
// (share-watch-client.ts) dialling it over loopback QUIC. A change in the share is told once per
// burst, temp files are not changes, an unknown share is refused, a watching session outlives
// the listener's session idle timeout, the subscription ends with the session, and a
// receive-only folder's changes are not told.
import t from 'tap';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { isClawpeerError } from '../../src/errors.js';
import { silentLogger } from '../../src/logger.js';
import { resolveConfig } from '../../src/home/config.js';
import { loadIdentity } from '../../src/home/identity-store.js';
import { TEMP_FILE_PREFIX } from '../../src/store/internal-names.js';
import { PeerStore } from '../../src/home/peer-store.js';
import { resolvePeer } from '../../src/home/peer-resolve.js';
import { NodeServer } from '../../src/listener/server.js';
import { SHARE_CHANGED_MAX_DELAY_MS, SHARE_CHANGED_QUIET_MS } from '../../src/folder-sync/share-watch-service.js';
import { watchPeerShare } from '../../src/folder-sync/share-watch-client.js';
import { ResidentFolders } from '../../src/folder-sync/synced-folder.js';
import { serveSession } from '../../src/listener/dispatch.js';
import { newHome, sleep } from '../fault/fault-harness.js';

const [a, b] = await Promise.all([newHome('watch-a'), newHome('watch-b')]);
const shareDir = path.join(a.home, 'docs');
await mkdir(shareDir, { recursive: true });
const heldDir = path.join(a.home, 'held');
await mkdir(heldDir, { recursive: true });
const shares = [
  { name: 'docs', dir: shareDir, readOnly: false },
  { name: 'held', dir: heldDir, readOnly: false, receiveOnly: true },
];
await new PeerStore(path.join(a.home, 'peers.json')).add(b.id, 'bob');
// A session idle timeout far below the test's waits: a watching session must outlive it.
const config = resolveConfig({ transport: 'quic', sessionIdleTimeoutMs: 300 });
const identityA = await loadIdentity(path.join(a.home, 'identity.key'));
const resident = new ResidentFolders({ log: silentLogger });
const server = await NodeServer.start(
  {
    identity: identityA,
    peers: new PeerStore(path.join(a.home, 'peers.json')),
    shares,
    host: '127.0.0.1',
    port: 0,
    config,
    log: silentLogger,
  },
  (session, signal) =>
    serveSession(session, { shares, config, log: silentLogger, nodeId: identityA.nodeId, resident }, signal),
);
t.teardown(async () => {
  await server.close();
  await resident.close();
});
const peers = new PeerStore(path.join(b.home, 'peers.json'));
await peers.add(a.id, 'alice', `127.0.0.1:${server.port}`);
const identityB = await loadIdentity(path.join(b.home, 'identity.key'));
const peer = await resolvePeer(peers, 'alice', undefined);

/** Starts a watch of `share`; resolves `watching` once the listener confirmed it. */
function watch(share: string, at = peer) {
  const stop = new AbortController();
  let changes = 0;
  let watching!: () => void;
  const confirmed = new Promise<void>((resolve) => (watching = resolve));
  const ended = watchPeerShare({
    identity: identityB,
    peer: at,
    config,
    share,
    log: silentLogger,
    signal: stop.signal,
    onWatching: watching,
    onChange: () => changes++,
  });
  return { confirmed, ended, stop: () => stop.abort(), changes: () => changes };
}

async function until(what: string, ok: () => boolean, ms = 10_000): Promise<boolean> {
  for (let waited = 0; waited < ms; waited += 20) {
    if (ok()) return true;
    await sleep(20);
  }
  t.fail(`${what} within ${ms} ms`);
  return false;
}

t.test('a burst of changes in the share is told once; temp files are not changes', async (t) => {
  const w = watch('docs');
  await w.confirmed;
  await sleep(800); // past the session idle timeout (300 ms): still open
  t.equal(w.changes(), 0, 'nothing changed yet');
  for (let i = 0; i < 5; i++) await writeFile(path.join(shareDir, `burst-${i}.txt`), `${i}\n`);
  await until('a change notice', () => w.changes() >= 1);
  await sleep(SHARE_CHANGED_QUIET_MS + 500);
  t.equal(w.changes(), 1, 'five files written at once: one notice');
  await writeFile(path.join(shareDir, `${TEMP_FILE_PREFIX}publishing`), 'x');
  await sleep(SHARE_CHANGED_QUIET_MS + 500);
  t.equal(w.changes(), 1, 'a temp file of a publish in progress is not a change');
  await writeFile(path.join(shareDir, 'later.txt'), 'later\n');
  await until('a second notice', () => w.changes() >= 2);
  w.stop();
  await t.rejects(w.ended, 'the watch ends with its signal');
});

t.test('a steady stream of changes is still told within the maximum delay', async (t) => {
  const w = watch('docs');
  await w.confirmed;
  const started = Date.now();
  let i = 0;
  while (w.changes() === 0 && Date.now() - started < SHARE_CHANGED_MAX_DELAY_MS + 3_000) {
    await writeFile(path.join(shareDir, 'steady.txt'), `${i++}\n`);
    await sleep(SHARE_CHANGED_QUIET_MS / 3);
  }
  t.ok(w.changes() >= 1, `told while the writes went on (${i} writes, ${Date.now() - started} ms)`);
  w.stop();
  await w.ended.catch(() => undefined);
});

t.test('a receive-only folder is watched but its changes are never told', async (t) => {
  const w = watch('held');
  await w.confirmed;
  await writeFile(path.join(heldDir, 'local.txt'), 'an edit that stays here\n');
  await writeFile(path.join(shareDir, 'other.txt'), 'a change of another share\n');
  await sleep(SHARE_CHANGED_MAX_DELAY_MS + 500);
  t.equal(w.changes(), 0, 'no notice: the peer learns nothing of the local edit');
  w.stop();
  await w.ended.catch(() => undefined);
});

t.test('an unknown share is refused with an error naming it', async (t) => {
  const w = watch('nope');
  const err = await w.ended.then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(isClawpeerError(err), 'a ClawpeerError');
  t.match((err as Error).message, /no share named "nope"/);
});

t.test('a listener without resident folders watches the share itself, for the session only', async (t) => {
  const plain = await NodeServer.start(
    {
      identity: identityA,
      peers: new PeerStore(path.join(a.home, 'peers.json')),
      shares,
      host: '127.0.0.1',
      port: 0,
      config,
      log: silentLogger,
    },
    (session, signal) => serveSession(session, { shares, config, log: silentLogger, nodeId: identityA.nodeId }, signal),
  );
  t.teardown(() => plain.close());
  const w = watch('docs', { ...peer, address: { ...peer.address!, port: plain.port } });
  await w.confirmed;
  await writeFile(path.join(shareDir, 'plain.txt'), 'plain\n');
  await until('a notice from its own watcher', () => w.changes() >= 1);
  w.stop();
  await w.ended.catch(() => undefined);
});
