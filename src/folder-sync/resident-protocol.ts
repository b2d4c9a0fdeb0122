// The local control socket between the CLI and a listener of the same home: `clawpeer sync`
// of a folder the listener serves runs inside the listener, which watches its shares, so an
// unchanged folder is not scanned again (folder-watcher.ts).
//
// One request per connection, newline-delimited JSON both ways: the CLI sends a SyncRequest;
// the listener answers `not-served` (the CLI then syncs in its own process), or progress lines
// followed by one `result` or `error`. The CLI closing the socket aborts the sync. `clawpeer
// status` sends a StatusRequest and gets one `status` line: what the listener serves and does;
// `folder revert` a RevertRequest, answered by one `reverted` line (or `error`).
// The socket lives in the home directory, next to the identity key: whoever can use it could
// read the key anyway. Kept free of heavy imports: the CLI loads it before anything else.
import path from 'node:path';
import type { SyncModeName } from '../protocol/messages.js';
import type { SyncFolderResult } from './sync-client.js';
import type { TransferProgress } from '../transfer/transfer-progress.js';
import type { ActivitySnapshot, ActivityTotals } from '../session/listener-activity.js';
import type { ConnectedPeer } from '../session/listener-activity.js';

export const CONTROL_SOCKET_NAME = 'control.sock';
/** Longest request line accepted, bytes (a request is a few hundred). */
export const MAX_REQUEST_BYTES = 64 * 1024;
/** Unix socket paths longer than this do not fit sockaddr_un on Linux (108 bytes with the NUL). */
const MAX_SOCKET_PATH_BYTES = 107;

export interface ResidentSyncRequest {
  readonly op: 'sync';
  /** Real path of the local folder. */
  readonly dir: string;
  /** Pair name or node id. */
  readonly peer: string;
  readonly addr?: string;
  readonly share: string;
  readonly mode: SyncModeName;
  readonly transport?: string;
  readonly compression: 'auto' | 'none';
  /** sync --bwlimit, bytes per second. */
  readonly bwlimit?: number;
  /** Send progress lines. */
  readonly progress: boolean;
}

export interface StatusRequest {
  readonly op: 'status';
}

/** `clawpeer folder revert ID [--dry-run]`: run by the listener's folder service (folders/folder-revert.ts). */
export interface RevertRequest {
  readonly op: 'revert';
  readonly folder: string;
  readonly dryRun: boolean;
}

/** One path `folder revert` puts back to the peers' version. */
export interface RevertedPath {
  readonly path: string;
  /** What this node had there (its own version): a file, directory or symlink, or `deleted`. */
  readonly local: 'file' | 'dir' | 'symlink' | 'deleted';
  /** The peers' version it holds now: `none` when no peer has the path (a local addition). */
  readonly peers: 'file' | 'dir' | 'symlink' | 'deleted' | 'none';
  /**
   * The peers' version of this file is newer than any whose bytes a peer still had: the path was
   * forgotten here and the sync that follows the revert brings it.
   */
  readonly bySync?: boolean;
}

/** What `folder revert` did (or, dry run, would do). */
export interface RevertReport {
  readonly folder: string;
  readonly dryRun: boolean;
  /** Revisions made here that no peer has, withdrawn from the log. */
  readonly withdrawn: number;
  /** The paths whose version changes, sorted. */
  readonly paths: readonly RevertedPath[];
  /** Where the local bytes were moved (absolute; absent when nothing was on disk to keep, or a dry run). */
  readonly keptIn?: string;
}

/** `clawpeer folder override ID [--dry-run]`: run by the listener's folder service (folders/folder-override.ts). */
export interface OverrideRequest {
  readonly op: 'override';
  readonly folder: string;
  readonly dryRun: boolean;
}

/** What `folder override` did (or, dry run, would do): the paths whose version here now wins, sorted. */
export interface OverrideReport {
  readonly folder: string;
  readonly dryRun: boolean;
  /** Each path and what this copy holds there, which the peers take at their next sync. */
  readonly paths: readonly { readonly path: string; readonly here: 'file' | 'dir' | 'symlink' | 'deleted' }[];
}

/** A listener's state for `clawpeer status`. */
export interface ListenerStatus {
  readonly pid: number;
  readonly id: string;
  readonly host: string;
  readonly port: number;
  readonly transports: readonly string[];
  /** The rendezvous it registers with, HOST:PORT; null: none (absent: a listener older than this field). */
  readonly rendezvous?: string | null;
  /** ms since the epoch. */
  readonly startedAt: number;
  readonly shares: readonly {
    readonly name: string;
    readonly dir: string;
    readonly readOnly: boolean;
    readonly noDelete?: boolean;
    readonly allow?: readonly string[];
  }[];
  /** Sessions of paired peers now (theirs to here, and this node's folder service's to them: `dialed`); `name` is the pair name here, when it has one. */
  readonly peers: readonly (ConnectedPeer & { readonly name?: string })[];
  /** Pushes, pulls and syncs it serves now. */
  readonly activity: readonly ActivitySnapshot[];
  /** Those that ended since it started, per kind. */
  readonly ended: ActivityTotals;
  /** The shared folders of config.json and the state of each with each of its peers (folders/folder-service.ts FolderStatus). */
  readonly folders?: readonly FolderStatusRecord[];
  /** Folders paired peers offer that this home has not added (folders/folder-offers.ts), oldest first; absent: an older listener. */
  readonly offers?: readonly FolderOfferRecord[];
}

/** A peer's offer of a folder this home has not added: its node id and pair name, the folder id, ms since the epoch. */
export interface FolderOfferRecord {
  readonly peer: string;
  readonly name?: string;
  readonly folder: string;
  readonly firstSeen: number;
  readonly lastSeen: number;
}

/** A shared folder's state in `clawpeer status` (the folder service's FolderStatus, as JSON). */
export interface FolderStatusRecord {
  readonly id: string;
  readonly path: string;
  readonly mode: string;
  readonly versioning: string;
  readonly paused: boolean;
  readonly problem?: string;
  readonly pending?: boolean;
  readonly revisions?: number;
  readonly root?: string;
  /** Receive-only: paths changed here, kept and not sent (absent: an older listener, or another mode). */
  readonly localChanges?: number;
  readonly localChangePaths?: readonly string[];
  /** Send-only: how many paths the peers changed that this copy does not take, and the first of them (peer-changes.ts). */
  readonly peerChanges?: number;
  readonly peerChangePaths?: readonly string[];
  /** Entries its last scan could not record, by reason ("name has a control character"): how many, the first paths (escaped). */
  readonly unsyncable?: readonly {
    readonly reason: string;
    readonly count: number;
    readonly paths: readonly string[];
  }[];
  readonly peers: readonly {
    readonly peer: string;
    readonly name?: string;
    /** `peer-paused`: the peer has paused its copy (a state, no error; tried again at the folder's interval). */
    readonly state: 'in-sync' | 'syncing' | 'waiting' | 'error' | 'paused' | 'peer-paused';
    readonly since: number;
    readonly lastSyncAt?: number;
    readonly error?: string;
    readonly nextAt?: number;
    readonly bytesLeft?: number;
    readonly filesLeft?: number;
    readonly mode: string;
  }[];
}

export type ResidentSyncReply =
  | { readonly type: 'not-served'; readonly reason: string }
  | ({ readonly type: 'progress' } & TransferProgress)
  | { readonly type: 'result'; readonly result: SyncFolderResult }
  | { readonly type: 'status'; readonly status: ListenerStatus }
  | { readonly type: 'reverted'; readonly report: RevertReport }
  | { readonly type: 'overridden'; readonly report: OverrideReport }
  | { readonly type: 'error'; readonly code: string; readonly message: string };

/** The control socket of the home at `homeDir`, or undefined when its path is too long for a Unix socket. */
export function controlSocketPath(homeDir: string): string | undefined {
  if (process.platform === 'win32') return undefined;
  const p = path.join(homeDir, CONTROL_SOCKET_NAME);
  return Buffer.byteLength(p) <= MAX_SOCKET_PATH_BYTES ? p : undefined;
}
