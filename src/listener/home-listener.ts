// `clawpeer listen`, whole: a home's listener (Listener.start) with what a home adds around it:
// the identity (created with --init), the shares and their allow lists, one send cap, LAN
// discovery and the rendezvous side from the home's reach config, the nameplates of open short
// codes, the shared folders' service (its shares in place before the first session), the
// control socket the home's `sync` and `status` use, listening.json, and a sweep of stale temp
// files. The command parses its flags and prints; this does the rest.
import type { Logger } from '../logger.js';
import type { ReachConfig } from '../home/config-file.js';
import type { NodeConfig } from '../home/config.js';
import { formatHostPort } from '../home/address.js';
import type { HomeLayout } from '../home/home.js';
import type { Identity } from '../crypto/identity.js';
import type { ResolvedPeer } from '../home/peer-resolve.js';
import type { Share } from '../home/shares.js';
import type { ListenerStatus } from '../folder-sync/resident-protocol.js';
import type { BoundTransport } from './server.js';
import type { ListenerOptions } from './listener.js';

export interface HomeListenerOptions {
  readonly home: HomeLayout;
  /** The home's reach config with the global flags applied (read once the identity is there). */
  readonly reach: () => Promise<ReachConfig>;
  readonly config: NodeConfig;
  readonly host: string;
  readonly port: number;
  /** --share NAME=DIR[:ro|:nodelete] as typed (none: the inbox). */
  readonly shares: readonly string[];
  /** --allow SHARE=PEER[,PEER...] as typed. */
  readonly allow: readonly string[];
  /** --init: create an identity first if the home has none. */
  readonly init: boolean;
  /** --bwlimit, bytes per second: everything this listener sends. */
  readonly bwlimit?: number | undefined;
  readonly log: Logger;
  readonly signal: AbortSignal;
}

/** A running home listener: what to tell the user, and close(). */
export interface HomeListener {
  readonly identity: Identity;
  readonly shares: readonly Share[];
  /** The reach config it runs with (LAN discovery, rendezvous). */
  readonly reach: ReachConfig;
  /** Each transport it listens on (the first is the one to tell peers). */
  readonly bound: readonly BoundTransport[];
  /** Stops the control socket, the sweep and the listener. */
  close(): Promise<void>;
}

export async function startHomeListener(o: HomeListenerOptions): Promise<HomeListener> {
  const { home, config, log } = o;
  const [
    { createIdentity, identityExists, loadIdentity },
    { findPeer, PeerStore },
    { InviteStore },
    { applyAllowLists, resolveShares },
  ] = await Promise.all([
    import('../home/identity-store.js'),
    import('../home/peer-store.js'),
    import('../home/pair-invite.js'),
    import('../home/shares.js'),
  ]);
  if (o.init && !(await identityExists(home.identityKeyFile))) {
    const created = await createIdentity(home.identityKeyFile);
    // Asked for with --init: news, not a warning (-v shows it; the ready line carries the id).
    o.log.info(`created identity ${created.nodeId} in ${home.dir}`);
  }
  const identity = await loadIdentity(home.identityKeyFile);
  const peerStore = new PeerStore(home.peersFile);
  const pairs = o.allow.length > 0 ? await peerStore.list() : []; // names in allow lists are resolved against the pairs
  const shares = applyAllowLists(
    await resolveShares([...o.shares], home.inboxDir),
    [...o.allow],
    (p) => findPeer(pairs, p)?.id,
  );
  const { RateLimiter } = await import('../transfer/rate-limiter.js');
  // One cap for everything this listener sends: every peer, pull and sync together.
  const sendLimiter = o.bwlimit === undefined ? undefined : new RateLimiter(o.bwlimit);
  const limited = sendLimiter === undefined ? {} : { sendLimiter };
  const listenLog = log.child('listen');
  const { Listener } = await import('./listener.js');
  const reach = await o.reach();
  const lan = reach.lanDiscovery
    ? {
        lan: {
          port: reach.lanDiscoveryPort,
          ...(reach.lanInterfaces === undefined ? {} : { interfaces: reach.lanInterfaces }),
        },
      }
    : {};
  const startReach = listenerReachFor(reach, identity, listenLog);
  // Open short codes' nameplates are held in the LAN (and rendezvous) directories while open.
  const { listenerDirectories } = await import('../ops/nameplate-directories.js');
  const { directories: nameplateDirectories, openNameplates } = listenerDirectories({
    home,
    identity,
    config,
    reach,
    log: listenLog,
    listenHost: o.host,
  });
  // The shared folders of config.json (folders/folder-service.ts) are in `shares` before the
  // listener accepts a session: a peer's sync of a folder right after a start found no such
  // share (SHARE_UNKNOWN) while the service was still reading the config. Their watchers and
  // logs, and what runs, are the listener's: made here, handed to it.
  const [
    { ResidentFolders },
    { ListenerActivity },
    { dialPathsFor },
    { FolderService },
    { afterFolderSync },
    { FolderOffers },
  ] = await Promise.all([
    import('../folder-sync/synced-folder.js'),
    import('../session/listener-activity.js'),
    import('../reach/dial-paths.js'),
    import('../folders/folder-service.js'),
    import('../folders/folder-versioning.js'),
    import('../folders/folder-offers.js'),
  ]);
  // Folders paired peers asked to sync that this home has not added (`status`: "bob offers folder docs").
  const offers = await FolderOffers.load(home.dir, listenLog);
  const resident = new ResidentFolders({ log: listenLog });
  const activity = new ListenerActivity();
  const dialPaths = (peer: ResolvedPeer): ReturnType<typeof dialPathsFor> =>
    dialPathsFor({ homeDir: home.dir, reach, identity, peer, log });
  const folders = await FolderService.start({
    homeDir: home.dir,
    identity,
    peers: peerStore,
    peersFile: home.peersFile,
    shares,
    resident,
    config,
    log: listenLog,
    dialPaths,
    activity,
    ...limited,
    afterSync: afterFolderSync({ resident, nodeId: identity.nodeId }),
    offers,
  }).catch(async (err: unknown) => {
    await resident.close();
    throw err;
  });
  const server = await Listener.start({
    identity,
    peers: peerStore,
    invites: new InviteStore(home.invitesDir),
    shares,
    host: o.host,
    port: o.port,
    config,
    log: listenLog,
    ...limited,
    ...lan,
    nameplateDirectories,
    openNameplates,
    ...(startReach === undefined ? {} : { startReach }),
    resident,
    activity,
    // A peer's session arriving, or a sync it ran here, tells the service the peer is online.
    onPeerSession: (peerId) => folders.peerOnline(peerId),
    onSyncServed: (peerId, served) => folders.syncServed(peerId, served),
    onSyncServeFailed: (peerId, share, err, byFolderService) => {
      folders.syncServeFailed(peerId, share, err);
      // A folder we do not have: the peer offers it (a person's `clawpeer sync` of it does not).
      if (byFolderService) offers.refused(peerId, share, err);
    },
    pausedFolder: (share, peerId) => folders.pausedFor(share, peerId),
  }).catch(async (err: unknown) => {
    await folders.close();
    await resident.close();
    throw err;
  });
  const startedAt = Date.now();
  const sweep = sweepStaleTempFiles(shares, listenLog, o.signal);
  const first = server.bound[0];
  if (first === undefined) throw new TypeError('server bound no transport');
  const transports = server.bound.map((b) => b.transport);
  // Of the shares now: the folder service adds and removes its folders' shares in place.
  const shareRecords = (): ListenerStatus['shares'] =>
    shares.map((s) => ({
      name: s.name,
      dir: s.dir,
      readOnly: s.readOnly,
      ...(s.noDelete === true ? { noDelete: true } : {}),
      ...(s.allow !== undefined ? { allow: s.allow } : {}),
    }));
  // `clawpeer status` of this home asks here: the peers connected now and what runs for them.
  const status = async (): Promise<ListenerStatus> => {
    const names = new Map((await peerStore.list().catch(() => [])).map((p) => [p.id, p.name]));
    // Sessions the peers opened here, then the ones the folder service dialled for its syncs.
    const peers = [...server.connectedPeers(), ...folders.connectedPeers()].map((p) => {
      const name = names.get(p.id);
      return name === undefined ? p : { ...p, name };
    });
    return {
      pid: process.pid,
      id: identity.nodeId,
      host: first.host,
      port: first.port,
      transports,
      rendezvous: reach.rendezvous === undefined ? null : formatHostPort(reach.rendezvous),
      startedAt,
      shares: shareRecords(),
      peers,
      activity: activity.snapshot(),
      ended: activity.totals(),
      folders: folders.status(),
      offers: offers.list(),
    };
  };
  // `clawpeer sync` of one of these shares from this home runs here, with the share's watcher.
  const { ResidentSyncServer } = await import('../folder-sync/resident-sync.js');
  const control = await ResidentSyncServer.start(home.dir, {
    shares,
    resident,
    identity,
    peers: peerStore,
    log: listenLog,
    status,
    activity,
    dialPaths,
    ...limited,
    revert: (id, dryRun, signal) => folders.revert(id, dryRun, signal),
    override: (id, dryRun, signal) => folders.override(id, dryRun, signal),
  });
  // The home's own listener (it has the control socket) tells the home's commands where it is.
  const { writeListening, removeListening } = await import('../home/listening-file.js');
  if (control !== undefined)
    await writeListening(home.dir, { pid: process.pid, host: first.host, port: first.port }).catch(() => undefined);
  return {
    identity,
    shares,
    reach,
    bound: server.bound,
    close: async () => {
      // The control socket first: its syncs use the listener's resident folders, closed with it.
      await Promise.all([
        sweep,
        folders.close(),
        control?.close(),
        control === undefined ? undefined : removeListening(home.dir).catch(() => undefined),
      ]);
      await server.close();
      await offers.flushed();
    },
  };
}

/**
 * Removes the `.clawpeer-tmp-*` files a killed receiver left in the writable shares: those of a
 * writer that is no longer running, and any older than store/temp-files.ts STALE_TEMP_AGE_MS (younger
 * ones of a live process may belong to its transfer in progress). Runs while the listener
 * serves (a big share takes a while to walk; our own new temp files are never swept, as we are
 * alive). Logs the count per share.
 */
async function sweepStaleTempFiles(shares: readonly Share[], log: Logger, signal: AbortSignal): Promise<void> {
  const { removeStaleTempFiles } = await import('../store/temp-files.js');
  for (const share of shares) {
    if (share.readOnly || signal.aborted) continue;
    try {
      const removed = await removeStaleTempFiles(share.dir, { nowMs: Date.now(), signal });
      log.info('swept stale temp files', { share: share.name, removed });
    } catch (err) {
      if (!signal.aborted)
        log.warn('cannot sweep stale temp files', { share: share.name, error: (err as Error).message });
    }
  }
}

/** The listener's rendezvous side (registration, traversal socket, port mapping), when a rendezvous server is named. */
export function listenerReachFor(reach: ReachConfig, identity: Identity, log: Logger): ListenerOptions['startReach'] {
  const rendezvous = reach.rendezvous;
  if (rendezvous === undefined) return undefined;
  return async (bound) => {
    const { startListenerReach } = await import('../reach/listener-reach.js');
    const { startListenerPortMapping } = await import('../reach/listener-port-mapping.js');
    const mapping = reach.portMapping ? startListenerPortMapping({ bound, log: log.child('port-mapping') }) : undefined;
    // A gateway answers in milliseconds; without one, register now and announce a mapping later.
    await mapping?.settled(1_000);
    try {
      const r = await startListenerReach({ identity, rendezvous, bound, mapped: () => mapping?.mapped() ?? [], log });
      mapping?.mapMux(r.mux.port);
      return {
        pathOf: (remote) => r.pathOf(remote),
        close: async () => {
          await r.close();
          await mapping?.close();
        },
      };
    } catch (err) {
      await mapping?.close();
      throw err;
    }
  };
}
