// A randomized kill test of sync: nodes (an array; node 0 runs `listen` serving its folder, the
// others `sync` theirs with it), a seeded schedule of creates, overwrites, appends, deletes,
// renames, chmods and conflicting edits, a sync after each step, and SIGKILL of the sync client
// (20-800 ms in) or of the listener (restarted on the same port) at random. Then final syncs
// without kills, and the oracle:
//   - every folder equal (paths, kinds, bytes, modes), and a final sync says inSync;
//   - no content that was never written (folders, conflict copies, history blobs);
//   - every version a completed sync left on all nodes still present somewhere (a folder, a
//     conflict copy or .clawpeer/history);
//   - no temp files (`.clawpeer-tmp-*`) outside .clawpeer;
//   - no resurrected deletion (a path deleted where every node agreed on it, and not touched
//     since, is gone everywhere);
//   - no sync that exits 0 without its done record, and no sync failing with an error that is
//     not about the kill (a connection closed, a peer busy, a timeout).
// Two nodes is the pair of issue 34; more nodes make it the hub-shaped start of the N-device
// convergence test (clients sync only with node 0: a mesh needs more listeners, see `hub`).
// Everything comes from prng(seed): a failure prints the seed that replays it.
import { createHash } from 'node:crypto';
import { appendFile, chmod, lstat, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { mkdtemp } from 'node:fs/promises';
import { PeerStore } from '../../src/home/peer-store.js';
import type { RunningListener } from '../e2e/cli-harness.js';
import { newHome, prng, seededBytes, sleep, spawnCli, startListenerOn, type CliRun } from '../fault/fault-harness.js';

export interface KillScheduleOptions {
  readonly seed: number;
  /** Steps (one change, then one sync) before the final syncs. */
  readonly steps: number;
  /** Nodes in all (at least 2); node 0 listens. */
  readonly nodes?: number;
  /** Chance per sync that the client is SIGKILLed, and that the listener is (then restarted). */
  readonly clientKillRate: number;
  readonly listenerKillRate: number;
  /** When a kill lands after the sync starts, ms (uniform). */
  readonly killAfterMs?: readonly [number, number];
  /** Final syncs without kills allowed before the nodes must have converged. */
  readonly settleRounds?: number;
  /** Largest file a change writes (a few are this big, to give kills a window mid-transfer). */
  readonly bigBytes?: number;
  /** Extra `sync` options (e.g. --transport tcp). */
  readonly syncArgs?: readonly string[];
  /** Added to each sync's environment (e.g. a short idle timeout, test-hooks.ts). */
  readonly syncEnv?: NodeJS.ProcessEnv;
}

export interface KillScheduleResult {
  readonly seed: number;
  /** What broke an oracle rule; empty when the schedule passed. */
  readonly failures: string[];
  /** What happened, step by step (print the tail on failure). */
  readonly log: string[];
  readonly stats: {
    syncs: number;
    completed: number;
    clientKills: number;
    listenerKills: number;
    failedSyncs: number;
    errorCodes: Record<string, number>;
  };
}

export interface KillNode {
  readonly index: number;
  readonly home: string;
  readonly id: string;
  readonly dir: string;
}

const SHARE = 'f';
/** File names the schedule uses: few, so changes collide (conflicts) often. */
const NAMES = ['a.txt', 'b.bin', 'c.txt', 'd/e.txt', 'd/f.bin', 'g.txt'];
/** Errors a kill may cause; any other failure of a sync is a bug. */
const KILL_ERRORS = new Set([
  'CONNECTION_CLOSED',
  'TIMEOUT',
  'UNREACHABLE',
  'PEER_BUSY',
  'FOLDER_BUSY',
  'CANCELLED',
  'ABORTED',
]);

/** A sync may still fail for a kill this long ago (the listener's side of a killed client's session lives until its idle timeout). */
const RECENT_KILL_MS = 30_000;
/** A sync that has not exited by then hangs (a bug). */
const SYNC_HANG_MS = 120_000;

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

/** The conflict copies' shape (sync/conflict.ts). */
export function isConflictCopy(p: string): boolean {
  return /\.sync-conflict-\d{8}-\d{6}-[^/.]+(\.[^/]*)?$/.test(p);
}

interface FileState {
  readonly digest: string;
  readonly mode: number;
}

/** Files under `dir` (not .clawpeer), by relative path; `temps` collects clawpeer temp names. */
async function readFolder(dir: string, temps: string[] = []): Promise<Map<string, FileState>> {
  const out = new Map<string, FileState>();
  const walk = async (abs: string, rel: string): Promise<void> => {
    let names: string[];
    try {
      names = (await readdir(abs)).sort();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    for (const name of names) {
      if (rel === '' && name === '.clawpeer') continue;
      const r = rel === '' ? name : `${rel}/${name}`;
      if (name.startsWith('.clawpeer')) temps.push(r);
      const st = await lstat(path.join(abs, name));
      if (st.isDirectory()) await walk(path.join(abs, name), r);
      else if (st.isFile()) out.set(r, { digest: sha(await readFile(path.join(abs, name))), mode: st.mode & 0o777 });
      else out.set(r, { digest: `other:${st.mode}`, mode: 0 });
    }
  };
  await walk(dir, '');
  return out;
}

/** Digests of the history blobs of `dir`. */
async function historyDigests(dir: string): Promise<Set<string>> {
  const out = new Set<string>();
  const h = path.join(dir, '.clawpeer', 'history');
  let names: string[] = [];
  try {
    names = await readdir(h);
  } catch {
    return out;
  }
  for (const n of names) {
    try {
      out.add(sha(await readFile(path.join(h, n))));
    } catch {
      // a blob gc removed meanwhile
    }
  }
  return out;
}

/** One schedule's world: the nodes, node 0's listener, and what the schedule did (the model). */
export class KillWorld {
  readonly log: string[] = [];
  readonly failures: string[] = [];
  readonly written = new Set<string>([sha(new Uint8Array(0))]);
  /**
   * Digests every node held after a completed sync: they must survive, unless every node's user
   * destroyed its copy (overwrote, appended to or deleted it before a sync could keep it): the
   * nodes that still hold each one.
   */
  readonly agreed = new Map<string, Set<number>>();
  /** Paths deleted where every node agreed on them (not touched elsewhere since the last converged sync). */
  readonly cleanDeletes = new Set<string>();
  /** Per path, the nodes that changed it since the last converged sync. */
  readonly touched = new Map<string, Set<number>>();
  readonly stats: KillScheduleResult['stats'] = {
    syncs: 0,
    completed: 0,
    clientKills: 0,
    listenerKills: 0,
    failedSyncs: 0,
    errorCodes: {},
  };
  listener!: RunningListener;
  port = 0;
  #writes = 0;
  #lastKillAt = 0;

  private constructor(
    readonly work: string,
    readonly nodes: readonly KillNode[],
    readonly random: () => number,
    readonly o: KillScheduleOptions,
  ) {}

  static async create(o: KillScheduleOptions): Promise<KillWorld> {
    const work = await mkdtemp(path.join(tmpdir(), `clawpeer-sync-kill-${o.seed}-`));
    const count = Math.max(2, o.nodes ?? 2);
    const nodes: KillNode[] = [];
    for (let i = 0; i < count; i++) {
      const { home, id } = await newHome(`kill-${i}`);
      const dir = path.join(work, `node${i}`);
      await mkdir(dir, { recursive: true });
      nodes.push({ index: i, home, id, dir });
    }
    const hub = nodes[0]!;
    const hubPeers = new PeerStore(path.join(hub.home, 'peers.json'));
    for (const n of nodes.slice(1)) await hubPeers.add(n.id, `node${n.index}`);
    const world = new KillWorld(work, nodes, prng(o.seed), o);
    world.listener = await startListenerOn(hub.home, 0, ['--share', `${SHARE}=${hub.dir}`]);
    world.port = world.listener.port;
    for (const n of nodes.slice(1))
      await new PeerStore(path.join(n.home, 'peers.json')).add(hub.id, 'hub', `127.0.0.1:${world.port}`);
    return world;
  }

  note(line: string): void {
    this.log.push(line);
  }

  fail(line: string): void {
    this.failures.push(line);
    this.note(`FAIL ${line}`);
  }

  #int(lo: number, hi: number): number {
    return lo + Math.floor(this.random() * (hi - lo + 1));
  }

  #pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.random() * items.length)]!;
  }

  /** `node`'s user is about to destroy its copy of `rel` (overwrite in place, append, delete). */
  async #destroying(node: KillNode, rel: string): Promise<void> {
    let digest: string;
    try {
      digest = sha(await readFile(path.join(node.dir, ...rel.split('/'))));
    } catch {
      return;
    }
    const holders = this.agreed.get(digest);
    if (holders === undefined) return;
    holders.delete(node.index);
    if (holders.size === 0) this.agreed.delete(digest);
  }

  #touch(p: string, node: number): void {
    let s = this.touched.get(p);
    if (s === undefined) this.touched.set(p, (s = new Set()));
    s.add(node);
    this.cleanDeletes.delete(p);
  }

  /** New content, unique to this write; a few are big (a window for kills mid-transfer). */
  #content(): Buffer {
    const n = ++this.#writes;
    const roll = this.random();
    const size =
      roll < 0.15
        ? this.#int(this.o.bigBytes ?? 3 << 20, this.o.bigBytes ?? 3 << 20)
        : roll < 0.3
          ? this.#int(100_000, 600_000)
          : this.#int(1, 4000);
    const body = seededBytes(this.o.seed * 100_003 + n, size);
    body.write(`#${n} `, 0, 'latin1'); // never two writes with one content
    return body;
  }

  async #existing(node: KillNode): Promise<string[]> {
    return [...(await readFolder(node.dir)).keys()].filter((p) => !isConflictCopy(p));
  }

  /** Writes `data` at `rel` in `node`'s folder: in place when small, else a new file renamed over (a reader never sees half of it). */
  async #write(node: KillNode, rel: string, data: Buffer, how: 'create' | 'overwrite'): Promise<void> {
    const abs = path.join(node.dir, ...rel.split('/'));
    await mkdir(path.dirname(abs), { recursive: true });
    this.written.add(sha(data));
    await this.#destroying(node, rel);
    if (data.length < 64 * 1024 && how === 'overwrite') await writeFile(abs, data);
    else {
      const tmp = path.join(this.work, `.~kill-${this.#writes}.part`); // beside the folders, never in one
      await writeFile(tmp, data);
      await rename(tmp, abs);
    }
    this.#touch(rel, node.index);
  }

  /** One random change in one random node's folder (or a conflicting edit in two). */
  async change(step: number): Promise<void> {
    const node = this.#pick(this.nodes);
    const existing = await this.#existing(node);
    const roll = this.random();
    const target = existing.length > 0 ? this.#pick(existing) : undefined;
    if (target === undefined || roll < 0.2) {
      const free = NAMES.filter((n) => !existing.includes(n));
      const rel = free.length > 0 ? this.#pick(free) : this.#pick(NAMES);
      await this.#write(node, rel, this.#content(), 'create');
      this.note(`step ${step}: node${node.index} create ${rel}`);
    } else if (roll < 0.35) {
      await this.#write(node, target, this.#content(), 'overwrite');
      this.note(`step ${step}: node${node.index} overwrite ${target}`);
    } else if (roll < 0.47) {
      const abs = path.join(node.dir, ...target.split('/'));
      const extra = seededBytes(this.o.seed * 7 + step, this.#int(1, 50_000));
      await this.#destroying(node, target);
      await appendFile(abs, extra);
      this.written.add(sha(await readFile(abs)));
      this.#touch(target, node.index);
      this.note(`step ${step}: node${node.index} append ${target}`);
    } else if (roll < 0.6) {
      const others = [...(this.touched.get(target) ?? [])].filter((i) => i !== node.index);
      await this.#destroying(node, target);
      await rm(path.join(node.dir, ...target.split('/')));
      this.#touch(target, node.index);
      if (others.length === 0) this.cleanDeletes.add(target);
      this.note(
        `step ${step}: node${node.index} delete ${target}${others.length === 0 ? '' : ' (concurrent with an edit elsewhere)'}`,
      );
    } else if (roll < 0.7) {
      const free = NAMES.filter((n) => !existing.includes(n));
      if (free.length === 0) return this.change(step);
      const to = this.#pick(free);
      await mkdir(path.dirname(path.join(node.dir, ...to.split('/'))), { recursive: true });
      await rename(path.join(node.dir, ...target.split('/')), path.join(node.dir, ...to.split('/')));
      this.#touch(target, node.index);
      this.#touch(to, node.index);
      this.note(`step ${step}: node${node.index} rename ${target} -> ${to}`);
    } else if (roll < 0.8) {
      const mode = this.#pick([0o600, 0o644, 0o755]);
      await chmod(path.join(node.dir, ...target.split('/')), mode);
      this.#touch(target, node.index);
      this.note(`step ${step}: node${node.index} chmod ${target} ${mode.toString(8)}`);
    } else {
      // The same path changed on two nodes before they sync: a conflict.
      const other = this.#pick(this.nodes.filter((n) => n !== node));
      const rel = this.#pick(NAMES);
      await this.#write(node, rel, this.#content(), 'overwrite');
      await this.#write(other, rel, this.#content(), 'overwrite');
      this.note(`step ${step}: conflicting edits of ${rel} on node${node.index} and node${other.index}`);
    }
  }

  async restartListener(): Promise<void> {
    await this.listener.stop('SIGKILL');
    for (let attempt = 0; ; attempt++) {
      try {
        this.listener = await startListenerOn(this.nodes[0]!.home, this.port, [
          '--share',
          `${SHARE}=${this.nodes[0]!.dir}`,
        ]);
        return;
      } catch (err) {
        if (attempt >= 10) throw err;
        await sleep(200);
      }
    }
  }

  /** One sync of `client` with node 0, maybe killed; judges its outcome. Returns whether it completed in sync. */
  async sync(
    client: KillNode,
    what: string,
    kill: 'client' | 'listener' | undefined,
  ): Promise<{ completed: boolean; inSync: boolean }> {
    this.stats.syncs++;
    const started = Date.now();
    const run: CliRun = spawnCli(
      client.home,
      ['sync', client.dir, `hub:${SHARE}`, ...(this.o.syncArgs ?? [])],
      this.o.syncEnv,
    );
    let killed = false;
    let killer: Promise<void> = Promise.resolve();
    if (kill !== undefined) {
      const [lo, hi] = this.o.killAfterMs ?? [20, 800];
      const after = this.#int(lo, hi);
      // From the start, or from the sync's first output (its scan or transfer under way): a
      // CLI's start takes most of 800 ms on a busy machine, and kills should land mid-sync too.
      const fromOutput = this.random() < 0.5;
      killer = (async () => {
        if (fromOutput) await run.waitFor(() => true);
        await Promise.race([sleep(after), run.exited]);
        if (run.child.exitCode !== null) return; // it finished first
        killed = true;
        this.#lastKillAt = Date.now();
        if (kill === 'client') {
          this.stats.clientKills++;
          await run.kill('SIGKILL');
        } else {
          this.stats.listenerKills++;
          await this.restartListener();
        }
        this.note(`  ${kill} SIGKILLed ${after} ms after ${fromOutput ? 'the first output' : 'the start'}`);
      })();
    }
    let hangTimer: NodeJS.Timeout | undefined;
    const code = await Promise.race([
      run.exited,
      new Promise<'hung'>((resolve) => (hangTimer = setTimeout(resolve, SYNC_HANG_MS, 'hung'))),
    ]);
    clearTimeout(hangTimer);
    await killer;
    const ms = Date.now() - started;
    if (code === 'hung') {
      await run.kill('SIGKILL');
      this.fail(`${what}: sync did not exit within ${SYNC_HANG_MS} ms; stderr: ${run.stderr().slice(-500)}`);
      return { completed: false, inSync: false };
    }
    const done = run.events.find((e) => e['event'] === 'done');
    const error = run.events.find((e) => e['event'] === 'error');
    const errorMessage = typeof error?.['message'] === 'string' ? error['message'] : undefined;
    if (code === 0) {
      if (done === undefined)
        this.fail(
          `${what}: sync exited 0 without its done record (${ms} ms); stdout ${JSON.stringify(run.events.slice(-3))} stderr ${run.stderr().slice(-300)}`,
        );
      this.stats.completed++;
      const inSync = done?.['inSync'] === true;
      this.note(
        `  ${what}: done in ${ms} ms, inSync ${String(inSync)}, conflicts ${String(done?.['conflicts'])}${killed ? ` (finished despite the ${String(kill)} kill)` : ''}`,
      );
      return { completed: done !== undefined, inSync };
    }
    this.stats.failedSyncs++;
    const codeName =
      typeof error?.['code'] === 'string' ? error['code'] : code === null ? 'SIGKILL' : `exit ${String(code)}`;
    this.stats.errorCodes[codeName] = (this.stats.errorCodes[codeName] ?? 0) + 1;
    this.note(`  ${what}: exit ${String(code)} ${codeName} in ${ms} ms: ${(errorMessage ?? '').slice(0, 200)}`);
    if (code === null) {
      if (!(killed && kill === 'client')) this.fail(`${what}: sync died of a signal nobody sent`);
    } else if (!killed && !(KILL_ERRORS.has(codeName) && Date.now() - this.#lastKillAt < RECENT_KILL_MS)) {
      this.fail(`${what}: sync failed with no kill: ${codeName}: ${errorMessage ?? run.stderr().slice(-300)}`);
    } else if (!KILL_ERRORS.has(codeName))
      this.fail(
        `${what}: a ${String(kill)} kill made the sync fail with ${codeName}, not a connection error: ${errorMessage ?? run.stderr().slice(-300)}`,
      );
    return { completed: false, inSync: false };
  }

  /** After a completed, in-sync sync of every client: what all nodes hold is agreed. */
  async recordAgreement(): Promise<void> {
    const folders = await Promise.all(this.nodes.map((n) => readFolder(n.dir)));
    const first = folders[0]!;
    for (const [p, f] of first) {
      if (folders.every((m) => m.get(p)?.digest === f.digest))
        this.agreed.set(f.digest, new Set(this.nodes.map((n) => n.index)));
    }
    this.touched.clear();
  }

  /** The oracle, once the schedule settled. */
  async check(): Promise<void> {
    const temps: string[] = [];
    const folders = await Promise.all(this.nodes.map((n) => readFolder(n.dir, temps)));
    for (const t of temps) this.fail(`temp file left: ${t}`);
    const [hub, ...rest] = folders;
    rest.forEach((m, i) => {
      const diffs: string[] = [];
      for (const p of new Set([...hub!.keys(), ...m.keys()])) {
        const a = hub!.get(p);
        const b = m.get(p);
        if (a === undefined || b === undefined) diffs.push(`${p} only on node${a === undefined ? i + 1 : 0}`);
        else if (a.digest !== b.digest) diffs.push(`${p} differs`);
        else if (a.mode !== b.mode) diffs.push(`${p} mode ${a.mode.toString(8)} vs ${b.mode.toString(8)}`);
      }
      if (diffs.length > 0) this.fail(`node0 and node${i + 1} differ after settling: ${diffs.join('; ')}`);
    });
    const present = new Set<string>();
    for (const m of folders) for (const f of m.values()) present.add(f.digest);
    const history = new Set<string>();
    for (const n of this.nodes) for (const d of await historyDigests(n.dir)) history.add(d);
    for (const [i, m] of folders.entries()) {
      for (const [p, f] of m)
        if (!this.written.has(f.digest)) this.fail(`node${i} ${p} holds content that was never written`);
    }
    for (const d of history)
      if (!this.written.has(d)) this.fail(`a history blob holds content that was never written (${d.slice(0, 12)})`);
    for (const d of this.agreed.keys())
      if (!present.has(d) && !history.has(d))
        this.fail(`a version every node held after a completed sync is gone (${d.slice(0, 12)})`);
    for (const p of this.cleanDeletes) {
      for (const [i, m] of folders.entries())
        if (m.has(p)) this.fail(`${p} was deleted (no concurrent edit) but is back on node${i}`);
    }
  }

  async close(): Promise<void> {
    await this.listener.stop('SIGKILL');
    if (this.failures.length === 0) await rm(this.work, { recursive: true, force: true });
  }
}

/** Runs one seeded schedule and its oracle. */
export async function runKillSchedule(o: KillScheduleOptions): Promise<KillScheduleResult> {
  const world = await KillWorld.create(o);
  const random = world.random;
  try {
    const clients = world.nodes.slice(1);
    for (let step = 0; step < o.steps; step++) {
      await world.change(step);
      const client = clients[Math.floor(random() * clients.length)]!;
      const roll = random();
      const kill =
        roll < o.clientKillRate ? 'client' : roll < o.clientKillRate + o.listenerKillRate ? 'listener' : undefined;
      const r = await world.sync(client, `step ${step} sync node${client.index}`, kill);
      // With one client, a completed in-sync sync means both nodes agree; with more, only the
      // two that synced do (agreement across N nodes is the N-device test's to add).
      if (r.completed && r.inSync && clients.length === 1) await world.recordAgreement();
    }
    // Settle: rounds of syncs without kills until every client is in sync and the folders agree.
    const rounds = o.settleRounds ?? 4;
    let settled = false;
    for (let round = 0; round < rounds && !settled; round++) {
      let all = true;
      for (const c of clients) {
        const r = await world.sync(c, `settle ${round} node${c.index}`, undefined);
        all &&= r.completed && r.inSync;
      }
      if (all && clients.length > 1)
        for (const c of clients)
          all &&= (await world.sync(c, `settle ${round} recheck node${c.index}`, undefined)).inSync;
      settled = all;
    }
    if (!settled) world.fail(`the nodes did not converge within ${rounds} rounds of syncs without kills`);
    await world.check();
  } catch (err) {
    world.fail(`schedule crashed: ${(err as Error).stack ?? String(err)}`);
  } finally {
    await world.close();
  }
  if (world.failures.length > 0) world.note(`replay: CLAWPEER_KILL_SEED=${o.seed} (folders kept in ${world.work})`);
  return { seed: o.seed, failures: world.failures, log: world.log, stats: world.stats };
}
