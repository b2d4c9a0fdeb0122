// What one peer may make a listener hold, checked while it arrives rather than after: the
// manifests of its requests (bytes and chunk references, each in memory until the request
// ends) and the resumable partials its pushes stage. Each budget is per session and, shared by
// all sessions at once, per listener, so neither one peer nor many together grow the listener
// without bound. A request over a manifest budget fails with BUDGET_EXCEEDED (wire BUDGET)
// naming it; a push over a partials budget stages the rest as plain temp files (not resumable,
// removed when it fails). Documented in README "Limits".
import { ClawpeerError } from '../errors.js';
import type { ManifestEntry } from '../protocol/messages.js';
import type { PeerSession } from './session.js';

export interface ManifestLimits {
  /** Manifest bytes (as encoded: paths, link targets, roots, chunk ids and lengths). */
  readonly bytes: number;
  /** Chunk references (one per chunk of every file entry). */
  readonly chunkRefs: number;
}

export interface BudgetLimits {
  /** What the manifests of one session's request in progress may hold. */
  readonly sessionManifest: ManifestLimits;
  /** What the manifests of all sessions' requests in progress may hold together. */
  readonly listenerManifest: ManifestLimits;
  /** Resumable partials one peer's pushes in progress may stage (all its sessions together). */
  readonly peerPartials: number;
  /** Partials a share's `.clawpeer/partial/` may hold, those of earlier transfers included. */
  readonly sharePartials: number;
}

export const DEFAULT_BUDGETS: BudgetLimits = Object.freeze({
  // 4 Mi chunk references: ~1 TiB of content at the default 256 KiB average chunk, ~170 MB of memory.
  sessionManifest: Object.freeze({ bytes: 256 << 20, chunkRefs: 1 << 22 }),
  listenerManifest: Object.freeze({ bytes: 512 << 20, chunkRefs: 1 << 23 }),
  peerPartials: 1024,
  sharePartials: 4096,
});

/** Encoded bytes of a manifest entry, closely enough to budget by (no encoding: it is counted per batch). */
export function manifestEntryBytes(e: ManifestEntry): number {
  return (
    16 +
    Buffer.byteLength(e.path) +
    Buffer.byteLength(e.linkTarget) +
    e.root.length +
    e.chunkIds.length +
    5 * e.chunkLengths.length
  );
}

/** A listener's budgets: what all its sessions hold now. One per listener process (PROCESS_BUDGETS). */
export class ListenerBudgets {
  readonly limits: BudgetLimits;
  readonly #manifest = { bytes: 0, chunkRefs: 0 };
  readonly #partialsByPeer = new Map<string, number>();

  constructor(limits: BudgetLimits = DEFAULT_BUDGETS) {
    this.limits = limits;
  }

  /** Manifest bytes and chunk references all sessions hold now (tests, status). */
  get manifestHeld(): { bytes: number; chunkRefs: number } {
    return { ...this.#manifest };
  }

  /** A session's share of the budgets; release() gives back what it holds. */
  session(peerId: string): SessionBudget {
    return new SessionBudget(this, peerId);
  }

  /** @internal */
  takeManifest(bytes: number, chunkRefs: number): 'bytes' | 'chunkRefs' | undefined {
    const { listenerManifest: max } = this.limits;
    if (this.#manifest.bytes + bytes > max.bytes) return 'bytes';
    if (this.#manifest.chunkRefs + chunkRefs > max.chunkRefs) return 'chunkRefs';
    this.#manifest.bytes += bytes;
    this.#manifest.chunkRefs += chunkRefs;
    return undefined;
  }

  /** @internal */
  releaseManifest(bytes: number, chunkRefs: number): void {
    this.#manifest.bytes -= bytes;
    this.#manifest.chunkRefs -= chunkRefs;
  }

  /** @internal */
  takePartial(peerId: string): boolean {
    const held = this.#partialsByPeer.get(peerId) ?? 0;
    if (held >= this.limits.peerPartials) return false;
    this.#partialsByPeer.set(peerId, held + 1);
    return true;
  }

  /** @internal */
  releasePartials(peerId: string, count: number): void {
    const left = (this.#partialsByPeer.get(peerId) ?? 0) - count;
    if (left > 0) this.#partialsByPeer.set(peerId, left);
    else this.#partialsByPeer.delete(peerId);
  }
}

/** Budgets of one session: charged as manifests arrive and partials are staged, released per request and at its end. */
export class SessionBudget {
  readonly #listener: ListenerBudgets;
  readonly peerId: string;
  #bytes = 0;
  #chunkRefs = 0;
  #partials = 0;

  constructor(listener: ListenerBudgets, peerId: string) {
    this.#listener = listener;
    this.peerId = peerId;
  }

  /** The listener's limits (a receiver reads the per-share partial cap). */
  get limits(): BudgetLimits {
    return this.#listener.limits;
  }

  /** Charges one manifest batch of `transferId`; BUDGET_EXCEEDED naming the budget when it would not fit. */
  takeManifest(transferId: number, entries: readonly ManifestEntry[]): void {
    let bytes = 0;
    let chunkRefs = 0;
    for (const e of entries) {
      bytes += manifestEntryBytes(e);
      chunkRefs += e.chunkLengths.length;
    }
    const mine = this.#listener.limits.sessionManifest;
    if (this.#bytes + bytes > mine.bytes)
      throw overBudget(transferId, 'manifest bytes per session', mine.bytes, this.#bytes + bytes, false);
    if (this.#chunkRefs + chunkRefs > mine.chunkRefs)
      throw overBudget(
        transferId,
        'manifest chunk references per session',
        mine.chunkRefs,
        this.#chunkRefs + chunkRefs,
        false,
      );
    const over = this.#listener.takeManifest(bytes, chunkRefs);
    if (over !== undefined) {
      const all = this.#listener.limits.listenerManifest;
      throw overBudget(
        transferId,
        over === 'bytes' ? 'manifest bytes per listener' : 'manifest chunk references per listener',
        over === 'bytes' ? all.bytes : all.chunkRefs,
        undefined,
        true,
      );
    }
    this.#bytes += bytes;
    this.#chunkRefs += chunkRefs;
  }

  /** One more resumable partial for this peer, if its budget has room (else: stage a plain temp file). */
  takePartial(): boolean {
    if (!this.#listener.takePartial(this.peerId)) return false;
    this.#partials++;
    return true;
  }

  /** Gives back everything this session holds: its request ended (its manifest is garbage now). */
  release(): void {
    this.#listener.releaseManifest(this.#bytes, this.#chunkRefs);
    this.#listener.releasePartials(this.peerId, this.#partials);
    this.#bytes = 0;
    this.#chunkRefs = 0;
    this.#partials = 0;
  }
}

function overBudget(
  transferId: number,
  budget: string,
  limit: number,
  would: number | undefined,
  shared: boolean,
): ClawpeerError {
  const amount = would === undefined ? '' : ` (it would hold ${would.toLocaleString('en-US')})`;
  const hint = shared ? ': other sessions hold the rest; retry later' : ': split it into smaller transfers';
  return new ClawpeerError(
    'BUDGET_EXCEEDED',
    `manifest of transfer ${transferId} exceeds the listener's budget of ${budget}, ${limit.toLocaleString('en-US')}${amount}${hint}`,
  );
}

/** The budgets of this process's listener (one per process, as PROCESS_DESTINATION_LOCKS). */
export const PROCESS_BUDGETS = new ListenerBudgets();

/** Sessions a listener serves, with their budgets: what receiveManifest charges (a client's sessions have none). */
const BUDGET_OF = new WeakMap<PeerSession, SessionBudget>();

export function attachBudget(session: PeerSession, budget: SessionBudget): void {
  BUDGET_OF.set(session, budget);
}

export function budgetOf(session: PeerSession): SessionBudget | undefined {
  return BUDGET_OF.get(session);
}
