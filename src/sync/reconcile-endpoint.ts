// What both ends of the reconciliation exchange (reconcile.ts) share: its options, result and
// stats, the peer summary, the id-list messages, and the Endpoint base class (stats, message
// accounting, the result's check against the peer's Merkle root). No I/O.

import { ClawpeerError } from '../errors.js';
import { MerkleIdSet, REVISION_ID_BYTES } from './merkle-root.js';
import { MAX_IDS_PER_MESSAGE, encodedLength, type IdListKind, type ReconcileMessage } from './reconcile-codec.js';

/** Default bound on the set size a peer may announce (16 Mi ids: a 512 MiB id list). */
export const DEFAULT_MAX_PEER_IDS = 1 << 24;
export interface ReconcileOptions {
  /** Cells the responder sends before any estimate (responder only). Default 16. */
  readonly firstBatchCells?: number;
  /** Largest set a peer may announce; more is PROTOCOL (bounds memory). Default 2^24 ids. */
  readonly maxPeerIds?: number;
}

export type ReconcileMethod = 'equal' | 'riblt' | 'full-list';

export interface ReconcileResult {
  /** Ids the peer has and we lack (views into one buffer). */
  readonly idsWeLack: readonly Uint8Array[];
  /** Ids we have and the peer lacks (views into one buffer). */
  readonly idsTheyLack: readonly Uint8Array[];
  readonly peerRoot: Uint8Array;
  readonly peerCount: number;
  readonly method: ReconcileMethod;
}

/** Counted as messages are produced and consumed (bytes = encoded size incl. length prefix). */
export interface ReconcileStats {
  bytesSent: number;
  bytesReceived: number;
  messagesSent: number;
  messagesReceived: number;
  /** Request/response exchanges: hello, each more, send-ids (the closing lists need no reply). */
  roundTrips: number;
  /** RIBLT cells sent (responder) or received (initiator). */
  cells: number;
  /** True if the full id list was sent or requested. */
  fellBack: boolean;
}

export interface PeerSummary {
  readonly root: Uint8Array;
  readonly count: number;
}

export function newStats(): ReconcileStats {
  return {
    bytesSent: 0,
    bytesReceived: 0,
    messagesSent: 0,
    messagesReceived: 0,
    roundTrips: 0,
    cells: 0,
    fellBack: false,
  };
}

export function protocolError(message: string): ClawpeerError {
  return new ClawpeerError('PROTOCOL', `revision reconciliation: ${message}`);
}

export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Views of each 32-byte id in `packed`. */
export function splitIds(packed: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let o = 0; o < packed.length; o += REVISION_ID_BYTES) out.push(packed.subarray(o, o + REVISION_ID_BYTES));
  return out;
}

/** The `ids` messages carrying `packed` as list `list` (at least one, the last flagged). */
export function idMessages(list: IdListKind, packed: Uint8Array): ReconcileMessage[] {
  const out: ReconcileMessage[] = [];
  const chunkBytes = MAX_IDS_PER_MESSAGE * REVISION_ID_BYTES;
  for (let o = 0; o === 0 || o < packed.length; o += chunkBytes) {
    const ids = packed.subarray(o, Math.min(packed.length, o + chunkBytes));
    out.push({ type: 'ids', list, ids, last: o + chunkBytes >= packed.length });
  }
  return out;
}

/** Accumulates a chunked id list, refusing more than `maxIds`. */
export class IdCollector {
  readonly #chunks: Uint8Array[] = [];
  #count = 0;
  constructor(
    readonly list: IdListKind,
    readonly maxIds: number,
  ) {}
  get count(): number {
    return this.#count;
  }
  add(ids: Uint8Array, last: boolean): void {
    const n = ids.length / REVISION_ID_BYTES;
    if (n === 0 && !last) throw protocolError(`empty chunk in the ${this.list} id list`);
    if (this.#count + n > this.maxIds)
      throw protocolError(`the ${this.list} id list exceeds the ${this.maxIds} ids it can hold`);
    this.#count += n;
    this.#chunks.push(ids);
  }
  packed(): Uint8Array {
    const out = new Uint8Array(this.#count * REVISION_ID_BYTES);
    let o = 0;
    for (const c of this.#chunks) {
      out.set(c, o);
      o += c.length;
    }
    return out;
  }
}

/** Both ends: feed each received message, send what comes back, until `result` is set. */
export interface ReconcileEndpoint {
  /** Handles one message from the peer; returns the messages to send, in order. */
  receive(message: ReconcileMessage): readonly ReconcileMessage[];
  /** Set once this side knows the outcome. */
  readonly result: ReconcileResult | undefined;
  readonly stats: Readonly<ReconcileStats>;
}

export abstract class Endpoint<S extends { readonly phase: string }> implements ReconcileEndpoint {
  protected abstract state: S;
  readonly #stats = newStats();
  readonly #set: MerkleIdSet;
  readonly #root: Uint8Array;
  readonly #maxPeerIds: number;

  constructor(set: MerkleIdSet, options: ReconcileOptions) {
    this.#set = set;
    this.#root = set.root();
    this.#maxPeerIds = options.maxPeerIds ?? DEFAULT_MAX_PEER_IDS;
    if (!Number.isSafeInteger(this.#maxPeerIds) || this.#maxPeerIds < 0) {
      throw new ClawpeerError('USAGE', `maxPeerIds must be a non-negative integer, got ${this.#maxPeerIds}`);
    }
  }

  /** The peer's announced root and size, once its size is checked against `maxPeerIds`. */
  protected peerSummary(root: Uint8Array, count: number): PeerSummary {
    if (count > this.#maxPeerIds)
      throw protocolError(`peer announced ${count} ids, more than the ${this.#maxPeerIds} accepted`);
    return { root, count };
  }

  get stats(): Readonly<ReconcileStats> {
    return this.#stats;
  }

  abstract get result(): ReconcileResult | undefined;

  /** Current phase (for logs and tests). */
  get phase(): S['phase'] {
    return this.state.phase;
  }

  receive(message: ReconcileMessage): readonly ReconcileMessage[] {
    this.#stats.messagesReceived++;
    this.#stats.bytesReceived += encodedLength(message);
    let out: readonly ReconcileMessage[];
    try {
      out = this.handle(message);
    } catch (err) {
      if (err instanceof ClawpeerError) this.fail(err);
      throw err;
    }
    return this.sent(out);
  }

  protected abstract handle(message: ReconcileMessage): readonly ReconcileMessage[];
  protected abstract fail(error: ClawpeerError): void;

  protected get set(): MerkleIdSet {
    return this.#set;
  }

  /** The root announced at the start; the set must not change during an exchange. */
  protected get root(): Uint8Array {
    const now = this.#set.root();
    if (!equalBytes(now, this.#root)) throw new Error('the local id set changed during reconciliation');
    return this.#root;
  }

  protected get mutableStats(): ReconcileStats {
    return this.#stats;
  }

  protected sent(messages: readonly ReconcileMessage[]): readonly ReconcileMessage[] {
    for (const m of messages) {
      this.#stats.messagesSent++;
      this.#stats.bytesSent += encodedLength(m);
    }
    return messages;
  }

  /**
   * Checks that `set + weLack - theyLack` has the peer's root, and builds the result;
   * undefined when it does not.
   */
  protected verified(
    peer: PeerSummary,
    weLack: Uint8Array,
    theyLack: Uint8Array,
    method: ReconcileMethod,
  ): ReconcileResult | undefined {
    const adds = splitIds(weLack);
    const removes = splitIds(theyLack);
    if (this.set.size + adds.length - removes.length !== peer.count) return undefined;
    const root = this.set.rootAfter(adds, removes);
    if (root === undefined || !equalBytes(root, peer.root)) return undefined;
    return { idsWeLack: adds, idsTheyLack: removes, peerRoot: peer.root, peerCount: peer.count, method };
  }

  protected unexpected(message: ReconcileMessage): ClawpeerError {
    return protocolError(`unexpected ${message.type} message in phase ${this.state.phase}`);
  }
}
