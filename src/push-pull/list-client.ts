// `clawpeer ls`: asks a listener for the entries under a path of a share, or for its shares
// (list-service.ts), and hands over each reply's batch as it arrives: a big tree is printed
// while it streams, never held whole.
import { ClawpeerError } from '../errors.js';
import type { ListEntry, ShareInfo } from '../protocol/messages.js';
import type { PeerSession } from '../session/session.js';
import { expectMessage, PREPARE_TIMEOUT_MS } from '../exchange/transfer-control.js';

export interface ListOptions {
  readonly session: PeerSession;
  /** '' lists the shares instead. */
  readonly share: string;
  readonly path: string;
  readonly recursive: boolean;
  readonly signal: AbortSignal;
}

/** The listing in batches of entries (or, for share '', one batch of shares). */
export async function* listRemote(
  o: ListOptions,
): AsyncGenerator<{ readonly entries: readonly ListEntry[]; readonly shares: readonly ShareInfo[] }, void, undefined> {
  const { session } = o;
  session.requireFeature('list', 'cannot list its shares', 'update clawpeer there, or pull to see what a share holds');
  const requestId = session.allocateTransferId();
  await session.control.send({ type: 'list-request', requestId, share: o.share, path: o.path, recursive: o.recursive });
  for (;;) {
    // Each batch within the prepare timeout: the listener walks the tree between replies.
    const reply = await expectMessage(session, 'list-reply', requestId, PREPARE_TIMEOUT_MS, o.signal);
    if (reply.requestId !== requestId)
      throw new ClawpeerError('PROTOCOL', `list-reply for request ${reply.requestId}, expected ${requestId}`);
    if (o.share !== '' && reply.shares.length > 0)
      throw new ClawpeerError('PROTOCOL', `peer ${session.peerId} answered a listing of ${o.share} with shares`);
    yield { entries: reply.entries, shares: reply.shares };
    if (reply.last) return;
  }
}
