// Load, full size: 16 peers (16 homes, each paired with the listener) push 8 MiB each and ping
// one listener at once; then all 16 sync a 50-file folder with their own share at once; then
// 1,000 connect / handshake / ping / disconnect cycles. Asserts the listener's RSS stays bounded
// and writes the figures to bench/results/load.json.
import t from 'tap';
import { mkdir, writeFile } from 'node:fs/promises';
import { runLoad } from '../../fault/fault-harness.js';

const PEERS = Number(process.env['LOAD_PEERS'] ?? 16);
const CYCLES = Number(process.env['LOAD_CYCLES'] ?? 1000);

t.test(`${PEERS} peers at once, then ${CYCLES} connect/disconnect cycles`, async (t) => {
  const f = await runLoad({
    peers: PEERS,
    pushBytes: 8 << 20,
    cycles: CYCLES,
    cycleConcurrency: 8,
    warmupCycles: 100,
    syncFiles: 50,
  });
  const MiB = 1024;
  const growth = f.rssKiB.afterSettle - f.rssKiB.baselineAfterWarmup;
  const batches = f.rssKiB.afterEach100Cycles;
  // A per-connection leak grows both halves alike; allocator warm-up shows in the first only.
  const mid = batches[Math.floor(batches.length / 2) - 1] ?? f.rssKiB.baselineAfterWarmup;
  const firstHalf = mid - f.rssKiB.baselineAfterWarmup;
  const secondHalf = (batches.at(-1) ?? mid) - mid;
  const figures = {
    ...f,
    derived: {
      rssGrowthOverCyclesKiB: growth,
      rssGrowthPerCycleKiB: growth / CYCLES,
      firstHalfGrowthKiB: firstHalf,
      secondHalfGrowthKiB: secondHalf,
    },
  };
  await mkdir('bench/results', { recursive: true });
  await writeFile(
    'bench/results/load.json',
    JSON.stringify({ name: 'load', date: new Date().toISOString(), ...figures }, null, 2) + '\n',
  );
  t.comment(JSON.stringify(figures));
  t.same(f.pushes.failed, [], 'every push completed');
  t.equal(f.pushes.identical, PEERS, 'every pushed tree is byte-identical');
  t.same(f.pings.failed, [], 'every ping was answered');
  t.same(f.syncs?.failed, [], 'every sync completed');
  t.equal(f.syncs?.identical, PEERS, 'every synced folder equals its share');
  t.same(f.cycles.failed, [], 'every cycle completed');
  t.equal(f.cycles.ok, CYCLES);
  t.ok(
    f.rssKiB.pushPeak <= 1024 * MiB,
    `RSS peak with ${PEERS} peers pushing ${f.rssKiB.pushPeak} KiB stays under 1 GiB`,
  );
  t.ok(
    growth <= 128 * MiB,
    `RSS after ${CYCLES} cycles grew ${growth} KiB over the post-warmup baseline (bound 128 MiB)`,
  );
  t.ok(
    f.openFds.afterSettle <= f.openFds.baseline + 8,
    `open descriptors come back (${f.openFds.baseline} -> ${f.openFds.afterSettle})`,
  );
});
