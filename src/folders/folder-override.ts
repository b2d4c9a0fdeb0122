// `clawpeer folder override ID`: Syncthing's "Override Changes" of a send-only folder, the mirror
// of `folder revert` (folder-revert.ts). Each path a peer changed and this copy did not take
// (peer-changes.ts) gets a new revision made here of what this copy holds there (its file,
// directory or symlink, or its absence), whose version vector merges the peer's and raises this
// node's counter: it is newer than every version seen, so the syncs that follow (the folder
// service runs them at once) make every peer take it back.
//
// Under the folder's lock (openSyncedFolder: a scan first, so the log matches the disk); one
// write transaction records every path or none. The disk is not touched. A dry run reports only.
import { ClawpeerError } from '../errors.js';
import { defaultFolderChunking } from '../folder-sync/folder-history.js';
import type { OverrideReport } from '../folder-sync/resident-protocol.js';
import { openSyncedFolder } from '../folder-sync/synced-folder.js';
import type { RevisionDraft } from '../store/revision-store.js';
import type { RevisionEntry } from '../sync/revision.js';
import type { ActiveFolder, FolderServiceOptions } from './folder-service-types.js';
import type { PeerChangeReports } from './peer-changes.js';
import { runningFolder } from './folder-revert.js';

/** How long the override waits for a sync of the folder (a peer's) to finish, ms. */
const OVERRIDE_LOCK_WAIT_MS = 30_000;

export interface OverrideFolderOptions {
  readonly service: FolderServiceOptions;
  readonly folderId: string;
  /** The folder as the service runs it (undefined: not in the config, or not started). */
  readonly active: ActiveFolder | undefined;
  readonly reports: PeerChangeReports;
  readonly dryRun: boolean;
  readonly signal: AbortSignal;
}

/** What this copy holds at `path` (its head here), as a new revision: a tombstone where nothing is. */
function draftOf(path: string, head: RevisionEntry | undefined, nowNs: bigint): RevisionDraft {
  if (head !== undefined && !head.revision.deleted) {
    const { origin: _origin, vector: _vector, ...draft } = head.revision;
    return draft;
  }
  const kind = head?.revision.kind ?? 'file';
  return {
    path,
    kind,
    contentRoot: new Uint8Array(0),
    size: 0,
    mode: head?.revision.mode ?? 0o644,
    mtimeNs: nowNs,
    deleted: true,
    linkTarget: '',
  };
}

/** `folder override`: see the top of the file. Refusals are USAGE (not a send-only folder here, paused). */
export async function overrideFolder(o: OverrideFolderOptions): Promise<OverrideReport> {
  const { folderId: id } = o;
  const active = runningFolder(id, o.active);
  const f = active.config;
  if (f.mode !== 'send-only')
    throw new ClawpeerError(
      'USAGE',
      `folder ${id} is ${f.mode}: override makes a send-only folder's versions win over its peers' changes (Syncthing's Override Changes); a ${f.mode} folder takes its peers' changes`,
    );
  if (f.paused)
    throw new ClawpeerError('USAGE', `folder ${id} is paused: resume it first (clawpeer folder resume ${id})`);
  const folder = await openSyncedFolder(f.path, {
    requireMarker: true,
    nodeId: o.service.identity.nodeId,
    chunking: defaultFolderChunking(),
    lockWaitMs: OVERRIDE_LOCK_WAIT_MS,
    log: o.service.log.child('folders'),
    signal: o.signal,
    resident: o.service.resident,
  });
  try {
    const { store } = folder;
    // A path ignored here is left alone, as a sync leaves it.
    const changes = o.reports
      .changes(id, active.peerIds, store)
      .filter((c) => !folder.ignore.ignores(c.path, 'either'));
    const nowNs = BigInt(Date.now()) * 1_000_000n;
    const drafts = changes.map((c) => ({ draft: draftOf(c.path, store.head(c.path), nowNs), seen: c.vector }));
    if (!o.dryRun && drafts.length > 0)
      store.write((w) => {
        for (const { draft, seen } of drafts) w.recordLocal(draft, seen);
      });
    return {
      folder: id,
      dryRun: o.dryRun,
      paths: drafts.map(({ draft }) => ({ path: draft.path, here: draft.deleted ? 'deleted' : draft.kind })),
    };
  } finally {
    await folder.close();
  }
}
