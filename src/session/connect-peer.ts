// A session with the peer a command names: this home's identity, the pair entry, the ways to
// reach it (reach/dial-paths.ts), the dial. What push, pull, ls and ping start with. Light to
// import: the dialer loads only when a dial starts.
import type { NodeConfig } from '../home/config.js';
import type { PeerTargetOptions } from '../reach/dial-paths.js';
import type { Identity } from '../crypto/identity.js';
import type { ResolvedPeer } from '../home/peer-resolve.js';
import type { describeCapabilities as DescribeCapabilities, PeerSession } from './session.js';
import type { pingPeer as PingPeer } from './ping.js';
import type { ConnectionsMode } from './session-join.js';

export type { PeerSession } from './session.js';

export interface ConnectToPeerOptions extends PeerTargetOptions {
  readonly config: NodeConfig;
  readonly signal: AbortSignal;
  /** The session logs under `log.child(label)`. */
  readonly label: string;
  /** QUIC connections for the session (session-join.ts); one when not given. */
  readonly connections?: ConnectionsMode;
}

export interface PeerConnection {
  readonly identity: Identity;
  readonly peer: ResolvedPeer;
  readonly session: PeerSession;
}

/** Resolves the peer and dials it; the caller closes the session. */
export async function connectToPeer(o: ConnectToPeerOptions): Promise<PeerConnection> {
  const { peerTarget } = await import('../reach/dial-paths.js');
  const { identity, peer, paths } = await peerTarget(o);
  const { dialPeer } = await import('./dialer.js');
  const session = await dialPeer({
    identity,
    peer,
    config: o.config,
    log: o.log.child(o.label),
    signal: o.signal,
    paths,
    ...(o.connections === undefined ? {} : { connections: o.connections }),
  });
  return { identity, peer, session };
}

/** `ping`: round trips over a session connectToPeer opened, with the capabilities it agreed. */
export async function pingModules(): Promise<{
  pingPeer: typeof PingPeer;
  describeCapabilities: typeof DescribeCapabilities;
}> {
  const [{ pingPeer }, { describeCapabilities }] = await Promise.all([import('./ping.js'), import('./session.js')]);
  return { pingPeer, describeCapabilities };
}
