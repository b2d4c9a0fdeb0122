// One stream of a MuxSession (mux-session.ts): its receive buffer and window, its send credit,
// FIN and RESET; and the violations a stream detects, which the session answers with GOAWAY.
import { ClawpeerError } from '../errors.js';
import { ByteQueue } from './byte-queue.js';
import { FrameType, GoAwayCode, MAX_DATA_FRAME_BYTES, ResetCode, type MuxFrame } from './mux-codec.js';
import type { DuplexStream } from './types.js';

/** Credit every stream starts with in each direction, before any WINDOW_UPDATE (wire constant). */
export const INITIAL_WINDOW_BYTES = 256 * 1024;
/** Largest send credit a peer may grant (bytes); more is a flow-control violation (as in HTTP/2). */
export const MAX_SEND_CREDIT_BYTES = 2 ** 31 - 1;
/** Default and largest read() size when the caller gives none (bytes). */
const DEFAULT_READ_BYTES = MAX_DATA_FRAME_BYTES;

export interface Waiter<T> {
  resolve(value: T): void;
  reject(err: unknown): void;
}

/** What a stream needs from its session (MuxSession): sending its frames, and saying it ended. */
export interface MuxStreamHost {
  sendFrame(frame: MuxFrame): void;
  sendData(streamId: number, payload: Uint8Array): Promise<void>;
  streamEnded(stream: MuxStream): void;
}

/** The GOAWAY code to send for a violation, when it is not PROTOCOL_ERROR. */
export const violationGoAwayCodes = new WeakMap<ClawpeerError, number>();

/** A peer violation detected by a stream; the session answers it with GOAWAY(goAwayCode). */
function violation(message: string, goAwayCode: number = GoAwayCode.PROTOCOL_ERROR): ClawpeerError {
  const err = new ClawpeerError('PROTOCOL', `mux: ${message}`, { wire: 'PROTOCOL' });
  violationGoAwayCodes.set(err, goAwayCode);
  return err;
}

/** One multiplexed stream. Created only by MuxSession. */
export class MuxStream implements DuplexStream {
  readonly id: number;
  readonly #session: MuxStreamHost;
  readonly #windowBytes: number;
  // Receive side.
  readonly #received = new ByteQueue();
  /** Bytes the peer may still send before it needs a WINDOW_UPDATE. */
  #receiveCredit = INITIAL_WINDOW_BYTES;
  /** Bytes read by the application since the last WINDOW_UPDATE. */
  #consumedSinceUpdate = 0;
  #remoteFin = false;
  readonly #readWaiters: { maxBytes: number; waiter: Waiter<Uint8Array | null> }[] = [];
  // Send side.
  /** Bytes we may send before the peer grants more. */
  #sendCredit = INITIAL_WINDOW_BYTES;
  #creditWaiter: Waiter<void> | undefined;
  /** Serialises write() and finish() calls so frames keep the caller's order. */
  #writeChain: Promise<void> = Promise.resolve();
  #localFin = false;
  #localFinQueued = false;
  /** Set when the stream can no longer carry data: reset (either side) or connection loss. */
  #error: ClawpeerError | undefined;

  constructor(session: MuxStreamHost, id: number, windowBytes: number) {
    this.#session = session;
    this.id = id;
    this.#windowBytes = windowBytes;
    this.#receiveCredit = windowBytes; // the session grants the difference to the peer right away
  }

  write(data: Uint8Array): Promise<void> {
    if (this.#localFinQueued)
      return Promise.reject(new ClawpeerError('USAGE', `stream ${this.id}: write after finish()`));
    const run = this.#writeChain.then(() => this.#writeAll(data));
    this.#writeChain = run.catch(() => {}); // later calls see the failure through #error
    return run;
  }

  async #writeAll(data: Uint8Array): Promise<void> {
    if (this.#error !== undefined) throw this.#error;
    for (let offset = 0; offset < data.length;) {
      const error = this.#error as ClawpeerError | undefined; // set while we awaited credit
      if (error !== undefined) throw error;
      if (this.#sendCredit === 0) {
        await new Promise<void>((resolve, reject) => {
          this.#creditWaiter = { resolve, reject };
        });
        continue;
      }
      const n = Math.min(data.length - offset, this.#sendCredit, MAX_DATA_FRAME_BYTES);
      this.#sendCredit -= n;
      // Awaiting the socket's callback is the backpressure, and after it the caller may reuse `data`.
      await this.#session.sendData(this.id, data.subarray(offset, offset + n));
      offset += n;
    }
  }

  finish(): Promise<void> {
    if (this.#localFinQueued) return this.#writeChain;
    this.#localFinQueued = true;
    const run = this.#writeChain.then(() => {
      if (this.#error !== undefined) throw this.#error;
      this.#session.sendFrame({ type: FrameType.FIN, streamId: this.id });
      this.#localFin = true;
      this.#maybeEnded();
    });
    this.#writeChain = run.catch(() => {});
    return run;
  }

  reset(): void {
    if (this.#error !== undefined || (this.#localFin && this.#remoteFin)) return;
    this.#session.sendFrame({ type: FrameType.RESET, streamId: this.id, code: ResetCode.CANCEL });
    this.#abort(new ClawpeerError('ABORTED', `stream ${this.id} was reset locally`));
  }

  read(maxBytes: number = DEFAULT_READ_BYTES): Promise<Uint8Array | null> {
    if (!(maxBytes >= 1)) return Promise.reject(new RangeError(`read(maxBytes) needs maxBytes >= 1, got ${maxBytes}`));
    if (this.#readWaiters.length === 0) {
      const ready = this.#take(maxBytes);
      if (ready !== undefined) return Promise.resolve(ready);
      if (this.#remoteFin) return Promise.resolve(null);
      if (this.#error !== undefined) return Promise.reject(this.#error);
    }
    return new Promise((resolve, reject) => this.#readWaiters.push({ maxBytes, waiter: { resolve, reject } }));
  }

  #take(maxBytes: number): Uint8Array | undefined {
    const bytes = this.#received.shift(maxBytes);
    if (bytes === undefined) return undefined;
    this.#consumedSinceUpdate += bytes.length;
    // Return credit in batches (half a window) so WINDOW_UPDATEs stay rare; never after FIN.
    if (!this.#remoteFin && this.#error === undefined && this.#consumedSinceUpdate >= this.#windowBytes / 2) {
      this.#receiveCredit += this.#consumedSinceUpdate;
      this.#session.sendFrame({
        type: FrameType.WINDOW_UPDATE,
        streamId: this.id,
        increment: this.#consumedSinceUpdate,
      });
      this.#consumedSinceUpdate = 0;
    }
    return bytes;
  }

  #serveReaders(): void {
    while (this.#readWaiters.length > 0) {
      const head = this.#readWaiters[0];
      if (head === undefined) return;
      const bytes = this.#take(head.maxBytes);
      if (bytes !== undefined) head.waiter.resolve(bytes);
      else if (this.#remoteFin) head.waiter.resolve(null);
      else if (this.#error !== undefined) head.waiter.reject(this.#error);
      else return;
      this.#readWaiters.shift();
    }
  }

  // ---- called by MuxSession -----------------------------------------------------------------

  onData(bytes: Uint8Array): void {
    if (this.#remoteFin) throw violation(`DATA on stream ${this.id} after its FIN`);
    if (bytes.length > this.#receiveCredit) {
      throw violation(
        `flow control: stream ${this.id} received ${bytes.length} bytes with only ${this.#receiveCredit} of window left`,
        GoAwayCode.FLOW_CONTROL_ERROR,
      );
    }
    this.#receiveCredit -= bytes.length;
    if (this.#error !== undefined) return; // reset locally: the peer has not seen our RESET yet
    this.#received.push(bytes);
    this.#serveReaders();
  }

  onFin(): void {
    if (this.#remoteFin) throw violation(`second FIN on stream ${this.id}`);
    this.#remoteFin = true;
    this.#serveReaders();
    this.#maybeEnded();
  }

  onReset(code: number): void {
    const message =
      code === ResetCode.REFUSED
        ? `stream ${this.id} refused by the peer: it has its maximum of concurrent streams`
        : code === ResetCode.CLOSING
          ? `stream ${this.id} reset: the peer is closing the connection`
          : `stream ${this.id} was reset by the peer`;
    this.#abort(new ClawpeerError(code === ResetCode.CLOSING ? 'CONNECTION_CLOSED' : 'REMOTE', message));
  }

  onCredit(increment: number): void {
    if (this.#sendCredit + increment > MAX_SEND_CREDIT_BYTES) {
      throw violation(
        `flow control: WINDOW_UPDATE on stream ${this.id} raises the window past ${MAX_SEND_CREDIT_BYTES} bytes`,
        GoAwayCode.FLOW_CONTROL_ERROR,
      );
    }
    this.#sendCredit += increment;
    const waiter = this.#creditWaiter;
    this.#creditWaiter = undefined;
    waiter?.resolve();
  }

  onConnectionClosed(err: ClawpeerError): void {
    if (this.#error !== undefined) return;
    // Data that arrived before a FIN stays readable; everything else fails.
    this.#error = err;
    const waiter = this.#creditWaiter;
    this.#creditWaiter = undefined;
    waiter?.reject(err);
    this.#serveReaders();
  }

  #abort(err: ClawpeerError): void {
    this.#error = err;
    this.#received.clear();
    this.#remoteFin = false;
    const waiter = this.#creditWaiter;
    this.#creditWaiter = undefined;
    waiter?.reject(err);
    this.#serveReaders();
    this.#session.streamEnded(this);
  }

  #maybeEnded(): void {
    if (this.#localFin && this.#remoteFin) this.#session.streamEnded(this);
  }
}
