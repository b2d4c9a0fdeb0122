// `sync`, `log`, `restore`, `gc`: revision sync of a folder with a peer's share, and its history.
import { watch, type FSWatcher } from 'node:fs';
import { copyFile, lstat, mkdir, open, realpath, rename, rm, stat, symlink, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { Argv } from 'yargs';
import { bytesEqual, toHex } from '../../chunking/blake3.js';
import { DEFAULT_CHUNKING, type ChunkingParams } from '../../chunking/fastcdc.js';
import { ClawpeerError } from '../../errors.js';
import { resolveConfig } from '../../node/config.js';
import { identityExists, loadIdentity } from '../../node/identity-store.js';
import { INTERNAL_DIR_NAME, isTempFileName } from '../../node/partial-store.js';
import { PeerStore } from '../../node/peer-store.js';
import { resolvePeer } from '../../node/peer-resolve.js';
import type { SyncFolderResult } from '../../node/sync-client.js';
import type { TransferProgress } from '../../node/transfer-progress.js';
import { DEFAULT_CAPABILITIES } from '../../protocol/capabilities.js';
import type { SyncModeName } from '../../protocol/messages.js';
import type { RevisionEntry } from '../../sync/revision.js';
import { formatVector } from '../../sync/version-vector.js';
import { normalizeSharePath } from '../../transfer/paths.js';
import { COMPRESS_OPTION, compressionFrom, intOption, TRANSPORT_OPTION } from '../args.js';
import type { CommandContext, Runner } from '../context.js';
import { createProgress } from '../progress.js';
import { syncViaListener } from '../resident-client.js';
import { parseRemote } from './transfer.js';

/** Quiet time after the last file-system event before --watch syncs, ms. */
export const WATCH_DEBOUNCE_MS = 500;
/** --watch also syncs this often without local events, to pick up the peer's changes, ms (default of --interval). */
export const WATCH_INTERVAL_MS = 30_000;
/** --interval bounds, seconds: every sync rescans the peer's share too, so not below 1 s; at most a day. */
const WATCH_INTERVAL_MIN_S = 1;
const WATCH_INTERVAL_MAX_S = 86_400;
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

function report(ctx: CommandContext, r: SyncFolderResult, resident: boolean): void {
  for (const p of r.localOnly) ctx.out.emit({ event: 'local-only', path: p }, `local change not sent (receive-only): ${p}`);
  for (const p of r.skipped) ctx.out.emit({ event: 'skipped', path: p }, `left as is this time: ${p}`);
  ctx.out.emit(
    {
      event: 'done', inSync: r.inSync, roundTrips: r.roundTrips, reconcileBytes: r.reconcileBytes, revisionsSent: r.revisionsSent,
      revisionsReceived: r.revisionsReceived, chunksSent: r.chunksSent, wireBytes: r.wireBytes, conflicts: r.conflicts, seconds: Math.round(r.seconds * 1000) / 1000,
      scanned: r.scanned, resident,
    },
    `${r.inSync ? 'in sync' : 'NOT in sync'}: ${r.revisionsSent} revisions sent, ${r.revisionsReceived} received, ${r.chunksSent} chunks, ${r.conflicts} conflicts; ` +
      `reconciliation ${r.reconcileBytes} bytes in ${r.roundTrips} round trips, ${r.wireBytes} bytes on the wire, ${r.seconds.toFixed(2)} s` +
      `${resident ? ' (run by the listener' + (r.scanned ? ')' : ', folder unchanged since its last scan)') : ''}`,
  );
}

function parseMode(value: unknown): SyncModeName {
  if (value === 'two-way' || value === 'send-only' || value === 'receive-only') return value;
  throw new ClawpeerError('USAGE', `--mode must be two-way, send-only or receive-only, got ${JSON.stringify(value)}`);
}

/** Resolves after `ms`, or at once when `signal` aborts or `wake` is called. */
function waitFor(ms: number, signal: AbortSignal, onWake: (wake: () => void) => void): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    onWake(done);
  });
}

async function runSync(ctx: CommandContext, args: Record<string, unknown>): Promise<void> {
  const dir = path.resolve(String(args['dir']));
  const remote = parseRemote(String(args['remote']), true);
  if (remote.path !== '') throw new ClawpeerError('USAGE', `sync works on whole shares: use PEER:SHARE, not ${JSON.stringify(String(args['remote']))}`);
  const mode = parseMode(args['mode']);
  if (args['interval'] !== undefined && args['watch'] !== true) throw new ClawpeerError('USAGE', '--interval applies to --watch only');
  const intervalMs = args['interval'] === undefined ? WATCH_INTERVAL_MS : intOption(args['interval'], '--interval', WATCH_INTERVAL_MIN_S, WATCH_INTERVAL_MAX_S) * 1000;
  const config = resolveConfig({ transport: args['transport'], compression: compressionFrom(args) });
  const log = ctx.log.child('sync');
  // A listener of this home that serves `dir` runs the sync itself: it watches its shares, so
  // an unchanged folder is not scanned again (node/folder-watcher.ts). Otherwise this process
  // syncs; its modules (~60 ms to load, lmdb most of it) load while the peer is dialled.
  const realDir = await realpath(dir).catch(() => undefined);
  const inProcess = async (onProgress: ((p: TransferProgress) => void) | undefined): Promise<SyncFolderResult> => {
    const syncClient = import('../../node/sync-client.js');
    syncClient.catch(() => undefined); // a failure surfaces where it is awaited, not as unhandled
    const identity = await loadIdentity(ctx.home.identityKeyFile);
    const peer = await resolvePeer(new PeerStore(ctx.home.peersFile), remote.peer, args['addr'] as string | undefined);
    const { syncWithPeer } = await syncClient;
    return syncWithPeer({ identity, peer, config, dir, share: remote.share, mode, log, signal: ctx.signal, ...(onProgress === undefined ? {} : { onProgress }) });
  };
  const once = async (): Promise<void> => {
    const progress = createProgress(ctx.out);
    const onProgress = progress.active ? (p: TransferProgress) => progress.update(p) : undefined;
    let result: SyncFolderResult;
    let resident = false;
    try {
      const outcome = realDir === undefined ? undefined : await syncViaListener(ctx.home.dir, {
        op: 'sync', dir: realDir, peer: remote.peer, share: remote.share, mode, compression: config.compression, progress: onProgress !== undefined,
        ...(args['addr'] === undefined ? {} : { addr: String(args['addr']) }),
        ...(args['transport'] === undefined ? {} : { transport: String(args['transport']) }),
      }, onProgress, ctx.signal);
      if (outcome?.kind === 'done') {
        result = outcome.result;
        resident = true;
      } else {
        if (outcome !== undefined) log.debug('syncing in this process', { why: outcome.reason });
        result = await inProcess(onProgress);
      }
    } finally {
      progress.stop();
    }
    report(ctx, result, resident);
  };
  if (args['watch'] !== true) {
    await once();
    return;
  }

  // --watch: sync now, then after every burst of local changes (debounced) and every interval.
  await mkdir(dir, { recursive: true });
  let dirty = false;
  let wake: (() => void) | undefined;
  let debounce: NodeJS.Timeout | undefined;
  const onEvent = (_event: string, name: string | Buffer | null): void => {
    const rel = name === null ? '' : name.toString();
    const first = rel.split(path.sep)[0] ?? '';
    if (first === INTERNAL_DIR_NAME || isTempFileName(path.basename(rel))) return;
    dirty = true;
    clearTimeout(debounce);
    debounce = setTimeout(() => wake?.(), WATCH_DEBOUNCE_MS);
  };
  let watcher: FSWatcher;
  try {
    watcher = watch(dir, { recursive: true }, onEvent);
  } catch {
    watcher = watch(dir, {}, onEvent); // no recursive watching here: top level only, plus the interval
  }
  try {
    while (!ctx.signal.aborted) {
      dirty = false;
      try {
        await once();
      } catch (err) {
        if (ctx.signal.aborted) break;
        if (!(err instanceof ClawpeerError) || !err.retryable) throw err;
        ctx.log.warn('sync failed; retrying at the next change or interval', { error: err.message });
      }
      if (dirty) continue;
      await waitFor(intervalMs, ctx.signal, (w) => (wake = w));
      wake = undefined;
    }
  } finally {
    clearTimeout(debounce);
    watcher.close();
  }
}

/** The synced folder containing `target` (the nearest directory with a revision log) and the path inside it. */
async function locateFolder(target: string): Promise<{ folder: string; rel: string }> {
  const { REVLOG_DIR_NAME } = await import('../../node/revision-store.js');
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
  const { RevisionStore } = await import('../../node/revision-store.js');
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
  const { RevisionStore } = await import('../../node/revision-store.js');
  const { FolderLock } = await import('../../node/folder-lock.js');
  const { scanFolder } = await import('../../node/folder-scanner.js');
  const { historyBlobPath } = await import('../../node/sync-history.js');
  const { tempNameFor } = await import('../../node/publisher.js');
  const { manifestFromFile } = await import('../../chunking/file-chunker.js');
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
        await copyFile(source, tmp);
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
      await scanFolder(store, folder, { chunking });
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
  const { RevisionStore } = await import('../../node/revision-store.js');
  const { FolderLock } = await import('../../node/folder-lock.js');
  const { removeHistoryBlobs } = await import('../../node/sync-history.js');
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

export function registerSyncCommands(cli: Argv, run: Runner): Argv {
  return cli
    .command(
      'sync <dir> <remote>',
      'sync a local folder with a peer\'s share: REMOTE is PEER:SHARE',
      (y) =>
        y
          .positional('dir', { type: 'string' })
          .positional('remote', { type: 'string' })
          .option('mode', { type: 'string', choices: ['two-way', 'send-only', 'receive-only'], default: 'two-way', describe: 'which directions changes travel (of this side)' })
          .option('watch', { type: 'boolean', default: false, describe: 'keep syncing as files change, until SIGINT' })
          .option('interval', { type: 'number', describe: `with --watch: seconds between syncs when nothing changed here, i.e. how soon the peer's changes arrive (default ${WATCH_INTERVAL_MS / 1000})` })
          .option('addr', { type: 'string', describe: 'HOST:PORT (default: the pair entry\'s address)' })
          .option('transport', TRANSPORT_OPTION)
          .option('compress', COMPRESS_OPTION),
      run(runSync),
    )
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
