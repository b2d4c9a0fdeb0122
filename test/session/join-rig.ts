// An in-process listener on loopback with one paired client identity, for the striping tests
// (session-join.test.ts and the slow lossy one).
import type { Test } from 'tap';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { generateIdentity } from '../../src/crypto/identity.js';
import { resolveConfig } from '../../src/home/config.js';
import { PeerStore, type PeerEntry } from '../../src/home/peer-store.js';
import type { ResolvedPeer } from '../../src/home/peer-resolve.js';
import { NodeServer } from '../../src/listener/server.js';
import { serveSession } from '../../src/listener/dispatch.js';
import { silentLogger } from '../../src/logger.js';
import { push } from '../../src/push-pull/transfer-client.js';
import type { PeerSession } from '../../src/session/session.js';
import { pingPeer } from '../../src/session/ping.js';
import { connectTransport } from '../../src/session/dialer.js';
import type { JoinContext } from '../../src/session/session-join.js';

class FixedPeers extends PeerStore {
  entries: PeerEntry[] = [];
  override list(): Promise<PeerEntry[]> {
    return Promise.resolve([...this.entries]);
  }
}

export const config = resolveConfig({ transport: 'quic' });

export async function rig(
  t: Test,
): Promise<{ server: NodeServer; peer: ResolvedPeer; identity: ReturnType<typeof generateIdentity>; inbox: string }> {
  const work = await mkdtemp(path.join(tmpdir(), 'clawpeer-join-'));
  const listenerId = generateIdentity();
  const identity = generateIdentity();
  const peers = new FixedPeers(path.join(work, 'peers.json'));
  peers.entries = [{ id: identity.nodeId, name: 'bob', addedAt: '' }];
  const inbox = path.join(work, 'inbox');
  await mkdir(inbox);
  const shares = [{ name: 'inbox', dir: inbox, readOnly: false }];
  const server = await NodeServer.start(
    { identity: listenerId, peers, shares, host: '127.0.0.1', port: 0, config, log: silentLogger },
    (session, signal) =>
      serveSession(session, { shares, config, log: silentLogger, nodeId: listenerId.nodeId }, signal),
  );
  t.teardown(() => server.close());
  const peer: ResolvedPeer = {
    id: listenerId.nodeId,
    name: 'alice',
    publicKey: listenerId.publicKey,
    address: { host: '127.0.0.1', port: server.port },
  };
  return { server, peer, identity, inbox };
}

export function joinContext(identity: ReturnType<typeof generateIdentity>, peer: ResolvedPeer): JoinContext {
  const address = peer.address ?? { host: '127.0.0.1', port: 0 };
  return {
    connect: () => connectTransport({ identity, address, label: peer.name, config, log: silentLogger }),
    label: peer.name,
    handshakeTimeoutMs: 5_000,
    log: silentLogger,
  };
}

/** True when one ping gets its pong. */
export async function answers(session: PeerSession): Promise<boolean> {
  for await (const r of pingPeer(session, { count: 1, intervalMs: 0, timeoutMs: 5_000 })) return r.seq === 1;
  return false;
}

/** Pushes a directory `name` holding `files` into the share: it lands as inbox/NAME. */
export async function pushTree(session: PeerSession, name: string, files: Record<string, Buffer>): Promise<void> {
  const src = path.join(await mkdtemp(path.join(tmpdir(), 'clawpeer-join-src-')), name);
  await mkdir(src);
  for (const [file, bytes] of Object.entries(files)) await writeFile(path.join(src, file), bytes);
  await push({
    session,
    share: 'inbox',
    remotePath: '',
    localPath: src,
    force: false,
    streams: 4,
    window: 16,
    idleTimeoutMs: 10_000,
    log: silentLogger,
    signal: new AbortController().signal,
  });
}
