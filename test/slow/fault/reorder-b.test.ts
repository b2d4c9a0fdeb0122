// Fault injection, full run: reorder trials 10..19 of 20 (seeded; alternating push and pull). See test/fault/README.md.
// 2 MiB trees: 5% reordering at 20 ms RTT costs QUIC ~0.3 MiB/s (reordered packets are declared lost).
import t from 'tap';
import { trialSuite } from '../../fault/fault-harness.js';

const TRIALS = Number(process.env['FAULT_TRIALS'] ?? 20);
const FIRST = Math.floor((TRIALS * 10) / 20);
await trialSuite(t, {
  kind: 'reorder',
  first: FIRST,
  count: Math.floor((TRIALS * 20) / 20) - FIRST,
  seed: Number(process.env['FAULT_SEED'] ?? 20261130),
  bigBytes: 2 << 20,
});
