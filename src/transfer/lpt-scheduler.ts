// Spreading the plan's chunks over N streams.
//
// Goals: (1) cut the plan into work units, one per file, large files into ranges of at most
// `maxUnitBytes`, so one big file still spreads over several streams; (2) assign the units by
// LPT (longest processing time first onto the least-loaded stream), which is within 4/3 - 1/(3N)
// of the optimal makespan on identical streams; (3) at run time, let a stream that ran dry take
// the largest unstarted unit of the stream with the most unstarted bytes (work stealing), which
// repairs the static plan when streams turn out to run at different speeds.
// Deterministic: ties between equal costs keep input order (file order, then range order);
// ties between equally loaded streams go to the lowest stream index.
// Non-goals: measuring stream speed (the driver only reports "stream s is idle"), splitting a
// unit after it started (units are the unit of resume bookkeeping), I/O. Nothing here is
// peer-controlled, so invalid arguments are caller bugs (RangeError), not ClawpeerErrors.
//
// Cost model: a unit costs its payload bytes plus `perUnitOverheadBytes`, the byte-equivalent of
// the per-unit fixed cost (open, create temp file, fsync, rename: a round trip of metadata), so
// that 10,000 tiny files are not treated as free.
import type { TransferPlan } from './plan.js';

/** Anything with a cost can be scheduled. */
export interface Job {
  /** Estimated work in bytes (payload plus the per-unit overhead). */
  readonly costBytes: number;
}

/** A contiguous range of the plan's unique chunks, all from one file: `plan.chunks[first .. end)`. */
export interface WorkUnit extends Job {
  readonly fileIndex: number;
  readonly first: number;
  readonly end: number;
  /** Payload bytes in the range (costBytes minus the overhead). */
  readonly bytes: number;
}

export interface SplitOptions {
  /** A file larger than this is cut into ranges of at most this many bytes (a single chunk larger than this stays whole). */
  readonly maxUnitBytes: number;
  /** Byte-equivalent of one unit's fixed cost; 0 for pure byte balancing. */
  readonly perUnitOverheadBytes?: number;
}

/** 16 MiB: big enough that per-unit overhead vanishes, small enough that a 1 GiB file spreads over 64 units. */
export const DEFAULT_MAX_UNIT_BYTES = 16 << 20;
/** 64 KiB: roughly one fsync + rename on an SSD, at link speeds of ~100 MiB/s. */
export const DEFAULT_PER_UNIT_OVERHEAD_BYTES = 64 << 10;

/** Cuts each file's send range into units of at most `maxUnitBytes` (greedy, in chunk order). */
export function splitIntoUnits(plan: TransferPlan, options: SplitOptions): WorkUnit[] {
  const { maxUnitBytes } = options;
  const overhead = options.perUnitOverheadBytes ?? 0;
  if (!(maxUnitBytes > 0)) throw new RangeError(`maxUnitBytes must be > 0, got ${maxUnitBytes}`);
  if (!(overhead >= 0)) throw new RangeError(`perUnitOverheadBytes must be >= 0, got ${overhead}`);
  const units: WorkUnit[] = [];
  for (const file of plan.files) {
    let first = file.sendFirst;
    let bytes = 0;
    for (let i = file.sendFirst; i < file.sendEnd; i++) {
      const length = plan.chunks[i]?.length ?? 0;
      if (i > first && bytes + length > maxUnitBytes) {
        units.push({ fileIndex: file.fileIndex, first, end: i, bytes, costBytes: bytes + overhead });
        first = i;
        bytes = 0;
      }
      bytes += length;
    }
    if (file.sendEnd > first) {
      units.push({ fileIndex: file.fileIndex, first, end: file.sendEnd, bytes, costBytes: bytes + overhead });
    }
  }
  return units;
}

export interface LptAssignment<J extends Job> {
  /** Per stream, its jobs in the order it should run them (largest first). */
  readonly streams: readonly (readonly J[])[];
  /** Per stream, the sum of its jobs' costs. */
  readonly loadsBytes: readonly number[];
  /** The largest load: the schedule's length if all streams run at the same speed. */
  readonly makespanBytes: number;
}

/** Most streams one transfer may use; also keeps the O(jobs x streams) assignment cheap. */
export const MAX_STREAMS = 256;

function checkStreamCount(streamCount: number): void {
  if (!Number.isInteger(streamCount) || streamCount < 1 || streamCount > MAX_STREAMS) {
    throw new RangeError(`streamCount must be an integer in 1..${MAX_STREAMS}, got ${streamCount}`);
  }
}

/**
 * LPT: sort jobs by cost, largest first (stable: equal costs keep input order), and give each
 * to the stream with the smallest load so far (ties: lowest index). O(J log J + J * N).
 */
export function scheduleLpt<J extends Job>(jobs: readonly J[], streamCount: number): LptAssignment<J> {
  checkStreamCount(streamCount);
  for (const job of jobs) {
    if (!Number.isFinite(job.costBytes) || job.costBytes < 0)
      throw new RangeError(`job cost must be finite and >= 0, got ${job.costBytes}`);
  }
  const order = jobs.map((job, index) => ({ job, index }));
  order.sort((a, b) => b.job.costBytes - a.job.costBytes || a.index - b.index);
  const streams: J[][] = Array.from({ length: streamCount }, () => []);
  const loads: number[] = new Array<number>(streamCount).fill(0);
  for (const { job } of order) {
    let best = 0;
    for (let s = 1; s < streamCount; s++) if ((loads[s] ?? 0) < (loads[best] ?? 0)) best = s;
    streams[best]?.push(job);
    loads[best] = (loads[best] ?? 0) + job.costBytes;
  }
  return { streams, loadsBytes: loads, makespanBytes: Math.max(...loads) };
}

/** What a stream should do next. */
export type NextWork<J> =
  | { readonly kind: 'own'; readonly job: J }
  /** Taken from another stream's unstarted queue (work stealing). */
  | { readonly kind: 'stolen'; readonly job: J; readonly from: number }
  /** Nothing left that has not started: the stream can finish. */
  | { readonly kind: 'empty' };

/**
 * The run-time side of the schedule: each stream pulls its next unit; with `steal` on, a stream
 * whose own queue is empty takes the largest unstarted unit of the stream with the most
 * unstarted bytes (ties: lowest index). A unit is handed out exactly once, either way.
 * Memory: the job arrays given at construction, plus O(streams).
 */
export class WorkQueue<J extends Job> {
  readonly #queues: (readonly J[])[];
  readonly #heads: number[];
  readonly #unstartedBytes: number[];
  readonly #steal: boolean;
  #unstarted: number;

  constructor(assignment: LptAssignment<J>, options: { readonly steal: boolean }) {
    checkStreamCount(assignment.streams.length);
    // Each queue is kept sorted by cost, largest first, so the head is both the next unit to run
    // and the largest one to steal; LPT already produces this order.
    this.#queues = assignment.streams.map((q) => [...q].sort((a, b) => b.costBytes - a.costBytes));
    this.#heads = this.#queues.map(() => 0);
    this.#unstartedBytes = this.#queues.map((q) => q.reduce((sum, j) => sum + j.costBytes, 0));
    this.#unstarted = this.#queues.reduce((n, q) => n + q.length, 0);
    this.#steal = options.steal;
  }

  get streamCount(): number {
    return this.#queues.length;
  }

  /**
   * A stream that starts later (a connection joined the session mid-transfer): it has no units
   * of its own and takes work by stealing. Returns its index.
   */
  addStream(): number {
    this.#queues.push([]);
    this.#heads.push(0);
    this.#unstartedBytes.push(0);
    return this.#queues.length - 1;
  }

  /** Units not yet handed to any stream. */
  get unstartedCount(): number {
    return this.#unstarted;
  }

  /** Cost of the units still queued for `stream` (not counting the one it is running). */
  unstartedBytes(stream: number): number {
    this.#checkStream(stream);
    return this.#unstartedBytes[stream] ?? 0;
  }

  /** Called by stream `stream` when it is ready for another unit. */
  next(stream: number): NextWork<J> {
    this.#checkStream(stream);
    const own = this.#take(stream);
    if (own !== undefined) return { kind: 'own', job: own };
    if (!this.#steal) return { kind: 'empty' };
    let victim = -1;
    let most = 0;
    for (let s = 0; s < this.#queues.length; s++) {
      const queued = (this.#queues[s]?.length ?? 0) - (this.#heads[s] ?? 0);
      if (s === stream || queued === 0) continue;
      const bytes = this.#unstartedBytes[s] ?? 0;
      if (victim === -1 || bytes > most) {
        victim = s;
        most = bytes;
      }
    }
    if (victim === -1) return { kind: 'empty' };
    const job = this.#take(victim);
    if (job === undefined) throw new Error('unreachable: victim had queued work');
    return { kind: 'stolen', job, from: victim };
  }

  #take(stream: number): J | undefined {
    const queue = this.#queues[stream];
    const head = this.#heads[stream] ?? 0;
    if (queue === undefined || head >= queue.length) return undefined;
    const job = queue[head];
    if (job === undefined) return undefined;
    this.#heads[stream] = head + 1;
    this.#unstartedBytes[stream] = (this.#unstartedBytes[stream] ?? 0) - job.costBytes;
    this.#unstarted--;
    return job;
  }

  #checkStream(stream: number): void {
    if (!Number.isInteger(stream) || stream < 0 || stream >= this.#queues.length) {
      throw new RangeError(`stream ${stream} out of range 0..${this.#queues.length - 1}`);
    }
  }
}

/** Lower bound on any schedule's makespan: max(largest job, total / N). */
export function makespanLowerBound(jobs: readonly Job[], streamCount: number): number {
  checkStreamCount(streamCount);
  let total = 0;
  let largest = 0;
  for (const job of jobs) {
    total += job.costBytes;
    if (job.costBytes > largest) largest = job.costBytes;
  }
  return Math.max(largest, total / streamCount);
}
