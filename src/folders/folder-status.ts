// `clawpeer status`'s view of the folder service (folder-service.ts): each folder with its
// peers' states, assembled from what the service holds (its folders, the schedule's pairs, the
// running syncs, progress, names, the modes learnt from refusals, a receive-only folder's local
// changes, a send-only folder's peer changes, the resident store pool, what the folder's last scan could not record). Reads only; no
// I/O beyond the pool's `peek`.
import type { FolderConfig, FolderMode } from '../home/folders-config.js';
import type { ActivitySnapshot } from '../session/listener-activity.js';
import type { RevisionStorePool } from '../store/revision-store-pool.js';
import type { PairStatus } from '../sync/folder-schedule.js';
import type { TransferProgress } from '../transfer/transfer-progress.js';
import type { UnsyncableEntries, UnsyncableReason } from '../folder-sync/synced-folder.js';
import type { ActiveFolder, FolderPeerStatus, FolderStatus, UnsyncableGroup } from './folder-service-types.js';
import type { LocalChangeReports } from './local-changes.js';
import type { PeerChangeReports } from './peer-changes.js';

/** What the status reads of the folder service. */
export interface FolderStatusSource {
  readonly folders: Iterable<ActiveFolder>;
  /** The schedule's pairs (`FolderSchedule.snapshot`). */
  readonly pairs: readonly PairStatus[];
  /** What the listener runs now (`ListenerActivity.snapshot`), its own syncs and those a peer runs here. */
  readonly running: readonly ActivitySnapshot[];
  readonly stores: RevisionStorePool;
  readonly localChanges: LocalChangeReports;
  readonly peerChanges: PeerChangeReports;
  /** What each folder's last scan here could not record (the listener's ResidentFolders). */
  readonly unsyncable: UnsyncableEntries;
  readonly nodeId: string;
  /** A running sync's progress of this node's own sync of the pair. */
  progressOf(folder: string, peer: string): TransferProgress | undefined;
  nameOf(peer: string): string | undefined;
  /** The mode the pair's syncs run in (undefined: nothing can move). */
  modeFor(f: FolderConfig, peer: string): FolderMode | undefined;
}

/** Each folder with its peers' states, for `clawpeer status`. */
export function folderStatus(src: FolderStatusSource): FolderStatus[] {
  // The syncs running now, this node's and those a peer runs here (a peer's listener sending
  // its change): a pair is `syncing` while either runs, not `in-sync` with content arriving.
  const running = src.running.filter((a) => a.kind === 'sync');
  return [...src.folders].map(({ config: f, peerIds, problem, pending }) => ({
    id: f.id,
    path: f.path,
    mode: f.mode,
    versioning: f.versioning,
    paused: f.paused,
    ...(problem === undefined ? {} : { problem }),
    pending: pending(),
    ...revisionsOf(src.stores, f.path),
    ...(f.mode === 'receive-only' ? src.localChanges.of(f.id, peerIds, src.stores.peek(f.path), src.nodeId) : {}),
    ...(f.mode === 'send-only' ? src.peerChanges.of(f.id, peerIds, src.stores.peek(f.path)) : {}),
    ...unsyncableOf(src.unsyncable.of(f.path)),
    peers: src.pairs.filter((p) => p.folder === f.id).map((p) => peerStatus(src, f, p, running)),
  }));
}

function peerStatus(
  src: FolderStatusSource,
  f: FolderConfig,
  p: PairStatus,
  running: readonly ActivitySnapshot[],
): FolderPeerStatus {
  const served = running.find((a) => a.share === f.id && a.peer === p.peer);
  const state = p.state === 'paused' || served === undefined ? p.state : 'syncing';
  const progress = p.state === 'syncing' ? src.progressOf(f.id, p.peer) : state === 'syncing' ? served : undefined;
  const name = src.nameOf(p.peer);
  return {
    peer: p.peer,
    ...(name === undefined ? {} : { name }),
    state,
    since: p.since,
    mode: src.modeFor(f, p.peer) ?? f.mode,
    ...(p.lastSyncAt === undefined ? {} : { lastSyncAt: p.lastSyncAt }),
    ...(p.error === undefined ? {} : { error: p.error }),
    // When a failed, waiting or peer-paused pair is tried again (its backoff, or the interval), for `status` to say.
    ...(p.nextAt !== undefined && (p.state === 'error' || p.state === 'waiting' || p.state === 'peer-paused')
      ? { nextAt: p.nextAt }
      : {}),
    ...(progress !== undefined && progress.totalBytes > 0
      ? { bytesLeft: Math.max(0, progress.totalBytes - progress.bytes) }
      : {}),
    ...(progress !== undefined && progress.totalFiles > 0
      ? { filesLeft: Math.max(0, progress.totalFiles - progress.files) }
      : {}),
  };
}

/** The size and root of the folder's log as the listener holds it open (none before its first sync here). */
function revisionsOf(stores: RevisionStorePool, dir: string): { revisions?: number; root?: string } {
  const store = stores.peek(dir);
  return store === undefined ? {} : { revisions: store.size, root: Buffer.from(store.root()).toString('hex') };
}

/** How many paths of each group `clawpeer status` lists (the count is of all). */
export const UNSYNCABLE_PATHS_SHOWN = 10;

/** Entries the folder's last scan left out, by reason (the most first), each with its first paths. */
function unsyncableOf(kept: readonly UnsyncableReason[]): { unsyncable?: UnsyncableGroup[] } {
  if (kept.length === 0) return {};
  const groups = kept.map((g) => ({
    reason: g.reason,
    count: g.count,
    paths: g.paths.slice(0, UNSYNCABLE_PATHS_SHOWN),
  }));
  return { unsyncable: groups.sort((a, b) => b.count - a.count || (a.reason < b.reason ? -1 : 1)) };
}
