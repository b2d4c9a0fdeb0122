// A large file's manifest from several threads: its segments are chunked and hashed on worker
// threads of this process at once (segments.ts stitches them into the one-pass chunk list).
//
// Why: FastCDC and BLAKE3 of one file in one pass use one core (~1 GiB/s here), and a push, a
// sync scan or a chunk-index refresh of a large file waits for the whole manifest before its
// first chunk travels; the other cores sat idle meanwhile.
// The threads are started on first use and kept for files that follow within IDLE_STOP_MS,
// unreferenced while idle so they never keep the process alive. Fresh threads load the wasm
// chunker and BLAKE3 and run unoptimized code at first, so the first large file gains less: 1 GiB
// at 4K/16K/64K took ~1.0 s in one pass, ~1.0 s on 2 fresh threads and ~0.55 s on warm ones (this
// 2-core machine; at 64K/256K/1M, the session default: 0.71 s, 0.45 s fresh, 0.38 s warm). Each
// task gets the descriptor the caller opened (descriptors are per process), so every segment
// reads the same file even if its path is renamed meanwhile.
// Non-goals: files below PARALLEL_MIN_BYTES (a thread round trip is not worth it), noticing a
// file that changes while read (the callers compare size and mtime, as for one pass).

import { availableParallelism } from 'node:os';
import { parentPort } from 'node:worker_threads';
import type { MessagePort, Worker } from 'node:worker_threads';
import { ClawpeerError } from '../errors.js';
import { selfWorkerOptions, startSelfWorker } from '../support/self-worker.js';
import type { ChunkingParams } from '../chunking/fastcdc.js';
import { ManifestRootBuilder } from '../chunking/manifest.js';
import type { FileManifest } from '../chunking/manifest.js';
import { chunkSegment, segmentRanges, stitchSegments, type ChunkedSegment } from './segments.js';

/** Files at least this large are chunked on several threads (when the machine has 2+ cores). */
export const PARALLEL_MIN_BYTES = 128 << 20;
/** Segments are at least this large: fewer, longer tasks for files just over the threshold. */
const SEGMENT_MIN_BYTES = 64 << 20;
/** Threads at most: each re-reads its overlap and holds a 4 MiB buffer; more was not measured (2 cores here). */
const MAX_THREADS = 4;
/**
 * Threads idle this long are stopped, ms: each holds ~15-20 MB (its isolate and read buffer), and
 * a 4 GiB push peaked at 275-296 MB of RSS with them kept through its send phase against 251 MB
 * without threads. Files hashed back to back (a tree of large files) reuse them.
 */
export const IDLE_STOP_MS = 1_000;
const WORKER_MARKER = 'clawpeer-chunking-worker';
const WORKER_START_TIMEOUT_MS = 10_000;

interface SegmentTask {
  readonly type: 'segment';
  readonly id: number;
  readonly fd: number;
  readonly start: number;
  /** Where the pass stops reading (Infinity: at the end of the file). */
  readonly stop: number;
  readonly params: ChunkingParams;
}

type FromWorker =
  | { readonly type: 'ready' }
  | { readonly type: 'segment'; readonly id: number; readonly segment: ChunkedSegment }
  | { readonly type: 'segment-failed'; readonly id: number; readonly message: string };

/** Starts one chunking thread and resolves once it is ready. */
export type StartThread = () => Promise<Worker>;

const startChunkingThread: StartThread = async () =>
  (await startSelfWorker(import.meta.url, WORKER_MARKER, {}, 'chunking thread', WORKER_START_TIMEOUT_MS)).worker;

/** Lazily started worker threads, shared by every parallel manifest of this process. */
export class ChunkingThreads {
  readonly #startThread: StartThread;
  #threads: Promise<Worker[]> | undefined;
  /** The workers of #threads as they start: a death of one of these (not of an older set) counts. */
  #current = new Set<Worker>();
  #nextId = 0;
  readonly #pending = new Map<number, { resolve: (s: ChunkedSegment) => void; reject: (err: Error) => void }>();
  /** Segments running; at zero the idle timer starts. */
  #running = 0;
  #idleTimer: NodeJS.Timeout | undefined;

  constructor(startThread: StartThread = startChunkingThread) {
    this.#startThread = startThread;
  }

  /** The threads, started on first call; rejects if they cannot start (callers fall back to one pass). */
  threads(count: number): Promise<Worker[]> {
    clearTimeout(this.#idleTimer);
    this.#threads ??= Promise.all(Array.from({ length: count }, () => this.#start())).catch((err: unknown) => {
      this.#lost(err as Error);
      throw err;
    });
    return this.#threads;
  }

  async #start(): Promise<Worker> {
    const generation = this.#current;
    const worker = await this.#startThread();
    // Another thread of this set failed to start meanwhile and the set was stopped: this one
    // belongs to no set, so nothing would ever stop it.
    if (this.#current !== generation) {
      void worker.terminate();
      throw new Error('chunking threads were stopped while this one started');
    }
    this.#current.add(worker);
    worker.unref();
    worker.on('message', (msg: FromWorker) => {
      if (msg.type === 'ready') return;
      const waiter = this.#pending.get(msg.id);
      this.#pending.delete(msg.id);
      if (msg.type === 'segment') waiter?.resolve(msg.segment);
      else waiter?.reject(new SegmentReadError(msg.message));
    });
    // A thread that dies fails what is running; the set is stopped and started afresh next time.
    worker.on('error', (err) => this.#current.has(worker) && this.#lost(err));
    worker.on(
      'exit',
      (code) => this.#current.has(worker) && this.#lost(new Error(`chunking thread exited (code ${code})`)),
    );
    return worker;
  }

  #lost(err: Error): void {
    this.#stop();
    for (const waiter of this.#pending.values()) waiter.reject(err);
    this.#pending.clear();
  }

  /** Stops what runs now (its callers see the segments fail): a segment cannot be interrupted otherwise. */
  cancel(): void {
    this.#lost(new Error('chunking cancelled'));
  }

  /** Stops the threads (their exits are not losses: they leave #current first). */
  #stop(): void {
    const workers = [...this.#current];
    this.#current = new Set();
    this.#threads = undefined;
    clearTimeout(this.#idleTimer);
    for (const w of workers) void w.terminate();
  }

  /** Runs one segment on `worker` (referenced meanwhile: the caller is waiting on it). */
  run(worker: Worker, task: Omit<SegmentTask, 'type' | 'id'>): Promise<ChunkedSegment> {
    const id = this.#nextId++;
    worker.ref();
    this.#running++;
    clearTimeout(this.#idleTimer);
    return new Promise<ChunkedSegment>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      worker.postMessage({ type: 'segment', id, ...task } satisfies SegmentTask);
    }).finally(() => {
      worker.unref();
      if (--this.#running > 0) return;
      this.#idleTimer = setTimeout(() => this.#stop(), IDLE_STOP_MS);
      this.#idleTimer.unref();
    });
  }
}

/** A segment's read failed (the file, not the thread). */
class SegmentReadError extends Error {}

const shared = new ChunkingThreads();
/** Parallel manifests run one at a time: each already uses every thread. */
let queue: Promise<unknown> = Promise.resolve();

/** How many threads a file of `size` bytes gets: 0 = chunk it in one pass. */
export function threadsFor(size: number, cores = availableParallelism()): number {
  if (size < PARALLEL_MIN_BYTES || cores < 2) return 0;
  return Math.max(0, Math.min(cores, MAX_THREADS, Math.floor(size / SEGMENT_MIN_BYTES)));
}

/**
 * The manifest of the file open at `fd` (`size` bytes when stat'ed), chunked on worker threads;
 * undefined when it should be chunked in one pass instead: too small, one core, the threads
 * could not start or died, or the segments did not meet (segments.ts). Throws ClawpeerError IO
 * when a read fails and ABORTED on `signal`.
 */
export function parallelManifest(
  fd: number,
  size: number,
  path: string,
  params: ChunkingParams,
  signal?: AbortSignal,
): Promise<FileManifest | undefined> {
  const count = threadsFor(size);
  if (count < 2) return Promise.resolve(undefined);
  const run = queue.then(() => manifestOnThreads(fd, size, path, params, count, signal));
  queue = run.catch(() => undefined);
  return run;
}

function throwIfAborted(signal: AbortSignal | undefined, path: string): void {
  if (signal?.aborted === true)
    throw new ClawpeerError('ABORTED', `chunking ${path} aborted`, { cause: signal.reason });
}

async function manifestOnThreads(
  fd: number,
  size: number,
  path: string,
  params: ChunkingParams,
  count: number,
  signal?: AbortSignal,
): Promise<FileManifest | undefined> {
  throwIfAborted(signal, path);
  let threads: Worker[];
  try {
    threads = await shared.threads(count);
  } catch {
    return undefined;
  }
  const ranges = segmentRanges(size, Math.min(count, threads.length), params);
  // Settled, not raced: the caller closes fd when this returns, so no thread may still read it.
  // On abort the threads are stopped (runs are queued: they are this file's alone), so the work
  // of a session that ended does not go on for the rest of a large file.
  const cancel = (): void => shared.cancel();
  signal?.addEventListener('abort', cancel, { once: true });
  let settled: PromiseSettledResult<ChunkedSegment>[];
  try {
    settled = await Promise.allSettled(
      ranges.map((r, i) => shared.run(threads[i] as Worker, { fd, start: r.start, stop: r.stop, params })),
    );
  } finally {
    signal?.removeEventListener('abort', cancel);
  }
  throwIfAborted(signal, path);
  const segments: ChunkedSegment[] = [];
  for (const s of settled) {
    if (s.status === 'fulfilled') {
      segments.push(s.value);
      continue;
    }
    if (s.reason instanceof SegmentReadError)
      throw new ClawpeerError('IO', `cannot read ${path}: ${s.reason.message}`, { cause: s.reason });
    return undefined; // a thread died: one pass instead
  }
  throwIfAborted(signal, path);
  const chunks = stitchSegments(segments);
  if (chunks === undefined) return undefined;
  const root = new ManifestRootBuilder();
  for (const c of chunks) root.add(c.id, c.length);
  const last = chunks[chunks.length - 1];
  return { size: last === undefined ? 0 : last.offset + last.length, chunks, root: root.finish() };
}

/** Worker side: chunks the segments it is sent, one at a time. */
function serve(port: MessagePort): void {
  port.on('message', (task: SegmentTask) => {
    let segment: ChunkedSegment;
    try {
      segment = chunkSegment(task.fd, task.start, task.stop, task.params);
    } catch (err) {
      port.postMessage({ type: 'segment-failed', id: task.id, message: (err as Error).message } satisfies FromWorker);
      return;
    }
    port.postMessage({ type: 'segment', id: task.id, segment } satisfies FromWorker, [
      segment.ids.buffer as ArrayBuffer,
    ]);
  });
  port.postMessage({ type: 'ready' } satisfies FromWorker);
}

if (selfWorkerOptions<object>(WORKER_MARKER) !== undefined && parentPort !== null) serve(parentPort);
