// Fault injection, full run: cut trials 7..13 of 20 (seeded; alternating push and pull). See test/fault/README.md.
import t from 'tap';
import { trialSuite } from '../../fault/fault-harness.js';

const TRIALS = Number(process.env['FAULT_TRIALS'] ?? 20);
const FIRST = Math.floor((TRIALS * 7) / 20);
await trialSuite(t, {
  kind: 'cut',
  first: FIRST,
  count: Math.floor((TRIALS * 14) / 20) - FIRST,
  seed: Number(process.env['FAULT_SEED'] ?? 20261130),
  bigBytes: 8 << 20,
  cutMs: 10_000,
  delayPerChunkMs: 100,
});
