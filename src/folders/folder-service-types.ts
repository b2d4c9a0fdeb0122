// What the folder service (folder-service.ts) is given and reports: its options, the versioning
// policy's hook, and the status `clawpeer status` shows per folder and peer.
import type { Identity } from '../crypto/identity.js';
import type { Logger } from '../logger.js';
import type { NodeConfig } from '../home/config.js';
import type { FolderConfig, FolderMode } from '../home/folders-config.js';
import type { VersioningPolicy } from '../sync/versioning.js';
import type { PeerEntry, PeerStore } from '../home/peer-store.js';
import type { ResolvedPeer } from '../home/peer-resolve.js';
import type { Share } from '../home/shares.js';
import type { PathSources } from '../reach/path-sources.js';
import type { ListenerActivity } from '../session/listener-activity.js';
import type { PairState } from '../sync/folder-schedule.js';
import type { RateLimiter } from '../transfer/rate-limiter.js';
import type { ResidentFolders } from '../folder-sync/synced-folder.js';

/** One peer of a folder in `clawpeer status`. */
export interface FolderPeerStatus {
  readonly peer: string;
  readonly name?: string;
  readonly state: PairState;
  /** When it entered the state (for `waiting`: when the peer was first missed), ms since the epoch. */
  readonly since: number;
  readonly lastSyncAt?: number;
  readonly error?: string;
  /** State `error` or `waiting`: when the next try is due (backoff); `peer-paused`: the folder's interval. Ms since the epoch. */
  readonly nextAt?: number;
  /** While syncing: what is left of the current phase, when known. */
  readonly bytesLeft?: number;
  readonly filesLeft?: number;
  /** The mode the syncs with this peer run in (narrower than the folder's when the peer's copy is send-only or receive-only). */
  readonly mode: FolderMode;
}

export interface FolderStatus {
  readonly id: string;
  readonly path: string;
  readonly mode: FolderMode;
  readonly versioning: string;
  readonly paused: boolean;
  /** Why it is not served or synced (a share of that name exists, a peer is not paired). */
  readonly problem?: string;
  /** A local change waits for its quiet time before the folder is synced. */
  readonly pending: boolean;
  /** Revisions in the folder's log, and the Merkle root over their ids (hex): equal on two nodes, the same set. Absent before its first sync here. */
  readonly revisions?: number;
  readonly root?: string;
  /** Receive-only: how many paths changed here are kept and never sent, and the first of them (local-changes.ts). */
  readonly localChanges?: number;
  readonly localChangePaths?: readonly string[];
  /** Send-only: how many paths the peers changed that this copy does not take, and the first of them (peer-changes.ts). */
  readonly peerChanges?: number;
  readonly peerChangePaths?: readonly string[];
  /** Entries its last scan here could not record, by reason (absent: none): never synced until fixed. */
  readonly unsyncable?: readonly UnsyncableGroup[];
  readonly peers: readonly FolderPeerStatus[];
}

/** Entries of a folder that cannot be synced for one reason ("name has a control character"): how many, the first paths (escaped, sorted). */
export interface UnsyncableGroup {
  readonly reason: string;
  readonly count: number;
  readonly paths: readonly string[];
}

/**
 * The versioning policy's hook: called after each completed sync of a folder that replaced or
 * deleted content here (received > 0 or conflicts > 0), whether this node or the peer started
 * it (`by`). The folder's next sync from this service waits for it; a sync a peer starts does
 * not, so a hook that prunes history takes the folder's lock (store/folder-lock.ts) as `gc` does.
 * A rejection is logged, never fatal.
 */
export type AfterFolderSync = (e: {
  readonly folder: FolderConfig;
  readonly policy: VersioningPolicy;
  readonly peer: string;
  readonly by: 'here' | 'peer';
  readonly received: number;
  readonly nowMs: number;
}) => Promise<void>;

export interface FolderServiceOptions {
  readonly homeDir: string;
  readonly identity: Identity;
  readonly peers: PeerStore;
  /** peers.json, followed like config.json. */
  readonly peersFile: string;
  /** The listener's live share list: the service adds and removes its folders' shares in it. */
  readonly shares: Share[];
  readonly resident: ResidentFolders;
  readonly config: NodeConfig;
  readonly log: Logger;
  readonly dialPaths?: (peer: ResolvedPeer) => Promise<PathSources>;
  readonly sendLimiter?: RateLimiter;
  readonly activity?: ListenerActivity;
  /** The versioning policy's hook (the sync core applies it). */
  readonly afterSync?: AfterFolderSync;
  /** Told of config.json's folders and the pairs at each reload: offers of folders added since, or of peers unpaired, go (folder-offers.ts). */
  readonly offers?: { follow(folders: readonly FolderConfig[], pairs: readonly PeerEntry[]): void };
}

/** A folder the service runs: its config, paired peers, problem and watcher. */
export interface ActiveFolder {
  readonly config: FolderConfig;
  /** The config entry and peer ids it was started from: a change of either restarts it. */
  readonly fingerprint?: string;
  /** Node ids of its peers that are paired. */
  readonly peerIds: readonly string[];
  readonly problem: string | undefined;
  readonly stop: () => void;
  /** A local change waits for its quiet time. */
  readonly pending: () => boolean;
}
