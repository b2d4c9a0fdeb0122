// Micro benchmark of a batch commit (Publisher.commit) of small in-memory files: its wall time,
// and how long it keeps the event loop from running, which is what delays the acks of chunks
// already written while a commit runs (a receiver commits beside receiving).
//
// Measured: the largest gap between ticks of a 1 ms interval timer during the commit; the
// baseline is the same timer's largest gap over an idle period of the same length in the same
// run (timer jitter of this machine). Data: N files of random bytes staged in memory, committed
// as one batch into a fresh directory on this disk (create, write, mode, mtime, fsync, link).
// Run: node <outDir>/bench/publish.js [--smoke] [--out FILE]
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { DEFAULT_CHUNKING } from '../src/chunking/fastcdc.js';
import { manifestFromBytes } from '../src/chunking/manifest.js';
import { PartialStore } from '../src/store/partial-store.js';
import { Publisher } from '../src/store/publisher.js';
import type { StagedFile } from '../src/store/staged-file.js';
import {
  fileCreateCondition,
  runAsScript,
  KiB,
  machineConditions,
  median,
  round,
  writeJsonFile,
  writeResult,
} from './common.js';

const CHUNKING = {
  minBytes: 64 * KiB,
  avgBytes: 256 * KiB,
  maxBytes: 1024 * KiB,
  normalization: DEFAULT_CHUNKING.normalization,
};

interface CommitSample {
  wallMs: number;
  maxGapMs: number;
  /** CPU of the whole process (event loop and thread pool), user + system. */
  cpuMs: number;
}

/** Runs `body` while a 1 ms timer ticks; returns body's wall ms, CPU ms and the largest tick gap, ms. */
async function withTimerGaps(body: () => Promise<void>): Promise<CommitSample> {
  let maxGap = 0;
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    maxGap = Math.max(maxGap, now - last);
    last = now;
  }, 1);
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  try {
    await body();
  } finally {
    clearInterval(timer);
  }
  const cpu = process.cpuUsage(cpu0);
  return {
    wallMs: performance.now() - t0,
    maxGapMs: Math.max(maxGap, performance.now() - last),
    cpuMs: (cpu.user + cpu.system) / 1000,
  };
}

async function commitOnce(root: string, files: number, fileBytes: number): Promise<CommitSample> {
  const dir = await mkdtemp(join(root, 'batch-'));
  const partials = await PartialStore.open(dir);
  const publisher = await Publisher.open({
    shareRoot: dir,
    readOnly: false,
    force: false,
    chunking: CHUNKING,
    partials,
  });
  const staged: StagedFile[] = [];
  for (let i = 0; i < files; i++) {
    const bytes = randomBytes(fileBytes);
    const f = await publisher.stageFile({
      relPath: `f${i}.bin`,
      manifest: manifestFromBytes(bytes, CHUNKING),
      mode: 0o644,
      mtimeMs: Date.now(),
    });
    if (typeof f === 'string') throw new Error('a fresh directory cannot hold the file already');
    await f.writeChunk([0], bytes);
    staged.push(f);
  }
  return withTimerGaps(() => publisher.commit(staged));
}

export async function main(options: { smoke?: boolean; outFile?: string } = {}): Promise<Record<string, unknown>> {
  const smoke = options.smoke === true;
  const runs = smoke ? 1 : 7;
  const root = await mkdtemp(join(tmpdir(), 'clawpeer-bench-publish-'));
  const loadBefore = loadavg().map((x) => round(x, 2));
  try {
    const fileCreate = fileCreateCondition(root);
    const cases = [];
    for (const [files, fileBytes] of smoke
      ? [[16, 4 * KiB]]
      : [
          [16, 4 * KiB],
          [256, 4 * KiB],
          [256, 64 * KiB],
        ]) {
      const samples = [];
      for (let r = 0; r < runs; r++) samples.push(await commitOnce(root, files!, fileBytes!));
      const wall = median(samples.map((s) => s.wallMs));
      const idle = [];
      for (let r = 0; r < runs; r++) idle.push(await withTimerGaps(() => new Promise((res) => setTimeout(res, wall))));
      cases.push({
        files,
        fileBytes,
        commitWallMsMedian: round(wall, 1),
        commitCpuMsMedian: round(median(samples.map((s) => s.cpuMs)), 1),
        baselineIdleCpuMsMedian: round(median(idle.map((s) => s.cpuMs)), 1),
        maxEventLoopGapMsMedian: round(median(samples.map((s) => s.maxGapMs)), 1),
        maxEventLoopGapMsAll: samples.map((s) => round(s.maxGapMs, 1)),
        baselineIdleMaxGapMsMedian: round(median(idle.map((s) => s.maxGapMs)), 1),
      });
    }
    const result = {
      bench: 'publish',
      smoke,
      conditions: {
        ...machineConditions(),
        loadAverageBefore: loadBefore,
        loadAverageAfter: loadavg().map((x) => round(x, 2)),
        fileCreateMicros: fileCreate,
        data: 'random bytes, one chunk per file, staged in memory; committed as one batch into a fresh directory (ext4 here)',
        measure:
          'largest gap between ticks of a 1 ms setInterval during Publisher.commit, and the process CPU (user + system, all threads) it took; baseline: the same over an idle wait as long as the median commit',
        runs,
      },
      cases,
    };
    const out = options.outFile ?? (smoke ? undefined : 'publish');
    if (out !== undefined) await (out.includes('/') ? writeJsonFile(out, result) : writeResult(out, result));
    return result;
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

runAsScript(import.meta.url, ({ smoke, texts }) => main({ smoke, ...texts({ outFile: '--out' }) }));
