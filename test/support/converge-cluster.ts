// N clawpeer nodes on loopback for the convergence test: each a home of its own with one folder
// served by its own listener (share `f`), paired only with its neighbours in a line
// (n0-n1-n2-...), so a change travels n0 -> n1 -> n2 through the nodes in between.
//
// Listeners are child processes of the built CLI on fixed ports, so one can be killed with
// SIGKILL (mid-sync) and started again at the same address. Two modes:
//   pair mode: each listener serves the folder as a share, and the schedule syncs two nodes with
//     one pluggable function (PairSync: `clawpeer sync` between them, cliPairSync);
//   folder mode (`folders: true`): each node has the folder in its config (`clawpeer folder add
//     --with` its neighbours) and its listener keeps it in sync by itself; neighbours reach each
//     other over TCP through a forwarder a direction (converge-link.ts) the harness can cut.
import { spawn } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { mkdir, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import path from 'node:path';
import { writeFile } from 'node:fs/promises';
import {
  CLI,
  initNode,
  jsonLines,
  pairAdd,
  runCli,
  startListener,
  tempHome,
  type RunningListener,
} from '../e2e/cli-harness.js';
import { LinkForwarder } from './converge-link.js';

export interface ConvergeNode {
  readonly index: number;
  /** Pair name the neighbours know this node by (`n0`, `n1`, ...). */
  readonly name: string;
  readonly home: string;
  readonly id: string;
  /** The synced folder (served as share `f`). */
  readonly folder: string;
  readonly port: number;
  listener: RunningListener | undefined;
  /** This node's clock is off by this much (its writes' mtimes, CLAWPEER_TEST_CLOCK_SKEW_MS of its processes). */
  skewMs: number;
}

/** What one pair sync did: numbers from the CLI's done line, or the error. */
export interface PairSyncOutcome {
  readonly ok: boolean;
  readonly revisionsSent: number;
  readonly revisionsReceived: number;
  /** Paths the sync left as they are (its `skipped` lines). */
  readonly skipped: readonly string[];
  readonly error?: string;
}

export interface PairSyncOptions {
  /** Called once the sync is under way (a fault can strike then); ms since it started are up to the caller. */
  readonly onStarted?: () => void;
  readonly timeoutMs?: number;
}

/** How node `a` and its neighbour `b` sync their folders (one reconciliation both ways). */
export type PairSync = (a: ConvergeNode, b: ConvergeNode, options?: PairSyncOptions) => Promise<PairSyncOutcome>;

export const SHARE = 'f';
/** Folder mode: the folder id, and the fallback interval of its syncs, s (what a trigger missed shows as slow convergence). */
export const FOLDER_ID = 'f';
const FOLDER_INTERVAL_S = 60;
// Versioning keeps every replaced version (keep-last:10, the default, may drop one the check looks for).
/** How long a CLI start may take: a shared 2-core machine under load takes tens of seconds. */
const SLOW_MS = 120_000;

/** A port free for both UDP and TCP on 127.0.0.1 right now. */
async function freePort(): Promise<number> {
  for (;;) {
    const udp = createSocket('udp4');
    const port = await new Promise<number>((resolve, reject) => {
      udp.once('error', reject);
      udp.bind(0, '127.0.0.1', () => resolve(udp.address().port));
    });
    const tcpFree = await new Promise<boolean>((resolve) => {
      const srv = createServer();
      srv.once('error', () => resolve(false));
      srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
    });
    await new Promise<void>((resolve) => udp.close(() => resolve()));
    if (tcpFree) return port;
  }
}

export function envFor(node: ConvergeNode): NodeJS.ProcessEnv {
  return node.skewMs === 0 ? {} : { CLAWPEER_TEST_CLOCK_SKEW_MS: String(node.skewMs) };
}

export interface ClusterOptions {
  readonly label?: string;
  /** Folder mode (see the top of this file). */
  readonly folders?: boolean;
}

export class ConvergeCluster {
  readonly nodes: readonly ConvergeNode[];
  /** Neighbour pairs [i, j], i < j: the only links that sync. */
  readonly links: readonly (readonly [number, number])[];
  /** Folder mode: the listeners keep their configured folders in sync (no PairSync). */
  readonly folders: boolean;
  /** Folder mode: per link, its two forwarders (a dials b, b dials a). */
  readonly #forwarders: (readonly LinkForwarder[])[];

  private constructor(
    nodes: ConvergeNode[],
    links: [number, number][],
    folders: boolean,
    forwarders: LinkForwarder[][],
  ) {
    this.nodes = nodes;
    this.links = links;
    this.folders = folders;
    this.#forwarders = forwarders;
  }

  /** Inits `n` homes, pairs neighbours in a line (folder mode: adds the folder), starts every listener. */
  static async create(n: number, o: ClusterOptions = {}): Promise<ConvergeCluster> {
    const label = o.label ?? 'cv';
    const folders = o.folders === true;
    const work = await tempHome(`${label}-work`);
    const nodes: ConvergeNode[] = [];
    for (let i = 0; i < n; i++) {
      const { home, id } = await initNode(`${label}${i}`);
      const folder = path.join(work, `n${i}`);
      await mkdir(folder, { recursive: true });
      // Folder mode: neighbours only through the forwarders (no LAN discovery; TCP, listen --transport tcp).
      if (folders) await writeFile(path.join(home, 'config.json'), JSON.stringify({ lanDiscovery: false }));
      nodes.push({ index: i, name: `n${i}`, home, id, folder, port: await freePort(), listener: undefined, skewMs: 0 });
    }
    const links: [number, number][] = [];
    for (let i = 0; i + 1 < n; i++) links.push([i, i + 1]);
    const forwarders: LinkForwarder[][] = [];
    for (const [i, j] of links) {
      const a = nodes[i];
      const b = nodes[j];
      if (a === undefined || b === undefined) throw new TypeError('link out of range');
      const pair: LinkForwarder[] = [];
      for (const [self, peer] of [
        [a, b],
        [b, a],
      ] as const) {
        let port = peer.port;
        if (folders) {
          const fwd = await LinkForwarder.start(peer.port);
          pair.push(fwd);
          port = fwd.port;
        }
        await pairAdd(self.home, peer.id, peer.name, `127.0.0.1:${port}`);
      }
      forwarders.push(pair);
    }
    if (folders) {
      await Promise.all(
        nodes.map(async (node) => {
          const with_ = links
            .filter(([i, j]) => i === node.index || j === node.index)
            .map(([i, j]) => `n${i === node.index ? j : i}`);
          const r = await runCli(
            [
              '--home',
              node.home,
              'folder',
              'add',
              node.folder,
              '--id',
              FOLDER_ID,
              '--with',
              with_.join(','),
              '--interval',
              String(FOLDER_INTERVAL_S),
              '--versioning',
              'trashcan:30',
            ],
            { timeoutMs: SLOW_MS },
          );
          if (r.code !== 0) throw new Error(`folder add on ${node.name}: ${r.stderr}`);
        }),
      );
    }
    const cluster = new ConvergeCluster(nodes, links, folders, forwarders);
    // A test killed by its deadline must not leave listeners running.
    process.once('exit', () => {
      for (const node of nodes) node.listener?.child.kill('SIGKILL');
    });
    await cluster.startAll();
    return cluster;
  }

  node(i: number): ConvergeNode {
    const n = this.nodes[i];
    if (n === undefined) throw new TypeError(`no node ${i}`);
    return n;
  }

  /** Listeners starting in the background (startSoon), by node index. */
  readonly #starting = new Map<number, Promise<void>>();

  async startListener(node: ConvergeNode): Promise<void> {
    const starting = this.#starting.get(node.index);
    if (starting !== undefined) return starting;
    if (node.listener !== undefined) return;
    const start = this.#start(node).finally(() => this.#starting.delete(node.index));
    this.#starting.set(node.index, start);
    return start;
  }

  /** Starts `node`'s listener in the background (the schedule goes on meanwhile, as a device rebooting); a failure to start shows at the next startListener or startAll. */
  startSoon(node: ConvergeNode): void {
    this.startListener(node).catch(() => undefined);
  }

  async #start(node: ConvergeNode): Promise<void> {
    // The port was just freed by a SIGKILLed listener: a few tries while the OS lets go of it.
    for (let attempt = 0; ; attempt++) {
      try {
        node.listener = await startListener(
          node.home,
          this.folders ? ['-v', '--transport', 'tcp'] : ['--share', `${SHARE}=${node.folder}`],
          { port: node.port, env: envFor(node), timeoutMs: SLOW_MS },
        );
        return;
      } catch (err) {
        if (attempt >= 4) throw err;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  }

  /** Starts every listener that is down, all at once. */
  async startAll(): Promise<void> {
    await Promise.all(this.nodes.map((n) => this.startListener(n)));
  }

  /** SIGKILLs `node`'s listener (no cleanup, as kill -9 or a power cut). */
  async killListener(node: ConvergeNode): Promise<void> {
    await this.#starting.get(node.index)?.catch(() => undefined);
    const l = node.listener;
    node.listener = undefined;
    if (l !== undefined) {
      await l.stop('SIGKILL');
      this.#pastLogs.set(
        node.index,
        `${(this.#pastLogs.get(node.index) ?? '').slice(-(8 << 20))}${l.stderr()}--- SIGKILL\n`,
      );
    }
  }

  /** Logs of the listeners killed since the last reset, per node index. */
  readonly #pastLogs = new Map<number, string>();

  /** Everything `node`'s listeners logged since the last reset (killed ones first). */
  logsOf(node: ConvergeNode): string {
    return `${this.#pastLogs.get(node.index) ?? ''}${node.listener?.stderr() ?? ''}`;
  }

  /**
   * What `node`'s syncs changed since `sinceMs`, path by path (its `folder log`, one line per
   * sync and per path), or why it could not be read.
   */
  async folderLogOf(node: ConvergeNode, sinceMs: number): Promise<string> {
    if (!this.folders) return '';
    const r = await runCli(['--home', node.home, 'folder', 'log', FOLDER_ID, '--json']);
    if (r.code !== 0) return `folder log failed (${r.code}): ${r.stderr}`;
    const lines: string[] = [];
    for (const raw of r.stdout.split('\n')) {
      if (raw === '') continue;
      const e = JSON.parse(raw) as {
        time: number;
        by: string;
        peerName?: string;
        peer: string;
        paths?: { path: string; change: string }[];
      };
      if (e.time < sinceMs) continue;
      lines.push(`${new Date(e.time).toISOString()} ${e.by === 'peer' ? 'by' : 'with'} ${e.peerName ?? e.peer}`);
      for (const c of e.paths ?? []) lines.push(`  ${c.change} ${c.path}`);
    }
    return `${lines.join('\n')}\n`;
  }

  async restartListener(node: ConvergeNode): Promise<void> {
    await this.killListener(node);
    await this.startListener(node);
  }

  /** Folder mode: cuts link `li` (both directions: connections reset, new ones refused). */
  cutLink(li: number): void {
    for (const f of this.#forwarders[li] ?? []) f.cut();
  }

  healLink(li: number): void {
    for (const f of this.#forwarders[li] ?? []) f.heal();
  }

  /** Empties every folder (its log and history too) and restarts the listeners with true clocks: a fresh cluster, same homes. */
  async reset(): Promise<void> {
    for (const node of this.nodes) await this.killListener(node);
    this.#pastLogs.clear();
    for (const li of this.links.keys()) this.healLink(li);
    for (const node of this.nodes) {
      await rm(node.folder, { recursive: true, force: true });
      // The folder's marker made again, as a user starting a deleted folder anew does: without it
      // the listener takes the folder for one whose disk is gone (folders/folder-markers.ts).
      await mkdir(path.join(node.folder, '.clawpeer'), { recursive: true });
      node.skewMs = 0;
    }
    await this.startAll();
  }

  async stop(): Promise<void> {
    for (const node of this.nodes) await this.killListener(node);
    for (const pair of this.#forwarders) for (const f of pair) await f.close();
  }
}

/**
 * The sync of today's product: `clawpeer sync A-folder B:f` run from `a`'s home (handed to
 * `a`'s listener, which serves that folder, when it runs; else run by the CLI itself).
 */
export const cliPairSync: PairSync = (a, b, options = {}) =>
  new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, '--home', a.home, 'sync', a.folder, `${b.name}:${SHARE}`, '--json'], {
      env: { ...process.env, ...envFor(a) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 3 * SLOW_MS);
    options.onStarted?.();
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      let lines: Record<string, unknown>[] = [];
      try {
        lines = jsonLines(stdout);
      } catch {
        // a killed run may end mid-line
      }
      const skipped = lines.filter((l) => l['event'] === 'skipped').map((l) => String(l['path']));
      const done = lines.find((l) => l['event'] === 'done');
      if (code === 0 && done !== undefined) {
        resolve({
          ok: true,
          revisionsSent: Number(done['revisionsSent']),
          revisionsReceived: Number(done['revisionsReceived']),
          skipped,
        });
      } else {
        resolve({
          ok: false,
          revisionsSent: 0,
          revisionsReceived: 0,
          skipped,
          error: `exit ${String(code ?? signal)}: ${stderr.trim().split('\n').slice(-3).join(' | ')}`,
        });
      }
    });
  });
