// The data sender: given what the receiver lacks, plans the unique chunks, spreads them over N
// streams by LPT (with work stealing), and keeps up to W sealed chunks unacknowledged on each.
// Acks mean "written and BLAKE3-verified" on the receiver, which is what makes resume exact.
//
// Early chunks (feature early-chunks, when both sides announced it). Each stream starts before
// the Want arrives with the plan's first chunks, flagged early, up to its window and
// EARLY_MAX_BYTES for the whole transfer, and waits for the Want only then. That saves the
// Manifest/Want round trip (100 revisions of 4 KiB at 100 ms, W=16: 8.5 round trips before, 7.8-8.3 after);
// an early chunk the receiver already held costs its bytes and is dropped there. A stream whose
// unacknowledged frames are all such unwanted early chunks does not wait for their acks: the
// receiver may finish (it has all it asked for) without ever reading that stream.
import { setMaxListeners } from 'node:events';
import { performance } from 'node:perf_hooks';
import type { SealedFrameParts } from '../protocol/aead.js';
import { ClawpeerError } from '../errors.js';
import type { Logger } from '../logger.js';
import { decodeAckBody } from '../protocol/ack-codec.js';
import { encodeControlFrame } from '../protocol/messages.js';
import {
  DEFAULT_MAX_UNIT_BYTES,
  DEFAULT_PER_UNIT_OVERHEAD_BYTES,
  scheduleLpt,
  splitIntoUnits,
  WorkQueue,
  type WorkUnit,
} from '../transfer/lpt-scheduler.js';
import { FileDelivery } from '../transfer/file-delivery.js';
import { chunkKey, planTransfer, type FileManifest as PlanFile, type TransferPlan } from '../transfer/plan.js';
import { SendWindow } from '../transfer/send-window.js';
import { pacedWrite, type RateLimiter } from '../transfer/rate-limiter.js';
import { ChunkCompressor, senderCodec } from '../session/chunk-compression.js';
import { ChunkReader } from './chunk-reader.js';
import { lackingKeys, uniqueChunks, chunkIdAt, type WantInfo } from '../transfer/chunk-order.js';
import { expectFrame, FrameStream } from '../session/frame-stream.js';
import type { PeerSession } from '../session/session.js';
import type { SourceFile, TransferSource } from './transfer-source.js';
import { holdForTest, TEST_HOOKS } from '../support/test-hooks.js';
import { sleep } from '../support/timeouts.js';
import { WriteCoalescer } from './write-coalescer.js';
import { watchLoss } from '../session/loss-watch.js';
import { STRIPE_POLICY_DEFAULTS } from '../transfer/stripe-policy.js';
import type { Connection } from '../transport/types.js';
import { connectionBudgets, type ConnectionBudget } from './connection-budget.js';

let framesSent = 0; // process-wide, for TEST_HOOKS.tamperDataFrame

/**
 * Bytes of early chunks one transfer may send before the Want (all streams together). What an
 * early chunk saves is one round trip, which matters to small transfers; what it can waste is
 * its bytes, when the receiver holds them (a repeated push, a resume). 256 KiB covers a push of
 * small files whole (64 revisions of 4 KiB) and is one average chunk of a big file.
 */
export const EARLY_MAX_BYTES = 256 << 10;

/**
 * Unacknowledged payload bytes one transfer keeps in flight, split evenly over its streams. The
 * chunk window alone allows W x streams x chunk size: 32 MiB at the defaults and 256 KiB chunks,
 * 128 MiB with 1 MiB chunks, most of it sealed frames waiting in this process. Measured on a
 * 1 GiB loopback push (defaults, 2 runs each): sender peak RSS 223-235 MiB uncapped, 186-189 MiB
 * at 4 MiB per stream, the same time. 16 MiB is still the bandwidth-delay product of
 * 1.3 Gbit/s at 100 ms, and one stream alone gets all of it.
 */
export const TRANSFER_WINDOW_BYTES = 16 << 20;

/**
 * Striping on a path of 5 ms or more: a transfer is cut into units of at most this (one average
 * chunk; a larger chunk is a unit alone). A stream takes a unit only while its connection has
 * room (connection-budget.ts), so this is what a slow connection may hold beyond its windows,
 * and what the last unit of the transfer costs on the slowest connection. (On a LAN path that
 * may stripe: ~128 units of at least twice this, as much for stealing.)
 */
export const STRIPED_UNIT_BYTES = 256 << 10;

/**
 * Under a rate cap, a transfer keeps at most this many seconds' worth unacknowledged: more would
 * only wait in this process for the limiter.
 */
const RATE_CAPPED_WINDOW_SECONDS = 2;

export interface SendChunksOptions {
  readonly session: PeerSession;
  readonly transferId: number;
  readonly source: TransferSource;
  /** The receiver's Want, when it comes (early chunks go first meanwhile, see the header). */
  readonly want: Promise<WantInfo>;
  /** false: wait for the Want even when the peer takes early chunks (see serveFetch). */
  readonly early?: boolean;
  readonly streams: number;
  readonly window: number;
  /** Unacknowledged payload bytes of the whole transfer (TRANSFER_WINDOW_BYTES unless set). */
  readonly windowBytes?: number;
  /** Caps on the rate the data streams write at (--bwlimit; listen --bwlimit shares one among transfers). */
  readonly rateLimiters?: readonly RateLimiter[];
  readonly idleTimeoutMs: number;
  readonly signal: AbortSignal;
  readonly log: Logger;
  /** Called after each chunk is handed to the transport (payload bytes). */
  readonly onChunkSent?: (bytes: number) => void;
  /**
   * Progress: the payload bytes this transfer sends in all. Told at once (every distinct chunk,
   * while the Want is not in), and again when the Want narrows it to what the receiver lacks
   * plus the early chunks already sent.
   */
  readonly onTotalBytes?: (bytes: number) => void;
  /** Progress: files the receiver holds completely so far (see transfer/file-delivery.ts). */
  readonly onFilesDelivered?: (files: number) => void;
}

export interface SendStats {
  readonly chunksSent: number;
  /** Chunks that went zstd-compressed (a subset of chunksSent, early ones included). */
  readonly chunksCompressed: number;
  readonly chunksSkipped: number;
  readonly bytesSent: number;
  readonly streamsUsed: number;
}

/** What the receiver lacks, once its Want is in; the early budget till then. */
class WantGate {
  /** Keys of the chunks the receiver asked for; undefined until the Want is in. */
  lacking: ReadonlySet<string> | undefined;
  /** Settles when `lacking` is known; rejects when the Want never comes. */
  readonly ready: Promise<void>;
  #earlyBytesLeft: number;
  /** Chunks that went (or are going) early: key -> bytes. */
  readonly #early = new Map<string, number>();

  private constructor(keys: readonly string[], want: Promise<WantInfo>, earlyBytes: number) {
    this.#earlyBytesLeft = earlyBytes;
    this.ready = want.then((w) => {
      this.lacking = lackingKeys(keys, w);
    });
    this.ready.catch(() => undefined); // awaited by the streams; this only marks it handled
  }

  /** Without early chunks (a peer that does not take them), the Want is awaited here. */
  static async open(keys: readonly string[], want: Promise<WantInfo>, early: boolean): Promise<WantGate> {
    const gate = new WantGate(keys, want, early ? EARLY_MAX_BYTES : 0);
    if (!early) await gate.ready;
    return gate;
  }

  /** Takes chunk `key`'s `bytes` from the early budget; false (and the budget is closed) when they do not fit. */
  takeEarly(key: string, bytes: number): boolean {
    if (bytes > this.#earlyBytesLeft) {
      this.#earlyBytesLeft = 0;
      return false;
    }
    this.#earlyBytesLeft -= bytes;
    this.#early.set(key, bytes);
    return true;
  }

  /** Once the Want is in: the bytes of `plan` the receiver lacks, and of early chunks it did not. */
  bytesToSend(plan: TransferPlan): number {
    const lacking = this.lacking;
    if (lacking === undefined) return plan.totalBytes;
    let bytes = 0;
    for (const c of plan.chunks) if (lacking.has(c.key)) bytes += c.length;
    for (const [key, length] of this.#early) if (!lacking.has(key)) bytes += length;
    return bytes;
  }
}

/** Wakes the sender waiting on acks; a notify with nobody waiting is remembered, never lost. */
class AckSignal {
  #waiter: (() => void) | undefined;
  #pending = false;
  notify(): void {
    const w = this.#waiter;
    this.#waiter = undefined;
    if (w === undefined) this.#pending = true;
    else w();
  }
  wait(): Promise<void> {
    if (this.#pending) {
      this.#pending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => (this.#waiter = resolve));
  }
}

/** Test hook: flips the byte `fromEnd` bytes before the end of the frame the parts make up. */
function flipByteFromEnd(frame: SealedFrameParts, fromEnd: number): void {
  let at = fromEnd;
  for (const piece of [frame.tag, frame.ciphertext, frame.prefix]) {
    if (at <= piece.length) {
      piece[piece.length - at] = (piece[piece.length - at] ?? 0) ^ 0x01;
      return;
    }
    at -= piece.length;
  }
}

export async function sendChunks(options: SendChunksOptions): Promise<SendStats> {
  const { source } = options;
  const { keys, ids } = uniqueChunks(source.entries);
  const early = options.early !== false && options.session.caps.features.includes('early-chunks');
  const gate = await WantGate.open(keys, options.want, early);

  // The plan covers files only, in entry order; planIndex -> source file.
  const planFiles: PlanFile[] = [];
  const sources: SourceFile[] = [];
  source.entries.forEach((entry, i) => {
    const file = source.files.get(i);
    if (file === undefined) return;
    planFiles.push({
      path: entry.path,
      size: entry.size,
      mode: entry.mode,
      mtimeMs: entry.mtimeMs,
      chunks: entry.chunkLengths.map((length, c) => ({ id: chunkIdAt(entry, c), length })),
    });
    sources.push(file);
  });
  // Before the Want, every distinct chunk is planned; chunks the Want leaves out are skipped.
  const plan = planTransfer(
    planFiles,
    gate.lacking === undefined ? ids.values() : [...gate.lacking].map((k) => ids.get(k) ?? new Uint8Array(0)),
  );
  // The total before the files the Want completes, so a report of all files done carries it.
  const onTotal = options.onTotalBytes;
  if (onTotal !== undefined) {
    onTotal(plan.totalBytes);
    if (gate.lacking === undefined)
      gate.ready.then(
        () => onTotal(gate.bytesToSend(plan)),
        () => undefined,
      );
  }
  const onFiles = options.onFilesDelivered;
  const delivery =
    onFiles === undefined ? undefined : new FileDelivery(planFiles.map((f) => f.chunks.map((c) => chunkKey(c.id))));
  if (delivery !== undefined && onFiles !== undefined) {
    gate.ready.then(
      () => {
        if (gate.lacking !== undefined) delivery.wantArrived(gate.lacking);
        if (delivery.done > 0) onFiles(delivery.done); // files held already, or empty
      },
      () => undefined,
    );
  }
  const { session } = options;
  // A session that may stripe over more connections cuts big files finer: a stream that joins
  // later takes work by stealing whole units. On a path of 5 ms or more, each connection's streams
  // also hold at most a few of its congestion windows (connection-budget.ts), in units of about a
  // chunk; not on a LAN path (it never stripes, and its receiver's write outlasts the round trip).
  const mayStripe =
    session.caps.features.includes('join') && (session.connections().length > 1 || session.canAddConnections);
  const budgeted = mayStripe && session.rttMs() >= STRIPE_POLICY_DEFAULTS.minRttMs;
  const budgetOf = connectionBudgets(budgeted, STRIPED_UNIT_BYTES, () => session.stripes);
  const maxUnitBytes = budgeted
    ? STRIPED_UNIT_BYTES
    : mayStripe
      ? Math.min(DEFAULT_MAX_UNIT_BYTES, Math.max(2 * STRIPED_UNIT_BYTES, Math.ceil(plan.totalBytes / 128)))
      : DEFAULT_MAX_UNIT_BYTES;
  const units = splitIntoUnits(plan, { maxUnitBytes, perUnitOverheadBytes: DEFAULT_PER_UNIT_OVERHEAD_BYTES });
  const streamCount = Math.max(0, Math.min(options.streams, units.length));
  // The Want's verdict is needed for the stats even when everything went early.
  const zstd = senderCodec(options.session.caps);
  const compressor = zstd === null ? undefined : new ChunkCompressor(zstd);
  const statsAfter = async (sent: readonly { chunksSent: number; bytesSent: number }[]): Promise<SendStats> => {
    await gate.ready;
    return {
      chunksSent: sent.reduce((a, s) => a + s.chunksSent, 0),
      bytesSent: sent.reduce((a, s) => a + s.bytesSent, 0),
      streamsUsed: Math.max(streamCount, sent.length),
      chunksCompressed: compressor?.compressedChunks ?? 0,
      chunksSkipped: plan.stats.chunkRefs - (gate.lacking?.size ?? 0),
    };
  };
  if (streamCount === 0) return statsAfter([]);

  const queue = new WorkQueue(scheduleLpt(units, streamCount), { steal: true });
  // The transfer's byte window, split evenly over its streams. Under a cap, the tightest one
  // bounds it (a shared cap may give us less still).
  const limiters = options.rateLimiters ?? [];
  let windowBytes = options.windowBytes ?? TRANSFER_WINDOW_BYTES;
  if (limiters.length > 0)
    windowBytes = Math.min(
      windowBytes,
      Math.max(
        options.session.caps.chunking.maxBytes,
        Math.min(...limiters.map((l) => l.bytesPerSecond)) * RATE_CAPPED_WINDOW_SECONDS,
      ),
    );
  const streamWindowBytes = Math.ceil(windowBytes / streamCount);
  const reader = new ChunkReader();
  const abort = new AbortController();
  // Every data stream waits on it (a listener per pending read and paced write): a striped
  // session's 14 connections passed Node's warning threshold of 10.
  setMaxListeners(0, abort.signal);
  const onOuterAbort = (): void => abort.abort();
  options.signal.addEventListener('abort', onOuterAbort, { once: true });
  abort.signal.addEventListener('abort', () => budgetOf.wakeAll(), { once: true }); // waiting streams see it
  const running: Promise<StreamResult>[] = [];
  const context: SendContext = {
    options: { ...options, signal: abort.signal },
    streamWindowBytes,
    plan,
    sources,
    queue,
    reader,
    gate,
    compressor,
    delivery,
  };
  const start = (index: number, conn: Connection): void => {
    const run = runStream({ ...context, index, conn, budget: budgetOf(conn) }).catch((err: unknown) => {
      abort.abort();
      throw err;
    });
    run.catch(() => undefined); // a stream started after a failure is awaited by nobody
    running.push(run);
  };
  // Streams are dealt over the session's connections; a connection that joins during the
  // transfer (session-join.ts) gets a stream of its own, which steals work (lpt-scheduler.ts).
  for (let s = 0; s < streamCount; s++) start(s, session.dataConnection(s));
  const unwatchJoins = session.onConnection((conn) => {
    if (abort.signal.aborted || queue.unstartedCount === 0) return;
    start(queue.addStream(), conn);
  });
  const stopLossWatch = watchLoss(session, options.log);
  const sent: StreamResult[] = [];
  try {
    while (sent.length < running.length) sent.push(...(await Promise.all(running.slice(sent.length))));
  } finally {
    stopLossWatch();
    unwatchJoins();
    options.signal.removeEventListener('abort', onOuterAbort);
    await reader.close();
  }
  // A stream the receiver stopped ended without sending the rest of its work; that is fine only
  // when nothing of it (nor of what no stream took) was wanted.
  const stopped = sent.filter((r) => r.stop !== undefined);
  if (stopped.length > 0 && wantedLeft(plan, queue, stopped, gate)) throw stopped[0]?.stop;
  return statsAfter(sent);
}

interface StreamResult {
  readonly chunksSent: number;
  readonly bytesSent: number;
  /** The receiver stopped the stream when nothing sent on it was wanted (see stoppedUnneeded). */
  readonly stop?: unknown;
  /** Plan chunk indices [first, end) of the unit it was in then, not sent. */
  readonly unsent?: { readonly first: number; readonly end: number };
}

/** True when a chunk the receiver lacks was left unsent by stopped streams or in the queue. */
function wantedLeft(
  plan: TransferPlan,
  queue: WorkQueue<WorkUnit>,
  stopped: readonly StreamResult[],
  gate: WantGate,
): boolean {
  const lacking = gate.lacking;
  if (lacking === undefined) return true;
  const anyWanted = (first: number, end: number): boolean => {
    for (let i = first; i < end; i++) if (lacking.has(plan.chunks[i]?.key ?? '')) return true;
    return false;
  };
  for (const r of stopped) if (r.unsent !== undefined && anyWanted(r.unsent.first, r.unsent.end)) return true;
  for (;;) {
    const work = queue.next(0); // with stealing: every stream's leftovers
    if (work.kind === 'empty') return false;
    if (anyWanted(work.job.first, work.job.end)) return true;
  }
}

/** What every data stream of one send shares. */
interface SendContext {
  readonly options: SendChunksOptions;
  /** Unacknowledged payload bytes each stream may keep (a larger chunk still goes alone: SendWindow.canSend). */
  readonly streamWindowBytes: number;
  readonly plan: TransferPlan;
  readonly sources: readonly SourceFile[];
  readonly queue: WorkQueue<WorkUnit>;
  readonly reader: ChunkReader;
  readonly gate: WantGate;
  readonly compressor: ChunkCompressor | undefined;
  readonly delivery: FileDelivery | undefined;
}

/** One data stream of a send: what the streams share, its index, and how it is opened. */
interface StreamRun extends SendContext {
  readonly index: number;
  /** The connection the stream goes over. */
  readonly conn: Connection;
  /** When set, the stream takes a unit only while its connection has room (connection-budget.ts). */
  readonly budget: ConnectionBudget | undefined;
}

async function runStream(run: StreamRun): Promise<StreamResult> {
  const { index, conn, budget, streamWindowBytes, options, plan, sources, queue, reader, gate, compressor, delivery } =
    run;
  const { session, signal } = options;
  const limiters = options.rateLimiters ?? [];
  const raw = await conn.openStream();
  const streamId = session.allocateDataStreamId();
  const frames = new FrameStream(
    raw,
    session.caps.maxFrameBytes,
    options.idleTimeoutMs,
    `data stream ${streamId} of transfer ${options.transferId}`,
  );
  // When the cap (or the cap and the link) let this stream's bytes out, or the transport last
  // took some. An ack is late only when it is overdue and this has not moved for as long:
  // behind a slow or shared cap, or a slow link, acks come as slowly as the bytes leave.
  let lastProgressAt = performance.now();
  const progressing = (): boolean => performance.now() - lastProgressAt < options.idleTimeoutMs;
  const window = new SendWindow({
    maxInFlightChunks: options.window,
    maxInFlightBytes: streamWindowBytes,
    stallTimeoutMs: options.idleTimeoutMs,
  });
  const wake = new AckSignal();
  // Chunk bytes are read into this one buffer (grown to the largest chunk seen, <= the
  // negotiated maxBytes): the sealer copies them into the frame before the next read.
  let readBuffer = Buffer.allocUnsafe(0);
  let ackError: unknown;
  let acksEnded = false;
  // seq -> chunk key of this stream's early frames, to tell which the receiver did not want.
  const earlyKeys = new Map<number, string>();
  let current: { end: number; next: number } | undefined; // the unit in progress: its unsent part
  let unsentBytes = 0; // payload bytes of `current` not yet handed to the window
  void gate.ready.then(
    () => wake.notify(),
    () => wake.notify(),
  );

  const ackLoop = (async () => {
    try {
      for (;;) {
        const frame = await frames.next(signal, progressing);
        if (frame === null) break;
        const ack = decodeAckBody(expectFrame(frame, 'ack', `data stream ${streamId}`).body);
        if (ack.streamId !== streamId)
          throw new ClawpeerError('PROTOCOL', `ack for stream ${ack.streamId} arrived on data stream ${streamId}`);
        const { acked } = window.onAck(ack.ackedThroughSeq, performance.now());
        if (delivery?.deliver(acked.map((a) => a.key)) === true) options.onFilesDelivered?.(delivery.done);
        wake.notify();
        budget?.wake();
      }
    } catch (err) {
      ackError = err;
    } finally {
      acksEnded = true;
      wake.notify();
    }
  })();
  // Unwanted early frames only: the receiver may have finished without reading this stream.
  const onlyUnwantedInFlight = (): boolean => {
    const lacking = gate.lacking;
    if (lacking === undefined) return false;
    for (let seq = window.nextSeq - window.inFlightChunks; seq < window.nextSeq; seq++) {
      const key = earlyKeys.get(seq);
      if (key === undefined || lacking.has(key)) return false;
    }
    return true;
  };
  const waitForRoom = async (bytes: number): Promise<void> => {
    while (!window.canSend(bytes)) {
      // eslint-disable-next-line @typescript-eslint/only-throw-error -- rethrows the caught failure unchanged
      if (ackError !== undefined) throw ackError;
      if (acksEnded)
        throw new ClawpeerError('PROTOCOL', `receiver closed data stream ${streamId} with chunks unacknowledged`);
      await wake.wait();
    }
  };

  // What this stream holds of its connection's budget; unwanted early frames may never be acked.
  const leaveBudget = budget?.join(() => unsentBytes + (onlyUnwantedInFlight() ? 0 : window.inFlightBytes));
  if (budget !== undefined)
    void gate.ready.then(
      () => budget.wake(),
      () => undefined,
    );
  try {
    // Sealed frames are queued and written in batches by one writer (write-coalescer.ts); the
    // window bounds what is queued, as it counts every frame from onSent on. The data-open goes
    // first in that queue, in one write with the first chunks rather than an awaited one before.
    const write = async (bytes: Uint8Array): Promise<void> => {
      lastProgressAt = performance.now();
      await frames.write(bytes);
      lastProgressAt = performance.now();
    };
    const out = new WriteCoalescer(pacedWrite(limiters, write, signal));
    out.push(encodeControlFrame({ type: 'data-open', transferId: options.transferId, streamId }));
    for (;;) {
      // Waiting for the connection to have room is progress of the transfer, not a stall.
      while (budget !== undefined && queue.unstartedCount > 0 && !budget.hasRoom()) {
        await budget.changed();
        signal.throwIfAborted();
        lastProgressAt = performance.now();
      }
      const work = queue.next(index);
      if (work.kind === 'empty') break;
      const unit = work.job;
      const file = sources[unit.fileIndex];
      if (file === undefined) throw new TypeError(`plan names file ${unit.fileIndex}, which has no source`);
      current = { end: unit.end, next: unit.first };
      unsentBytes = unit.bytes;
      for (let i = unit.first; i < unit.end; i++) {
        current.next = i;
        signal.throwIfAborted();
        const chunk = plan.chunks[i];
        const ref = chunk === undefined ? undefined : file.manifest.chunks[chunk.chunkIndex];
        if (chunk === undefined || ref === undefined) throw new TypeError(`plan chunk ${i} is out of range`);
        let early = false;
        if (gate.lacking === undefined) {
          if (earlyKeys.size < options.window && gate.takeEarly(chunk.key, chunk.length)) early = true;
          else await gate.ready;
        }
        if (!early && gate.lacking?.has(chunk.key) !== true) {
          unsentBytes -= chunk.length;
          continue; // the receiver holds it
        }
        await waitForRoom(chunk.length);
        if (readBuffer.length < ref.length)
          readBuffer = Buffer.allocUnsafe(Math.max(ref.length, session.caps.chunking.maxBytes));
        const bytes = await reader.read(file.localPath, ref.offset, ref.length, chunk.id, readBuffer, file);
        const packed = compressor === undefined ? null : await compressor.compress(bytes, file.localPath);
        const seq = window.nextSeq;
        // Three pieces, one frame on the wire: no frame-sized buffer is built (aead.ts sealParts).
        const frame = session.sealer.sealParts(
          { streamId, sequence: seq, chunkId: chunk.id, compressed: packed !== null, early, chunkBytes: chunk.length },
          packed ?? bytes,
        );
        if (early) earlyKeys.set(seq, chunk.key);
        if (TEST_HOOKS.delayPerChunkMs !== undefined) await sleep(TEST_HOOKS.delayPerChunkMs);
        if (TEST_HOOKS.holdUntilFile !== undefined) await holdForTest(options.signal);
        if (framesSent++ === TEST_HOOKS.tamperDataFrame) flipByteFromEnd(frame, 20);
        // Recorded before the write: on a fast link the ack can arrive before write() resolves.
        window.onSent(seq, chunk.id, chunk.length, performance.now());
        unsentBytes -= chunk.length;
        out.push(frame.prefix, frame.ciphertext, frame.tag);
        current.next = i + 1;
        options.onChunkSent?.(chunk.length);
      }
      current = undefined;
      unsentBytes = 0;
    }
    await out.drained();
    window.finish();
    while (window.inFlightChunks > 0 && !onlyUnwantedInFlight()) {
      // eslint-disable-next-line @typescript-eslint/only-throw-error -- rethrows the caught failure unchanged
      if (ackError !== undefined) throw ackError;
      if (acksEnded)
        throw new ClawpeerError(
          'PROTOCOL',
          `receiver closed data stream ${streamId} with ${window.inFlightChunks} chunks unacknowledged`,
        );
      await wake.wait();
    }
    // Everything on this stream is acknowledged: written and verified. The receiver's own FIN
    // (or, once the whole transfer is in, a reset of a late stream) no longer matters, so the
    // ack reader is left to finish on its own instead of costing another round trip.
    await raw.finish().catch(() => undefined);
    void ackLoop;
    const { chunksSent, bytesSent } = window.counters;
    return { chunksSent, bytesSent };
  } catch (err) {
    raw.reset();
    if (await stoppedUnneeded(err)) {
      const { chunksSent, bytesSent } = window.counters;
      return {
        chunksSent,
        bytesSent,
        stop: err,
        ...(current === undefined ? {} : { unsent: { first: current.next, end: current.end } }),
      };
    }
    throw err instanceof Error && err.name === 'AbortError'
      ? new ClawpeerError('ABORTED', `transfer ${options.transferId} aborted`, { cause: err })
      : err;
  } finally {
    leaveBudget?.();
  }

  /**
   * True when the receiver stopped or reset this stream while everything unacknowledged on it
   * was an early chunk it did not want: it had those and finished without reading the stream
   * (the router resets a late stream of an ended transfer). Writes then fail with "stopped by
   * peer", which ends this stream, not the transfer: sendChunks fails it only if a wanted chunk
   * was left unsent, and otherwise the receiver's done or Error decides.
   */
  async function stoppedUnneeded(err: unknown): Promise<boolean> {
    if (!(err instanceof ClawpeerError) || err.code !== 'REMOTE') return false;
    // The stop can overtake the Want: they travel on different streams.
    await gate.ready.catch(() => undefined);
    return onlyUnwantedInFlight();
  }
}
