// The path each peer was last reached by (paths.json in the home): `pair list` and `status`
// show it, and the next dial tries that address early (reach/path-sources.ts). A cache: a
// missing or unreadable file is an empty one, and a failed write is only logged by the caller.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../support/atomic-file.js';
import type { HostPort } from '../transport/types.js';
import { formatHostPort, parseHostPort } from './address.js';

export const LAST_PATHS_FILE = 'paths.json';
const PATH_NAMES = new Set(['lan', 'direct', 'mapped', 'punched', 'relayed']);
const MAX_FILE_BYTES = 1 << 20;

export interface LastPath {
  /** One of reach/paths.ts PathKind. */
  readonly path: string;
  /** HOST:PORT dialled (a local forwarder for punched and relayed paths). */
  readonly address: string;
  readonly rttMs?: number;
  /** ISO time of the session. */
  readonly at: string;
}

export async function readLastPaths(homeDir: string): Promise<Record<string, LastPath>> {
  try {
    const text = await readFile(join(homeDir, LAST_PATHS_FILE), 'utf8');
    if (text.length > MAX_FILE_BYTES) return {};
    const raw = JSON.parse(text) as { version?: unknown; peers?: unknown };
    if (raw.version !== 1 || typeof raw.peers !== 'object' || raw.peers === null) return {};
    const out: Record<string, LastPath> = {};
    for (const [id, v] of Object.entries(raw.peers as Record<string, Partial<LastPath>>)) {
      if (
        typeof v?.path === 'string' &&
        PATH_NAMES.has(v.path) &&
        typeof v.address === 'string' &&
        typeof v.at === 'string'
      ) {
        out[id] = {
          path: v.path,
          address: v.address,
          at: v.at,
          ...(typeof v.rttMs === 'number' ? { rttMs: v.rttMs } : {}),
        };
      }
    }
    return out;
  } catch {
    return {};
  }
}

/** The address a peer was last reached at, when it can be dialled again as is (lan or direct). */
export async function lastDirectAddress(
  homeDir: string,
  peerId: string,
): Promise<{ address: HostPort; path: 'lan' | 'direct' } | undefined> {
  const last = (await readLastPaths(homeDir))[peerId];
  if (last === undefined || (last.path !== 'lan' && last.path !== 'direct')) return undefined;
  try {
    return { address: parseHostPort(last.address), path: last.path };
  } catch {
    return undefined;
  }
}

/** Records how `peerId` was reached just now (read, change, write; a lost race loses one cache entry). */
export async function recordLastPath(
  homeDir: string,
  peerId: string,
  entry: { path: string; address: HostPort; rttMs?: number },
): Promise<void> {
  const all = await readLastPaths(homeDir);
  all[peerId] = {
    path: entry.path,
    address: formatHostPort(entry.address),
    ...(entry.rttMs === undefined ? {} : { rttMs: Math.round(entry.rttMs * 1000) / 1000 }),
    at: new Date().toISOString(),
  };
  await writeFileAtomic(
    join(homeDir, LAST_PATHS_FILE),
    JSON.stringify({ version: 1, peers: all }, null, 2) + '\n',
    0o600,
  );
}
