// `restore` from a peer: fetch one revision's content from the peer the folder syncs with, when
// nothing here keeps it any more (a file deleted or overwritten here, whose history copy only
// the peer that received the change kept).
//
// Goals: a fetch-only sync request (feature sync-fetch-only): no reconciliation, no records, one
// SyncFetch by content root, which the peer finds in a live file, its history or any head with
// that root; the content lands through the same staged, verified receive as a sync's fetch.
// Non-goals: recording the restore (the caller rescans), choosing the revision (the CLI).
import type { Identity } from '../crypto/identity.js';
import type { NodeConfig } from '../home/config.js';
import type { ResolvedPeer } from '../home/peer-resolve.js';
import type { Logger } from '../logger.js';
import { dialPeer } from '../session/dialer.js';
import { sessionRouter } from '../session/data-stream-router.js';
import { expectMessage, PREPARE_TIMEOUT_MS, sessionChunking } from '../exchange/transfer-control.js';
import type { PathSources } from '../reach/path-sources.js';
import { fetchContent, type FetchRequest, type SyncChannel } from './sync-exchange.js';
import { noSpaceText } from '../exchange/space-fit.js';
import { ClawpeerError } from '../errors.js';

export interface FetchRevisionOptions {
  readonly identity: Identity;
  readonly peer: ResolvedPeer;
  readonly config: NodeConfig;
  /** The peer's share the folder syncs with ('' = its default). */
  readonly share: string;
  /** The local synced folder (its lock is the caller's). */
  readonly folder: string;
  /** Path of the revision, the same in the folder and in the peer's share. */
  readonly relPath: string;
  /** The revision's content root. */
  readonly root: Uint8Array;
  readonly mode: number;
  readonly mtimeMs: number;
  readonly log: Logger;
  readonly signal: AbortSignal;
}

/**
 * Dials the peer and fetches the content with `root` into `folder/relPath` (replacing what is
 * there, atomically). False when the peer no longer has that content either.
 */
export async function fetchRevisionFromPeer(o: FetchRevisionOptions): Promise<boolean> {
  const request = { sourcePath: o.relPath, root: o.root, destPath: o.relPath, mode: o.mode, mtimeMs: o.mtimeMs };
  const delivered = await fetchFromPeer({ ...o, requests: [request], feature: 'restore' });
  return delivered.length === 1;
}

export interface FetchFromPeerOptions {
  readonly identity: Identity;
  readonly peer: ResolvedPeer;
  readonly config: NodeConfig;
  /** How to reach the peer (a listener's path sources); default: its address. */
  readonly paths?: PathSources;
  /** The peer's share ('' = its default). */
  readonly share: string;
  /** Where the content lands: each request's destPath under it (the caller holds what it needs locked). */
  readonly folder: string;
  readonly requests: readonly FetchRequest[];
  /** What the fetch is for, in errors and the peer's log ('restore', 'revert'). */
  readonly feature: string;
  readonly log: Logger;
  readonly signal: AbortSignal;
}

/**
 * One fetch-only sync request: dials the peer, asks for each request's content by path and
 * root, and publishes what it offers. Returns the requests delivered (the peer lacks the rest).
 */
export async function fetchFromPeer(o: FetchFromPeerOptions): Promise<FetchRequest[]> {
  const session = await dialPeer({
    identity: o.identity,
    peer: o.peer,
    config: o.config,
    log: o.log,
    signal: o.signal,
    ...(o.paths === undefined ? {} : { paths: o.paths }),
  });
  let delivered = false;
  const untell = session.tellPeerIfInterrupted(o.signal, o.feature);
  try {
    session.requireFeature(
      'sync-fetch-only',
      `cannot serve a ${o.feature}`,
      `update clawpeer there, or ${o.feature} a revision whose content is kept here`,
    );
    const transferId = session.allocateTransferId();
    await session.control.send({
      type: 'sync-request',
      transferId,
      share: o.share,
      mode: 'receive-only',
      reconcile: new Uint8Array(0),
      fetchOnly: true,
    });
    await expectMessage(session, 'sync-accept', transferId, PREPARE_TIMEOUT_MS, o.signal);
    const router = sessionRouter(session, PREPARE_TIMEOUT_MS, o.log);
    const ch: SyncChannel = { session, transferId, timeoutMs: PREPARE_TIMEOUT_MS, signal: o.signal, log: o.log };
    const outcome = await fetchContent(ch, o.requests, {
      router,
      folder: o.folder,
      chunking: sessionChunking(session),
      beforePublish: async () => undefined,
    });
    await expectMessage(session, 'sync-done', transferId, PREPARE_TIMEOUT_MS, o.signal);
    delivered = true;
    // A restore or revert is asked for by a person, now: content that does not fit is an error
    // saying so (as a pull's), not content the peer lacks.
    if (outcome.noSpace !== undefined) throw new ClawpeerError('IO', noSpaceText(outcome.noSpace, `in ${o.folder}`));
    return outcome.delivered;
  } finally {
    untell();
    await session.close('done', { linger: !delivered });
  }
}
