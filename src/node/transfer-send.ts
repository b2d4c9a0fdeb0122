// The data sender: given what the receiver lacks, plans the unique chunks, spreads them over N
// streams by LPT (with work stealing), and keeps up to W sealed chunks unacknowledged on each.
// Acks mean "written and BLAKE3-verified" on the receiver, which is what makes resume exact.
import { performance } from 'node:perf_hooks';
import type { SealedFrameParts } from '../crypto/aead.js';
import { ClawpeerError } from '../errors.js';
import type { Logger } from '../logger.js';
import { decodeAckBody } from '../protocol/ack-codec.js';
import { encodeControlFrame } from '../protocol/messages.js';
import { DEFAULT_MAX_UNIT_BYTES, DEFAULT_PER_UNIT_OVERHEAD_BYTES, scheduleLpt, splitIntoUnits, WorkQueue, type WorkUnit } from '../transfer/lpt-scheduler.js';
import { planTransfer, type FileManifest as PlanFile, type TransferPlan } from '../transfer/plan.js';
import { SendWindow } from '../transfer/send-window.js';
import { ChunkReader } from './chunk-reader.js';
import { lackingFromBitmap, uniqueChunks, chunkIdAt } from './chunk-order.js';
import { expectFrame, FrameStream } from './frame-stream.js';
import type { PeerSession } from './session.js';
import type { SourceFile, TransferSource } from './transfer-source.js';
import { TEST_HOOKS } from './test-hooks.js';
import { sleep } from './timeouts.js';
import { WriteCoalescer } from './write-coalescer.js';

let framesSent = 0; // process-wide, for TEST_HOOKS.tamperDataFrame

export interface SendChunksOptions {
  readonly session: PeerSession;
  readonly transferId: number;
  readonly source: TransferSource;
  readonly lacking: Uint8Array;
  readonly uniqueCount: number;
  readonly streams: number;
  readonly window: number;
  readonly idleTimeoutMs: number;
  readonly signal: AbortSignal;
  readonly log: Logger;
  /** Called after each chunk is handed to the transport (payload bytes). */
  readonly onChunkSent?: (bytes: number) => void;
}

export interface SendStats {
  readonly chunksSent: number;
  readonly chunksSkipped: number;
  readonly bytesSent: number;
  readonly streamsUsed: number;
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
  const lacking = lackingFromBitmap(keys, ids, options.lacking, options.uniqueCount);

  // The plan covers files only, in entry order; planIndex -> source file.
  const planFiles: PlanFile[] = [];
  const sources: SourceFile[] = [];
  source.entries.forEach((entry, i) => {
    const file = source.files.get(i);
    if (file === undefined) return;
    planFiles.push({ path: entry.path, size: entry.size, mode: entry.mode, mtimeMs: entry.mtimeMs, chunks: entry.chunkLengths.map((length, c) => ({ id: chunkIdAt(entry, c), length })) });
    sources.push(file);
  });
  const plan = planTransfer(planFiles, lacking);
  const units = splitIntoUnits(plan, { maxUnitBytes: DEFAULT_MAX_UNIT_BYTES, perUnitOverheadBytes: DEFAULT_PER_UNIT_OVERHEAD_BYTES });
  const streamCount = Math.max(0, Math.min(options.streams, units.length));
  const stats = { chunksSent: plan.chunks.length, chunksSkipped: plan.stats.chunkRefs - plan.chunks.length, bytesSent: plan.totalBytes, streamsUsed: streamCount };
  if (streamCount === 0) return stats;

  const queue = new WorkQueue(scheduleLpt(units, streamCount), { steal: true });
  const reader = new ChunkReader();
  const abort = new AbortController();
  const onOuterAbort = (): void => abort.abort();
  options.signal.addEventListener('abort', onOuterAbort, { once: true });
  try {
    await Promise.all(
      Array.from({ length: streamCount }, (_, s) =>
        runStream(s, { ...options, signal: abort.signal }, plan, sources, queue, reader).catch((err: unknown) => {
          abort.abort();
          throw err;
        }),
      ),
    );
  } finally {
    options.signal.removeEventListener('abort', onOuterAbort);
    await reader.close();
  }
  return stats;
}

async function runStream(
  index: number,
  options: SendChunksOptions,
  plan: TransferPlan,
  sources: readonly SourceFile[],
  queue: WorkQueue<WorkUnit>,
  reader: ChunkReader,
): Promise<void> {
  const { session, signal } = options;
  const raw = await session.connection.openStream();
  const streamId = session.allocateDataStreamId();
  const frames = new FrameStream(raw, session.caps.maxFrameBytes, options.idleTimeoutMs, `data stream ${streamId} of transfer ${options.transferId}`);
  const window = new SendWindow({ maxInFlightChunks: options.window, stallTimeoutMs: options.idleTimeoutMs });
  const wake = new AckSignal();
  // Chunk bytes are read into this one buffer (grown to the largest chunk seen, <= the
  // negotiated maxBytes): the sealer copies them into the frame before the next read.
  let readBuffer = Buffer.allocUnsafe(0);
  let ackError: unknown;
  let acksEnded = false;

  const ackLoop = (async () => {
    try {
      for (;;) {
        const frame = await frames.next(signal);
        if (frame === null) break;
        const ack = decodeAckBody(expectFrame(frame, 'ack', `data stream ${streamId}`).body);
        if (ack.streamId !== streamId) throw new ClawpeerError('PROTOCOL', `ack for stream ${ack.streamId} arrived on data stream ${streamId}`);
        window.onAck(ack.ackedThroughSeq, performance.now());
        wake.notify();
      }
    } catch (err) {
      ackError = err;
    } finally {
      acksEnded = true;
      wake.notify();
    }
  })();
  const waitForRoom = async (bytes: number): Promise<void> => {
    while (!window.canSend(bytes)) {
      if (ackError !== undefined) throw ackError;
      if (acksEnded) throw new ClawpeerError('PROTOCOL', `receiver closed data stream ${streamId} with chunks unacknowledged`);
      await wake.wait();
    }
  };

  try {
    await frames.write(encodeControlFrame({ type: 'data-open', transferId: options.transferId, streamId }));
    // Sealed frames are queued and written in batches by one writer (write-coalescer.ts); the
    // window bounds what is queued, as it counts every frame from onSent on.
    const out = new WriteCoalescer((bytes) => frames.write(bytes));
    for (;;) {
      const work = queue.next(index);
      if (work.kind === 'empty') break;
      const unit = work.job;
      const file = sources[unit.fileIndex];
      if (file === undefined) throw new TypeError(`plan names file ${unit.fileIndex}, which has no source`);
      for (let i = unit.first; i < unit.end; i++) {
        signal.throwIfAborted();
        const chunk = plan.chunks[i];
        const ref = chunk === undefined ? undefined : file.manifest.chunks[chunk.chunkIndex];
        if (chunk === undefined || ref === undefined) throw new TypeError(`plan chunk ${i} is out of range`);
        await waitForRoom(chunk.length);
        if (readBuffer.length < ref.length) readBuffer = Buffer.allocUnsafe(Math.max(ref.length, session.caps.chunking.maxBytes));
        const bytes = await reader.read(file.localPath, ref.offset, ref.length, chunk.id, readBuffer);
        const seq = window.nextSeq;
        // Three pieces, one frame on the wire: no frame-sized buffer is built (aead.ts sealParts).
        const frame = session.sealer.sealParts({ streamId, sequence: seq, chunkId: chunk.id, compressed: false, chunkBytes: chunk.length }, bytes);
        if (TEST_HOOKS.delayPerChunkMs !== undefined) await sleep(TEST_HOOKS.delayPerChunkMs);
        if (framesSent++ === TEST_HOOKS.tamperDataFrame) flipByteFromEnd(frame, 20);
        // Recorded before the write: on a fast link the ack can arrive before write() resolves.
        window.onSent(seq, chunk.id, chunk.length, performance.now());
        out.push(frame.prefix, frame.ciphertext, frame.tag);
        options.onChunkSent?.(chunk.length);
      }
    }
    await out.drained();
    window.finish();
    while (window.inFlightChunks > 0) {
      if (ackError !== undefined) throw ackError;
      if (acksEnded) throw new ClawpeerError('PROTOCOL', `receiver closed data stream ${streamId} with ${window.inFlightChunks} chunks unacknowledged`);
      await wake.wait();
    }
    // Everything on this stream is acknowledged: written and verified. The receiver's own FIN
    // (or, once the whole transfer is in, a reset of a late stream) no longer matters, so the
    // ack reader is left to finish on its own instead of costing another round trip.
    await raw.finish().catch(() => undefined);
    void ackLoop;
  } catch (err) {
    raw.reset();
    throw err instanceof Error && err.name === 'AbortError' ? new ClawpeerError('ABORTED', `transfer ${options.transferId} aborted`, { cause: err }) : err;
  }
}
