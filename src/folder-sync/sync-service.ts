// The listener's side of a revision sync: serves a share as a synced folder.
//
// Goals: one sync of a share at a time (its folder lock is held from the scan to the end); the
// share's log matches its disk when reconciliation starts (scanned under the lock); the client's
// mode decides the directions (its revisions applied here unless it is receive-only, ours sent
// unless it is send-only); a read-only share only serves receive-only clients, dry runs included
// (a dry run only sends our records: the client plans, nothing is applied). Non-goals: the
// message phases (sync-exchange.ts), the decisions (sync-apply.ts).
import { RateLimiter } from '../transfer/rate-limiter.js';
import { ClawpeerError, isClawpeerError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { ChunkingParams } from '../chunking/fastcdc.js';
import type { ChunkIndexPool } from '../store/chunk-index-pool.js';
import { DestinationHold, PROCESS_DESTINATION_LOCKS } from '../store/destination-locks.js';
import type { SyncRequestMessage } from '../protocol/messages.js';
import { ReconcileResponder } from '../sync/reconcile.js';
import type { RevisionEntry } from '../sync/revision.js';
import type { NodeConfig } from '../home/config.js';
import type { DataStreamRouter } from '../session/data-stream-router.js';
import type { PeerSession } from '../session/session.js';
import type { Share } from '../home/shares.js';
import { applyRemote } from './sync-apply.js';
import { checkIdSet, headsAmong } from './sync-plan.js';
import { decodeReconcilePayload } from '../sync/reconcile-codec.js';
import { noSpaceText, noSpaceToTell, type NoSpaceReport } from '../exchange/space-fit.js';
import {
  dropPrunedByPeer,
  fetchContent,
  prunedToTell,
  receiveRevisions,
  runReconcile,
  sendRevisions,
  serveFetch,
  type SyncChannel,
} from './sync-exchange.js';
import { openSyncedFolder, type ResidentFolders, type SyncedFolder } from './synced-folder.js';
import { trackSync } from './running-syncs.js';
import { countChanges, headsBefore, type ChangeCounts } from './change-counts.js';
import { expectMessage, PREPARE_TIMEOUT_MS, sessionChunking } from '../exchange/transfer-control.js';
import { findShare, refusePartialShare, refuseUnsyncedInto } from '../home/shares.js';
import type { Activity } from '../session/listener-activity.js';
import type { TransferProgress } from '../transfer/transfer-progress.js';

/** The refusal a receive-only shared folder answers a sync that would take its changes with (the folder service narrows its mode on it). */
export const RECEIVE_ONLY_REFUSAL = 'this folder is receive-only here: only send-only syncs are served';

/**
 * Why `err`, the refusal of a sync of `share`, is one the peer's folder service expects, if it
 * is: `narrowing`, a shared folder here, send-only (SHARE_READ_ONLY) or receive-only, refusing
 * the direction it does not take (the peer learns its mode and syncs narrowed at once,
 * folders/peer-limits.ts); `busy`, the folder already being synced (both sides syncing it at
 * once, as at every start: the peer retries shortly). News for the log, not a failed sync. A
 * plain share's refusal stays one.
 */
export function expectedSyncRefusal(err: unknown, share: Share | undefined): 'narrowing' | 'busy' | undefined {
  if (isClawpeerError(err, 'FOLDER_BUSY')) return 'busy';
  if (share?.keptFolder !== true) return undefined;
  const narrowing =
    isClawpeerError(err, 'SHARE_READ_ONLY') ||
    (isClawpeerError(err, 'SHARE_FORBIDDEN') && err.message.includes(RECEIVE_ONLY_REFUSAL));
  return narrowing ? 'narrowing' : undefined;
}

/** How long a sync waits for another sync of the same share to finish, ms. */
export const SERVER_LOCK_WAIT_MS = 30_000;

export interface SyncServiceContext {
  readonly shares: readonly Share[];
  readonly config: NodeConfig;
  readonly log: Logger;
  /** This node's id: the origin of revisions the listener's scans record. */
  readonly nodeId: string | undefined;
  readonly indexes?: ChunkIndexPool;
  readonly resident?: ResidentFolders;
  /** listen --bwlimit: caps what the listener sends, all peers together. */
  readonly sendLimiter?: RateLimiter;
  /** True when `share` is a shared folder of this home's that `peerId` shares and that is paused here (folder-service.ts). */
  readonly pausedFolder?: (share: string, peerId: string) => boolean;
}

/**
 * The refusal of a sync of a shared folder paused here: SHARE_PAUSED to a peer that knows it
 * (feature 'share-paused'; it shows the folder paused, no error), SHARE_UNKNOWN to an older one
 * (which reads an unknown code as a failure of its own; the text still says why).
 */
function pausedRefusal(session: PeerSession, share: string): ClawpeerError {
  const message = `folder ${share} is paused here`;
  return session.caps.features.includes('share-paused')
    ? new ClawpeerError('SHARE_PAUSED', message)
    : new ClawpeerError('SHARE_UNKNOWN', message);
}

/** What a sync the peer ran here moved (a dry run or a restore fetch moves nothing). */
export interface ServedSync {
  readonly share: string;
  /** Revisions taken from the peer, and those it took from here. */
  readonly received: number;
  /** Of `received`, the revisions now in the log (one left as is is not). */
  readonly stored: number;
  /**
   * What the peer's last reconciliation found: the peer lacks none of our revisions
   * (`peerHasAll`), we lack none of its (`hereHasAll`); both: the logs are equal.
   */
  readonly peerHasAll: boolean;
  readonly hereHasAll: boolean;
  /** Entries here the scan could not read or name: the peer did not get them (not in sync while this side sends). */
  readonly unreadable: number;
  readonly sent: number;
  readonly conflicts: number;
  readonly skipped: number;
  /** Of `skipped`, the files that did not fit on this side's disk (space-fit.ts). */
  readonly noSpace?: NoSpaceReport;
  /** What the peer's revisions changed here. */
  readonly changes: ChangeCounts;
  /**
   * A send-only folder here (feature sync-peer-heads): the peer's heads this side lacks, not
   * stored; undefined when not learnt (an older peer, a sync that sends here).
   */
  readonly peerHeads?: readonly RevisionEntry[];
  /** How long it took from the request to the end, s, and the bytes the session's connection carried meanwhile. */
  readonly seconds: number;
  readonly wireBytes: number;
}

/** Bytes both ways on the session's connection so far (a sync's wire bytes: the difference). */
export const wireBytesOf = (session: PeerSession): number => {
  const s = session.connection.stats();
  return s.bytesSent + s.bytesReceived;
};

/** Serves the sync the client opened with `req`, start to end. Throws on any failure (the caller reports it). */
export async function serveSync(
  session: PeerSession,
  router: DataStreamRouter,
  req: SyncRequestMessage,
  ctx: SyncServiceContext,
  signal: AbortSignal,
  activity?: Activity,
): Promise<ServedSync> {
  const { log } = ctx;
  if (ctx.nodeId === undefined)
    throw new ClawpeerError('INTERNAL', 'this listener was started without its node id, so it cannot record revisions');
  if (ctx.pausedFolder?.(req.share, session.peerId) === true) throw pausedRefusal(session, req.share);
  const share = findShare(ctx.shares, req.share, session.peerId);
  refusePartialShare(share, 'a sync');
  if (req.fetchOnly === true && req.mode !== 'receive-only')
    throw new ClawpeerError('PROTOCOL', 'a fetch-only sync request must be receive-only');
  if (req.mode !== 'receive-only' && share.readOnly)
    throw new ClawpeerError('SHARE_READ_ONLY', `share ${share.name} is read-only: only receive-only syncs are served`);
  refuseUnsyncedInto(share, req.noFsync);
  if (share.receiveOnly === true && req.mode !== 'send-only' && req.fetchOnly !== true)
    throw new ClawpeerError('SHARE_FORBIDDEN', `${RECEIVE_ONLY_REFUSAL} (folder ${share.name})`);
  const lockWaitMs = share.syncLockWaitMs ?? SERVER_LOCK_WAIT_MS;
  const chunking = sessionChunking(session);
  log.info(req.fetchOnly === true ? 'restore fetch requested' : 'sync requested', {
    peer: session.peerId,
    share: share.name,
    mode: req.mode,
    ...(req.dryRun === true ? { dryRun: true } : {}),
  });
  // The whole share is claimed (destination-locks.ts): a client killed mid-sync leaves its
  // session here until the transport's idle timeout, holding the folder lock; its rerun from the
  // same peer supersedes that stale sync instead of waiting it out. Another peer's push or sync
  // in the share is waited for (SERVER_LOCK_WAIT_MS), then FOLDER_BUSY.
  const [started, wireStart] = [performance.now(), wireBytesOf(session)]; // once the request is taken
  const hold = new DestinationHold(PROCESS_DESTINATION_LOCKS, session.peerId, signal);
  try {
    await hold.claim([share.dir], `a sync from node ${session.peerId} of share ${share.name}`, {
      waitMs: lockWaitMs,
      onSupersede: (older) =>
        log.warn('aborting an earlier sync or push of the same peer in this share: its client is presumably gone', {
          peer: session.peerId,
          share: share.name,
          older: older.label,
        }),
    });
    const served = {
      share: share.name,
      ...(await serveClaimedSync(
        session,
        router,
        req,
        { ...ctx, nodeId: ctx.nodeId },
        share,
        chunking,
        hold.signal,
        activity,
        lockWaitMs,
      )),
    };
    return { ...served, seconds: (performance.now() - started) / 1000, wireBytes: wireBytesOf(session) - wireStart };
  } catch (err) {
    throw hold.errorFor(err);
  } finally {
    hold.release(); // after the folder is closed: the next sync finds it free
  }
}

async function serveClaimedSync(
  session: PeerSession,
  router: DataStreamRouter,
  req: SyncRequestMessage,
  ctx: SyncServiceContext & { nodeId: string },
  share: Share,
  chunking: ChunkingParams,
  signal: AbortSignal,
  activity: Activity | undefined,
  lockWaitMs: number,
): Promise<Omit<ServedSync, 'share' | 'seconds' | 'wireBytes'>> {
  const nothing = {
    received: 0,
    stored: 0,
    peerHasAll: false,
    hereHasAll: false,
    unreadable: 0,
    sent: 0,
    conflicts: 0,
    skipped: 0,
    changes: { added: 0, changed: 0, deleted: 0, paths: [] },
  };
  const onProgress = activity === undefined ? {} : { onProgress: (p: TransferProgress) => activity.report(p) };
  const fsync = req.noFsync === true ? { fsync: 'none' as const } : {};
  const { log } = ctx;
  const clientSends = req.mode !== 'receive-only';
  const clientReceives = req.mode !== 'send-only';
  // An empty hello follows as the first SyncReconcile: the client scans while we do.
  const early = req.reconcile.length === 0 ? undefined : decodeReconcilePayload(req.reconcile);
  // A sync of this folder with this peer whose connection went quiet (the peer was killed, and
  // this is it back; our own sync with it, which the destination claim does not cover) gives the
  // folder up now rather than at its connection's idle timeout.
  const { endStale, unregister } = trackSync(share.dir, session, ctx.config.keepAliveMs, log);
  let folder: SyncedFolder;
  try {
    endStale();
    folder = await openSyncedFolder(share.dir, {
      nodeId: ctx.nodeId,
      chunking,
      lockWaitMs,
      log,
      signal,
      onLockHeld: endStale,
      // A folder the folder service keeps that lost its marker (its disk unmounted): nothing lands.
      ...(share.keptFolder === true ? { requireMarker: true } : {}),
      cacheManifests: clientReceives && req.dryRun !== true && req.fetchOnly !== true,
      ...(ctx.resident === undefined ? {} : { resident: ctx.resident }),
    });
  } catch (err) {
    unregister();
    throw err;
  }
  try {
    const { store } = folder;
    const guard = (): void => folder.pin.check(); // the folder is still the one opened: nothing lands in its replacement
    // What we send: within the client's rate (sync --bwlimit) and this listener's own (listen --bwlimit).
    const rateLimiters = [
      ...(req.rateLimit === undefined ? [] : [new RateLimiter(req.rateLimit)]),
      ...(ctx.sendLimiter === undefined ? [] : [ctx.sendLimiter]),
    ];
    const ch: SyncChannel = {
      session,
      transferId: req.transferId,
      timeoutMs: PREPARE_TIMEOUT_MS,
      signal,
      log,
      rateLimiters,
    };
    if (req.fetchOnly === true) {
      // `restore` from the client: contents by root (a live file or our history), nothing else.
      await session.control.send({ type: 'sync-accept', transferId: req.transferId });
      const fetch = await expectMessage(session, 'sync-fetch', req.transferId, PREPARE_TIMEOUT_MS, signal);
      await serveFetch(ch, fetch, store, share.dir, chunking, folder.manifests, onProgress.onProgress);
      await session.control.send({ type: 'sync-done', transferId: req.transferId });
      return nothing;
    }
    const hello =
      early ??
      decodeReconcilePayload(
        (await expectMessage(session, 'sync-reconcile', req.transferId, PREPARE_TIMEOUT_MS, signal)).payload,
      );
    const features = session.caps.features;
    const headsFeature = features.includes('sync-peer-heads') && features.includes('sync-pruned-always');
    // A send-only folder here learns the client's heads it lacks (it takes none of them).
    const asksHeads =
      headsFeature && share.keptFolder === true && share.readOnly && req.mode === 'receive-only' && req.dryRun !== true;
    // A send-only client learns ours; a receive-only folder's own changes are not the folder's.
    const tellsHeads = headsFeature && req.peerHeads === true && req.mode === 'send-only' && share.receiveOnly !== true;
    const responder = new ReconcileResponder(store.snapshotIdSet());
    const first = responder.receive(hello);
    await session.control.send({
      type: 'sync-accept',
      transferId: req.transferId,
      ...(share.keptFolder === true ? { keptFolder: true } : {}),
      ...(asksHeads ? { peerHeads: true } : {}),
    });
    const result = await runReconcile(ch, responder, first);
    const unreadable = folder.unreadable.length;
    if (result.method === 'equal')
      return { ...nothing, peerHasAll: true, hereHasAll: true, unreadable, ...(asksHeads ? { peerHeads: [] } : {}) };
    if (req.dryRun === true) {
      // The client plans from our records; it sends none, and nothing is applied or served.
      if (clientReceives) await sendRevisions(ch, store, result.idsTheyLack, store.prunedAmong(result.idsWeLack));
      await session.control.send({ type: 'sync-done', transferId: req.transferId });
      return nothing;
    }

    let received: RevisionEntry[] = [];
    let declined: Uint8Array[] = [];
    let peerPruned: readonly Uint8Array[] = [];
    // What our gc dropped is never stored again, and the client is told so it drops it too: in
    // every mode when it can hear it (a side sending no records sends an empty final batch).
    const tellsAlways = session.caps.features.includes('sync-pruned-always');
    let peerHeads: RevisionEntry[] | undefined;
    if (clientSends || tellsAlways) {
      const expected = clientSends || asksHeads ? result.idsWeLack : [];
      const arrived = await receiveRevisions(ch, expected, (ids) => (peerPruned = ids), !clientSends);
      if (clientSends) {
        received = arrived.filter((e) => !store.isPruned(e.id));
        declined = arrived.filter((e) => store.isPruned(e.id)).map((e) => e.id);
      } else if (asksHeads) peerHeads = arrived;
    }
    const ourPruned = store.prunedAmong(result.idsWeLack);
    // Heads told to a send-only client are not sent revisions: it stores none of them.
    const toldHeads = tellsHeads ? headsAmong(store, result.idsTheyLack).map((e) => e.id) : [];
    let sent = 0;
    if (clientReceives) sent = await sendRevisions(ch, store, result.idsTheyLack, ourPruned);
    else if (tellsAlways) await sendRevisions(ch, store, toldHeads, ourPruned);
    let conflicts = 0;
    let skipped = 0;
    let noSpace: NoSpaceReport | undefined;
    let kept: readonly string[] = [];
    const before = headsBefore(store, received);
    let copies: Awaited<ReturnType<typeof applyRemote>>['copies'] | undefined;
    if (clientSends) {
      const applied = await applyRemote(received, {
        store,
        folder: share.dir,
        chunking,
        keepConcurrentLocal: share.receiveOnly === true,
        ignore: folder.ignore,
        log,
        ...fsync,
        guard,
        fetch: (requests, beforePublish, beforeReplace, onFilePublished) =>
          fetchContent(ch, requests, {
            router,
            folder: share.dir,
            folderName: `share ${share.name}`,
            chunking,
            beforePublish,
            beforeReplace,
            onFilePublished,
            guard,
            ...(ctx.indexes === undefined ? {} : { indexes: ctx.indexes }),
            ...onProgress,
            ...fsync,
          }),
      });
      log.info('sync applied', {
        peer: session.peerId,
        share: share.name,
        applied: applied.applied,
        conflicts: applied.conflicts,
        skipped: applied.skipped.length,
      });
      if (applied.noSpace !== undefined)
        log.warn(`sync: ${noSpaceText(applied.noSpace, `in share ${share.name}`)}; left for the next sync`, {
          peer: session.peerId,
        });
      conflicts = applied.conflicts;
      skipped = applied.skipped.length;
      noSpace = applied.noSpace;
      kept = applied.kept;
      copies = applied.copies;
    }
    if (clientReceives) {
      const fetch = await expectMessage(session, 'sync-fetch', req.transferId, PREPARE_TIMEOUT_MS, signal);
      await serveFetch(ch, fetch, store, share.dir, chunking, folder.manifests, onProgress.onProgress);
    }
    await dropPrunedByPeer(ch, store, share.dir, peerPruned, result.idsTheyLack);
    // The client checks the outcome with a second reconciliation.
    // What a receive-only share keeps out on purpose is not left to move (sync-plan.ts checkIdSet).
    const told = clientReceives || tellsAlways ? prunedToTell(ch, ourPruned) : [];
    const check = new ReconcileResponder(checkIdSet(store, received, kept, declined, told));
    const checkHello = await expectMessage(session, 'sync-reconcile', req.transferId, PREPARE_TIMEOUT_MS, signal);
    const checked = await runReconcile(ch, check, check.receive(decodeReconcilePayload(checkHello.payload)));
    // The client names what did not fit here (an older one ignores it).
    await session.control.send({ type: 'sync-done', transferId: req.transferId, ...noSpaceToTell(noSpace) });
    const stored = received.filter((e) => store.has(e.id)).length;
    return {
      received: received.length,
      stored,
      peerHasAll: checked.idsTheyLack.length === 0,
      hereHasAll: checked.idsWeLack.every((id) => store.isPruned(id)),
      unreadable,
      sent,
      conflicts,
      skipped,
      ...(noSpace === undefined ? {} : { noSpace }),
      changes: countChanges(store, before, copies),
      ...(peerHeads === undefined ? {} : { peerHeads }),
    };
  } catch (err) {
    throw folder.pin.failure(err); // an ENOENT of a path in a folder swapped meanwhile: its marker is missing
  } finally {
    await folder.close();
    unregister();
  }
}
