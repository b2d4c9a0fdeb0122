// A discrete-event simulation of the data plane in virtual time, for tests.
//
// Model: N streams, each a FIFO pipe with its own bandwidth (bytes per virtual ms) and a fixed
// one-way latency; the stream is reliable and ordered (a delayed frame holds back the ones
// behind it, as a QUIC stream does), and loss is modelled as extra delay on the affected frame
// (the retransmission a real transport would do). Acks travel back with the same latency and
// take no bandwidth. The sender side is the real SendWindow + WorkQueue (LPT or any other
// assignment, optionally with stealing); the receiver side is the real ReceiveTracker +
// StreamAckTracker. Congestion control is not modelled: this is about windows and scheduling.
// Deterministic: virtual time, a seeded PRNG, ties in the event queue broken by insertion order.
import type { LptAssignment, WorkUnit } from '../../src/transfer/lpt-scheduler.js';
import { WorkQueue } from '../../src/transfer/lpt-scheduler.js';
import type { ChunkId, FileManifest, TransferPlan } from '../../src/transfer/plan.js';
import { ReceiveTracker, StreamAckTracker } from '../../src/transfer/receive-tracker.js';
import { SendWindow } from '../../src/transfer/send-window.js';
import type { RttStats } from '../../src/transfer/send-window.js';

export interface SimLink {
  /** One-way latency in ms (RTT = 2x). */
  readonly oneWayLatencyMs: number;
  /** Per-stream bandwidth in bytes per ms (12_500 = 100 Mbit/s); one entry per stream, or one for all. */
  readonly bandwidthBytesPerMs: number | readonly number[];
  /** Per-frame bytes added to the payload on the wire (header + AEAD tag). */
  readonly frameOverheadBytes?: number;
  /** Random loss modelled as extra delay (e.g. one RTT for the retransmission). */
  readonly loss?: { readonly probability: number; readonly extraDelayMs: number; readonly seed: number };
}

export interface SimOptions {
  readonly link: SimLink;
  readonly maxInFlightChunks: number;
  readonly maxInFlightBytes?: number;
  readonly steal: boolean;
  /** Time the receiver spends writing + verifying a chunk before acking it, in ms. */
  readonly receiverProcessingMs?: number;
  /** Per-stream stall timeout given to each SendWindow (default 60 s). */
  readonly stallTimeoutMs?: number;
  /** A hung receiver: after this many frames in total it keeps reading but never acks again. */
  readonly receiverHangsAfterFrames?: number;
}

export interface SimResult {
  /** Virtual time when the sender saw the last ack, in ms. */
  readonly makespanMs: number;
  /** Times each chunk key was handed to a stream / received / acknowledged. */
  readonly sends: ReadonlyMap<string, number>;
  readonly receives: ReadonlyMap<string, number>;
  readonly acks: ReadonlyMap<string, number>;
  /** Highest in-flight count seen per stream (must stay <= W). */
  readonly peakInFlight: readonly number[];
  /** Per stream: payload bytes sent and the time its last ack arrived. */
  readonly streamBytes: readonly number[];
  readonly streamFinishMs: readonly number[];
  /** Per stream: when its last ack arrived (0 if none). */
  readonly lastAckMs: readonly number[];
  readonly stolenUnits: number;
  readonly filesPublished: number;
  readonly rtt: readonly RttStats[];
  readonly events: number;
  /** Every SendWindow reached `done` and the receiver published every file. */
  readonly allDone: boolean;
  /** Streams whose window reported a stall, with the virtual time of the report. */
  readonly stalls: readonly { readonly stream: number; readonly atMs: number; readonly error: Error }[];
}

type SimEvent =
  | {
      readonly kind: 'deliver';
      readonly at: number;
      readonly order: number;
      readonly stream: number;
      readonly seq: number;
      readonly chunk: number;
    }
  | {
      readonly kind: 'ack';
      readonly at: number;
      readonly order: number;
      readonly stream: number;
      readonly ackedThrough: number;
    }
  /** The one timer per stream the driver keeps armed at the window's `pollTimeout()`. */
  | { readonly kind: 'timer'; readonly at: number; readonly order: number; readonly stream: number };

/** Binary min-heap on (at, order). */
class EventQueue {
  readonly #heap: SimEvent[] = [];
  #order = 0;

  get size(): number {
    return this.#heap.length;
  }

  nextOrder(): number {
    return this.#order++;
  }

  push(e: SimEvent): void {
    const h = this.#heap;
    h.push(e);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!less(h[i]!, h[parent]!)) break;
      [h[i], h[parent]] = [h[parent]!, h[i]!];
      i = parent;
    }
  }

  pop(): SimEvent | undefined {
    const h = this.#heap;
    const top = h[0];
    const last = h.pop();
    if (h.length > 0 && last !== undefined) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && less(h[l]!, h[m]!)) m = l;
        if (r < h.length && less(h[r]!, h[m]!)) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m]!, h[i]!];
        i = m;
      }
    }
    return top;
  }
}

function less(a: SimEvent, b: SimEvent): boolean {
  return a.at < b.at || (a.at === b.at && a.order < b.order);
}

/** mulberry32, seeded: a failing run can be replayed from its seed (the in-memory transport's PRNG). */
import { seededRandom as prng } from '../../src/transport/memory.js';
export { prng };

/** A distinct, deterministic 32-byte chunk id for `n`. */
export function fakeChunkId(n: number): ChunkId {
  const id = new Uint8Array(32);
  const view = new DataView(id.buffer);
  view.setUint32(0, 0xc1a9bee5);
  view.setFloat64(8, n);
  return id;
}

/** Manifests with fresh distinct chunks: `files[i]` is the list of chunk lengths of file i. */
export function makeManifests(files: readonly (readonly number[])[]): FileManifest[] {
  let next = 0;
  return files.map((lengths, i) => ({
    path: `f${i}`,
    size: lengths.reduce((a, b) => a + b, 0),
    mode: 0o644,
    mtimeMs: 0,
    chunks: lengths.map((length) => ({ id: fakeChunkId(next++), length })),
  }));
}

/** The naive baseline: unit i goes to stream i mod N, in input order. */
export function roundRobin<J extends { readonly costBytes: number }>(
  jobs: readonly J[],
  streamCount: number,
): LptAssignment<J> {
  const streams: J[][] = Array.from({ length: streamCount }, () => []);
  jobs.forEach((job, i) => streams[i % streamCount]!.push(job));
  const loadsBytes = streams.map((q) => q.reduce((s, j) => s + j.costBytes, 0));
  return { streams, loadsBytes, makespanBytes: Math.max(...loadsBytes) };
}

/**
 * Runs one transfer to completion. `files`/`lacking` describe the transfer (the receiver's
 * ReceiveTracker is built from them), `plan` is planTransfer's result for the same input and
 * `assignment` the units per stream. Throws whatever the state machines throw.
 */
export function simulate(
  files: readonly FileManifest[],
  lacking: readonly ChunkId[],
  plan: TransferPlan,
  assignment: LptAssignment<WorkUnit>,
  options: SimOptions,
): SimResult {
  const n = assignment.streams.length;
  const { link } = options;
  const bandwidth = (s: number): number =>
    typeof link.bandwidthBytesPerMs === 'number' ? link.bandwidthBytesPerMs : (link.bandwidthBytesPerMs[s] ?? NaN);
  const overhead = link.frameOverheadBytes ?? 0;
  const random = prng(link.loss?.seed ?? 1);
  const processingMs = options.receiverProcessingMs ?? 0;

  const queue = new WorkQueue(assignment, { steal: options.steal });
  const windows = Array.from(
    { length: n },
    () =>
      new SendWindow({
        maxInFlightChunks: options.maxInFlightChunks,
        ...(options.maxInFlightBytes === undefined ? {} : { maxInFlightBytes: options.maxInFlightBytes }),
        stallTimeoutMs: options.stallTimeoutMs ?? 60_000,
      }),
  );
  const armedAt: (number | undefined)[] = new Array<number | undefined>(n).fill(undefined);
  const stalls: { stream: number; atMs: number; error: Error }[] = [];
  let framesReceived = 0;
  const cursor: { next: number; end: number }[] = Array.from({ length: n }, () => ({ next: 0, end: 0 }));
  const linkFreeAt = new Array<number>(n).fill(0);
  const lastArrival = new Array<number>(n).fill(0);
  const peakInFlight = new Array<number>(n).fill(0);
  const streamBytes = new Array<number>(n).fill(0);
  const streamFinishMs = new Array<number>(n).fill(0);
  const lastAckMs = new Array<number>(n).fill(0);

  const tracker = new ReceiveTracker(files, lacking);
  const ackTrackers = Array.from({ length: n }, () => new StreamAckTracker(options.maxInFlightChunks));
  // The receiver already holds the non-lacking chunks: fill them up front.
  for (const local of [...tracker.localChunks()]) tracker.onWritten(local.id);

  const sends = new Map<string, number>();
  const receives = new Map<string, number>();
  const acks = new Map<string, number>();
  const bump = (m: Map<string, number>, k: string): void => void m.set(k, (m.get(k) ?? 0) + 1);
  let stolenUnits = 0;
  let filesPublished = 0;
  let makespanMs = 0;
  let events = 0;
  const q = new EventQueue();

  // After every send or ack, re-arm the stream's timer if the window wants a different one.
  const arm = (s: number): void => {
    const deadline = windows[s]!.pollTimeout();
    if (deadline !== undefined && deadline !== armedAt[s])
      q.push({ kind: 'timer', at: deadline, order: q.nextOrder(), stream: s });
    armedAt[s] = deadline;
  };

  const publishCompleted = (): void => {
    for (let f = tracker.pollComplete(); f !== undefined; f = tracker.pollComplete()) {
      tracker.markPublished(f);
      filesPublished++;
    }
  };

  // After every receive, try to send: fill the window from the current unit, then the next.
  const pump = (s: number, now: number): void => {
    const w = windows[s]!;
    const c = cursor[s]!;
    while (w.state.kind === 'open') {
      if (c.next >= c.end) {
        const work = queue.next(s);
        if (work.kind === 'empty') {
          w.finish();
          break;
        }
        if (work.kind === 'stolen') stolenUnits++;
        c.next = work.job.first;
        c.end = work.job.end;
        continue;
      }
      const chunk = plan.chunks[c.next]!;
      if (!w.canSend(chunk.length)) break;
      w.onSent(w.nextSeq, chunk.id, chunk.length, now);
      peakInFlight[s] = Math.max(peakInFlight[s]!, w.inFlightChunks);
      streamBytes[s]! += chunk.length;
      bump(sends, chunk.key);
      const txStart = Math.max(now, linkFreeAt[s]!);
      const txEnd = txStart + (chunk.length + overhead) / bandwidth(s);
      linkFreeAt[s] = txEnd;
      let arrive = txEnd + link.oneWayLatencyMs;
      if (link.loss !== undefined && random() < link.loss.probability) arrive += link.loss.extraDelayMs;
      arrive = Math.max(arrive, lastArrival[s]!); // ordered stream: head-of-line blocking
      lastArrival[s] = arrive;
      q.push({ kind: 'deliver', at: arrive, order: q.nextOrder(), stream: s, seq: w.nextSeq - 1, chunk: c.next });
      c.next++;
    }
    if (w.state.kind === 'done') streamFinishMs[s] = Math.max(streamFinishMs[s]!, now);
    arm(s);
  };

  for (let s = 0; s < n; s++) pump(s, 0);
  publishCompleted();

  for (let e = q.pop(); e !== undefined; e = q.pop()) {
    events++;
    switch (e.kind) {
      case 'deliver': {
        const chunk = plan.chunks[e.chunk]!;
        ackTrackers[e.stream]!.onFrame(e.seq);
        tracker.onFrame(chunk.id, chunk.length);
        bump(receives, chunk.key);
        tracker.onWritten(chunk.id);
        publishCompleted();
        const ack = ackTrackers[e.stream]!.onVerified(e.seq);
        framesReceived++;
        const hung =
          options.receiverHangsAfterFrames !== undefined && framesReceived > options.receiverHangsAfterFrames;
        if (ack !== undefined && !hung) {
          q.push({
            kind: 'ack',
            at: e.at + processingMs + link.oneWayLatencyMs,
            order: q.nextOrder(),
            stream: e.stream,
            ackedThrough: ack,
          });
        }
        break;
      }
      case 'ack': {
        const result = windows[e.stream]!.onAck(e.ackedThrough, e.at);
        for (const a of result.acked) bump(acks, a.key);
        makespanMs = Math.max(makespanMs, e.at);
        lastAckMs[e.stream] = e.at;
        pump(e.stream, e.at);
        break;
      }
      case 'timer': {
        if (armedAt[e.stream] !== e.at) break; // superseded by a later deadline
        armedAt[e.stream] = undefined;
        const action = windows[e.stream]!.handleTimeout(e.at);
        if (action.kind === 'stalled') stalls.push({ stream: e.stream, atMs: e.at, error: action.error });
        else arm(e.stream);
        break;
      }
      default: {
        const never: never = e;
        throw new Error(`unknown event ${JSON.stringify(never)}`);
      }
    }
  }

  return {
    makespanMs,
    sends,
    receives,
    acks,
    peakInFlight,
    streamBytes,
    streamFinishMs,
    lastAckMs,
    stolenUnits,
    filesPublished,
    rtt: windows.map((w) => w.rtt),
    events,
    allDone: windows.every((w) => w.state.kind === 'done') && tracker.isDone,
    stalls,
  };
}
