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
import { formatVector } from '../../sync/version-vector.js';
import { normalizeSharePath } from '../../transfer/paths.js';
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

async function localNodeId(ctx: CommandContext): Promise<string> {
  return (await identityExists(ctx.home.identityKeyFile)) ? (await loadIdentity(ctx.home.identityKeyFile)).nodeId : ANONYMOUS_NODE_ID;
}

function revisionRecord(e: RevisionEntry, isHead: boolean): Record<string, unknown> {
  const r = e.revision;
  return {
    event: 'revision', path: r.path, id: toHex(e.id), head: isHead, kind: r.kind, deleted: r.deleted, size: r.size, mode: r.mode,
    mtime: new Date(Number(r.mtimeNs / 1_000_000n)).toISOString(), origin: r.origin, vector: Object.fromEntries(r.vector),
    contentRoot: toHex(r.contentRoot),
  };
}

async function runLog(ctx: CommandContext, args: Record<string, unknown>): Promise<void> {
  const { folder, rel } = await locateFolder(String(args['target']));
  const { RevisionStore } = await import('../../store/revision-store.js');
  const store = await RevisionStore.open(folder, { nodeId: await localNodeId(ctx) });
  try {
    const under = (p: string): boolean => rel === '' || p === rel || p.startsWith(rel + '/');
    const paths = [...store.heads()].map((h) => h.revision.path).filter(under).sort();
    for (const p of paths) {
      const head = store.head(p);
      for (const e of store.history(p).reverse()) {
        const isHead = head !== undefined && bytesEqual(head.id, e.id);
        const r = e.revision;
        const what = r.deleted ? 'deleted' : r.kind === 'file' ? `${r.size} bytes` : r.kind;
        ctx.out.emit(revisionRecord(e, isHead), `${toHex(e.id).slice(0, 16)} ${isHead ? '*' : ' '} ${p}  ${what}  ${new Date(Number(r.mtimeNs / 1_000_000n)).toISOString()}  by ${r.origin.slice(-8)} ${formatVector(r.vector)}`);
      }
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
    const store = await RevisionStore.open(folder, { nodeId: (await loadIdentity(ctx.home.identityKeyFile)).nodeId });
    try {
      const matches = store.history(rel).filter((e) => toHex(e.id).startsWith(revHex));
      if (revHex.length < 8 || matches.length !== 1) {
        throw new ClawpeerError('USAGE', `--rev ${revHex} names ${matches.length === 0 ? 'no revision' : 'several revisions'} of ${rel} (see \`clawpeer log\`; give at least 8 hex digits)`);
      }
      const rev = matches[0]!.revision;
      const abs = path.join(folder, ...rel.split('/'));
      const chunking = defaultFolderChunking();
      const tmp = path.join(path.dirname(abs), tempNameFor(path.basename(abs)));
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
        let source: string | undefined;
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
        if (source === undefined) throw new ClawpeerError('IO', `the content of revision ${toHex(matches[0]!.id).slice(0, 16)} of ${rel} is no longer kept here (collected by gc, or overwritten before a scan saw it)`);
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
      ctx.out.emit({ event: 'restored', path: rel, rev: toHex(matches[0]!.id), newRev: head === undefined ? null : toHex(head.id) }, `restored ${rel} to revision ${toHex(matches[0]!.id).slice(0, 16)}`);
    } finally {
      await store.close();
    }
  } finally {
    await lock.release();
  }
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
      (y) => y.positional('target', { type: 'string' }).option('rev', { type: 'string', demandOption: true, describe: 'revision id (hex, at least 8 digits) from `clawpeer log`' }),
      run(runRestore),
    )
    .command(
      'gc <dir>',
      'drop old revisions and the history content only they referenced',
      (y) => y.positional('dir', { type: 'string' }).option('keep-last', { type: 'number', demandOption: true, describe: 'revisions to keep per path (the current one always stays)' }),
      run(runGc),
    );
}
