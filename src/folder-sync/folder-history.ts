// `log`, `restore` and `gc` of a synced folder: its revision history (store/revision-store.ts),
// the history blobs (store/sync-history.ts), and for restore the content fetched from the peer
// when it is kept only there (restore-fetch.ts). The command parses and prints.
import type { VersioningPolicy } from '../sync/versioning.js';
import { constants as fsConstants } from 'node:fs';
import { copyFile, lstat, mkdir, open, rename, rm, stat, symlink, unlink } from 'node:fs/promises';
import path from 'node:path';
import { bytesEqual, toHex } from '../chunking/blake3.js';
import { DEFAULT_CHUNKING, type ChunkingParams } from '../chunking/fastcdc.js';
import { ClawpeerError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { HomeLayout } from '../home/home.js';
import { identityExists, loadIdentity } from '../home/identity-store.js';
import { INTERNAL_DIR_NAME } from '../store/internal-names.js';
import { loadSyncIgnore } from './sync-ignore.js';
import { DEFAULT_CAPABILITIES } from '../protocol/capabilities.js';
import type { Revision, RevisionEntry } from '../sync/revision.js';
import { isConflictPath } from '../sync/conflict.js';
import { normalizeSharePath } from '../transfer/paths.js';

/** How long restore/gc wait for a running sync of the folder, ms. */
const LOCK_WAIT_MS = 5_000;
/** Node id used to open a log read-only when this home has no identity yet. */
const ANONYMOUS_NODE_ID = 'local';

/**
 * The chunking content roots are computed with when no session says otherwise: the listener's
 * default first choice, which is what sessions negotiate unless configured differently.
 */
export function defaultFolderChunking(): ChunkingParams {
  const c = DEFAULT_CAPABILITIES.chunking[0];
  if (c === undefined) throw new TypeError('no default chunking');
  return {
    minBytes: c.minBytes,
    avgBytes: c.avgBytes,
    maxBytes: c.maxBytes,
    normalization: DEFAULT_CHUNKING.normalization,
  };
}

/** The synced folder containing `target` (the nearest directory with a revision log) and the path inside it. */
async function locateFolder(target: string): Promise<{ folder: string; rel: string }> {
  const { REVLOG_DIR_NAME } = await import('../store/revlog-format.js');
  const abs = path.resolve(target);
  for (let dir = abs; ; dir = path.dirname(dir)) {
    try {
      if ((await stat(path.join(dir, INTERNAL_DIR_NAME, REVLOG_DIR_NAME))).isDirectory()) {
        const rel = path.relative(dir, abs).split(path.sep).join('/');
        return { folder: dir, rel: rel === '' ? '' : normalizeSharePath(rel) };
      }
    } catch {
      // not this level
    }
    if (path.dirname(dir) === dir) break;
  }
  throw new ClawpeerError(
    'USAGE',
    `${abs} is not inside a synced folder (no ${INTERNAL_DIR_NAME}/${REVLOG_DIR_NAME} above it)`,
  );
}

async function homeNodeId(home: HomeLayout): Promise<string | undefined> {
  return (await identityExists(home.identityKeyFile)) ? (await loadIdentity(home.identityKeyFile)).nodeId : undefined;
}

async function localNodeId(home: HomeLayout): Promise<string> {
  return (await homeNodeId(home)) ?? ANONYMOUS_NODE_ID;
}

/** The node that syncs `folder`, as its revision log recorded it (undefined: a log from before it did). */
async function recordedNodeOf(folder: string): Promise<string | undefined> {
  const { RevisionStore } = await import('../store/revision-store.js');
  const store = await RevisionStore.open(folder, { nodeId: ANONYMOUS_NODE_ID });
  try {
    return store.syncingNode();
  } finally {
    await store.close();
  }
}

/**
 * The node `restore` records its edit as: the one that syncs the folder (its log says which), so
 * no --home is needed; else this home's. An explicit --home of another node is refused: an edit
 * under a foreign id would clash with that node's own counters.
 */
async function restoringNodeId(home: HomeLayout, explicitHome: boolean, folder: string): Promise<string> {
  const recorded = await recordedNodeOf(folder);
  const own = await homeNodeId(home);
  if (recorded !== undefined) {
    if (explicitHome && own !== undefined && own !== recorded) {
      throw new ClawpeerError(
        'USAGE',
        `${folder} is synced by node ${recorded}, not by the node of ${home.dir} (${own}): pass the --home of the node that syncs this folder`,
      );
    }
    return recorded;
  }
  if (own !== undefined) return own;
  throw new ClawpeerError(
    'USAGE',
    `cannot tell which node syncs ${folder} (its log predates recording it, and ${home.dir} has no identity): pass the --home of the node that syncs this folder`,
  );
}

export type LogWhat = 'created' | 'changed' | 'deleted' | 'conflict copy';

/** One kept revision as `log` shows it. */
export interface LogRow {
  readonly revision: Revision;
  /** The revision's id, hex. */
  readonly id: string;
  /** Whether it is the path's current revision. */
  readonly isHead: boolean;
  readonly what: LogWhat;
  /** Who made it: "this node", a pair name, or a short id. */
  readonly by: string;
  /** The content's root, hex. */
  readonly contentRoot: string;
}

/** What a revision did, next to the one before it in its path's history here (undefined: none kept). */
function whatHappened(e: RevisionEntry, previous: RevisionEntry | undefined): LogWhat {
  if (e.revision.deleted) return 'deleted';
  if (previous === undefined || previous.revision.deleted)
    return isConflictPath(e.revision.path) ? 'conflict copy' : 'created';
  return 'changed';
}

/** Names for the nodes in a log: "this node" for the folder's own, pair names from the home, else a short id. */
async function nodeNamer(home: HomeLayout, folderNode: string | undefined): Promise<(id: string) => string> {
  const self = folderNode ?? (await homeNodeId(home));
  const names = new Map<string, string>();
  try {
    const { PeerStore } = await import('../home/peer-store.js');
    for (const p of await new PeerStore(home.peersFile).list()) names.set(p.id, p.name);
  } catch {
    // no readable pair list: short ids
  }
  return (id) => (id === self ? 'this node' : (names.get(id) ?? `node …${id.slice(-8)}`));
}

/** Newest first: every kept revision of the folder (or of the paths under `target`), what it did and by whom. */
export async function folderLog(o: { readonly target: string; readonly home: HomeLayout }): Promise<LogRow[]> {
  const { folder, rel } = await locateFolder(o.target);
  const { RevisionStore } = await import('../store/revision-store.js');
  const store = await RevisionStore.open(folder, { nodeId: ANONYMOUS_NODE_ID }); // only read
  try {
    const nameOf = await nodeNamer(o.home, store.syncingNode());
    const under = (p: string): boolean => rel === '' || p === rel || p.startsWith(rel + '/');
    const rows: { entry: RevisionEntry; isHead: boolean; what: LogWhat; order: number }[] = [];
    for (const h of store.heads()) {
      if (!under(h.revision.path)) continue;
      const history = store.history(h.revision.path);
      history.forEach((e, i) =>
        rows.push({ entry: e, isHead: bytesEqual(h.id, e.id), what: whatHappened(e, history[i - 1]), order: i }),
      );
    }
    if (rows.length === 0 && rel !== '')
      throw new ClawpeerError(
        'PATH_INVALID',
        `${rel} has no revision in the log of ${folder} (not there, not synced yet, or left out by .clawpeerignore)`,
      );
    // Newest first by the revision's time; within one path, later arrivals first on a tie.
    rows.sort((x, y) => {
      const dt = y.entry.revision.mtimeNs - x.entry.revision.mtimeNs;
      if (dt !== 0n) return dt > 0n ? 1 : -1;
      return x.entry.revision.path === y.entry.revision.path
        ? y.order - x.order
        : x.entry.revision.path < y.entry.revision.path
          ? -1
          : 1;
    });
    return rows.map(({ entry: e, isHead, what }) => ({
      revision: e.revision,
      id: toHex(e.id),
      isHead,
      what,
      by: nameOf(e.revision.origin),
      contentRoot: toHex(e.revision.contentRoot),
    }));
  } finally {
    await store.close();
  }
}

export interface RestoreOptions {
  /** DIR/PATH inside a synced folder. */
  readonly target: string;
  /** --rev: at least 8 hex digits of the revision id. */
  readonly rev: string;
  readonly home: HomeLayout;
  /** Whether --home (or $CLAWPEER_HOME) named the home: then it must be the folder's node. */
  readonly explicitHome: boolean;
  /** --from PEER:SHARE, parsed only when the content must be fetched (undefined: the peer the folder last synced with). */
  readonly from?: (() => { readonly peerId: string; readonly share: string }) | undefined;
  /** --addr HOST:PORT of that peer. */
  readonly addr?: string | undefined;
  readonly log: Logger;
  readonly signal: AbortSignal;
}

export interface Restored {
  readonly path: string;
  /** The restored revision's id, hex, and the new head recording the restore (null: none). */
  readonly rev: string;
  readonly newRev: string | null;
  /** The peer's pair name when the content came from it. */
  readonly fetchedFrom?: string;
}

/** Brings back an earlier revision of a path (atomically), recorded as a new local edit. */
export async function restoreRevision(o: RestoreOptions): Promise<Restored> {
  const { folder, rel } = await locateFolder(o.target);
  if (rel === '') throw new ClawpeerError('USAGE', 'name a path inside the folder to restore');
  const revHex = o.rev.toLowerCase();
  if (!/^[0-9a-f]{8,64}$/.test(revHex))
    throw new ClawpeerError(
      'USAGE',
      `--rev ${JSON.stringify(o.rev)} is not a revision id: give 8 to 64 hex digits of one (see \`clawpeer log\`)`,
    );
  const { RevisionStore } = await import('../store/revision-store.js');
  const { FolderLock } = await import('../store/folder-lock.js');
  const { scanFolder } = await import('./folder-scanner.js');
  const { historyBlobPath } = await import('../store/sync-history.js');
  const { releaseTempName, tempNameFor } = await import('../store/temp-files.js');
  const { manifestFromFile } = await import('../file-chunking/file-chunker.js');
  const lock = await FolderLock.acquire(folder, { waitMs: LOCK_WAIT_MS, signal: o.signal });
  try {
    const store = await RevisionStore.open(folder, { nodeId: await restoringNodeId(o.home, o.explicitHome, folder) });
    try {
      const matches = store.history(rel).filter((e) => toHex(e.id).startsWith(revHex));
      const match = matches[0];
      if (matches.length !== 1 || match === undefined) {
        throw new ClawpeerError(
          'USAGE',
          `--rev ${revHex} names ${matches.length === 0 ? 'no revision' : 'several revisions'} of ${rel} (see \`clawpeer log\`; give at least 8 hex digits)`,
        );
      }
      const rev = match.revision;
      const abs = path.join(folder, ...rel.split('/'));
      const chunking = defaultFolderChunking();
      const tmp = path.join(path.dirname(abs), tempNameFor(path.basename(abs)));
      let source: string | undefined;
      let fetchedFrom: string | undefined;
      if (rev.deleted) {
        await unlink(abs).catch((err: unknown) => {
          if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
        });
      } else if (rev.kind === 'dir') {
        await mkdir(abs, { recursive: true, mode: rev.mode });
      } else if (rev.kind === 'symlink') {
        await mkdir(path.dirname(abs), { recursive: true });
        await symlink(rev.linkTarget, tmp);
        await rename(tmp, abs);
      } else {
        // The content: its history blob, or a live file with the same root.
        const candidates = [historyBlobPath(folder, rev.contentRoot), abs];
        for (const h of store.heads())
          if (!h.revision.deleted && h.revision.kind === 'file' && bytesEqual(h.revision.contentRoot, rev.contentRoot))
            candidates.push(path.join(folder, ...h.revision.path.split('/')));
        for (const c of candidates) {
          try {
            if (!(await lstat(c)).isFile()) continue;
            if (bytesEqual((await manifestFromFile(c, chunking)).root, rev.contentRoot)) {
              source = c;
              break;
            }
          } catch {
            continue;
          }
        }
        if (source === undefined) {
          // Not kept here: the peer the folder syncs with may keep it (it kept what our change replaced).
          fetchedFrom = await fetchFromPeer(o, {
            folder,
            rel,
            nodeId: store.nodeId,
            recorded: store.syncingPeer(),
            id: match.id,
            rev,
          });
        }
      }
      if (source !== undefined) {
        await mkdir(path.dirname(abs), { recursive: true });
        await copyFile(source, tmp, fsConstants.COPYFILE_EXCL);
        try {
          const h = await open(tmp, 'r+');
          try {
            await h.chmod(rev.mode & 0o777);
            await h.sync();
          } finally {
            await h.close();
          }
          if (!bytesEqual((await manifestFromFile(tmp, chunking)).root, rev.contentRoot))
            throw new ClawpeerError('HASH_MISMATCH', `restored copy of ${rel} does not match its revision`);
          await rename(tmp, abs);
        } catch (err) {
          await rm(tmp, { force: true });
          throw err;
        }
      }
      releaseTempName(tmp);
      // Record the restore as a new local edit, so it wins over what it replaced on every peer.
      await scanFolder(store, folder, { chunking, ignore: await loadSyncIgnore(folder) });
      const head = store.head(rel);
      return {
        path: rel,
        rev: toHex(match.id),
        newRev: head === undefined ? null : toHex(head.id),
        ...(fetchedFrom === undefined ? {} : { fetchedFrom }),
      };
    } finally {
      await store.close();
    }
  } finally {
    await lock.release();
  }
}

/**
 * Fetches the content of a revision not kept here into the folder: from --from PEER:SHARE, else
 * the peer the folder last synced with. Returns the peer's pair name.
 */
async function fetchFromPeer(
  r: RestoreOptions,
  o: {
    folder: string;
    rel: string;
    nodeId: string;
    recorded: { peerId: string; share: string } | undefined;
    id: Uint8Array;
    rev: RevisionEntry['revision'];
  },
): Promise<string> {
  const revName = `revision ${toHex(o.id).slice(0, 16)} of ${o.rel}`;
  const from = r.from === undefined ? o.recorded : r.from();
  if (from === undefined) {
    throw new ClawpeerError(
      'IO',
      `the content of ${revName} is no longer kept here (collected by gc, or overwritten before a scan saw it), and this folder has not synced with a peer that might keep it: pass --from PEER:SHARE`,
    );
  }
  const [{ PeerStore }, { resolvePeer }, { resolveConfig }, { fetchRevisionFromPeer }] = await Promise.all([
    import('../home/peer-store.js'),
    import('../home/peer-resolve.js'),
    import('../home/config.js'),
    import('./restore-fetch.js'),
  ]);
  const home = await homeNodeId(r.home);
  if (home !== o.nodeId) {
    throw new ClawpeerError(
      'USAGE',
      `the content of ${revName} is not kept here; to fetch it from the peer, pass the --home of the node that syncs this folder (${o.nodeId})`,
    );
  }
  const identity = await loadIdentity(r.home.identityKeyFile);
  const peer = await resolvePeer(new PeerStore(r.home.peersFile), from.peerId, r.addr);
  const got = await fetchRevisionFromPeer({
    identity,
    peer,
    config: resolveConfig({}),
    share: from.share,
    folder: o.folder,
    relPath: o.rel,
    root: o.rev.contentRoot,
    mode: o.rev.mode & 0o777,
    // Now, as a restore of content kept here lands (a copy): a restore is a new edit, and `log`
    // lists it by this time, newest first; the revision's own old mtime would list it last.
    mtimeMs: Date.now(),
    log: r.log.child('restore'),
    signal: r.signal,
  });
  if (!got) {
    throw new ClawpeerError(
      'IO',
      `the content of ${revName} is kept neither here nor by ${peer.name}: nothing in the pair has it any more (collected by gc, or overwritten before a scan saw it)`,
    );
  }
  return peer.name;
}

/** Drops all but the last `keepLast` revisions per path and the history content only they referenced. */
export async function collectFolderGarbage(o: {
  readonly dir: string;
  readonly policy: VersioningPolicy;
  readonly home: HomeLayout;
  readonly signal: AbortSignal;
}): Promise<{ removedRevisions: number; removedBlobs: number }> {
  const { folder, rel } = await locateFolder(o.dir);
  // gc drops revisions of the whole folder (and the peer drops the same at the next sync): a
  // path inside it must not quietly widen to everything else's history.
  if (rel !== '') {
    throw new ClawpeerError(
      'USAGE',
      `${path.resolve(o.dir)} is inside the synced folder ${folder}: gc works on a whole folder and would drop the history of every path in it; run clawpeer gc ${folder} to mean that`,
    );
  }
  const { RevisionStore } = await import('../store/revision-store.js');
  const { FolderLock } = await import('../store/folder-lock.js');
  const { applyVersioning } = await import('../store/sync-history.js');
  const lock = await FolderLock.acquire(folder, { waitMs: LOCK_WAIT_MS, signal: o.signal });
  try {
    const store = await RevisionStore.open(folder, { nodeId: await localNodeId(o.home) });
    try {
      const result = await applyVersioning(store, folder, o.policy, Date.now());
      return { removedRevisions: result.removedRevisions, removedBlobs: result.removedBlobs };
    } finally {
      await store.close();
    }
  } finally {
    await lock.release();
  }
}
