// Slow suite: seeded kill schedules of two-way sync (test/long/sync-kill-kit.ts), longer and
// more of them than npm test runs. Defaults fit the runner's 300 s per file; a long run:
//   CLAWPEER_TEST_FILE_TIMEOUT_S=36000 CLAWPEER_KILL_COUNT=300 node scripts/run-tests.mjs dist/test/slow/sync/sync-kill.test.js
// CLAWPEER_KILL_SEED=N replays one schedule; CLAWPEER_KILL_FIRST (default 1), _COUNT, _STEPS,
// _CLIENT_RATE, _LISTENER_RATE, _NODES (2: the pair; more: clients of node 0) and
// CLAWPEER_KILL_TRANSPORT (quic, tcp) shape the run.
import t from 'tap';
import { runKillSchedule } from '../../long/sync-kill-kit.js';

const env = (name: string, fallback: number): number => {
  const raw = process.env[name];
  return raw === undefined || raw === '' ? fallback : Number(raw);
};
const only = process.env['CLAWPEER_KILL_SEED'];
const first = env('CLAWPEER_KILL_FIRST', 1);
const count = env('CLAWPEER_KILL_COUNT', 6);
const seeds = only !== undefined && only !== '' ? [Number(only)] : Array.from({ length: count }, (_, i) => first + i);
const steps = env('CLAWPEER_KILL_STEPS', 15);
const clientKillRate = env('CLAWPEER_KILL_CLIENT_RATE', 0.25);
const listenerKillRate = env('CLAWPEER_KILL_LISTENER_RATE', 0.2);
const nodes = env('CLAWPEER_KILL_NODES', 2);
const transport = process.env['CLAWPEER_KILL_TRANSPORT'] ?? 'quic';

const totals = { syncs: 0, completed: 0, clientKills: 0, listenerKills: 0 };
for (const seed of seeds) {
  t.test(
    `kill schedule ${seed} (${steps} steps, kill rates client ${clientKillRate} listener ${listenerKillRate}, ${nodes} nodes, ${transport})`,
    async (t) => {
      const r = await runKillSchedule({
        seed,
        steps,
        clientKillRate,
        listenerKillRate,
        nodes,
        syncArgs: ['--transport', transport],
      });
      for (const k of Object.keys(totals) as (keyof typeof totals)[]) totals[k] += r.stats[k];
      t.comment(`seed ${seed}: ${JSON.stringify(r.stats)}`);
      t.same(r.failures, [], `seed ${seed} (replay with CLAWPEER_KILL_SEED=${seed}):\n${r.log.slice(-80).join('\n')}`);
    },
  );
}
t.teardown(() => console.log(`# ${seeds.length} schedules: ${JSON.stringify(totals)}`));
