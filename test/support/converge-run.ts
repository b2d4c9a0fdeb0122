// Runs convergence schedules as tap subtests: one fresh cluster per schedule, seeds from
// CLAWPEER_CONVERGE_SEED (one schedule, exactly that seed) or consecutive from a base seed.
// Env: CLAWPEER_CONVERGE_RUNS, CLAWPEER_CONVERGE_NODES, CLAWPEER_CONVERGE_OPS,
// CLAWPEER_CONVERGE_FAULTS (0/1), CLAWPEER_CONVERGE_VERBOSE=1 (every step as it runs),
// CLAWPEER_CONVERGE_MODE (folder: the listeners' configured folders sync, the default; pair:
// `clawpeer sync` between two nodes), CLAWPEER_CONVERGE_RECORD (a JSON file every schedule's
// outcome is appended to: seed, nodes, steps, faults, pass, seconds, load),
// CLAWPEER_CONVERGE_LOG_DIR (a failed schedule's listener logs, folder logs and trace are written there).
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { loadavg } from 'node:os';
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
  /** Pair mode's sync (default cliPairSync); folder mode uses none. */
  readonly sync?: PairSync;
  /** 'folder' (default) or 'pair'. */
  readonly mode?: ConvergeMode;
}

export type ConvergeMode = 'folder' | 'pair';

/** One schedule's outcome, as recorded in CLAWPEER_CONVERGE_RECORD. */
export interface ConvergeRunRecord {
  readonly at: string;
  readonly mode: ConvergeMode;
  readonly seed: number;
  readonly nodes: number;
  readonly ops: number;
  readonly faults: boolean;
  readonly pass: boolean;
  readonly seconds: number;
  /** Folder mode: seconds of the steps, and of waiting for quiet (all quiesces). */
  readonly stepsSeconds?: number;
  readonly quietSeconds?: number;
  /** Folder mode: each quiesce's time and what held it up. */
  readonly quietHeldBy?: readonly string[];
  /** Folder mode: the faults that struck (kills, of which mid-sync; link cuts; clock skews). */
  readonly faultCounts?: {
    readonly kills: number;
    readonly midSyncKills: number;
    readonly cuts: number;
    readonly skews: number;
  };
  /** 1-minute load average at the start and the end of the schedule (2 cores). */
  readonly load: readonly [number, number];
  /** The code that ran (CLAWPEER_CONVERGE_BUILD, e.g. a commit), when given. */
  readonly build?: string;
  /** Percent of file steps that were type changes (CLAWPEER_CONVERGE_TYPE_CHANGES), when set. */
  readonly typeChangePercent?: number;
  readonly failures?: readonly string[];
}

/** Appends `r` to the JSON array in `file` (made when missing). */
async function record(file: string, r: ConvergeRunRecord): Promise<void> {
  const text = await readFile(file, 'utf8').catch(() => '[]');
  const runs = JSON.parse(text) as ConvergeRunRecord[];
  runs.push(r);
  await writeFile(file, `${JSON.stringify(runs, null, 1)}\n`);
}

function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got ${raw}`);
  return n;
}

/** CLAWPEER_CONVERGE_TYPE_CHANGES: percent (0-100) of file steps that change a path's type; unset: the usual few. */
function typeChangePercent(): number | undefined {
  const raw = process.env['CLAWPEER_CONVERGE_TYPE_CHANGES'];
  if (raw === undefined || raw === '') return undefined;
  const n = envNumber('CLAWPEER_CONVERGE_TYPE_CHANGES', 0);
  if (n > 100) throw new Error(`CLAWPEER_CONVERGE_TYPE_CHANGES is a percent, got ${raw}`);
  return n;
}

/** The seeds to run and the settings, defaults overridden by the environment. */
export function convergeSettings(d: ConvergeDefaults): {
  seeds: number[];
  nodes: number;
  ops: number;
  faults: boolean;
  mode: ConvergeMode;
  typeChangePercent: number | undefined;
} {
  const only = process.env['CLAWPEER_CONVERGE_SEED'];
  const runs = envNumber('CLAWPEER_CONVERGE_RUNS', d.runs);
  const base = envNumber('CLAWPEER_CONVERGE_BASE_SEED', d.baseSeed);
  const seeds =
    only !== undefined && only !== ''
      ? [envNumber('CLAWPEER_CONVERGE_SEED', 0)]
      : Array.from({ length: runs }, (_, k) => base + k);
  const nodes = envNumber('CLAWPEER_CONVERGE_NODES', d.nodes);
  if (nodes < 2) throw new Error('CLAWPEER_CONVERGE_NODES must be at least 2');
  const mode = process.env['CLAWPEER_CONVERGE_MODE'] ?? d.mode ?? 'folder';
  if (mode !== 'folder' && mode !== 'pair')
    throw new Error(`CLAWPEER_CONVERGE_MODE must be folder or pair, got ${mode}`);
  return {
    seeds,
    nodes,
    ops: envNumber('CLAWPEER_CONVERGE_OPS', d.ops),
    faults: envNumber('CLAWPEER_CONVERGE_FAULTS', d.faults ? 1 : 0) === 1,
    mode,
    typeChangePercent: typeChangePercent(),
  };
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
    await t.test(
      `seed ${seed} (${s.mode} mode): ${s.nodes} nodes, ${s.ops} steps${s.faults ? ', faults' : ''} converge with nothing lost`,
      { timeout: 15 * 60_000 },
      async (t) => {
        if (cluster === undefined) cluster = await ConvergeCluster.create(s.nodes, { folders: s.mode === 'folder' });
        else await cluster.reset();
        {
          const load0 = loadavg()[0] ?? 0;
          const scheduleStart = Date.now();
          const r = await runSchedule(cluster, {
            seed,
            ops: s.ops,
            faults: s.faults,
            sync: d.sync ?? cliPairSync,
            ...(s.typeChangePercent === undefined ? {} : { typeChangePercent: s.typeChangePercent }),
            ...(verbose ? { log: (l: string) => t.comment(l) } : {}),
          });
          const seconds = (ms: number): number => Math.round(ms / 100) / 10;
          t.comment(
            `seed ${seed}: ${s.mode === 'pair' ? `${r.syncs} syncs, ${r.quiesceRounds} quiesce rounds, ` : `steps ${seconds(r.stepsMs ?? 0)} s, waiting for quiet ${seconds(r.quietMs ?? 0)} s, `}${seconds(r.ms)} s in all`,
          );
          const file = process.env['CLAWPEER_CONVERGE_RECORD'];
          const build = process.env['CLAWPEER_CONVERGE_BUILD'];
          if (file !== undefined && file !== '') {
            await record(file, {
              at: new Date().toISOString(),
              mode: s.mode,
              seed,
              nodes: s.nodes,
              ops: s.ops,
              faults: s.faults,
              pass: r.failures.length === 0,
              seconds: seconds(r.ms),
              ...(r.stepsMs === undefined ? {} : { stepsSeconds: seconds(r.stepsMs) }),
              ...(r.quietMs === undefined ? {} : { quietSeconds: seconds(r.quietMs) }),
              ...(r.quietHeldBy === undefined ? {} : { quietHeldBy: r.quietHeldBy }),
              ...(r.faultCounts === undefined ? {} : { faultCounts: r.faultCounts }),
              load: [Math.round(load0 * 100) / 100, Math.round((loadavg()[0] ?? 0) * 100) / 100],
              ...(build === undefined || build === '' ? {} : { build }),
              ...(s.typeChangePercent === undefined ? {} : { typeChangePercent: s.typeChangePercent }),
              ...(r.failures.length === 0 ? {} : { failures: r.failures.map((f) => f.slice(0, 500)) }),
            });
          }
          if (r.failures.length > 0) {
            t.comment(
              `reproduce: CLAWPEER_CONVERGE_SEED=${seed} CLAWPEER_CONVERGE_NODES=${s.nodes} CLAWPEER_CONVERGE_OPS=${s.ops} CLAWPEER_CONVERGE_FAULTS=${s.faults ? 1 : 0} CLAWPEER_CONVERGE_MODE=${s.mode}`,
            );
            if (!verbose) for (const line of r.trace) t.comment(line);
            const logDir = process.env['CLAWPEER_CONVERGE_LOG_DIR'];
            if (logDir !== undefined && logDir !== '') {
              await mkdir(logDir, { recursive: true });
              for (const n of cluster.nodes) {
                await writeFile(path.join(logDir, `seed-${seed}-${n.name}.log`), cluster.logsOf(n));
                await writeFile(
                  path.join(logDir, `seed-${seed}-${n.name}-folder-log.txt`),
                  await cluster.folderLogOf(n, scheduleStart),
                );
              }
              await writeFile(
                path.join(logDir, `seed-${seed}-trace.log`),
                `${r.trace.join('\n')}\n${r.failures.join('\n')}\n`,
              );
              t.comment(`listener logs and the trace in ${logDir}/seed-${seed}-*.log`);
            }
          } else passed++;
          t.same(r.failures, [], `seed ${seed} converged`);
        }
      },
    );
  }
  const minutes = (Date.now() - started) / 60_000;
  t.comment(
    `${passed}/${s.seeds.length} schedules passed in ${minutes.toFixed(1)} min (${(s.seeds.length / Math.max(minutes, 1e-9)).toFixed(2)} schedules/min)`,
  );
}
