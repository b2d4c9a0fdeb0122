// The ways a command dials a peer (path-sources.ts), from the home's reach config and the
// global flags, and remembering in the home which path worked (home/last-paths.ts).
import type { Identity } from '../crypto/identity.js';
import type { ReachConfig } from '../home/config-file.js';
import type { HomeLayout } from '../home/home.js';
import type { ResolvedPeer } from '../home/peer-resolve.js';
import type { Logger } from '../logger.js';
import type { PathSources } from './path-sources.js';

export interface DialPathsOptions {
  /** The home whose paths.json remembers the last path that worked. */
  readonly homeDir: string;
  readonly reach: ReachConfig;
  readonly identity: Identity;
  readonly peer: ResolvedPeer;
  readonly log: Logger;
}

export async function dialPathsFor(o: DialPathsOptions): Promise<PathSources> {
  const { homeDir, reach: config, identity, peer, log } = o;
  const [{ pathSourcesFor }, { lastDirectAddress, recordLastPath }] = await Promise.all([
    import('./path-sources.js'),
    import('../home/last-paths.js'),
  ]);
  const lastAddress = peer.typed === true ? undefined : await lastDirectAddress(homeDir, peer.id);
  const paths = pathSourcesFor({
    config,
    identity,
    peer,
    ...(peer.typed === true ? { typedAddress: peer.address } : {}),
    ...(lastAddress === undefined ? {} : { lastAddress }),
    log: log.child('reach'),
  });
  // One write after another: the path at the end (a move to a punched hole) must land last.
  let writes = Promise.resolve();
  return {
    ...paths,
    release: () => paths.release(),
    connected: (path, address, rttMs) => {
      const entry = { path, address, ...(rttMs === undefined ? {} : { rttMs }) };
      writes = writes
        .then(() => recordLastPath(homeDir, peer.id, entry))
        .catch((err: unknown) => log.debug('cannot remember the path', { error: (err as Error).message }));
    },
  };
}

/** Who this node is, which peer a command names, and the ways to reach it. */
export interface PeerTarget {
  readonly identity: Identity;
  readonly peer: ResolvedPeer;
  readonly paths: PathSources;
}

export interface PeerTargetOptions {
  readonly home: HomeLayout;
  /** The home's reach config with the global flags applied; read only once identity and peer are known. */
  readonly reach: () => Promise<ReachConfig>;
  /** A pair name or node id. */
  readonly peerName: string;
  /** --addr HOST:PORT: the only way tried. */
  readonly addr?: string | undefined;
  readonly log: Logger;
}

/** Loads this home's identity, resolves `peerName` against its pairs and builds the dial paths. */
export async function peerTarget(o: PeerTargetOptions): Promise<PeerTarget> {
  const [{ loadIdentity }, { PeerStore }, { resolvePeer }] = await Promise.all([
    import('../home/identity-store.js'),
    import('../home/peer-store.js'),
    import('../home/peer-resolve.js'),
  ]);
  const identity = await loadIdentity(o.home.identityKeyFile);
  const peer = await resolvePeer(new PeerStore(o.home.peersFile), o.peerName, o.addr);
  return {
    identity,
    peer,
    paths: await dialPathsFor({ homeDir: o.home.dir, reach: await o.reach(), identity, peer, log: o.log }),
  };
}
