// The listener's folder service: keeps the shared folders of the home's config.json in sync with
// the peers each is shared with, by itself. It serves each folder to its peers (a share named
// by the folder id, allowed to those peers only), and syncs it with each of them (as
// `clawpeer sync` would) at start, when a local change settles (the folder's watcher), when a
// peer comes online (its session arrives here, or a dial to it works), after a failure with
// backoff, and every folder interval. A peer's own service syncs its changes here the same way,
// so news from either side travels at once. When to sync whom is sync/folder-schedule.ts (sans
// I/O); this module owns the timers, watchers, sessions (folders/peer-sessions.ts: one per
// peer, carrying all its folders in turn) and the log (folders/folder-log.ts).
//
// Restarts: nothing of it is kept but the config, the folders' revision logs, the log file and
// each folder's last sync time per peer (folders/last-syncs.ts, for `status`); a listener killed
// at any point starts over from those (every pair is due at start).
// Non-goals: the sync itself (folder-sync/), versioning policies (the `afterSync` hook).
import { ClawpeerError, isClawpeerError } from '../errors.js';
import { loadFolders, configFileOf, type FolderConfig, type FolderMode } from '../home/folders-config.js';
import { parseVersioning } from '../sync/versioning.js';
import { resolvePeer } from '../home/peer-resolve.js';
import type { Share } from '../home/shares.js';
import { watchFile } from '../support/watch-file.js';
import { FolderSchedule, type SyncOutcome } from '../sync/folder-schedule.js';
import type { TransferProgress } from '../transfer/transfer-progress.js';
import type { ConnectedPeer, ListenerActivity } from '../session/listener-activity.js';
import type { SyncFolderResult } from '../folder-sync/sync-client.js';
import type { ServedSync } from '../folder-sync/sync-service.js';
import {
  FolderLog,
  overrideLogEntry,
  revertLogEntry,
  type FolderLogEntry,
  type FolderSyncLogEntry,
} from './folder-log.js';
import { PeerSessions } from './peer-sessions.js';
import { PeerShareWatches } from './peer-share-watches.js';
import { LocalChangeReports } from './local-changes.js';
import { PeerChangeReports } from './peer-changes.js';
import {
  completedOutcome,
  failedSyncOutcome,
  failureText,
  servedFailureText,
  servedInSyncFor,
  noRoomText,
} from './sync-outcome-text.js';
import { folderStatus } from './folder-status.js';
import { revertFolder } from './folder-revert.js';
import { overrideFolder } from './folder-override.js';
import type { OverrideReport, RevertReport } from '../folder-sync/resident-protocol.js';
import type { ActiveFolder, FolderServiceOptions, FolderStatus } from './folder-service-types.js';
import { pairKey } from './pair-key.js';
import { LastSyncs } from './last-syncs.js';
import { PeerLimits } from './peer-limits.js';
import { resolveFolderPeers } from './folder-peers.js';
import { FolderMarkers, StartedFolders } from './folder-markers.js';
import { activateFolder } from './folder-activation.js';
import { isMarkerMissing } from '../folder-sync/synced-folder.js';

export { LOCAL_CHANGE_MAX_DELAY_MS, LOCAL_CHANGE_QUIET_MS } from './folder-activation.js';
/** How long a peer's sync of a shared folder waits for another sync of it here, ms: short, so syncs toward each other fail fast and retry (jittered) instead of waiting each other out. */
export const FOLDER_LOCK_WAIT_MS = 1_000;

export type { AfterFolderSync, FolderPeerStatus, FolderServiceOptions, FolderStatus } from './folder-service-types.js';

export class FolderService {
  readonly #o: FolderServiceOptions;
  readonly #schedule = new FolderSchedule();
  readonly #sessions: PeerSessions;
  readonly #watches: PeerShareWatches;
  readonly #log: FolderLog;
  readonly #active = new Map<string, ActiveFolder>();
  /** The shares this service added to the listener's list. */
  readonly #ownShares = new Set<Share>();
  /** What a peer's copy refused, per pair: it takes no changes (send-only there) or gives none (receive-only there). */
  readonly #peerLimits = new PeerLimits();
  readonly #progress = new Map<string, TransferProgress>();
  /** A receive-only folder's paths kept and not sent, per pair's last sync (local-changes.ts). */
  readonly #localChanges = new LocalChangeReports();
  /** A send-only folder's paths the peers changed and it does not take, per pair's last sync (peer-changes.ts). */
  readonly #peerChanges = new PeerChangeReports();
  readonly #running = new Set<Promise<void>>();
  /** Per folder, the end of the last sync or record here: the next waits for it (syncs share the folder's lock). */
  readonly #folderTurns = new Map<string, Promise<void>>();
  readonly #stop = new AbortController();
  readonly #lastSyncs: LastSyncs;
  /** Each folder's `.clawpeer/` marker: a folder that lost it is not synced (folder-markers.ts). */
  readonly #markers: FolderMarkers;
  #names = new Map<string, string>();
  #timer: NodeJS.Timeout | undefined;
  #configWatch: { close(): void } | undefined;
  #reloading: Promise<void> = Promise.resolve();

  private constructor(o: FolderServiceOptions, started: StartedFolders) {
    this.#o = o;
    this.#markers = new FolderMarkers(started, (id) => this.#restart(id));
    this.#sessions = new PeerSessions({
      identity: o.identity,
      config: o.config,
      log: o.log,
      ...(o.dialPaths === undefined ? {} : { dialPaths: o.dialPaths }),
    });
    this.#log = new FolderLog(o.homeDir);
    this.#lastSyncs = new LastSyncs((folder, err) =>
      o.log.warn('cannot keep the last sync time', { folder, error: err.message }),
    );
    this.#watches = new PeerShareWatches(o, (folder, peer) => {
      this.#schedule.request(Date.now(), { folder, peer });
      this.#pump();
    });
  }

  /** Reads the folders and starts syncing them; follows config.json from then on. */
  static async start(o: FolderServiceOptions): Promise<FolderService> {
    const service = new FolderService(o, await StartedFolders.load(o.homeDir));
    await service.reload();
    // config.json, and peers.json (a peer of a folder paired or unpaired since).
    const follow = (): void => {
      service
        .reload()
        .catch((err: unknown) => o.log.warn('cannot apply the shared folders', { error: (err as Error).message }));
    };
    const watches = [watchFile(configFileOf(o.homeDir), follow), watchFile(o.peersFile, follow)];
    service.#configWatch = { close: () => watches.forEach((w) => w.close()) };
    return service;
  }

  /** Re-reads config.json and applies its folders (a bad file is logged, and the folders stay as they were). */
  reload(): Promise<void> {
    const next = this.#reloading.then(() => this.#reload());
    this.#reloading = next.catch(() => undefined);
    return next;
  }

  /** A paired peer's session arrived: what waited for it runs now. */
  peerOnline(peerId: string): void {
    // Its copies may have changed mode while it was away: learn again from its refusals.
    this.#peerLimits.forgetPeer(peerId);
    this.#schedule.peerOnline(peerId, Date.now());
    this.#pump();
  }

  /** A peer ran a sync of one of the listener's shares: recorded when it is one of our folders. */
  syncServed(peerId: string, served: ServedSync): void {
    const active = this.#active.get(served.share);
    if (active === undefined || !active.peerIds.includes(peerId)) return;
    this.#watches.selfSyncing(served.share, peerId); // its folder service syncs its changes here
    this.#localChanges.present(served.share, peerId); // it has the folder: a revert waits for our sync of it
    if (served.peerHeads !== undefined) this.#peerChanges.record(served.share, peerId, served.peerHeads);
    const record = {
      by: 'peer' as const,
      received: served.received,
      ...served.changes,
      sent: served.sent,
      conflicts: served.conflicts,
      skipped: served.skipped,
      bytes: served.wireBytes,
      seconds: Math.round(served.seconds * 1000) / 1000,
    };
    void this.#inTurn(served.share, () => this.#record(active.config, peerId, record, served.stored));
    // Online with the folder (again): what backs off runs now; a pair in sync for its mode is cleared.
    this.#schedule.peerOnline(peerId, Date.now());
    if (servedInSyncFor(this.#modeFor(active.config, peerId), served))
      this.#schedule.servedInSync(served.share, peerId, Date.now());
    else if (served.noSpace !== undefined)
      this.#schedule.servedFailed(served.share, peerId, Date.now(), noRoomText(served));
    this.#schedule.peerResumed(served.share, peerId, Date.now()); // it syncs the folder: not paused there (any more)
    this.#keepLastSync(served.share, peerId);
    this.#pump();
  }

  /** True when `folderId` is one of our folders, shared with `peerId` and paused here: its syncs are refused as paused. */
  pausedFor(folderId: string, peerId: string): boolean {
    const active = this.#active.get(folderId);
    return active !== undefined && active.config.paused && active.peerIds.includes(peerId);
  }

  /** The pair's last sync time as the schedule has it, into the folder's file when it moved (last-syncs.ts). */
  #keepLastSync(folderId: string, peerId: string): void {
    const at = this.#schedule.lastSyncAt(folderId, peerId);
    if (at !== undefined) this.#lastSyncs.record(folderId, peerId, at);
  }

  /**
   * A peer's sync of one of the listener's shares failed. One of our folders that failed on this
   * side (its disk full or read-only, a refusal here) is in `error` with why at once: the peer
   * shows it already, and this node's own syncs would find out only at their next try (the
   * interval). Its own retry follows with backoff. A peer gone mid-sync is no news here.
   */
  syncServeFailed(peerId: string, share: string, err: unknown): void {
    const active = this.#active.get(share);
    if (active === undefined || !active.peerIds.includes(peerId)) return;
    if (isMarkerMissing(err)) {
      this.#restart(share);
      return;
    }
    const error = servedFailureText(err);
    if (error === undefined) return;
    this.#schedule.servedFailed(share, peerId, Date.now(), error);
    this.#pump();
  }

  /** Starts folder `id` again from config.json (its marker came back, or went): it says why it waits, if it does. */
  #restart(id: string): void {
    const a = this.#active.get(id);
    if (a === undefined || this.#stop.signal.aborted) return;
    a.stop();
    this.#active.delete(id);
    this.reload().catch((err: unknown) =>
      this.#o.log.warn('cannot apply the shared folders', { error: (err as Error).message }),
    );
  }

  /** Runs `fn` once the folder's earlier syncs (and records) here are done; the next waits for it. */
  async #inTurn<T>(folderId: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.#folderTurns.get(folderId) ?? Promise.resolve();
    let endTurn = (): void => undefined;
    const turn = new Promise<void>((resolve) => (endTurn = resolve));
    this.#folderTurns.set(folderId, turn);
    try {
      await previous;
      return await fn();
    } finally {
      endTurn();
      if (this.#folderTurns.get(folderId) === turn) this.#folderTurns.delete(folderId);
    }
  }

  /** A completed sync: logged when it moved something, then the versioning hook when content here was replaced or deleted. Never throws. */
  async #record(
    f: FolderConfig,
    peerId: string,
    what: Omit<FolderSyncLogEntry, 'time' | 'folder' | 'peer' | 'peerName'>,
    stored: number,
  ): Promise<void> {
    const nowMs = Date.now();
    // Revisions stored here that changed nothing on disk (the same bytes saved concurrently, a
    // deletion of what is gone here, a loser kept in history) raise no watcher event, so the
    // folder's other peers would wait for the interval: they are synced now. Not those left as
    // is (received again at every sync: two peers bounced syncs off this node without end).
    if (stored > 0) this.#passOn(f.id, peerId, nowMs);
    if (what.received + what.sent + what.conflicts > 0) {
      const name = this.#names.get(peerId);
      await this.#append({
        time: nowMs,
        folder: f.id,
        peer: peerId,
        ...(name === undefined ? {} : { peerName: name }),
        ...what,
      });
    }
    if (this.#o.afterSync === undefined || what.received + what.conflicts === 0) return;
    const policy = parseVersioning(f.versioning); // checked when the config was read
    await Promise.resolve()
      .then(() => this.#o.afterSync?.({ folder: f, policy, peer: peerId, by: what.by, received: what.received, nowMs }))
      .catch((err: unknown) =>
        this.#o.log.warn('versioning after a sync failed', { folder: f.id, error: (err as Error).message }),
      );
  }

  /** Syncs folder `folderId` with its peers other than `source`, which just brought revisions. */
  #passOn(folderId: string, source: string, nowMs: number): void {
    const active = this.#active.get(folderId);
    if (active === undefined) return;
    for (const peer of active.peerIds) if (peer !== source) this.#schedule.request(nowMs, { folder: folderId, peer });
    this.#pump();
  }

  /** Appends to the folder log; a failure is logged, never thrown. */
  async #append(entry: FolderLogEntry): Promise<void> {
    await this.#log
      .append(entry)
      .catch((err: unknown) => this.#o.log.warn('cannot write the folder log', { error: (err as Error).message }));
  }

  /**
   * `folder revert` (folder-revert.ts) in the folder's turn, kept in the folder log when it took
   * something back; then its syncs, which land what the local edits held back.
   */
  async revert(id: string, dryRun: boolean, signal: AbortSignal): Promise<RevertReport> {
    const o = { service: this.#o, folderId: id, active: this.#active.get(id), reports: this.#localChanges };
    const report = await this.#inTurn(id, async () => {
      const r = await revertFolder({ ...o, dryRun, signal });
      const entry = revertLogEntry(r, Date.now());
      if (entry !== undefined) await this.#append(entry);
      return r;
    });
    if (!dryRun) this.#passOn(id, '', Date.now());
    return report;
  }

  /** `folder override` (folder-override.ts) in the folder's turn; then its syncs, which take the new versions to every peer. */
  async override(id: string, dryRun: boolean, signal: AbortSignal): Promise<OverrideReport> {
    const o = { service: this.#o, folderId: id, active: this.#active.get(id), reports: this.#peerChanges };
    const report = await this.#inTurn(id, async () => {
      const r = await overrideFolder({ ...o, dryRun, signal });
      const entry = overrideLogEntry(r, Date.now());
      if (entry !== undefined) await this.#append(entry);
      return r;
    });
    if (!dryRun && report.paths.length > 0) this.#passOn(id, '', Date.now());
    return report;
  }

  /** The peers this service's own sessions are open to now (dialled for syncs; status lists them). */
  connectedPeers(): ConnectedPeer[] {
    return this.#sessions.connected();
  }

  /** Each folder with its peers' states, for `clawpeer status` (folder-status.ts). */
  status(): FolderStatus[] {
    return folderStatus({
      folders: this.#active.values(),
      pairs: this.#schedule.snapshot(),
      running: this.#o.activity?.snapshot() ?? [],
      stores: this.#o.resident.stores,
      localChanges: this.#localChanges,
      peerChanges: this.#peerChanges,
      unsyncable: this.#o.resident.unsyncable,
      nodeId: this.#o.identity.nodeId,
      progressOf: (folder, peer) => this.#progress.get(pairKey(folder, peer)),
      nameOf: (peer) => this.#names.get(peer),
      modeFor: (f, peer) => this.#modeFor(f, peer),
    });
  }

  async close(): Promise<void> {
    this.#configWatch?.close();
    this.#markers.close();
    clearTimeout(this.#timer);
    this.#stop.abort(new ClawpeerError('ABORTED', 'the listener is shutting down'));
    this.#watches.close();
    await this.#reloading;
    for (const f of this.#active.values()) f.stop();
    await Promise.all([...this.#running]);
    await this.#lastSyncs.flushed();
    await this.#sessions.closeAll();
  }

  async #reload(): Promise<void> {
    if (this.#stop.signal.aborted) return;
    let folders: FolderConfig[];
    try {
      folders = await loadFolders(this.#o.homeDir);
    } catch (err) {
      this.#o.log.warn('the shared folders in config.json are not applied', { error: (err as Error).message });
      return;
    }
    const pairs = await this.#o.peers.list().catch(() => []);
    this.#o.offers?.follow(folders, pairs); // folder-offers.ts
    this.#names = new Map(pairs.map((p) => [p.id, p.name]));
    const foreign = new Set(this.#o.shares.filter((s) => !this.#ownShares.has(s)).map((s) => s.name));
    // Each folder's peers as node ids now (a peer paired or unpaired since changes them too).
    const resolved = await resolveFolderPeers(folders, pairs, foreign);
    const fingerprint = (f: FolderConfig, peerIds: readonly string[]): string => JSON.stringify([f, peerIds]);
    let changed = false;
    const edited: string[] = []; // folders kept with new settings (mode, versioning, peers, path)
    for (const [id, a] of [...this.#active]) {
      const want = resolved.get(id);
      if (want !== undefined && a.fingerprint === fingerprint(want.f, want.peerIds)) continue;
      a.stop();
      this.#active.delete(id);
      this.#localChanges.forget(id);
      this.#peerChanges.forget(id);
      this.#watches.forget(id);
      if (want !== undefined) edited.push(id);
      else await this.#markers.removed(id).catch(() => undefined);
      changed = true;
    }
    for (const { f, peerIds, problem } of resolved.values()) {
      if (this.#active.has(f.id)) continue;
      const active = await activateFolder(f, peerIds, problem, {
        markers: this.#markers,
        watchers: this.#o.resident.watchers,
        onChange: () => {
          this.#schedule.request(Date.now(), { folder: f.id });
          this.#pump();
        },
      });
      await this.#lastSyncs.load(f.id, active.config.path);
      this.#active.set(f.id, { ...active, fingerprint: fingerprint(f, peerIds) });
      changed = true;
    }
    if (!changed) return;
    this.#publishShares();
    const now = Date.now();
    this.#schedule.configure(
      [...this.#active.values()].flatMap((a) =>
        a.peerIds.map((peer) => ({
          folder: a.config.id,
          peer,
          intervalMs: a.config.intervalS * 1000,
          paused: a.config.paused,
        })),
      ),
      now,
    );
    // An edited folder syncs now with its settings (a send-only copy made two-way takes the
    // peers' files), not at its next interval; a paused one stays paused.
    for (const id of edited) this.#schedule.request(now, { folder: id });
    // A listener's earlier runs synced them too: `status` says when, not `never synced`.
    for (const a of this.#active.values())
      for (const peer of a.peerIds) {
        const at = this.#lastSyncs.of(a.config.id, peer);
        if (at !== undefined) this.#schedule.knownSync(a.config.id, peer, at);
      }
    this.#o.log.info('shared folders', { folders: [...this.#active.keys()] });
    this.#pump();
  }

  /** Puts the active, unpaused folders into the listener's shares (and takes the others out). */
  #publishShares(): void {
    const shares = this.#o.shares;
    for (let i = shares.length - 1; i >= 0; i--) {
      const s = shares[i];
      if (s !== undefined && this.#ownShares.has(s)) shares.splice(i, 1);
    }
    this.#ownShares.clear();
    for (const { config: f, peerIds } of this.#active.values()) {
      if (f.paused || peerIds.length === 0) continue;
      const share: Share = {
        name: f.id,
        dir: f.path,
        readOnly: f.mode === 'send-only',
        allow: peerIds,
        syncLockWaitMs: FOLDER_LOCK_WAIT_MS,
        keptFolder: true,
        ...(f.mode === 'receive-only' ? { receiveOnly: true } : {}),
      };
      shares.push(share);
      this.#ownShares.add(share);
    }
  }

  #modeFor(f: FolderConfig, peer: string): FolderMode | undefined {
    return this.#peerLimits.modeFor(f, peer);
  }

  /** Starts what is due and sets the timer for what is due next. */
  #pump(): void {
    if (this.#stop.signal.aborted) return;
    const now = Date.now();
    for (const { folder, peer } of this.#schedule.take(now)) {
      const run = this.#run(folder, peer).finally(() => {
        this.#running.delete(run);
        this.#pump();
      });
      this.#running.add(run);
    }
    clearTimeout(this.#timer);
    const next = this.#schedule.nextWakeAt();
    if (next !== undefined) {
      this.#timer = setTimeout(() => this.#pump(), Math.max(0, next - now) + 5);
      this.#timer.unref();
    }
    const busy = new Set(
      this.#schedule
        .snapshot()
        .filter((p) => p.state === 'syncing')
        .map((p) => p.peer),
    );
    void this.#sessions.closeIdle(now, busy);
  }

  /** One sync of one pair, start to end; never throws (the outcome goes to the schedule). */
  async #run(folderId: string, peerId: string): Promise<void> {
    const key = pairKey(folderId, peerId);
    const active = this.#active.get(folderId);
    const finish = (outcome: SyncOutcome): void => {
      this.#progress.delete(key);
      this.#schedule.finish(folderId, peerId, Date.now(), outcome);
      if (outcome.kind === 'done' || outcome.kind === 'unsettled') this.#keepLastSync(folderId, peerId);
    };
    if (active === undefined) {
      finish({ kind: 'failed', error: 'the folder was removed' });
      return;
    }
    const f = active.config;
    const mode = this.#modeFor(f, peerId);
    if (mode === undefined) {
      finish({
        kind: 'failed',
        error: `nothing can move: this copy is ${f.mode} and the peer's refuses what it would take`,
      });
      return;
    }
    const log = this.#o.log.child('folders');
    const sync = new AbortController();
    const onStop = (): void => sync.abort(this.#stop.signal.reason);
    this.#stop.signal.addEventListener('abort', onStop, { once: true });
    // Begun once the peer answered: a running sync makes status say `syncing`, and a retry of an
    // unreachable peer stays `waiting` while it dials (the schedule's rule).
    let activity: ReturnType<ListenerActivity['begin']> | undefined;
    let ok = false;
    /** The sync ended in a refusal the schedule retries at once (a mode learnt, a busy folder): not counted. */
    let uncounted = false;
    let dialled = false;
    try {
      const peer = await resolvePeer(this.#o.peers, peerId, undefined);
      const [session, { syncFolder }] = await Promise.all([
        this.#sessions.get(peer, sync.signal),
        import('../folder-sync/sync-client.js'),
      ]);
      dialled = true;
      activity = this.#o.activity?.begin({ peer: peerId, kind: 'sync', share: f.id, path: '' });
      this.#schedule.connected(f.id, peerId, Date.now());
      this.#schedule.peerOnline(peerId, Date.now()); // a dial that works: the peer's other folders need not wait out their backoff
      // The folder's syncs with other peers go first; then this one holds the folder.
      const result = await this.#inTurn(f.id, async () => {
        let r: SyncFolderResult;
        try {
          r = await syncFolder({
            session,
            dir: f.path,
            share: f.id,
            mode,
            nodeId: this.#o.identity.nodeId,
            log,
            signal: sync.signal,
            keepAliveMs: this.#o.config.keepAliveMs,
            resident: this.#o.resident,
            requireMarker: true,
            byFolderService: true, // a peer without the folder reads it as an offer (folder-offers.ts)
            peerHeads: f.mode !== 'receive-only', // a receive-only folder's own changes are not the folder's
            ...(this.#o.sendLimiter === undefined ? {} : { rateLimiters: [this.#o.sendLimiter] }),
            onProgress: (p) => {
              this.#progress.set(key, p);
              activity?.report(p);
            },
          });
        } catch (err) {
          throw await session.reasonFor(err);
        } finally {
          this.#sessions.used(peerId);
        }
        ok = true;
        if (f.mode === 'receive-only') this.#localChanges.record(f.id, peerId, r);
        if (r.peerHeads !== undefined) this.#peerChanges.record(f.id, peerId, r.peerHeads);
        if (mode !== 'send-only' && r.peerKeepsFolder !== true) this.#watches.synced(f.id, peerId);
        log.info('folder synced', {
          folder: f.id,
          peer: peerId,
          mode,
          received: r.revisionsReceived,
          sent: r.revisionsSent,
          conflicts: r.conflicts,
          inSync: r.inSync,
        });
        await this.#record(
          f,
          peerId,
          {
            by: 'here',
            mode,
            received: r.revisionsReceived,
            ...(r.changes ?? { added: 0, changed: 0, deleted: 0, paths: [] }),
            sent: r.revisionsSent,
            conflicts: r.conflicts,
            skipped: r.skipped.length,
            bytes: r.wireBytes,
            seconds: Math.round(r.seconds * 1000) / 1000,
          },
          r.revisionsStored ?? r.revisionsReceived,
        );
        return r;
      });
      finish(completedOutcome(result));
      // After the pair's state is settled: a catch-up's fetches are no part of this sync.
      if (mode !== 'send-only')
        await this.#inTurn(f.id, async () =>
          (await import('./unignored-catch-up.js')).catchUpQuietly({
            service: this.#o,
            active,
            peerId,
            signal: sync.signal,
            log,
          }),
        );
    } catch (err) {
      await this.#sessions.drop(peerId);
      if (isMarkerMissing(err)) this.#restart(f.id); // its disk unmounted while it ran: it says so, and waits
      // The peer's copy refused what it does not take: learnt, retried narrowed at once, no failure.
      const narrowed = !this.#stop.signal.aborted && this.#peerLimits.learn(err, f, peerId, log);
      const outcome = narrowed
        ? { kind: 'busy' as const, error: failureText(err, f.id) }
        : failedSyncOutcome(err, { folderId: f.id, peerId, dialled, stopping: this.#stop.signal.aborted, log });
      // A peer without the folder (or with it paused) holds no version `folder revert` waits for.
      if (isClawpeerError(err, 'SHARE_PAUSED')) this.#localChanges.refused(f.id, peerId, 'paused');
      else if (isClawpeerError(err, 'SHARE_UNKNOWN')) this.#localChanges.refused(f.id, peerId, 'removed');
      // Nor is a folder busy on either side (both syncing it at once, as at every start): retried shortly.
      uncounted = outcome.kind === 'busy';
      finish(outcome);
    } finally {
      if (uncounted) activity?.discard();
      else activity?.end(ok);
      this.#stop.signal.removeEventListener('abort', onStop);
      sync.abort(); // the sync's data-stream router stops: the session's next sync runs its own
    }
  }
}
