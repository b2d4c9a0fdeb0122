// `clawpeer folder revert ID`: Syncthing's "Revert Local Changes" of a receive-only folder. The
// folder then holds exactly the peers' versions of the paths changed here; the local bytes are
// moved aside (never lost) and the changes' revisions withdrawn from the log, so `status` no
// longer lists them and a peer's next sync sees the root it would have seen without them.
//
// What is withdrawn: the revisions made here (origin = this node) that every peer of the folder
// lacked at this node's last sync with it (the sync's `lacking`, local-changes.ts), or that were
// made after that sync (a counter above the one it recorded: nothing here sends in receive-only
// mode, so the peer cannot have them). Local deletions too: the peers' version comes back. A
// path ignored here is left alone, as a sync leaves it.
//
// Order, under the folder's lock (openSyncedFolder: a scan first, so the log matches the disk):
// plan; gather the bytes of each new head that is a file (the file here when the scan certified
// the same content, else fetched by root from a peer into a staging directory under
// .clawpeer/); only when everything is at hand, withdraw (one transaction), move what is on disk
// at each changed path aside to .clawpeer/reverted/<time>/<path> (deepest first), and put each
// new head in place (shallowest first), certified warm. A failure before the withdrawal changes
// nothing; after it, the next scan records whatever is on disk, and the local bytes are in the
// reverted directory. Runs in the listener, in the folder's turn (FolderService.revert), which
// then syncs the folder with its peers: a peer's revision skipped while the local edit was kept
// (never stored) lands now.
import { lstatSync, type BigIntStats } from 'node:fs';
import { chmod, lstat, lutimes, mkdir, readdir, realpath, rename, rm, rmdir, symlink } from 'node:fs/promises';
import path from 'node:path';
import { toHex } from '../chunking/blake3.js';
import { ClawpeerError, isClawpeerError } from '../errors.js';
import { defaultFolderChunking } from '../folder-sync/folder-history.js';
import type { RevertReport, RevertedPath } from '../folder-sync/resident-protocol.js';
import { conflictCopyRevision } from '../folder-sync/sync-plan.js';
import type { FetchRequest } from '../folder-sync/sync-exchange.js';
import { openSyncedFolder, type SyncedFolder } from '../folder-sync/synced-folder.js';
import { writeOwnCopy } from '../folder-sync/conflict-copy.js';
import { resolvePeer } from '../home/peer-resolve.js';
import { isRacy } from '../store/file-key.js';
import { INTERNAL_DIR_NAME } from '../store/internal-names.js';
import { syncDir } from '../store/partial-store.js';
import type { RevisionStore } from '../store/revision-store.js';
import { warmStatOf } from '../store/revlog-format.js';
import { toSeconds } from '../store/staged-file.js';
import { conflictPath, pickHead } from '../sync/conflict.js';
import { floorMs, mtimeMsOf, type RevisionEntry } from '../sync/revision.js';
import { counterOf } from '../sync/version-vector.js';
import { isConfinedRealpath } from '../transfer/paths.js';
import type { ActiveFolder, FolderServiceOptions } from './folder-service-types.js';
import type { LocalChangeReports, PeerLacking } from './local-changes.js';

/** Where the local bytes go, under the folder's .clawpeer/. */
export const REVERTED_DIR_NAME = 'reverted';
/** How long the revert waits for a sync of the folder (a peer's) to finish, ms. */
const REVERT_LOCK_WAIT_MS = 30_000;
/** A peer busy with a sync of its copy (its lock) is asked again this often, this many times. */
const FETCH_BUSY_RETRY_MS = 1_000;
const FETCH_TRIES = 5;

export interface RevertFolderOptions {
  readonly service: FolderServiceOptions;
  readonly folderId: string;
  /** The folder as the service runs it (undefined: not in the config, or not started). */
  readonly active: ActiveFolder | undefined;
  readonly reports: LocalChangeReports;
  readonly dryRun: boolean;
  readonly signal: AbortSignal;
}

/** One path whose revisions are withdrawn (or, for unignored-catch-up.ts, whose head moves). */
export interface PathRevert {
  readonly path: string;
  readonly before: RevisionEntry | undefined;
  readonly after: RevisionEntry | undefined;
  readonly withdrawn: readonly RevisionEntry[];
}

const kindOf = (e: RevisionEntry | undefined): RevertedPath['peers'] =>
  e === undefined ? 'none' : e.revision.deleted ? 'deleted' : e.revision.kind;
const sameHead = (a: RevisionEntry | undefined, b: RevisionEntry | undefined): boolean =>
  a === b || (a !== undefined && b !== undefined && toHex(a.id) === toHex(b.id));
const isLiveFile = (e: RevisionEntry | undefined): e is RevisionEntry =>
  e !== undefined && !e.revision.deleted && e.revision.kind === 'file';
export const depth = (p: string): number => p.split('/').length;

/** What gather's fetches need of the options: the service, the folder (its share) and the signal. */
type FetchContext = Pick<RevertFolderOptions, 'service' | 'folderId' | 'signal'>;

/** The conflict-copy test the sync's plan gives pickHead (sync-plan.ts `copiedBefore`, without received records). */
export function copiedIn(store: RevisionStore): (e: RevisionEntry) => boolean {
  return (e) => {
    const r = e.revision;
    if (r.deleted || r.kind !== 'file') return false;
    return store.has(conflictCopyRevision(r, conflictPath(r.path, r.mtimeNs, r.origin)).id);
  };
}

/** The peers whose versions the revert takes, with what each lacks (folder-revert's `lackingOf`). */
interface SyncedPeers {
  readonly peerIds: readonly string[];
  readonly lacking: readonly PeerLacking[];
}

/**
 * What the folder's peers lack now, per peer that has the folder: a peer that answered its last
 * sync since the listener started that it has no such folder (removed, or never added) or paused
 * it is left out, as if not a peer of the folder. It holds no version the revert must keep: a
 * removed copy none, and a paused one is synced with no more until it resumes (should it hold a
 * revision withdrawn here, made when this copy still sent, its next sync brings that back as the
 * peers' version). Refused when a peer has neither synced nor refused since the listener started,
 * or when every peer refused (no peer's version to take).
 */
async function lackingOf(o: RevertFolderOptions, peerIds: readonly string[]): Promise<SyncedPeers> {
  const synced: string[] = [];
  const lacking: PeerLacking[] = [];
  const absent: string[] = [];
  const names = new Map((await o.service.peers.list().catch(() => [])).map((p) => [p.id, p.name]));
  const named = (peer: string): string => {
    const name = names.get(peer);
    return name === undefined ? peer : `${name} (${peer})`;
  };
  for (const peer of peerIds) {
    const l = o.reports.lacking(o.folderId, peer);
    if (l !== undefined) {
      synced.push(peer);
      lacking.push(l);
      continue;
    }
    const why = o.reports.absence(o.folderId, peer);
    if (why !== undefined) {
      absent.push(
        `${named(peer)} ${why === 'paused' ? 'has paused it' : 'refused it as unknown (not added there, removed, or paused by an older version)'}`,
      );
      continue;
    }
    throw new ClawpeerError(
      'UNREACHABLE',
      `folder ${o.folderId} has not synced with peer ${named(peer)} since the listener started: the revert needs each peer's last sync to know which local changes it lacks; try again once \`clawpeer status\` shows a sync with it`,
    );
  }
  if (synced.length === 0)
    throw new ClawpeerError(
      'UNREACHABLE',
      `folder ${o.folderId} has no peer to take the versions from: ${absent.join('; ')}; the revert needs a peer that has the folder and synced it since the listener started`,
    );
  return { peerIds: synced, lacking };
}

/** The paths to revert: each with the revisions to withdraw and its head before and after. */
function planRevert(folder: SyncedFolder, nodeId: string, lacking: readonly PeerLacking[]): PathRevert[] {
  const { store } = folder;
  const oldest = Math.min(...lacking.map((l) => l.localCounter));
  const withdrawable = (e: RevisionEntry): boolean => {
    if (e.revision.origin !== nodeId) return false;
    const counter = counterOf(e.revision.vector, nodeId);
    return lacking.every((l) => l.ids.has(toHex(e.id)) || counter > l.localCounter);
  };
  const candidates = new Set<string>();
  for (const l of lacking)
    for (const idHex of l.ids) {
      const e = store.get(Buffer.from(idHex, 'hex'));
      if (e !== undefined && e.revision.origin === nodeId) candidates.add(e.revision.path);
    }
  // Made here after the last sync with some peer: not in any report yet.
  for (const h of store.heads())
    if (h.revision.origin === nodeId && counterOf(h.revision.vector, nodeId) > oldest) candidates.add(h.revision.path);
  const copied = copiedIn(store);
  const plan: PathRevert[] = [];
  for (const p of [...candidates].sort()) {
    const history = store.history(p);
    const withdrawn = history.filter(withdrawable);
    if (withdrawn.length === 0) continue;
    const before = store.head(p);
    // Left alone, as a sync leaves an ignored path's file.
    if (folder.ignore.ignores(p, before?.revision.kind === 'dir')) continue;
    const gone = new Set(withdrawn.map((e) => toHex(e.id)));
    const after = pickHead(
      history.filter((e) => !gone.has(toHex(e.id))),
      copied,
    )?.head;
    plan.push({ path: p, before, after, withdrawn });
  }
  return plan;
}

/** The folder `id` as the listener runs it: USAGE when it runs none (revert's and override's first check). */
export function runningFolder(id: string, active: ActiveFolder | undefined): ActiveFolder {
  if (active === undefined)
    throw new ClawpeerError(
      'USAGE',
      `no folder ${JSON.stringify(id)} runs in this home's listener (clawpeer folder list; one just added starts within seconds)`,
    );
  return active;
}

/** `folder revert`: see the top of the file. Refusals are USAGE (not a receive-only folder here) or UNREACHABLE (a peer not synced yet). */
export async function revertFolder(o: RevertFolderOptions): Promise<RevertReport> {
  const { folderId: id } = o;
  const active = runningFolder(id, o.active);
  const f = active.config;
  if (f.mode !== 'receive-only')
    throw new ClawpeerError(
      'USAGE',
      `folder ${id} is ${f.mode}: revert takes back the local changes of a receive-only folder (Syncthing's Revert Local Changes); a ${f.mode} folder sends its changes to its peers`,
    );
  if (f.paused)
    throw new ClawpeerError('USAGE', `folder ${id} is paused: resume it first (clawpeer folder resume ${id})`);
  if (active.peerIds.length === 0)
    throw new ClawpeerError(
      'USAGE',
      `folder ${id} has no peer it runs with${active.problem === undefined ? '' : ` (${active.problem})`}: nothing to take the peers' versions from`,
    );
  const { peerIds, lacking } = await lackingOf(o, active.peerIds);
  const nodeId = o.service.identity.nodeId;
  const log = o.service.log.child('folders');
  const folder = await openSyncedFolder(f.path, {
    requireMarker: true,
    nodeId,
    chunking: defaultFolderChunking(),
    lockWaitMs: REVERT_LOCK_WAIT_MS,
    log,
    signal: o.signal,
    resident: o.service.resident,
  });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const incoming = path.join(f.path, INTERNAL_DIR_NAME, `revert-incoming-${stamp}`);
  try {
    const plan = planRevert(folder, nodeId, lacking);
    const changed = plan.filter((p) => !sameHead(p.before, p.after));
    const report = (keptIn?: string, forget: ReadonlySet<string> = new Set()): RevertReport => ({
      folder: id,
      dryRun: o.dryRun,
      withdrawn: plan.reduce((n, p) => n + p.withdrawn.length, 0),
      paths: changed.map((p) => ({
        path: p.path,
        local: kindOf(p.before) as RevertedPath['local'],
        peers: kindOf(p.after),
        ...(forget.has(p.path) ? { bySync: true } : {}),
      })),
      ...(keptIn === undefined ? {} : { keptIn }),
    });
    if (o.dryRun || plan.length === 0) return report();
    const folderReal = await realpath(f.path);
    await mkdir(incoming, { recursive: true, mode: 0o700 });
    const forget = await gather(o, folder, changed, incoming, peerIds);
    // Everything the new heads need is at hand: from here on the log and the disk change.
    const ids = plan.flatMap((p) => (forget.has(p.path) ? folder.store.history(p.path) : p.withdrawn).map((e) => e.id));
    const withdrawn = folder.store.withdraw(ids, copiedIn(folder.store));
    // The log no longer matches the disk until everything below is done (and at a path left as it
    // is, not at all): the folder's next scan walks it whole, whatever its watcher saw.
    o.service.resident.watchers.forFolder(folder.dir).distrust();
    // The log's heads now are the plan's (the same pickHead over the same set): a path where they
    // are not is left for the next scan, which records what is on disk, rather than misplaced.
    const headNow = new Map(withdrawn.paths.map((w) => [w.path, w.headAfter]));
    const unplanned = new Set(
      changed.filter((p) => !forget.has(p.path) && !sameHead(headNow.get(p.path), p.after)).map((p) => p.path),
    );
    for (const p of unplanned) log.warn('revert: the log chose another head than planned; left as it is', { path: p });
    const keptIn = path.join(folderReal, INTERNAL_DIR_NAME, REVERTED_DIR_NAME, stamp);
    let kept = false;
    for (const p of [...changed].sort((a, b) => depth(b.path) - depth(a.path)))
      if (!unplanned.has(p.path)) kept = (await moveAside(folderReal, p, keptIn)) || kept;
    const nowNs = BigInt(Date.now()) * 1_000_000n;
    for (const p of [...changed].sort((a, b) => depth(a.path) - depth(b.path)))
      if (!forget.has(p.path) && !unplanned.has(p.path)) await place(folderReal, folder.store, p, incoming, nowNs);
    log.info('folder reverted', { folder: id, withdrawn: ids.length, paths: changed.length, keptIn });
    return report(kept ? keptIn : undefined, forget);
  } finally {
    await rm(incoming, { recursive: true, force: true }).catch(() => undefined);
    await folder.close();
  }
}

/**
 * Puts the bytes of each new head that is a file in `incoming` at its path: a copy of the file
 * here when the scan certified the same content for the old head (a touch, a chmod), else
 * fetched by root from the folder's peers in turn. Returns the paths whose content a peer
 * answered for but none had: the peer's version replaced it since, and a file's older bytes
 * are kept nowhere (a node keeps in history only what a sync replaced); such a path is
 * forgotten here (every revision of it withdrawn), so the next sync brings what the peers have
 * now. Throws, naming the paths, when no peer could be asked: nothing has changed yet.
 */
export async function gather(
  o: FetchContext,
  folder: SyncedFolder,
  changed: readonly PathRevert[],
  incoming: string,
  peerIds: readonly string[],
): Promise<Set<string>> {
  let wanted: FetchRequest[] = [];
  for (const { path: rel, before, after } of changed) {
    if (!isLiveFile(after)) continue;
    const r = after.revision;
    const request = {
      sourcePath: rel,
      root: r.contentRoot,
      destPath: rel,
      mode: r.mode & 0o777,
      mtimeMs: mtimeMsOf(r),
    };
    const abs = path.join(folder.dir, ...rel.split('/'));
    const st = statOf(abs);
    if (
      isLiveFile(before) &&
      toHex(before.revision.contentRoot) === toHex(r.contentRoot) &&
      st?.isFile() === true &&
      folder.store.isWarm(rel, warmStatOf(st))
    ) {
      const to = path.join(incoming, ...rel.split('/'));
      await mkdir(path.dirname(to), { recursive: true });
      await writeOwnCopy(abs, to, request.mode, request.mtimeMs);
      continue;
    }
    wanted.push(request);
  }
  const failures: string[] = [];
  let answered = false;
  for (const peerId of peerIds) {
    if (wanted.length === 0) break;
    try {
      const delivered = await fetchWithRetries(o, peerId, incoming, wanted);
      answered = true;
      const got = new Set(delivered.map((d) => d.sourcePath));
      wanted = wanted.filter((w) => !got.has(w.sourcePath));
    } catch (err) {
      if (o.signal.aborted) throw err;
      failures.push(`${peerId}: ${(err as Error).message}`);
    }
  }
  if (wanted.length === 0 || answered) return new Set(wanted.map((w) => w.sourcePath));
  const names = wanted.map((w) => w.sourcePath);
  throw new ClawpeerError(
    'UNREACHABLE',
    `cannot revert folder ${o.folderId}: no peer gave the content of its version of ${names.slice(0, 5).join(', ')}${names.length > 5 ? ` and ${names.length - 5} more` : ''}${failures.length > 0 ? ` (${failures.join('; ')})` : ''}; nothing was changed`,
  );
}

/** One fetch from `peerId`, asked again while the peer's copy is busy with a sync (its lock). */
async function fetchWithRetries(
  o: FetchContext,
  peerId: string,
  incoming: string,
  requests: readonly FetchRequest[],
): Promise<FetchRequest[]> {
  const { fetchFromPeer } = await import('../folder-sync/restore-fetch.js');
  const peer = await resolvePeer(o.service.peers, peerId, undefined);
  const paths = await o.service.dialPaths?.(peer);
  for (let attempt = 1; ; attempt++) {
    try {
      return await fetchFromPeer({
        identity: o.service.identity,
        peer,
        config: o.service.config,
        ...(paths === undefined ? {} : { paths }),
        share: o.folderId,
        folder: incoming,
        requests,
        feature: 'revert',
        log: o.service.log.child('folders'),
        signal: o.signal,
      });
    } catch (err) {
      const busy = isClawpeerError(err, 'FOLDER_BUSY') || isClawpeerError(err, 'PEER_BUSY');
      if (!busy || attempt >= FETCH_TRIES || o.signal.aborted) throw err;
      await new Promise((resolve) => setTimeout(resolve, FETCH_BUSY_RETRY_MS));
    }
  }
}

/** `abs`'s lstat; undefined when nothing is there, also under a file where a directory was (ENOTDIR). */
function statOf(abs: string): BigIntStats | undefined {
  try {
    return lstatSync(abs, { bigint: true, throwIfNoEntry: false });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOTDIR') return undefined;
    throw err;
  }
}

/**
 * The path `rel` in the folder, its directory checked to be the folder's own, reached through no
 * symlink (`folderReal` is a real path); undefined when there is no such directory. `linked`:
 * what to do when a symlink is on the way ('skip': undefined, else refused).
 */
export async function confined(
  folderReal: string,
  rel: string,
  linked: 'skip' | 'refuse',
): Promise<string | undefined> {
  const abs = path.join(folderReal, ...rel.split('/'));
  let parent: string;
  try {
    parent = await realpath(path.dirname(abs));
  } catch {
    return undefined; // no directory there: nothing to move, and place() makes it
  }
  if (parent !== path.dirname(abs) || !isConfinedRealpath(folderReal, parent)) {
    if (linked === 'skip') return undefined;
    throw new ClawpeerError('PATH_INVALID', `${rel} refused: its directory is reached through a symlink`);
  }
  return abs;
}

/**
 * Moves what is at `p`'s path into `keptIn` (a directory the new head keeps as one stays); true
 * when something moved. A path below a symlink (a directory replaced here by a link) is not in
 * the folder: nothing of it moves, and the link, a change of its own, is moved aside after it
 * (deepest first), never what it points to.
 */
export async function moveAside(folderReal: string, p: PathRevert, keptIn: string): Promise<boolean> {
  const abs = await confined(folderReal, p.path, 'skip');
  if (abs === undefined) return false;
  const st = await lstat(abs).catch(() => undefined);
  if (st === undefined) return false;
  const staysDir = p.after !== undefined && !p.after.revision.deleted && p.after.revision.kind === 'dir';
  if (st.isDirectory() && staysDir) return false;
  const to = path.join(keptIn, ...p.path.split('/'));
  await mkdir(path.dirname(to), { recursive: true, mode: 0o700 });
  await moveInto(abs, to);
  await syncDir(path.dirname(abs));
  return true;
}

/**
 * Renames `from` to `to`; a directory whose place is taken by one already (its entries that
 * changed here were moved there first, deepest first) has what is left moved into it, then goes.
 */
async function moveInto(from: string, to: string): Promise<void> {
  const there = await lstat(to).catch(() => undefined);
  if (there === undefined) return rename(from, to);
  const st = await lstat(from);
  if (!st.isDirectory() || !there.isDirectory()) {
    for (let n = 1; ; n++) {
      const other = `${to}.${n}`;
      if ((await lstat(other).catch(() => undefined)) === undefined) return rename(from, other);
    }
  }
  for (const name of await readdir(from)) await moveInto(path.join(from, name), path.join(to, name));
  await rmdir(from);
}

/** Puts `p`'s new head at its path (a file from `incoming`), a published file certified warm. */
export async function place(
  folderReal: string,
  store: RevisionStore,
  p: PathRevert,
  incoming: string,
  nowNs: bigint,
): Promise<void> {
  const head = p.after;
  if (head === undefined || head.revision.deleted) return;
  const r = head.revision;
  await mkdir(path.dirname(path.join(folderReal, ...p.path.split('/'))), { recursive: true });
  const abs = await confined(folderReal, p.path, 'refuse');
  if (abs === undefined) throw new ClawpeerError('IO', `cannot make the directory of ${p.path}`);
  if (r.kind === 'dir') {
    const st = await lstat(abs).catch(() => undefined);
    if (st === undefined) await mkdir(abs, { mode: r.mode & 0o777 });
    await chmod(abs, r.mode & 0o777).catch(() => undefined);
    return;
  }
  if (r.kind === 'symlink') {
    await symlink(r.linkTarget, abs);
    await lutimes(abs, new Date(), toSeconds(mtimeMsOf(r))).catch(() => undefined);
    return;
  }
  await rename(path.join(incoming, ...p.path.split('/')), abs);
  await syncDir(path.dirname(abs));
  // Certified only when it is what was published: a write since would otherwise pass for the head's bytes.
  const st = statOf(abs);
  if (st === undefined || !st.isFile() || isRacy(st.mtimeNs, nowNs)) return;
  const warm = warmStatOf(st);
  if (warm.size !== r.size || warm.mode !== r.mode || floorMs(st.mtimeNs) !== mtimeMsOf(r)) return;
  store.write((w) => w.setWarm(p.path, warm));
}
