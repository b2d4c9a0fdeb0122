// What a resident folder's scan costs before a sync (a listener's shares, `sync --watch`), by
// what changed since the last one: nothing (the watcher vouches: no scan), one file edited, one
// created, one removed (the watcher names them: just those are looked at), against the baseline
// measured in the same run on the same tree: the whole walk with the warm index, after the same
// kind of change (what every sync paid before the watcher named paths).
//
// Data: `files` small files (100 bytes each, in directories of 500) on the machine's temp file
// system, warm in the page cache; after the first scan every file is certified warm (mtimes set
// an hour back), so a walk reads metadata only. Each case: change, wait for the watcher to
// follow up, time openSyncedFolder (scan and the log's transactions; no network).
// Run: node .build-x/bench/watched-scan.js [--files N]  (writes bench/results/watched-scan.json);
// main({ smoke: true }) uses 300 files and writes nothing.
import { mkdir, mkdtemp, rm, unlink, utimes, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { DEFAULT_CHUNKING } from '../src/chunking/fastcdc.js';
import { silentLogger } from '../src/logger.js';
import { scanFolder } from '../src/folder-sync/folder-scanner.js';
import { openSyncedFolder, ResidentFolders } from '../src/folder-sync/synced-folder.js';
import { runAsScript, machineConditions, median, round, writeResult } from './common.js';

const NODE_ID = '12D3KooWFEGht6khjm71Yyzjmiwe8pr15zQe27wbjyz8JPbCTgwd';
const PER_DIR = 500;
/** The watcher's follow-up after a burst of events runs within ~1 s (folder-watcher.ts). */
const SETTLE_MS = 300;

interface Sample {
  readonly ms: number;
  readonly looked: number;
}

export async function main(options: { smoke?: boolean; files?: number } = {}): Promise<Record<string, unknown>> {
  const smoke = options.smoke === true;
  const files = options.files ?? (smoke ? 300 : 50_000);
  const runs = smoke ? 1 : 5;
  const root = await mkdtemp(join(tmpdir(), 'clawpeer-bench-watched-'));
  const loadBefore = loadavg().map((x) => round(x, 2));
  const resident = new ResidentFolders({ log: silentLogger });
  try {
    const hourAgo = new Date(Date.now() - 3600_000);
    const fileAt = (i: number): string => join(root, `d${Math.floor(i / PER_DIR)}`, `f${i}.txt`);
    for (let i = 0; i < files; i++) {
      if (i % PER_DIR === 0) await mkdir(join(root, `d${i / PER_DIR}`));
      await writeFile(fileAt(i), `file ${i} `.padEnd(100, '.'));
      await utimes(fileAt(i), hourAgo, hourAgo);
    }
    const watcher = resident.watchers.forFolder(root);
    await watcher.whenIdle();
    const open = async (): Promise<Sample> => {
      const started = performance.now();
      const f = await openSyncedFolder(root, {
        nodeId: NODE_ID,
        chunking: DEFAULT_CHUNKING,
        lockWaitMs: 10_000,
        log: silentLogger,
        resident,
      });
      const ms = performance.now() - started;
      const s = f.scan;
      await f.close();
      return { ms, looked: s === undefined ? 0 : s.added + s.changed + s.deleted + s.unchanged + s.unstable };
    };
    const settle = async (): Promise<void> => {
      await new Promise((r) => setTimeout(r, SETTLE_MS));
      await watcher.whenIdle();
    };
    const firstScan = await open(); // records everything
    await open(); // certified: the watcher's walk is done now
    // The baseline: the whole walk of the same tree (its log opened apart, as a non-resident sync does).
    const walk = async (): Promise<Sample> => {
      const { RevisionStore } = await import('../src/store/revision-store.js');
      const store = await RevisionStore.open(root, { nodeId: NODE_ID });
      try {
        const started = performance.now();
        const s = await scanFolder(store, root, { chunking: DEFAULT_CHUNKING });
        return { ms: performance.now() - started, looked: s.added + s.changed + s.deleted + s.unchanged + s.unstable };
      } finally {
        await store.close();
      }
    };
    let serial = 0;
    const changes: Record<string, () => Promise<void>> = {
      'nothing changed': async () => undefined,
      'one file edited': async () => writeFile(fileAt(0), `edited ${serial++}`),
      'one file created': async () => writeFile(join(root, 'd0', `new-${serial++}.txt`), 'new'),
      'one file removed': async () => unlink(fileAt(Math.floor(files / 2) + serial++)),
    };
    const cases = [];
    for (const [name, change] of Object.entries(changes)) {
      const watched: Sample[] = [];
      const walked: Sample[] = [];
      for (let r = 0; r < runs; r++) {
        await change();
        await settle();
        watched.push(await open());
        await change();
        await settle();
        walked.push(await walk());
        await open(); // the resident log catches up with the walk's change, and certifies again
      }
      const watchedMs = median(watched.map((s) => s.ms));
      const walkedMs = median(walked.map((s) => s.ms));
      cases.push({
        change: name,
        watchedScanMsMedian: round(watchedMs, 2),
        watchedEntriesLookedAt: median(watched.map((s) => s.looked)),
        baselineWalkMsMedian: round(walkedMs, 1),
        baselineEntriesLookedAt: median(walked.map((s) => s.looked)),
        speedup: round(walkedMs / Math.max(watchedMs, 0.01), 1),
        watchedMsAll: watched.map((s) => round(s.ms, 2)),
        baselineMsAll: walked.map((s) => round(s.ms, 1)),
      });
    }
    const result = {
      bench: 'watched-scan',
      smoke,
      conditions: {
        ...machineConditions(),
        loadAverageBefore: loadBefore,
        loadAverageAfter: loadavg().map((x) => round(x, 2)),
        files,
        fileBytes: 100,
        filesPerDirectory: PER_DIR,
        tree: `${root.startsWith(tmpdir()) ? 'the OS temp dir' : root}, page-cached; every file certified warm (mtime an hour back) before the cases`,
        firstScanMs: round(firstScan.ms, 0),
        measure:
          "openSyncedFolder with the folder's resident watcher and log (scan plus its log transactions, no network), after the change and the watcher's follow-up; baseline: scanFolder's whole walk of the same tree after the same kind of change, in the same run",
        runs,
      },
      cases,
    };
    if (!smoke) await writeResult('watched-scan', result);
    return result;
  } finally {
    await resident.close();
    await rm(root, { recursive: true, force: true });
  }
}

runAsScript(import.meta.url, ({ smoke, numbers }) => main({ smoke, ...numbers({ files: '--files' }) }));
