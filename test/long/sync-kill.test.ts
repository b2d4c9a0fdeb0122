// Two-way sync under SIGKILL (issue 34): a sync whose listener dies mid-fetch fails with
// CONNECTION_CLOSED (it exited 0 with no output), and a short fixed set of seeded kill
// schedules (sync-kill-kit.ts; the long runs are test/slow/sync/sync-kill.test.ts).
// CLAWPEER_KILL_SEED=N runs that seed alone; CLAWPEER_KILL_COUNT=N runs N seeds from 1.
import t, { type Test } from 'tap';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { exitWithin, seededBytes, spawnCli, startRig } from '../fault/fault-harness.js';
import { runKillSchedule, type KillScheduleOptions } from './sync-kill-kit.js';

/**
 * The sync clients' idle timeout (test-hooks.ts; 15 s by default): over QUIC a client learns of
 * a killed listener only by it, as a killed process sends nothing and a restarted one's
 * stateless reset is not one this client can verify.
 */
const IDLE_MS = 6000;
const idleEnv = { CLAWPEER_TEST_IDLE_TIMEOUT_MS: String(IDLE_MS) };

/** The listener is SIGKILLed as the sync prints its first receiving progress of a 4 MiB file. */
async function killListenerAtFirstReceive(
  t: Test,
  transport: 'quic' | 'tcp',
): Promise<{ code: number | null; ms: number; events: Record<string, unknown>[]; stderr: string }> {
  // The listener sends slowly, so the kill lands mid-transfer, not after a fast loopback finished it.
  const rig = await startRig(`kill-at-receive-${transport}`, { listenEnv: { CLAWPEER_TEST_DELAY_PER_CHUNK_MS: '40' } });
  t.teardown(() => rig.close());
  await writeFile(path.join(rig.share, 'big.bin'), seededBytes(34, 4 << 20));
  const run = spawnCli(
    rig.b.home,
    ['sync', path.join(rig.work, 'mine'), 'alice:inbox', '--transport', transport],
    idleEnv,
  );
  t.ok(await run.waitFor((e) => e['event'] === 'progress' && e['phase'] === 'receiving'), 'the sync started receiving');
  await rig.listener.stop('SIGKILL');
  const killed = Date.now();
  const code = await exitWithin(run, 60_000, 'the sync whose listener died');
  return { code, ms: Date.now() - killed, events: run.events, stderr: run.stderr() };
}

for (const transport of ['tcp', 'quic'] as const) {
  t.test(
    `listener SIGKILLed at the first receiving progress (${transport}): exit 4 CONNECTION_CLOSED, not 0 with nothing`,
    async (t) => {
      const r = await killListenerAtFirstReceive(t, transport);
      t.equal(r.code, 4, `exit 4; stderr: ${r.stderr}`);
      t.match(r.events.at(-1), { event: 'error', code: 'CONNECTION_CLOSED', exitCode: 4 }, 'its error record');
      t.notOk(
        r.events.some((e) => e['event'] === 'done'),
        'no done record',
      );
      // Worded by whichever notices first: the read's own idle wait or QUIC's (the same timeout).
      t.match(r.stderr, /clawpeer: .*(closed|connection lost)/, 'said on stderr');
      // TCP: the kernel resets the connection at once. QUIC: the client's idle timeout.
      const bound = transport === 'tcp' ? 5_000 : IDLE_MS + 15_000;
      t.ok(r.ms < bound, `reported ${r.ms} ms after the kill (< ${bound})`);
    },
  );
}

const envInt = (name: string): number | undefined =>
  process.env[name] === undefined || process.env[name] === '' ? undefined : Number(process.env[name]);
const only = envInt('CLAWPEER_KILL_SEED');
const count = envInt('CLAWPEER_KILL_COUNT');
// A short fixed set: one schedule over QUIC (a listener killed mid-sync costs its client its
// idle timeout there: a short one), one over TCP (the kernel tells at once, so more kills fit).
const fixed: readonly { seed: number; transport: 'quic' | 'tcp' }[] = [
  { seed: 3401, transport: 'quic' },
  { seed: 3402, transport: 'tcp' },
];
const runs =
  only !== undefined
    ? [{ seed: only, transport: 'quic' as const }]
    : count !== undefined
      ? Array.from({ length: count }, (_, i) => ({ seed: i + 1, transport: 'quic' as const }))
      : fixed;

for (const { seed, transport } of runs) {
  t.test(`seeded kill schedule ${seed} over ${transport}`, async (t) => {
    const o: KillScheduleOptions = {
      seed,
      steps: envInt('CLAWPEER_KILL_STEPS') ?? 8,
      clientKillRate: 0.25,
      listenerKillRate: 0.2,
      bigBytes: 2 << 20,
      syncEnv: idleEnv,
      ...(transport === 'tcp' ? { syncArgs: ['--transport', 'tcp'] } : {}),
    };
    const r = await runKillSchedule(o);
    t.comment(`seed ${seed}: ${JSON.stringify(r.stats)}`);
    t.same(r.failures, [], `seed ${seed} (replay with CLAWPEER_KILL_SEED=${seed}):\n${r.log.slice(-60).join('\n')}`);
  });
}
