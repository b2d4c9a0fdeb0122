// End-to-end behaviour of the sans-I/O data plane in virtual time (see sim.ts for the model).
import t, { type Test } from 'tap';
import { scheduleLpt, splitIntoUnits, type LptAssignment, type WorkUnit } from '../../src/transfer/lpt-scheduler.js';
import { planTransfer, type ChunkId, type FileManifest, type TransferPlan } from '../../src/transfer/plan.js';
import { makeManifests, roundRobin, simulate, type SimOptions, type SimResult } from './sim.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const RTT_MS = 50;
const LINK_100_MBIT = { oneWayLatencyMs: RTT_MS / 2, bandwidthBytesPerMs: 12_500 }; // 12.5 MB/s

interface Setup {
  files: FileManifest[];
  lacking: ChunkId[];
  plan: TransferPlan;
  units: WorkUnit[];
}
function setup(shapes: readonly (readonly number[])[], maxUnitBytes = 16 * MiB): Setup {
  const files = makeManifests(shapes);
  const lacking = files.flatMap((f) => f.chunks.map((c) => c.id));
  const plan = planTransfer(files, lacking);
  return { files, lacking, plan, units: splitIntoUnits(plan, { maxUnitBytes }) };
}
function run(s: Setup, assignment: LptAssignment<WorkUnit>, options: SimOptions): SimResult {
  return simulate(s.files, s.lacking, s.plan, assignment, options);
}
/** Every planned chunk sent, received and acknowledged exactly once; windows never over W. */
function checkExactlyOnce(t: Test, s: Setup, r: SimResult, W: number): void {
  const ok = (m: ReadonlyMap<string, number>): boolean =>
    m.size === s.plan.chunks.length &&
    [...m.values()].every((v) => v === 1) &&
    s.plan.chunks.every((c) => m.get(c.key) === 1);
  t.ok(ok(r.sends), 'no chunk sent twice, none missing');
  t.ok(ok(r.receives), 'every chunk received once');
  t.ok(ok(r.acks), 'every chunk acknowledged exactly once');
  t.ok(
    r.peakInFlight.every((p) => p <= W),
    `in flight never above W=${W} (${r.peakInFlight.join(',')})`,
  );
  t.ok(r.allDone, 'all windows done and every file published');
  t.equal(r.filesPublished, s.files.length);
}

t.test('window W=1 gives ~1 chunk per RTT; W=16 is ~16x faster', async (t) => {
  const s = setup([Array.from({ length: 100 }, () => 4 * KiB)]);
  const one = scheduleLpt(s.units, 1);
  const w1 = run(s, one, { link: LINK_100_MBIT, maxInFlightChunks: 1, steal: false });
  const w16 = run(s, one, { link: LINK_100_MBIT, maxInFlightChunks: 16, steal: false });
  checkExactlyOnce(t, s, w1, 1);
  checkExactlyOnce(t, s, w16, 16);
  const chunksPerRtt = 100 / (w1.makespanMs / RTT_MS);
  t.ok(chunksPerRtt > 0.98 && chunksPerRtt <= 1, `W=1: ${chunksPerRtt.toFixed(3)} chunks per RTT`);
  // 100 chunks in windows of 16 take ceil(100/16) = 7 round trips: the ideal ratio is 100/7.
  const ratio = w1.makespanMs / w16.makespanMs;
  const ideal = 100 / Math.ceil(100 / 16);
  t.ok(
    ratio > 0.95 * ideal && ratio <= ideal * 1.001,
    `W=16 speed-up ${ratio.toFixed(2)} (ideal for 100 chunks ${ideal.toFixed(2)})`,
  );
  t.ok(w1.rtt[0]!.minMs >= RTT_MS && w1.rtt[0]!.minMs < RTT_MS + 1, `ack latency ~ RTT (${w1.rtt[0]!.minMs} ms)`);

  // With enough chunks the pipeline's fill and drain vanish and the ratio approaches W.
  const long = setup([Array.from({ length: 1600 }, () => 4 * KiB)]);
  const l1 = run(long, scheduleLpt(long.units, 1), { link: LINK_100_MBIT, maxInFlightChunks: 1, steal: false });
  const l16 = run(long, scheduleLpt(long.units, 1), { link: LINK_100_MBIT, maxInFlightChunks: 16, steal: false });
  const longRatio = l1.makespanMs / l16.makespanMs;
  t.ok(longRatio > 15 && longRatio <= 16, `1600 chunks: W=16 speed-up ${longRatio.toFixed(2)}`);
});

t.test('a large window is capped by bandwidth, not by W', async (t) => {
  // 4 MiB at 12.5 MB/s takes ~335 ms of serialisation; W=1000 cannot beat the link.
  const s = setup([Array.from({ length: 1024 }, () => 4 * KiB)]);
  const r = run(s, scheduleLpt(s.units, 1), { link: LINK_100_MBIT, maxInFlightChunks: 1000, steal: false });
  const wire = (1024 * 4 * KiB) / 12_500;
  t.ok(
    Math.abs(r.makespanMs - (wire + RTT_MS)) < 1,
    `makespan ${r.makespanMs.toFixed(1)} ms ~ wire ${wire.toFixed(1)} + RTT`,
  );
  checkExactlyOnce(t, s, r, 1000);
});

t.test('LPT finishes no later than round-robin on adversarial job sizes', async (t) => {
  const W = 32;
  const opts: SimOptions = { link: LINK_100_MBIT, maxInFlightChunks: W, steal: false };
  const cases: [string, number[], number][] = [
    // Big files every N-th position: round-robin piles them all onto stream 0.
    ['big files at stride N', [8, 1, 1, 1, 8, 1, 1, 1, 8, 1, 1, 1, 8, 1, 1, 1], 4],
    // Ascending sizes: round-robin gives the last stream all the largest of each round.
    ['ascending sizes', [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], 3],
    // One huge file and many small ones.
    ['one huge, many small', [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 40], 4],
  ];
  const ratios: number[] = [];
  for (const [name, sizesInChunks, n] of cases) {
    // Files of 64 KiB chunks; units are whole files (limit above the largest file).
    const s = setup(
      sizesInChunks.map((k) => Array.from({ length: k }, () => 64 * KiB)),
      2 ** 40,
    );
    const lptPlan = scheduleLpt(s.units, n);
    const rrPlan = roundRobin(s.units, n);
    const lpt = run(s, lptPlan, opts);
    const rr = run(s, rrPlan, opts);
    checkExactlyOnce(t, s, lpt, W);
    checkExactlyOnce(t, s, rr, W);
    t.ok(
      lpt.makespanMs <= rr.makespanMs,
      `${name}: LPT ${lpt.makespanMs.toFixed(0)} ms <= round-robin ${rr.makespanMs.toFixed(0)} ms`,
    );
    // Bandwidth-bound, so makespan = bytes / rate + one RTT: without the RTT the simulated
    // gain matches the scheduler's byte-load estimate.
    const simRatio = (lpt.makespanMs - RTT_MS) / (rr.makespanMs - RTT_MS);
    const loadRatio = lptPlan.makespanBytes / rrPlan.makespanBytes;
    t.ok(
      Math.abs(simRatio - loadRatio) < 0.05,
      `${name}: simulated ${simRatio.toFixed(2)}x vs load estimate ${loadRatio.toFixed(2)}x`,
    );
    ratios.push(simRatio);
  }
  t.ok(ratios[0]! < 0.4, `stride case: LPT needs ${ratios[0]!.toFixed(2)}x the round-robin transmission time`);
});

t.test('splitting a large file into ranges spreads it over all streams', async (t) => {
  const shape = [Array.from({ length: 256 }, () => 256 * KiB)]; // one 64 MiB file
  const whole = setup(shape, 2 ** 40);
  const split = setup(shape, 8 * MiB);
  const opts: SimOptions = { link: LINK_100_MBIT, maxInFlightChunks: 64, steal: false };
  const a = run(whole, scheduleLpt(whole.units, 4), opts);
  const b = run(split, scheduleLpt(split.units, 4), opts);
  checkExactlyOnce(t, split, b, 64);
  t.equal(a.streamBytes.filter((x) => x > 0).length, 1, 'whole: one stream does all the work');
  t.same(b.streamBytes, [16 * MiB, 16 * MiB, 16 * MiB, 16 * MiB], 'split into 8 MiB ranges: four equal streams');
  t.ok(b.makespanMs < a.makespanMs / 3.5, `makespan ${a.makespanMs.toFixed(0)} -> ${b.makespanMs.toFixed(0)} ms`);
});

t.test('stealing rebalances when streams run at different speeds', async (t) => {
  // 16 equal 1 MiB files over 2 streams, but stream 1 is 4x slower. The window is sized near
  // the fast stream's bandwidth-delay product (12.5 MB/s * 20 ms = 250 kB = 4 x 64 KiB): a
  // window far above the BDP hands whole units to the send buffer early, and a unit that has
  // started can no longer be stolen.
  const s = setup(Array.from({ length: 16 }, () => Array.from({ length: 16 }, () => 64 * KiB)));
  const link = { oneWayLatencyMs: 10, bandwidthBytesPerMs: [12_500, 3_125] };
  const still = run(s, scheduleLpt(s.units, 2), { link, maxInFlightChunks: 4, steal: false });
  const stolen = run(s, scheduleLpt(s.units, 2), { link, maxInFlightChunks: 4, steal: true });
  checkExactlyOnce(t, s, stolen, 4);
  // Ideal: 16 MiB over 15.625 MB/s combined.
  const ideal = (16 * MiB) / 15_625;
  t.equal(still.stolenUnits, 0);
  t.ok(stolen.stolenUnits > 0, `${stolen.stolenUnits} units stolen`);
  t.ok(stolen.streamBytes[0]! > stolen.streamBytes[1]!, 'the fast stream carried more');
  t.ok(
    stolen.makespanMs < 0.6 * still.makespanMs,
    `makespan ${still.makespanMs.toFixed(0)} -> ${stolen.makespanMs.toFixed(0)} ms`,
  );
  t.ok(stolen.makespanMs < 1.35 * ideal, `within 35% of the ideal ${ideal.toFixed(0)} ms`);
});

t.test('loss as extra delay slows the transfer but keeps exactly-once delivery, deterministically', async (t) => {
  const s = setup(Array.from({ length: 12 }, (_, i) => Array.from({ length: 8 + i }, () => 16 * KiB)));
  const clean = run(s, scheduleLpt(s.units, 3), { link: LINK_100_MBIT, maxInFlightChunks: 16, steal: true });
  const lossy = { ...LINK_100_MBIT, loss: { probability: 0.05, extraDelayMs: RTT_MS, seed: 42 } };
  const a = run(s, scheduleLpt(s.units, 3), { link: lossy, maxInFlightChunks: 16, steal: true });
  const b = run(s, scheduleLpt(s.units, 3), { link: lossy, maxInFlightChunks: 16, steal: true });
  checkExactlyOnce(t, s, a, 16);
  t.ok(
    a.makespanMs > clean.makespanMs,
    `loss costs time: ${clean.makespanMs.toFixed(0)} -> ${a.makespanMs.toFixed(0)} ms`,
  );
  t.equal(a.makespanMs, b.makespanMs, 'same seed, same result');
  t.equal(a.events, b.events);
});

t.test('dedup and resume: only lacking chunks travel, each once', async (t) => {
  // Two files share all their chunks; the receiver already holds half of them (an aborted attempt).
  const [f0] = makeManifests([Array.from({ length: 40 }, () => 8 * KiB)]);
  const files: FileManifest[] = [f0!, { ...f0!, path: 'copy' }];
  const lacking = f0!.chunks.filter((_, i) => i % 2 === 1).map((c) => c.id);
  const plan = planTransfer(files, lacking);
  const s: Setup = { files, lacking, plan, units: splitIntoUnits(plan, { maxUnitBytes: 64 * KiB }) };
  const r = run(s, scheduleLpt(s.units, 2), { link: LINK_100_MBIT, maxInFlightChunks: 8, steal: true });
  checkExactlyOnce(t, s, r, 8);
  t.equal(r.sends.size, 20, 'half of one file travels');
  t.equal(plan.stats.chunksSkipped, 60);
});

t.test('a receiver that stops acking is detected by the stall timer, not waited on forever', async (t) => {
  const s = setup([Array.from({ length: 64 }, () => 4 * KiB), Array.from({ length: 64 }, () => 4 * KiB)], 64 * KiB);
  const r = run(s, scheduleLpt(s.units, 2), {
    link: LINK_100_MBIT,
    maxInFlightChunks: 8,
    steal: false,
    stallTimeoutMs: 2000,
    receiverHangsAfterFrames: 20,
  });
  t.notOk(r.allDone);
  t.same(r.stalls.map((x) => x.stream).sort(), [0, 1], 'both streams report a stall');
  for (const stall of r.stalls) {
    t.match(stall.error.message, /stream stalled: .* no ack for 2000 ms/);
    const lastAck = r.lastAckMs[stall.stream]!;
    t.ok(lastAck > 0, 'some acks arrived before the hang');
    t.equal(
      stall.atMs,
      lastAck + 2000,
      `stream ${stall.stream}: stall reported exactly 2000 ms after its last ack (${lastAck.toFixed(1)} ms)`,
    );
  }
  t.ok([...r.acks.values()].reduce((a, b) => a + b, 0) <= 20, 'no acks after the hang');
});
