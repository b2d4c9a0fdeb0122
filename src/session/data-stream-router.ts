// Routes the data streams a peer opens to the transfer they belong to. The first frame on a
// data stream is a control `data-open` naming the transfer; a stream with anything else first is
// reset. A sender with the early-chunks feature opens its streams right after its Manifest, so a
// stream can arrive before the request that announces its transfer has been read (another QUIC
// stream, no order between them), and long before the receiver registers: preparing may wait for
// another push's destination lock or rescan a big share. Such streams wait, MAX_WAITING_STREAMS
// of them at most, and register() takes them. Until the receiving side calls expect() for the
// transfer (it has read the request), a stream waits WAITING_STREAM_MS; after that, as long as
// the transfer is expected. A stream for a transfer that already ended (its receiver had
// everything before reading it: the sender's early chunks were all unwanted) is reset at once.
import { setMaxListeners } from 'node:events';
import { ClawpeerError } from '../errors.js';
import type { Logger } from '../logger.js';
import { decodeControl } from '../protocol/messages.js';
import type { Connection } from '../transport/types.js';
import type { PeerSession } from './session.js';
import { expectFrame, FrameStream } from './frame-stream.js';
import { TEST_HOOKS } from '../support/test-hooks.js';

export interface IncomingDataStream {
  readonly frames: FrameStream;
  /** The stream id the sender puts in its DATA headers (the AEAD nonce's stream part). */
  readonly streamId: number;
}

type Sink = (stream: IncomingDataStream) => void;

/** Streams held for transfers not registered yet, in all (beyond: reset at once). */
export const MAX_WAITING_STREAMS = 64;
/** How long a stream waits for its transfer to be expected (its request read), ms. */
export const WAITING_STREAM_MS = 10_000;
const ENDED_TRANSFERS_KEPT = 256;

interface Waiting {
  readonly streams: IncomingDataStream[];
  /** Resets the streams unless the transfer is expected first. */
  timer: NodeJS.Timeout | undefined;
}

export class DataStreamRouter {
  readonly #sinks = new Map<number, Sink>();
  readonly #seenStreamIds = new Set<number>();
  readonly #waiting = new Map<number, Waiting>();
  #waitingCount = 0;
  /** Transfers whose request was read and whose receiver has not registered yet. */
  readonly #expected = new Set<number>();
  /** Recently ended transfers (insertion order), whose late streams are reset without waiting. */
  readonly #ended = new Set<number>();

  constructor(
    private readonly connection: Connection,
    private readonly maxFrameBytes: number,
    private readonly idleTimeoutMs: number,
    private readonly log: Logger,
    /** How long a stream of a transfer nobody expects waits (tests shorten it). */
    private readonly waitingStreamMs = TEST_HOOKS.waitingStreamMs ?? WAITING_STREAM_MS,
  ) {}

  /** Accepts streams until the connection closes. Run once per session. */
  run(signal?: AbortSignal): Promise<void> {
    return this.#acceptFrom(this.connection, signal);
  }

  /**
   * run(), and the same on every connection that joins `session` (its first connection must be
   * the router's): one router, one set of stream ids, so an id (the AEAD nonce's stream part)
   * is refused when it comes twice, whichever connections carry it.
   */
  runSession(session: PeerSession, signal?: AbortSignal): Promise<void> {
    // One accept loop per connection waits on `signal`: up to 16 of them are normal.
    if (signal !== undefined) setMaxListeners(0, signal);
    const unwatch = session.onConnection((conn) => void this.#acceptFrom(conn, signal));
    for (const conn of session.connections()) if (conn !== this.connection) void this.#acceptFrom(conn, signal);
    return this.run(signal).finally(unwatch);
  }

  async #acceptFrom(connection: Connection, signal?: AbortSignal): Promise<void> {
    for (;;) {
      const stream = await connection.acceptStream(signal !== undefined ? { signal } : {}).catch(() => null);
      if (stream === null) return;
      void this.#route(new FrameStream(stream, this.maxFrameBytes, this.idleTimeoutMs, `data stream ${stream.id}`));
    }
  }

  /**
   * The request of `transferId` was read and its receiver will register: its streams wait for
   * that, however long preparing takes. The returned function ends the wait (call it when the
   * transfer is over, registered or not): streams still waiting are reset.
   */
  expect(transferId: number): () => void {
    this.#expected.add(transferId);
    const w = this.#waiting.get(transferId);
    if (w !== undefined) {
      clearTimeout(w.timer);
      w.timer = undefined;
    }
    return () => {
      this.#expected.delete(transferId);
      for (const s of this.#takeWaiting(transferId)) s.frames.stream.reset();
    };
  }

  /** Runs `body` with `transferId` expected (see expect), and ends the wait after it. */
  async expecting<T>(transferId: number, body: () => Promise<T>): Promise<T> {
    const forget = this.expect(transferId);
    try {
      return await body();
    } finally {
      forget();
    }
  }

  /** Delivers the data streams of `transferId` to `sink` until the returned function is called. */
  register(transferId: number, sink: Sink): () => void {
    if (this.#sinks.has(transferId)) throw new ClawpeerError('PROTOCOL', `transfer ${transferId} is already running`);
    this.#sinks.set(transferId, sink);
    this.#expected.delete(transferId);
    for (const stream of this.#takeWaiting(transferId)) sink(stream);
    return () => {
      this.#sinks.delete(transferId);
      this.#ended.add(transferId);
      if (this.#ended.size > ENDED_TRANSFERS_KEPT) this.#ended.delete(this.#ended.values().next().value as number);
    };
  }

  #takeWaiting(transferId: number): IncomingDataStream[] {
    const w = this.#waiting.get(transferId);
    if (w === undefined) return [];
    clearTimeout(w.timer);
    this.#waiting.delete(transferId);
    this.#waitingCount -= w.streams.length;
    return w.streams;
  }

  #hold(transferId: number, stream: IncomingDataStream): void {
    if (this.#waitingCount >= MAX_WAITING_STREAMS)
      throw new ClawpeerError(
        'PROTOCOL',
        `data stream for unknown transfer ${transferId} (${MAX_WAITING_STREAMS} streams already wait for theirs)`,
      );
    let w = this.#waiting.get(transferId);
    if (w === undefined) {
      let timer: NodeJS.Timeout | undefined;
      if (!this.#expected.has(transferId)) {
        timer = setTimeout(() => {
          const streams = this.#takeWaiting(transferId);
          if (streams.length > 0)
            this.log.warn('reset data streams whose transfer never started', {
              transferId,
              streams: streams.length,
              waitedMs: this.waitingStreamMs,
            });
          for (const s of streams) s.frames.stream.reset();
        }, this.waitingStreamMs);
        timer.unref();
      }
      w = { streams: [], timer };
      this.#waiting.set(transferId, w);
    }
    w.streams.push(stream);
    this.#waitingCount++;
  }

  async #route(frames: FrameStream): Promise<void> {
    try {
      const first = expectFrame(await frames.next(), 'control', 'new data stream');
      const msg = decodeControl(first.body, { maxBytes: this.maxFrameBytes });
      if (msg.type !== 'data-open')
        throw new ClawpeerError('PROTOCOL', `a data stream must start with data-open, got ${msg.type}`);
      // A stream id names the AEAD nonce space: reusing one within a session would let a peer
      // replay frames across streams, so each may be opened once.
      if (this.#seenStreamIds.has(msg.streamId))
        throw new ClawpeerError('PROTOCOL', `data stream id ${msg.streamId} opened twice`);
      this.#seenStreamIds.add(msg.streamId);
      const sink = this.#sinks.get(msg.transferId);
      if (sink !== undefined) sink({ frames, streamId: msg.streamId });
      else if (this.#ended.has(msg.transferId))
        frames.stream.reset(); // nothing in it was wanted
      else this.#hold(msg.transferId, { frames, streamId: msg.streamId });
    } catch (err) {
      this.log.warn('refused a data stream', { error: (err as Error).message });
      frames.stream.reset();
    }
  }
}

/** The dialing side's router of each session (sessionRouter). */
const SESSION_ROUTERS = new WeakMap<PeerSession, DataStreamRouter>();

/**
 * The router of the data streams the peer opens on `session` for this side's requests (a pull's
 * content, a sync's fetches): made and run once per session, until its connections close, and
 * shared by every request on it. Two routers on one session would race for its streams: a
 * second sync or pull on a reused session waited out its streams' timeout. The first caller's
 * idle timeout is the session's.
 */
export function sessionRouter(session: PeerSession, idleTimeoutMs: number, log: Logger): DataStreamRouter {
  const known = SESSION_ROUTERS.get(session);
  if (known !== undefined) return known;
  const router = new DataStreamRouter(session.connection, session.caps.maxFrameBytes, idleTimeoutMs, log);
  void router.runSession(session);
  SESSION_ROUTERS.set(session, router);
  return router;
}
