// Listeners on loopback that share folders with each other (folders/folder-service.ts), for the
// folder tests: each node has a home with LAN discovery off, a listener, every other node
// paired at its listener's address, and a folder directory. Nodes start in parallel.
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { initNode, jsonLines, runCli, startListener, tempHome, type RunningListener } from './cli-harness.js';

export interface FolderNode {
  readonly name: string;
  readonly home: string;
  readonly id: string;
  readonly dir: string;
  listener: RunningListener;
}

export type FolderRecord = {
  id: string;
  pending?: boolean;
  revisions?: number;
  root?: string;
  localChanges?: number;
  localChangePaths?: string[];
  peerChanges?: number;
  peerChangePaths?: string[];
  peers: { peer: string; state: string; lastSyncAt?: number }[];
};

/** `extra`: more `listen` options for the named nodes. */
export async function startFolderNodes(
  names: readonly string[],
  extra: Readonly<Record<string, readonly string[]>> = {},
): Promise<FolderNode[]> {
  const work = await tempHome('folders');
  const nodes = await Promise.all(
    names.map(async (name): Promise<FolderNode> => {
      const { home, id } = await initNode(`f${name}`);
      // No LAN discovery: peers are reached at the addresses pinned below.
      await writeFile(path.join(home, 'config.json'), JSON.stringify({ lanDiscovery: false }));
      const dir = path.join(work, name);
      await mkdir(dir);
      return { name, home, id, dir, listener: await startListener(home, ['-v', ...(extra[name] ?? [])]) };
    }),
  );
  await Promise.all(
    nodes.map(async (n) => {
      for (const other of nodes) {
        if (other === n) continue;
        const r = await runCli([
          '--home',
          n.home,
          'pair',
          'add',
          other.id,
          '--name',
          other.name,
          '--addr',
          `127.0.0.1:${other.listener.port}`,
        ]);
        if (r.code !== 0) throw new Error(`pair add failed: ${r.stderr}`);
      }
    }),
  );
  return nodes;
}

/** Polls `check` every 25 ms; on timeout, throws with each node's recent log. */
export async function until(
  nodes: readonly FolderNode[],
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 10_000,
): Promise<number> {
  const started = Date.now();
  while (Date.now() - started < timeoutMs) {
    if (await check()) return Date.now() - started;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(
    `timed out after ${timeoutMs} ms waiting for ${what}\n${nodes.map((n) => `--- ${n.name}\n${n.listener.stderr().slice(-4000)}`).join('\n')}`,
  );
}

export const hasText = (p: string, text: string) => async (): Promise<boolean> =>
  (await readFile(p, 'utf8').catch(() => undefined)) === text;

/** `clawpeer --home HOME ARGS --json`, its JSON lines; throws with stderr when it fails. */
export async function cli(home: string, args: string[]): Promise<Record<string, unknown>[]> {
  const r = await runCli(['--home', home, ...args, '--json']);
  if (r.code !== 0) throw new Error(`${args.join(' ')} failed (${r.code}): ${r.stderr}`);
  return jsonLines(r.stdout);
}

export async function statusOf(n: FolderNode): Promise<Record<string, unknown>> {
  const r = await runCli(['--home', n.home, 'status', '--json']);
  if (r.code !== 0) throw new Error(`status failed: ${r.stderr}`);
  return jsonLines(r.stdout)[0] ?? {};
}

export const foldersOf = async (n: FolderNode): Promise<FolderRecord[]> =>
  ((await statusOf(n))['folders'] ?? []) as FolderRecord[];

/** Every node reports folder `id` in sync with each of its peers. */
export async function allInSync(nodes: readonly FolderNode[], id: string): Promise<boolean> {
  const states = await Promise.all(nodes.map(async (n) => (await foldersOf(n)).find((x) => x.id === id)));
  return states.every(
    (f) =>
      f !== undefined &&
      f.peers.length === nodes.length - 1 &&
      f.peers.every((p) => p.state === 'in-sync' && typeof p.lastSyncAt === 'number'),
  );
}

/** `clawpeer folder add` on every node, shared with all the others. */
export async function addFolderEverywhere(
  nodes: readonly FolderNode[],
  id: string,
): Promise<Record<string, unknown>[]> {
  return Promise.all(
    nodes.map(async (n) => {
      const others = nodes
        .filter((o) => o !== n)
        .map((o) => o.name)
        .join(',');
      const r = await runCli(['--home', n.home, 'folder', 'add', n.dir, '--id', id, '--with', others, '--json']);
      if (r.code !== 0) throw new Error(`folder add failed: ${r.stderr}`);
      return jsonLines(r.stdout)[0] ?? {};
    }),
  );
}

/** Folder `docs` on A two-way and on B receive-only, each with the other, an hour's interval: only what a test does moves. */
export async function addReceiveOnlyDocs(A: FolderNode, B: FolderNode): Promise<void> {
  await cli(A.home, ['folder', 'add', A.dir, '--id', 'docs', '--with', B.name, '--interval', '3600']);
  await cli(B.home, [
    ...['folder', 'add', B.dir, '--id', 'docs', '--with', A.name],
    ...['--interval', '3600', '--mode', 'receive-only'],
  ]);
}

/** `docs` as node `n` reports it. */
export const docsOn = async (n: FolderNode): Promise<FolderRecord | undefined> =>
  (await foldersOf(n)).find((f) => f.id === 'docs');

/** Both nodes report the same root for `docs`, nothing pending. */
export const docsRootsAgree = (A: FolderNode, B: FolderNode) => async (): Promise<boolean> => {
  const [a, b] = await Promise.all([docsOn(A), docsOn(B)]);
  return a?.root !== undefined && a.root === b?.root && a.pending === false && b.pending === false;
};

/** The `folder-sync` entries of `folder log ID` on `n`. */
export const folderSyncLog = async (n: FolderNode, id: string): Promise<Record<string, unknown>[]> =>
  (await cli(n.home, ['folder', 'log', id])).filter((e) => e['event'] === 'folder-sync');
