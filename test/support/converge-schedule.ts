// A seeded random schedule of file operations, syncs and faults on a ConvergeCluster, then
// quiesce and the convergence checks (test/slow/converge.test.ts and its short twin in npm test).
//
// Same seed, same schedule: every choice comes from one PRNG (mulberry32) seeded by the run's
// seed, printed with every failure (CLAWPEER_CONVERGE_SEED=n reproduces it). What the schedule
// cannot make identical is timing (how far a sync got when its listener was SIGKILLed).
//
// Checks after quiesce (sync rounds over the line until a round changes nothing):
//   identical: every node's folder holds the same paths, kinds, bytes, modes, file mtimes and
//     directories (directory mtimes are not synced), and no temp file is left over;
//   nothing lost (checked around every sync, killed ones too): every content a node held before
//     a sync it took part in is still there after it: live, as a conflict copy, or as a history
//     blob (what the user overwrote or deleted by hand is the user's business, not checked);
//   no resurrection: then files and directories deleted on some nodes are gone everywhere after
//     a quiesce, and stay gone after a listener restart and another quiesce.
//
// Folder mode (cluster.folders): the listeners sync by themselves, so a sync step is a pause
// (the user's think time) while they work, a link cut is the link's forwarder cut, a kill
// strikes a listener a random moment after the last step (often mid-sync), quiesce polls the
// nodes' status (converge-folder-mode.ts) and "nothing lost" is checked against what the
// schedule wrote (WriteLedger) after the last quiesce.
import { createHash } from 'node:crypto';
import { chmod, lstat, mkdir, open, readdir, readFile, rename, rm, rmdir, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { ConvergeCluster, ConvergeNode, PairSync, PairSyncOutcome } from './converge-cluster.js';
import { jsonLines, runCli } from '../e2e/cli-harness.js';
import { walkTree } from '../e2e/tree-helpers.js';
import { syncingNow, waitQuiet, WriteLedger } from './converge-folder-mode.js';

/** mulberry32: a small, fast, well-mixed 32-bit PRNG; the whole schedule hangs off one. */
export function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let x = s;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

export interface ScheduleOptions {
  readonly seed: number;
  /** Steps (file operations, syncs and faults together). */
  readonly ops: number;
  readonly faults: boolean;
  /** Percent of file steps that change a path's type (a file to a directory or back); unset: 4% of the rest. */
  readonly typeChangePercent?: number;
  /** Pair mode's sync (unused in folder mode). */
  readonly sync: PairSync;
  /** Folder mode: how long a quiesce may take, ms (default 120 s). */
  readonly quietTimeoutMs?: number;
  /** Progress lines (default: none). */
  readonly log?: (line: string) => void;
}

export interface ScheduleResult {
  readonly seed: number;
  /** Empty when every check passed. */
  readonly failures: string[];
  /** What the schedule did, one line a step (for reading a failure). */
  readonly trace: string[];
  readonly syncs: number;
  readonly quiesceRounds: number;
  readonly ms: number;
  /** Folder mode: ms spent waiting for quiet (all quiesces), and in the steps before the first. */
  readonly quietMs?: number;
  readonly stepsMs?: number;
  /** Folder mode: what held each quiesce up (converge-folder-mode.ts QuietResult.heldBy). */
  readonly quietHeldBy?: readonly string[];
  /** Faults struck: listener kills (of which mid-sync, folder mode), link cuts, clock skews. */
  readonly faultCounts?: { kills: number; midSyncKills: number; cuts: number; skews: number };
}

const DIRS = ['d0', 'd1', 'd0/e0', 'd2', 'd1/e1'];
const FILES = ['f0', 'f1', 'f2', 'f3.txt', 'f4.md', 'f5', 'g0', 'g1.bin'];
const MAX_QUIESCE_ROUNDS = 8;
/** Errors of a file operation that raced a listener's change of the same folder (folder mode). */
const RACE_CODES = new Set(['ENOENT', 'ENOTDIR', 'EISDIR', 'EEXIST', 'ENOTEMPTY']);
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

interface Entry {
  readonly path: string;
  readonly kind: 'file' | 'dir' | 'other';
  readonly mode: number;
  readonly size: number;
  readonly mtimeMs: number;
  readonly sha: string;
}

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const isTemp = (name: string): boolean => name.startsWith('.clawpeer-tmp-');

/** Every entry of a folder but `.clawpeer/`, path order. */
export async function folderEntries(root: string): Promise<Entry[]> {
  const out: Entry[] = [];
  for (const { rel: r, abs, st } of await walkTree(root)) {
    if (st.isDirectory()) out.push({ path: r, kind: 'dir', mode: st.mode & 0o7777, size: 0, mtimeMs: 0, sha: '' });
    else if (st.isFile())
      out.push({
        path: r,
        kind: 'file',
        mode: st.mode & 0o7777,
        size: st.size,
        mtimeMs: st.mtimeMs,
        sha: sha(await readFile(abs)),
      });
    else out.push({ path: r, kind: 'other', mode: 0, size: 0, mtimeMs: 0, sha: '' });
  }
  return out;
}

/** Digests of the history blobs a node keeps. */
async function historyDigests(folder: string): Promise<string[]> {
  const dir = path.join(folder, '.clawpeer', 'history');
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const out: string[] = [];
  for (const n of names) {
    try {
      out.push(sha(await readFile(path.join(dir, n))));
    } catch {
      // a blob a concurrent gc took: not in our schedule
    }
  }
  return out;
}

const describe = (e: Entry): string =>
  `${e.kind} ${e.path} mode ${e.mode.toString(8)}${e.kind === 'file' ? ` ${e.size} B mtime ${e.mtimeMs.toFixed(3)} ${e.sha.slice(0, 8)}` : ''}`;

/** Paths whose entries differ between two folders. */
function differingPaths(a: Entry[], b: Entry[]): string[] {
  const key = (e: Entry): string => `${e.kind}:${e.mode}:${e.sha}`;
  const am = new Map(a.map((e) => [e.path, key(e)]));
  const bm = new Map(b.map((e) => [e.path, key(e)]));
  return [...new Set([...am.keys(), ...bm.keys()])].filter((p) => am.get(p) !== bm.get(p)).sort();
}

/** What differs between two folders' entry lists (a few lines). */
function differences(a: Entry[], b: Entry[]): string[] {
  const am = new Map(a.map((e) => [e.path, e]));
  const bm = new Map(b.map((e) => [e.path, e]));
  const out: string[] = [];
  for (const p of [...new Set([...am.keys(), ...bm.keys()])].sort()) {
    const x = am.get(p);
    const y = bm.get(p);
    // Within a millisecond: the log carries ns, a node sets a file's time through utimes (double seconds, ms here).
    if (
      x !== undefined &&
      y !== undefined &&
      describe({ ...x, mtimeMs: 0 }) === describe({ ...y, mtimeMs: 0 }) &&
      Math.abs(x.mtimeMs - y.mtimeMs) < 1
    )
      continue;
    out.push(`${x === undefined ? '(none)' : describe(x)}  vs  ${y === undefined ? '(none)' : describe(y)}`);
  }
  return out;
}

/** Runs one schedule on `cluster` (fresh, empty folders) and checks the result. */
export async function runSchedule(cluster: ConvergeCluster, o: ScheduleOptions): Promise<ScheduleResult> {
  const started = Date.now();
  const rand = prng(o.seed);
  const int = (n: number): number => Math.floor(rand() * n);
  const pick = <T>(xs: readonly T[]): T => {
    const x = xs[int(xs.length)];
    if (x === undefined) throw new TypeError('pick from an empty list');
    return x;
  };
  const trace: string[] = [];
  const failures: string[] = [];
  const note = (line: string): void => {
    trace.push(line);
    o.log?.(line);
  };
  const cut = new Map<number, number>(); // link index -> steps left
  const folders = cluster.folders;
  const ledger = new WriteLedger();
  let quietMs = 0;
  const quietHeldBy: string[] = [];
  const faultCounts = { kills: 0, midSyncKills: 0, cuts: 0, skews: 0 };
  let stepsMs = 0;
  let syncs = 0;
  let writeSerial = 0;
  let step = 0;

  const abs = (node: ConvergeNode, rel: string): string => path.join(node.folder, ...rel.split('/'));
  const content = (): Buffer => {
    const sizes = [0, 1 + int(64), 200 + int(3000), 20_000 + int(60_000)];
    const size = pick(sizes);
    const b = Buffer.alloc(size);
    for (let i = 0; i < size; i++) b[i] = int(256);
    // Every write distinct, so "every version" means every write.
    const tag = Buffer.from(`#${o.seed}:${writeSerial++}#`);
    return size === 0 ? b : Buffer.concat([tag, b]);
  };
  /**
   * What a write of `target` puts there: content(), but never the bytes it holds already. An
   * empty file written over an empty file is only a touch (a revision of the same content with
   * a new time, folder-scanner.ts), not a new version the checks could tell apart.
   */
  const contentFor = async (target: string): Promise<Buffer> => {
    const c = content();
    if (c.length > 0) return c;
    const st = await lstat(target).catch(() => undefined);
    return st?.isFile() === true && st.size === 0 ? Buffer.from(`#${o.seed}:${writeSerial++}#`) : c;
  };
  /** A write on a node happened "now" by that node's clock. */
  const stamp = async (node: ConvergeNode, p: string): Promise<void> => {
    if (node.skewMs === 0) return;
    const when = new Date(Date.now() + node.skewMs);
    await utimes(p, when, when);
  };
  const entries = async (node: ConvergeNode): Promise<Entry[]> =>
    (await folderEntries(node.folder)).filter((e) => !isTemp(path.posix.basename(e.path)));
  const filesOf = async (node: ConvergeNode): Promise<string[]> =>
    (await entries(node)).filter((e) => e.kind === 'file').map((e) => e.path);
  const dirsOf = async (node: ConvergeNode): Promise<string[]> =>
    (await entries(node)).filter((e) => e.kind === 'dir').map((e) => e.path);
  const newFilePath = async (node: ConvergeNode): Promise<string> => {
    const dirs = ['', ...(await dirsOf(node)).filter((d) => !d.includes('.sync-conflict-')), pick(DIRS)];
    const d = pick(dirs);
    return d === '' ? pick(FILES) : `${d}/${pick(FILES)}`;
  };

  /** Every content a node holds: live files (conflict copies among them) and history blobs. */
  const holdings = async (node: ConvergeNode): Promise<Map<string, string>> => {
    const out = new Map<string, string>();
    for (const e of await entries(node)) if (e.kind === 'file') out.set(e.sha, e.path);
    for (const h of await historyDigests(node.folder)) if (!out.has(h)) out.set(h, '(history)');
    return out;
  };

  const doSync = async (li: number, faultAt?: { victim: ConvergeNode; afterMs: number }): Promise<PairSyncOutcome> => {
    const [i, j] = cluster.links[li] ?? [0, 0];
    const [a, b] = rand() < 0.5 ? [cluster.node(i), cluster.node(j)] : [cluster.node(j), cluster.node(i)];
    const before = [await holdings(a), await holdings(b)];
    let kill: Promise<void> | undefined;
    const out = await o.sync(a, b, {
      onStarted: () => {
        if (faultAt !== undefined)
          kill = new Promise((r) => setTimeout(r, faultAt.afterMs)).then(() => cluster.killListener(faultAt.victim));
      },
    });
    if (kill !== undefined) await kill;
    syncs++;
    note(
      `  sync ${a.name}->${b.name}${faultAt === undefined ? '' : ` (kill ${faultAt.victim.name} at ${faultAt.afterMs} ms)`}: ${out.ok ? `sent ${out.revisionsSent} received ${out.revisionsReceived}${out.skipped.length > 0 ? ` skipped ${out.skipped.join(',')}` : ''}` : (out.error ?? 'failed')}`,
    );
    // Nothing lost: a sync (even one killed midway) never destroys content a node held; what it
    // replaces or deletes is kept in history, a losing edit as a conflict copy.
    for (const [k, node] of [a, b].entries()) {
      const after = await holdings(node);
      for (const [h, where] of before[k] ?? []) {
        if (!after.has(h))
          failures.push(
            `lost: content ${h.slice(0, 8)} (${where}) of ${node.name} is gone after sync ${a.name}->${b.name} (step ${step})`,
          );
      }
    }
    if (faultAt !== undefined) await cluster.startListener(faultAt.victim);
    return out;
  };

  const liveLinks = (): number[] => cluster.links.map((_, k) => k).filter((k) => !cut.has(k));

  const isDir = async (p: string): Promise<boolean> => (await lstat(p).catch(() => undefined))?.isDirectory() === true;
  /** mkdir -p; false (the op is dropped) where a file stands on the way (a type change made it one). */
  const makeDirs = async (dir: string): Promise<boolean> =>
    mkdir(dir, { recursive: true }).then(
      () => true,
      (err: unknown) => {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'EEXIST' || code === 'ENOTDIR') return false;
        throw err;
      },
    );
  /** A file becomes a directory holding a file, or (half the time) a directory a file. */
  const typeChangeOp = async (node: ConvergeNode, f: string, files: readonly string[]): Promise<void> => {
    const dirs = (await dirsOf(node)).filter((d) => !d.includes('.sync-'));
    if (rand() < 0.5 || dirs.length === 0) {
      const fa = abs(node, f);
      await ledger.destroying(fa);
      await rm(fa);
      await mkdir(fa);
      const inside = path.join(fa, pick(FILES));
      await writeFile(inside, await contentFor(inside));
      await stamp(node, inside);
      await ledger.wrote(inside, `${node.name}:${f}/${path.basename(inside)}`);
      note(`${node.name}: file to dir ${f} (with ${path.basename(inside)})`);
      return;
    }
    const d = pick(dirs);
    const da = abs(node, d);
    for (const x of files) if (x.startsWith(`${d}/`)) await ledger.destroying(abs(node, x));
    await rm(da, { recursive: true });
    await writeFile(da, await contentFor(da));
    await stamp(node, da);
    await ledger.wrote(da, `${node.name}:${d}`);
    note(`${node.name}: dir to file ${d}`);
  };

  const fileOp = async (node: ConvergeNode): Promise<void> => {
    const files = await filesOf(node);
    // Drawn only when asked for, so a seed's schedule without it stays what it was.
    const share = o.typeChangePercent;
    if (share !== undefined && files.length > 0 && rand() < share / 100) return typeChangeOp(node, pick(files), files);
    const r = int(100);
    if (r < 25 || files.length === 0) {
      const p = await newFilePath(node);
      if (await isDir(abs(node, p))) return; // a file turned into a directory: no file of that name
      if (!(await makeDirs(path.dirname(abs(node, p))))) return;
      const exists = files.includes(p);
      await ledger.destroying(abs(node, p));
      await writeFile(abs(node, p), await contentFor(abs(node, p)));
      await stamp(node, abs(node, p));
      await ledger.wrote(abs(node, p), `${node.name}:${p}`);
      note(`${node.name}: ${exists ? 'overwrite' : 'create'} ${p}`);
      return;
    }
    const f = pick(files);
    const fa = abs(node, f);
    if (r < 38) {
      // Whole-file replace as an editor saves: a new inode renamed over the name.
      const tmp = `${fa}.edit~`;
      await writeFile(tmp, await contentFor(fa));
      await stamp(node, tmp);
      await ledger.destroying(fa);
      await rename(tmp, fa);
      await ledger.wrote(fa, `${node.name}:${f}`);
      note(`${node.name}: replace ${f}`);
    } else if (r < 48) {
      await ledger.destroying(fa);
      const h = await open(fa, 'r+');
      try {
        const size = (await h.stat()).size;
        const patch = Buffer.from(`<${o.seed}:${writeSerial++}>`);
        await h.write(patch, 0, patch.length, size === 0 ? 0 : int(size));
      } finally {
        await h.close();
      }
      await stamp(node, fa);
      await ledger.wrote(fa, `${node.name}:${f}`);
      note(`${node.name}: edit in place ${f}`);
    } else if (r < 58) {
      await ledger.destroying(fa);
      await writeFile(fa, `+${o.seed}:${writeSerial++}\n`, { flag: 'a' });
      await stamp(node, fa);
      await ledger.wrote(fa, `${node.name}:${f}`);
      note(`${node.name}: append ${f}`);
    } else if (r < 70) {
      await ledger.destroying(fa);
      await rm(fa);
      note(`${node.name}: delete ${f}`);
    } else if (r < 80) {
      const to = await newFilePath(node);
      if (to === f || files.includes(to) || (await isDir(abs(node, to)))) return;
      if (!(await makeDirs(path.dirname(abs(node, to))))) return;
      await rename(fa, abs(node, to));
      note(`${node.name}: rename ${f} -> ${to}`);
    } else if (r < 88) {
      const mode = pick([0o644, 0o600, 0o755, 0o640]);
      await chmod(fa, mode);
      note(`${node.name}: chmod ${mode.toString(8)} ${f}`);
    } else if (r < 91) {
      const d = pick(DIRS);
      if (!(await makeDirs(abs(node, d)))) return;
      note(`${node.name}: mkdir ${d}`);
    } else if (r < 95) {
      await typeChangeOp(node, f, files);
    } else {
      const dirs = await dirsOf(node);
      if (dirs.length === 0) return;
      const d = pick(dirs);
      const to = pick(DIRS);
      if (to === d || to.startsWith(`${d}/`) || dirs.includes(to) || files.some((x) => x === to)) {
        // An empty directory goes instead, when there is one.
        const empty = [];
        for (const x of dirs) if ((await readdir(abs(node, x))).length === 0) empty.push(x);
        if (empty.length === 0) return;
        const e = pick(empty);
        await rmdir(abs(node, e));
        note(`${node.name}: rmdir ${e}`);
        return;
      }
      if (!(await makeDirs(path.dirname(abs(node, to))))) return;
      await rename(abs(node, d), abs(node, to));
      note(`${node.name}: rename dir ${d} -> ${to}`);
    }
  };

  /** The same path edited on two or three nodes before they sync. */
  const conflictOp = async (): Promise<void> => {
    const n = cluster.nodes.length;
    const count = Math.min(n, 2 + int(2));
    const chosen = new Set<number>();
    while (chosen.size < count) chosen.add(int(n));
    const first = cluster.node([...chosen][0] ?? 0);
    const files = await filesOf(first);
    const p = files.length > 0 && rand() < 0.7 ? pick(files) : await newFilePath(first);
    for (const k of chosen) {
      const node = cluster.node(k);
      const target = abs(node, p);
      await mkdir(path.dirname(target), { recursive: true }).catch(() => undefined);
      try {
        await ledger.destroying(target);
        await writeFile(target, await contentFor(target));
        await stamp(node, target);
        await ledger.wrote(target, `${node.name}:${p}`);
      } catch {
        continue; // a directory of that name there: no edit on this node
      }
    }
    note(`conflict: ${p} written on ${[...chosen].map((k) => cluster.node(k).name).join(',')}`);
  };

  const faultOp = async (): Promise<void> => {
    const r = int(100);
    if (r < 50 && folders) {
      // A kill a random moment after the last step: the listeners are often mid-sync then.
      const victim = pick(cluster.nodes);
      const afterMs = 20 + int(700);
      await sleep(afterMs);
      const midSync = await syncingNow(victim);
      await cluster.killListener(victim);
      faultCounts.kills++;
      if (midSync) faultCounts.midSyncKills++;
      note(
        `fault: SIGKILL listener ${victim.name} ${afterMs} ms after the last step${midSync ? ' (mid-sync)' : ''}, restart`,
      );
      cluster.startSoon(victim);
    } else if (r < 50) {
      const links = liveLinks();
      if (links.length === 0) return;
      const li = pick(links);
      const [i, j] = cluster.links[li] ?? [0, 0];
      const victim = cluster.node(rand() < 0.5 ? i : j);
      await doSync(li, { victim, afterMs: 20 + int(700) });
    } else if (r < 65) {
      const node = pick(cluster.nodes);
      await cluster.killListener(node);
      faultCounts.kills++;
      note(`fault: SIGKILL listener ${node.name} (idle), restart`);
      if (folders) cluster.startSoon(node);
      else await cluster.startListener(node);
    } else if (r < 85) {
      const li = int(cluster.links.length);
      cut.set(li, 3 + int(10));
      if (folders) cluster.cutLink(li);
      faultCounts.cuts++;
      const [i, j] = cluster.links[li] ?? [0, 0];
      note(`fault: cut link n${i}-n${j}`);
    } else {
      const node = pick(cluster.nodes);
      node.skewMs = rand() < 0.25 ? 0 : (rand() < 0.5 ? -1 : 1) * (60_000 + int(10 * 60_000));
      faultCounts.skews++;
      note(`fault: clock of ${node.name} skewed ${node.skewMs} ms (listener restarted)`);
      if (folders) {
        await cluster.killListener(node);
        cluster.startSoon(node);
      } else await cluster.restartListener(node);
    }
  };

  o.log?.(`schedule seed ${o.seed}: ${cluster.nodes.length} nodes, ${o.ops} steps${o.faults ? ', faults' : ''}`);
  let quiesceRounds = 0;
  try {
    for (step = 0; step < o.ops; step++) {
      for (const [li, left] of [...cut]) {
        if (left > 1) {
          cut.set(li, left - 1);
          continue;
        }
        cut.delete(li);
        if (folders) {
          cluster.healLink(li);
          note(`fault: heal link n${cluster.links[li]?.[0] ?? 0}-n${cluster.links[li]?.[1] ?? 0}`);
        }
      }
      const r = int(100);
      try {
        if (r < 40) await fileOp(pick(cluster.nodes));
        else if (r < 48) await conflictOp();
        else if (o.faults && r < 56) await faultOp();
        else if (folders) {
          // The user's think time, while the listeners sync.
          const ms = 50 + int(600);
          note(`pause ${ms} ms`);
          await sleep(ms);
        } else {
          const links = liveLinks();
          if (links.length > 0) await doSync(pick(links));
        }
      } catch (err) {
        // In folder mode a listener changes the folder under the schedule's feet (a file it
        // picked is renamed or deleted by a sync): the step is skipped, not a failure.
        const code = (err as NodeJS.ErrnoException).code ?? '';
        if (!folders || !RACE_CODES.has(code)) throw err;
        note(`  (step skipped: ${code}, the listener changed the folder meanwhile)`);
      }
    }
    stepsMs = Date.now() - started;

    /** Sync rounds (the line forth and back) until a round changes nothing; returns the rounds run. */
    const quiesce = async (label: string): Promise<number> => {
      if (folders) {
        for (const li of cut.keys()) cluster.healLink(li);
        cut.clear();
        const q = await waitQuiet(cluster, identicalNow, o.quietTimeoutMs ?? 120_000);
        quietMs += q.ms;
        quietHeldBy.push(`${label} ${(q.ms / 1000).toFixed(1)} s: ${q.heldBy || 'nothing'}`);
        note(
          `  ${label}: ${q.ok ? 'quiet' : 'NOT quiet'} after ${q.ms} ms (${q.polls} status polls; held by: ${q.heldBy || 'nothing'})${q.ok ? '' : `: ${q.last}`}`,
        );
        if (!q.ok) failures.push(`${label}: not quiet after ${q.ms} ms: ${q.last}`);
        return 1;
      }
      cut.clear();
      const order = [...cluster.links.keys(), ...[...cluster.links.keys()].reverse()];
      for (let round = 1; round <= MAX_QUIESCE_ROUNDS; round++) {
        let changed = false;
        for (const li of order) {
          let out = await doSync(li);
          for (let retry = 0; !out.ok && retry < 2; retry++) out = await doSync(li);
          if (!out.ok) failures.push(`${label}: sync over link ${li} keeps failing: ${out.error ?? ''}`);
          if (!out.ok || out.revisionsSent > 0 || out.revisionsReceived > 0 || out.skipped.length > 0) changed = true;
        }
        if (!changed) return round;
      }
      failures.push(`${label}: not quiet after ${MAX_QUIESCE_ROUNDS} rounds`);
      return MAX_QUIESCE_ROUNDS;
    };

    /** Each node's log of `paths` (`clawpeer log --json`), for reading a divergence. */
    const logsOf = async (paths: readonly string[]): Promise<string[]> => {
      const out: string[] = [];
      for (const p of paths) {
        for (const n of cluster.nodes) {
          const r = await runCli(['--home', n.home, 'log', abs(n, p), '--json'], { timeoutMs: 120_000 });
          const revs = r.code === 0 ? jsonLines(r.stdout) : [];
          out.push(
            `log of ${p} on ${n.name}: ${r.code === 0 ? revs.map((x) => `${String(x['what'])}${x['head'] === true ? '*' : ''} by ${String(x['by'])}`).join(', ') : r.stderr.trim()}`,
          );
        }
      }
      return out;
    };

    const checkIdentical = async (label: string): Promise<Entry[]> => {
      const all = await Promise.all(cluster.nodes.map((n) => folderEntries(n.folder)));
      const base = all[0] ?? [];
      for (const [k, e] of all.entries()) {
        const temps = e.filter((x) => isTemp(path.posix.basename(x.path)));
        if (temps.length > 0)
          failures.push(`${label}: temp files left on n${k}: ${temps.map((x) => x.path).join(', ')}`);
        if (k === 0) continue;
        const d = differences(base, e);
        if (d.length > 0) {
          failures.push(`${label}: n0 and n${k} differ:\n    ${d.slice(0, 8).join('\n    ')}`);
          for (const line of await logsOf(differingPaths(base, e).slice(0, 2))) note(line);
        }
      }
      return base;
    };

    /** The folders on disk are identical now (folder mode's last word on quiet). */
    const identicalNow = async (): Promise<boolean> => {
      const all = await Promise.all(cluster.nodes.map((n) => folderEntries(n.folder)));
      const base = all[0] ?? [];
      return all.every((e) => !e.some((x) => isTemp(path.posix.basename(x.path))) && differences(base, e).length === 0);
    };

    note('quiesce');
    quiesceRounds = await quiesce('quiesce');
    await checkIdentical('after quiesce');
    // Folder mode: what each node holds now it must still hold at the end (the deletions below
    // go to history on the nodes they reach), but for what the schedule itself deletes.
    const kept = folders ? await Promise.all(cluster.nodes.map((n) => holdings(n))) : [];

    // Deletions, on different nodes; then they must be gone everywhere and stay gone.
    const deleted: string[] = [];
    if (failures.length === 0) {
      for (const node of cluster.nodes) {
        if (rand() < 0.5) continue;
        const files = (await filesOf(node)).filter((f) => !deleted.includes(f));
        if (files.length === 0) continue;
        const f = pick(files);
        await ledger.destroying(abs(node, f));
        await rm(abs(node, f));
        deleted.push(f);
        note(`${node.name}: delete ${f} (resurrection check)`);
      }
      quiesceRounds += await quiesce('after deletions');
      const victim = pick(cluster.nodes);
      note(`fault: SIGKILL listener ${victim.name}, restart`);
      await cluster.restartListener(victim);
      quiesceRounds += await quiesce('after deletions and a restart');
      const after = await checkIdentical('after deletions');
      const back = after.filter((e) => deleted.includes(e.path));
      if (back.length > 0) failures.push(`deleted paths came back: ${back.map((e) => e.path).join(', ')}`);
    }
    if (folders) {
      const held = new Set<string>();
      for (const node of cluster.nodes) for (const h of (await holdings(node)).keys()) held.add(h);
      for (const l of ledger.lost(held))
        failures.push(`lost: version ${l} is on no node, live, conflict copy or history`);
      for (const [k, before] of kept.entries()) {
        const node = cluster.node(k);
        const after = await holdings(node);
        for (const [h, where] of before)
          if (!after.has(h) && !ledger.wasDestroyed(h))
            failures.push(
              `lost: content ${h.slice(0, 8)} (${where}) of ${node.name} after the first quiesce is gone from it at the end`,
            );
      }
    }
  } catch (err) {
    // A step that threw (a listener that would not start on a loaded machine, say): the schedule fails with its trace.
    failures.push(`step ${step} threw: ${err instanceof Error ? err.message : String(err)}`);
  }
  return {
    seed: o.seed,
    failures,
    trace,
    syncs,
    quiesceRounds,
    ms: Date.now() - started,
    ...(folders ? { quietMs, stepsMs, quietHeldBy, faultCounts } : {}),
  };
}
