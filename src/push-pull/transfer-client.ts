// The initiating side of push and pull: scans or prepares locally, talks to the listener over
// the control channel, and runs the data plane in the right direction.
import { existsSync } from 'node:fs';
import { lstat } from 'node:fs/promises';
import { makeDirs } from '../support/make-dirs.js';
import path from 'node:path';
import { ClawpeerError, wireCodeFor } from '../errors.js';
import { bitmapSet, newBitmap, type ManifestEntry, type TransferDoneMessage } from '../protocol/messages.js';
import { backupProtection } from '../store/backups.js';
import { removePullState } from '../store/transfer-state.js';
import { uniqueChunks, type WantInfo } from '../transfer/chunk-order.js';
import type { ModeChange } from '../transfer/chmod.js';
import { DataStreamRouter, sessionRouter } from '../session/data-stream-router.js';
import { hearingJoinHints } from '../session/session-join.js';
import { dryRunReport, type DryRunReport, type DryRunVerdicts } from '../transfer/dry-run.js';
import { overMaxDelete, transferExtraneous, type Extraneous } from './extraneous.js';
import { replacedHistoryNode } from '../store/keeper.js';
import type { PeerSession } from '../session/session.js';
import {
  effectiveStreamsAndWindow,
  expectMessage,
  expectWant,
  manifestMessages,
  PREPARE_TIMEOUT_MS,
  receiveManifest,
  sessionChunking,
} from '../exchange/transfer-control.js';
import { TransferReceiver, type ReceiverOptions } from '../exchange/transfer-receive.js';
import { sendChunks } from '../exchange/transfer-send.js';
import { scanListed, scanSources, type ScanSourceOptions } from '../exchange/transfer-source.js';
import { settledWithin, withTimeout } from '../support/timeouts.js';
import { LOCAL_NAME_RULES } from '../transfer/paths.js';
import { RateLimiter } from '../transfer/rate-limiter.js';
import { TEST_HOOKS } from '../support/test-hooks.js';
import { ProgressCounter } from '../transfer/transfer-progress.js';
import { removeSentSources } from './source-removal.js';
import { RefusedPaths, refusedAtListener } from './refused-paths.js';
import { UnreadableEntries } from '../exchange/unreadable-entries.js';
import type { TransferOptions, TransferResult } from './transfer-types.js';
import {
  requireDelete,
  requireDryRun,
  requireExisting,
  requireFilter,
  requirePullFeatures,
  transferRequest,
} from './transfer-request.js';

/** After a local send failure, how long to wait for the peer's own explanation. */
const PEER_REASON_WAIT_MS = 2_000;
/** setTimeout's longest delay: a wait that another deadline bounds (see push()). */
const UNBOUNDED_MS = 2 ** 31 - 1;

export type { TransferOptions, TransferResult } from './transfer-types.js';

/** The result's kept count, when the options asked for an existing-file policy. */
function keptOf(o: TransferOptions, kept: number | undefined): Pick<TransferResult, 'filesKept'> {
  return o.existing === undefined ? {} : { filesKept: kept ?? 0 };
}

/** --max-delete here (a pull, or a pull's dry run): `list` within the cap, or nothing and the count over it. */
function withinMaxDelete<T>(
  o: TransferOptions,
  list: readonly T[],
): { list: readonly T[]; over: Pick<TransferResult, 'deletesOverLimit'> } {
  const over = overMaxDelete(list, o.maxDelete);
  return over === undefined ? { list, over: {} } : { list: [], over: { deletesOverLimit: over } };
}

/** The result's over-the-cap count as the listener told it. */
function overLimitOf(count: number | undefined): Pick<TransferResult, 'deletesOverLimit'> {
  return count === undefined ? {} : { deletesOverLimit: count };
}

/** The result's backup count, when the options asked for backups. */
function backedUpOf(o: TransferOptions, count: number | undefined): Pick<TransferResult, 'filesBackedUp'> {
  return o.backup === undefined ? {} : { filesBackedUp: count ?? 0 };
}

/** The result's --delete fields from what the receiver removed. */
function deletedOf(
  o: TransferOptions,
  paths: readonly string[] | undefined,
  count: number | undefined,
): Pick<TransferResult, 'deleted' | 'deletedCount'> {
  return o.delete === true ? { deleted: paths ?? [], deletedCount: count ?? paths?.length ?? 0 } : {};
}

/** A pull's --chmod: the listener's entries as they are to land here (symlinks keep theirs). */
function withModes(entries: ManifestEntry[], change: ModeChange | undefined): ManifestEntry[] {
  if (change === undefined) return entries;
  return entries.map((e) => (e.kind === 'symlink' ? e : { ...e, mode: change(e.mode, e.kind) }));
}

function wireBytesOf(session: PeerSession): number {
  const s = session.connection.stats();
  return s.bytesSent + s.bytesReceived;
}

export async function push(o: TransferOptions): Promise<TransferResult> {
  const { session } = o;
  const started = performance.now();
  const wireStart = wireBytesOf(session);
  const sources = o.sources ?? [o.localPath];
  for (const p of sources) {
    try {
      await lstat(p); // a dangling symlink is still something to push (as a link)
    } catch {
      throw new ClawpeerError('USAGE', `nothing to push: ${p} does not exist`);
    }
  }
  // Before the scan: a listener that cannot take the options is refused without hashing the tree.
  if (o.delete === true) {
    requireDelete(session);
    requireFilter(session, o.excludeRules); // the rules travel with --delete: what is protected
  }
  if (o.dryRun === true) requireDryRun(session);
  if (o.existing !== undefined) requireExisting(session);
  // Without 'backup' the listener would replace and remove without keeping anything.
  if (o.backup !== undefined)
    session.requireFeature('backup', 'cannot keep backups (--backup, --backup-dir)', 'push without them');
  // Without 'max-delete' the listener would remove however many paths --delete finds.
  if (o.delete === true && o.maxDelete !== undefined)
    session.requireFeature(
      'max-delete',
      'cannot cap --delete (--max-delete)',
      'push without --max-delete, or without --delete',
    );
  if (o.itemize === true && o.dryRun !== true)
    session.requireFeature('itemize', 'cannot list the files it publishes (--itemize)', 'push without --itemize');
  // Without 'fsync-none' the listener would fsync: safe, but not what was asked.
  if (o.fsync === 'none' && o.dryRun !== true)
    session.requireFeature('fsync-none', 'cannot publish without fsync (--fsync=none)', 'push with --fsync=batch');
  let hashed = 0;
  let hashedFiles = 0;
  // What cannot be read here is left out and named; the rest is sent (exit 23, as rsync's).
  const unreadable = new UnreadableEntries();
  const scanOptions: ScanSourceOptions = {
    chunking: sessionChunking(session),
    log: o.log,
    signal: o.signal,
    ...(o.excludeRules === undefined ? {} : { excludeRules: o.excludeRules }),
    ...(o.copyLinks === undefined ? {} : { copyLinks: o.copyLinks }),
    ...(o.sizes === undefined ? {} : { sizes: o.sizes }),
    ...(o.modeChange === undefined ? {} : { modeChange: o.modeChange }),
    onFileHashed: (bytes) => {
      hashed += bytes;
      o.onProgress?.({ phase: 'scanning', bytes: hashed, totalBytes: 0, files: ++hashedFiles, totalFiles: 0 });
    },
    onUnreadable: (entry) => unreadable.add(entry),
  };
  const source =
    o.filesFrom === undefined
      ? await scanSources(sources, scanOptions)
      : await scanListed(o.localPath, o.filesFrom, scanOptions);
  const totalFiles = source.files.size;
  // As rsync's "IO error encountered -- skipping file deletion": what could not be read is
  // missing from the manifest, and --delete would remove the listener's copy of it.
  const asked = unreadable.count > 0 && o.delete === true ? { ...o, delete: false } : o;
  if (o.dryRun === true) {
    const plan = { ...(await pushDryRun(asked, source.entries, started, wireStart)), ...unreadable.fields() };
    return o.removeSourceFiles === true
      ? { ...plan, sourceRemoved: source.entries.filter((e) => e.kind !== 'dir').length, sourceChanged: [] }
      : plan;
  }
  const id = session.allocateTransferId();
  // The manifest follows the request without waiting for the accept: one round trip less.
  // If the listener refuses, its Error arrives instead of the accept and the batches are moot.
  await session.control.sendAll([transferRequest(asked, id, 'push'), ...manifestMessages(session, id, source.entries)]);
  // With early chunks the data streams start now, before the accept and the Want; the listener
  // clamps streams and window to the session's caps, so we know them already.
  const { streams, window } = effectiveStreamsAndWindow(session, o.streams, o.window);
  const accepted = (async () => {
    const accept = await expectMessage(session, 'transfer-accept', id, o.idleTimeoutMs, o.signal);
    if (accept.streams !== streams || accept.window !== window) {
      throw new ClawpeerError(
        'PROTOCOL',
        `listener accepted ${accept.streams} streams and a window of ${accept.window}, expected ${streams} and ${window}`,
      );
    }
    return expectWant(session, id, PREPARE_TIMEOUT_MS, o.signal);
  })();

  // While chunks flow, the receiver may fail (its Error arrives on the control channel): stop sending then.
  const abort = new AbortController();
  const onOuter = (): void => abort.abort();
  o.signal.addEventListener('abort', onOuter, { once: true });
  // One receive() at a time on the control channel: the done is read after the Want, while the
  // chunks flow (an Error instead stops the sending). That read has no deadline of its own: the
  // data streams' ack deadlines and the connection's idle timeout bound the sending, however
  // long a big or rate-capped push takes; the listener's publish after it gets PREPARE_TIMEOUT_MS.
  const done = accepted.then(() => expectMessage(session, 'transfer-done', id, UNBOUNDED_MS, o.signal));
  done.catch(() => abort.abort());
  const sending = new ProgressCounter((p) => o.onProgress?.(p), 'sending', 0, totalFiles);
  try {
    const stats = await sendChunks({
      session,
      transferId: id,
      source,
      want: accepted,
      streams,
      window,
      idleTimeoutMs: o.idleTimeoutMs,
      signal: abort.signal,
      log: o.log,
      ...(o.bwlimit === undefined ? {} : { rateLimiters: [new RateLimiter(o.bwlimit)] }),
      onChunkSent: (bytes) => sending.addBytes(bytes),
      onTotalBytes: (bytes) => sending.setTotalBytes(bytes),
      ...(o.onProgress === undefined ? {} : { onFilesDelivered: (files: number) => sending.setFiles(files) }),
    }).catch(async (err: unknown) => {
      if (o.signal.aborted) throw err; // stopped here (Ctrl-C): the CLI tells it, and nothing from the peer is awaited
      // If the peer reported why (its Error follows shortly), its reason beats our "aborted", and
      // is the one message the user sees (ours stays in the -v log).
      const peer = await settledWithin(done, PEER_REASON_WAIT_MS);
      if (peer?.status === 'rejected') {
        o.log.info('sending stopped: the peer said why', { error: (err as Error).message });
        throw peer.reason;
      }
      throw err;
    });
    o.onProgress?.({
      phase: 'publishing',
      bytes: sending.bytes,
      totalBytes: stats.bytesSent,
      files: sending.files,
      totalFiles,
    });
    const result: TransferDoneMessage = await withTimeout(
      done,
      TEST_HOOKS.publishTimeoutMs ?? PREPARE_TIMEOUT_MS,
      `waiting for transfer-done from ${session.peerId}`,
    );
    // Only now: the listener holds everything published (or identical already), but what it refused.
    const refusedThere = refusedAtListener(result);
    const notWritten =
      refusedThere === undefined
        ? undefined
        : (p: string): boolean => refusedThere(o.remotePath === '' ? p : path.posix.join(o.remotePath, p));
    const removal =
      o.removeSourceFiles === true
        ? await removeSentSources(source, sessionChunking(session), o.signal, notWritten)
        : undefined;
    return {
      ...(removal === undefined ? {} : { sourceRemoved: removal.removed.length, sourceChanged: removal.changed }),
      files: result.files,
      bytes: result.bytes,
      wireBytes: wireBytesOf(session) - wireStart,
      chunksSent: stats.chunksSent,
      chunksSkipped: stats.chunksSkipped,
      chunksCompressed: stats.chunksCompressed,
      streams: stats.streamsUsed,
      window,
      seconds: (performance.now() - started) / 1000,
      ...deletedOf(asked, result.deleted, result.deletedCount),
      ...keptOf(o, result.filesKept),
      ...backedUpOf(o, result.filesBackedUp),
      ...overLimitOf(result.deletesOverLimit),
      ...(o.itemize === true
        ? {
            published: result.published ?? [],
            ...(result.created === undefined ? {} : { created: result.created }),
            ...(result.updated === undefined ? {} : { updated: result.updated }),
          }
        : {}),
      ...(result.refusedCount === undefined
        ? {}
        : { refused: result.refused ?? [], refusedCount: result.refusedCount }),
      ...unreadable.fields(),
    };
  } finally {
    o.signal.removeEventListener('abort', onOuter);
  }
}

/** The push's dry run: the listener answers the manifest with its Want and what it would publish. */
async function pushDryRun(
  o: TransferOptions,
  entries: readonly ManifestEntry[],
  started: number,
  wireStart: number,
): Promise<TransferResult> {
  const { session } = o;
  const id = session.allocateTransferId();
  await session.control.sendAll([transferRequest(o, id, 'push'), ...manifestMessages(session, id, entries)]);
  const accept = await expectMessage(session, 'transfer-accept', id, PREPARE_TIMEOUT_MS, o.signal);
  const want = await expectMessage(session, 'want', id, PREPARE_TIMEOUT_MS, o.signal);
  if (want.publish === undefined && entries.some((e) => e.kind === 'file'))
    throw new ClawpeerError(
      'PROTOCOL',
      `peer ${session.peerId} answered a dry run without saying what it would publish`,
    );
  const done = await expectMessage(session, 'transfer-done', id, PREPARE_TIMEOUT_MS, o.signal);
  const planned = dryRunReport(
    entries,
    { lacking: want.lacking, uniqueCount: want.uniqueChunks },
    {
      publish: want.publish ?? new Uint8Array(0),
      create: want.create,
      touchTime: want.touchTime,
      touchPerms: want.touchPerms,
    },
  );
  // Paths as they would land in the share: under the remote path.
  const under = (p: string): string => path.posix.join(o.remotePath, p);
  const report =
    o.remotePath === ''
      ? planned
      : {
          ...planned,
          files: planned.files.map((f) => ({ ...f, path: under(f.path) })),
          touched: planned.touched.map((f) => ({ ...f, path: under(f.path) })),
          ...(planned.others === undefined
            ? {}
            : { others: planned.others.map((e) => ({ ...e, path: under(e.path) })) }),
        };
  return {
    ...dryRunResult(session, done.files, done.bytes, report, accept, started, wireStart),
    ...deletedOf(o, done.deleted, done.deletedCount),
    ...keptOf(o, done.filesKept),
    ...overLimitOf(done.deletesOverLimit),
  };
}

function dryRunResult(
  session: PeerSession,
  files: number,
  bytes: number,
  report: DryRunReport,
  accept: { streams: number; window: number },
  started: number,
  wireStart: number,
): TransferResult {
  return {
    files,
    bytes,
    wireBytes: wireBytesOf(session) - wireStart,
    chunksSent: 0,
    chunksSkipped: 0,
    chunksCompressed: 0,
    streams: accept.streams,
    window: accept.window,
    seconds: (performance.now() - started) / 1000,
    dryRun: report,
  };
}

export async function pull(o: TransferOptions): Promise<TransferResult> {
  const { session } = o;
  const started = performance.now();
  const wireStart = wireBytesOf(session);
  const root = path.resolve(o.localPath);
  if (o.dryRun === true) return pullDryRun(o, root, started, wireStart);
  const router = sessionRouter(o.session, o.idleTimeoutMs, o.log);
  const id = session.allocateTransferId();
  // The listener's data streams (early chunks) may come while we stage: they wait for our receiver.
  return router.expecting(id, () => pullWith(o, router, id, started, wireStart, root));
}

/** The pull's dry run: the listener sends its manifest; we plan here, write nothing, and end it. */
async function pullDryRun(
  o: TransferOptions,
  root: string,
  started: number,
  wireStart: number,
): Promise<TransferResult> {
  const { session } = o;
  requireDryRun(session);
  requirePullFeatures(o);
  const id = session.allocateTransferId();
  await session.control.send(transferRequest(o, id, 'pull'));
  const accept = await expectMessage(session, 'transfer-accept', id, PREPARE_TIMEOUT_MS, o.signal);
  const unreadable = new UnreadableEntries();
  const entries = withModes(
    await receiveManifest(session, id, PREPARE_TIMEOUT_MS, o.signal, (told) => unreadable.told(told)),
    o.modeChange,
  );
  let plan: WantInfo & DryRunVerdicts & { filesKept?: number };
  let wouldRemove: string[] = [];
  if (existsSync(root)) {
    // Its router is never run: no data stream comes in a dry run.
    const receiver = pullReceiver(
      o,
      new DataStreamRouter(session.connection, session.caps.maxFrameBytes, o.idleTimeoutMs, o.log),
      id,
      entries,
      root,
    );
    plan = await receiver.dryRun();
    // Not past what the listener could not read (it is missing from the manifest), as rsync.
    if (o.delete === true && unreadable.count === 0)
      wouldRemove = (await pulledExtraneous(o, root, entries, receiver)).map((e) => e.path);
  } else {
    // Nothing there yet: every file is new and every chunk travels.
    const { keys } = uniqueChunks(entries);
    const files = entries.filter((e) => e.kind === 'file').length;
    plan = {
      lacking: allSet(keys.length),
      uniqueCount: keys.length,
      publish: allSet(files),
      create: allSet(entries.length - files),
    };
  }
  const report = dryRunReport(entries, plan, plan);
  const bytes = report.files.reduce((n, f) => n + f.bytes, 0);
  await session.control.send({
    type: 'transfer-done',
    transferId: id,
    files: report.files.length,
    bytes,
    chunksReceived: 0,
    chunksSkipped: 0,
  });
  return {
    ...dryRunResult(session, report.files.length, bytes, report, accept, started, wireStart),
    ...deletedOf(o, wouldRemove, undefined),
    ...keptOf(o, plan.filesKept),
    ...withinMaxDelete(o, wouldRemove).over,
    ...unreadable.fields(),
  };
}

/** --delete after a pull: what the pulled directories hold here beyond the listener's tree. */
function pulledExtraneous(
  o: TransferOptions,
  root: string,
  entries: readonly ManifestEntry[],
  receiver: TransferReceiver,
): Promise<Extraneous[]> {
  return transferExtraneous({
    root,
    basePath: '',
    entries,
    destPaths: receiver.destinationPaths,
    contentsOnly: o.remotePath === '', // a whole share lands as LOCAL's contents
    ...(o.excludeRules === undefined ? {} : { exclude: o.excludeRules }),
    ...(o.backup === undefined ? {} : { spare: backupProtection(o.backup, '') }),
  });
}

/** A pull's receiver: into `root` here, with the options' existing-file policy and backups (a pull applies its own). */
function pullReceiver(
  o: TransferOptions,
  router: DataStreamRouter,
  id: number,
  entries: readonly ManifestEntry[],
  root: string,
  extra: Pick<ReceiverOptions, 'onChunkWritten' | 'onPublished' | 'keeper' | 'onRefused'> = {},
): TransferReceiver {
  return new TransferReceiver({
    session: o.session,
    router,
    transferId: id,
    entries,
    chunking: sessionChunking(o.session),
    signal: o.signal,
    log: o.log,
    destination: { root, readOnly: false, basePath: '' },
    force: o.force,
    ...(o.existing === undefined ? {} : { existing: o.existing }),
    ...(o.backup === undefined ? {} : { backup: o.backup }),
    ...(o.itemize === true ? { itemize: true } : {}),
    ...(o.fsync === undefined ? {} : { fsync: o.fsync }),
    nameRules: LOCAL_NAME_RULES,
    ...extra,
  });
}

function allSet(bits: number): Uint8Array {
  const bitmap = newBitmap(bits);
  for (let i = 0; i < bits; i++) bitmapSet(bitmap, i);
  return bitmap;
}

async function pullWith(
  o: TransferOptions,
  router: DataStreamRouter,
  id: number,
  started: number,
  wireStart: number,
  root: string,
): Promise<TransferResult> {
  const { session } = o;
  requirePullFeatures(o);
  await session.control.send(transferRequest(o, id, 'pull'));
  const accept = await expectMessage(session, 'transfer-accept', id, PREPARE_TIMEOUT_MS, o.signal);
  const unreadable = new UnreadableEntries();
  const entries = withModes(
    await receiveManifest(session, id, PREPARE_TIMEOUT_MS, o.signal, (told) => unreadable.told(told)),
    o.modeChange,
  );
  const lone = entries[0];
  if (o.singleFile === true && (entries.length !== 1 || lone?.kind !== 'file')) {
    const what = lone?.kind === 'symlink' ? 'a symlink' : 'a directory';
    throw new ClawpeerError('USAGE', `${o.remotePath} is ${what}: pull it into a directory, not to standard output`);
  }
  // Only now: a pull the listener refuses (a missing path, a bad list) leaves no empty directory.
  try {
    await makeDirs(root);
  } catch (err) {
    const failed = new ClawpeerError('IO', `cannot create ${root}: ${(err as Error).message}`, { cause: err });
    await session.control.sendError(wireCodeFor(failed).name, failed.message).catch(() => undefined);
    throw failed;
  }
  const totalFiles = entries.filter((e) => e.kind === 'file').length;
  const receiving = new ProgressCounter((p) => o.onProgress?.(p), 'receiving', 0, totalFiles);
  // Into a synced folder's root, what --force or --update replaces stays in its history (no --backup).
  const historyNode = replacedHistoryNode(o);
  const history =
    historyNode === undefined
      ? undefined
      : await (await import('./delete-history.js')).historyKeeperFor(root, historyNode);
  // What this node may not write is left out and named; the rest lands (exit 23, as rsync's).
  const refused = new RefusedPaths();
  const receiver = pullReceiver(o, router, id, entries, root, {
    onRefused: (relPath, error) => {
      refused.refuse(relPath, error);
      o.log.debug('pull: cannot write a path here; left out', { path: relPath, error: error.message });
    },
    onChunkWritten: (bytes) => receiving.addBytes(bytes),
    onPublished: (files) => receiving.setFiles(files),
    ...(history === undefined ? {} : { keeper: history }),
  });
  try {
    const plan = await receiver.prepare();
    receiving.setTotalBytes(plan.lackingBytes);
    await session.control.send({ type: 'want', transferId: id, lacking: plan.lacking, uniqueChunks: plan.uniqueCount });
    const stats = await hearingJoinHints(session, () => receiver.receive());
    await session.control.send({
      type: 'transfer-done',
      transferId: id,
      files: stats.files,
      bytes: stats.bytes,
      chunksReceived: stats.chunksReceived,
      chunksSkipped: stats.chunksSkipped,
    });
    // Only once everything is published: a failed pull removes nothing.
    // Nothing past what the listener could not read (missing from the manifest), as rsync.
    const deleting = o.delete === true && unreadable.count === 0;
    const toRemove = withinMaxDelete(o, deleting ? await pulledExtraneous(o, root, entries, receiver) : []);
    // The revision log's module (lmdb) loads only when there is something to remove.
    const removed =
      toRemove.list.length === 0
        ? []
        : (
            await (
              await import('./delete-history.js')
            ).removeExtraneousKeeping(root, toRemove.list, { backups: receiver.backups, nodeId: o.nodeId })
          ).map((e) => e.path);
    // A plain destination keeps no .clawpeer/ once the pull is complete (a synced folder's stays).
    await removePullState(root).catch((err: unknown) =>
      o.log.debug('cannot remove the pull state', { root, error: (err as Error).message }),
    );
    return {
      files: stats.files,
      bytes: stats.bytes,
      wireBytes: wireBytesOf(session) - wireStart,
      chunksSent: stats.chunksReceived,
      chunksSkipped: stats.chunksSkipped,
      chunksCompressed: stats.chunksCompressed,
      streams: accept.streams,
      window: accept.window,
      seconds: (performance.now() - started) / 1000,
      ...deletedOf(o, removed, undefined),
      ...keptOf(o, stats.filesKept),
      ...backedUpOf(o, receiver.backups?.count),
      ...toRemove.over,
      ...(stats.published === undefined ? {} : { published: stats.published }),
      ...(stats.created === undefined ? {} : { created: stats.created }),
      ...(stats.updated === undefined ? {} : { updated: stats.updated }),
      ...refused.fields(),
      ...unreadable.fields(),
    };
  } catch (err) {
    await receiver.abort();
    // Tell the sender why we stopped, unless it was the sender that told us.
    if (err instanceof ClawpeerError && err.wire === undefined)
      await session.control.sendError(wireCodeFor(err).name, err.message).catch(() => undefined);
    throw err;
  } finally {
    await history?.close();
  }
}
