// Two nodes for the end-to-end sync tests: `a` runs a listener serving one share per name under
// work/server/, `b` is paired with it as `alice` and syncs work/client/<share> with `alice:<share>`.
import { mkdir, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { initNode, jsonLines, runCli, startListener, type RunningListener } from '../e2e/cli-harness.js';

export interface SyncPair {
  readonly a: { readonly home: string; readonly id: string };
  readonly b: { readonly home: string; readonly id: string };
  readonly listener: RunningListener;
  /** The directory holding server/ and client/. */
  readonly work: string;
  /** A path in the listener's share. */
  readonly server: (share: string, ...p: string[]) => string;
  /** A path in the client's folder synced with that share. */
  readonly client: (share: string, ...p: string[]) => string;
  /** `clawpeer sync` of the client folder: its done line, with every JSON line under `lines`. */
  readonly sync: (share: string, extra?: readonly string[]) => Promise<Record<string, unknown>>;
  /** `clawpeer log TARGET --json` on a home. */
  readonly revisions: (home: string, target: string) => Promise<Record<string, unknown>[]>;
}

/** Inits both homes, pairs them, starts `a`'s listener with `shares`; the caller stops it (listener.stop). */
export async function startSyncPair(
  labels: readonly [string, string],
  shares: readonly string[],
  workLabel: string,
): Promise<SyncPair> {
  const a = await initNode(labels[0]);
  const b = await initNode(labels[1]);
  const work = await mkdtemp(path.join(tmpdir(), `clawpeer-${workLabel}-`));
  await runCli(['--home', a.home, 'pair', 'add', b.id, '--name', 'bob']);
  const args: string[] = [];
  for (const name of shares) {
    await mkdir(path.join(work, 'server', name), { recursive: true });
    args.push('--share', `${name}=${path.join(work, 'server', name)}`);
  }
  const listener = await startListener(a.home, args);
  await runCli(['--home', b.home, 'pair', 'add', a.id, '--name', 'alice', '--addr', `127.0.0.1:${listener.port}`]);
  const client = (share: string, ...p: string[]): string => path.join(work, 'client', share, ...p);
  return {
    a,
    b,
    listener,
    work,
    server: (share, ...p) => path.join(work, 'server', share, ...p),
    client,
    sync: async (share, extra = []) => {
      const r = await runCli(['--home', b.home, 'sync', client(share), `alice:${share}`, '--json', ...extra]);
      if (r.code !== 0) throw new Error(`sync ${share} exited ${String(r.code)}: ${r.stderr}`);
      const lines = jsonLines(r.stdout);
      const last = lines.at(-1);
      if (last?.['event'] !== 'done') throw new Error(`no done event: ${r.stdout}`);
      return { ...last, lines };
    },
    revisions: async (home, target) => {
      const r = await runCli(['--home', home, 'log', target, '--json']);
      if (r.code !== 0) throw new Error(`log ${target} exited ${String(r.code)}: ${r.stderr}`);
      return jsonLines(r.stdout);
    },
  };
}
