// Small helpers for the control-channel side of a transfer: expect a given message, collect
// manifest batches (bounded), send a manifest in frame-sized batches; and what both sides of a
// transfer agree on. Kept free of the listener's services, so a push, pull or ls loads none of
// them (the revision log's lmdb among them: ~65 ms of every start).
import { DEFAULT_CHUNKING, type ChunkingParams } from '../chunking/fastcdc.js';
import { ClawpeerError } from '../errors.js';
import { splitManifest, type ControlMessage, type ManifestEntry, type ManifestMessage } from '../protocol/messages.js';
import { DEFAULT_PLAN_LIMITS } from '../transfer/plan.js';
import type { WantInfo } from '../transfer/chunk-order.js';
import { budgetOf } from '../session/listener-budgets.js';
import type { PeerSession } from '../session/session.js';
import { withTimeout } from '../support/timeouts.js';

type Of<T extends ControlMessage['type']> = Extract<ControlMessage, { type: T }>;

/** How long the other side may take to hash, stage or publish before answering (big trees take a while). */
export const PREPARE_TIMEOUT_MS = 30 * 60_000;

/** The chunker both sides run: the negotiated sizes with protocol v1's fixed normalization. */
export function sessionChunking(session: PeerSession): ChunkingParams {
  const c = session.caps.chunking;
  return {
    minBytes: c.minBytes,
    avgBytes: c.avgBytes,
    maxBytes: c.maxBytes,
    normalization: DEFAULT_CHUNKING.normalization,
  };
}

/** The next control message, which must be of `type` for `transferId`; bounded by `timeoutMs`. */
export async function expectMessage<T extends ControlMessage['type']>(
  session: PeerSession,
  type: T,
  transferId: number,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<Of<T>> {
  const msg = await withTimeout(
    session.control.receive(signal !== undefined ? { signal } : {}),
    timeoutMs,
    `waiting for ${type} from ${session.peerId}`,
  );
  if (msg === null)
    throw new ClawpeerError(
      'CONNECTION_CLOSED',
      `peer ${session.peerId} closed the control stream while we waited for ${type}`,
    );
  if (msg.type !== type)
    throw new ClawpeerError('PROTOCOL', `expected ${type} from ${session.peerId}, got ${msg.type}`);
  const withId = msg as Of<T> & { transferId?: number };
  if (withId.transferId !== undefined && withId.transferId !== transferId) {
    throw new ClawpeerError('PROTOCOL', `${type} for transfer ${withId.transferId}, expected transfer ${transferId}`);
  }
  return msg as Of<T>;
}

/**
 * Streams and window a transfer runs with: what was asked, within the session's caps (at least
 * 1). The listener answers with these, and an early-sending client starts with them before.
 */
export function effectiveStreamsAndWindow(
  session: PeerSession,
  streams: number,
  window: number,
): { streams: number; window: number } {
  return {
    streams: Math.max(1, Math.min(streams, session.caps.maxStreams)),
    window: Math.max(1, Math.min(window, session.caps.maxWindowChunks)),
  };
}

/** The receiver's Want of `transferId`, as sendChunks takes it. */
export async function expectWant(
  session: PeerSession,
  transferId: number,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<WantInfo> {
  const want = await expectMessage(session, 'want', transferId, timeoutMs, signal);
  return { lacking: want.lacking, uniqueCount: want.uniqueChunks };
}

/**
 * Collects manifest batches until `last`. Each batch is counted as it arrives, so a lying peer
 * cannot grow our memory before a limit applies: more entries or chunk references than a
 * transfer may have are refused (PROTOCOL), and on a listener the session's budgets
 * (listener-budgets.ts: manifest bytes and chunk references, per session and per listener)
 * refuse with BUDGET_EXCEEDED.
 */
export async function receiveManifest(
  session: PeerSession,
  transferId: number,
  timeoutMs: number,
  signal?: AbortSignal,
  /** A pull's: the entries the sender could not read, which its last batch lists (if any). */
  onUnreadable?: (told: Pick<ManifestMessage, 'unreadable' | 'unreadableCount'>) => void,
): Promise<ManifestEntry[]> {
  const budget = budgetOf(session);
  const entries: ManifestEntry[] = [];
  let chunkRefs = 0;
  for (;;) {
    const batch = await expectMessage(session, 'manifest', transferId, timeoutMs, signal);
    if (entries.length + batch.entries.length > DEFAULT_PLAN_LIMITS.maxFiles) {
      throw new ClawpeerError(
        'PROTOCOL',
        `manifest of transfer ${transferId} exceeds ${DEFAULT_PLAN_LIMITS.maxFiles} entries`,
      );
    }
    for (const e of batch.entries) chunkRefs += e.chunkLengths.length;
    if (chunkRefs > DEFAULT_PLAN_LIMITS.maxChunkRefs) {
      throw new ClawpeerError(
        'PROTOCOL',
        `manifest of transfer ${transferId} exceeds ${DEFAULT_PLAN_LIMITS.maxChunkRefs} chunk references`,
      );
    }
    budget?.takeManifest(transferId, batch.entries);
    for (const e of batch.entries) entries.push(e); // not push(...): a batch may hold 100,000
    if (batch.last) {
      if (batch.unreadableCount !== undefined) onUnreadable?.(batch);
      return entries;
    }
  }
}

/** The manifest as control messages (batches within the session's frame limit), for ControlChannel.sendAll. */
export function manifestMessages(
  session: PeerSession,
  transferId: number,
  entries: readonly ManifestEntry[],
): ManifestMessage[] {
  return splitManifest(transferId, entries, session.caps.maxFrameBytes - 64);
}
