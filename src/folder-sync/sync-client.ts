// The initiating side of a revision sync: `clawpeer sync DIR PEER:SHARE`.
//
// Goals: one call that locks and scans the local folder, reconciles it with the peer's share
// (the SyncRequest goes first so the listener scans its share while we scan ours; our hello
// follows, so equal folders cost one round trip after the slower scan), moves records and content in the directions the mode allows, and checks the outcome
// with a second reconciliation; the summary counts what the user asked to see (round trips and
// bytes of the first reconciliation, records, chunks, wire bytes, conflicts).
// The dial is sync-with-peer.ts's. Non-goals: printing (cli/commands/sync.ts), the --watch loop (the CLI).
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { ClawpeerError } from '../errors.js';
import { RateLimiter } from '../transfer/rate-limiter.js';
import type { Logger } from '../logger.js';
import type { SyncModeName } from '../protocol/messages.js';
import { textToShow } from '../protocol/wire-helpers.js';
import { encodeReconcileMessage } from '../sync/reconcile-codec.js';
import { ReconcileInitiator } from '../sync/reconcile.js';
import type { ReconcileResult } from '../sync/reconcile.js';
import { sameContent, type Revision, type RevisionEntry } from '../sync/revision.js';
import { toHex } from '../chunking/blake3.js';
import { sessionRouter } from '../session/data-stream-router.js';
import type { PeerSession } from '../session/session.js';
import { applyRemote, byPath, plannedChanges, type PlannedChange } from './sync-apply.js';
import { checkIdSet, headsAmong } from './sync-plan.js';
import type { FsyncPolicy } from '../store/publish-types.js';
import {
  dropPrunedByPeer,
  fetchContent,
  prunedToTell,
  receiveRevisions,
  runReconcile,
  sendRevisions,
  servableFiles,
  serveFetch,
  type SyncChannel,
} from './sync-exchange.js';
import { openSyncedFolder, type ResidentFolders, type SyncedFolder, type UnreadableEntry } from './synced-folder.js';
import { trackSync } from './running-syncs.js';
import { PrelocatedFiles } from './fetch-prelocate.js';
import { DEFAULT_CONFIG } from '../home/config.js';
import { countChanges, headsBefore, type ChangeCounts } from './change-counts.js';
import { expectMessage, PREPARE_TIMEOUT_MS, sessionChunking } from '../exchange/transfer-control.js';
import type { TransferProgress } from '../transfer/transfer-progress.js';
import type { NoSpaceReport } from '../exchange/space-fit.js';
import { wireBytesOf } from './sync-service.js';

/** How long the client waits for another local sync of the folder, ms. */
export const CLIENT_LOCK_WAIT_MS = 5_000;

export interface SyncFolderOptions {
  readonly session: PeerSession;
  /** Local folder (created if missing). */
  readonly dir: string;
  /** Share on the peer ('' = its default). */
  readonly share: string;
  readonly mode: SyncModeName;
  /** This node's id (origin of the revisions local scans record). */
  readonly nodeId: string;
  readonly log: Logger;
  readonly signal: AbortSignal;
  /** Progress, as a push reports it: hashing while scanning, then content sent and received. */
  readonly onProgress?: (p: TransferProgress) => void;
  /** A listener's folder state: no scan when the folder's watcher vouches nothing changed, the log kept open. */
  readonly resident?: ResidentFolders;
  /** A listener's shared folder: refused when its `.clawpeer/` marker is gone (synced-folder.ts requireMarker). */
  readonly requireMarker?: boolean;
  /** sync --bwlimit, bytes per second: caps what this side sends, and the peer is asked to cap what it sends. */
  readonly bwlimit?: number;
  /** More caps on what this side sends (a listener's --bwlimit, for the syncs it runs). */
  readonly rateLimiters?: readonly RateLimiter[];
  /**
   * Plan only (sync --dry-run): reconcile, learn the peer's records, report what would change on
   * each side, and change nothing (the folder's log still records its scan, as any sync does
   * first; a missing folder is planned as an empty one and not created).
   */
  readonly dryRun?: boolean;
  /** --fsync: `none` publishes without fsync on both sides (the peer must have 'fsync-none'). */
  readonly fsync?: FsyncPolicy;
  /**
   * The session's keep-alive interval (NodeConfig.keepAliveMs; default DEFAULT_CONFIG's): how
   * quiet this sync's connection may get before a new sync of the folder with the same peer
   * takes it for dead (running-syncs.ts).
   */
  readonly keepAliveMs?: number;
  /** A listener's folder service runs it (folders/folder-service.ts): the request says so to a peer that reads it (a folder offer there). */
  readonly byFolderService?: boolean;
  /**
   * A listener's shared folder (feature sync-peer-heads): send-only, learn the peer's heads this
   * side lacks (the result's peerHeads: paths changed there and not taken here); receive-only
   * narrowed by a send-only peer, tell it ours when it asks. Not a receive-only folder's: its
   * local changes are its own.
   */
  readonly peerHeads?: boolean;
}

/** What a sync would do (sync --dry-run). */
export interface SyncDryRun {
  /** Changes this folder would take from the peer (none in send-only mode). */
  readonly receive: readonly PlannedChange[];
  /** Paths whose version here the peer would take (none in receive-only mode): create, update, delete or conflict. */
  readonly send: readonly PlannedChange[];
}

export interface SyncFolderResult {
  /** After this sync, nothing remains to move in the directions the mode allows. */
  readonly inSync: boolean;
  /** The mode it ran in. Absent from an older listener's resident result. */
  readonly mode?: SyncModeName;
  /** The shared folder of this home whose mode narrowed the one asked for (sync-with-peer.ts). */
  readonly narrowedBy?: { readonly folder: string; readonly mode: SyncModeName };
  /** Request/response exchanges of the first reconciliation (1 when the folders were equal). */
  readonly roundTrips: number;
  /** Bytes of the first reconciliation, both ways (roots, cells, id lists). */
  readonly reconcileBytes: number;
  readonly revisionsSent: number;
  readonly revisionsReceived: number;
  /**
   * Of those, the ones now in this side's log: a revision left as is (a receive-only copy's own
   * edit kept, a path this node may not change) is received again at every sync. Absent from
   * an older listener's resident result.
   */
  readonly revisionsStored?: number;
  /** Chunks that crossed the connection, both directions. */
  readonly chunksSent: number;
  /** Bytes that crossed the connection, both directions, transport overhead included. */
  readonly wireBytes: number;
  readonly conflicts: number;
  readonly seconds: number;
  /** The local folder was scanned (false: its watcher vouched nothing changed since the last scan). */
  readonly scanned: boolean;
  /** Paths left as they are this time (see sync-apply.ts). */
  readonly skipped: readonly string[];
  /** Of `skipped`, the files that did not fit on this side's disk (space-fit.ts), with the numbers. */
  readonly noSpace?: NoSpaceReport;
  /** Receive-only: paths whose local revision the peer does not have (not sent). */
  readonly localOnly: readonly string[];
  /**
   * Receive-only: the ids of every revision here the peer lacked at the end (the check's
   * idsTheyLack, heads or not) and this node's counter then (a local revision with a higher one
   * was made after this sync): what `folder revert` may withdraw. Not sent to the CLI.
   */
  readonly lacking?: { readonly ids: readonly Uint8Array[]; readonly localCounter: number };
  /** The peer's share is a folder its folder service keeps (it syncs its changes here itself); false from an older peer. */
  readonly peerKeepsFolder?: boolean;
  /**
   * Paths whose revision the peer still lacks after it applied what we sent: it left them as
   * they are (its log says why). Absent from an older listener's resident result.
   */
  readonly peerSkipped?: readonly string[];
  /** Of `peerSkipped`, the files that did not fit on the peer's disk (its SyncDone says; an older peer does not). */
  readonly peerNoSpace?: NoSpaceReport;
  /** Local entries the scan could not read or name, so the peer did not get them (rsync's exit 23). */
  readonly unreadable: readonly UnreadableEntry[];
  /** What the peer's revisions changed here (change-counts.ts); absent on a dry run or an equal folder. */
  readonly changes?: ChangeCounts;
  /** A dry run's plan (nothing was moved or applied). */
  readonly dryRun?: SyncDryRun;
  /**
   * Send-only with `peerHeads`: the peer's heads this side lacks (not stored, not applied);
   * undefined when not asked (an older peer).
   */
  readonly peerHeads?: readonly RevisionEntry[];
  /** How the session reached the peer (reach/paths.ts PathKind) and its RTT then, ms: set by sync-with-peer.ts. */
  readonly path?: string;
  readonly rttMs?: number;
}

function inSyncFor(mode: SyncModeName, check: ReconcileResult): boolean {
  switch (mode) {
    case 'two-way':
      return check.idsWeLack.length === 0 && check.idsTheyLack.length === 0;
    case 'send-only':
      return check.idsTheyLack.length === 0;
    case 'receive-only':
      return check.idsWeLack.length === 0;
    default: {
      const never: never = mode;
      throw new TypeError(`unknown mode ${String(never)}`);
    }
  }
}

/** The live files among `heads`: their paths and contents. */
function liveFilesAmong(heads: readonly RevisionEntry[]): { path: string; root: Uint8Array }[] {
  const files: { path: string; root: Uint8Array }[] = [];
  for (const { revision: r } of heads)
    if (!r.deleted && r.kind === 'file') files.push({ path: r.path, root: r.contentRoot });
  return files;
}

export async function syncFolder(o: SyncFolderOptions): Promise<SyncFolderResult> {
  if (o.dryRun !== true) return syncFolderIn(o.dir, o);
  o.session.requireFeature('sync-dry-run', 'cannot plan a sync without carrying it out', 'sync without --dry-run');
  if (await existingDirectory(o.dir)) return syncFolderIn(o.dir, o);
  // Nothing here yet: planned against an empty folder that is removed afterwards.
  const empty = await mkdtemp(path.join(tmpdir(), 'clawpeer-dry-sync-'));
  try {
    return await syncFolderIn(empty, o);
  } finally {
    await rm(empty, { recursive: true, force: true });
  }
}

/** True when `dir` is a directory, false when nothing is there; USAGE when something else is. */
async function existingDirectory(dir: string): Promise<boolean> {
  let isDir: boolean;
  try {
    isDir = (await stat(dir)).isDirectory();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw new ClawpeerError('IO', `cannot read ${dir}: ${(err as Error).message}`, { cause: err });
  }
  if (!isDir) throw new ClawpeerError('USAGE', `${dir} is not a directory`);
  return true;
}

async function syncFolderIn(dir: string, o: SyncFolderOptions): Promise<SyncFolderResult> {
  const { session, log, signal } = o;
  const dryRun = o.dryRun === true;
  const started = performance.now();
  const wireStart = wireBytesOf(session);
  const chunking = sessionChunking(session);
  const sends = o.mode !== 'receive-only';
  const receives = o.mode !== 'send-only';
  if (o.bwlimit !== undefined && receives)
    session.requireFeature(
      'rate-limit',
      'cannot cap the rate it sends a sync at',
      'sync without --bwlimit, or with --mode send-only',
    );
  const noFsync = o.fsync === 'none' && sends && !dryRun;
  if (noFsync) session.requireFeature('fsync-none', 'cannot apply a sync without fsync', 'sync with --fsync=batch');
  const fsync = o.fsync === undefined ? {} : { fsync: o.fsync };
  const limiters = [...(o.bwlimit === undefined ? [] : [new RateLimiter(o.bwlimit)]), ...(o.rateLimiters ?? [])];
  const transferId = session.allocateTransferId();
  const headsFeature =
    o.peerHeads === true &&
    !dryRun &&
    session.caps.features.includes('sync-peer-heads') &&
    session.caps.features.includes('sync-pruned-always');
  const asksHeads = headsFeature && o.mode === 'send-only';
  // Sent once this side holds the folder's lock (openSyncedFolder's afterLock): a request sent
  // while another local sync of the folder still ran displaced that sync at the peer (a `sync`
  // run beside a `sync --watch` killed or hung the watch), though this one then waited for the
  // lock or gave up on it.
  const request = (): Promise<void> =>
    session.control.send({
      type: 'sync-request',
      transferId,
      share: o.share,
      mode: o.mode,
      reconcile: new Uint8Array(0),
      ...(o.bwlimit === undefined || !receives || dryRun ? {} : { rateLimit: o.bwlimit }),
      ...(dryRun ? { dryRun } : {}),
      ...(noFsync ? { noFsync } : {}),
      ...(o.byFolderService === true && session.caps.features.includes('by-folder-service')
        ? { byFolderService: true }
        : {}),
      ...(asksHeads ? { peerHeads: true } : {}),
    });
  const progress = o.onProgress;
  let hashed = 0;
  let hashedFiles = 0;
  // A sync of this folder with this peer whose connection went quiet (the peer was killed, and
  // this is it back) gives the folder up now rather than at its connection's idle timeout.
  const { endStale, unregister } = trackSync(dir, session, o.keepAliveMs ?? DEFAULT_CONFIG.keepAliveMs, log);
  let folder: SyncedFolder;
  try {
    endStale();
    folder = await openSyncedFolder(dir, {
      nodeId: o.nodeId,
      chunking,
      lockWaitMs: CLIENT_LOCK_WAIT_MS,
      log,
      signal,
      onLockHeld: endStale,
      afterLock: request,
      create: !dryRun,
      ...(o.requireMarker === true ? { requireMarker: true } : {}),
      cacheManifests: sends && !dryRun,
      ...(o.resident === undefined ? {} : { resident: o.resident }),
      ...(progress === undefined
        ? {}
        : {
            onHashed: (_rel: string, m: { size: number }) =>
              progress({
                phase: 'scanning',
                bytes: (hashed += m.size),
                totalBytes: 0,
                files: ++hashedFiles,
                totalFiles: 0,
              }),
          }),
    });
  } catch (err) {
    unregister();
    throw err;
  }
  let prelocated: PrelocatedFiles | undefined;
  try {
    const { store } = folder;
    const guard = (): void => folder.pin.check(); // the folder is still the one opened: nothing lands in its replacement
    if (!dryRun) store.recordSyncingPeer(session.peerId, o.share); // where `restore` fetches from
    const router = sessionRouter(session, PREPARE_TIMEOUT_MS, log);
    const ch: SyncChannel = { session, transferId, timeoutMs: PREPARE_TIMEOUT_MS, signal, log, rateLimiters: limiters };
    const initiator = new ReconcileInitiator(store.snapshotIdSet());
    const [hello] = initiator.start();
    if (hello === undefined) throw new TypeError('reconciliation produced no hello');
    await session.control.send({ type: 'sync-reconcile', transferId, payload: encodeReconcileMessage(hello) });
    const accepted = await expectMessage(session, 'sync-accept', transferId, PREPARE_TIMEOUT_MS, signal);
    const result = await runReconcile(ch, initiator, []);
    const roundTrips = initiator.stats.roundTrips;
    const reconcileBytes = initiator.stats.bytesSent + initiator.stats.bytesReceived;
    const summary = (extra: Partial<SyncFolderResult> & Pick<SyncFolderResult, 'inSync'>): SyncFolderResult => ({
      mode: o.mode,
      roundTrips,
      reconcileBytes,
      scanned: folder.scan !== undefined,
      revisionsSent: 0,
      revisionsReceived: 0,
      revisionsStored: 0,
      chunksSent: 0,
      conflicts: 0,
      skipped: [],
      localOnly: [],
      lacking: { ids: [], localCounter: store.localCounter() },
      peerKeepsFolder: accepted.keptFolder === true,
      unreadable: folder.unreadable,
      wireBytes: wireBytesOf(session) - wireStart,
      seconds: (performance.now() - started) / 1000,
      ...extra,
    });
    // What the scan could not read never reached the peer: not in sync while this side sends.
    const allSent = !sends || folder.unreadable.length === 0;
    if (result.method === 'equal')
      return summary({
        inSync: allSent,
        ...(dryRun ? { dryRun: { receive: [], send: [] } } : {}),
        ...(asksHeads ? { peerHeads: [] } : {}),
      });
    if (dryRun) {
      // The peer sends its records (as for a real sync) and then its done; nothing else moves.
      const received = receives
        ? (await receiveRevisions(ch, result.idsWeLack)).filter((e) => !store.isPruned(e.id))
        : [];
      const { changes, skipped } = plannedChanges(received, {
        store,
        keepConcurrentLocal: o.mode === 'receive-only',
        ignore: folder.ignore,
        log,
      });
      const conflicted = new Set(changes.filter((c) => c.change === 'conflict').map((c) => c.path));
      // What the peer holds at a path: the revisions of it we have and it does not lack.
      const theyLack = new Set(result.idsTheyLack.map(toHex));
      // The last live revision of a path the peer holds to reach us (the likeliest its head).
      const peerLastLive = (p: string): Revision | undefined =>
        store.history(p).findLast((e) => !e.revision.deleted && !theyLack.has(toHex(e.id)))?.revision;
      const send: PlannedChange[] = [];
      for (const { revision: r } of sends ? headsAmong(store, result.idsTheyLack) : []) {
        const last = peerLastLive(r.path);
        const had = last !== undefined;
        if (r.deleted && !had) continue; // a deletion of what the peer never had changes nothing there
        // The peer holds these bytes at the path already: new metadata only, a touch or a chmod.
        const metadata =
          r.deleted || last === undefined || !sameContent(last, r) ? undefined : last.mode === r.mode ? 'time' : 'mode';
        const change = conflicted.has(r.path)
          ? 'conflict'
          : r.deleted
            ? 'delete'
            : (metadata ?? (had ? 'update' : 'create'));
        send.push({
          path: r.path,
          change,
          kind: r.kind,
          bytes: r.deleted || r.kind !== 'file' || metadata !== undefined ? 0 : r.size,
          ...(r.kind === 'symlink' && !r.deleted ? { target: r.linkTarget } : {}),
        });
      }
      send.sort(byPath);
      await expectMessage(session, 'sync-done', transferId, PREPARE_TIMEOUT_MS, signal);
      return summary({
        inSync: false,
        revisionsReceived: received.length,
        skipped,
        // What arrives is the peer's: a link target is its free text, shown blanked.
        dryRun: {
          receive: changes.map((c) => (c.target === undefined ? c : { ...c, target: textToShow(c.target) })),
          send,
        },
      });
    }

    let revisionsSent = 0;
    let received: RevisionEntry[] = [];
    let declined: Uint8Array[] = [];
    let peerPruned: readonly Uint8Array[] = [];
    // What our gc dropped is never stored again, and the peer is told so it drops it too: in
    // every mode when it can hear it (a side sending no records sends an empty final batch).
    const tellsAlways = session.caps.features.includes('sync-pruned-always');
    const ourPruned = store.prunedAmong(result.idsWeLack);
    // A send-only peer that asks learns our heads it lacks (it stores none): our folder's own
    // changes, not a receive-only folder's local ones.
    const tellHeads = headsFeature && accepted.peerHeads === true && o.mode === 'receive-only';
    const ourHeads = tellHeads ? headsAmong(store, result.idsTheyLack).map((e) => e.id) : [];
    if (!sends && tellsAlways) await sendRevisions(ch, store, ourHeads, ourPruned);
    let peerHeads: RevisionEntry[] | undefined;
    if (sends) {
      revisionsSent = await sendRevisions(ch, store, result.idsTheyLack, ourPruned);
      // Looked up while the peer plans what to fetch (fetch-prelocate.ts).
      if (folder.scan !== undefined)
        prelocated = PrelocatedFiles.start(liveFilesAmong(headsAmong(store, result.idsTheyLack)), {
          folder: dir,
          cache: folder.manifests,
          ...servableFiles(dir, store),
        });
    }
    if (receives || tellsAlways) {
      const expected = receives || asksHeads ? result.idsWeLack : [];
      const arrived = await receiveRevisions(ch, expected, (ids) => (peerPruned = ids), !receives);
      if (receives) {
        received = arrived.filter((e) => !store.isPruned(e.id));
        declined = arrived.filter((e) => store.isPruned(e.id)).map((e) => e.id);
      } else if (asksHeads) peerHeads = arrived;
    }
    let chunks = 0;
    if (sends) {
      const fetch = await expectMessage(session, 'sync-fetch', transferId, PREPARE_TIMEOUT_MS, signal);
      chunks += await serveFetch(ch, fetch, store, dir, chunking, folder.manifests, progress, prelocated);
    }
    let conflicts = 0;
    let skipped: string[] = [];
    let noSpace: NoSpaceReport | undefined;
    let kept: readonly string[] = [];
    const before = headsBefore(store, received);
    let copies: Awaited<ReturnType<typeof applyRemote>>['copies'] | undefined;
    if (receives) {
      const applied = await applyRemote(received, {
        store,
        folder: dir,
        chunking,
        keepConcurrentLocal: o.mode === 'receive-only',
        ignore: folder.ignore,
        log,
        ...fsync,
        guard,
        fetch: (requests, beforePublish, beforeReplace, onFilePublished) =>
          fetchContent(ch, requests, {
            router,
            folder: dir,
            chunking,
            beforePublish,
            beforeReplace,
            onFilePublished,
            guard,
            ...fsync,
            ...(progress === undefined ? {} : { onProgress: progress }),
          }),
      });
      chunks += applied.chunksReceived;
      conflicts = applied.conflicts;
      skipped = applied.skipped;
      noSpace = applied.noSpace;
      kept = applied.kept;
      copies = applied.copies;
    }
    await dropPrunedByPeer(ch, store, dir, peerPruned, result.idsTheyLack);
    const told = sends || tellsAlways ? prunedToTell(ch, ourPruned) : [];
    const check = new ReconcileInitiator(checkIdSet(store, received, kept, declined, told));
    const checked = await runReconcile(ch, check, check.start());
    // Revisions our gc dropped that the peer keeps (an older peer, or its heads) are not missing.
    const outcome = { ...checked, idsWeLack: checked.idsWeLack.filter((id) => !store.isPruned(id)) };
    const done = await expectMessage(session, 'sync-done', transferId, PREPARE_TIMEOUT_MS, signal);
    const theyLack = headsAmong(store, outcome.idsTheyLack).map((e) => e.revision.path);
    const localOnly = o.mode === 'receive-only' ? theyLack : [];
    const peerSkipped = o.mode === 'receive-only' ? [] : theyLack;
    return summary({
      inSync: allSent && inSyncFor(o.mode, outcome),
      revisionsSent,
      revisionsReceived: received.length,
      revisionsStored: received.filter((e) => store.has(e.id)).length,
      chunksSent: chunks,
      conflicts,
      skipped,
      ...(noSpace === undefined ? {} : { noSpace }),
      localOnly: localOnly.sort(),
      lacking: { ids: o.mode === 'receive-only' ? outcome.idsTheyLack : [], localCounter: store.localCounter() },
      peerSkipped: peerSkipped.sort(),
      ...(done.noSpace === undefined ? {} : { peerNoSpace: done.noSpace }),
      changes: countChanges(store, before, copies),
      ...(peerHeads === undefined ? {} : { peerHeads }),
    });
  } catch (err) {
    throw folder.pin.failure(err); // an ENOENT of a path in a folder swapped meanwhile: its marker is missing
  } finally {
    prelocated?.stop();
    await folder.close();
    unregister();
  }
}
