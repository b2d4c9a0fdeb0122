// Benchmark for chunking/: FastCDC throughput, BLAKE3 backends against SHA-256, the full
// chunk+hash pipeline, and dedup on real content to choose DEFAULT_CHUNKING.
//
// Throughput is measured on incompressible data (crypto.randomBytes); the baseline is node:crypto
// SHA-256 over the same bytes in the same run, reported as a ratio. Dedup is measured on real
// files (this repo's node_modules: JS/TS text, JSON, maps, native binaries, wasm):
//  - "edits": a tar-like stream of the files (a text header then the bytes of each file, sorted
//    paths) and the same stream with N small random edits (insert/delete/overwrite 1-64 bytes);
//  - "versions": two installed versions of the same package (e.g. glob 13 and 14), each file
//    chunked on its own, as clawpeer chunks files.
// For each setting: the fraction of the new version's bytes found in chunks of the old one, and
// what a sync would send = missing chunk bytes + the new manifest (36 bytes per chunk).
// Run: node .build-x/bench/chunking.js  (writes bench/results/chunking.json); main({ smoke: true })
// runs tiny sizes and writes nothing.

import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { arch, cpus, loadavg, platform, tmpdir, totalmem } from 'node:os';
import { join, relative } from 'node:path';
import { chunkBoundaries, DEFAULT_CHUNKING } from '../src/chunking/fastcdc.js';
import type { ChunkingParams, NormalizationLevel } from '../src/chunking/fastcdc.js';
import { activeBlake3Backend, blake3, blake3Implementation, toHex } from '../src/chunking/blake3.js';
import { MANIFEST_ENTRY_BYTES, manifestFromBytes } from '../src/chunking/manifest.js';
import { chunkFile, manifestFromFile } from '../src/file-chunking/file-chunker.js';
import { threadsFor } from '../src/file-chunking/parallel-manifest.js';
import { runAsScript, KiB, median, MiB, REPO_ROOT, writeJsonFile, writeResult } from './common.js';

export interface ChunkingBenchOptions {
  /** Tiny sizes for CI: checks the benchmark runs, measures nothing meaningful, writes nothing. */
  readonly smoke?: boolean;
  /** Where to write the JSON (default bench/results/chunking.json when not smoke). */
  readonly outFile?: string;
  /** Directory of real files for the dedup runs (default: this repo's node_modules). */
  readonly corpusDir?: string;
  /** Print progress to stderr. */
  readonly verbose?: boolean;
}

const sizesLabel = (p: ChunkingParams): string =>
  `${p.minBytes / KiB}K/${p.avgBytes / KiB}K/${p.maxBytes / KiB}K n${p.normalization}`;

function params(avgKiB: number, normalization: NormalizationLevel = 1): ChunkingParams {
  const avgBytes = avgKiB * KiB;
  return { minBytes: avgBytes / 4, avgBytes, maxBytes: avgBytes * 4, normalization };
}

interface Rate {
  /** Median of the runs by wall clock, MiB/s. */
  wallMiBps: number;
  /** Best run by wall clock, MiB/s: on a shared machine, the least disturbed one. */
  wallBestMiBps: number;
  /**
   * Median of the runs per CPU-second of this process (all its threads), MiB/s. Robust to other
   * processes sharing the cores, so ratios are taken on this figure.
   */
  cpuMiBps: number;
}

/**
 * MiB/s of `runs` timed calls of each fn over `bytes` bytes, after one untimed call each (JIT
 * warm-up). Runs are interleaved (run 1 of every fn, then run 2, ...) so that load from other
 * processes on a shared machine falls on all of them alike, not on whichever ran during a burst.
 */
function measureInterleaved(bytes: number, runs: number, fns: readonly (() => void)[]): Rate[] {
  const wall = fns.map((): number[] => []);
  const cpu = fns.map((): number[] => []);
  if (runs > 1) for (const fn of fns) fn();
  for (let r = 0; r < runs; r++) {
    fns.forEach((fn, i) => {
      const c0 = process.cpuUsage();
      const t0 = process.hrtime.bigint();
      fn();
      const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
      const c = process.cpuUsage(c0);
      wall[i]!.push(bytes / MiB / seconds);
      cpu[i]!.push(bytes / MiB / ((c.user + c.system) / 1e6));
    });
  }
  return fns.map((_, i) => ({
    wallMiBps: round1(median(wall[i]!)),
    wallBestMiBps: round1(Math.max(...wall[i]!)),
    cpuMiBps: round1(median(cpu[i]!)),
  }));
}

const round1 = (x: number): number => Math.round(x * 10) / 10;
const round2 = (x: number | undefined): number => Math.round((x ?? 0) * 100) / 100;
const ratio = (x: number, base: number): number => Math.round((x / base) * 100) / 100;

function hashPieces(data: Uint8Array, pieceBytes: number, hash: (b: Uint8Array) => unknown): void {
  for (let at = 0; at < data.length; at += pieceBytes) hash(data.subarray(at, Math.min(data.length, at + pieceBytes)));
}

const sha256 = (b: Uint8Array): Buffer => createHash('sha256').update(b).digest();

// --- throughput ---------------------------------------------------------------------------------

function throughput(dataBytes: number, runs: number, log: (s: string) => void) {
  const data = new Uint8Array(randomBytes(dataBytes));
  const cdcSettings: ChunkingParams[] = [
    { minBytes: 2 * KiB, avgBytes: 8 * KiB, maxBytes: 32 * KiB, normalization: 2 },
    params(16, 1),
    params(16, 2),
    params(64, 1),
    params(64, 2),
    params(256, 2),
  ];
  // Chunk + BLAKE3 per chunk + manifest root: shows the per-chunk cost of smaller chunks.
  const pipelineSettings: ChunkingParams[] = [params(8, 2), params(16, 2), params(64, 2)];
  const pieceSizes = [4 * KiB, 16 * KiB, 64 * KiB, MiB];
  const native = blake3Implementation('native');
  const wasm = blake3Implementation('wasm');
  const noop = (): void => {};

  const chunkCounts = new Map<ChunkingParams, number>();
  const fns: (() => void)[] = [
    () => hashPieces(data, MiB, sha256), // [0] the baseline
    ...cdcSettings.map((p) => () => {
      chunkCounts.set(p, chunkBoundaries(data, p).length);
    }),
    ...pipelineSettings.map((p) => () => {
      manifestFromBytes(data, p);
    }),
    ...pieceSizes.flatMap((pieceBytes) => [
      () => hashPieces(data, pieceBytes, sha256),
      native === undefined ? noop : () => hashPieces(data, pieceBytes, (b) => native.hash(b)),
      wasm === undefined ? noop : () => hashPieces(data, pieceBytes, (b) => wasm.hash(b)),
    ]),
  ];
  const rates = measureInterleaved(dataBytes, runs, fns);
  let next = 0;
  const take = (): Rate => rates[next++]!;

  const baseline = take();
  log(`sha256 baseline ${baseline.cpuMiBps} (wall ${baseline.wallMiBps}) MiB/s`);
  const fastcdc = cdcSettings.map((p) => {
    const rate = take();
    const count = chunkCounts.get(p) ?? 0;
    log(`fastcdc ${sizesLabel(p)} ${rate.cpuMiBps} (wall ${rate.wallMiBps}) MiB/s`);
    return {
      params: p,
      label: sizesLabel(p),
      ...rate,
      ratioToSha256: ratio(rate.cpuMiBps, baseline.cpuMiBps),
      chunkCount: count,
      meanChunkBytes: Math.round(dataBytes / Math.max(1, count)),
    };
  });
  const pipeline = pipelineSettings.map((p) => {
    const rate = take();
    log(`pipeline in memory ${sizesLabel(p)} ${rate.cpuMiBps} (wall ${rate.wallMiBps}) MiB/s`);
    return { label: sizesLabel(p), params: p, ...rate, ratioToSha256: ratio(rate.cpuMiBps, baseline.cpuMiBps) };
  });
  const hashing = pieceSizes.map((pieceBytes) => {
    const sha = take();
    const nat = take();
    const was = take();
    log(
      `hash ${pieceBytes / KiB} KiB pieces: native ${nat.cpuMiBps} wasm ${was.cpuMiBps} sha256 ${sha.cpuMiBps} MiB/s`,
    );
    return {
      pieceBytes,
      blake3Native: native === undefined ? null : nat,
      blake3Wasm: wasm === undefined ? null : was,
      sha256: sha,
      nativeToSha256: native === undefined ? null : ratio(nat.cpuMiBps, sha.cpuMiBps),
      wasmToSha256: wasm === undefined ? null : ratio(was.cpuMiBps, sha.cpuMiBps),
    };
  });
  return { data, baseline, fastcdc, hashing, pipeline };
}

/** One pass (chunkFile, this thread) and manifestFromFile (worker threads for large files), interleaved. */
async function filePipeline(data: Uint8Array, runs: number): Promise<{ onePass: Rate; threaded: Rate }> {
  const dir = await mkdtemp(join(tmpdir(), 'clawpeer-bench-chunking-'));
  try {
    const path = join(dir, 'data.bin');
    await writeFile(path, data);
    const onePass = async (): Promise<void> => {
      for await (const e of chunkFile(path, DEFAULT_CHUNKING)) if (e.kind === 'end') return;
    };
    const threaded = async (): Promise<void> => {
      await manifestFromFile(path, DEFAULT_CHUNKING);
    };
    const rates = {
      onePass: { wall: [] as number[], cpu: [] as number[] },
      threaded: { wall: [] as number[], cpu: [] as number[] },
    };
    await onePass(); // warm-up (JIT, page cache, the threads' start and JIT)
    await threaded();
    for (let r = 0; r < runs; r++) {
      for (const [name, run] of [
        ['onePass', onePass],
        ['threaded', threaded],
      ] as const) {
        const c0 = process.cpuUsage(); // the whole process: worker threads included
        const t0 = process.hrtime.bigint();
        await run();
        rates[name].wall.push(data.length / MiB / (Number(process.hrtime.bigint() - t0) / 1e9));
        const c = process.cpuUsage(c0);
        rates[name].cpu.push(data.length / MiB / ((c.user + c.system) / 1e6));
      }
    }
    const rate = (r: { wall: number[]; cpu: number[] }): Rate => ({
      wallMiBps: round1(median(r.wall)),
      wallBestMiBps: round1(Math.max(...r.wall)),
      cpuMiBps: round1(median(r.cpu)),
    });
    return { onePass: rate(rates.onePass), threaded: rate(rates.threaded) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

// --- real-content corpus ------------------------------------------------------------------------

async function listFiles(root: string, limitBytes: number): Promise<{ path: string; size: number }[]> {
  const out: { path: string; size: number }[] = [];
  let total = 0;
  const walk = async (dir: string): Promise<void> => {
    const entries = (await readdir(dir, { withFileTypes: true })).sort((a, b) =>
      a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
    );
    for (const e of entries) {
      if (total >= limitBytes) return;
      const p = join(dir, e.name);
      if (e.isDirectory()) await walk(p);
      else if (e.isFile()) {
        const { size } = await stat(p);
        if (size === 0) continue;
        out.push({ path: p, size });
        total += size;
      }
    }
  };
  await walk(root);
  return out;
}

/** Files concatenated tar-style: "path size\n" then the bytes, in sorted path order. */
async function tarLike(root: string, limitBytes: number): Promise<{ bytes: Uint8Array; files: number }> {
  const files = await listFiles(root, limitBytes);
  const parts: Uint8Array[] = [];
  for (const f of files) {
    parts.push(new TextEncoder().encode(`${relative(root, f.path)} ${f.size}\n`));
    parts.push(await readFile(f.path));
  }
  return { bytes: Buffer.concat(parts), files: files.length };
}

/** xorshift32: deterministic edit positions so runs are comparable. */
function rng(seed: number): () => number {
  let x = seed | 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

/** `count` small edits (insert/delete/overwrite of 1-64 bytes) at random places. */
function applyEdits(input: Uint8Array, count: number, seed: number): Uint8Array {
  const rand = rng(seed);
  const positions = Array.from({ length: count }, () => Math.floor(rand() * input.length)).sort((a, b) => a - b);
  const parts: Uint8Array[] = [];
  let at = 0;
  for (const pos of positions) {
    if (pos < at) continue;
    parts.push(input.subarray(at, pos));
    const n = 1 + Math.floor(rand() * 64);
    const kind = Math.floor(rand() * 3);
    const fresh = Uint8Array.from({ length: n }, () => Math.floor(rand() * 256));
    if (kind === 0) {
      parts.push(fresh); // insert
      at = pos;
    } else if (kind === 1) {
      at = Math.min(input.length, pos + n); // delete
    } else {
      parts.push(fresh); // overwrite
      at = Math.min(input.length, pos + n);
    }
  }
  parts.push(input.subarray(at));
  return Buffer.concat(parts);
}

interface DedupRow {
  label: string;
  params: ChunkingParams | { fixedBytes: number };
  newBytes: number;
  newChunks: number;
  meanChunkBytes: number;
  reusedFraction: number;
  missingBytes: number;
  manifestBytes: number;
  /** (missing + manifest) / new size: what a sync sends, as a fraction of a full copy. */
  sendFraction: number;
}

type Chunker = (bytes: Uint8Array) => { offset: number; length: number }[];

function fixedChunker(blockBytes: number): Chunker {
  return (bytes) => {
    const out: { offset: number; length: number }[] = [];
    for (let at = 0; at < bytes.length; at += blockBytes)
      out.push({ offset: at, length: Math.min(blockBytes, bytes.length - at) });
    return out;
  };
}

/** Dedup of `newer` files against `older` files, each file chunked on its own. */
function dedup(
  label: string,
  p: DedupRow['params'],
  chunker: Chunker,
  older: Uint8Array[],
  newer: Uint8Array[],
): DedupRow {
  const have = new Set<string>();
  for (const f of older) for (const s of chunker(f)) have.add(toHex(blake3(f.subarray(s.offset, s.offset + s.length))));
  let newBytes = 0;
  let newChunks = 0;
  let missingBytes = 0;
  for (const f of newer) {
    for (const s of chunker(f)) {
      newChunks++;
      newBytes += s.length;
      if (!have.has(toHex(blake3(f.subarray(s.offset, s.offset + s.length))))) missingBytes += s.length;
    }
  }
  const manifestBytes = newChunks * MANIFEST_ENTRY_BYTES;
  return {
    label,
    params: p,
    newBytes,
    newChunks,
    meanChunkBytes: Math.round(newBytes / Math.max(1, newChunks)),
    reusedFraction: Math.round((1 - missingBytes / newBytes) * 10000) / 10000,
    missingBytes,
    manifestBytes,
    sendFraction: Math.round(((missingBytes + manifestBytes) / newBytes) * 10000) / 10000,
  };
}

const DEDUP_SETTINGS: ChunkingParams[] = [4, 8, 16, 32, 64, 128, 256].map((k) => params(k));
const DEDUP_EXTRA: ChunkingParams[] = [params(8, 2), params(16, 2), params(32, 2), params(64, 2), params(64, 0)];

function sweep(name: string, older: Uint8Array[], newer: Uint8Array[], log: (s: string) => void): DedupRow[] {
  const rows: DedupRow[] = [];
  for (const p of [...DEDUP_SETTINGS, ...DEDUP_EXTRA]) {
    const row = dedup(sizesLabel(p), p, (b) => chunkBoundaries(b, p), older, newer);
    log(`${name} ${row.label}: reused ${row.reusedFraction} send ${row.sendFraction} chunks ${row.newChunks}`);
    rows.push(row);
  }
  const fixed = dedup('fixed 64K (baseline)', { fixedBytes: 64 * KiB }, fixedChunker(64 * KiB), older, newer);
  log(`${name} ${fixed.label}: reused ${fixed.reusedFraction}`);
  rows.push(fixed);
  return rows;
}

/** Installed package pairs with two versions, found under node_modules (nested installs). */
async function packageVersionPairs(
  root: string,
): Promise<{ name: string; older: string; newer: string; versions: [string, string] }[]> {
  const found = new Map<string, { dir: string; version: string }[]>();
  const visit = async (nm: string, depth: number): Promise<void> => {
    let entries;
    try {
      entries = await readdir(nm, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (!e.isDirectory() || e.name.startsWith('.')) continue;
      const dirs = e.name.startsWith('@')
        ? (await readdir(join(nm, e.name), { withFileTypes: true }))
            .filter((d) => d.isDirectory())
            .map((d) => `${e.name}/${d.name}`)
        : [e.name];
      for (const name of dirs) {
        const dir = join(nm, name);
        try {
          const pkg = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8')) as { version?: unknown };
          if (typeof pkg.version === 'string') {
            const list = found.get(name) ?? [];
            list.push({ dir, version: pkg.version });
            found.set(name, list);
          }
        } catch {
          // not a package
        }
        if (depth < 3) await visit(join(dir, 'node_modules'), depth + 1);
      }
    }
  };
  await visit(root, 0);
  const pairs: { name: string; older: string; newer: string; versions: [string, string] }[] = [];
  for (const [name, list] of found) {
    const byVersion = new Map(list.map((x) => [x.version, x.dir]));
    if (byVersion.size < 2) continue;
    const versions = [...byVersion.keys()].sort((a, b) => a.localeCompare(b, undefined, { numeric: true }));
    // Adjacent versions: the most realistic "upgrade".
    const older = versions[versions.length - 2]!;
    const newer = versions[versions.length - 1]!;
    pairs.push({ name, older: byVersion.get(older)!, newer: byVersion.get(newer)!, versions: [older, newer] });
  }
  return pairs.sort((a, b) => (a.name < b.name ? -1 : 1));
}

async function readTree(dir: string): Promise<Uint8Array[]> {
  // Exclude nested node_modules: those are other packages.
  const files = (await listFiles(dir, Number.MAX_SAFE_INTEGER)).filter(
    (f) => !relative(dir, f.path).includes('node_modules'),
  );
  return Promise.all(files.map(async (f) => new Uint8Array(await readFile(f.path))));
}

// --- main ---------------------------------------------------------------------------------------

export async function main(options: ChunkingBenchOptions = {}) {
  const smoke = options.smoke ?? false;
  const log = options.verbose === true ? (s: string) => process.stderr.write(`${s}\n`) : () => {};
  const dataBytes = smoke ? 2 * MiB : 256 * MiB;
  const runs = smoke ? 1 : 5;
  const loadAtStart = loadavg()[0];
  const corpusDir = options.corpusDir ?? join(REPO_ROOT, 'node_modules');
  const corpusLimitBytes = smoke ? 2 * MiB : 64 * MiB;

  const tp = throughput(dataBytes, runs, log);
  const { onePass: pipelineFromFile, threaded: pipelineThreaded } = await filePipeline(tp.data, runs);
  log(
    `pipeline from file (page cache) ${pipelineFromFile.cpuMiBps} (wall ${pipelineFromFile.wallMiBps}) MiB/s; on ${threadsFor(dataBytes)} threads: wall ${pipelineThreaded.wallMiBps} MiB/s`,
  );

  const corpus = await tarLike(corpusDir, corpusLimitBytes);
  const editCounts = smoke ? [4] : [16, 256];
  const edits = editCounts.map((count) => {
    const edited = applyEdits(corpus.bytes, count, 0xc0ffee + count);
    return { edits: count, rows: sweep(`edits=${count}`, [corpus.bytes], [edited], log) };
  });

  const pairs = await packageVersionPairs(corpusDir);
  const versionPairs: {
    package: string;
    versions: [string, string];
    newerFiles: number;
    newerBytes: number;
    rows: DedupRow[];
  }[] = [];
  for (const pair of smoke ? pairs.slice(0, 1) : pairs) {
    const older = await readTree(pair.older);
    const newer = await readTree(pair.newer);
    const newerBytes = newer.reduce((n, f) => n + f.length, 0);
    if (newerBytes < 64 * KiB) continue; // too small to say anything about chunk sizes
    versionPairs.push({
      package: pair.name,
      versions: pair.versions,
      newerFiles: newer.length,
      newerBytes,
      rows: sweep(`${pair.name} ${pair.versions.join('->')}`, older, newer, log),
    });
  }
  // All pairs together: one number per setting for "upgrade a set of packages".
  const versionPairsTotal = (versionPairs[0]?.rows ?? []).map((_, i) => {
    let newBytes = 0;
    let missingBytes = 0;
    let manifestBytes = 0;
    let newChunks = 0;
    for (const v of versionPairs) {
      const row = v.rows[i]!;
      newBytes += row.newBytes;
      missingBytes += row.missingBytes;
      manifestBytes += row.manifestBytes;
      newChunks += row.newChunks;
    }
    return {
      label: versionPairs[0]!.rows[i]!.label,
      newBytes,
      newChunks,
      reusedFraction: Math.round((1 - missingBytes / newBytes) * 10000) / 10000,
      sendFraction: Math.round(((missingBytes + manifestBytes) / newBytes) * 10000) / 10000,
    };
  });

  const result = {
    bench: 'chunking',
    date: new Date().toISOString(),
    smoke,
    conditions: {
      machine: cpus()[0]?.model ?? 'unknown',
      cores: cpus().length,
      memoryBytes: totalmem(),
      node: process.version,
      platform: `${platform()}-${arch()}`,
      blake3Backend: activeBlake3Backend(),
      loadAverage1m: { start: round2(loadAtStart), end: round2(loadavg()[0]) },
      note: 'shared machine: other processes may run (see loadAverage1m); cpuMiBps = bytes per CPU-second of this process (robust to sharing), wall* = by clock; ratios use cpuMiBps',
    },
    throughput: {
      dataBytes,
      dataType: 'incompressible (crypto.randomBytes), in memory',
      runs,
      baseline: { name: 'node:crypto sha256 over 1 MiB pieces', ...tp.baseline },
      fastcdc: tp.fastcdc,
      hashing: tp.hashing,
      pipelineInMemory: tp.pipeline,
      pipelineFromFile: {
        params: DEFAULT_CHUNKING,
        ...pipelineFromFile,
        ratioToSha256: ratio(pipelineFromFile.cpuMiBps, tp.baseline.cpuMiBps),
        note: 'chunkFile(): read through the 4 MiB sliding buffer (page-cached file), chunk, BLAKE3 per chunk, root',
      },
      pipelineFromFileThreaded: {
        params: DEFAULT_CHUNKING,
        threads: threadsFor(dataBytes),
        ...pipelineThreaded,
        wallSpeedupOverOnePass: ratio(pipelineThreaded.wallMiBps, pipelineFromFile.wallMiBps),
        note: 'manifestFromFile(): segments chunked and hashed on worker threads, stitched into the one-pass chunk list (parallel-manifest.ts; files >= 128 MiB); one-pass and threaded runs interleaved; cpuMiBps counts every thread of the process',
      },
    },
    dedup: {
      corpus: {
        dir: relative(REPO_ROOT, corpusDir) || '.',
        description: 'tar-like stream of real files (sorted paths, text header per file)',
        bytes: corpus.bytes.length,
        files: corpus.files,
        sha256: createHash('sha256').update(corpus.bytes).digest('hex'),
      },
      costModel: `send = missing chunk bytes + ${MANIFEST_ENTRY_BYTES} B manifest entry per chunk of the new version`,
      edits,
      versionPairsTotal,
      versionPairs,
    },
    defaults: DEFAULT_CHUNKING,
  };

  if (!smoke || options.outFile !== undefined) {
    log(
      `wrote ${await (options.outFile === undefined ? writeResult('chunking', result) : writeJsonFile(options.outFile, result))}`,
    );
  }
  return result;
}

runAsScript(import.meta.url, async ({ smoke }) => {
  await main({ smoke, verbose: true });
});
