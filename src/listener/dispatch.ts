// A listener's session, once admitted and handshaken (listener/server.ts): reads the peer's
// control messages and dispatches each request to the room that serves it: a push or pull
// (push-pull/transfer-service.ts), a sync (folder-sync/sync-service.ts), a listing
// (push-pull/list-service.ts), a watch of a share (folder-sync/share-watch-service.ts); answers
// pings. An error is reported to the peer as a wire Error and ends that session only. A session
// with no control message and no transfer for sessionIdleTimeoutMs is closed.
import path from 'node:path';
import { ClawpeerError, isClawpeerError, wireCodeFor } from '../errors.js';
import type { Logger } from '../logger.js';
import type { ControlMessage } from '../protocol/messages.js';
import type { RateLimiter } from '../transfer/rate-limiter.js';
import type { NodeConfig } from '../home/config.js';
import { DEFAULT_SHARE_NAME, findShare, refusePartialShare, type Share } from '../home/shares.js';
import type { ChunkIndexPool } from '../store/chunk-index-pool.js';
import { DataStreamRouter } from '../session/data-stream-router.js';
import type { ListenerActivity } from '../session/listener-activity.js';
import {
  attachBudget,
  PROCESS_BUDGETS,
  type ListenerBudgets,
  type SessionBudget,
} from '../session/listener-budgets.js';
import type { PeerSession } from '../session/session.js';
import { serveList } from '../push-pull/list-service.js';
import { serveTransfer } from '../push-pull/transfer-service.js';
import { ShareWatches } from '../folder-sync/share-watch-service.js';
import type { ResidentFolders } from '../folder-sync/synced-folder.js';
import { expectedSyncRefusal, serveSync, type ServedSync } from '../folder-sync/sync-service.js';

/** What the listener gives every session it serves. */
export interface ServiceContext {
  readonly shares: readonly Share[];
  readonly config: NodeConfig;
  readonly log: Logger;
  /** This node's id, needed to serve syncs (the origin of the revisions its scans record). */
  readonly nodeId?: string;
  /** The listener's in-memory chunk indexes, one per share (see store/chunk-index-pool.ts). */
  readonly indexes?: ChunkIndexPool;
  /** The listener's synced-folder state (watchers, open logs): a sync of an unchanged share skips its scan. */
  readonly resident?: ResidentFolders;
  /** listen --bwlimit: one cap on everything the listener sends, all peers and transfers together. */
  readonly sendLimiter?: RateLimiter;
  /** What runs now, for `clawpeer status` (session/listener-activity.ts). */
  readonly activity?: ListenerActivity;
  /** What peers' requests may hold (session/listener-budgets.ts); default: this process's PROCESS_BUDGETS. */
  readonly budgets?: ListenerBudgets;
  /** Told when a paired peer's session starts: the peer is online (the folder service syncs what waited for it). */
  readonly onPeerSession?: (peerId: string) => void;
  /** Told after each sync a peer ran here (the folder service logs what it changed). */
  readonly onSyncServed?: (peerId: string, served: ServedSync) => void;
  /**
   * Told when a sync a peer ran here failed with the peer still there (the folder service shows a
   * failure of this side's). `byFolderService`: the peer's folder service ran it (the request says
   * so), or the peer cannot say (no feature 'by-folder-service'); false for a person's `sync`.
   */
  readonly onSyncServeFailed?: (peerId: string, share: string, err: unknown, byFolderService: boolean) => void;
  /** A shared folder paused here: a peer's sync of it is refused as paused (sync-service.ts). */
  readonly pausedFolder?: (share: string, peerId: string) => boolean;
  /**
   * Told when a peer's session ends in an error (the peer's parting Error among them, say a
   * `receive` that declined), before the session leaves the listener's connected peers.
   */
  readonly onSessionFailed?: (peerId: string, err: unknown) => void;
}

export async function serveSession(
  session: PeerSession,
  ctx: ServiceContext,
  listenerSignal: AbortSignal,
): Promise<void> {
  // No work of this session outlives it: scans, hashing and staging stop when its connection
  // closes (a killed client), not only when the listener stops.
  const ended = new AbortController();
  const closedByPeer = new ClawpeerError('CONNECTION_CLOSED', `node ${session.peerId} closed the connection`);
  const onStop = (): void => ended.abort(listenerSignal.reason);
  listenerSignal.addEventListener('abort', onStop, { once: true });
  if (listenerSignal.aborted) onStop();
  void session.connection.closed.then(
    () => ended.abort(closedByPeer),
    () => ended.abort(closedByPeer),
  );
  const signal = ended.signal;
  const budget = (ctx.budgets ?? PROCESS_BUDGETS).session(session.peerId);
  ctx.onPeerSession?.(session.peerId);
  attachBudget(session, budget);
  const watches = new ShareWatches(session, {
    log: ctx.log,
    ...(ctx.resident === undefined ? {} : { resident: ctx.resident }),
  });
  try {
    await serveRequests(session, ctx, watches, signal, budget);
  } catch (err) {
    // Work stopped because the peer went away: say that, not "aborted".
    const failed = signal.reason === closedByPeer && isClawpeerError(err, 'ABORTED') ? closedByPeer : err;
    ctx.onSessionFailed?.(session.peerId, failed);
    throw failed;
  } finally {
    listenerSignal.removeEventListener('abort', onStop);
    ended.abort(closedByPeer);
    budget.release();
    watches.close();
  }
}

async function serveRequests(
  session: PeerSession,
  ctx: ServiceContext,
  watches: ShareWatches,
  signal: AbortSignal,
  budget: SessionBudget,
): Promise<void> {
  const router = new DataStreamRouter(
    session.connection,
    session.caps.maxFrameBytes,
    ctx.config.idleTimeoutMs,
    ctx.log,
  );
  void router.runSession(session, signal);
  for (;;) {
    const msg = await receiveWithin(session, ctx.config.sessionIdleTimeoutMs, signal).catch((err: unknown) => {
      if (isClawpeerError(signal.reason, 'CONNECTION_CLOSED')) return null; // gone between requests: a plain disconnect
      throw err;
    });
    if (msg === 'idle' && watches.size > 0) continue; // a watching client waits for news, not idle
    if (msg === 'idle') {
      ctx.log.info('closing idle session', { peer: session.peerId, idleMs: ctx.config.sessionIdleTimeoutMs });
      await session.control
        .sendError(
          'TIMEOUT',
          `session idle for ${ctx.config.sessionIdleTimeoutMs} ms (no request, no transfer): closed by ${ctx.nodeId ?? 'the listener'}`,
        )
        .catch(() => undefined);
      return;
    }
    if (msg === null) return;
    if (msg.type !== 'pong' && !(await session.stillPaired())) {
      ctx.log.warn('peer unpaired: refusing its request and closing', { peer: session.peerId, request: msg.type });
      await session.control
        .sendError(
          'NOT_PAIRED',
          `node ${session.peerId} was unpaired by ${ctx.nodeId ?? 'the listener'}: ${msg.type} refused`,
        )
        .catch(() => undefined);
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
        const activity =
          msg.type === 'watch-share' || msg.type === 'list-request'
            ? undefined
            : ctx.activity?.begin({
                peer: session.peerId,
                kind: msg.type === 'sync-request' ? 'sync' : msg.direction,
                share: msg.share === '' ? DEFAULT_SHARE_NAME : msg.share,
                path: msg.type === 'transfer-request' ? msg.path : '',
              });
        let ok = false;
        let expected: ReturnType<typeof expectedSyncRefusal> = undefined;
        try {
          if (msg.type === 'transfer-request') await serveTransfer(session, router, msg, ctx, signal, activity);
          else if (msg.type === 'sync-request') {
            // Served first, then told: `hook?.(…, await serve())` would skip the serving when no hook is set.
            const served = await serveSync(session, router, msg, { ...ctx, nodeId: ctx.nodeId }, signal, activity);
            ctx.onSyncServed?.(session.peerId, served);
          } else if (msg.type === 'list-request') await serveList(session, msg, ctx.shares, signal);
          else {
            const share = findShare(ctx.shares, msg.share, session.peerId);
            refusePartialShare(share, 'a watch');
            await watches.add(share, msg);
          }
          ok = true;
        } catch (caught) {
          const err = await peerReasonOr(session, caught, signal);
          // A peer that went away mid-sync says nothing of this folder here; anything else may.
          if (msg.type === 'sync-request' && !signal.aborted) {
            const byService = msg.byFolderService === true || !session.caps.features.includes('by-folder-service');
            ctx.onSyncServeFailed?.(session.peerId, msg.share, err, byService);
          }
          if (err instanceof ClawpeerError && err.wire === undefined) {
            await session.control
              .sendError(wireCodeFor(err).name, inShareTerms(err.message, ctx.shares))
              .catch(() => undefined);
          }
          expected =
            msg.type === 'sync-request'
              ? expectedSyncRefusal(
                  err,
                  ctx.shares.find((s) => s.name === msg.share),
                )
              : undefined;
          if (expected === undefined) throw err;
          // The peer syncs narrowed, or retries, on a new session: an info line, not a warning.
          ctx.log.info(
            expected === 'busy'
              ? 'sync refused: the folder is being synced; the peer retries'
              : 'sync refused: the peer syncs narrowed to what this copy takes',
            { peer: session.peerId, share: msg.share, reason: (err as Error).message },
          );
          return;
        } finally {
          if (expected !== undefined) activity?.discard();
          else activity?.end(ok);
          budget.release(); // its manifests are garbage now
        }
        break;
      }
      default:
        throw new ClawpeerError('PROTOCOL', `unexpected ${msg.type} from ${session.peerId} outside a transfer`);
    }
  }
}

/**
 * An error's text as the peer may read it: the listener's local paths of its shares become share
 * paths (`/srv/clawpeer/inbox/a.txt exists` reads `inbox/a.txt exists`). A peer learns the share
 * names it asks for, never where they live on this machine; the listener's own log keeps the
 * local path.
 */
export function inShareTerms(message: string, shares: readonly Share[]): string {
  // Longest first: a share inside another share's directory is named by its own name.
  const byDepth = [...shares].sort((x, y) => y.dir.length - x.dir.length);
  let out = message;
  for (const share of byDepth)
    out = out
      .split(share.dir + path.sep)
      .join(`${share.name}/`)
      .split(share.dir)
      .join(share.name);
  return out;
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
async function receiveWithin(
  session: PeerSession,
  idleMs: number,
  signal: AbortSignal,
): Promise<ControlMessage | null | 'idle'> {
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
