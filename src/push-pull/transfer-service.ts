// The listener's side of a push (we receive) and a pull (we send), against its shares; the
// dispatch of a session's requests is listener/dispatch.ts. One transfer at a time per session;
// an error is reported to the peer as a wire Error and ends that session only. A push holds a
// destination lock (store/destination-locks.ts) from staging to publish, so a rerun after a
// killed client supersedes the stale receiver instead of racing it.
import path from 'node:path';
import type { ChunkingParams } from '../chunking/fastcdc.js';
import { ClawpeerError } from '../errors.js';
import type { Logger } from '../logger.js';
import {
  listedEntryBytes,
  MAX_LISTED_DELETIONS,
  MAX_LISTED_PUBLISHED,
  MAX_LISTED_PUBLISHED_BYTES,
  type ManifestMessage,
  type TransferRequestMessage,
  type UnreadablePath,
} from '../protocol/messages.js';
import { escapeToShow } from '../format.js';
import { compileExcludes, compileFilter, type ExcludeRules } from '../transfer/exclude.js';
import { LOCAL_NAME_RULES, normalizeSharePath } from '../transfer/paths.js';
import type { ChunkIndexPool } from '../store/chunk-index-pool.js';
import type { Activity } from '../session/listener-activity.js';
import type { NodeConfig } from '../home/config.js';
import { DataStreamRouter } from '../session/data-stream-router.js';
import { claimPaths, DestinationHold, PROCESS_DESTINATION_LOCKS } from '../store/destination-locks.js';
import { overMaxDelete, transferExtraneous, type Extraneous } from './extraneous.js';
import { historyKeeperFor, removeExtraneousKeeping } from './delete-history.js';
import { replacedHistoryNode, type Keeper } from '../store/keeper.js';
import { backupPlan, backupProtection, type BackupPlan } from '../store/backups.js';
import { isInternalPath } from '../store/internal-names.js';
import type { PeerSession } from '../session/session.js';
import {
  existingSharePath,
  onDiskSegments,
  findShare,
  refuseReadingReceiveOnly,
  refuseUnsyncedInto,
  type Share,
} from '../home/shares.js';
import {
  effectiveStreamsAndWindow,
  expectMessage,
  expectWant,
  manifestMessages,
  PREPARE_TIMEOUT_MS,
  receiveManifest,
  sessionChunking,
} from '../exchange/transfer-control.js';
import { TransferReceiver } from '../exchange/transfer-receive.js';
import { RefusedPaths } from './refused-paths.js';
import { UnreadableEntries } from '../exchange/unreadable-entries.js';
import { sendChunks } from '../exchange/transfer-send.js';
import { scanListed, scanSource, type SizeRange } from '../exchange/transfer-source.js';
import { RateLimiter } from '../transfer/rate-limiter.js';

/**
 * How long a push waits for another peer's push into the same destination to finish, ms; then
 * it fails with FOLDER_BUSY. Also bounds the cleanup of a superseded push of the same peer.
 */
export const DESTINATION_WAIT_MS = 30_000;

/** What serving a push or a pull needs of the listener (listener/dispatch.ts passes its context). */
export interface TransferServiceContext {
  readonly shares: readonly Share[];
  readonly config: NodeConfig;
  readonly log: Logger;
  /** This node's id, named in errors and in a synced share's history. */
  readonly nodeId?: string;
  /** The listener's in-memory chunk indexes, one per share (see store/chunk-index-pool.ts). */
  readonly indexes?: ChunkIndexPool;
  /** listen --bwlimit: one cap on everything the listener sends, all peers and transfers together. */
  readonly sendLimiter?: RateLimiter;
}

/** What serving one transfer request starts from: the request, resolved against the share and the session. */
interface TransferSetup {
  readonly id: number;
  readonly share: Share;
  readonly basePath: string;
  readonly streams: number;
  readonly window: number;
  readonly chunking: ChunkingParams;
}

export async function serveTransfer(
  session: PeerSession,
  router: DataStreamRouter,
  req: TransferRequestMessage,
  ctx: TransferServiceContext,
  signal: AbortSignal,
  activity: Activity | undefined,
): Promise<void> {
  const share = findShare(ctx.shares, req.share, session.peerId);
  const basePath = req.path === '' ? '' : normalizeSharePath(req.path, LOCAL_NAME_RULES);
  const t: TransferSetup = {
    id: req.transferId,
    share,
    basePath,
    ...effectiveStreamsAndWindow(session, req.streams, req.window),
    chunking: sessionChunking(session),
  };
  ctx.log.info(`${req.direction} requested`, {
    peer: session.peerId,
    share: share.name,
    path: basePath,
    streams: t.streams,
    window: t.window,
  });
  if (req.direction === 'push') {
    if ((req.exclude !== undefined || req.filter !== undefined) && req.delete !== true)
      throw new ClawpeerError(
        'PROTOCOL',
        'exclude patterns apply to pulls, and to what a push with delete may remove; a push leaves out files on the sending side',
      );
    if (req.rateLimit !== undefined)
      throw new ClawpeerError('PROTOCOL', 'a rate limit applies to pulls; a push caps its own sending');
    if (req.minSize !== undefined || req.maxSize !== undefined)
      throw new ClawpeerError('PROTOCOL', 'size bounds apply to pulls; a push leaves out files on the sending side');
    if (req.filesFrom !== undefined)
      throw new ClawpeerError('PROTOCOL', 'a files-from list applies to pulls; a push sends what it lists itself');
    if (req.existing !== undefined && req.force)
      throw new ClawpeerError('PROTOCOL', 'force and an existing-files policy (keep, update) exclude each other');
    peerBackupPlan(req); // a malformed one is refused before anything is accepted
    if (req.maxDelete !== undefined && req.delete !== true)
      throw new ClawpeerError('PROTOCOL', 'a delete limit applies to a push with delete');
    // The client's data streams (early chunks) may come while we prepare: they wait for the receiver.
    await router.expecting(t.id, () => servePush(session, router, req, ctx, signal, t, activity));
  } else {
    if (req.delete === true)
      throw new ClawpeerError(
        'PROTOCOL',
        'delete applies to pushes; a pull removes what the source lacks on its own side',
      );
    if (req.existing !== undefined)
      throw new ClawpeerError(
        'PROTOCOL',
        "an existing-files policy applies to pushes; a pull's receiver applies its own",
      );
    if (req.backup !== undefined)
      throw new ClawpeerError('PROTOCOL', "backups apply to pushes; a pull's receiver makes its own");
    if (req.maxDelete !== undefined)
      throw new ClawpeerError('PROTOCOL', "a delete limit applies to pushes; a pull's receiver applies its own");
    if (req.itemize === true)
      throw new ClawpeerError(
        'PROTOCOL',
        "itemize applies to pushes; a pull's receiver lists what it publishes itself",
      );
    if (req.noFsync === true)
      throw new ClawpeerError('PROTOCOL', "no-fsync applies to pushes; a pull's receiver chooses its own durability");
    refuseReadingReceiveOnly(share, 'a pull');
    await servePull(session, req, ctx, signal, t, activity);
  }
}

async function servePush(
  session: PeerSession,
  router: DataStreamRouter,
  req: TransferRequestMessage,
  ctx: TransferServiceContext,
  signal: AbortSignal,
  t: TransferSetup,
  activity: Activity | undefined,
): Promise<void> {
  const { config, log } = ctx;
  const { id, share, basePath, streams, window, chunking } = t;
  if (share.readOnly)
    throw new ClawpeerError('SHARE_READ_ONLY', `share ${share.name} is read-only: pushes are refused`);
  if (req.delete === true && share.noDelete === true)
    throw new ClawpeerError(
      'SHARE_FORBIDDEN',
      `share ${share.name} refuses push --delete (it is served with :nodelete): push without --delete`,
    );
  refuseUnsyncedInto(share, req.noFsync);
  // --delete: what the pushed directories hold beyond the source goes, the client's patterns spared.
  const protect = peerExcludes(req);
  const backup = peerBackupPlan(req);
  await session.control.send({ type: 'transfer-accept', transferId: id, streams, window });
  const entries = await receiveManifest(session, id, config.idleTimeoutMs, signal);
  const fileCount = entries.filter((e) => e.kind === 'file').length;
  activity?.setTotals(
    entries.reduce((n, e) => n + (e.kind === 'file' ? e.size : 0), 0),
    fileCount,
  );
  const receiverUntil = (until: AbortSignal, keeper?: Keeper, refused?: RefusedPaths): TransferReceiver =>
    new TransferReceiver({
      session,
      router,
      transferId: id,
      entries,
      chunking,
      signal: until,
      log,
      ...(activity === undefined
        ? {}
        : {
            onChunkWritten: (bytes: number) => activity.addBytes(bytes),
            onPublished: (n: number) => activity.setFiles(n),
          }),
      destination: { root: share.dir, readOnly: share.readOnly, basePath, name: `share ${share.name}` },
      force: req.force,
      ...(req.existing === undefined ? {} : { existing: req.existing }),
      ...(ctx.indexes === undefined ? {} : { indexes: ctx.indexes }),
      ...(backup === undefined ? {} : { backup }),
      ...(keeper === undefined ? {} : { keeper }),
      ...(req.itemize === true ? { itemize: true } : {}),
      ...(req.noFsync === true ? { fsync: 'none' as const } : {}),
      nameRules: LOCAL_NAME_RULES,
      ...(refused === undefined
        ? {}
        : {
            onRefused: (relPath: string, error: Error) => {
              const { reason } = refused.refuse(relPath, error);
              log.warn('push: cannot write a path here; left out, the rest lands', {
                peer: session.peerId,
                share: share.name,
                path: relPath,
                reason,
                error: error.message,
              });
            },
          }),
    });
  const extraneous = async (receiver: TransferReceiver): Promise<Extraneous[]> =>
    req.delete !== true
      ? []
      : transferExtraneous({
          root: share.dir,
          basePath,
          entries,
          destPaths: receiver.destinationPaths,
          contentsOnly: false,
          ...(protect === undefined ? {} : { exclude: protect }),
          ...(backup === undefined ? {} : { spare: backupProtection(backup, basePath) }),
        });
  if (req.dryRun === true) {
    // Plans only: no lock (nothing is written), no data stream; the Want says what would travel.
    const receiver = receiverUntil(signal);
    const plan = await receiver.dryRun();
    const wouldRemove = await extraneous(receiver);
    await session.control.sendAll([
      {
        type: 'want',
        transferId: id,
        lacking: plan.lacking,
        uniqueChunks: plan.uniqueCount,
        publish: plan.publish,
        create: plan.create,
        // Only when some file would be touched: an all-clear bitmap says nothing an empty one does not.
        ...(plan.touchTime.some((b) => b !== 0) ? { touchTime: plan.touchTime } : {}),
        ...(plan.touchPerms.some((b) => b !== 0) ? { touchPerms: plan.touchPerms } : {}),
      },
      {
        type: 'transfer-done',
        transferId: id,
        files: plan.files,
        bytes: plan.bytes,
        chunksReceived: 0,
        chunksSkipped: 0,
        ...deletedFields(wouldRemove),
        ...keptField(plan.filesKept),
        ...overLimitField(req, wouldRemove),
      },
    ]);
    log.info('push dry run answered', {
      peer: session.peerId,
      share: share.name,
      files: plan.files,
      bytes: plan.bytes,
    });
    return;
  }
  // This transfer's own signal: the session ending, or a newer push of the same peer into the
  // same destination (then this one is a leftover of a killed client), stops it.
  const hold = new DestinationHold(PROCESS_DESTINATION_LOCKS, session.peerId, signal);
  // In a synced folder, what --force or --update replaces stays in its history (no --backup).
  const historyNode = replacedHistoryNode({ force: req.force, existing: req.existing, backup, nodeId: ctx.nodeId });
  const history = historyNode === undefined ? undefined : await historyKeeperFor(share.dir, historyNode);
  try {
    // Built first: it confines the announced paths, and the lock claims exactly those.
    const refused = new RefusedPaths();
    const receiver = receiverUntil(hold.signal, history, refused);
    await claimPushDestination(hold, session, share, basePath, receiver.destinationPaths, ctx);
    try {
      const plan = await receiver.prepare();
      activity?.setTotals(plan.lackingBytes, fileCount); // what will arrive: the chunks not held here
      await session.control.send({
        type: 'want',
        transferId: id,
        lacking: plan.lacking,
        uniqueChunks: plan.uniqueCount,
      });
      const stats = await receiver.receive();
      // Only once everything is published: a failed push removes nothing.
      const toRemove = await extraneous(receiver);
      const overLimit = overLimitField(req, toRemove); // over --max-delete: nothing is removed
      const removed =
        overLimit.deletesOverLimit === undefined
          ? await removeExtraneousKeeping(share.dir, toRemove, { backups: receiver.backups, nodeId: ctx.nodeId })
          : [];
      await session.control.send({
        type: 'transfer-done',
        transferId: id,
        files: stats.files,
        bytes: stats.bytes,
        chunksReceived: stats.chunksReceived,
        chunksSkipped: stats.chunksSkipped,
        ...deletedFields(removed),
        ...keptField(stats.filesKept),
        ...(backup === undefined ? {} : { filesBackedUp: receiver.backups?.count ?? 0 }),
        ...overLimit,
        ...(stats.published === undefined ? {} : { published: listedWithin(stats.published) }),
        ...(stats.created === undefined ? {} : { created: listedWithin(stats.created) }),
        ...(stats.updated === undefined ? {} : { updated: listedWithin(stats.updated) }),
        ...refused.fields(),
      });
      log.info('push received', {
        peer: session.peerId,
        share: share.name,
        files: stats.files,
        bytes: stats.bytes,
        ...(refused.count === 0 ? {} : { refused: refused.count }),
        ...(req.delete === true ? { deleted: removed.length } : {}),
      });
    } catch (err) {
      await receiver.abort();
      throw hold.errorFor(err);
    }
  } finally {
    hold.release(); // only after abort() finished: the next push finds no cleanup in progress
    await history?.close();
  }
}

/** A pull's size bounds as scan options (absent: none). */
function peerSizes(req: TransferRequestMessage): { sizes?: SizeRange } {
  if (req.minSize === undefined && req.maxSize === undefined) return {};
  return {
    sizes: {
      ...(req.minSize === undefined ? {} : { min: req.minSize }),
      ...(req.maxSize === undefined ? {} : { max: req.maxSize }),
    },
  };
}

/** A pull's files-from paths, each canonical and confined; PROTOCOL naming the first that is not (the peer's CLI checks them first). */
function peerFileList(paths: readonly string[]): string[] {
  return paths.map((p) => {
    try {
      return normalizeSharePath(p, LOCAL_NAME_RULES);
    } catch (err) {
      throw new ClawpeerError('PROTOCOL', `TransferRequest.filesFrom: ${(err as Error).message}`);
    }
  });
}

/** A push's backup request as a plan; a malformed one is the peer's fault (its CLI checks it first). */
function peerBackupPlan(req: TransferRequestMessage): BackupPlan | undefined {
  if (req.backup === undefined) return undefined;
  try {
    return backupPlan(req.backup.dir === '' ? undefined : req.backup.dir, req.backup.suffix);
  } catch (err) {
    throw new ClawpeerError('PROTOCOL', `TransferRequest.backup: ${(err as Error).message}`);
  }
}

async function servePull(
  session: PeerSession,
  req: TransferRequestMessage,
  ctx: TransferServiceContext,
  signal: AbortSignal,
  t: TransferSetup,
  activity: Activity | undefined,
): Promise<void> {
  const { config, log } = ctx;
  const { id, share, basePath, streams, window, chunking } = t;
  const local = await existingSharePath(share, basePath);
  const rules = peerExcludes(req);
  // What cannot be read here is left out, warned of and told to the client; the rest is sent.
  const unreadable = new UnreadableEntries();
  const scanOptions = {
    chunking,
    log,
    signal,
    onUnreadable: (entry: UnreadablePath) => {
      unreadable.add(entry);
      log.warn('pull: cannot read an entry here; left out, the rest is sent', {
        peer: session.peerId,
        share: share.name,
        path: entry.path,
        error: entry.error,
      });
    },
    ...(rules === undefined ? {} : { excludeRules: rules }),
    ...peerSizes(req),
    // -L: what a link leads to goes only when that is inside the share (tree-scan's followWithin),
    // or inside the path pulled in a share of some paths (`send`): never to a sibling.
    ...(req.copyLinks === undefined
      ? {}
      : {
          copyLinks: req.copyLinks,
          followWithin:
            share.only === undefined ? share.dir : path.join(share.dir, onDiskSegments(share, basePath)[0] ?? ''),
        }),
  };
  // A files-from list: its paths, relative to the requested directory (scanListed confines them:
  // no `..`, no symlinked directory on the way, no clawpeer state).
  const source =
    req.filesFrom !== undefined
      ? await scanListed(
          local,
          peerFileList(req.filesFrom),
          scanOptions,
          basePath === '' ? `share ${share.name}` : `${share.name}/${basePath}`,
        )
      : await scanSource(local, {
          ...scanOptions,
          rootName: basePath === '' ? null : path.posix.basename(basePath),
          exclude: (rel) => basePath === '' && isInternalPath(rel),
        });
  await session.control.sendAll([
    { type: 'transfer-accept', transferId: id, streams, window },
    ...withUnreadable(manifestMessages(session, id, source.entries), unreadable),
  ]);
  if (req.dryRun === true) {
    // The client plans on its side and ends the transfer: nothing to send.
    await expectMessage(session, 'transfer-done', id, PREPARE_TIMEOUT_MS, signal);
    log.info('pull dry run served', { peer: session.peerId, share: share.name });
    return;
  }
  const want = expectWant(session, id, PREPARE_TIMEOUT_MS, signal);
  activity?.setTotals(
    [...source.files.values()].reduce((n, f) => n + f.manifest.size, 0),
    source.files.size,
  );
  await sendChunks({
    session,
    transferId: id,
    source,
    want,
    streams,
    window,
    idleTimeoutMs: config.idleTimeoutMs,
    signal,
    log,
    rateLimiters: [
      ...(req.rateLimit === undefined ? [] : [new RateLimiter(req.rateLimit)]),
      ...(ctx.sendLimiter === undefined ? [] : [ctx.sendLimiter]),
    ],
    ...(activity === undefined
      ? {}
      : {
          onChunkSent: (bytes: number) => activity.addBytes(bytes),
          onTotalBytes: (bytes: number) => activity.setTotals(bytes, source.files.size),
          onFilesDelivered: (n: number) => activity.setFiles(n),
        }),
  });
  const done = await expectMessage(session, 'transfer-done', id, PREPARE_TIMEOUT_MS, signal);
  log.info('pull served', { peer: session.peerId, share: share.name, files: done.files, bytes: done.bytes });
}

/**
 * A pull's manifest with what could not be read listed on its last batch: a batch of its own,
 * as the last of the entries' may be near the frame limit already.
 */
function withUnreadable(batches: ManifestMessage[], unreadable: UnreadableEntries): ManifestMessage[] {
  const last = batches.at(-1);
  if (unreadable.count === 0 || last === undefined) return batches;
  return [
    ...batches.slice(0, -1),
    { ...last, last: false },
    { type: 'manifest', transferId: last.transferId, entries: [], last: true, ...unreadable.fields() },
  ];
}

/** TransferDone's count of kept files, when there are any. */
function keptField(kept: number): { filesKept?: number } {
  return kept === 0 ? {} : { filesKept: kept };
}

/**
 * What a TransferDone lists of the files published (or the directories and symlinks created):
 * the first MAX_LISTED_PUBLISHED, within MAX_LISTED_PUBLISHED_BYTES of paths (and link targets),
 * each path with its control and bidi characters escaped (the peer refuses them raw; a manifest
 * path may hold a bidi one). A link target is free text, blanked by the encoder.
 */
function listedWithin<T extends { readonly path: string; readonly target?: string }>(all: readonly T[]): T[] {
  const out: T[] = [];
  let bytes = 0;
  for (const e of all) {
    const shown = { ...e, path: escapeToShow(e.path) };
    bytes += listedEntryBytes(shown);
    if (out.length === MAX_LISTED_PUBLISHED || bytes > MAX_LISTED_PUBLISHED_BYTES) break;
    out.push(shown);
  }
  return out;
}

/** TransferDone's field when --delete would remove more than the request's --max-delete allows. */
function overLimitField(req: TransferRequestMessage, toRemove: readonly Extraneous[]): { deletesOverLimit?: number } {
  const over = overMaxDelete(toRemove, req.maxDelete);
  return over === undefined ? {} : { deletesOverLimit: over };
}

/** TransferDone's fields for removed paths: the first MAX_LISTED_DELETIONS listed, all counted. */
function deletedFields(list: readonly Extraneous[]): { deleted?: string[]; deletedCount?: number } {
  return list.length === 0
    ? {}
    : {
        // Escaped, as listedWithin's paths are: the peer refuses control and bidi characters raw.
        deleted: list.slice(0, MAX_LISTED_DELETIONS).map((e) => escapeToShow(e.path)),
        deletedCount: list.length,
      };
}

/** A request's exclude patterns or filter rules, if any; a malformed one is the peer's fault (its CLI checks them first). */
function peerExcludes(req: TransferRequestMessage): ExcludeRules | undefined {
  try {
    if (req.filter !== undefined) return compileFilter(req.filter);
    return req.exclude === undefined ? undefined : compileExcludes(req.exclude);
  } catch (err) {
    throw new ClawpeerError('PROTOCOL', `bad exclude pattern in the transfer request: ${(err as Error).message}`, {
      cause: err,
    });
  }
}

/**
 * Claims the top-level paths a push writes (see destination-locks.ts). An overlapping push of
 * the same peer is aborted through its hold and its cleanup awaited; one of another peer is
 * waited for, at most DESTINATION_WAIT_MS.
 */
function claimPushDestination(
  hold: DestinationHold,
  session: PeerSession,
  share: Share,
  basePath: string,
  destRelPaths: readonly string[],
  ctx: TransferServiceContext,
): Promise<void> {
  const root = share.dir; // resolveShares stores the realpath
  const paths = claimPaths(root, basePath, destRelPaths);
  const shown = paths.slice(0, 3).map((p) => `${share.name}/${path.relative(root, p).split(path.sep).join('/')}`);
  const label = `a push from node ${session.peerId} into ${shown.join(', ')}${paths.length > shown.length ? ` and ${paths.length - shown.length} more` : ''}`;
  return hold.claim(paths, label, {
    waitMs: DESTINATION_WAIT_MS,
    onSupersede: (older) =>
      ctx.log.warn('aborting an earlier push into the same destination: its client is presumably gone', {
        peer: session.peerId,
        share: share.name,
        path: basePath,
        older: older.label,
      }),
  });
}
