// The revision-set reconciliation exchange: two explicit state machines, one per role (their
// shared base: reconcile-endpoint.ts).
//
// Goals: learn exactly which revision ids each side lacks, with wire cost that grows with the
// difference D and not with the set size N; one round trip when the sets are equal; never a
// wrong answer: every result is checked against the peer's announced Merkle root, and a peer
// whose data does not reproduce its root gets ClawpeerError PROTOCOL. Always terminates: the
// RIBLT exchange is bounded, then falls back to the responder's full id list.
// Non-goals: I/O (messages in, messages out; the caller encodes with reconcile-codec.ts and
// moves bytes), timeouts (the driver owns them), fetching the missing revisions.
//
//   initiator                                  responder
//   hello{root, N_i}             --->
//                                <---          equal                       (done: 1 round trip)
//                                <---          different{root, N_r, m0} + symbols[0, m0)
//   more{start, n}               --->                                      (while not decoded)
//                                <---          symbols[start, start + n)
//   send-ids                     --->                                      (fallback)
//                                <---          ids{full}...
//   ids{initiator-lacks}... ids{responder-lacks}...  --->                  (both learn the result)
//
// The closing id lists are not overhead: "initiator-lacks" is the request for the revisions
// the initiator will fetch next, "responder-lacks" announces what it will push. They also let
// the responder verify the outcome against the initiator's root.
//
// Batch policy (initiator side). Cells cost ~42 bytes; RIBLT needs ~1.35-1.45 cells per
// difference for large D (more, relatively, for D < 10). The responder opens with
// max(16, 1.45 |N_i - N_r| + 4) cells (|N_i - N_r| is a lower bound on D). After each batch the
// decoder estimates D (riblt.ts) and the initiator asks for enough cells to reach 1.4 D + 4 in
// total (times 1 + 1/sqrt(cells so far) after its first request), and at least 1.25x + 4 what it
// has, so a bad estimate costs round trips, not unbounded bytes. When the cells still to ask for
// would cost more than the responder's full list (32 N_r bytes), or the total would pass
// 3 (N_i + N_r) + 100 cells, it asks for the list instead.

import { ClawpeerError } from '../errors.js';
import { MerkleIdSet, REVISION_ID_BYTES } from './merkle-root.js';
import { MAX_SYMBOLS_PER_MESSAGE, RECONCILE_VERSION, type ReconcileMessage } from './reconcile-codec.js';
import { RibltDecoder, RibltEncoder } from './riblt.js';
import {
  Endpoint,
  IdCollector,
  equalBytes,
  idMessages,
  protocolError,
  splitIds,
  type PeerSummary,
  type ReconcileOptions,
  type ReconcileResult,
} from './reconcile-endpoint.js';

export {
  DEFAULT_MAX_PEER_IDS,
  splitIds,
  type ReconcileEndpoint,
  type ReconcileMethod,
  type ReconcileOptions,
  type ReconcileResult,
  type ReconcileStats,
} from './reconcile-endpoint.js';

/** Cells in the responder's first batch when nothing suggests more (~670 bytes). */
export const DEFAULT_FIRST_BATCH_CELLS = 16;
const PLANNED_CELLS_PER_DIFFERENCE = 1.4;
const FIRST_BATCH_CELLS_PER_DIFFERENCE = 1.45;
const BATCH_SLACK_CELLS = 4;
const MIN_BATCH_GROWTH = 1.25;
/** Typical encoded cell: 32 (id XOR) + 8 (checksum) + ~2 (count), bytes. */
const ESTIMATED_CELL_BYTES = 42;

/**
 * Protocol rule: one `more` asks for at most (responder's set size + this) cells. A bigger
 * batch would cost more than the responder's full list (~42 vs 32 bytes an id), so an honest
 * initiator asks for the list instead; the rule bounds what one request can make us build.
 */
const MORE_CELLS_SLACK = 64;

/** Hard cap on cells for one exchange: beyond it the sets are better sent whole. */
function cellCap(countA: number, countB: number): number {
  return 3 * (countA + countB) + 100;
}

// --- initiator ----------------------------------------------------------------------------------

type InitiatorState =
  | { readonly phase: 'idle' }
  | { readonly phase: 'await-summary' }
  | {
      readonly phase: 'decoding';
      readonly peer: PeerSummary;
      readonly decoder: RibltDecoder;
      nextStart: number;
      batchEnd: number;
      /** `more` requests sent so far. */
      requests: number;
    }
  | { readonly phase: 'listing'; readonly peer: PeerSummary; readonly list: IdCollector }
  | { readonly phase: 'done'; readonly result: ReconcileResult }
  | { readonly phase: 'failed'; readonly error: ClawpeerError };

/** The side that opens the exchange and decodes. Call `start()`, then `receive()` replies. */
export class ReconcileInitiator extends Endpoint<InitiatorState> {
  protected state: InitiatorState = { phase: 'idle' };

  /** `set` must not change until the exchange ends. */
  constructor(set: MerkleIdSet, options: ReconcileOptions = {}) {
    super(set, options);
  }

  get result(): ReconcileResult | undefined {
    return this.state.phase === 'done' ? this.state.result : undefined;
  }

  /** The opening message. */
  start(): readonly ReconcileMessage[] {
    if (this.state.phase !== 'idle') throw new Error('ReconcileInitiator.start() called twice');
    this.state = { phase: 'await-summary' };
    this.mutableStats.roundTrips++;
    return this.sent([{ type: 'hello', version: RECONCILE_VERSION, root: this.root, count: this.set.size }]);
  }

  protected fail(error: ClawpeerError): void {
    this.state = { phase: 'failed', error };
  }

  protected handle(message: ReconcileMessage): readonly ReconcileMessage[] {
    const state = this.state;
    switch (state.phase) {
      case 'idle':
      case 'done':
        throw this.unexpected(message);
      case 'failed':
        throw state.error;
      case 'await-summary':
        if (message.type === 'equal') {
          this.state = {
            phase: 'done',
            result: { idsWeLack: [], idsTheyLack: [], peerRoot: this.root, peerCount: this.set.size, method: 'equal' },
          };
          return [];
        }
        if (message.type !== 'different') throw this.unexpected(message);
        return this.#onDifferent(message);
      case 'decoding':
        if (message.type !== 'symbols') throw this.unexpected(message);
        return this.#onSymbols(state, message);
      case 'listing':
        if (message.type !== 'ids') throw this.unexpected(message);
        return this.#onList(state.peer, state.list, message);
      default: {
        const never: never = state;
        throw new TypeError(`unhandled initiator state ${JSON.stringify(never)}`);
      }
    }
  }

  #onDifferent(message: Extract<ReconcileMessage, { type: 'different' }>): readonly ReconcileMessage[] {
    if (equalBytes(message.root, this.root)) throw protocolError('peer answered "different" with a root equal to ours');
    const peer = this.peerSummary(message.root, message.count);
    if (message.cells === 0) {
      this.mutableStats.fellBack = true;
      this.state = { phase: 'listing', peer, list: new IdCollector('full', peer.count) };
      return [];
    }
    const cap = cellCap(this.set.size, peer.count);
    if (message.cells > cap) throw protocolError(`peer announced ${message.cells} cells, past the cap of ${cap}`);
    const decoder = new RibltDecoder(this.set.toPacked(), this.set.size + peer.count);
    this.state = { phase: 'decoding', peer, decoder, nextStart: 0, batchEnd: message.cells, requests: 0 };
    return [];
  }

  #onSymbols(
    state: Extract<InitiatorState, { phase: 'decoding' }>,
    message: Extract<ReconcileMessage, { type: 'symbols' }>,
  ): readonly ReconcileMessage[] {
    const s = message.symbols;
    if (s.start !== state.nextStart)
      throw protocolError(`symbols start at cell ${s.start}, expected ${state.nextStart}`);
    if (s.length === 0) throw protocolError('empty symbols message');
    const cap = cellCap(this.set.size, state.peer.count);
    if (s.start + s.length > state.batchEnd) {
      throw protocolError(`symbols run to cell ${s.start + s.length}, past the ${state.batchEnd} announced`);
    }
    state.nextStart = s.start + s.length;
    this.mutableStats.cells += s.length;
    if (state.decoder.status === 'need-more') state.decoder.add(s);
    if (state.nextStart !== state.batchEnd) return [];

    const status = state.decoder.status;
    switch (status) {
      case 'decoded': {
        const weLack = state.decoder.remote();
        const theyLack = state.decoder.local();
        const result = this.verified(state.peer, weLack, theyLack, 'riblt');
        // A decode that does not reproduce the peer's root is a lie or a 2^-64 checksum
        // accident; the full list tells which.
        if (result === undefined) return this.#fallBack(state.peer);
        this.state = { phase: 'done', result };
        return [...idMessages('initiator-lacks', weLack), ...idMessages('responder-lacks', theyLack)];
      }
      case 'overflow':
        return this.#fallBack(state.peer);
      case 'need-more': {
        const have = state.nextStart;
        const estimate = state.decoder.estimateDifference();
        // The first estimate (from ~16 cells, +-37%) errs both ways already; a margin on top
        // mostly adds overshoot. Later ones are sharper and get a margin of 1/sqrt(cells).
        const margin = state.requests === 0 ? 1 : 1 + 1 / Math.sqrt(have);
        const target = Math.max(
          Math.ceil(PLANNED_CELLS_PER_DIFFERENCE * estimate * margin) + BATCH_SLACK_CELLS,
          Math.ceil(have * MIN_BATCH_GROWTH) + BATCH_SLACK_CELLS,
        );
        const wantedBytes = (target - have) * ESTIMATED_CELL_BYTES;
        if (target > cap || wantedBytes > state.peer.count * REVISION_ID_BYTES) return this.#fallBack(state.peer);
        state.batchEnd = target;
        state.requests++;
        this.mutableStats.roundTrips++;
        return [{ type: 'more', start: have, cells: target - have }];
      }
      default: {
        const never: never = status;
        throw new TypeError(`unhandled decoder status ${String(never)}`);
      }
    }
  }

  #fallBack(peer: PeerSummary): readonly ReconcileMessage[] {
    this.state = { phase: 'listing', peer, list: new IdCollector('full', peer.count) };
    this.mutableStats.fellBack = true;
    this.mutableStats.roundTrips++;
    return [{ type: 'send-ids' }];
  }

  #onList(
    peer: PeerSummary,
    list: IdCollector,
    message: Extract<ReconcileMessage, { type: 'ids' }>,
  ): readonly ReconcileMessage[] {
    if (message.list !== 'full') throw protocolError(`expected the peer's full id list, got list ${message.list}`);
    list.add(message.ids, message.last);
    if (!message.last) return [];
    if (list.count !== peer.count) throw protocolError(`peer announced ${peer.count} ids but listed ${list.count}`);
    const theirs = MerkleIdSet.fromPacked(list.packed());
    if (theirs.size !== peer.count) throw protocolError('peer listed an id twice');
    if (!equalBytes(theirs.root(), peer.root)) throw protocolError("peer's id list does not match its announced root");
    const weLack = difference(theirs, this.set);
    const theyLack = difference(this.set, theirs);
    this.state = {
      phase: 'done',
      result: {
        idsWeLack: splitIds(weLack),
        idsTheyLack: splitIds(theyLack),
        peerRoot: peer.root,
        peerCount: peer.count,
        method: 'full-list',
      },
    };
    return [...idMessages('initiator-lacks', weLack), ...idMessages('responder-lacks', theyLack)];
  }
}

/** Ids of `a` not in `b`, packed. */
function difference(a: MerkleIdSet, b: MerkleIdSet): Uint8Array {
  const all = a.toPacked();
  let o = 0;
  for (let i = 0; i < all.length; i += REVISION_ID_BYTES) {
    const id = all.subarray(i, i + REVISION_ID_BYTES);
    if (b.has(id)) continue;
    all.copyWithin(o, i, i + REVISION_ID_BYTES);
    o += REVISION_ID_BYTES;
  }
  return all.slice(0, o);
}

// --- responder ----------------------------------------------------------------------------------

type ResponderState =
  | { readonly phase: 'await-hello' }
  | { readonly phase: 'serving'; readonly peer: PeerSummary; encoder: RibltEncoder | undefined }
  | {
      readonly phase: 'receiving-result';
      readonly peer: PeerSummary;
      readonly theyLack: IdCollector;
      readonly weLack: IdCollector;
      current: 'initiator-lacks' | 'responder-lacks';
    }
  | { readonly phase: 'done'; readonly result: ReconcileResult }
  | { readonly phase: 'failed'; readonly error: ClawpeerError };

/** The side that answers: it streams cells or its id list and learns the result at the end. */
export class ReconcileResponder extends Endpoint<ResponderState> {
  protected state: ResponderState = { phase: 'await-hello' };
  readonly #firstBatchCells: number;

  /** `set` must not change until the exchange ends. */
  constructor(set: MerkleIdSet, options: ReconcileOptions = {}) {
    super(set, options);
    this.#firstBatchCells = options.firstBatchCells ?? DEFAULT_FIRST_BATCH_CELLS;
    if (!Number.isSafeInteger(this.#firstBatchCells) || this.#firstBatchCells < 1) {
      throw new ClawpeerError('USAGE', `firstBatchCells must be a positive integer, got ${this.#firstBatchCells}`);
    }
  }

  get result(): ReconcileResult | undefined {
    return this.state.phase === 'done' ? this.state.result : undefined;
  }

  protected fail(error: ClawpeerError): void {
    this.state = { phase: 'failed', error };
  }

  protected handle(message: ReconcileMessage): readonly ReconcileMessage[] {
    const state = this.state;
    switch (state.phase) {
      case 'await-hello':
        if (message.type !== 'hello') throw this.unexpected(message);
        return this.#onHello(message);
      case 'serving':
        switch (message.type) {
          case 'more':
            return this.#onMore(state, message.start, message.cells);
          case 'send-ids':
            this.mutableStats.fellBack = true;
            this.mutableStats.roundTrips++;
            state.encoder = undefined; // no more cells will be asked for; free ~56 bytes per id
            return idMessages('full', this.set.toPacked());
          case 'ids': {
            const next = {
              phase: 'receiving-result' as const,
              peer: state.peer,
              // The initiator lacks only ids we have, and we lack at most all of its ids.
              theyLack: new IdCollector('initiator-lacks', this.set.size),
              weLack: new IdCollector('responder-lacks', state.peer.count),
              current: 'initiator-lacks' as const,
            };
            this.state = next;
            return this.#onResultList(next, message);
          }
          default:
            throw this.unexpected(message);
        }
      case 'receiving-result':
        if (message.type !== 'ids') throw this.unexpected(message);
        return this.#onResultList(state, message);
      case 'done':
        throw this.unexpected(message);
      case 'failed':
        throw state.error;
      default: {
        const never: never = state;
        throw new TypeError(`unhandled responder state ${JSON.stringify(never)}`);
      }
    }
  }

  #onHello(hello: Extract<ReconcileMessage, { type: 'hello' }>): readonly ReconcileMessage[] {
    if (hello.version !== RECONCILE_VERSION) {
      throw new ClawpeerError(
        'VERSION_MISMATCH',
        `revision reconciliation: peer speaks version ${hello.version}, we speak ${RECONCILE_VERSION}`,
      );
    }
    this.mutableStats.roundTrips++;
    const peer = this.peerSummary(hello.root, hello.count);
    if (equalBytes(hello.root, this.root)) {
      this.state = {
        phase: 'done',
        result: { idsWeLack: [], idsTheyLack: [], peerRoot: peer.root, peerCount: peer.count, method: 'equal' },
      };
      return [{ type: 'equal' }];
    }
    // |N_i - N_r| differing ids at least: if even those would cost more as cells than our
    // whole list, send the list (this covers one side being empty).
    const lowerBound = Math.abs(hello.count - this.set.size);
    const first = Math.max(
      this.#firstBatchCells,
      Math.ceil(FIRST_BATCH_CELLS_PER_DIFFERENCE * lowerBound) + BATCH_SLACK_CELLS,
    );
    if (
      first * ESTIMATED_CELL_BYTES > this.set.size * REVISION_ID_BYTES ||
      first > cellCap(hello.count, this.set.size)
    ) {
      this.state = { phase: 'serving', peer, encoder: undefined };
      this.mutableStats.fellBack = true;
      return [
        { type: 'different', root: this.root, count: this.set.size, cells: 0 },
        ...idMessages('full', this.set.toPacked()),
      ];
    }
    const encoder = new RibltEncoder(this.set.toPacked());
    this.state = { phase: 'serving', peer, encoder };
    return [{ type: 'different', root: this.root, count: this.set.size, cells: first }, ...this.#cells(encoder, first)];
  }

  #onMore(
    state: Extract<ResponderState, { phase: 'serving' }>,
    start: number,
    cells: number,
  ): readonly ReconcileMessage[] {
    const encoder = state.encoder;
    if (encoder === undefined) throw protocolError('peer asked for cells after the full id list');
    if (start !== encoder.nextIndex)
      throw protocolError(`peer asked for cells from ${start}, the next is ${encoder.nextIndex}`);
    const cap = cellCap(state.peer.count, this.set.size);
    if (cells < 1 || cells > this.set.size + MORE_CELLS_SLACK || start + cells > cap) {
      throw protocolError(
        `peer asked for ${cells} cells from ${start}: over ${this.set.size + MORE_CELLS_SLACK} per request or the cap of ${cap}`,
      );
    }
    this.mutableStats.roundTrips++;
    return this.#cells(encoder, cells);
  }

  #cells(encoder: RibltEncoder, cells: number): ReconcileMessage[] {
    const out: ReconcileMessage[] = [];
    for (let left = cells; left > 0; left -= MAX_SYMBOLS_PER_MESSAGE) {
      out.push({ type: 'symbols', symbols: encoder.produce(Math.min(left, MAX_SYMBOLS_PER_MESSAGE)) });
    }
    this.mutableStats.cells += cells;
    return out;
  }

  #onResultList(
    state: Extract<ResponderState, { phase: 'receiving-result' }>,
    message: Extract<ReconcileMessage, { type: 'ids' }>,
  ): readonly ReconcileMessage[] {
    if (message.list !== state.current) throw protocolError(`expected id list ${state.current}, got ${message.list}`);
    (state.current === 'initiator-lacks' ? state.theyLack : state.weLack).add(message.ids, message.last);
    if (!message.last) return [];
    if (state.current === 'initiator-lacks') {
      state.current = 'responder-lacks';
      return [];
    }
    const result = this.verified(
      state.peer,
      state.weLack.packed(),
      state.theyLack.packed(),
      this.stats.fellBack ? 'full-list' : 'riblt',
    );
    if (result === undefined) throw protocolError("peer's reconciliation result does not reproduce its announced root");
    this.state = { phase: 'done', result };
    return [];
  }
}
