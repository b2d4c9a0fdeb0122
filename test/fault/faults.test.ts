// CI subset of the fault-injection trials (the full 20-per-kind run is test/slow/fault): one
// small transfer each through 5% loss, a link cut mid-transfer, and a SIGKILL of the sender (a
// push's client) and of the receiver (a pull's client) at a seeded random moment while data
// moves. Every trial: no file at a final path ever differs from its source (polled during the
// run), and a clean rerun completes byte-identical. Killing the listener costs its client's idle
// timeout per trial: that case runs in the slow suite. Right after each rerun, no staging file
// (`.clawpeer-tmp-*`) is left in the destination: a stale receiver of a killed or cut-off push
// client is superseded by the rerun (destination lock), and a pull sweeps the temp files a killed
// earlier pull left.
import t from 'tap';
import { checkTrial, isClawpeerInternal, runTrial, snapshot, startRig, type TrialKind } from './fault-harness.js';

const SEED = Number(process.env['FAULT_SEED'] ?? 20261130);
// Senders (the client of a push, the listener of a pull) wait 150 ms per DATA frame, so kills and
// the cut land while a 2 MiB tree is moving (progress events come at most every 500 ms).
const SLOW_SEND = 150;
const rig = await startRig('ci', { listenEnv: { CLAWPEER_TEST_DELAY_PER_CHUNK_MS: String(SLOW_SEND) } });
t.teardown(() => rig.close());

const cases: { kind: TrialKind; direction: 'push' | 'pull'; delayPerChunkMs?: number }[] = [
  { kind: 'loss', direction: 'push' },
  { kind: 'kill-sender', direction: 'push', delayPerChunkMs: SLOW_SEND },
  { kind: 'kill-receiver', direction: 'pull' },
  { kind: 'cut', direction: 'push', delayPerChunkMs: SLOW_SEND },
];
// The four trials run at once (none kills the listener, each has its own destination and link):
// this keeps the CI subset short, and the faults land on a busier listener.
t.test('loss, kill-sender, kill-receiver and cut trials, at once', async (t) => {
  const results = await Promise.all(
    cases.map((c, i) =>
      runTrial({
        rig,
        kind: c.kind,
        direction: c.direction,
        index: i,
        seed: SEED + i,
        bigBytes: 2 << 20,
        killWindowMs: 400,
        killAfterProgress: true,
        cutMs: 2000,
        ...(c.delayPerChunkMs === undefined ? {} : { delayPerChunkMs: c.delayPerChunkMs }),
      }),
    ),
  );
  for (const r of results) {
    checkTrial(t, r, r.kind === 'loss');
    const staging = (await snapshot(r.dest)).map((i) => i.path).filter((p) => p.split('/').some(isClawpeerInternal));
    t.same(staging, [], `${r.kind} ${r.direction}: no staging files left right after the rerun`);
  }
});
