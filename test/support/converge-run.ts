// Runs convergence schedules as tap subtests: one fresh cluster per schedule, seeds from
// CLAWPEER_CONVERGE_SEED (one schedule, exactly that seed) or consecutive from a base seed.
// Env: CLAWPEER_CONVERGE_RUNS, CLAWPEER_CONVERGE_NODES, CLAWPEER_CONVERGE_OPS,
// CLAWPEER_CONVERGE_FAULTS (0/1), CLAWPEER_CONVERGE_VERBOSE=1 (every step as it runs).
import type { Test } from 'tap';
import { ConvergeCluster, cliPairSync, type PairSync } from './converge-cluster.js';
import { runSchedule } from './converge-schedule.js';

export interface ConvergeDefaults {
  readonly runs: number;
  readonly nodes: number;
  readonly ops: number;
  readonly faults: boolean;
  /** First seed of the consecutive run (each schedule prints its own). */
  readonly baseSeed: number;
  readonly sync?: PairSync;
}

function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got ${raw}`);
  return n;
}

/** The seeds to run and the settings, defaults overridden by the environment. */
export function convergeSettings(d: ConvergeDefaults): { seeds: number[]; nodes: number; ops: number; faults: boolean } {
  const only = process.env['CLAWPEER_CONVERGE_SEED'];
  const runs = envNumber('CLAWPEER_CONVERGE_RUNS', d.runs);
  const base = envNumber('CLAWPEER_CONVERGE_BASE_SEED', d.baseSeed);
  const seeds = only !== undefined && only !== '' ? [envNumber('CLAWPEER_CONVERGE_SEED', 0)] : Array.from({ length: runs }, (_, k) => base + k);
  const nodes = envNumber('CLAWPEER_CONVERGE_NODES', d.nodes);
  if (nodes < 2) throw new Error('CLAWPEER_CONVERGE_NODES must be at least 2');
  return { seeds, nodes, ops: envNumber('CLAWPEER_CONVERGE_OPS', d.ops), faults: envNumber('CLAWPEER_CONVERGE_FAULTS', d.faults ? 1 : 0) === 1, };
}

/** One tap subtest per seed; a failure prints the seed, what differed and the schedule's trace. */
export async function convergeSuite(t: Test, d: ConvergeDefaults): Promise<void> {
  const s = convergeSettings(d);
  const verbose = process.env['CLAWPEER_CONVERGE_VERBOSE'] === '1';
  let passed = 0;
  const started = Date.now();
  // One cluster for all schedules (setting one up is ~20 CLI runs), emptied between them.
  let cluster: ConvergeCluster | undefined;
  t.teardown(() => cluster?.stop());
  for (const seed of s.seeds) {
    await t.test(`seed ${seed}: ${s.nodes} nodes, ${s.ops} steps${s.faults ? ', faults' : ''} converge with nothing lost`, { timeout: 15 * 60_000 }, async (t) => {
      if (cluster === undefined) cluster = await ConvergeCluster.create(s.nodes);
      else await cluster.reset();
      {
        const r = await runSchedule(cluster, { seed, ops: s.ops, faults: s.faults, sync: d.sync ?? cliPairSync, ...(verbose ? { log: (l: string) => t.comment(l) } : {}) });
        t.comment(`seed ${seed}: ${r.syncs} syncs, ${r.quiesceRounds} quiesce rounds, ${(r.ms / 1000).toFixed(1)} s`);
        if (r.failures.length > 0) {
          t.comment(`reproduce: CLAWPEER_CONVERGE_SEED=${seed} CLAWPEER_CONVERGE_NODES=${s.nodes} CLAWPEER_CONVERGE_OPS=${s.ops} CLAWPEER_CONVERGE_FAULTS=${s.faults ? 1 : 0}`);
          if (!verbose) for (const line of r.trace) t.comment(line);
        } else passed++;
        t.same(r.failures, [], `seed ${seed} converged`);
      }
    });
  }
  const minutes = (Date.now() - started) / 60_000;
  t.comment(`${passed}/${s.seeds.length} schedules passed in ${minutes.toFixed(1)} min (${(s.seeds.length / Math.max(minutes, 1e-9)).toFixed(2)} schedules/min)`);
}
