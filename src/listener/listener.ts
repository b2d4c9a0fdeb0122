// A running listener, whole: the server that admits and pins peers (server.ts), the dispatch of
// their requests (dispatch.ts), and the state it keeps between sessions: chunk indexes per share,
// synced folders' watchers and logs, what runs now (for `status`), one cap on what it sends.
// `clawpeer listen` and the bench's simulated peer both start it here.
import type { RateLimiter } from '../transfer/rate-limiter.js';
import { ChunkIndexPool } from '../store/chunk-index-pool.js';
import { ListenerActivity, type ConnectedPeer } from '../session/listener-activity.js';
import { ResidentFolders } from '../folder-sync/synced-folder.js';
import { serveSession, type ServiceContext } from './dispatch.js';
import { NodeServer, type BoundTransport, type ServerOptions } from './server.js';
import { startLanResponder, type LanResponder } from '../reach/lan-discovery.js';
import type { PathKind } from '../reach/paths.js';
import type { HostPort } from '../transport/types.js';

/** What the server takes (identity, pairs, invites, shares, address, config, log), and one cap on sending. */
export interface ListenerOptions extends ServerOptions {
  /** listen --bwlimit: everything this listener sends, all peers, pulls and syncs together. */
  readonly sendLimiter?: RateLimiter;
  /** Answer LAN discovery queries (reach/lan-discovery.ts) on this UDP port; absent: do not. */
  readonly lan?: { readonly port: number; readonly interfaces?: readonly string[] };
  /** The nameplates of the short-code invites open now, answered on the LAN too (pairing). */
  readonly openNameplates?: () => number[];
  /**
   * Starts the listener's side of a rendezvous (its traversal socket, registration, port
   * mapping) once the transports are bound; its pathOf labels the sessions it forwards.
   */
  readonly startReach?: (bound: readonly BoundTransport[]) => Promise<ListenerReach>;
  /**
   * The synced folders' state and the activity registry, when the caller made them already: what
   * must be in place before the first session (the folder service's shares) uses them. Closed
   * with the listener once it started.
   */
  readonly resident?: ResidentFolders;
  readonly activity?: ListenerActivity;
  /** Told when a paired peer's session starts (the folder service: that peer is online). */
  readonly onPeerSession?: (peerId: string) => void;
  /** Told after each sync a peer ran here (dispatch.ts ServiceContext.onSyncServed). */
  readonly onSyncServed?: ServiceContext['onSyncServed'];
  /** Told when a sync a peer ran here failed, the peer still connected (dispatch.ts ServiceContext.onSyncServeFailed). */
  readonly onSyncServeFailed?: ServiceContext['onSyncServeFailed'];
  /** Whether a share is a shared folder paused here (dispatch.ts ServiceContext.pausedFolder). */
  readonly pausedFolder?: ServiceContext['pausedFolder'];
  /** Told when a peer's session ends in an error (dispatch.ts ServiceContext.onSessionFailed). */
  readonly onSessionFailed?: ServiceContext['onSessionFailed'];
}

/** What the listener keeps of a running rendezvous side (reach-rv's startListenerReach). */
export interface ListenerReach {
  pathOf(remote: HostPort): PathKind | undefined;
  close(): Promise<void> | void;
}

export class Listener {
  readonly #server: NodeServer;
  readonly #indexes: ChunkIndexPool;
  /** Synced folders kept open between syncs (watchers, logs); the control socket's syncs use them too. */
  readonly resident: ResidentFolders;
  /** The transfers and syncs running now. */
  readonly activity: ListenerActivity;

  #lan: LanResponder | undefined;
  #reach: ListenerReach | undefined;

  private constructor(
    server: NodeServer,
    indexes: ChunkIndexPool,
    resident: ResidentFolders,
    activity: ListenerActivity,
  ) {
    this.#server = server;
    this.#indexes = indexes;
    this.resident = resident;
    this.activity = activity;
  }

  /** Binds the transports and serves until close(); resolves once it accepts connections. */
  static async start(o: ListenerOptions): Promise<Listener> {
    const indexes = new ChunkIndexPool({ log: o.log });
    const resident = o.resident ?? new ResidentFolders({ log: o.log });
    const activity = o.activity ?? new ListenerActivity();
    const ctx = {
      shares: o.shares,
      config: o.config,
      log: o.log,
      nodeId: o.identity.nodeId,
      indexes,
      resident,
      activity,
      ...(o.sendLimiter === undefined ? {} : { sendLimiter: o.sendLimiter }),
      ...(o.onPeerSession === undefined ? {} : { onPeerSession: o.onPeerSession }),
      ...(o.onSyncServed === undefined ? {} : { onSyncServed: o.onSyncServed }),
      ...(o.onSyncServeFailed === undefined ? {} : { onSyncServeFailed: o.onSyncServeFailed }),
      ...(o.pausedFolder === undefined ? {} : { pausedFolder: o.pausedFolder }),
      ...(o.onSessionFailed === undefined ? {} : { onSessionFailed: o.onSessionFailed }),
    };
    try {
      // Bound late: the rendezvous side starts once the transports are bound, after the server.
      let reach: ListenerReach | undefined;
      const pathOf = (remote: HostPort): PathKind | undefined => reach?.pathOf(remote) ?? o.pathOf?.(remote);
      const server = await NodeServer.start({ ...o, pathOf }, (session, signal) => serveSession(session, ctx, signal));
      const listener = new Listener(server, indexes, resident, activity);
      if (o.startReach !== undefined) {
        try {
          reach = listener.#reach = await o.startReach(server.bound);
        } catch (err) {
          await listener.close();
          throw err;
        }
      }
      if (o.lan !== undefined) {
        try {
          listener.#lan = await startLanResponder({
            identity: o.identity,
            bound: server.bound,
            port: o.lan.port,
            log: o.log.child('lan'),
            ...(o.lan.interfaces === undefined ? {} : { interfaces: o.lan.interfaces }),
            ...(o.openNameplates === undefined ? {} : { openNameplates: o.openNameplates }),
          });
        } catch (err) {
          // Peers with an address (or a rendezvous) still reach us: a busy port is not fatal.
          o.log.warn('LAN discovery is off: cannot answer queries', { error: (err as Error).message });
        }
      }
      return listener;
    } catch (err) {
      await indexes.close();
      if (o.resident === undefined) await resident.close(); // the caller's, else: it closes it
      throw err;
    }
  }

  /** Each transport it listens on (the first is the one to tell peers). */
  get bound(): readonly BoundTransport[] {
    return this.#server.bound;
  }

  get port(): number {
    return this.#server.port;
  }

  /** The authenticated sessions now, oldest first. */
  connectedPeers(): ConnectedPeer[] {
    return this.#server.connectedPeers();
  }

  /** Ends every session, then saves and closes what they kept (chunk indexes last: their last changes too). */
  async close(): Promise<void> {
    await this.#reach?.close();
    await this.#lan?.close();
    await this.#server.close();
    await this.#indexes.close();
    await this.resident.close();
  }
}
