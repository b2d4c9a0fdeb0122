// Micro benchmark of a sync's serving side per byte (issue 33): the CPU of locating one large
// file a peer fetches and reading every chunk of it as serveFetch's sender does (locate, then
// ChunkReader.read of each chunk with the SourceFile serveFetch builds), without the QUIC and
// AEAD costs around it. Builds are A/B'd: each run is a fresh `node` child that imports the
// modules of one build's output directory, and the builds alternate run by run.
//
// Two cases, each a folder holding one incompressible file last modified an hour ago:
//   - scanned: the folder's first scan (its .clawpeer removed before each run, untimed) leaves
//     the file's manifest in the sync's manifest cache, as a first sync does;
//   - warm: the log already certifies the file warm, so the scan does not hash it and locate
//     hashes it (a resident listener's folder, or any later sync).
// Timed: process.cpuUsage (user + system, all threads) and wall time of locate + the reads.
// Run: node <outDir>/bench/serve-fetch-cpu.js --build NAME=DIST_DIR [--build ...] [--mib N]
//      [--runs N] [--out FILE]
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, utimesSync, writeFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { median, round, runAsScript } from './common.js';

const r3 = (x: number): number => round(x, 3);
import type * as ChunkReaderModule from '../src/exchange/chunk-reader.js';
import type * as FolderHistoryModule from '../src/folder-sync/folder-history.js';
import type * as SyncExchangeModule from '../src/folder-sync/sync-exchange.js';
import type * as SyncedFolderModule from '../src/folder-sync/synced-folder.js';
import type * as LoggerModule from '../src/logger.js';

interface RunResult {
  readonly cpuS: number;
  readonly wallS: number;
  readonly keyed: boolean;
}

const CASES = ['scanned', 'warm'] as const;

async function child(dist: string, folder: string): Promise<RunResult> {
  const mod = async <T>(p: string): Promise<T> => (await import(pathToFileURL(join(dist, 'src', p)).href)) as T;
  // The modules of the build under test (typed as this build's: the API used is the same).
  const { openSyncedFolder } = await mod<typeof SyncedFolderModule>('folder-sync/synced-folder.js');
  const { defaultFolderChunking } = await mod<typeof FolderHistoryModule>('folder-sync/folder-history.js');
  const { locate, servableFiles } = await mod<typeof SyncExchangeModule>('folder-sync/sync-exchange.js');
  const { ChunkReader } = await mod<typeof ChunkReaderModule>('exchange/chunk-reader.js');
  const { silentLogger } = await mod<typeof LoggerModule>('logger.js');
  const chunking = defaultFolderChunking();
  const synced = await openSyncedFolder(folder, {
    nodeId: '12D3KooWBenchServe',
    chunking,
    lockWaitMs: 10_000,
    log: silentLogger,
    cacheManifests: true,
  });
  try {
    const head = synced.store.liveHead('f.bin');
    if (head === undefined) throw new Error('f.bin is not recorded');
    const root = head.revision.contentRoot;
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const may = servableFiles(folder, synced.store);
    const found = await locate(folder, 'f.bin', root, chunking, () => new Map(), synced.manifests, may);
    if (found === undefined) throw new Error('not located');
    const source = { ...found, entryIndex: 0 }; // as serveFetch builds it (the base build's locate gives no key)
    const reader = new ChunkReader();
    const buf = Buffer.allocUnsafe(chunking.maxBytes);
    for (const c of found.manifest.chunks) await reader.read(found.localPath, c.offset, c.length, c.id, buf, source);
    await reader.close();
    const wallS = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    return { cpuS: (cpu.user + cpu.system) / 1e6, wallS, keyed: source.key !== undefined };
  } finally {
    await synced.close();
  }
}

/** This build's output directory (bench/ lives in it). */
const THIS_DIST = fileURLToPath(new URL('..', import.meta.url));

export interface ServeFetchCpuOptions {
  /** A small, quick run of this build only, nothing written (the test suite's). */
  readonly smoke?: boolean;
  /** name -> output directory of each build to A/B (default: this build). */
  readonly builds?: readonly (readonly [string, string])[];
  readonly mib?: number;
  readonly runs?: number;
  readonly outFile?: string;
}

export async function main(o: ServeFetchCpuOptions = {}): Promise<Record<string, unknown>> {
  const builds = o.builds !== undefined && o.builds.length > 0 ? o.builds : ([['this', THIS_DIST]] as const);
  const mib = o.smoke === true ? 8 : (o.mib ?? 512);
  const runs = o.smoke === true ? 1 : (o.runs ?? 5);
  const base = await mkdtemp(join(tmpdir(), 'clawpeer-bench-serve-'));
  const loadBefore = loadavg();
  const results: Record<string, Record<string, RunResult[]>> = {};
  try {
    const content = randomBytes(mib * 1024 * 1024);
    for (const c of CASES) {
      await mkdir(join(base, c));
      const file = join(base, c, 'f.bin');
      writeFileSync(file, content);
      const hourAgo = Date.now() / 1000 - 3600;
      utimesSync(file, hourAgo, hourAgo);
    }
    const runChild = (dist: string, folder: string): RunResult => {
      const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--child', dist, folder], {
        encoding: 'utf8',
      });
      if (r.status !== 0) throw new Error(`child failed: ${r.stderr}`);
      return JSON.parse(r.stdout) as RunResult;
    };
    // The warm folder's log: one untimed scan certifies the file warm.
    runChild(builds[0]![1], join(base, 'warm'));
    for (let i = 0; i < runs; i++) {
      for (const [name, dist] of builds) {
        for (const c of CASES) {
          const folder = join(base, c);
          if (c === 'scanned') await rm(join(folder, '.clawpeer'), { recursive: true, force: true });
          const r = runChild(dist, folder);
          ((results[name] ??= {})[c] ??= []).push(r);
          if (o.smoke !== true)
            process.stderr.write(
              `run ${i + 1} ${name} ${c}: cpu ${r.cpuS.toFixed(3)} s, wall ${r.wallS.toFixed(3)} s\n`,
            );
        }
      }
    }
  } finally {
    await rm(base, { recursive: true, force: true });
  }
  const out = {
    bench: 'serve-fetch-cpu (issue 33): CPU of a sync serving one large file: locate + every chunk read as sent',
    conditions: {
      date: new Date().toISOString(),
      cpuModel: cpus()[0]?.model,
      cores: cpus().length,
      memGiB: r3(totalmem() / 2 ** 30),
      node: process.version,
      loadAverageBefore: loadBefore.map(r3),
      loadAverageAfter: loadavg().map(r3),
      fileMiB: mib,
      runs,
      builds: Object.fromEntries(builds),
    },
    runs: Object.fromEntries(
      Object.entries(results).map(([b, byCase]) => [
        b,
        Object.fromEntries(
          Object.entries(byCase).map(([c, rs]) => [
            c,
            {
              keyed: rs[0]?.keyed,
              cpuS: rs.map((r) => r3(r.cpuS)),
              wallS: rs.map((r) => r3(r.wallS)),
              medianCpuS: r3(median(rs.map((r) => r.cpuS))),
              medianWallS: r3(median(rs.map((r) => r.wallS))),
            },
          ]),
        ),
      ]),
    ),
  };
  if (o.smoke !== true && o.outFile !== undefined && !existsSync(o.outFile))
    writeFileSync(o.outFile, JSON.stringify(out, null, 1) + '\n');
  return out;
}

runAsScript(import.meta.url, async ({ argv, smoke, numbers, texts }) => {
  if (argv[0] === '--child') {
    process.stdout.write(JSON.stringify(await child(argv[1]!, argv[2]!)));
    return undefined;
  }
  const builds: [string, string][] = [];
  argv.forEach((a, i) => {
    if (a !== '--build') return;
    const [name, dir] = (argv[i + 1] ?? '').split('=');
    if (name === undefined || name === '' || dir === undefined || dir === '')
      throw new Error('--build takes NAME=DIST_DIR');
    builds.push([name, dir]);
  });
  return main({ smoke, builds, ...numbers({ mib: '--mib', runs: '--runs' }), ...texts({ outFile: '--out' }) });
});
