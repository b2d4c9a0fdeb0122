// A whole sync with a paired peer: dial, sync the folder (sync-client.ts), close. For the CLI and
// for a listener running a sync for it (resident-sync.ts).
// The sync modules (~60 ms to load, lmdb most of it) load while the peer is dialled: this module
// imports them only then, so importing it is light.
import type { Identity } from '../crypto/identity.js';
import type { NodeConfig } from '../home/config.js';
import { dialPeer } from '../session/dialer.js';
import type { ResolvedPeer } from '../home/peer-resolve.js';
import type { PathSources } from '../reach/path-sources.js';
import type { ConnectionsMode } from '../session/session-join.js';
import type { SyncFolderOptions, SyncFolderResult } from './sync-client.js';

export interface SyncWithPeerOptions extends Omit<SyncFolderOptions, 'session' | 'nodeId'> {
  readonly identity: Identity;
  readonly peer: ResolvedPeer;
  readonly config: NodeConfig;
  /** The ways to reach the peer (reach/path-sources.ts); default: its address alone. */
  readonly paths?: PathSources;
  /** QUIC connections to stripe over (session/session-join.ts); default 'auto'. */
  readonly connections?: ConnectionsMode;
}

/** Dials `peer`, syncs `dir` with its share, closes the session. */
export async function syncWithPeer(o: SyncWithPeerOptions): Promise<SyncFolderResult> {
  const { identity, peer, config, paths, connections = 'auto', ...rest } = o;
  const client = import('./sync-client.js');
  client.catch(() => undefined); // a failure surfaces where it is awaited, not as unhandled
  const session = await dialPeer({
    identity,
    peer,
    config,
    log: o.log,
    signal: o.signal,
    connections,
    ...(paths === undefined ? {} : { paths }),
  });
  let delivered = false;
  const untell = session.tellPeerIfInterrupted(o.signal, 'sync');
  try {
    const { syncFolder } = await client;
    const result = await syncFolder({ keepAliveMs: config.keepAliveMs, ...rest, session, nodeId: identity.nodeId });
    delivered = true; // it ended on the listener's sync-done: nothing of ours is left unanswered
    return { ...result, path: session.path(), rttMs: Math.round(session.rttMs() * 1000) / 1000 };
  } catch (err) {
    throw await session.reasonFor(err);
  } finally {
    untell();
    await session.close('done', { linger: !delivered });
  }
}
