// Shared helpers of the fault-injection, disk-full, load and security suites: a listener and a
// client home paired with each other, the impairment relay and a link that can be cut, CLI runs
// that can be killed at a seeded random moment, a watcher that records every file at a final
// path that does not match its source while a transfer runs, the trial runner, RSS sampling of
// the listener process, and the load scenario.
//
// Transfers, listeners and pings run the real CLI (bin/clawpeer.cjs over dist/) as the e2e tests
// do, so what is tested is what users run; homes (identity + pair files) are made in process.
// Loopback only. Seeds: trees, kill moments and cut moments come from prng(seed).
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import dgram from 'node:dgram';
import { lstat, mkdir, mkdtemp, readdir, readFile, readlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import type { Test } from 'tap';
import { CLI, jsonLines, runCli, startListener, type CliResult, type RunningListener } from '../e2e/cli-harness.js';
import { snapshot, type TreeItem } from '../e2e/tree-helpers.js';
import { startUdpRelay, type UdpRelay } from '../../src/relay/udp-relay.js';
import { createIdentity } from '../../src/home/identity-store.js';
import { PeerStore } from '../../src/home/peer-store.js';

export { CLI, jsonLines, runCli, snapshot, type CliResult, type TreeItem };

/** mulberry32, seeded: a failing run can be replayed from its seed (the in-memory transport's PRNG). */
import { seededRandom as prng } from '../../src/transport/memory.js';
import { procStatusKiB } from '../../bench/proc-status.js';
export { prng };

/** Incompressible bytes from a seeded PRNG (same seed, same file). */
export function seededBytes(seed: number, length: number): Buffer {
  const next = prng(seed);
  const out = Buffer.allocUnsafe(length);
  for (let i = 0; i + 4 <= length; i += 4) out.writeUInt32LE(Math.floor(next() * 4294967296), i);
  for (let i = length - (length % 4); i < length; i++) out[i] = Math.floor(next() * 256);
  return out;
}

/** A source tree of `files` files (one big, the rest small) from `seed`, under `root`. */
export async function makeSeededTree(root: string, seed: number, bigBytes: number, smallFiles = 4): Promise<void> {
  await mkdir(path.join(root, 'sub'), { recursive: true });
  await writeFile(path.join(root, 'big.bin'), seededBytes(seed, bigBytes));
  for (let i = 0; i < smallFiles; i++)
    await writeFile(path.join(root, 'sub', `small-${i}.bin`), seededBytes(seed + 1 + i, 20_000 + i * 7_000));
  await writeFile(path.join(root, 'empty.txt'), '');
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// ---------------------------------------------------------------------------------------------
// Listener process

/** Starts `clawpeer listen -v` on 127.0.0.1:`port` (0 = any) and waits for its ready line. */
export function startListenerOn(
  home: string,
  port: number,
  extra: readonly string[] = [],
  env: NodeJS.ProcessEnv = {},
  timeoutMs = 30_000,
): Promise<RunningListener> {
  return startListener(home, ['-v', ...extra], { port, env, timeoutMs });
}

/** A fresh CLAWPEER_HOME with an identity, made in process; returns its dir and node id. */
export async function newHome(label: string): Promise<{ home: string; id: string }> {
  const home = await mkdtemp(path.join(tmpdir(), `clawpeer-${label}-`));
  const identity = await createIdentity(path.join(home, 'identity.key'));
  return { home, id: identity.nodeId };
}

/** A listener home A serving `share`, and a client home B that A has paired and that pins A as "alice". */
export interface Rig {
  readonly work: string;
  readonly a: { home: string; id: string };
  readonly b: { home: string; id: string };
  readonly share: string;
  listener: RunningListener;
  /** Restarts A's listener on the same port (after a SIGKILL, or to apply new options). */
  restart(): Promise<void>;
  /** B's CLI with its home. */
  cli(args: readonly string[], options?: { timeoutMs?: number; env?: NodeJS.ProcessEnv }): Promise<CliResult>;
  close(): Promise<void>;
}

export async function startRig(
  label: string,
  options: { share?: string; listenArgs?: readonly string[]; listenEnv?: NodeJS.ProcessEnv } = {},
): Promise<Rig> {
  const work = await mkdtemp(path.join(tmpdir(), `clawpeer-fault-${label}-`));
  // Homes are made in process (the same identity and pair stores `init` and `pair add` use,
  // which test/e2e covers): four CLI start-ups fewer per rig on a 2-core machine.
  const [a, b] = await Promise.all([newHome(`${label}-a`), newHome(`${label}-b`)]);
  const share = options.share ?? path.join(work, 'inbox');
  await mkdir(share, { recursive: true });
  const listenArgs = ['--share', `inbox=${share}`, ...(options.listenArgs ?? [])];
  await new PeerStore(path.join(a.home, 'peers.json')).add(b.id, 'bob');
  let listener = await startListenerOn(a.home, 0, listenArgs, options.listenEnv);
  const port = listener.port;
  await new PeerStore(path.join(b.home, 'peers.json')).add(a.id, 'alice', `127.0.0.1:${port}`);
  const rig: Rig = {
    work,
    a,
    b,
    share,
    get listener() {
      return listener;
    },
    set listener(l: RunningListener) {
      listener = l;
    },
    async restart() {
      await listener.stop('SIGKILL');
      // The port was ours a moment ago; another process could take it, so retry briefly.
      for (let attempt = 0; ; attempt++) {
        try {
          listener = await startListenerOn(a.home, port, listenArgs, options.listenEnv);
          return;
        } catch (err) {
          if (attempt >= 5) throw err;
          await sleep(200);
        }
      }
    },
    cli: (args, o) => runCli(['--home', b.home, ...args], o),
    async close() {
      await listener.stop('SIGKILL');
    },
  };
  return rig;
}

// ---------------------------------------------------------------------------------------------
// CLI runs that can be killed

export interface CliRun {
  readonly child: ChildProcess;
  /** NDJSON events so far. */
  readonly events: Record<string, unknown>[];
  stderr(): string;
  readonly exited: Promise<number | null>;
  /** Resolves when an event matches (or the process exits: then false). */
  waitFor(pred: (e: Record<string, unknown>) => boolean): Promise<boolean>;
  kill(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Spawns B's CLI with --json; stdout is parsed as NDJSON as it comes. */
export function spawnCli(home: string, args: readonly string[], env: NodeJS.ProcessEnv = {}): CliRun {
  const child = spawn(process.execPath, [CLI, '--home', home, ...args, '--json'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const events: Record<string, unknown>[] = [];
  const waiters = new Set<{ pred: (e: Record<string, unknown>) => boolean; resolve: (v: boolean) => void }>();
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  createInterface({ input: child.stdout }).on('line', (line) => {
    let e: Record<string, unknown>;
    try {
      e = JSON.parse(line) as Record<string, unknown>;
    } catch {
      e = { event: 'non-json', line };
    }
    events.push(e);
    for (const w of waiters) {
      if (w.pred(e)) {
        waiters.delete(w);
        w.resolve(true);
      }
    }
  });
  const exited = new Promise<number | null>((resolve) =>
    child.on('close', (code) => {
      for (const w of waiters) w.resolve(false);
      waiters.clear();
      resolve(code);
    }),
  );
  return {
    child,
    events,
    exited,
    stderr: () => stderr,
    waitFor: (pred) => {
      if (events.some(pred)) return Promise.resolve(true);
      if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(false);
      return new Promise((resolve) => waiters.add({ pred, resolve }));
    },
    kill: async (signal: NodeJS.Signals = 'SIGKILL') => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}

/** Resolves with the exit code, or kills the process and rejects after `ms`. */
export async function exitWithin(run: CliRun, ms: number, what: string): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      void run.kill('SIGKILL');
      reject(new Error(`${what} did not exit within ${ms} ms; stderr: ${run.stderr()}`));
    }, ms);
  });
  try {
    return await Promise.race([run.exited, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export function doneEvent(stdout: string): Record<string, unknown> {
  const last = jsonLines(stdout).at(-1);
  if (last?.['event'] !== 'done') throw new Error(`no done event in ${stdout}`);
  return last;
}

// ---------------------------------------------------------------------------------------------
// "No partial file at a final path"

/** clawpeer's own names: the `.clawpeer` dir and `.clawpeer-tmp-*` staging files. */
export function isClawpeerInternal(name: string): boolean {
  return name.startsWith('.clawpeer');
}

interface Expected {
  readonly kind: 'file' | 'dir' | 'symlink';
  readonly size: number;
  readonly digest: string;
}

async function expectedFrom(sourceRoot: string): Promise<Map<string, Expected>> {
  const map = new Map<string, Expected>();
  for (const item of await snapshot(sourceRoot))
    map.set(item.path, { kind: item.kind, size: item.size, digest: item.digest });
  return map;
}

/**
 * Walks `destRoot` and returns every entry at a final path (not a clawpeer internal name) that
 * does not match `sourceRoot`: unknown names, a file of another size or content, a wrong kind.
 * Entries still missing are fine (not yet published). `cache` skips re-hashing unchanged files.
 */
export async function partialsAtFinalPaths(
  destRoot: string,
  expected: Map<string, Expected>,
  cache = new Map<string, string>(),
): Promise<string[]> {
  const bad: string[] = [];
  const walk = async (dir: string, rel: string): Promise<void> => {
    let names: string[];
    try {
      names = await readdir(dir);
    } catch {
      return; // not created yet, or removed under us
    }
    for (const name of names) {
      if (isClawpeerInternal(name)) continue;
      const r = rel === '' ? name : `${rel}/${name}`;
      const abs = path.join(dir, name);
      const want = expected.get(r);
      let st;
      try {
        st = await lstat(abs);
      } catch {
        continue; // renamed away between readdir and lstat
      }
      if (want === undefined) {
        bad.push(`${r}: not in the source`);
        continue;
      }
      if (st.isDirectory()) {
        if (want.kind !== 'dir') bad.push(`${r}: a directory, expected a ${want.kind}`);
        else await walk(abs, r);
      } else if (st.isSymbolicLink()) {
        if (want.kind !== 'symlink' || (await readlink(abs)) !== want.digest)
          bad.push(`${r}: a symlink that does not match`);
      } else if (want.kind !== 'file') {
        bad.push(`${r}: a file, expected a ${want.kind}`);
      } else if (st.size !== want.size) {
        bad.push(`${r}: ${st.size} bytes at the final path, the source has ${want.size}`);
      } else {
        const key = `${abs}:${st.ino}:${st.mtimeMs}:${st.size}`;
        let digest = cache.get(key);
        if (digest === undefined) {
          digest = createHash('sha256')
            .update(await readFile(abs))
            .digest('hex');
          cache.set(key, digest);
        }
        if (digest !== want.digest) bad.push(`${r}: content differs from the source (${st.size} bytes)`);
      }
    }
  };
  await walk(destRoot, '');
  return bad;
}

/** Polls `destRoot` while a transfer runs and remembers every violation it saw. */
export class FinalPathWatcher {
  readonly violations: string[] = [];
  polls = 0;
  #stop = false;
  #loop: Promise<void> | undefined;

  private constructor(
    private readonly destRoot: string,
    private readonly expected: Map<string, Expected>,
    private readonly intervalMs: number,
  ) {}

  static async start(sourceRoot: string, destRoot: string, intervalMs = 30): Promise<FinalPathWatcher> {
    const w = new FinalPathWatcher(destRoot, await expectedFrom(sourceRoot), intervalMs);
    w.#loop = w.#run();
    return w;
  }

  async #run(): Promise<void> {
    const cache = new Map<string, string>();
    while (!this.#stop) {
      for (const v of await partialsAtFinalPaths(this.destRoot, this.expected, cache)) {
        if (!this.violations.includes(v)) this.violations.push(v);
      }
      this.polls++;
      await sleep(this.intervalMs);
    }
  }

  /** Stops polling after one last pass; returns the violations. */
  async stop(): Promise<string[]> {
    this.#stop = true;
    await this.#loop;
    for (const v of await partialsAtFinalPaths(this.destRoot, this.expected))
      if (!this.violations.includes(v)) this.violations.push(v);
    return this.violations;
  }
}

// ---------------------------------------------------------------------------------------------
// Links: the impairment relay, and a link that can be cut

/** The UDP impairment relay (src/relay) in front of a listener port, on a free loopback port. */
export function impairedLink(targetPort: number, spec: string, seed: number): Promise<UdpRelay> {
  return startUdpRelay({
    listen: { host: '127.0.0.1', port: 0 },
    target: { host: '127.0.0.1', port: targetPort },
    spec,
    seed,
  });
}

/**
 * A UDP forwarder that can drop everything for a while: a cable pulled and plugged back. The
 * relay in src/relay has no pause, and closing it and binding a new one would give the listener
 * new source ports (a path change, not a cut); here the 4-tuples stay the same across the cut.
 */
export class CuttableLink {
  readonly #front: dgram.Socket;
  readonly #flows = new Map<string, dgram.Socket>();
  readonly #targetPort: number;
  #cut = false;
  dropped = 0;
  forwarded = 0;

  private constructor(front: dgram.Socket, targetPort: number) {
    this.#front = front;
    this.#targetPort = targetPort;
  }

  static async start(targetPort: number): Promise<CuttableLink> {
    const front = dgram.createSocket('udp4');
    await new Promise<void>((resolve, reject) => {
      front.once('error', reject);
      front.bind({ address: '127.0.0.1', port: 0 }, () => resolve());
    });
    const link = new CuttableLink(front, targetPort);
    front.on('message', (msg, rinfo) => link.#toServer(msg, rinfo));
    return link;
  }

  get port(): number {
    return this.#front.address().port;
  }

  get isCut(): boolean {
    return this.#cut;
  }

  cut(): void {
    this.#cut = true;
  }

  restore(): void {
    this.#cut = false;
  }

  #toServer(msg: Buffer, rinfo: dgram.RemoteInfo): void {
    if (this.#cut) {
      this.dropped++;
      return;
    }
    const key = `${rinfo.address}:${rinfo.port}`;
    let up = this.#flows.get(key);
    if (up === undefined) {
      const sock = dgram.createSocket('udp4');
      sock.on('error', () => undefined);
      sock.on('message', (reply) => {
        if (this.#cut) {
          this.dropped++;
          return;
        }
        this.forwarded++;
        this.#front.send(reply, rinfo.port, rinfo.address);
      });
      sock.bind({ address: '127.0.0.1', port: 0 });
      this.#flows.set(key, sock);
      up = sock;
    }
    this.forwarded++;
    up.send(msg, this.#targetPort, '127.0.0.1');
  }

  async close(): Promise<void> {
    for (const s of this.#flows.values()) s.close();
    this.#flows.clear();
    await new Promise<void>((resolve) => this.#front.close(() => resolve()));
  }
}

// ---------------------------------------------------------------------------------------------
// Process memory

/** Resident set size of a process, KiB (Linux /proc). */
export async function rssKiB(pid: number): Promise<number> {
  const kib = procStatusKiB(pid, 'VmRSS');
  if (kib === undefined) throw new Error(`no VmRSS for pid ${pid}`);
  return kib;
}

/** Samples a process's RSS every `intervalMs` until stopped; returns the samples, KiB. */
export function sampleRss(pid: number, intervalMs = 250): { stop(): Promise<number[]> } {
  const samples: number[] = [];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      samples.push(await rssKiB(pid).catch(() => Number.NaN));
      await sleep(intervalMs);
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return samples.filter((s) => Number.isFinite(s));
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Trials: one transfer under one fault, then a clean rerun

export type TrialKind = 'loss' | 'reorder' | 'dup' | 'jitter' | 'cut' | 'kill-sender' | 'kill-receiver';

/** What each impairment trial puts on the link (both directions). */
export const IMPAIRMENTS: Readonly<Record<'loss' | 'reorder' | 'dup' | 'jitter', string>> = {
  loss: 'loss=5%',
  reorder: 'rtt=20ms,reorder=5%',
  dup: 'dup=5%',
  // 200 ms each way +- 200 ms (uniform, clipped at 0): RTTs from 0 to 800 ms.
  jitter: 'rtt=400ms,jitter=200ms',
};

/** Slows each DATA frame a sender writes, so kills and cuts land mid-transfer (test-hooks.ts). */
export const DELAY_PER_CHUNK_MS = 4;

export interface TrialOptions {
  readonly rig: Rig;
  readonly kind: TrialKind;
  readonly index: number;
  readonly seed: number;
  readonly direction: 'push' | 'pull';
  /** Size of the big file of the trial's tree. */
  readonly bigBytes: number;
  /** Kill trials: the moment is uniform in [0, killWindowMs] after the client starts... */
  readonly killWindowMs?: number;
  /** ...or after its first progress event while data moves, so the kill lands mid-transfer. */
  readonly killAfterProgress?: boolean;
  /** Cut trials: how long the link stays cut. */
  readonly cutMs?: number;
  /** Longest a first run may take before the trial fails. */
  readonly firstRunTimeoutMs?: number;
  /** Per-DATA-frame delay of the client's sends (default DELAY_PER_CHUNK_MS), ms. */
  readonly delayPerChunkMs?: number;
}

export interface TrialResult {
  readonly kind: TrialKind;
  readonly index: number;
  readonly seed: number;
  readonly direction: 'push' | 'pull';
  /** Exit code of the faulty run (null: killed). */
  readonly firstExit: number | null;
  readonly firstMs: number;
  /** Kill trials: when, after the client started; cut trials: when the cut began. */
  readonly faultAtMs?: number;
  readonly firstStderr: string;
  readonly rerunExit: number | null;
  readonly rerunStderr: string;
  /** chunksSkipped of the rerun (resume), when it ran. */
  readonly rerunChunksSkipped?: number;
  /** Files at final paths that did not match the source, seen during or after the runs. */
  readonly violations: string[];
  /** The destination equals the source after the rerun. */
  readonly identical: boolean;
  /** When not identical: how the destination differs from the source (clawpeer's internal names aside). */
  readonly diff: string[];
  readonly src: string;
  readonly dest: string;
  readonly polls: number;
}

/** A snapshot without clawpeer's internal names at any depth (`.clawpeer-tmp-*` staging files). */
export function withoutInternals(items: readonly TreeItem[]): TreeItem[] {
  return items.filter((i) => !i.path.split('/').some(isClawpeerInternal));
}

/** What differs between two snapshots, one line per entry: missing, extra, or the fields that differ. */
export function treeDiff(want: readonly TreeItem[], got: readonly TreeItem[]): string[] {
  const out: string[] = [];
  const g = new Map(got.map((i) => [i.path, i] as const));
  for (const w of want) {
    const x = g.get(w.path);
    g.delete(w.path);
    if (x === undefined) {
      out.push(`${w.path}: missing`);
      continue;
    }
    const fields = (['kind', 'mode', 'size', 'mtimeS', 'digest'] as const)
      .filter((k) => w[k] !== x[k])
      .map((k) => `${k} ${String(x[k])} != ${String(w[k])}`);
    if (fields.length > 0) out.push(`${w.path}: ${fields.join(', ')}`);
  }
  for (const extra of g.keys()) out.push(`${extra}: not in the source`);
  return out;
}

/** Where a trial's source and destination trees are. */
function trialPaths(o: TrialOptions): { name: string; src: string; dest: string; pullInto: string } {
  const name = `${o.kind}-${o.direction}-${o.index}`;
  const pullInto = path.join(o.rig.work, 'pulled');
  return o.direction === 'push'
    ? { name, src: path.join(o.rig.work, 'src', name), dest: path.join(o.rig.share, name), pullInto }
    : { name, src: path.join(o.rig.share, name), dest: path.join(pullInto, name), pullInto };
}

function transferArgs(o: TrialOptions, name: string, src: string, pullInto: string, addr?: string): string[] {
  const via = addr === undefined ? [] : ['--addr', addr, '--transport', 'quic'];
  return o.direction === 'push' ? ['push', src, 'alice', ...via] : ['pull', `alice:inbox/${name}`, pullInto, ...via];
}

/**
 * One trial: build a seeded tree, transfer it under the fault while a watcher polls the
 * destination, then rerun the same transfer on a clean link. The caller asserts on the result.
 */
export async function runTrial(o: TrialOptions): Promise<TrialResult> {
  const { rig } = o;
  const { name, src, dest, pullInto } = trialPaths(o);
  await makeSeededTree(src, o.seed, o.bigBytes);
  const watcher = await FinalPathWatcher.start(src, dest);
  const rand = prng(o.seed ^ 0x5eed);
  let relay: UdpRelay | undefined;
  let link: CuttableLink | undefined;
  let addr: string | undefined;
  if (o.kind === 'loss' || o.kind === 'reorder' || o.kind === 'dup' || o.kind === 'jitter') {
    relay = await impairedLink(rig.listener.port, IMPAIRMENTS[o.kind], o.seed);
    addr = `127.0.0.1:${relay.address.port}`;
  } else if (o.kind === 'cut') {
    link = await CuttableLink.start(rig.listener.port);
    addr = `127.0.0.1:${link.port}`;
  }
  const started = Date.now();
  const first = spawnCli(rig.b.home, transferArgs(o, name, src, pullInto, addr), {
    CLAWPEER_TEST_DELAY_PER_CHUNK_MS: String(o.delayPerChunkMs ?? DELAY_PER_CHUNK_MS),
  });
  let faultAtMs: number | undefined;
  let firstExit: number | null;
  try {
    if (o.kind === 'kill-sender' || o.kind === 'kill-receiver') {
      const delay = Math.floor(rand() * (o.killWindowMs ?? 3000));
      if (o.killAfterProgress === true)
        await first.waitFor(
          (e) => e['event'] === 'progress' && (e['phase'] === 'sending' || e['phase'] === 'receiving'),
        );
      await Promise.race([sleep(delay), first.exited]);
      faultAtMs = Date.now() - started;
      // push: the client sends, the listener receives; pull: the other way round.
      const clientIsVictim = (o.kind === 'kill-sender') === (o.direction === 'push');
      if (clientIsVictim) {
        firstExit = await first.kill('SIGKILL');
      } else {
        await rig.listener.stop('SIGKILL');
        // The client must notice on its own: its idle timeout bounds the wait.
        firstExit = await exitWithin(first, 60_000, 'the client after its peer was killed');
        await rig.restart();
      }
    } else if (o.kind === 'cut' && link !== undefined) {
      const l = link;
      await first.waitFor((e) => e['event'] === 'progress' && (e['phase'] === 'sending' || e['phase'] === 'receiving'));
      await sleep(Math.floor(rand() * 200));
      faultAtMs = Date.now() - started;
      l.cut();
      await Promise.race([sleep(o.cutMs ?? 10_000), first.exited]);
      l.restore();
      firstExit = await exitWithin(first, o.firstRunTimeoutMs ?? 120_000, `the ${o.direction} across a cut link`);
    } else {
      firstExit = await exitWithin(first, o.firstRunTimeoutMs ?? 120_000, `the ${o.direction} through ${o.kind}`);
    }
  } finally {
    await relay?.close();
    await link?.close();
  }
  const firstMs = Date.now() - started;
  const rerun = await rig.cli([...transferArgs(o, name, src, pullInto), '--json'], { timeoutMs: 120_000 });
  const violations = await watcher.stop();
  let rerunChunksSkipped: number | undefined;
  try {
    rerunChunksSkipped = Number(doneEvent(rerun.stdout)['chunksSkipped']);
  } catch {
    // no done event: the rerun failed, reported by rerunExit
  }
  let diff: string[];
  try {
    diff = treeDiff(await snapshot(src), withoutInternals(await snapshot(dest)));
  } catch (err) {
    diff = [`cannot compare: ${(err as Error).message}`];
  }
  const identical = diff.length === 0;
  return {
    kind: o.kind,
    index: o.index,
    seed: o.seed,
    direction: o.direction,
    firstExit,
    firstMs,
    ...(faultAtMs === undefined ? {} : { faultAtMs }),
    firstStderr: first.stderr().slice(-2000),
    rerunExit: rerun.code,
    rerunStderr: rerun.stderr.slice(-2000),
    ...(rerunChunksSkipped === undefined ? {} : { rerunChunksSkipped }),
    violations,
    identical,
    diff,
    src,
    dest,
    polls: watcher.polls,
  };
}

/** Asserts what every trial must show; `mustComplete`: the faulty run itself must succeed. */
export function checkTrial(t: Test, r: TrialResult, mustComplete: boolean): void {
  const label = `${r.kind} ${r.direction} #${r.index} seed=${r.seed}`;
  if (mustComplete) t.equal(r.firstExit, 0, `${label}: completes through the fault; stderr: ${r.firstStderr}`);
  else
    t.ok(
      r.firstExit === null || (r.firstExit >= 0 && r.firstExit <= 4),
      `${label}: ends with a documented exit code (${String(r.firstExit)}); stderr: ${r.firstStderr}`,
    );
  t.same(r.violations, [], `${label}: no partial or wrong file ever at a final path (${r.polls} polls)`);
  t.equal(r.rerunExit, 0, `${label}: the rerun completes; stderr: ${r.rerunStderr}`);
  t.same(r.diff, [], `${label}: byte-identical after the rerun`);
  t.comment(
    `trial ${JSON.stringify({ kind: r.kind, direction: r.direction, index: r.index, seed: r.seed, firstExit: r.firstExit, firstMs: r.firstMs, faultAtMs: r.faultAtMs, rerunChunksSkipped: r.rerunChunksSkipped, polls: r.polls })}`,
  );
}

/** Longer than the listener's default idle timeout (15 s, config.ts), so stale sessions are gone. */
export const STALE_SESSION_SETTLE_MS = 17_000;

export interface SuiteOptions {
  readonly kind: TrialKind;
  /** Trial indices [first, first + count): a kind's 20 trials may be split over files (tap's 300 s per file). */
  readonly first: number;
  readonly count: number;
  readonly bigBytes: number;
  readonly seed: number;
  readonly killWindowMs?: number;
  readonly cutMs?: number;
  readonly delayPerChunkMs?: number;
}

/** Runs trials of one kind on one rig, alternating push and pull; ends with a summary comment. */
export async function trialSuite(t: Test, o: SuiteOptions): Promise<void> {
  if (o.count <= 0) {
    t.plan(0, `no ${o.kind} trials in this slice (FAULT_TRIALS too small)`);
    return;
  }
  // The listener is the sender of pulls: it gets the same per-chunk delay as the client.
  const rig = await startRig(o.kind, {
    listenEnv: { CLAWPEER_TEST_DELAY_PER_CHUNK_MS: String(o.delayPerChunkMs ?? DELAY_PER_CHUNK_MS) },
  });
  t.teardown(() => rig.close());
  const results: TrialResult[] = [];
  const mustComplete = o.kind === 'loss' || o.kind === 'reorder' || o.kind === 'dup' || o.kind === 'jitter';
  for (let i = o.first; i < o.first + o.count; i++) {
    const direction = i % 2 === 0 ? 'push' : 'pull';
    await t.test(`${o.kind} trial ${i} (${direction})`, async (t) => {
      const r = await runTrial({
        rig,
        kind: o.kind,
        index: i,
        seed: o.seed + i,
        direction,
        bigBytes: o.bigBytes,
        ...(o.killWindowMs === undefined ? {} : { killWindowMs: o.killWindowMs }),
        ...(o.cutMs === undefined ? {} : { cutMs: o.cutMs }),
        ...(o.delayPerChunkMs === undefined ? {} : { delayPerChunkMs: o.delayPerChunkMs }),
      });
      results.push(r);
      checkTrial(t, r, mustComplete);
    });
  }
  // A side that vanished (killed, or cut off) leaves a stale session on the listener until its
  // idle timeout (15 s): its cleanup must not disturb what the rerun published, and it must leave
  // no staging files behind. Checked once per suite, after every stale session is gone.
  await t.test('after stale sessions time out: trees still identical, no staging files left', async (t) => {
    await sleep(STALE_SESSION_SETTLE_MS);
    for (const r of results) {
      const label = `${r.kind} ${r.direction} #${r.index} seed=${r.seed}`;
      const now = await snapshot(r.dest);
      t.same(
        treeDiff(await snapshot(r.src), withoutInternals(now)),
        [],
        `${label}: still identical (staging names aside)`,
      );
      t.same(
        now.filter((i) => i.path.split('/').some(isClawpeerInternal)).map((i) => i.path),
        [],
        `${label}: no .clawpeer-tmp-* staging files left behind`,
      );
    }
  });
  const exits = new Map<string, number>();
  for (const r of results) exits.set(String(r.firstExit), (exits.get(String(r.firstExit)) ?? 0) + 1);
  const ms = results.map((r) => r.firstMs).sort((x, y) => x - y);
  t.comment(
    `summary ${JSON.stringify({ kind: o.kind, trials: results.length, firstExitCodes: Object.fromEntries(exits), firstMsMedian: ms[Math.floor(ms.length / 2)], firstMsMax: ms.at(-1), identical: results.filter((r) => r.identical).length, violations: results.reduce((n, r) => n + r.violations.length, 0) })}`,
  );
}

// ---------------------------------------------------------------------------------------------
// Small file systems (disk full)

/** Mounts a tmpfs of `size` (e.g. "4m") on `dir`; returns why not (no root / CAP_SYS_ADMIN), or undefined. */
export function mountTmpfs(dir: string, size: string): string | undefined {
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir], { stdio: 'pipe' });
    return undefined;
  } catch (err) {
    return ((err as { stderr?: Buffer }).stderr?.toString() ?? (err as Error).message).trim();
  }
}

/** Grows a mounted tmpfs (tmpfs refuses to shrink below what it holds). */
export function remountTmpfs(dir: string, size: string): void {
  execFileSync('mount', ['-o', `remount,size=${size}`, dir], { stdio: 'pipe' });
}

export function unmount(dir: string): void {
  try {
    execFileSync('umount', ['-l', dir], { stdio: 'pipe' });
  } catch {
    // already gone
  }
}

// ---------------------------------------------------------------------------------------------
// Load: many peers against one listener

export interface LoadOptions {
  /** Peers (homes) pushing and pinging at once. */
  readonly peers: number;
  /** Size of each peer's pushed file. */
  readonly pushBytes: number;
  /** Connect / handshake / ping / disconnect cycles after the pushes. */
  readonly cycles: number;
  /** Cycles in flight at once. */
  readonly cycleConcurrency: number;
  /** Cycles run first to warm the listener up; the RSS baseline is taken after them. */
  readonly warmupCycles: number;
  /** After the pushes, every peer syncs a folder of this many 4 KiB files with its own share at once (0: no sync). */
  readonly syncFiles?: number;
}

export interface LoadFigures {
  readonly conditions: Record<string, unknown>;
  readonly rssKiB: {
    readonly idle: number;
    readonly pushPeak: number;
    readonly afterPushesAndSyncs: number;
    readonly baselineAfterWarmup: number;
    readonly cyclesPeak: number;
    readonly afterCycles: number;
    readonly afterSettle: number;
    /** After each batch of 100 cycles. */
    readonly afterEach100Cycles: readonly number[];
  };
  readonly openFds: { readonly baseline: number; readonly afterCycles: number; readonly afterSettle: number };
  readonly pushes: {
    readonly ok: number;
    readonly failed: string[];
    readonly seconds: number;
    readonly identical: number;
  };
  readonly pings: { readonly ok: number; readonly failed: string[] };
  readonly syncs?: {
    readonly ok: number;
    readonly failed: string[];
    readonly seconds: number;
    readonly identical: number;
    readonly rssPeakKiB: number;
  };
  readonly cycles: {
    readonly ok: number;
    readonly failed: string[];
    readonly seconds: number;
    readonly perSecond: number;
  };
}

async function openFds(pid: number): Promise<number> {
  return (await readdir(`/proc/${pid}/fd`)).length;
}

/** Runs the load scenario against a fresh listener; returns the measured figures (the caller asserts). */
export async function runLoad(o: LoadOptions): Promise<LoadFigures> {
  const { resolvePeer } = await import('../../src/home/peer-resolve.js');
  const { dialPeer } = await import('../../src/session/dialer.js');
  const { pingPeer } = await import('../../src/session/ping.js');
  const { resolveConfig } = await import('../../src/home/config.js');
  const { silentLogger } = await import('../../src/logger.js');
  const os = await import('node:os');

  const work = await mkdtemp(path.join(tmpdir(), 'clawpeer-fault-load-'));
  const a = await newHome('load-a');
  const share = path.join(work, 'inbox');
  await mkdir(share);
  // Peers are made in process (identity + pair files), not by 2 x 16 CLI runs.
  const peers: { home: string; id: string; name: string; src: string }[] = [];
  const storeA = new PeerStore(path.join(a.home, 'peers.json'));
  for (let i = 0; i < o.peers; i++) {
    const home = await mkdtemp(path.join(tmpdir(), `clawpeer-load-p${i}-`));
    const id = await createIdentity(path.join(home, 'identity.key'));
    const src = path.join(work, 'src', `peer-${i}`);
    await mkdir(src, { recursive: true });
    await writeFile(path.join(src, 'data.bin'), seededBytes(1000 + i, o.pushBytes));
    await storeA.add(id.nodeId, `p${i}`);
    peers.push({ home, id: id.nodeId, name: `p${i}`, src });
  }
  const syncFiles = o.syncFiles ?? 0;
  const shareArgs = ['--share', `inbox=${share}`];
  if (syncFiles > 0) {
    for (let i = 0; i < o.peers; i++) {
      const serverDir = path.join(work, 'server', `s${i}`);
      const clientDir = path.join(work, 'client', `s${i}`);
      await mkdir(serverDir, { recursive: true });
      await mkdir(clientDir, { recursive: true });
      for (let f = 0; f < syncFiles; f++)
        await writeFile(path.join(clientDir, `f-${f}.bin`), seededBytes(5000 + i * syncFiles + f, 4096));
      await writeFile(path.join(serverDir, 'from-server.txt'), `server side of s${i}\n`);
      shareArgs.push('--share', `s${i}=${serverDir}`);
    }
  }
  const listener = await startListenerOn(a.home, 0, shareArgs);
  const pid = listener.child.pid ?? 0;
  try {
    for (const p of peers)
      await new PeerStore(path.join(p.home, 'peers.json')).add(a.id, 'alice', `127.0.0.1:${listener.port}`);
    await sleep(500);
    const idle = await rssKiB(pid);

    // 1. Every peer pushes and pings at once (real CLI processes).
    const pushSampler = sampleRss(pid, 100);
    const pushStart = Date.now();
    const results = await Promise.all(
      peers.map(async (p) => {
        const [push, ping] = await Promise.all([
          runCli(['--home', p.home, 'push', p.src, 'alice', '--json'], { timeoutMs: 240_000 }),
          runCli(['--home', p.home, 'ping', 'alice', '--count', '3', '--interval', '200', '--json'], {
            timeoutMs: 240_000,
          }),
        ]);
        return { p, push, ping };
      }),
    );
    const pushSeconds = (Date.now() - pushStart) / 1000;
    const pushSamples = await pushSampler.stop();
    let identical = 0;
    for (const { p } of results) {
      const dest = await snapshot(path.join(share, `peer-${peers.indexOf(p)}`)).catch(() => []);
      if (JSON.stringify(dest) === JSON.stringify(await snapshot(p.src))) identical++;
    }
    let syncs: LoadFigures['syncs'];
    if (syncFiles > 0) {
      const sampler = sampleRss(pid, 100);
      const started = Date.now();
      const runs = await Promise.all(
        peers.map((p, i) =>
          runCli(['--home', p.home, 'sync', path.join(work, 'client', `s${i}`), `alice:s${i}`, '--json'], {
            timeoutMs: 240_000,
          }),
        ),
      );
      const seconds = (Date.now() - started) / 1000;
      const samples = await sampler.stop();
      let same = 0;
      const noDirMtime = (items: TreeItem[]): TreeItem[] =>
        items.map((x) => (x.kind === 'dir' ? { ...x, mtimeS: 0 } : x));
      for (let i = 0; i < o.peers; i++) {
        const c = noDirMtime(await snapshot(path.join(work, 'client', `s${i}`)));
        const sv = noDirMtime(await snapshot(path.join(work, 'server', `s${i}`)));
        if (c.length === syncFiles + 1 && JSON.stringify(c) === JSON.stringify(sv)) same++;
      }
      syncs = {
        ok: runs.filter((r) => r.code === 0).length,
        failed: runs.flatMap((r, i) => (r.code === 0 ? [] : [`s${i}: ${String(r.code)} ${r.stderr.trim()}`])),
        seconds,
        identical: same,
        rssPeakKiB: Math.max(0, ...samples),
      };
    }
    await sleep(1000);
    const afterPushesAndSyncs = await rssKiB(pid);

    // 2. Connect / handshake / ping / disconnect cycles, in process, spread over the peers.
    const config = resolveConfig({ transport: 'quic' });
    const identities = await Promise.all(
      peers.map(async (p) =>
        (await import('../../src/home/identity-store.js')).loadIdentity(path.join(p.home, 'identity.key')),
      ),
    );
    const resolved = await Promise.all(
      peers.map((p) => resolvePeer(new PeerStore(path.join(p.home, 'peers.json')), 'alice', undefined)),
    );
    const cycleFailures: string[] = [];
    let cyclesOk = 0;
    const cycle = async (k: number): Promise<void> => {
      const i = k % peers.length;
      const identity = identities[i];
      const peer = resolved[i];
      if (identity === undefined || peer === undefined) throw new TypeError('no peer');
      try {
        const session = await dialPeer({ identity, peer, config, log: silentLogger });
        try {
          for await (const _pong of pingPeer(session, { count: 1, intervalMs: 0, timeoutMs: 10_000 })) continue;
        } finally {
          await session.close();
        }
        cyclesOk++;
      } catch (err) {
        if (cycleFailures.length < 20) cycleFailures.push(`cycle ${k}: ${(err as Error).message}`);
      }
    };
    const runCycles = async (from: number, to: number): Promise<void> => {
      let next = from;
      await Promise.all(
        Array.from({ length: o.cycleConcurrency }, async () => {
          while (next < to) await cycle(next++);
        }),
      );
    };
    await runCycles(0, o.warmupCycles);
    await sleep(1000);
    const baselineAfterWarmup = await rssKiB(pid);
    const fdBaseline = await openFds(pid);
    const cycleSampler = sampleRss(pid, 250);
    const cyclesStart = Date.now();
    // In batches of 100, with the RSS after each: a leak grows every batch, allocator warm-up does not.
    const afterBatches: number[] = [];
    for (let from = o.warmupCycles; from < o.warmupCycles + o.cycles; from += 100) {
      await runCycles(from, Math.min(from + 100, o.warmupCycles + o.cycles));
      afterBatches.push(await rssKiB(pid));
    }
    const cycleSeconds = (Date.now() - cyclesStart) / 1000;
    const cycleSamples = await cycleSampler.stop();
    const afterCycles = await rssKiB(pid);
    const fdAfterCycles = await openFds(pid);
    await sleep(3000); // closes settle, idle connections (if any leaked) would still be here
    const afterSettle = await rssKiB(pid);
    const fdAfterSettle = await openFds(pid);

    return {
      conditions: {
        machine: os.cpus()[0]?.model ?? 'unknown',
        cores: os.cpus().length,
        node: process.version,
        loadavg1m: os.loadavg()[0],
        peers: o.peers,
        pushBytesPerPeer: o.pushBytes,
        syncFilesPerPeer: syncFiles,
        syncFileBytes: 4096,
        data: 'incompressible (seeded PRNG)',
        pingsPerPeer: 3,
        cycles: o.cycles,
        warmupCycles: o.warmupCycles,
        cycleConcurrency: o.cycleConcurrency,
        cycle: 'QUIC connect + handshake + 1 ping + close (in process, dialPeer)',
        listener: 'clawpeer listen (CLI process), defaults',
        rss: '/proc/<pid>/status VmRSS',
      },
      rssKiB: {
        idle,
        pushPeak: Math.max(idle, ...pushSamples),
        afterPushesAndSyncs,
        baselineAfterWarmup,
        cyclesPeak: Math.max(baselineAfterWarmup, ...cycleSamples),
        afterCycles,
        afterSettle,
        afterEach100Cycles: afterBatches,
      },
      openFds: { baseline: fdBaseline, afterCycles: fdAfterCycles, afterSettle: fdAfterSettle },
      pushes: {
        ok: results.filter((r) => r.push.code === 0).length,
        failed: results
          .filter((r) => r.push.code !== 0)
          .map((r) => `${r.p.name}: ${r.push.code} ${r.push.stderr.trim()}`),
        seconds: pushSeconds,
        identical,
      },
      pings: {
        ok: results.filter((r) => r.ping.code === 0).length,
        failed: results
          .filter((r) => r.ping.code !== 0)
          .map((r) => `${r.p.name}: ${r.ping.code} ${r.ping.stderr.trim()}`),
      },
      ...(syncs === undefined ? {} : { syncs }),
      cycles: {
        ok: cyclesOk - o.warmupCycles,
        failed: cycleFailures,
        seconds: cycleSeconds,
        perSecond: o.cycles / cycleSeconds,
      },
    };
  } finally {
    await listener.stop('SIGKILL');
  }
}
