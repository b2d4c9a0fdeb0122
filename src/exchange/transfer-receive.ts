// The data receiver: validates and confines every announced path, stages files (resumable
// partials for big ones), fills what it already holds locally, asks for exactly the rest, then
// writes, verifies and acks chunks as they arrive and publishes files atomically in batches.
import { setMaxListeners } from 'node:events';
import { lstatSync } from 'node:fs';
import { ClawpeerError } from '../errors.js';
import { encodeAckFrame } from '../protocol/ack-codec.js';
import type { FileManifest } from '../chunking/manifest.js';
import type { CreatedEntry, ManifestEntry, PublishedFile, UpdatedFile } from '../protocol/messages.js';
import { AckPacer } from '../transfer/ack-pacer.js';
import { chunkKey } from '../transfer/plan.js';
import { PEER_NAME_RULES } from '../transfer/paths.js';
import { decompressChunk, receiverCodec } from '../session/chunk-compression.js';
import { ensureFreeSpace } from '../store/free-space.js';
import { checkDeclaredSpace, SpaceShortage } from './space-fit.js';
import { ChunkIndex } from '../store/chunk-index.js';
import { bitmapFromKeys, chunkIdAt, uniqueChunks } from '../transfer/chunk-order.js';
import type { IncomingDataStream } from '../session/data-stream-router.js';
import { PartialStore } from '../store/partial-store.js';
import { budgetOf } from '../session/listener-budgets.js';
import type { Backups } from '../store/backups.js';
import { pathRefusal } from '../support/path-refusal.js';
import { Publisher } from '../store/publisher.js';
import type { StagedFile } from '../store/staged-file.js';
import type { DuplexStream } from '../transport/types.js';
import { TEST_HOOKS } from '../support/test-hooks.js';
import { withTimeout } from '../support/timeouts.js';
import { CommitQueue } from './commit-queue.js';
import { WriteCoalescer } from './write-coalescer.js';
import { DelayedAckFlush } from './delayed-acks.js';
import type { DryRunPlan, ReceivePlan, ReceiverOptions, ReceiveStats } from './receive-types.js';
import { chunkingManifest, destinationPaths } from './receive-entries.js';
import { planDryRun } from './receive-dry-run.js';
import { finishReceivedTree, makeReceivedDir } from './receive-tree.js';

export type { Destination, DryRunPlan, ReceivePlan, ReceiverOptions, ReceiveStats } from './receive-types.js';

/** Files of at least this size are staged as resumable partials (journaled chunks survive a crash). */
export const RESUMABLE_MIN_BYTES = 1 << 20; // 1 MiB
/**
 * abort() waits this long for the data-stream tasks it reset to finish their current chunk write,
 * ms: a local write of one chunk (at most the max chunk size) takes far less.
 */
const ABORT_SETTLE_MS = 5_000;

interface Placement {
  readonly file: StagedFile;
  readonly indices: number[];
}

export class TransferReceiver {
  readonly #o: ReceiverOptions;
  readonly #paths: string[];
  #publisher: Publisher | undefined;
  /** What the share holds; files this transfer publishes are added, so the next one need not hash them. */
  #index: ChunkIndex | undefined;
  readonly #staged: StagedFile[] = [];
  readonly #wanted = new Map<string, Placement[]>();
  /** Every distinct chunk key of the manifest: an early frame may carry any of them. */
  #announced: ReadonlySet<string> = new Set();
  /** Complete files, published in batches (commit-queue.ts); set by prepare(). */
  #commits: CommitQueue | undefined;
  #stats = {
    files: 0,
    bytes: 0,
    chunksReceived: 0,
    chunksSkipped: 0,
    chunksDropped: 0,
    chunksCompressed: 0,
    filesUnchanged: 0,
    filesKept: 0,
  };
  /** With itemize: what was published so far, and the directories and symlinks created. */
  #published: PublishedFile[] | undefined;
  #created: CreatedEntry[] | undefined;
  /** With itemize: identical files whose mtime or permissions were set. */
  #updated: UpdatedFile[] | undefined;
  /** Directories this node refused to make (onRefused): their metadata is not set. */
  readonly #refusedDirs = new Set<string>();
  #allReceived: { promise: Promise<void>; resolve: () => void; reject: (err: unknown) => void };
  /** Chunks taken off #wanted whose writes (and acks) are still in progress. */
  #writing = 0;
  #failure: unknown;
  /** Data streams being served and their tasks, so abort() can stop them and wait for them. */
  readonly #streams = new Set<DuplexStream>();
  readonly #streamTasks = new Set<Promise<void>>();
  /**
   * What the data streams' pending reads wait on, aborted with the caller's signal (receive()): a
   * striped session's 14 connections carry up to 56 streams, past Node's leak warning at 10
   * listeners on one signal, and the caller's signal keeps its limit.
   */
  readonly #reads = new AbortController();

  constructor(options: ReceiverOptions) {
    this.#o = options;
    setMaxListeners(0, this.#reads.signal);
    const peerRules = options.nameRules === undefined ? {} : PEER_NAME_RULES;
    this.#paths = destinationPaths(options.entries, options.destination.basePath, peerRules);
    if (options.itemize === true) {
      this.#published = [];
      this.#created = [];
      this.#updated = [];
    }
    let resolve!: () => void, reject!: (err: unknown) => void;
    const promise = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
    promise.catch(() => undefined);
    this.#allReceived = { promise, resolve, reject };
  }

  /** Where each announced entry lands, relative to the share root (confined, normalised), in entry order. */
  get destinationPaths(): readonly string[] {
    return this.#paths;
  }

  /**
   * Stages everything and works out what must come from the peer. Throws FILE_EXISTS,
   * SHARE_READ_ONLY, PATH_INVALID, IO (no room) before a single chunk travels; the partials it
   * created are removed then (a refused transfer leaves none behind; resumed ones stay).
   */
  async prepare(): Promise<ReceivePlan> {
    try {
      return await this.#prepare();
    } catch (err) {
      for (const f of this.#staged)
        if (f.partial?.resumed === false) await f.discard({ keepPartial: false }).catch(() => undefined);
      throw err;
    }
  }

  async #prepare(): Promise<ReceivePlan> {
    const { destination, entries } = this.#o;
    if (TEST_HOOKS.delayPrepareMs !== undefined) await new Promise((r) => setTimeout(r, TEST_HOOKS.delayPrepareMs));
    // A synced folder's `.clawpeer/` is not made again by its partials (folder-pin.ts).
    this.#o.guard?.();
    const partials = await PartialStore.open(destination.root, { makeInternalDir: this.#o.guard === undefined });
    // Without onNoSpace, what does not fit refuses the whole transfer; with it (a synced
    // folder's fetch) only the files that do not fit are left out (space-fit.ts).
    const shortage = this.#o.onNoSpace === undefined ? undefined : new SpaceShortage();
    // Before hashing the share or staging anything: a lying manifest (huge files) creates nothing.
    const leftOut = await checkDeclaredSpace({ ...destination, entries, paths: this.#paths, partials }, shortage);
    const mayResume = this.#partialBudget(partials);
    const index = await this.#openIndex(partials, true);
    this.#index = index;
    const publisher = await this.#openPublisher(index, partials);
    this.#publisher = publisher;
    const commits = this.#commitQueue(publisher);
    if (destination.basePath !== '') await publisher.makeDir(destination.basePath);

    const entryOf = new Map<StagedFile, ManifestEntry>();
    for (const [i, entry] of entries.entries()) {
      const rel = this.#paths[i] ?? '';
      if (entry.kind === 'dir') {
        // Itemized only when it was not there (rsync's cd+++++++++); the probe walks, creating nothing.
        const existed = this.#created === undefined || publisher.probeDir(rel);
        if (!(await makeReceivedDir(publisher, rel, this.#o.onRefused, this.#refusedDirs))) continue;
        if (!existed) this.#created?.push({ path: rel, kind: 'dir' });
        continue;
      }
      if (entry.kind !== 'file' || leftOut.has(i)) continue;
      const manifest = chunkingManifest(entry);
      const staged = await this.#stage(publisher, rel, manifest, entry, mayResume);
      if (staged === undefined) continue; // refused here (onRefused): its chunks are not wanted
      if (staged === 'identical' || staged === 'kept') {
        if (staged === 'identical') this.#stats.filesUnchanged++;
        else this.#stats.filesKept++;
        this.#stats.chunksSkipped += manifest.chunks.length;
        continue;
      }
      this.#staged.push(staged);
      entryOf.set(staged, entry);
    }
    // What staging still has to write, locally filled chunks included.
    const toWrite = (f: StagedFile): number =>
      f.missingChunks().reduce((sum, c) => sum + (f.manifest.chunks[c]?.length ?? 0), 0);
    // Before any content is written: a transfer that cannot fit is refused with the numbers.
    if (shortage === undefined) {
      const bytesToWrite = this.#staged.reduce((sum, f) => sum + toWrite(f), 0);
      await ensureFreeSpace(destination.root, bytesToWrite, destination.name ?? destination.root);
    } else {
      const fits = await shortage.pick(destination.root, this.#staged, toWrite, (f) => f.relPath);
      for (const f of this.#staged.splice(0)) {
        if (fits.has(f)) this.#staged.push(f);
        else await f.discard({ keepPartial: f.partial?.resumed === true });
      }
      const report = shortage.report();
      if (report !== undefined) this.#o.onNoSpace?.(report);
    }
    const local = new Map<string, Placement[]>();
    for (const staged of this.#staged) {
      const entry = entryOf.get(staged);
      if (entry === undefined) continue;
      this.#stats.chunksSkipped += staged.manifest.chunks.length - staged.missingChunks().length;
      const byKey = new Map<string, number[]>();
      for (const c of staged.missingChunks()) {
        const key = chunkKey(chunkIdAt(entry, c));
        const list = byKey.get(key);
        if (list === undefined) byKey.set(key, [c]);
        else list.push(c);
      }
      for (const [key, indices] of byKey) {
        const target = index.has(chunkIdAt(entry, indices[0] ?? 0)) ? local : this.#wanted;
        const list = target.get(key);
        if (list === undefined) target.set(key, [{ file: staged, indices }]);
        else list.push({ file: staged, indices });
      }
    }
    // Fill from chunks we already hold; a chunk whose source changed since indexing is wanted instead.
    // A file complete now commits now, and filling waits while two batches are committing: what
    // waits in memory stays bounded when every file is here already (a directory renamed).
    const filled = new Set<StagedFile>();
    for (const [key, placements] of local) {
      const bytes = await index.readChunk(Buffer.from(key, 'hex'));
      if (bytes === undefined) {
        this.#wanted.set(key, [...(this.#wanted.get(key) ?? []), ...placements]);
        continue;
      }
      for (const p of placements) {
        await p.file.writeChunk(p.indices, bytes);
        this.#stats.chunksSkipped += p.indices.length;
        if (p.file.complete) {
          filled.add(p.file);
          await this.#completed(p.file);
        }
      }
    }
    // Complete with nothing to write (an empty file, a partial that had it all) are queued too.
    for (const f of this.#staged) if (f.complete && !filled.has(f)) commits.add(f);

    const { keys } = uniqueChunks(entries);
    this.#announced = new Set(keys);
    if (this.#wanted.size === 0) this.#allReceived.resolve();
    let lackingBytes = 0;
    for (const [first] of this.#wanted.values())
      lackingBytes += first?.file.manifest.chunks[first.indices[0] ?? -1]?.length ?? 0;
    return { lacking: bitmapFromKeys(keys, new Set(this.#wanted.keys())), uniqueCount: keys.length, lackingBytes };
  }

  /**
   * Whether the next big file may stage as a resumable partial: on a listener, within the peer's
   * budget and the share's (listener-budgets.ts); beyond them it stages as a temp file, which a
   * failed transfer removes. A one-shot receiver (a pull's client) has no such budgets.
   */
  #partialBudget(partials: PartialStore): () => boolean {
    const budget = budgetOf(this.#o.session);
    if (budget === undefined) return () => true;
    let shareRoom = budget.limits.sharePartials - partials.count();
    return () => shareRoom > 0 && budget.takePartial() && shareRoom-- > 0;
  }

  /**
   * Plans without writing anything at the destination (receive-dry-run.ts). A listener's chunk
   * index may be refreshed (its own cache, under .clawpeer); a one-shot receiver's is not saved.
   */
  async dryRun(): Promise<DryRunPlan> {
    const index = await this.#openIndex(undefined, false);
    try {
      const publisher = await this.#openPublisher(index, undefined);
      return await planDryRun({
        entries: this.#o.entries,
        paths: this.#paths,
        basePath: this.#o.destination.basePath,
        index,
        publisher,
      });
    } finally {
      this.#o.indexes?.release(index);
    }
  }

  /**
   * The destination's chunk index, refreshed: a listener's from its pool (released by the
   * caller), else opened here. `partials` (the interrupted transfers' chunks) counts them as
   * held; a dry run passes none (the pool opens its own). A one-shot receiver saves the index
   * when `save`: what the refresh hashed survives a failed transfer.
   */
  async #openIndex(partials: PartialStore | undefined, save: boolean): Promise<ChunkIndex> {
    const { destination, chunking, signal } = this.#o;
    if (this.#o.indexes !== undefined)
      return this.#o.indexes.acquire(
        destination.root,
        chunking,
        partials ?? (await PartialStore.open(destination.root)),
        signal,
      );
    const index = await ChunkIndex.open({
      shareRoot: destination.root,
      chunking,
      ...(partials === undefined ? {} : { partials }),
    });
    await index.refresh({ signal });
    if (save) await this.#saveIndex(index);
    return index;
  }

  /** The publisher into the destination; `partials` for resumable staging (none in a dry run). */
  #openPublisher(index: ChunkIndex, partials: PartialStore | undefined): Promise<Publisher> {
    const { destination, chunking, signal } = this.#o;
    return Publisher.open({
      shareRoot: destination.root,
      readOnly: destination.readOnly,
      force: this.#o.force,
      chunking,
      ...(this.#o.existing === undefined ? {} : { existing: this.#o.existing }),
      ...(partials === undefined ? {} : { partials }),
      ...(this.#o.backup === undefined ? {} : { backup: { plan: this.#o.backup, destBase: destination.basePath } }),
      ...(this.#o.keeper === undefined ? {} : { keeper: this.#o.keeper }),
      ...(this.#o.guard === undefined ? {} : { guard: this.#o.guard }),
      ...(this.#o.beforeReplace === undefined ? {} : { beforeReplace: this.#o.beforeReplace }),
      ...(this.#o.fsync === undefined ? {} : { fsync: this.#o.fsync }),
      ...(this.#o.onRefused === undefined ? {} : { onRefused: this.#o.onRefused }),
      ...(this.#o.nameRules === undefined ? {} : { nameRules: this.#o.nameRules }),
      ...(this.#updated === undefined
        ? {}
        : {
            onMetadataSet: (path: string, set: { time: boolean; perms: boolean }) =>
              this.#updated?.push({ path, ...set }),
          }),
      onMetadataRefused: (path, what, error) =>
        this.#o.log.warn(`cannot set the ${what} of an identical file`, { path, error: error.message }),
      knownRoot: (p, st) => index.cachedRoot(p, st),
      signal,
    });
  }

  /** --backup's keeper, once prepared: --delete keeps what it removes with it too. */
  get backups(): Backups | undefined {
    return this.#publisher?.backups;
  }

  /** Stages one file; undefined when this node refuses the path and the caller takes refusals (onRefused). */
  async #stage(
    publisher: Publisher,
    rel: string,
    manifest: FileManifest,
    entry: ManifestEntry,
    mayResume: () => boolean,
  ): Promise<StagedFile | 'identical' | 'kept' | undefined> {
    try {
      return await publisher.stageFile(
        { relPath: rel, manifest, mode: entry.mode, mtimeMs: entry.mtimeMs },
        { resumable: entry.size >= RESUMABLE_MIN_BYTES && mayResume() },
      );
    } catch (err) {
      const onRefused = this.#o.onRefused;
      if (onRefused === undefined || pathRefusal(err) === undefined) throw err;
      onRefused(rel, err as Error);
      return undefined;
    }
  }

  /** One-shot receivers save now; a listener's pool saves in the background (release). */
  async #saveIndex(index: ChunkIndex): Promise<void> {
    if (this.#o.indexes !== undefined) {
      this.#o.indexes.release(index);
      return;
    }
    await index.save().catch((err: unknown) =>
      this.#o.log.warn('cannot save the chunk index (the next transfer re-hashes)', {
        error: (err as Error).message,
      }),
    );
  }

  /** Takes data streams from the router until every wanted chunk is in, then publishes the rest. */
  async receive(): Promise<ReceiveStats> {
    const { router, transferId, signal, session } = this.#o;
    const unregister = router.register(transferId, (incoming) => {
      const task = this.#serveStream(incoming).catch((err: unknown) => {
        this.#fail(err);
      });
      this.#streamTasks.add(task);
      void task.finally(() => this.#streamTasks.delete(task));
    });
    // A ClawpeerError reason says why (e.g. superseded by a newer push); anything else is a plain abort.
    // Recorded before the streams' reads stop: the receive reports the first failure recorded.
    const onAbort = (): void => {
      this.#fail(
        signal.reason instanceof ClawpeerError
          ? signal.reason
          : new ClawpeerError('ABORTED', `transfer ${transferId} aborted`),
      );
      this.#reads.abort(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
    if (signal.aborted) onAbort(); // aborted during prepare(): the listener above never fires
    // The chunks come only on data streams, and a failing stream fails this transfer; but when
    // the connection dies before the peer opened one (a listener killed right after our Want),
    // no stream is there to fail, and the wait would never end: the command then ended with
    // the event loop, without its result.
    // A promise's callbacks cannot be removed: the one left behind on a long session's
    // connection holds only this small box, emptied when receiving ends, not the receiver.
    const watch: { fail: ((err: ClawpeerError) => void) | undefined } = { fail: (err) => this.#fail(err) };
    const peerId = session.peerId;
    void session.connection.closed.then((info) => {
      const why = info.local ? 'was closed here' : info.reason === undefined ? 'closed' : `closed (${info.reason})`;
      watch.fail?.(
        new ClawpeerError(
          'CONNECTION_CLOSED',
          `the connection to peer ${peerId} ${why} before transfer ${transferId} had all its chunks`,
        ),
      );
    });
    try {
      // Every wanted chunk is written and verified: publish now. The streams themselves end when
      // the sender's FIN arrives; waiting for that would cost a round trip for nothing.
      await this.#allReceived.promise;
      // eslint-disable-next-line @typescript-eslint/only-throw-error -- rethrows the caught failure unchanged
      if (this.#failure !== undefined) throw this.#failure;
      await this.#commits?.flush(true);
      if (this.#publisher === undefined) throw new TypeError('receive before prepare');
      await finishReceivedTree(this.#publisher, this.#o.entries, this.#paths, this.#refusedDirs, this.#o.onRefused, {
        kept: () => this.#stats.filesKept++,
        created: (e) => this.#created?.push(e),
      });
      if (this.#index !== undefined) await this.#saveIndex(this.#index);
      return {
        ...this.#stats,
        ...(this.#published === undefined ? {} : { published: this.#published }),
        ...(this.#created === undefined || this.#created.length === 0 ? {} : { created: this.#created }),
        ...(this.#updated === undefined || this.#updated.length === 0 ? {} : { updated: this.#updated }),
      };
    } finally {
      watch.fail = undefined;
      signal.removeEventListener('abort', onAbort);
      unregister();
    }
  }

  /**
   * Stops the transfer and deletes its temp files (resumable partials are kept for the next
   * attempt). When it resolves, this receiver touches the destination no more: its data streams
   * are reset and their tasks done (bounded by ABORT_SETTLE_MS), and no commit is in progress.
   */
  async abort(): Promise<void> {
    this.#fail(new ClawpeerError('ABORTED', `transfer ${this.#o.transferId} aborted`));
    for (const s of this.#streams) s.reset();
    await withTimeout(
      Promise.allSettled([...this.#streamTasks]),
      ABORT_SETTLE_MS,
      `stopping the data streams of transfer ${this.#o.transferId}`,
    ).catch(() => undefined);
    await this.#commits?.settled.catch(() => undefined);
    await this.#publisher?.abort().catch(() => undefined);
    if (this.#index !== undefined) this.#o.indexes?.release(this.#index);
  }

  #fail(err: unknown): void {
    if (this.#failure === undefined) this.#failure = err;
    this.#allReceived.reject(err);
  }

  async #serveStream(incoming: IncomingDataStream): Promise<void> {
    const { session } = this.#o;
    const signal = this.#reads.signal;
    const { frames, streamId } = incoming;
    let expectedSeq = 0;
    // Acks are cumulative, paced (one per ACK_EVERY_CHUNKS, or ACK_DELAY_MS after this stream
    // runs dry: transfer/ack-pacer.ts, delayed-acks.ts) and queued: one writer sends them as the
    // previous write completes, so acking never holds up the next frame (write-coalescer.ts).
    const writes = new WriteCoalescer((bytes) => frames.write(bytes));
    const acks = new AckPacer((through) => writes.push(encodeAckFrame(streamId, through)));
    const delayedAcks = new DelayedAckFlush(() => acks.flush());
    let plainBuffer = Buffer.allocUnsafe(0);
    this.#streams.add(frames.stream);
    try {
      for (;;) {
        // eslint-disable-next-line @typescript-eslint/only-throw-error -- rethrows the caught failure unchanged
        if (this.#failure !== undefined) throw this.#failure;
        const frame = await frames.next(signal, undefined, delayedAcks.waiting);
        if (frame === null) {
          delayedAcks.flushNow();
          await writes.drained();
          break;
        }
        delayedAcks.arrived();
        if (frame.type !== 'data')
          throw new ClawpeerError('PROTOCOL', `expected a data frame on data stream ${streamId}, got ${frame.type}`);
        const header = frame.header;
        const sequence = expectedSeq++;
        const key = chunkKey(header.chunkId);
        // Opened into this stream's reused buffer (aead.ts), unless a small file assembled in
        // memory will keep the bytes till its commit: a fresh buffer per chunk cost an
        // allocation, page faults and GC work per chunk.
        const reuse = header.compressed || this.#wanted.get(key)?.some((p) => p.file.inMemory) !== true;
        if (reuse && plainBuffer.length < header.payloadBytes)
          plainBuffer = Buffer.allocUnsafeSlow(header.payloadBytes);
        const payload = session.opener.open(frame, { streamId, sequence }, reuse ? plainBuffer : undefined);
        frames.recycle(frame); // opened and keyed: its buffer may take the next frame
        const zstd = header.compressed ? receiverCodec(session.caps, streamId) : null;
        if (zstd === null && payload.length !== header.chunkBytes)
          throw new ClawpeerError(
            'PROTOCOL',
            `chunk ${key} has ${payload.length} bytes, header says ${header.chunkBytes}`,
          );
        const placements = this.#wanted.get(key);
        if (placements === undefined) {
          // An early frame left the sender before our Want: it may carry a chunk we hold. Ack and
          // drop it, if it is in the manifest and within the first window of its stream.
          if (header.early === true && sequence < session.caps.maxWindowChunks && this.#announced.has(key)) {
            this.#stats.chunksDropped++;
            acks.received(sequence);
            continue;
          }
          throw new ClawpeerError(
            'PROTOCOL',
            `peer sent chunk ${key}, which was not asked for (or was already received)`,
          );
        }
        // The manifest's length, not the frame's claim, bounds what a compressed chunk may decode to.
        const first = placements[0];
        const manifestBytes = first?.file.manifest.chunks[first.indices[0] ?? -1]?.length;
        if (manifestBytes !== header.chunkBytes)
          throw new ClawpeerError(
            'PROTOCOL',
            `chunk ${key} has ${String(manifestBytes)} bytes in the manifest, its frame says ${header.chunkBytes}`,
          );
        this.#wanted.delete(key);
        this.#writing++;
        // Decompressed only now: an early chunk we hold already is dropped without the work.
        const plain = zstd === null ? payload : await decompressChunk(zstd, payload, header.chunkBytes, key);
        if (zstd !== null) this.#stats.chunksCompressed++;
        const commits = this.#commits;
        if (commits === undefined) throw new TypeError('receive before prepare');
        for (const p of placements) {
          await p.file.writeChunk(p.indices, plain); // verifies BLAKE3 against the manifest
          // Queued before the last chunk's news below: receive() then publishes the queue whole.
          if (p.file.complete) commits.add(p.file);
        }
        this.#stats.chunksReceived++;
        this.#o.onChunkWritten?.(plain.length);
        acks.received(sequence);
        this.#writing--;
        if (this.#wanted.size === 0 && this.#writing === 0) this.#allReceived.resolve();
        // A batch commits (fsyncs) beside receiving; waiting here stalled this stream's window
        // for the whole commit (acks were 0.1-0.9 s late on 2,000 small files).
        await this.#flushSome(commits);
      }
    } catch (err) {
      frames.stream.reset();
      throw err;
    } finally {
      delayedAcks.close();
      this.#streams.delete(frames.stream);
    }
    await frames.stream.finish().catch(() => undefined);
  }

  /**
   * Queues a complete file for publishing and starts a batch when the queue's rule says so; waits
   * only when another batch is already waiting, which bounds what sits in memory.
   */
  async #completed(file: StagedFile): Promise<void> {
    const commits = this.#commits;
    if (commits === undefined) throw new TypeError('receive before prepare');
    commits.add(file);
    await this.#flushSome(commits);
  }

  /** Starts a batch when the queue's rule says so; waits only when another is already waiting. */
  async #flushSome(commits: CommitQueue): Promise<void> {
    const committing = commits.flush(false);
    if (commits.inFlight > 1) await committing;
    else committing.catch((err: unknown) => this.#fail(err));
  }

  #commitQueue(publisher: Publisher): CommitQueue {
    this.#commits = new CommitQueue({
      commit: (batch) => publisher.commit(batch),
      committed: (batch) => {
        for (const f of batch) {
          if (f.state !== 'committed') continue; // refused here (onRefused)
          this.#published?.push({ path: f.relPath, replaced: f.replaces });
          this.#stats.files++;
          this.#stats.bytes += f.manifest.size;
          const st = lstatSync(f.finalPath, { bigint: true, throwIfNoEntry: false });
          if (st?.isFile() === true) {
            this.#index?.addFile(f.relPath, f.manifest, st);
            this.#o.onFilePublished?.(f.relPath, st);
          }
        }
        this.#o.onPublished?.(this.#stats.files);
      },
      failed: () => this.#failure !== undefined,
      onError: (err) => this.#fail(err),
    });
    return this.#commits;
  }
}
