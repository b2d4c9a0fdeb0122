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
import { fetchContent, type SyncChannel } from './sync-exchange.js';

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
  const session = await dialPeer({
    identity: o.identity,
    peer: o.peer,
    config: o.config,
    log: o.log,
    signal: o.signal,
  });
  let delivered = false;
  const untell = session.tellPeerIfInterrupted(o.signal, 'restore');
  try {
    session.requireFeature(
      'sync-fetch-only',
      'cannot serve a restore',
      'update clawpeer there, or restore a revision whose content is kept here',
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
    const outcome = await fetchContent(
      ch,
      [{ sourcePath: o.relPath, root: o.root, destPath: o.relPath, mode: o.mode, mtimeMs: o.mtimeMs }],
      {
        router,
        folder: o.folder,
        chunking: sessionChunking(session),
        beforePublish: async () => undefined,
      },
    );
    await expectMessage(session, 'sync-done', transferId, PREPARE_TIMEOUT_MS, o.signal);
    delivered = true;
    return outcome.delivered.length === 1;
  } finally {
    untell();
    await session.close('done', { linger: !delivered });
  }
}
