// A whole sync with a paired peer: dial, sync the folder (sync-client.ts), close. For the CLI and
// for a listener running a sync for it (resident-sync.ts). A directory that is (or is inside, or
// holds) a shared folder of the home syncs within that folder's mode, however the sync was
// started: a receive-only folder's local changes never leave, a send-only one takes nothing.
// The sync modules (~60 ms to load, lmdb most of it) load while the peer is dialled: this module
// imports them only then, so importing it is light.
import type { Identity } from '../crypto/identity.js';
import type { NodeConfig } from '../home/config.js';
import { dialPeer } from '../session/dialer.js';
import type { ResolvedPeer } from '../home/peer-resolve.js';
import type { PathSources } from '../reach/path-sources.js';
import type { ConnectionsMode } from '../session/session-join.js';
import { ClawpeerError } from '../errors.js';
import { foldersReachedBy } from '../home/folders-config.js';
import type { SyncModeName } from '../protocol/messages.js';
import { modeWithin } from '../sync/sync-directions.js';
import type { SyncFolderOptions, SyncFolderResult } from './sync-client.js';

export interface SyncWithPeerOptions extends Omit<SyncFolderOptions, 'session' | 'nodeId'> {
  readonly identity: Identity;
  readonly peer: ResolvedPeer;
  readonly config: NodeConfig;
  /** The ways to reach the peer (reach/path-sources.ts); default: its address alone. */
  readonly paths?: PathSources;
  /** QUIC connections to stripe over (session/session-join.ts); default 'auto'. */
  readonly connections?: ConnectionsMode;
  /** The home whose shared folders (config.json) bound the mode a sync of `dir` runs in. */
  readonly home: string;
}

/** `asked`, narrowed to what each shared folder of `home` that a sync of `dir` reaches allows; USAGE when that is nothing. */
export async function modeForDir(
  home: string,
  dir: string,
  asked: SyncModeName,
): Promise<{ mode: SyncModeName; narrowedBy?: { folder: string; mode: SyncModeName } }> {
  let mode = asked;
  let narrowedBy: { folder: string; mode: SyncModeName } | undefined;
  for (const f of await foldersReachedBy(home, dir)) {
    const within = modeWithin(mode, f.mode);
    if (within === undefined)
      throw new ClawpeerError(
        'USAGE',
        `a sync of ${dir} reaches folder ${f.id} (${f.path}), ${f.mode} in this home's config.json: a ${mode} sync ` +
          `would ${f.mode === 'receive-only' ? 'send its local changes' : "take the peer's changes"}` +
          (narrowedBy === undefined ? ` (sync it with --mode ${f.mode}, or two-way, which runs ${f.mode})` : ''),
      );
    if (within !== mode) narrowedBy = { folder: f.id, mode: f.mode };
    mode = within;
  }
  return narrowedBy === undefined ? { mode } : { mode, narrowedBy };
}

/** Dials `peer`, syncs `dir` with its share, closes the session. */
export async function syncWithPeer(o: SyncWithPeerOptions): Promise<SyncFolderResult> {
  const { identity, peer, config, paths, connections = 'auto', home, ...rest } = o;
  const { mode, narrowedBy } = await modeForDir(home, o.dir, o.mode);
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
    const result = await syncFolder({
      keepAliveMs: config.keepAliveMs,
      ...rest,
      mode,
      session,
      nodeId: identity.nodeId,
    });
    delivered = true; // it ended on the listener's sync-done: nothing of ours is left unanswered
    return {
      ...result,
      ...(narrowedBy === undefined ? {} : { narrowedBy }),
      path: session.path(),
      rttMs: Math.round(session.rttMs() * 1000) / 1000,
    };
  } catch (err) {
    throw await session.reasonFor(err);
  } finally {
    untell();
    await session.close('done', { linger: !delivered });
  }
}
