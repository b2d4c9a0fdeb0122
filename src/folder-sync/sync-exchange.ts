// The wire phases of one revision sync, shared by the initiating client (sync-client.ts) and the
// serving listener (sync-service.ts): drive a reconciliation endpoint over SyncReconcile
// messages, move revision records as SyncRevisions batches, and move file content for a
// SyncFetch through the push/pull data plane (Manifest, Want, data streams, TransferDone).
//
// Goals: every message from the peer is checked before it is used: reconciliation payloads hold
// exactly one message of bounded size, revision records arrive in the announced id order and
// must hash to those ids (a peer cannot slip in a record we did not ask for, or hold back one it
// claimed to have), fetched content must carry exactly the roots asked for; content lands
// through TransferReceiver (staged, verified, renamed into place), never written directly.
// Non-goals: deciding what to apply (sync-apply.ts), locks and stores (the callers).
import { lstatSync, realpathSync, type BigIntStats } from 'node:fs';
import path from 'node:path';
import { bytesEqual, toHex } from '../chunking/blake3.js';
import type { ChunkIndexPool } from '../store/chunk-index-pool.js';
import type { ChunkingParams } from '../chunking/fastcdc.js';
import { manifestFromFile } from '../file-chunking/file-chunker.js';
import { ClawpeerError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { ManifestEntry, SyncFetchItem, SyncFetchMessage } from '../protocol/messages.js';
import { decodeReconcilePayload, encodeReconcileMessage } from '../sync/reconcile-codec.js';
import type { ReconcileMessage } from '../sync/reconcile-codec.js';
import type { ReconcileEndpoint, ReconcileResult } from '../sync/reconcile.js';
import { decodeRevisionWithId, MAX_REVISION_BYTES, revisionIdOf } from '../sync/revision.js';
import type { RevisionEntry } from '../sync/revision.js';
import type { RateLimiter } from '../transfer/rate-limiter.js';
import { isConfinedRealpath, normalizeSharePath } from '../transfer/paths.js';
import type { DataStreamRouter } from '../session/data-stream-router.js';
import { hashKeyed, sourceFileOf, type ManifestCache } from '../exchange/manifest-cache.js';
import { isInternalPath } from '../store/internal-names.js';
import type { RevisionStore } from '../store/revision-store.js';
import type { FsyncPolicy } from '../store/publish-types.js';
import type { PeerSession } from '../session/session.js';
import { hearingJoinHints } from '../session/session-join.js';
import { historyBlobPath, removeHistoryBlobs } from '../store/sync-history.js';
import {
  effectiveStreamsAndWindow,
  expectMessage,
  expectWant,
  manifestMessages,
  receiveManifest,
} from '../exchange/transfer-control.js';
import { TransferReceiver } from '../exchange/transfer-receive.js';
import type { NoSpaceReport } from '../exchange/space-fit.js';
import { sendChunks } from '../exchange/transfer-send.js';
import { ProgressCounter, type TransferProgress } from '../transfer/transfer-progress.js';
import type { SourceFile } from '../exchange/transfer-source.js';
import { cachedHere, type PrelocatedFiles } from './fetch-prelocate.js';

/** Data streams and window a content fetch uses (bounded again by the session's caps). */
export const SYNC_FETCH_STREAMS = 4;
export const SYNC_FETCH_WINDOW = 32;
/** Room left in a frame for the envelope around a batch of records or fetch items, bytes. */
const BATCH_HEADROOM_BYTES = 1024;
/** Records or items per batch at most (below MAX_SYNC_ITEMS_PER_MESSAGE). */
const MAX_BATCH_ITEMS = 10_000;

/** One sync's conversation: its session, transfer id and limits. */
export interface SyncChannel {
  readonly session: PeerSession;
  readonly transferId: number;
  /** Longest wait for the peer's next message, ms (it may be hashing or publishing). */
  readonly timeoutMs: number;
  readonly signal: AbortSignal;
  readonly log: Logger;
  /** Caps on what this side sends the peer (listen --bwlimit). */
  readonly rateLimiters?: readonly RateLimiter[];
}

/**
 * Sends `first`, then feeds the peer's SyncReconcile messages to `endpoint` and sends what it
 * answers, until it has a result (the initiator's closing id lists are sent before returning).
 */
export async function runReconcile(
  ch: SyncChannel,
  endpoint: ReconcileEndpoint,
  first: readonly ReconcileMessage[],
): Promise<ReconcileResult> {
  const send = async (messages: readonly ReconcileMessage[]): Promise<void> => {
    for (const m of messages)
      await ch.session.control.send({
        type: 'sync-reconcile',
        transferId: ch.transferId,
        payload: encodeReconcileMessage(m),
      });
  };
  await send(first);
  for (;;) {
    const result = endpoint.result;
    if (result !== undefined) return result;
    const msg = await expectMessage(ch.session, 'sync-reconcile', ch.transferId, ch.timeoutMs, ch.signal);
    await send(endpoint.receive(decodeReconcilePayload(msg.payload)));
  }
}

/**
 * Sends the records of `ids` (in that order) as SyncRevisions batches; returns how many.
 * `pruned`: ids the peer has that our gc dropped, told on the final batch when the peer has
 * feature sync-pruned (it drops them too).
 */
export async function sendRevisions(
  ch: SyncChannel,
  store: RevisionStore,
  ids: readonly Uint8Array[],
  pruned: readonly Uint8Array[] = [],
): Promise<number> {
  const maxBytes = ch.session.caps.maxFrameBytes - BATCH_HEADROOM_BYTES;
  let batch: Uint8Array[] = [];
  let bytes = 0;
  for (const id of ids) {
    const record = store.getEncoded(id);
    if (record === undefined)
      throw new ClawpeerError(
        'IO',
        `revision ${toHex(id)} is in the id set but not in the revision log of ${store.dir}`,
      );
    if (batch.length > 0 && (bytes + record.length + 8 > maxBytes || batch.length >= MAX_BATCH_ITEMS)) {
      await ch.session.control.send({ type: 'sync-revisions', transferId: ch.transferId, records: batch, last: false });
      batch = [];
      bytes = 0;
    }
    batch.push(record);
    bytes += record.length + 8;
  }
  const tell = prunedToTell(ch, pruned);
  await ch.session.control.send({
    type: 'sync-revisions',
    transferId: ch.transferId,
    records: batch,
    last: true,
    ...(tell.length === 0 ? {} : { pruned: tell }),
  });
  return ids.length;
}

/** Of `pruned`, what sendRevisions tells the peer (it has feature sync-pruned; 10,000 a sync). */
export function prunedToTell(ch: SyncChannel, pruned: readonly Uint8Array[]): readonly Uint8Array[] {
  return ch.session.caps.features.includes('sync-pruned') ? pruned.slice(0, MAX_BATCH_ITEMS) : [];
}

/** What a peer said its gc dropped, kept to the ids it may name: those we have and it lacks. */
export function peerPrunedAmong(told: readonly Uint8Array[], theyLack: readonly Uint8Array[]): Uint8Array[] {
  if (told.length === 0) return []; // the usual case: no set of every id the peer lacks
  const lacking = new Set(theyLack.map(toHex));
  return told.filter((id) => lacking.has(toHex(id)));
}

/**
 * Drops from our log what the peer said its gc dropped (only ids we have and it lacks; a head
 * stays) and the history content only those referenced. Returns the revisions dropped.
 */
export async function dropPrunedByPeer(
  ch: SyncChannel,
  store: RevisionStore,
  folder: string,
  told: readonly Uint8Array[],
  theyLack: readonly Uint8Array[],
): Promise<number> {
  const ids = peerPrunedAmong(told, theyLack);
  if (ids.length === 0) return 0;
  const result = store.prune(ids);
  const blobs = await removeHistoryBlobs(folder, result.releasedContentRoots);
  ch.log.info('sync: dropped the revisions the peer pruned', {
    revisions: result.removedRevisions,
    historyFiles: blobs,
  });
  return result.removedRevisions;
}

/**
 * Receives the records of `expected` (the ids we lack, in the order reconciliation produced).
 * PROTOCOL when the peer sends more or fewer than it announced, a record that does not decode,
 * or a path inside `.clawpeer/`; HASH_MISMATCH for a record that is not the id it stands for.
 * `onPruned`: the ids the peer said its gc dropped (SyncRevisions.pruned), unchecked.
 * `subset`: the peer may send any of them, in that order (its heads, feature sync-peer-heads).
 */
export async function receiveRevisions(
  ch: SyncChannel,
  expected: readonly Uint8Array[],
  onPruned?: (ids: readonly Uint8Array[]) => void,
  subset = false,
): Promise<RevisionEntry[]> {
  const out: RevisionEntry[] = [];
  let next = 0; // the index in `expected` of the next record's id
  for (;;) {
    const msg = await expectMessage(ch.session, 'sync-revisions', ch.transferId, ch.timeoutMs, ch.signal);
    if (msg.pruned !== undefined && msg.pruned.length > 0) onPruned?.(msg.pruned);
    for (const record of msg.records) {
      if (subset) {
        const sent = revisionIdOf(record);
        while (next < expected.length && !bytesEqual(expected[next] as Uint8Array, sent)) next++;
      }
      const id = expected[next++];
      if (id === undefined)
        throw new ClawpeerError(
          'PROTOCOL',
          subset
            ? 'peer sent a revision record that is not one of its heads we lack, or out of order'
            : `peer sent more than the ${expected.length} revision records it announced`,
        );
      const entry = decodeRevisionWithId(record, id, MAX_REVISION_BYTES);
      if (isInternalPath(entry.revision.path))
        throw new ClawpeerError(
          'PROTOCOL',
          `peer sent a revision of ${JSON.stringify(entry.revision.path)}, a name reserved for clawpeer's own files`,
        );
      out.push(entry);
    }
    if (msg.last) break;
  }
  if (!subset && out.length !== expected.length) {
    throw new ClawpeerError(
      'PROTOCOL',
      `peer announced ${expected.length} revisions we lack but delivered ${out.length}`,
    );
  }
  return out;
}

/** Content the applying side wants: the peer's file at `sourcePath` with root `root`, placed at `destPath`. */
export interface FetchRequest {
  readonly sourcePath: string;
  readonly root: Uint8Array;
  readonly destPath: string;
  readonly mode: number;
  readonly mtimeMs: number;
}

export interface FetchOutcome {
  /** The requests the peer could serve (now published); the rest were skipped. */
  readonly delivered: FetchRequest[];
  readonly chunksReceived: number;
  /**
   * Each file published, by its share path: its lstat taken right after its commit batch
   * (ReceiverOptions.onFilePublished), for the warm certification to use rather than stat again.
   */
  readonly published?: ReadonlyMap<string, BigIntStats>;
  /** The files left out because they did not fit on the disk (not among `delivered`: the next sync asks again). */
  readonly noSpace?: NoSpaceReport;
}

export interface FetchOptions {
  readonly router: DataStreamRouter;
  readonly folder: string;
  /** How errors name the folder (a listener's share: `share NAME`, not its local path). Default: the folder. */
  readonly folderName?: string;
  readonly chunking: ChunkingParams;
  /** Runs after the peer said what it can deliver and before anything is published (conflict copies, history). */
  readonly beforePublish: (delivered: readonly FetchRequest[]) => Promise<void>;
  /** Runs just before a fetched file is renamed over its path (PublisherOptions.beforeReplace). */
  readonly beforeReplace?: (relPath: string, finalPath: string) => Promise<void>;
  /**
   * Each file as it is published, with its lstat right after its commit batch: what landed is
   * known even when the fetch fails later (sync-apply.ts records it).
   */
  readonly onFilePublished?: (relPath: string, st: BigIntStats) => void;
  /** A listener's in-memory chunk indexes (see chunk-index-pool.ts). */
  readonly indexes?: ChunkIndexPool;
  /** Progress of the content received: payload bytes written, files published. */
  readonly onProgress?: (p: TransferProgress) => void;
  /** --fsync (store/publisher.ts); default batch. */
  readonly fsync?: FsyncPolicy;
  /** The folder pin's check, before what is written by path (exchange/folder-pin.ts). */
  readonly guard?: () => void;
}

/** Asks the peer for `requests` and publishes what it delivers into the folder (replacing files). */
export async function fetchContent(
  ch: SyncChannel,
  requests: readonly FetchRequest[],
  options: FetchOptions,
): Promise<FetchOutcome> {
  const fetchId = ch.session.allocateTransferId();
  // The peer's data streams (early chunks) may come while we stage: they wait for our receiver.
  return options.router.expecting(fetchId, () => fetchWith(ch, fetchId, requests, options));
}

async function fetchWith(
  ch: SyncChannel,
  fetchId: number,
  requests: readonly FetchRequest[],
  options: FetchOptions,
): Promise<FetchOutcome> {
  const { session } = ch;
  const bySource = new Map<string, FetchRequest>();
  for (const r of requests) {
    if (bySource.has(r.sourcePath)) throw new TypeError(`content of ${r.sourcePath} requested twice`);
    bySource.set(r.sourcePath, r);
  }
  const maxBytes = session.caps.maxFrameBytes - BATCH_HEADROOM_BYTES;
  let batch: SyncFetchItem[] = [];
  let bytes = 0;
  for (const r of requests) {
    const itemBytes = Buffer.byteLength(r.sourcePath, 'utf8') + 40;
    if (batch.length > 0 && (bytes + itemBytes > maxBytes || batch.length >= MAX_BATCH_ITEMS)) {
      await session.control.send({ type: 'sync-fetch', transferId: ch.transferId, fetchId, items: batch, last: false });
      batch = [];
      bytes = 0;
    }
    batch.push({ path: r.sourcePath, root: r.root });
    bytes += itemBytes;
  }
  await session.control.send({ type: 'sync-fetch', transferId: ch.transferId, fetchId, items: batch, last: true });
  if (requests.length === 0) {
    await options.beforePublish([]);
    return { delivered: [], chunksReceived: 0, published: new Map() };
  }

  const offered = await receiveManifest(session, fetchId, ch.timeoutMs, ch.signal);
  const delivered: FetchRequest[] = [];
  const entries: ManifestEntry[] = [];
  for (const e of offered) {
    const req = bySource.get(e.path);
    if (req === undefined)
      throw new ClawpeerError(
        'PROTOCOL',
        `peer offered ${JSON.stringify(e.path)}, which was not asked for (or offered twice)`,
      );
    bySource.delete(e.path);
    if (e.kind !== 'file' || !bytesEqual(e.root, req.root)) {
      throw new ClawpeerError(
        'HASH_MISMATCH',
        `peer offered ${JSON.stringify(e.path)} with another content than the revision it announced`,
      );
    }
    delivered.push(req);
    entries.push({ ...e, path: req.destPath, mode: req.mode & 0o777, mtimeMs: req.mtimeMs });
  }
  await options.beforePublish(delivered);
  const totalBytes = entries.reduce((sum, e) => sum + e.size, 0);
  const onProgress = options.onProgress;
  const receiving =
    onProgress === undefined ? undefined : new ProgressCounter(onProgress, 'receiving', totalBytes, entries.length);
  const published = new Map<string, BigIntStats>();
  /** Destination paths this node refused to write (support/path-refusal.ts): left for the next sync. */
  const refused = new Set<string>();
  let noSpace: NoSpaceReport | undefined;
  const receiver = new TransferReceiver({
    session,
    router: options.router,
    transferId: fetchId,
    entries,
    chunking: options.chunking,
    signal: ch.signal,
    log: ch.log,
    destination: {
      root: options.folder,
      readOnly: false,
      basePath: '',
      ...(options.folderName === undefined ? {} : { name: options.folderName }),
    },
    force: true,
    onFilePublished: (relPath, st) => {
      published.set(relPath, st);
      options.onFilePublished?.(relPath, st);
    },
    onRefused: (relPath, error) => {
      refused.add(relPath);
      ch.log.warn('sync: cannot write a file here; left for the next sync', { path: relPath, error: error.message });
    },
    onNoSpace: (report) => (noSpace = report), // what does not fit waits for the next sync (space-fit.ts)
    ...(options.beforeReplace === undefined ? {} : { beforeReplace: options.beforeReplace }),
    ...(options.indexes === undefined ? {} : { indexes: options.indexes }),
    ...(options.fsync === undefined ? {} : { fsync: options.fsync }),
    ...(options.guard === undefined ? {} : { guard: options.guard }),
    ...(receiving === undefined
      ? {}
      : {
          onChunkWritten: (bytes: number) => receiving.addBytes(bytes),
          onPublished: (files: number) => receiving.setFiles(files),
        }),
  });
  try {
    const plan = await receiver.prepare();
    receiving?.setTotalBytes(plan.lackingBytes);
    await session.control.send({
      type: 'want',
      transferId: fetchId,
      lacking: plan.lacking,
      uniqueChunks: plan.uniqueCount,
    });
    // Nothing else comes on the control stream while the peer sends: its JoinWanted (it sees
    // random loss) is acted on now, not at the next exchange.
    const stats = await hearingJoinHints(session, () => receiver.receive());
    await session.control.send({
      type: 'transfer-done',
      transferId: fetchId,
      files: stats.files,
      bytes: stats.bytes,
      chunksReceived: stats.chunksReceived,
      chunksSkipped: stats.chunksSkipped,
    });
    for (const p of noSpace?.paths ?? []) refused.add(p);
    const landed = refused.size === 0 ? delivered : delivered.filter((r) => !refused.has(r.destPath));
    return {
      delivered: landed,
      chunksReceived: stats.chunksReceived,
      published,
      ...(noSpace === undefined ? {} : { noSpace }),
    };
  } catch (err) {
    await receiver.abort();
    throw err;
  }
}

/** Which local files a fetch may be served from (serveFetch). */
export interface ServableFiles {
  /** `relPath` is recorded here as a live file with content `root`: not an ignored or unscanned one. */
  readonly recorded: (relPath: string, root: Uint8Array) => boolean;
  /** `abs`'s directory really lies inside the folder (no directory on the way is a link out of it). */
  readonly inside: (abs: string) => boolean;
}

/** What serveFetch may serve from `folder`: recorded files, through directories inside it. */
export function servableFiles(folder: string, store: RevisionStore): ServableFiles {
  // One realpath per directory served from, not per file.
  const folderReal = realpathSync.native(folder);
  const insideDirs = new Map<string, boolean>();
  return {
    recorded: (rel, root) => store.isLiveFileHead(rel, root),
    inside: (abs) => {
      const dir = path.dirname(abs);
      let ok = insideDirs.get(dir);
      if (ok === undefined) {
        try {
          ok = isConfinedRealpath(folderReal, realpathSync.native(dir));
        } catch {
          ok = false; // gone: nothing to serve there
        }
        insideDirs.set(dir, ok);
      }
      return ok;
    },
  };
}

/**
 * Finds local bytes with content `root`: the file at `relPath`, the history blob, or any live
 * head with that root (a conflict copy made earlier in this sync). Each candidate is hashed:
 * only a file whose manifest has exactly that root is served. The file at `relPath` only when
 * the log records it with that root, and no file through a directory that leads out of the
 * folder: the peer names the path, and would learn otherwise whether an ignored file, or one
 * out of the folder behind a link, holds bytes it guesses (and make us hash it). The file at
 * `relPath` comes with the stat it was hashed with (SourceFile.key), for the chunk reader.
 */
export async function locate(
  folder: string,
  relPath: string,
  root: Uint8Array,
  chunking: ChunkingParams,
  byRoot: () => Map<string, string[]>,
  cache: ManifestCache | undefined,
  may: ServableFiles,
): Promise<SourceFile | undefined> {
  const cached = cachedHere({ folder, cache, ...may }, relPath, root);
  if (cached !== undefined) return cached;
  const here = path.join(folder, ...relPath.split('/'));
  if (may.recorded(relPath, root) && may.inside(here)) {
    // Keyed as a push keys its files: the chunk reader checks it by its stat, not by hashing again.
    try {
      const hashed = await hashKeyed(here, chunking);
      if (hashed !== undefined && bytesEqual(hashed.manifest.root, root)) return sourceFileOf(here, hashed);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  // Elsewhere (a history blob, another path): hashed again as each chunk is sent.
  const candidates = [historyBlobPath(folder, root)];
  for (const p of byRoot().get(toHex(root)) ?? []) {
    const abs = path.join(folder, ...p.split('/'));
    if (may.inside(abs)) candidates.push(abs);
  }
  for (const abs of candidates) {
    try {
      const st = lstatSync(abs);
      if (!st.isFile()) continue;
      const manifest = await manifestFromFile(abs, chunking);
      if (bytesEqual(manifest.root, root)) return { entryIndex: -1, localPath: abs, manifest };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw err;
    }
  }
  return undefined;
}

/**
 * Serves the peer's SyncFetch (its first batch is `first`): offers each item whose content is
 * still here (a file edited since the scan is left out: the next sync carries its new revision),
 * then sends the chunks the peer lacks. Returns the chunks sent. `onProgress`: payload bytes
 * sent, files the peer holds completely.
 */
export async function serveFetch(
  ch: SyncChannel,
  first: SyncFetchMessage,
  store: RevisionStore,
  folder: string,
  chunking: ChunkingParams,
  cache?: ManifestCache,
  onProgress?: (p: TransferProgress) => void,
  prelocated?: PrelocatedFiles,
): Promise<number> {
  const { session } = ch;
  prelocated?.stop();
  const items: SyncFetchItem[] = [...first.items];
  let last = first.last;
  while (!last) {
    const more = await expectMessage(session, 'sync-fetch', ch.transferId, ch.timeoutMs, ch.signal);
    if (more.fetchId !== first.fetchId)
      throw new ClawpeerError('PROTOCOL', `sync fetch ${more.fetchId} interleaved with fetch ${first.fetchId}`);
    if (items.length + more.items.length > 1_000_000)
      throw new ClawpeerError('PROTOCOL', 'sync fetch asks for more than 1,000,000 files');
    items.push(...more.items);
    last = more.last;
  }
  if (items.length === 0) return 0;
  let rootIndex: Map<string, string[]> | undefined;
  const byRoot = (): Map<string, string[]> => {
    if (rootIndex === undefined) {
      rootIndex = new Map();
      for (const head of store.heads()) {
        const r = head.revision;
        if (r.deleted || r.kind !== 'file') continue;
        const key = toHex(r.contentRoot);
        const paths = rootIndex.get(key);
        if (paths === undefined) rootIndex.set(key, [r.path]);
        else paths.push(r.path); // not a copy per head: 10,000 empty files share one root
      }
    }
    return rootIndex;
  };
  const may = servableFiles(folder, store);
  const entries: ManifestEntry[] = [];
  const files = new Map<number, SourceFile>();
  let totalBytes = 0;
  const seen = new Set<string>();
  for (const item of items) {
    const rel = normalizeSharePath(item.path);
    if (isInternalPath(rel) || seen.has(rel))
      throw new ClawpeerError('PROTOCOL', `sync fetch names ${JSON.stringify(item.path)} twice or inside .clawpeer`);
    seen.add(rel);
    const found =
      prelocated?.take(rel, item.root) ?? (await locate(folder, rel, item.root, chunking, byRoot, cache, may));
    if (found === undefined) {
      // The root names the revision asked for: two peers each asking the other for content
      // neither holds (convergence seeds 10028, 20042) are diagnosed from it.
      ch.log.info('sync: content asked for is no longer here (changed since the scan)', {
        path: rel,
        root: toHex(item.root).slice(0, 16),
      });
      continue;
    }
    const m = found.manifest;
    const chunkIds = new Uint8Array(m.chunks.length * 32);
    m.chunks.forEach((c, i) => chunkIds.set(c.id, i * 32));
    files.set(entries.length, { ...found, entryIndex: entries.length }); // with its key, if any
    entries.push({
      path: item.path,
      kind: 'file',
      size: m.size,
      mode: 0o644,
      mtimeMs: 0,
      linkTarget: '',
      root: m.root,
      chunkIds,
      chunkLengths: m.chunks.map((c) => c.length),
    });
    totalBytes += m.size;
  }
  await session.control.sendAll(manifestMessages(session, first.fetchId, entries));
  const sending =
    onProgress === undefined ? undefined : new ProgressCounter(onProgress, 'sending', totalBytes, entries.length);
  const stats = await sendChunks({
    session,
    transferId: first.fetchId,
    source: { entries, files, totalBytes },
    want: expectWant(session, first.fetchId, ch.timeoutMs, ch.signal),
    // No early chunks: the fetching side often holds the content already (a rename, a copy, an
    // earlier version), which only its Want can tell, and a rename must cost no chunk at all.
    early: false,
    ...effectiveStreamsAndWindow(session, SYNC_FETCH_STREAMS, SYNC_FETCH_WINDOW),
    idleTimeoutMs: ch.timeoutMs,
    signal: ch.signal,
    log: ch.log,
    ...(ch.rateLimiters === undefined ? {} : { rateLimiters: ch.rateLimiters }),
    ...(sending === undefined
      ? {}
      : {
          onChunkSent: (bytes: number) => sending.addBytes(bytes),
          onTotalBytes: (bytes: number) => sending.setTotalBytes(bytes),
          onFilesDelivered: (files: number) => sending.setFiles(files),
        }),
  });
  await expectMessage(session, 'transfer-done', first.fetchId, ch.timeoutMs, ch.signal);
  return stats.chunksSent;
}
