// `log`, `restore`, `gc`: the revision history of a synced folder.
import { constants as fsConstants } from 'node:fs';
import { copyFile, lstat, mkdir, open, rename, rm, stat, symlink, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { Argv } from 'yargs';
import { bytesEqual, toHex } from '../../chunking/blake3.js';
import { DEFAULT_CHUNKING, type ChunkingParams } from '../../chunking/fastcdc.js';
import { ClawpeerError } from '../../errors.js';
import { identityExists, loadIdentity } from '../../home/identity-store.js';
import { INTERNAL_DIR_NAME } from '../../store/internal-names.js';
import { loadSyncIgnore } from '../../folder-sync/sync-ignore.js';
import { DEFAULT_CAPABILITIES } from '../../protocol/capabilities.js';
import type { RevisionEntry } from '../../sync/revision.js';
import { isConflictPath } from '../../sync/conflict.js';
import { human } from '../../format.js';
import { normalizeSharePath } from '../../transfer/paths.js';
import { flagText, parseRemote } from '../args.js';
import type { CommandContext, Runner } from '../context.js';

/** How long restore/gc wait for a running sync of the folder, ms. */
const LOCK_WAIT_MS = 5_000;
/** Node id used to open a log read-only when this home has no identity yet. */
const ANONYMOUS_NODE_ID = 'local';

/**
 * The chunking content roots are computed with when no session says otherwise: the listener's
 * default first choice, which is what sessions negotiate unless configured differently.
 */
function defaultFolderChunking(): ChunkingParams {
  const c = DEFAULT_CAPABILITIES.chunking[0];
  if (c === undefined) throw new TypeError('no default chunking');
  return { minBytes: c.minBytes, avgBytes: c.avgBytes, maxBytes: c.maxBytes, normalization: DEFAULT_CHUNKING.normalization };
}

/** The synced folder containing `target` (the nearest directory with a revision log) and the path inside it. */
async function locateFolder(target: string): Promise<{ folder: string; rel: string }> {
  const { REVLOG_DIR_NAME } = await import('../../store/revlog-format.js');
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
  throw new ClawpeerError('USAGE', `${abs} is not inside a synced folder (no ${INTERNAL_DIR_NAME}/${REVLOG_DIR_NAME} above it)`);
}

async function homeNodeId(ctx: CommandContext): Promise<string | undefined> {
  return (await identityExists(ctx.home.identityKeyFile)) ? (await loadIdentity(ctx.home.identityKeyFile)).nodeId : undefined;
}

async function localNodeId(ctx: CommandContext): Promise<string> {
  return (await homeNodeId(ctx)) ?? ANONYMOUS_NODE_ID;
}

/** The node that syncs `folder`, as its revision log recorded it (undefined: a log from before it did). */
async function recordedNodeOf(folder: string): Promise<string | undefined> {
  const { RevisionStore } = await import('../../store/revision-store.js');
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
async function restoringNodeId(ctx: CommandContext, args: Record<string, unknown>, folder: string): Promise<string> {
  const recorded = await recordedNodeOf(folder);
  const home = await homeNodeId(ctx);
  const explicitHome = args['home'] !== undefined || process.env['CLAWPEER_HOME'] !== undefined;
  if (recorded !== undefined) {
    if (explicitHome && home !== undefined && home !== recorded) {
      throw new ClawpeerError('USAGE', `${folder} is synced by node ${recorded}, not by the node of ${ctx.home.dir} (${home}): pass the --home of the node that syncs this folder`);
    }
    return recorded;
  }
  if (home !== undefined) return home;
  throw new ClawpeerError('USAGE', `cannot tell which node syncs ${folder} (its log predates recording it, and ${ctx.home.dir} has no identity): pass the --home of the node that syncs this folder`);
}

function revisionRecord(e: RevisionEntry, isHead: boolean, what: LogWhat, by: string): Record<string, unknown> {
  const r = e.revision;
  return {
    event: 'revision', path: r.path, id: toHex(e.id), head: isHead, what, by, kind: r.kind, deleted: r.deleted, size: r.size, mode: r.mode,
    mtime: new Date(Number(r.mtimeNs / 1_000_000n)).toISOString(), origin: r.origin, vector: Object.fromEntries(r.vector),
    contentRoot: toHex(r.contentRoot),
  };
}

type LogWhat = 'created' | 'changed' | 'deleted' | 'conflict copy';

/** What a revision did, next to the one before it in its path's history here (undefined: none kept). */
function whatHappened(e: RevisionEntry, previous: RevisionEntry | undefined): LogWhat {
  if (e.revision.deleted) return 'deleted';
  if (previous === undefined || previous.revision.deleted) return isConflictPath(e.revision.path) ? 'conflict copy' : 'created';
  return 'changed';
}

/** `2026-12-02 20:44:29`, local time: when a revision was made (a tombstone: when the deletion was seen). */
function logTime(ms: number): string {
  const d = new Date(ms);
  const two = (n: number): string => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

/** Names for the nodes in a log: "this node" for the folder's own, pair names from the home, else a short id. */
async function nodeNamer(ctx: CommandContext, folderNode: string | undefined): Promise<(id: string) => string> {
  const self = folderNode ?? (await homeNodeId(ctx));
  const names = new Map<string, string>();
  try {
    const { PeerStore } = await import('../../home/peer-store.js');
    for (const p of await new PeerStore(ctx.home.peersFile).list()) names.set(p.id, p.name);
  } catch {
    // no readable pair list: short ids
  }
  return (id) => (id === self ? 'this node' : names.get(id) ?? `node …${id.slice(-8)}`);
}

/** Newest first: every kept revision of the folder (or of the paths under `target`), what it did, when and by whom. */
async function runLog(ctx: CommandContext, args: Record<string, unknown>): Promise<void> {
  const { folder, rel } = await locateFolder(String(args['target']));
  const { RevisionStore } = await import('../../store/revision-store.js');
  const store = await RevisionStore.open(folder, { nodeId: ANONYMOUS_NODE_ID }); // only read
  try {
    const nameOf = await nodeNamer(ctx, store.syncingNode());
    const under = (p: string): boolean => rel === '' || p === rel || p.startsWith(rel + '/');
    const rows: { entry: RevisionEntry; isHead: boolean; what: LogWhat; order: number }[] = [];
    for (const h of store.heads()) {
      if (!under(h.revision.path)) continue;
      const history = store.history(h.revision.path);
      history.forEach((e, i) => rows.push({ entry: e, isHead: bytesEqual(h.id, e.id), what: whatHappened(e, history[i - 1]), order: i }));
    }
    // Newest first by the revision's time; within one path, later arrivals first on a tie.
    rows.sort((x, y) => {
      const dt = y.entry.revision.mtimeNs - x.entry.revision.mtimeNs;
      if (dt !== 0n) return dt > 0n ? 1 : -1;
      return x.entry.revision.path === y.entry.revision.path ? y.order - x.order : x.entry.revision.path < y.entry.revision.path ? -1 : 1;
    });
    for (const { entry: e, isHead, what } of rows) {
      const r = e.revision;
      const by = nameOf(r.origin);
      const size = r.deleted || r.kind === 'dir' ? '' : `  ${human(r.size)}`;
      const kind = r.kind === 'file' ? '' : ` (${r.kind})`;
      ctx.out.emit(
        revisionRecord(e, isHead, what, by),
        `${logTime(Number(r.mtimeNs / 1_000_000n))}  ${what.padEnd(13)}  ${r.path}${kind}${size}  by ${by}  rev ${toHex(e.id).slice(0, 12)}${isHead ? ' (current)' : ''}`,
      );
    }
  } finally {
    await store.close();
  }
}

async function runRestore(ctx: CommandContext, args: Record<string, unknown>): Promise<void> {
  const { folder, rel } = await locateFolder(String(args['target']));
  if (rel === '') throw new ClawpeerError('USAGE', 'name a path inside the folder to restore');
  const revHex = String(args['rev']).toLowerCase();
  const { RevisionStore } = await import('../../store/revision-store.js');
  const { FolderLock } = await import('../../store/folder-lock.js');
  const { scanFolder } = await import('../../folder-sync/folder-scanner.js');
  const { historyBlobPath } = await import('../../store/sync-history.js');
  const { tempNameFor } = await import('../../store/temp-files.js');
  const { manifestFromFile } = await import('../../file-chunking/file-chunker.js');
  const lock = await FolderLock.acquire(folder, { waitMs: LOCK_WAIT_MS, signal: ctx.signal });
  try {
    const store = await RevisionStore.open(folder, { nodeId: await restoringNodeId(ctx, args, folder) });
    try {
      const matches = store.history(rel).filter((e) => toHex(e.id).startsWith(revHex));
      if (revHex.length < 8 || matches.length !== 1) {
        throw new ClawpeerError('USAGE', `--rev ${revHex} names ${matches.length === 0 ? 'no revision' : 'several revisions'} of ${rel} (see \`clawpeer log\`; give at least 8 hex digits)`);
      }
      const rev = matches[0]!.revision;
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
        for (const h of store.heads()) if (!h.revision.deleted && h.revision.kind === 'file' && bytesEqual(h.revision.contentRoot, rev.contentRoot)) candidates.push(path.join(folder, ...h.revision.path.split('/')));
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
          fetchedFrom = await fetchFromPeer(ctx, args, { folder, rel, nodeId: store.nodeId, recorded: store.syncingPeer(), id: matches[0]!.id, rev });
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
          if (!bytesEqual((await manifestFromFile(tmp, chunking)).root, rev.contentRoot)) throw new ClawpeerError('HASH_MISMATCH', `restored copy of ${rel} does not match its revision`);
          await rename(tmp, abs);
        } catch (err) {
          await rm(tmp, { force: true });
          throw err;
        }
      }
      // Record the restore as a new local edit, so it wins over what it replaced on every peer.
      await scanFolder(store, folder, { chunking, ignore: await loadSyncIgnore(folder) });
      const head = store.head(rel);
      ctx.out.emit(
        { event: 'restored', path: rel, rev: toHex(matches[0]!.id), newRev: head === undefined ? null : toHex(head.id), ...(fetchedFrom === undefined ? {} : { fetchedFrom }) },
        `restored ${rel} to revision ${toHex(matches[0]!.id).slice(0, 16)}${fetchedFrom === undefined ? '' : ` (its content fetched from ${fetchedFrom})`}`,
      );
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
  ctx: CommandContext, args: Record<string, unknown>,
  o: { folder: string; rel: string; nodeId: string; recorded: { peerId: string; share: string } | undefined; id: Uint8Array; rev: RevisionEntry['revision'] },
): Promise<string> {
  const revName = `revision ${toHex(o.id).slice(0, 16)} of ${o.rel}`;
  const from = args['from'] === undefined ? o.recorded : (() => {
    const r = parseRemote(flagText(args['from']), false);
    if (r.path !== '') throw new ClawpeerError('USAGE', `--from names the peer's share the folder syncs with (PEER:SHARE), not a path in it: ${JSON.stringify(flagText(args['from']))}`);
    return { peerId: r.peer, share: r.share };
  })();
  if (from === undefined) {
    throw new ClawpeerError('IO', `the content of ${revName} is no longer kept here (collected by gc, or overwritten before a scan saw it), and this folder has not synced with a peer that might keep it: pass --from PEER:SHARE`);
  }
  const [{ loadIdentity }, { PeerStore }, { resolvePeer }, { resolveConfig }, { fetchRevisionFromPeer }] = await Promise.all([
    import('../../home/identity-store.js'), import('../../home/peer-store.js'), import('../../home/peer-resolve.js'), import('../../home/config.js'), import('../../folder-sync/restore-fetch.js'),
  ]);
  const home = await homeNodeId(ctx);
  if (home !== o.nodeId) {
    throw new ClawpeerError('USAGE', `the content of ${revName} is not kept here; to fetch it from the peer, pass the --home of the node that syncs this folder (${o.nodeId})`);
  }
  const identity = await loadIdentity(ctx.home.identityKeyFile);
  const peer = await resolvePeer(new PeerStore(ctx.home.peersFile), from.peerId, args['addr'] as string | undefined);
  const got = await fetchRevisionFromPeer({
    identity, peer, config: resolveConfig({}), share: from.share, folder: o.folder, relPath: o.rel, root: o.rev.contentRoot,
    mode: o.rev.mode & 0o777, mtimeMs: Number(o.rev.mtimeNs / 1_000_000n), log: ctx.log.child('restore'), signal: ctx.signal,
  });
  if (!got) {
    throw new ClawpeerError('IO', `the content of ${revName} is kept neither here nor by ${peer.name}: nothing in the pair has it any more (collected by gc, or overwritten before a scan saw it)`);
  }
  return peer.name;
}

async function runGc(ctx: CommandContext, args: Record<string, unknown>): Promise<void> {
  const keepLast = Number(args['keep-last']);
  if (!Number.isInteger(keepLast) || keepLast < 1) throw new ClawpeerError('USAGE', `--keep-last must be an integer >= 1, got ${JSON.stringify(args['keep-last'])}`);
  const { folder } = await locateFolder(String(args['dir']));
  const { RevisionStore } = await import('../../store/revision-store.js');
  const { FolderLock } = await import('../../store/folder-lock.js');
  const { removeHistoryBlobs } = await import('../../store/sync-history.js');
  const lock = await FolderLock.acquire(folder, { waitMs: LOCK_WAIT_MS, signal: ctx.signal });
  try {
    const store = await RevisionStore.open(folder, { nodeId: await localNodeId(ctx) });
    try {
      const result = store.gc(keepLast);
      const blobs = await removeHistoryBlobs(folder, result.releasedContentRoots);
      ctx.out.emit({ event: 'gc', removedRevisions: result.removedRevisions, removedBlobs: blobs }, `removed ${result.removedRevisions} old revisions and ${blobs} history files`);
    } finally {
      await store.close();
    }
  } finally {
    await lock.release();
  }
}

export function registerHistoryCommands(cli: Argv, run: Runner): Argv {
  return cli
    .command('log <target>', 'revision history of a synced folder or a path in it', (y) => y.positional('target', { type: 'string' }), run(runLog))
    .command(
      'restore <target>',
      'bring back an earlier revision of DIR/PATH (atomically; recorded as a new edit)',
      (y) => y.positional('target', { type: 'string' })
        .option('rev', { type: 'string', demandOption: true, describe: 'revision id (hex, at least 8 digits) from `clawpeer log`' })
        .option('from', { type: 'string', describe: 'PEER:SHARE to fetch the content from when it is no longer kept here (default: the peer the folder last synced with)' })
        .option('addr', { type: 'string', describe: 'HOST:PORT of the --from peer (default: its paired address)' }),
      run(runRestore),
    )
    .command(
      'gc <dir>',
      'drop old revisions and the history content only they referenced (the next sync tells the peer, which drops them too)',
      (y) => y.positional('dir', { type: 'string' }).option('keep-last', { type: 'number', demandOption: true, describe: 'revisions to keep per path (the current one always stays)' }),
      run(runGc),
    );
}
