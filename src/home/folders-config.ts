// The shared folders of a node: the `folders` array of the home's config.json, which `clawpeer
// folder add/remove/pause/resume` edit and a running listener follows (folders/folder-service.ts).
//
// Goals: one parser for the file and the commands, so a bad entry is named the same way
// wherever it comes from (CONFIG_INVALID naming the folder and the key); edits keep every other
// key of config.json as it was and replace the file atomically. Non-goals: reaching peers
// (config-file.ts), applying a versioning policy (only its syntax is checked here).
import { parseVersioning } from '../sync/versioning.js';
import { configFileOf, readConfigJson } from './config-json.js';
export { configFileOf } from './config-json.js';
import { realpath } from 'node:fs/promises';
import path from 'node:path';
import { ClawpeerError } from '../errors.js';
import { writeFileAtomic } from '../support/atomic-file.js';

export type FolderMode = 'two-way' | 'send-only' | 'receive-only';
export const FOLDER_MODES: readonly FolderMode[] = ['two-way', 'send-only', 'receive-only'];
/** What replaced and deleted content is kept as (Syncthing's file versioning); the sync core applies it. */
export const DEFAULT_VERSIONING = 'keep-last:10';
/** Fallback interval between syncs of a folder with each peer when nothing told of a change, s (Syncthing's rescanIntervalS). */
export const DEFAULT_FOLDER_INTERVAL_S = 60;
export const FOLDER_INTERVAL_LIMITS_S: readonly [number, number] = [1, 86_400];
/** Folders one home may configure (each costs a watcher and a share). */
export const MAX_FOLDERS = 256;
const FOLDER_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const FOLDER_KEYS = new Set(['id', 'path', 'with', 'mode', 'versioning', 'paused', 'intervalS']);

export interface FolderConfig {
  /** Names the folder on every device (the share name peers sync with). */
  readonly id: string;
  /** Absolute local path. */
  readonly path: string;
  /** Paired peers (pair names or node ids) it is shared with. */
  readonly with: readonly string[];
  readonly mode: FolderMode;
  /** `keep-last:N`, `trashcan:DAYS` or `staggered` (checked here, applied by the sync core). */
  readonly versioning: string;
  readonly paused: boolean;
  readonly intervalS: number;
}

/** A versioning spec (sync/versioning.ts) or undefined when it is not one; the error says why. */
export function versioningProblem(text: string): string | undefined {
  try {
    parseVersioning(text);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

/** Whether `id` is a folder id (what a peer's share name must be to count as a folder it offers). */
export const isFolderId = (id: string): boolean => FOLDER_ID.test(id);

export function checkFolderId(id: string, what: string): string {
  if (!FOLDER_ID.test(id))
    throw new ClawpeerError(
      'USAGE',
      `${what} ${JSON.stringify(id)} is not a folder id: use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit`,
    );
  return id;
}

/** Checks the `folders` value of config.json; CONFIG_INVALID naming `where`, the folder and the key. */
export function parseFolders(raw: unknown, where: string): FolderConfig[] {
  const bad = (why: string): ClawpeerError => new ClawpeerError('CONFIG_INVALID', `${where}: ${why}`);
  if (raw === undefined) return [];
  if (!Array.isArray(raw))
    throw bad(
      `folders must be a list of objects such as [{"id": "docs", "path": "/home/me/docs", "with": ["alice"]}], got ${JSON.stringify(raw)}`,
    );
  if (raw.length > MAX_FOLDERS) throw bad(`folders lists ${raw.length} folders; at most ${MAX_FOLDERS}`);
  const seenIds = new Set<string>();
  const seenPaths = new Set<string>();
  return raw.map((item: unknown, i) => {
    if (typeof item !== 'object' || item === null || Array.isArray(item))
      throw bad(`folders[${i}] must be an object, got ${JSON.stringify(item)}`);
    const o = item as Record<string, unknown>;
    const name = typeof o['id'] === 'string' ? `folders[${i}] (${o['id']})` : `folders[${i}]`;
    for (const key of Object.keys(o)) {
      if (!FOLDER_KEYS.has(key))
        throw bad(`${name}: unknown key ${JSON.stringify(key)} (known: ${[...FOLDER_KEYS].join(', ')})`);
    }
    const id = o['id'];
    if (typeof id !== 'string' || !FOLDER_ID.test(id))
      throw bad(`${name}.id must be 1 to 64 letters, digits, '.', '_' or '-', got ${JSON.stringify(id)}`);
    if (seenIds.has(id)) throw bad(`${name}.id ${JSON.stringify(id)} is given twice`);
    seenIds.add(id);
    const dir = o['path'];
    if (typeof dir !== 'string' || !path.isAbsolute(dir))
      throw bad(`${name}.path must be an absolute path, got ${JSON.stringify(dir)}`);
    const resolved = path.resolve(dir);
    if (seenPaths.has(resolved)) throw bad(`${name}.path ${resolved} is the path of another folder too`);
    seenPaths.add(resolved);
    const peers = o['with'];
    if (!Array.isArray(peers) || !peers.every((p) => typeof p === 'string' && p !== '' && p.length <= 128))
      throw bad(
        `${name}.with must be a list of pair names or node ids such as ["alice", "bob"], got ${JSON.stringify(peers)}`,
      );
    const mode = o['mode'] ?? 'two-way';
    if (!FOLDER_MODES.includes(mode as FolderMode))
      throw bad(`${name}.mode must be one of ${FOLDER_MODES.join(', ')}, got ${JSON.stringify(mode)}`);
    const versioning = o['versioning'] ?? DEFAULT_VERSIONING;
    if (typeof versioning !== 'string' || versioningProblem(versioning) !== undefined)
      throw bad(
        `${name}.versioning must be keep-last:N, trashcan:DAYS or staggered[:DAYS], got ${JSON.stringify(versioning)}`,
      );
    const paused = o['paused'] ?? false;
    if (typeof paused !== 'boolean') throw bad(`${name}.paused must be true or false, got ${JSON.stringify(paused)}`);
    const intervalS = o['intervalS'] ?? DEFAULT_FOLDER_INTERVAL_S;
    const [lo, hi] = FOLDER_INTERVAL_LIMITS_S;
    if (typeof intervalS !== 'number' || !Number.isInteger(intervalS) || intervalS < lo || intervalS > hi)
      throw bad(`${name}.intervalS must be an integer of seconds in ${lo}..${hi}, got ${JSON.stringify(intervalS)}`);
    return {
      id,
      path: resolved,
      with: [...new Set(peers as string[])],
      mode: mode as FolderMode,
      versioning,
      paused,
      intervalS,
    };
  });
}

/** The config file's object as it is on disk ({} when there is none); CONFIG_INVALID when it is no JSON object. */
/** config.json as an object ({} when there is none). */
async function readRawConfig(file: string): Promise<Record<string, unknown>> {
  const raw = (await readConfigJson(file)) ?? {};
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new ClawpeerError('CONFIG_INVALID', `${file}: expected a JSON object`);
  return raw as Record<string, unknown>;
}

/** The folders of the home at `homeDir` (none without a config.json). */
export async function loadFolders(homeDir: string): Promise<FolderConfig[]> {
  const file = configFileOf(homeDir);
  return parseFolders((await readRawConfig(file))['folders'], file);
}

/**
 * Applies `change` to the folders of config.json and writes the file back atomically, every
 * other key untouched. `change` throws to refuse (nothing is written then).
 */
export async function editFolders(
  homeDir: string,
  change: (folders: FolderConfig[]) => FolderConfig[],
): Promise<FolderConfig[]> {
  const file = configFileOf(homeDir);
  const raw = await readRawConfig(file);
  const next = change(parseFolders(raw['folders'], file));
  parseFolders(next, file); // the result must read back
  const out = { ...raw, folders: next.map(toJson) };
  await writeFileAtomic(file, JSON.stringify(out, null, 2) + '\n', 0o600);
  return next;
}

/** A folder as config.json keeps it: defaults left out, so the file stays short. */
function toJson(f: FolderConfig): Record<string, unknown> {
  return {
    id: f.id,
    path: f.path,
    with: f.with,
    mode: f.mode,
    versioning: f.versioning,
    ...(f.paused ? { paused: true } : {}),
    ...(f.intervalS === DEFAULT_FOLDER_INTERVAL_S ? {} : { intervalS: f.intervalS }),
  };
}

/** `a` is `b` or lies inside it (absolute paths, compared as given). */
function isWithin(a: string, b: string): boolean {
  const rel = path.relative(b, a);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

/**
 * The first of `folders` whose path holds `dir` or lies inside it (paths compared as given,
 * absolute). One synced folder inside another would have the outer one sync the inner one's
 * `.clawpeer/` state (its open revision log) as content, and both sync the inner files.
 */
export function overlappingFolder(folders: readonly FolderConfig[], dir: string): FolderConfig | undefined {
  return folders.find((f) => isWithin(dir, f.path) || isWithin(f.path, dir));
}

/**
 * The folders of the home at `homeDir` (paused ones too) that a sync of `dir` reaches into: the
 * one `dir` is or lies inside, and any inside `dir`. Paths compared with symlinks resolved where
 * they exist, so a sync names a folder by any path to it.
 */
export async function foldersReachedBy(homeDir: string, dir: string): Promise<FolderConfig[]> {
  const folders = await loadFolders(homeDir);
  if (folders.length === 0) return [];
  const real = (p: string): Promise<string> => realpath(p).catch(() => path.resolve(p));
  const target = await real(dir);
  const reached: FolderConfig[] = [];
  for (const f of folders) {
    const at = await real(f.path);
    if (isWithin(target, at) || isWithin(at, target)) reached.push(f);
  }
  return reached;
}
