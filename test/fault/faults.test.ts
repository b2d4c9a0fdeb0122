// CI subset of the fault-injection trials (the full 20-per-kind run is test/slow/fault): one
// small transfer each through 5% loss, a link cut mid-transfer, and a SIGKILL of the sender (a
// push's client) and of the receiver (a pull's client) at a seeded random moment. Every trial:
// no file at a final path ever differs from its source (polled during the run), and a clean
// rerun completes byte-identical. Killing the listener costs its client's idle timeout per
// trial: that case runs in the slow suite.
import t from 'tap';
import { checkTrial, DELAY_ENV, runTrial, startRig, type TrialKind } from './fault-harness.js';

const SEED = Number(process.env['FAULT_SEED'] ?? 20261130);
const rig = await startRig('ci', { listenEnv: DELAY_ENV });
t.teardown(() => rig.close());

const cases: { kind: TrialKind; direction: 'push' | 'pull'; delayPerChunkMs?: number }[] = [
  { kind: 'loss', direction: 'push' },
  { kind: 'kill-sender', direction: 'push' },
  { kind: 'kill-receiver', direction: 'pull' },
  // Slower sends so the 2 s cut lands while chunks are in flight.
  { kind: 'cut', direction: 'push', delayPerChunkMs: 60 },
];
for (const [i, c] of cases.entries()) {
  t.test(`${c.kind} (${c.direction})`, async (t) => {
    const r = await runTrial({
      rig, kind: c.kind, direction: c.direction, index: i, seed: SEED + i, bigBytes: 1 << 20, killWindowMs: 2500, cutMs: 2000,
      ...(c.delayPerChunkMs === undefined ? {} : { delayPerChunkMs: c.delayPerChunkMs }),
    });
    checkTrial(t, r, c.kind === 'loss');
  });
}
