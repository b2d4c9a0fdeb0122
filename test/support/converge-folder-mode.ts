// Folder mode of the convergence schedule (converge-schedule.ts): the listeners keep their
// configured folder in sync by themselves while the schedule edits the folders on disk, so
// quiescence is read from the nodes' own state, and "nothing lost" from what the harness wrote.
//
// Quiet: every node's listener answers `status` (over its control socket, as `clawpeer status
// --json` asks), its folder has no local change waiting for its quiet time, every peer of it
// is in sync, it serves no sync, and every node's revision log has the same size and Merkle
// root; then the folders on disk must be identical too (a change the watcher has not reported
// yet can make them differ; polling goes on until they agree or the deadline passes).
//
// Nothing lost (folder mode): every content the schedule wrote on some node is, after the last
// quiesce, on some node (live, a conflict copy, or a history blob), unless the schedule itself
// destroyed it (overwrote, edited or deleted it by hand on a node, when the listener may not
// have recorded it yet); and what a node held after the first quiesce it still holds at the end
// (converge-schedule.ts), unless the schedule deleted it by hand.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { listenerStatus } from '../../src/cli/resident-client.js';
import type { ListenerStatus } from '../../src/folder-sync/facade.js';
import { FOLDER_ID, type ConvergeCluster, type ConvergeNode } from './converge-cluster.js';

const POLL_MS = 100;

export interface QuietResult {
  readonly ok: boolean;
  readonly ms: number;
  readonly polls: number;
  /** Why the last poll was not quiet (on timeout: what held it up). */
  readonly last: string;
  /** What held quiet up, longest first: `waiting 6.1 s, syncing 0.8 s` (for where the time goes). */
  readonly heldBy: string;
}

/** The kind of a reason (`n1: with n2 waiting (...)` -> `waiting`). */
function reasonKind(why: string): string {
  if (why.includes('a local change waits')) return 'local change pending';
  if (why.includes('no listener')) return 'listener down';
  if (why.includes('serves')) return 'serving a sync';
  const state = /with \S+ (in-sync|syncing|waiting|error|paused)/.exec(why);
  if (state !== null) return state[1] ?? 'peer state';
  if (why.startsWith('revision sets differ')) return 'revision sets differ';
  if (why.startsWith('status quiet')) return 'disk differs';
  return 'other';
}

/** Why `node` is not quiet by its status, or undefined when it is (and its revisions). */
function notQuiet(
  node: ConvergeNode,
  s: ListenerStatus | string,
): { why: string } | { revisions: number; root: string } {
  if (typeof s === 'string') return { why: `${node.name}: no listener (${s})` };
  const f = (s.folders ?? []).find((x) => x.id === FOLDER_ID);
  if (f === undefined) return { why: `${node.name}: no folder ${FOLDER_ID}` };
  if (f.problem !== undefined) return { why: `${node.name}: ${f.problem}` };
  if (f.pending === true) return { why: `${node.name}: a local change waits` };
  const busy = f.peers.find((p) => p.state !== 'in-sync');
  if (busy !== undefined)
    return {
      why: `${node.name}: with ${busy.name ?? busy.peer} ${busy.state}${busy.error === undefined ? '' : ` (${busy.error})`}`,
    };
  const serving = s.activity.filter((a) => a.kind === 'sync');
  if (serving.length > 0) return { why: `${node.name}: serves ${serving.length} sync(s)` };
  if (f.root === undefined || f.revisions === undefined) return { why: `${node.name}: no revision log open yet` };
  return { revisions: f.revisions, root: f.root };
}

/**
 * Polls every node's status until all are quiet with equal revision sets and `identical()`
 * agrees, or `timeoutMs` passes. Listeners that are down are started first.
 */
export async function waitQuiet(
  cluster: ConvergeCluster,
  identical: () => Promise<boolean>,
  timeoutMs: number,
): Promise<QuietResult> {
  const started = Date.now();
  let polls = 0;
  let last = '';
  const held = new Map<string, number>();
  let lastPollAt = started;
  const heldBy = (): string =>
    [...held]
      .sort((a, b) => b[1] - a[1])
      .map(([k, ms]) => `${k} ${(ms / 1000).toFixed(1)} s`)
      .join(', ');
  await cluster.startAll();
  while (Date.now() - started < timeoutMs) {
    polls++;
    const signal = AbortSignal.timeout(30_000);
    const states = await Promise.all(
      cluster.nodes.map(async (n) =>
        notQuiet(n, await listenerStatus(n.home, signal).catch((err: unknown) => String(err))),
      ),
    );
    const waiting = states.flatMap((x) => ('why' in x ? [x.why] : []));
    if (waiting.length > 0) last = waiting.join('; ');
    else {
      const roots = new Set(
        states.map((x) => ('root' in x ? `${x.revisions} revisions, root ${x.root.slice(0, 12)}` : '')),
      );
      if (roots.size > 1) last = `revision sets differ: ${[...roots].join(' / ')}`;
      else if (!(await identical())) last = 'status quiet, but the folders on disk differ';
      else return { ok: true, ms: Date.now() - started, polls, last: '', heldBy: heldBy() };
    }
    const now = Date.now();
    const kind = reasonKind(waiting[0] ?? last);
    held.set(kind, (held.get(kind) ?? 0) + now - lastPollAt);
    lastPollAt = now;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  return { ok: false, ms: Date.now() - started, polls, last, heldBy: heldBy() };
}

/** `node`'s listener runs or serves a sync of the folder right now (a kill then strikes mid-sync). */
export async function syncingNow(node: ConvergeNode): Promise<boolean> {
  const s = await listenerStatus(node.home, AbortSignal.timeout(10_000)).catch(() => 'no answer');
  if (typeof s === 'string') return false;
  return (
    s.activity.some((a) => a.kind === 'sync') ||
    (s.folders ?? []).some((f) => f.peers.some((p) => p.state === 'syncing'))
  );
}

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

/** What the schedule wrote and destroyed by hand, for "nothing lost" in folder mode. */
export class WriteLedger {
  /** Content digest -> where it was written first (`n1:d0/f2`). */
  readonly #written = new Map<string, string>();
  readonly #destroyed = new Set<string>();

  /** Before the schedule overwrites, edits or deletes `abs` on a node: what it held is the user's to lose. */
  async destroying(abs: string): Promise<void> {
    const b = await readFile(abs).catch(() => undefined);
    if (b !== undefined) this.#destroyed.add(sha(b));
  }

  /** After the schedule wrote `abs` (`where` names it): its content now is a version that must not be lost. */
  async wrote(abs: string, where: string): Promise<void> {
    const b = await readFile(abs).catch(() => undefined);
    if (b !== undefined && !this.#written.has(sha(b))) this.#written.set(sha(b), where);
  }

  /** The schedule destroyed content `h` by hand on some node. */
  wasDestroyed(h: string): boolean {
    return this.#destroyed.has(h);
  }

  /** Versions written and not destroyed by hand that no node holds (`held`: every digest any node holds). */
  lost(held: ReadonlySet<string>): string[] {
    return [...this.#written]
      .filter(([h]) => !held.has(h) && !this.#destroyed.has(h))
      .map(([h, where]) => `${h.slice(0, 8)} (written as ${where})`);
  }
}
