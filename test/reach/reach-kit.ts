// A rendezvous, a listener with its traversal socket, and a dialer, all in this process on
// 127.0.0.1: what the reach tests and the hop bench start. The dial takes the first candidate a
// rendezvous source offers and dials it as `clawpeer` does (dialPeer: QUIC, pinned key, Hello/Welcome).
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { generateIdentity, type Identity } from '../../src/crypto/identity.js';
import { silentLogger, type Logger } from '../../src/logger.js';
import { resolveConfig, type NodeConfig } from '../../src/home/config.js';
import { PeerStore } from '../../src/home/peer-store.js';
import { Listener } from '../../src/listener/listener.js';
import { dialPeer } from '../../src/session/dialer.js';
import type { PeerSession } from '../../src/session/session.js';
import { startListenerReach, type ListenerReach } from '../../src/reach/listener-reach.js';
import { rendezvousSourcesFor, type RendezvousSourcesOptions } from '../../src/reach/rendezvous-paths.js';
import {
  startRendezvousServer,
  type RendezvousServer,
  type RendezvousServerOptions,
} from '../../src/reach/rendezvous-server.js';
import type { DialCandidate, PathSource, PeerToReach } from '../../src/reach/paths.js';
import type { HostPort } from '../../src/transport/types.js';

export interface ReachLab {
  readonly rendezvous: RendezvousServer;
  readonly listener: Listener;
  readonly reach: ListenerReach;
  readonly listenerId: Identity;
  readonly dialerId: Identity;
  readonly inbox: string;
  readonly peer: PeerToReach;
  readonly config: NodeConfig;
  close(): Promise<void>;
}

export async function startReachLab(
  o: { log?: Logger; config?: Partial<Record<string, unknown>>; tamper?: RendezvousServerOptions['tamper'] } = {},
): Promise<ReachLab> {
  const log = o.log ?? silentLogger;
  const dir = await mkdtemp(path.join(tmpdir(), 'clawpeer-reach-'));
  const inbox = await realpath(dir);
  const listenerId = generateIdentity();
  const dialerId = generateIdentity();
  const peers = new PeerStore(path.join(dir, 'peers.json'));
  await peers.add(dialerId.nodeId, 'dialer');
  const config = resolveConfig({ transport: 'quic', ...o.config });
  const rendezvous = await startRendezvousServer({
    listen: { host: '127.0.0.1', port: 0 },
    log: log.child('rendezvous'),
    ...(o.tamper ? { tamper: o.tamper } : {}),
  });
  // As `clawpeer listen` wires it: the server asks the reach (started once the server is bound) for paths.
  let late: ListenerReach | undefined;
  const listener = await Listener.start({
    identity: listenerId,
    peers,
    shares: [{ name: 'inbox', dir: inbox, readOnly: false }],
    host: '127.0.0.1',
    port: 0,
    config,
    log: log.child('listener'),
    pathOf: (remote) => late?.pathOf(remote),
  });
  const reach = (late = await startListenerReach({
    identity: listenerId,
    rendezvous: rendezvous.address,
    bound: listener.bound,
    log: log.child('reach'),
    muxHost: '127.0.0.1',
  }));
  await reach.registered;
  return {
    rendezvous,
    listener,
    reach,
    listenerId,
    dialerId,
    inbox,
    config,
    peer: { id: listenerId.nodeId, publicKey: listenerId.publicKey, name: 'listener' },
    close: async () => {
      await listener.close();
      await reach.close();
      await rendezvous.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The first candidate `source` finds for `peer` within `timeoutMs`. */
export async function firstCandidate(source: PathSource, peer: PeerToReach, timeoutMs = 5_000): Promise<DialCandidate> {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), timeoutMs);
  try {
    for await (const c of source.find(peer, ac.signal)) return c;
  } finally {
    clearTimeout(timer);
    ac.abort();
  }
  throw new Error(`${source.name} found no candidate for ${peer.name}`);
}

export interface Dialled {
  readonly session: PeerSession;
  readonly candidate: DialCandidate;
  /** From the start of the dial to the Welcome, ms. */
  readonly welcomeMs: number;
  close(): Promise<void>;
}

/** Dials the lab's listener through the rendezvous: which source, which paths are off. */
export async function dialThrough(
  lab: ReachLab,
  which: 'lookup' | 'traversal',
  extra: Partial<RendezvousSourcesOptions> = {},
  log: Logger = silentLogger,
): Promise<Dialled> {
  const sources = rendezvousSourcesFor({ rendezvous: lab.rendezvous.address, identity: lab.dialerId, log, ...extra });
  const started = Date.now();
  const candidate = await firstCandidate(sources[which], lab.peer);
  sources.release();
  const address: HostPort = candidate.address;
  let session: PeerSession;
  try {
    session = await dialPeer({
      identity: lab.dialerId,
      peer: { ...lab.peer, address },
      config: { ...lab.config, transport: candidate.transport === 'quic' ? 'quic' : lab.config.transport },
      log,
    });
  } catch (err) {
    candidate.release();
    throw err;
  }
  const welcomeMs = Date.now() - started;
  return {
    session,
    candidate,
    welcomeMs,
    close: async () => {
      await session.close().catch(() => undefined);
      candidate.release();
    },
  };
}
