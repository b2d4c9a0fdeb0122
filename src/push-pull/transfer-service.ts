// The listener's side of a session: answers pings and serves push (we receive), pull (we
// send) and sync (sync-service.ts) requests against its shares. One transfer at a time per
// session; an error is reported to the peer as a wire Error and ends that session only. A
// session with no control message and no transfer for sessionIdleTimeoutMs is closed. A push
// holds a destination lock (destination-locks.ts) from staging to publish, so a rerun after a
// killed client supersedes the stale receiver instead of racing it.
import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import type { ChunkingParams } from '../chunking/fastcdc.js';
import { ClawpeerError, isClawpeerError, wireCodeFor } from '../errors.js';
import type { Logger } from '../logger.js';
import { listedEntryBytes, MAX_LISTED_DELETIONS, MAX_LISTED_PUBLISHED, MAX_LISTED_PUBLISHED_BYTES, type ControlMessage, type TransferRequestMessage } from '../protocol/messages.js';
import { compileExcludes, compileFilter, type ExcludeRules } from '../transfer/exclude.js';
import { isConfinedRealpath, normalizeSharePath } from '../transfer/paths.js';
import type { ChunkIndexPool } from '../store/chunk-index-pool.js';
import type { Activity, ListenerActivity } from '../session/listener-activity.js';
import type { NodeConfig } from '../home/config.js';
import { DataStreamRouter } from '../session/data-stream-router.js';
import { claimPaths, DestinationHold, PROCESS_DESTINATION_LOCKS } from '../store/destination-locks.js';
import { overMaxDelete, transferExtraneous, type Extraneous } from './extraneous.js';
import { historyKeeperFor, removeExtraneousKeeping } from './delete-history.js';
import { replacedHistoryNode, type Keeper } from '../store/keeper.js';
import { backupPlan, backupProtection, type BackupPlan } from '../store/backups.js';
import { isInternalPath } from '../store/internal-names.js';
import { attachBudget, PROCESS_BUDGETS, type ListenerBudgets, type SessionBudget } from '../session/listener-budgets.js';
import type { PeerSession } from '../session/session.js';
import { DEFAULT_SHARE_NAME, type Share } from '../home/shares.js';
import { effectiveStreamsAndWindow, expectMessage, expectWant, manifestMessages, PREPARE_TIMEOUT_MS, receiveManifest, sessionChunking } from '../exchange/transfer-control.js';
import { TransferReceiver } from '../exchange/transfer-receive.js';
import { sendChunks } from '../exchange/transfer-send.js';
import { scanListed, scanSource, type SizeRange } from '../exchange/transfer-source.js';
import { serveList } from './list-service.js';
import { serveSync } from '../folder-sync/sync-service.js';
import type { ResidentFolders } from '../folder-sync/synced-folder.js';
import { ShareWatches } from '../folder-sync/share-watch-service.js';
import { RateLimiter } from '../transfer/rate-limiter.js';

/**
 * How long a push waits for another peer's push into the same destination to finish, ms; then
 * it fails with FOLDER_BUSY. Also bounds the cleanup of a superseded push of the same peer.
 */
export const DESTINATION_WAIT_MS = 30_000;

export interface ServiceContext {
  readonly shares: readonly Share[];
  readonly config: NodeConfig;
  readonly log: Logger;
  /** This node's id, needed to serve syncs (the origin of the revisions its scans record). */
  readonly nodeId?: string;
  /** The listener's in-memory chunk indexes, one per share (see chunk-index-pool.ts). */
  readonly indexes?: ChunkIndexPool;
  /** The listener's synced-folder state (watchers, open logs): a sync of an unchanged share skips its scan. */
  readonly resident?: ResidentFolders;
  /** listen --bwlimit: one cap on everything the listener sends, all peers and transfers together. */
  readonly sendLimiter?: RateLimiter;
  /** What runs now, for `clawpeer status` (listener-activity.ts). */
  readonly activity?: ListenerActivity;
  /** What peers' requests may hold (listener-budgets.ts); default: this process's PROCESS_BUDGETS. */
  readonly budgets?: ListenerBudgets;
}


export function findShare(shares: readonly Share[], name: string, peerId: string): Share {
  const wanted = name === '' ? DEFAULT_SHARE_NAME : name;
  const share = shares.find((s) => s.name === wanted) ?? (name === '' ? shares[0] : undefined);
  if (share === undefined) {
    throw new ClawpeerError('SHARE_UNKNOWN', `no share named ${JSON.stringify(wanted)} here (shares: ${shares.map((s) => s.name).join(', ') || 'none'})`);
  }
  if (share.allow !== undefined && !share.allow.includes(peerId)) {
    throw new ClawpeerError('SHARE_FORBIDDEN', `node ${peerId} is not on the allow list of share ${share.name}`);
  }
  return share;
}

export async function serveSession(session: PeerSession, ctx: ServiceContext, listenerSignal: AbortSignal): Promise<void> {
  // No work of this session outlives it: scans, hashing and staging stop when its connection
  // closes (a killed client), not only when the listener stops.
  const ended = new AbortController();
  const closedByPeer = new ClawpeerError('CONNECTION_CLOSED', `node ${session.peerId} closed the connection`);
  const onStop = (): void => ended.abort(listenerSignal.reason);
  listenerSignal.addEventListener('abort', onStop, { once: true });
  if (listenerSignal.aborted) onStop();
  void session.connection.closed.then(() => ended.abort(closedByPeer), () => ended.abort(closedByPeer));
  const signal = ended.signal;
  const budget = (ctx.budgets ?? PROCESS_BUDGETS).session(session.peerId);
  attachBudget(session, budget);
  const watches = new ShareWatches(session, { log: ctx.log, ...(ctx.resident === undefined ? {} : { resident: ctx.resident }) });
  try {
    await serveRequests(session, ctx, watches, signal, budget);
  } catch (err) {
    // Work stopped because the peer went away: say that, not "aborted".
    if (signal.reason === closedByPeer && isClawpeerError(err, 'ABORTED')) throw closedByPeer;
    throw err;
  } finally {
    listenerSignal.removeEventListener('abort', onStop);
    ended.abort(closedByPeer);
    budget.release();
    watches.close();
  }
}

async function serveRequests(session: PeerSession, ctx: ServiceContext, watches: ShareWatches, signal: AbortSignal, budget: SessionBudget): Promise<void> {
  const router = new DataStreamRouter(session.connection, session.caps.maxFrameBytes, ctx.config.idleTimeoutMs, ctx.log);
  void router.run(signal);
  for (;;) {
    const msg = await receiveWithin(session, ctx.config.sessionIdleTimeoutMs, signal).catch((err: unknown) => {
      if (isClawpeerError(signal.reason, 'CONNECTION_CLOSED')) return null; // gone between requests: a plain disconnect
      throw err;
    });
    if (msg === 'idle' && watches.size > 0) continue; // a watching client waits for news, not idle
    if (msg === 'idle') {
      ctx.log.info('closing idle session', { peer: session.peerId, idleMs: ctx.config.sessionIdleTimeoutMs });
      await session.control.sendError('TIMEOUT', `session idle for ${ctx.config.sessionIdleTimeoutMs} ms (no request, no transfer): closed by ${ctx.nodeId ?? 'the listener'}`).catch(() => undefined);
      return;
    }
    if (msg === null) return;
    if (msg.type !== 'pong' && !(await session.stillPaired())) {
      ctx.log.warn('peer unpaired: refusing its request and closing', { peer: session.peerId, request: msg.type });
      await session.control.sendError('NOT_PAIRED', `node ${session.peerId} was unpaired by ${ctx.nodeId ?? 'the listener'}: ${msg.type} refused`).catch(() => undefined);
      return;
    }
    switch (msg.type) {
      case 'ping':
        await session.control.send({ type: 'pong', seq: msg.seq, echoedTimeUs: msg.sentTimeUs });
        break;
      case 'pong':
        break;
      case 'transfer-request':
      case 'sync-request':
      case 'watch-share':
      case 'list-request': {
        const activity = msg.type === 'watch-share' || msg.type === 'list-request' ? undefined : ctx.activity?.begin({
          peer: session.peerId,
          kind: msg.type === 'sync-request' ? 'sync' : msg.direction,
          share: msg.share === '' ? DEFAULT_SHARE_NAME : msg.share,
          path: msg.type === 'transfer-request' ? msg.path : '',
        });
        let ok = false;
        try {
          if (msg.type === 'transfer-request') await serveTransfer(session, router, msg, ctx, signal, activity);
          else if (msg.type === 'sync-request') await serveSync(session, router, msg, { ...ctx, nodeId: ctx.nodeId }, signal, activity);
          else if (msg.type === 'list-request') await serveList(session, msg, ctx.shares, signal);
          else await watches.add(findShare(ctx.shares, msg.share, session.peerId), msg);
          ok = true;
        } catch (caught) {
          const err = await peerReasonOr(session, caught, signal);
          if (err instanceof ClawpeerError && err.wire === undefined) {
            await session.control.sendError(wireCodeFor(err).name, err.message).catch(() => undefined);
          }
          throw err;
        } finally {
          activity?.end(ok);
          budget.release(); // its manifests are garbage now
        }
        break;
      }
      default:
        throw new ClawpeerError('PROTOCOL', `unexpected ${msg.type} from ${session.peerId} outside a transfer`);
    }
  }
}

/** How long a transfer that the peer's streams broke off waits for the peer to say why. */
const PEER_REASON_WAIT_MS = 500;

/**
 * A transfer broken off on the transport (a data stream reset, the connection gone): the peer's
 * Error, when one is already on its way, says why better (its user pressed Ctrl-C, its file
 * changed), and the log and status then tell that instead of "stream reset by peer". The session
 * ends after a failed transfer, so a message read here that is no Error is dropped with it.
 */
async function peerReasonOr(session: PeerSession, err: unknown, signal: AbortSignal): Promise<unknown> {
  if (!(err instanceof ClawpeerError) || err.wire !== undefined) return err;
  if (err.code !== 'REMOTE' && err.code !== 'CONNECTION_CLOSED') return err;
  try {
    await receiveWithin(session, PEER_REASON_WAIT_MS, signal);
    return err;
  } catch (peer) {
    return peer instanceof ClawpeerError && peer.wire !== undefined ? peer : err;
  }
}

/**
 * The peer's next control message, null at its FIN, or 'idle' when none came for `idleMs`. The
 * wait is cancelled through the channel's signal, which leaves the channel usable.
 */
async function receiveWithin(session: PeerSession, idleMs: number, signal: AbortSignal): Promise<ControlMessage | null | 'idle'> {
  // One controller for both causes (not AbortSignal.any: a listener on the long-lived session
  // signal per message, removed again below, keeps nothing alive).
  const wait = new AbortController();
  let idle = false;
  const timer = setTimeout(() => {
    idle = true;
    wait.abort();
  }, idleMs);
  const onSession = (): void => wait.abort(signal.reason);
  signal.addEventListener('abort', onSession, { once: true });
  if (signal.aborted) wait.abort(signal.reason);
  try {
    return await session.control.receive({ signal: wait.signal });
  } catch (err) {
    if (idle && !signal.aborted && err instanceof ClawpeerError && err.code === 'ABORTED') return 'idle';
    throw err;
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', onSession);
  }
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

async function serveTransfer(session: PeerSession, router: DataStreamRouter, req: TransferRequestMessage, ctx: ServiceContext, signal: AbortSignal, activity: Activity | undefined): Promise<void> {
  const share = findShare(ctx.shares, req.share, session.peerId);
  const basePath = req.path === '' ? '' : normalizeSharePath(req.path);
  const t: TransferSetup = { id: req.transferId, share, basePath, ...effectiveStreamsAndWindow(session, req.streams, req.window), chunking: sessionChunking(session) };
  ctx.log.info(`${req.direction} requested`, { peer: session.peerId, share: share.name, path: basePath, streams: t.streams, window: t.window });
  if (req.direction === 'push') {
    if ((req.exclude !== undefined || req.filter !== undefined) && req.delete !== true) throw new ClawpeerError('PROTOCOL', 'exclude patterns apply to pulls, and to what a push with delete may remove; a push leaves out files on the sending side');
    if (req.rateLimit !== undefined) throw new ClawpeerError('PROTOCOL', 'a rate limit applies to pulls; a push caps its own sending');
    if (req.minSize !== undefined || req.maxSize !== undefined) throw new ClawpeerError('PROTOCOL', 'size bounds apply to pulls; a push leaves out files on the sending side');
    if (req.filesFrom !== undefined) throw new ClawpeerError('PROTOCOL', 'a files-from list applies to pulls; a push sends what it lists itself');
    if (req.existing !== undefined && req.force) throw new ClawpeerError('PROTOCOL', 'force and an existing-files policy (keep, update) exclude each other');
    peerBackupPlan(req); // a malformed one is refused before anything is accepted
    if (req.maxDelete !== undefined && req.delete !== true) throw new ClawpeerError('PROTOCOL', 'a delete limit applies to a push with delete');
    // The client's data streams (early chunks) may come while we prepare: they wait for the receiver.
    await router.expecting(t.id, () => servePush(session, router, req, ctx, signal, t, activity));
  } else {
    if (req.delete === true) throw new ClawpeerError('PROTOCOL', 'delete applies to pushes; a pull removes what the source lacks on its own side');
    if (req.existing !== undefined) throw new ClawpeerError('PROTOCOL', 'an existing-files policy applies to pushes; a pull\'s receiver applies its own');
    if (req.backup !== undefined) throw new ClawpeerError('PROTOCOL', 'backups apply to pushes; a pull\'s receiver makes its own');
    if (req.maxDelete !== undefined) throw new ClawpeerError('PROTOCOL', 'a delete limit applies to pushes; a pull\'s receiver applies its own');
    if (req.itemize === true) throw new ClawpeerError('PROTOCOL', 'itemize applies to pushes; a pull\'s receiver lists what it publishes itself');
    await servePull(session, req, ctx, signal, t, activity);
  }
}

async function servePush(session: PeerSession, router: DataStreamRouter, req: TransferRequestMessage, ctx: ServiceContext, signal: AbortSignal, t: TransferSetup, activity: Activity | undefined): Promise<void> {
  const { config, log } = ctx;
  const { id, share, basePath, streams, window, chunking } = t;
  if (share.readOnly) throw new ClawpeerError('SHARE_READ_ONLY', `share ${share.name} is read-only: pushes are refused`);
  if (req.delete === true && share.noDelete === true) throw new ClawpeerError('SHARE_FORBIDDEN', `share ${share.name} refuses push --delete (it is served with :nodelete): push without --delete`);
  // --delete: what the pushed directories hold beyond the source goes, the client's patterns spared.
  const protect = peerExcludes(req);
  const backup = peerBackupPlan(req);
  await session.control.send({ type: 'transfer-accept', transferId: id, streams, window });
  const entries = await receiveManifest(session, id, config.idleTimeoutMs, signal);
  const fileCount = entries.filter((e) => e.kind === 'file').length;
  activity?.setTotals(entries.reduce((n, e) => n + (e.kind === 'file' ? e.size : 0), 0), fileCount);
  const receiverUntil = (until: AbortSignal, keeper?: Keeper): TransferReceiver =>
    new TransferReceiver({
      session, router, transferId: id, entries, chunking, signal: until, log,
      ...(activity === undefined ? {} : { onChunkWritten: (bytes: number) => activity.addBytes(bytes), onPublished: (n: number) => activity.setFiles(n) }),
      destination: { root: share.dir, readOnly: share.readOnly, basePath, name: `share ${share.name}` },
      force: req.force,
      ...(req.existing === undefined ? {} : { existing: req.existing }),
      ...(ctx.indexes === undefined ? {} : { indexes: ctx.indexes }),
      ...(backup === undefined ? {} : { backup }),
      ...(keeper === undefined ? {} : { keeper }),
      ...(req.itemize === true ? { itemize: true } : {}),
    });
  const extraneous = async (receiver: TransferReceiver): Promise<Extraneous[]> =>
    req.delete !== true ? [] : transferExtraneous({
      root: share.dir, basePath, entries, destPaths: receiver.destinationPaths, contentsOnly: false,
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
        type: 'want', transferId: id, lacking: plan.lacking, uniqueChunks: plan.uniqueCount, publish: plan.publish, create: plan.create,
        // Only when some file would be touched: an all-clear bitmap says nothing an empty one does not.
        ...(plan.touchTime.some((b) => b !== 0) ? { touchTime: plan.touchTime } : {}), ...(plan.touchPerms.some((b) => b !== 0) ? { touchPerms: plan.touchPerms } : {}),
      },
      { type: 'transfer-done', transferId: id, files: plan.files, bytes: plan.bytes, chunksReceived: 0, chunksSkipped: 0, ...deletedFields(wouldRemove), ...keptField(plan.filesKept), ...overLimitField(req, wouldRemove) },
    ]);
    log.info('push dry run answered', { peer: session.peerId, share: share.name, files: plan.files, bytes: plan.bytes });
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
    const receiver = receiverUntil(hold.signal, history);
    await claimPushDestination(hold, session, share, basePath, receiver.destinationPaths, ctx);
    try {
      const plan = await receiver.prepare();
      activity?.setTotals(plan.lackingBytes, fileCount); // what will arrive: the chunks not held here
      await session.control.send({ type: 'want', transferId: id, lacking: plan.lacking, uniqueChunks: plan.uniqueCount });
      const stats = await receiver.receive();
      // Only once everything is published: a failed push removes nothing.
      const toRemove = await extraneous(receiver);
      const overLimit = overLimitField(req, toRemove); // over --max-delete: nothing is removed
      const removed = overLimit.deletesOverLimit === undefined ? await removeExtraneousKeeping(share.dir, toRemove, { backups: receiver.backups, nodeId: ctx.nodeId }) : [];
      await session.control.send({
        type: 'transfer-done', transferId: id, files: stats.files, bytes: stats.bytes, chunksReceived: stats.chunksReceived, chunksSkipped: stats.chunksSkipped,
        ...deletedFields(removed), ...keptField(stats.filesKept), ...(backup === undefined ? {} : { filesBackedUp: receiver.backups?.count ?? 0 }), ...overLimit,
        ...(stats.published === undefined ? {} : { published: listedWithin(stats.published) }),
        ...(stats.created === undefined ? {} : { created: listedWithin(stats.created) }),
        ...(stats.updated === undefined ? {} : { updated: listedWithin(stats.updated) }),
      });
      log.info('push received', { peer: session.peerId, share: share.name, files: stats.files, bytes: stats.bytes, ...(req.delete === true ? { deleted: removed.length } : {}) });
    } catch (err) {
      await receiver.abort();
      throw hold.errorFor(err);
    }
  } finally {
    hold.release(); // only after abort() finished: the next push finds no cleanup in progress
    await history?.close();
  }
}

/**
 * The local path of `basePath` in `share` (a pull's or a listing's): it must exist inside the
 * share, symlinks on the way included; PATH_INVALID naming it otherwise.
 */
export async function existingSharePath(share: Share, basePath: string): Promise<string> {
  if (isInternalPath(basePath)) throw new ClawpeerError('PATH_INVALID', `${share.name}/${basePath} is clawpeer's own state`);
  const local = path.join(share.dir, ...basePath.split('/').filter((s) => s !== ''));
  let real: string;
  try {
    real = await realpath(local);
    await stat(real);
  } catch {
    throw new ClawpeerError('PATH_INVALID', `${share.name}/${basePath} does not exist`);
  }
  if (!isConfinedRealpath(share.dir, real)) throw new ClawpeerError('PATH_INVALID', `${share.name}/${basePath} leads outside the share`);
  // A symlink in the share (`x -> .clawpeer`) must not lead a pull or listing into the state either.
  if (isInternalPath(path.relative(share.dir, real).split(path.sep).join('/'))) throw new ClawpeerError('PATH_INVALID', `${share.name}/${basePath} leads into clawpeer's own state`);
  return local;
}

/** A pull's size bounds as scan options (absent: none). */
function peerSizes(req: TransferRequestMessage): { sizes?: SizeRange } {
  if (req.minSize === undefined && req.maxSize === undefined) return {};
  return { sizes: { ...(req.minSize === undefined ? {} : { min: req.minSize }), ...(req.maxSize === undefined ? {} : { max: req.maxSize }) } };
}

/** A pull's files-from paths, each canonical and confined; PROTOCOL naming the first that is not (the peer's CLI checks them first). */
function peerFileList(paths: readonly string[]): string[] {
  return paths.map((p) => {
    try {
      return normalizeSharePath(p);
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

async function servePull(session: PeerSession, req: TransferRequestMessage, ctx: ServiceContext, signal: AbortSignal, t: TransferSetup, activity: Activity | undefined): Promise<void> {
  const { config, log } = ctx;
  const { id, share, basePath, streams, window, chunking } = t;
  const local = await existingSharePath(share, basePath);
  const rules = peerExcludes(req);
  const scanOptions = {
    chunking, log, signal,
    ...(rules === undefined ? {} : { excludeRules: rules }),
    ...peerSizes(req),
    // -L: what a link leads to goes only when that is inside the share (tree-scan's followWithin).
    ...(req.copyLinks === undefined ? {} : { copyLinks: req.copyLinks, followWithin: share.dir }),
  };
  // A files-from list: its paths, relative to the requested directory (scanListed confines them:
  // no `..`, no symlinked directory on the way, no clawpeer state).
  const source = req.filesFrom !== undefined
    ? await scanListed(local, peerFileList(req.filesFrom), scanOptions, basePath === '' ? `share ${share.name}` : `${share.name}/${basePath}`)
    : await scanSource(local, { ...scanOptions, rootName: basePath === '' ? null : path.posix.basename(basePath), exclude: (rel) => basePath === '' && isInternalPath(rel) });
  await session.control.sendAll([{ type: 'transfer-accept', transferId: id, streams, window }, ...manifestMessages(session, id, source.entries)]);
  if (req.dryRun === true) {
    // The client plans on its side and ends the transfer: nothing to send.
    await expectMessage(session, 'transfer-done', id, PREPARE_TIMEOUT_MS, signal);
    log.info('pull dry run served', { peer: session.peerId, share: share.name });
    return;
  }
  const want = expectWant(session, id, PREPARE_TIMEOUT_MS, signal);
  activity?.setTotals([...source.files.values()].reduce((n, f) => n + f.manifest.size, 0), source.files.size);
  await sendChunks({
    session, transferId: id, source, want, streams, window, idleTimeoutMs: config.idleTimeoutMs, signal, log,
    rateLimiters: [...(req.rateLimit === undefined ? [] : [new RateLimiter(req.rateLimit)]), ...(ctx.sendLimiter === undefined ? [] : [ctx.sendLimiter])],
    ...(activity === undefined ? {} : { onChunkSent: (bytes: number) => activity.addBytes(bytes), onTotalBytes: (bytes: number) => activity.setTotals(bytes, source.files.size), onFilesDelivered: (n: number) => activity.setFiles(n) }),
  });
  const done = await expectMessage(session, 'transfer-done', id, PREPARE_TIMEOUT_MS, signal);
  log.info('pull served', { peer: session.peerId, share: share.name, files: done.files, bytes: done.bytes });
}

/** TransferDone's count of kept files, when there are any. */
function keptField(kept: number): { filesKept?: number } {
  return kept === 0 ? {} : { filesKept: kept };
}

/**
 * What a TransferDone lists of the files published (or the directories and symlinks created):
 * the first MAX_LISTED_PUBLISHED, within MAX_LISTED_PUBLISHED_BYTES of paths (and link targets).
 */
function listedWithin<T extends { readonly path: string; readonly target?: string }>(all: readonly T[]): T[] {
  const out: T[] = [];
  let bytes = 0;
  for (const e of all) {
    bytes += listedEntryBytes(e);
    if (out.length === MAX_LISTED_PUBLISHED || bytes > MAX_LISTED_PUBLISHED_BYTES) break;
    out.push(e);
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
  return list.length === 0 ? {} : { deleted: list.slice(0, MAX_LISTED_DELETIONS).map((e) => e.path), deletedCount: list.length };
}

/** A request's exclude patterns or filter rules, if any; a malformed one is the peer's fault (its CLI checks them first). */
function peerExcludes(req: TransferRequestMessage): ExcludeRules | undefined {
  try {
    if (req.filter !== undefined) return compileFilter(req.filter);
    return req.exclude === undefined ? undefined : compileExcludes(req.exclude);
  } catch (err) {
    throw new ClawpeerError('PROTOCOL', `bad exclude pattern in the transfer request: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * Claims the top-level paths a push writes (see destination-locks.ts). An overlapping push of
 * the same peer is aborted through its hold and its cleanup awaited; one of another peer is
 * waited for, at most DESTINATION_WAIT_MS.
 */
function claimPushDestination(hold: DestinationHold, session: PeerSession, share: Share, basePath: string, destRelPaths: readonly string[], ctx: ServiceContext): Promise<void> {
  const root = share.dir; // resolveShares stores the realpath
  const paths = claimPaths(root, basePath, destRelPaths);
  const shown = paths.slice(0, 3).map((p) => `${share.name}/${path.relative(root, p).split(path.sep).join('/')}`);
  const label = `a push from node ${session.peerId} into ${shown.join(', ')}${paths.length > shown.length ? ` and ${paths.length - shown.length} more` : ''}`;
  return hold.claim(paths, label, {
    waitMs: DESTINATION_WAIT_MS,
    onSupersede: (older) => ctx.log.warn('aborting an earlier push into the same destination: its client is presumably gone', { peer: session.peerId, share: share.name, path: basePath, older: older.label }),
  });
}
