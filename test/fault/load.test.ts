// Load, CI size: 4 peers push and ping one listener at once, then 100 connect / handshake /
// ping / disconnect cycles; the listener's RSS stays bounded and comes back near its baseline.
// The full run (16 peers, 1,000 cycles, figures in bench/results/load.json) is test/slow/fault/load.test.ts.
import t from 'tap';
import { runLoad } from './fault-harness.js';

t.test('4 peers at once, then 100 connect/disconnect cycles', async (t) => {
  const f = await runLoad({ peers: 4, pushBytes: 1 << 20, cycles: 100, cycleConcurrency: 4, warmupCycles: 20 });
  t.comment(JSON.stringify(f));
  t.same(f.pushes.failed, [], 'every push completed');
  t.equal(f.pushes.identical, 4, 'every pushed tree is byte-identical');
  t.same(f.pings.failed, [], 'every ping was answered');
  t.same(f.cycles.failed, [], 'every cycle completed');
  t.equal(f.cycles.ok, 100);
  const MiB = 1024;
  // Generous: the bound catches a leak per connection (100 x a few hundred KiB), not GC noise.
  t.ok(
    f.rssKiB.afterSettle <= f.rssKiB.baselineAfterWarmup + 64 * MiB,
    `RSS after the cycles ${f.rssKiB.afterSettle} KiB is within 64 MiB of the post-warmup baseline ${f.rssKiB.baselineAfterWarmup} KiB`,
  );
  t.ok(f.rssKiB.cyclesPeak <= 512 * MiB, `RSS peak during the cycles ${f.rssKiB.cyclesPeak} KiB stays under 512 MiB`);
  t.ok(
    f.openFds.afterSettle <= f.openFds.baseline + 8,
    `open descriptors come back (${f.openFds.baseline} -> ${f.openFds.afterSettle})`,
  );
});
