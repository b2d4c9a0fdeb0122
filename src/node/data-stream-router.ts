// Routes the data streams a peer opens to the transfer they belong to. The first frame on a
// data stream is a control `data-open` naming the transfer; a stream for no registered transfer
// (or with anything else first) is reset. Registration happens before the receiver sends its
// Want, and the sender opens streams only after reading it, so there is no race.
import { ClawpeerError } from '../errors.js';
import type { Logger } from '../logger.js';
import { decodeControl } from '../protocol/messages.js';
import type { Connection } from '../transport/types.js';
import { expectFrame, FrameStream } from './frame-stream.js';

export interface IncomingDataStream {
  readonly frames: FrameStream;
  /** The stream id the sender puts in its DATA headers (the AEAD nonce's stream part). */
  readonly streamId: number;
}

type Sink = (stream: IncomingDataStream) => void;

export class DataStreamRouter {
  readonly #sinks = new Map<number, Sink>();
  readonly #seenStreamIds = new Set<number>();

  constructor(
    private readonly connection: Connection,
    private readonly maxFrameBytes: number,
    private readonly idleTimeoutMs: number,
    private readonly log: Logger,
  ) {}

  /** Accepts streams until the connection closes. Run once per session. */
  async run(signal?: AbortSignal): Promise<void> {
    for (;;) {
      const stream = await this.connection.acceptStream(signal !== undefined ? { signal } : {}).catch(() => null);
      if (stream === null) return;
      void this.#route(new FrameStream(stream, this.maxFrameBytes, this.idleTimeoutMs, `data stream ${stream.id}`));
    }
  }

  /** Delivers the data streams of `transferId` to `sink` until the returned function is called. */
  register(transferId: number, sink: Sink): () => void {
    if (this.#sinks.has(transferId)) throw new ClawpeerError('PROTOCOL', `transfer ${transferId} is already running`);
    this.#sinks.set(transferId, sink);
    return () => this.#sinks.delete(transferId);
  }

  async #route(frames: FrameStream): Promise<void> {
    try {
      const first = expectFrame(await frames.next(), 'control', 'new data stream');
      const msg = decodeControl(first.body, { maxBytes: this.maxFrameBytes });
      if (msg.type !== 'data-open') throw new ClawpeerError('PROTOCOL', `a data stream must start with data-open, got ${msg.type}`);
      const sink = this.#sinks.get(msg.transferId);
      if (sink === undefined) throw new ClawpeerError('PROTOCOL', `data stream for unknown transfer ${msg.transferId}`);
      // A stream id names the AEAD nonce space: reusing one within a session would let a peer
      // replay frames across streams, so each may be opened once.
      if (this.#seenStreamIds.has(msg.streamId)) throw new ClawpeerError('PROTOCOL', `data stream id ${msg.streamId} opened twice`);
      this.#seenStreamIds.add(msg.streamId);
      sink({ frames, streamId: msg.streamId });
    } catch (err) {
      this.log.warn('refused a data stream', { error: (err as Error).message });
      frames.stream.reset();
    }
  }
}
