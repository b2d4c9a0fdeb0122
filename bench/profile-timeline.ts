// Where the wall time of processes that worked together went: reads their V8 CPU profiles
// (`node --cpu-prof`; bench/sync-initial.ts and bench/transfer.ts take --cpu-prof DIR) and
// says, per time bucket, how busy each main thread was and on what: the outermost and the
// innermost clawpeer function of the stacks sampled there. Profiles of one machine share a
// clock (V8 stamps samples with the monotonic clock), so the buckets line up across processes:
// a stretch where one process is busy while the other idles is serial work, the first thing to
// overlap (the first sync's, bench/results/sync-initial-phases.json).
// Non-goals: threads other than the main one (V8 profiles only that), flame graphs.
// Run: node <outDir>/bench/profile-timeline.js [--bucket-ms N] [--from-us T] [--to-us T]
//      NAME=FILE.cpuprofile ...   (JSON on stdout; --from-us/--to-us in the profiles' clock)
import { readFile } from 'node:fs/promises';
import { round, runAsScript } from './common.js';

interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string };
  readonly children?: readonly number[];
}

interface CpuProfile {
  readonly nodes: readonly ProfileNode[];
  readonly startTime: number;
  readonly endTime: number;
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

export interface ProcessBucket {
  /** Share of this bucket's samples that were not idle, percent. */
  readonly busyPct: number;
  /** The most sampled stacks' "outermost > innermost clawpeer function" (or the native frame), with their samples. */
  readonly top: readonly (readonly [string, number])[];
}

export interface TimelineBucket {
  /** Bucket start, ms from the first profile's start. */
  readonly atMs: number;
  readonly processes: Readonly<Record<string, ProcessBucket | undefined>>;
}

/** The name a stack is counted under: its outermost and innermost clawpeer frames (`dir/module#function`). */
function stackLabel(nodeId: number, byId: Map<number, ProfileNode>, parent: Map<number, number>): string {
  const own: string[] = [];
  for (let id: number | undefined = nodeId; id !== undefined; id = parent.get(id)) {
    const frame = byId.get(id)?.callFrame;
    if (frame === undefined) break;
    const at = frame.url.lastIndexOf('/src/');
    if (at >= 0) own.push(`${frame.url.slice(at + 5).replace(/\.js$/, '')}#${frame.functionName || '(anonymous)'}`);
  }
  if (own.length === 0) return byId.get(nodeId)?.callFrame.functionName ?? '?';
  return own.length === 1 ? own[0]! : `${own[own.length - 1]!} > ${own[0]!}`;
}

/** Busy share and top stacks per bucket of each profile, on the profiles' shared clock. */
export function timeline(
  profiles: ReadonlyMap<string, CpuProfile>,
  bucketMs: number,
  fromUs = Number.NEGATIVE_INFINITY,
  toUs = Number.POSITIVE_INFINITY,
): TimelineBucket[] {
  const originUs = Math.max(fromUs, Math.min(...[...profiles.values()].map((p) => p.startTime)));
  type Counts = { all: number; busy: number; labels: Map<string, number> };
  const buckets = new Map<number, Map<string, Counts>>();
  for (const [name, p] of profiles) {
    const byId = new Map(p.nodes.map((n) => [n.id, n]));
    const parent = new Map<number, number>();
    for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
    let t = p.startTime;
    for (let i = 0; i < p.samples.length; i++) {
      t += p.timeDeltas[i] ?? 0;
      if (t < fromUs || t > toUs) continue;
      const index = Math.floor((t - originUs) / 1000 / bucketMs);
      let byProcess = buckets.get(index);
      if (byProcess === undefined) buckets.set(index, (byProcess = new Map<string, Counts>()));
      let b = byProcess.get(name);
      if (b === undefined) byProcess.set(name, (b = { all: 0, busy: 0, labels: new Map() }));
      b.all++;
      const sample = p.samples[i]!;
      if (byId.get(sample)?.callFrame.functionName === '(idle)') continue;
      b.busy++;
      const label = stackLabel(sample, byId, parent);
      b.labels.set(label, (b.labels.get(label) ?? 0) + 1);
    }
  }
  return [...buckets.entries()]
    .sort((x, y) => x[0] - y[0])
    .map(([index, byProcess]) => ({
      atMs: index * bucketMs,
      processes: Object.fromEntries(
        [...profiles.keys()].map((name) => {
          const b = byProcess.get(name);
          if (b === undefined) return [name, undefined];
          const top = [...b.labels].sort((x, y) => y[1] - x[1]).slice(0, 2);
          return [name, { busyPct: round((100 * b.busy) / b.all, 0), top }];
        }),
      ),
    }));
}

runAsScript(import.meta.url, async (args) => {
  const {
    bucketMs = 250,
    fromUs,
    toUs,
  } = args.numbers({ bucketMs: '--bucket-ms', fromUs: '--from-us', toUs: '--to-us' });
  const files = args.argv.filter((a, i) => a.includes('=') && !args.argv[i - 1]?.startsWith('--'));
  if (files.length === 0) throw new Error('name at least one profile: NAME=FILE.cpuprofile');
  const profiles = new Map<string, CpuProfile>();
  for (const spec of files) {
    const at = spec.indexOf('=');
    profiles.set(spec.slice(0, at), JSON.parse(await readFile(spec.slice(at + 1), 'utf8')) as CpuProfile);
  }
  return { bucketMs, buckets: timeline(profiles, bucketMs, fromUs, toUs) };
});
