// Bench workloads on disk: fresh random (incompressible) bytes in a temp directory, laid out as
// the parts one run pushes, one part per connection.
//
// Goals: content that no receiver can already hold (clawpeer dedups by chunk against the whole
// destination share, so every run gets new random bytes, or it would measure a no-op); a layout
// that stripes honestly over N connections (the large file as N byte-range part files, the small
// files dealt round-robin into N directories, each pushed on its own connection); bounded memory
// while writing (1 MiB blocks for big files, 32 MiB batches of small files, a bounded number of
// writes in flight). One generator per workload kind behind one switch: a "sync with D changed files"
// workload plugs in there once sync exists.
// Non-goals: compressible or structured data (throughput is measured on incompressible bytes),
// cleaning up the receiver's copy (runner.ts).
import { randomFill } from 'node:crypto';
import { mkdir, open, rm, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ClawpeerError } from '../errors.js';
import type { WorkloadKind, WorkloadSpec } from './bench-plan.js';

/** Fills `buf` with random bytes on the thread pool; resolves with the same buffer. */
function randomFillAsync(buf: Buffer): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    randomFill(buf, (err, filled) => (err === null ? resolve(filled) : reject(err))),
  );
}

/** Block written at a time for big files, bytes. */
const WRITE_BLOCK_BYTES = 1 << 20;
/** Random bytes drawn at once for small files, bytes: bounds memory for 1M-file workloads. */
const SMALL_BATCH_BYTES = 32 << 20;
/** Small-file writes in flight at once (more only queues in libuv's 4-thread pool). */
const SMALL_WRITES_IN_FLIGHT = 32;

/** What one connection pushes: a file or a directory. */
export interface WorkloadPart {
  readonly localPath: string;
  readonly bytes: number;
  readonly files: number;
}

export interface PreparedWorkload {
  readonly kind: WorkloadKind;
  readonly root: string;
  readonly parts: readonly WorkloadPart[];
  readonly bytes: number;
  readonly files: number;
  /** revisions-seq only: writes fresh random content for revision `i` into the page file (parts[0]). */
  readonly writeRevision?: (i: number) => Promise<void>;
  /** sync only: rewrites the files the second sync is to find changed (fresh random bytes). */
  readonly changeFiles?: () => Promise<void>;
}

export interface PrepareOptions {
  /** Parts to lay out (>= 1): one per connection the run stripes over. */
  readonly connections: number;
  readonly signal?: AbortSignal;
}

type Generator<K extends WorkloadKind> = (
  w: Extract<WorkloadSpec, { kind: K }>,
  root: string,
  o: PrepareOptions,
) => Promise<PreparedWorkload>;

function checkAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted === true) throw new ClawpeerError('ABORTED', 'bench aborted while writing its workload');
}

/** Writes `bytes` fresh random bytes to `file` in 1 MiB blocks. */
async function writeRandomFile(file: string, bytes: number, signal: AbortSignal | undefined): Promise<void> {
  const fh = await open(file, 'w');
  try {
    const block = Buffer.allocUnsafe(Math.min(WRITE_BLOCK_BYTES, Math.max(1, bytes)));
    for (let done = 0; done < bytes;) {
      checkAborted(signal);
      const n = Math.min(block.length, bytes - done);
      const view = block.subarray(0, n);
      await randomFillAsync(view);
      await fh.write(view, 0, n);
      done += n;
    }
  } finally {
    await fh.close();
  }
}

/** Splits `total` into `n` near-equal integer parts (the first ones one larger). */
export function splitEvenly(total: number, n: number): number[] {
  const base = Math.floor(total / n);
  const extra = total - base * n;
  return Array.from({ length: n }, (_, i) => base + (i < extra ? 1 : 0));
}

const padded = (i: number, width: number): string => String(i).padStart(width, '0');

const large: Generator<'large'> = async (w, root, o) => {
  const n = Math.min(o.connections, w.bytes);
  const sizes = splitEvenly(w.bytes, n);
  const parts: WorkloadPart[] = [];
  for (const [k, bytes] of sizes.entries()) {
    const file = path.join(root, n === 1 ? 'large.bin' : `large.part-${padded(k + 1, 2)}-of-${padded(n, 2)}.bin`);
    await writeRandomFile(file, bytes, o.signal);
    parts.push({ localPath: file, bytes, files: 1 });
  }
  return { kind: 'large', root, parts, bytes: w.bytes, files: n };
};

/** Writes `count` files of `fileBytes` named by `nameOf`, from shared random batches. */
async function writeSmallFiles(
  count: number,
  fileBytes: number,
  nameOf: (i: number) => string,
  signal: AbortSignal | undefined,
): Promise<void> {
  const perBatch = Math.max(1, Math.floor(SMALL_BATCH_BYTES / Math.max(1, fileBytes)));
  for (let first = 0; first < count; first += perBatch) {
    checkAborted(signal);
    const inBatch = Math.min(perBatch, count - first);
    const pool = await randomFillAsync(Buffer.allocUnsafe(inBatch * fileBytes));
    for (let j = 0; j < inBatch; j += SMALL_WRITES_IN_FLIGHT) {
      const writes: Promise<void>[] = [];
      for (let k = j; k < Math.min(inBatch, j + SMALL_WRITES_IN_FLIGHT); k++) {
        writes.push(writeFile(nameOf(first + k), pool.subarray(k * fileBytes, (k + 1) * fileBytes)));
      }
      await Promise.all(writes);
    }
  }
}

const small: Generator<'small'> = async (w, root, o) => {
  const n = Math.min(o.connections, w.files);
  const dirs = Array.from({ length: n }, (_, k) =>
    path.join(root, n === 1 ? 'small' : `small-${padded(k + 1, 2)}-of-${padded(n, 2)}`),
  );
  for (const d of dirs) await mkdir(d, { recursive: true });
  const width = String(w.files).length;
  // Round-robin: file i goes to part i mod n, so parts differ by at most one file.
  await writeSmallFiles(
    w.files,
    w.fileBytes,
    (i) => path.join(dirs[i % n] ?? root, `f${padded(i, width)}.bin`),
    o.signal,
  );
  const counts = splitEvenly(w.files, n);
  const parts = dirs.map((d, k) => ({ localPath: d, files: counts[k] ?? 0, bytes: (counts[k] ?? 0) * w.fileBytes }));
  return { kind: 'small', root, parts, bytes: w.files * w.fileBytes, files: w.files };
};

const revisions: Generator<'revisions'> = async (w, root, o) => {
  if (o.connections !== 1)
    throw new ClawpeerError('USAGE', 'the revisions workload is one page: it is not striped over connections');
  const dir = path.join(root, 'revisions');
  await mkdir(dir);
  const width = String(w.revisions).length;
  await writeSmallFiles(w.revisions, w.pageBytes, (i) => path.join(dir, `page.r${padded(i + 1, width)}`), o.signal);
  return {
    kind: 'revisions',
    root,
    parts: [{ localPath: dir, bytes: w.revisions * w.pageBytes, files: w.revisions }],
    bytes: w.revisions * w.pageBytes,
    files: w.revisions,
  };
};

const revisionsSeq: Generator<'revisions-seq'> = async (w, root, o) => {
  if (o.connections !== 1)
    throw new ClawpeerError('USAGE', 'the revisions-seq workload is sequential: it is not striped over connections');
  const page = path.join(root, 'page.bin');
  const writeRevision = async (i: number): Promise<void> => {
    if (!Number.isInteger(i) || i < 0 || i >= w.revisions)
      throw new RangeError(`revision ${i} outside 0..${w.revisions - 1}`);
    await writeRandomFile(page, w.pageBytes, o.signal);
  };
  await writeRevision(0);
  return {
    kind: 'revisions-seq',
    root,
    parts: [{ localPath: page, bytes: w.pageBytes, files: 1 }],
    bytes: w.revisions * w.pageBytes,
    files: w.revisions,
    writeRevision,
  };
};

/** Files this old count as settled: a sync certifies them warm, so the timed scan reads metadata only. */
const SETTLED_AGE_MS = 3_600_000;

const sync: Generator<'sync'> = async (w, root, o) => {
  if (o.connections !== 1)
    throw new ClawpeerError('USAGE', 'the sync workload is one folder: it is not striped over connections');
  const dir = path.join(root, 'folder');
  await mkdir(dir);
  const width = String(w.folderFiles).length;
  const nameOf = (i: number): string => path.join(dir, `f${padded(i, width)}.bin`);
  await writeSmallFiles(w.folderFiles, w.fileBytes, nameOf, o.signal);
  const settled = new Date(Date.now() - SETTLED_AGE_MS);
  for (let i = 0; i < w.folderFiles; i++) await utimes(nameOf(i), settled, settled);
  const changeFiles = (): Promise<void> => writeSmallFiles(w.changed, w.fileBytes, nameOf, o.signal);
  return {
    kind: 'sync',
    root,
    parts: [{ localPath: dir, bytes: w.folderFiles * w.fileBytes, files: w.folderFiles }],
    bytes: w.changed * w.fileBytes,
    files: w.changed,
    changeFiles,
  };
};

/** One generator per kind. */
function generate(w: WorkloadSpec, root: string, o: PrepareOptions): Promise<PreparedWorkload> {
  switch (w.kind) {
    case 'large':
      return large(w, root, o);
    case 'small':
      return small(w, root, o);
    case 'revisions':
      return revisions(w, root, o);
    case 'revisions-seq':
      return revisionsSeq(w, root, o);
    case 'sync':
      return sync(w, root, o);
    default: {
      const never: never = w;
      throw new TypeError(`unhandled workload ${JSON.stringify(never)}`);
    }
  }
}

/** Writes the workload into `root` (created; must not exist or be empty). */
export async function prepareWorkload(
  w: WorkloadSpec,
  root: string,
  options: PrepareOptions,
): Promise<PreparedWorkload> {
  if (!Number.isInteger(options.connections) || options.connections < 1)
    throw new RangeError(`connections must be a positive integer, got ${options.connections}`);
  await mkdir(root, { recursive: true });
  try {
    return await generate(w, root, options);
  } catch (err) {
    await rm(root, { recursive: true, force: true });
    if (err instanceof ClawpeerError) throw err;
    throw new ClawpeerError('IO', `cannot write the bench workload under ${root}: ${(err as Error).message}`, {
      cause: err,
    });
  }
}
