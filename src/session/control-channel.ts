// Drives the handshake core over the first bidi stream of a connection, then serves that stream
// as the control channel (typed control messages in CONTROL frames).
//
// Goals: the I/O half of src/protocol/handshake.ts (quinn-style driver: after every receive,
// write what the core wants sent; after every send, re-arm the one timer the core asked for);
// frames read through the frame codec with a hard size limit (64 KiB during the handshake, the
// negotiated limit afterwards); a peer's Error message surfaces as the matching ClawpeerError;
// every wait honours an AbortSignal, and a cancelled receive() leaves the channel usable.
// Non-goals: pinning against the paired set (done before the handshake, on the transport's
// proven key), DATA frames (the data plane opens its own streams), keep-alive policy.
import { performance } from 'node:perf_hooks';
import { ClawpeerError, errorFromWire, WIRE_ERRORS, wireCodeFor, type WireErrorCode } from '../errors.js';
import type { Identity } from '../crypto/identity.js';
import type { SessionKeys } from '../crypto/session-keys.js';
import {
  DEFAULT_CAPABILITIES,
  type Capabilities,
  type SessionCapabilities,
  type VersionRange,
} from '../protocol/capabilities.js';
import { FrameDecoder, type Frame } from '../protocol/frame-codec.js';
import {
  DEFAULT_HANDSHAKE_TIMEOUT_MS,
  Handshake,
  HANDSHAKE_MAX_FRAME_BYTES,
  type HandshakeConfig,
} from '../protocol/handshake.js';
import { decodeControl, encodeControlFrame, type ControlMessage } from '../protocol/messages.js';
import type { DuplexStream } from '../transport/types.js';

/** Bytes asked of the transport per read: 64 KiB (quinn allocates per call, PLATFORM.md). */
export const CONTROL_READ_BYTES = 64 << 10;
/** How long we try to deliver a parting Error message before giving up on the peer. */
export const ERROR_FLUSH_TIMEOUT_MS = 1_000;
/** sendAll joins consecutive frames into one write up to this many bytes. */
const SEND_ALL_JOIN_BYTES = 256 << 10;

export interface ControlHandshakeOptions {
  readonly identity: Identity;
  /** The peer's Ed25519 key as the transport proved it (Connection.remotePublicKey). */
  readonly expectedRemoteKey: Uint8Array;
  readonly caps?: Capabilities;
  readonly versions?: VersionRange;
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
  /** Monotonic clock in ms (default performance.now); tests may inject one. */
  readonly clock?: () => number;
}

export interface ControlHandshakeResult {
  readonly version: number;
  readonly caps: SessionCapabilities;
  readonly remotePublicKey: Uint8Array;
  readonly keys: SessionKeys;
  /** Identical on both sides: a session id / channel binding. */
  readonly transcriptHash: Uint8Array;
  readonly channel: ControlChannel;
}

type Waited<T> = { readonly kind: 'value'; readonly value: T } | { readonly kind: 'timeout' };

/**
 * Waits for `promise`, at most until `deadline` (clock ms; null = no limit). Rejects with
 * ABORTED when `signal` fires. The promise itself is left running (its result stays usable).
 */
function waitUntil<T>(
  promise: Promise<T>,
  deadline: number | null,
  clock: () => number,
  signal?: AbortSignal,
): Promise<Waited<T>> {
  if (signal?.aborted === true) return Promise.reject(abortError(signal));
  return new Promise<Waited<T>>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const cleanup = (): void => {
      if (timer !== undefined) clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    const onAbort = (): void => {
      cleanup();
      reject(abortError(signal));
    };
    if (deadline !== null) {
      timer = setTimeout(
        () => {
          cleanup();
          resolve({ kind: 'timeout' });
        },
        Math.max(0, deadline - clock()),
      );
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        cleanup();
        resolve({ kind: 'value', value });
      },
      (err: unknown) => {
        cleanup();
        reject(err);
      },
    );
  });
}

function abortError(signal: AbortSignal | undefined): ClawpeerError {
  return new ClawpeerError('ABORTED', 'control channel operation aborted', { cause: signal?.reason });
}

/** Frames from a stream, one transport read at a time; a read survives a timed-out wait. */
class FrameReader {
  readonly decoder: FrameDecoder;
  readonly #stream: DuplexStream;
  #pendingRead: Promise<Uint8Array | null> | undefined;

  constructor(stream: DuplexStream, maxFrameBytes: number) {
    this.#stream = stream;
    this.decoder = new FrameDecoder({ maxFrameBytes });
  }

  /** The next frame, null at a clean FIN, or timeout. */
  async next(deadline: number | null, clock: () => number, signal?: AbortSignal): Promise<Waited<Frame | null>> {
    for (;;) {
      const decoded = this.decoder.next();
      if (decoded.kind === 'frame') return { kind: 'value', value: decoded.frame };
      if (this.#pendingRead === undefined) {
        this.#pendingRead = this.#stream.read(CONTROL_READ_BYTES);
        this.#pendingRead.catch(() => undefined); // observed below; never an unhandled rejection
      }
      const waited = await waitUntil(this.#pendingRead, deadline, clock, signal);
      if (waited.kind === 'timeout') return waited;
      this.#pendingRead = undefined;
      if (waited.value === null) {
        this.decoder.end(); // PROTOCOL error if the peer stopped inside a frame
        return { kind: 'value', value: null };
      }
      this.decoder.push(waited.value);
    }
  }
}

/**
 * The control stream after the handshake. receive() and send() may run concurrently with each
 * other; at most one receive() at a time. Writes are serialised (frames never interleave).
 */
export class ControlChannel {
  readonly maxFrameBytes: number;
  readonly #stream: DuplexStream;
  readonly #reader: FrameReader;
  readonly #clock: () => number;
  #writeChain: Promise<void> = Promise.resolve();
  #receiving = false;
  #failed: ClawpeerError | undefined;
  /** Called with a JoinWanted's count (see receive); the dialer of an automatic session sets it. */
  onJoinWanted: ((connections: number) => void) | undefined;
  #finished = false;

  /** @internal Built by clientHandshake / serverHandshake. */
  constructor(stream: DuplexStream, reader: FrameReader, maxFrameBytes: number, clock: () => number) {
    this.#stream = stream;
    this.#reader = reader;
    this.#clock = clock;
    this.maxFrameBytes = maxFrameBytes;
    reader.decoder.setMaxFrameBytes(maxFrameBytes);
  }

  /** Sends one control message. Handshake messages are refused (they belong to the core). */
  send(message: ControlMessage, options: { signal?: AbortSignal } = {}): Promise<void> {
    return this.sendAll([message], options);
  }

  /**
   * Sends messages in order, joined into as few stream writes as SEND_ALL_JOIN_BYTES allows:
   * each awaited write is a round trip through the transport's runtime (0.5-5 ms here), and a
   * push's request and manifest batches waited for one each before its first chunk left.
   */
  sendAll(messages: readonly ControlMessage[], options: { signal?: AbortSignal } = {}): Promise<void> {
    for (const message of messages) {
      if (message.type === 'hello' || message.type === 'welcome' || message.type === 'finished') {
        return Promise.reject(new TypeError(`${message.type} is a handshake message; the handshake is over`));
      }
    }
    if (this.#finished)
      return Promise.reject(new ClawpeerError('CONNECTION_CLOSED', 'control channel is closed for sending'));
    // Every message is encoded before anything is written: a malformed one sends none of them.
    let frames: Uint8Array[];
    try {
      frames = messages.map((m) => encodeControlFrame(m));
    } catch (err) {
      return Promise.reject(err);
    }
    const writes: Promise<void>[] = [];
    let group: Uint8Array[] = [];
    let groupBytes = 0;
    const flush = (): void => {
      if (group.length === 0) return;
      writes.push(this.#write(group.length === 1 ? group[0]! : Buffer.concat(group, groupBytes), options.signal));
      group = [];
      groupBytes = 0;
    };
    for (const frame of frames) {
      if (groupBytes + frame.length > SEND_ALL_JOIN_BYTES) flush();
      group.push(frame);
      groupBytes += frame.length;
    }
    flush();
    return Promise.all(writes).then(() => undefined);
  }

  /** Tells the peer why we are giving up (an Error message). */
  sendError(code: WireErrorCode, message: string, options: { signal?: AbortSignal } = {}): Promise<void> {
    return this.send({ type: 'error', code: WIRE_ERRORS[code].wire, message }, options);
  }

  /**
   * The next control message, or null once the peer finished the stream. A peer Error message
   * rejects with errorFromWire's ClawpeerError; a malformed or unexpected frame rejects with
   * PROTOCOL / FRAME_TOO_LARGE after telling the peer. Aborting leaves the channel usable.
   */
  async receive(options: { signal?: AbortSignal } = {}): Promise<ControlMessage | null> {
    if (this.#failed !== undefined) throw this.#failed;
    if (this.#receiving) throw new TypeError('ControlChannel.receive() is already pending');
    this.#receiving = true;
    try {
      for (;;) {
        const message = await this.#receiveOne(options.signal);
        // A listener's hint that it sees random loss (feature join): taken here, whatever the
        // caller waits for, so no request flow has to know about it.
        if (message?.type === 'join-wanted') {
          this.onJoinWanted?.(message.connections);
          continue;
        }
        return message;
      }
    } catch (err) {
      if (isPeerFault(err) && this.#failed === undefined) {
        this.#failed = err;
        if (!this.#finished) {
          this.#finished = true;
          // Let queued sends go first (bounded: a stalled peer must not hold the error back).
          await waitUntil(this.#writeChain, this.#clock() + ERROR_FLUSH_TIMEOUT_MS, this.#clock);
          await sayGoodbye(this.#stream, err, this.#clock);
        }
      }
      throw err;
    } finally {
      this.#receiving = false;
    }
  }

  async #receiveOne(signal: AbortSignal | undefined): Promise<ControlMessage | null> {
    const waited = await this.#reader.next(null, this.#clock, signal);
    if (waited.kind === 'timeout') throw new TypeError('no deadline was set');
    const frame = waited.value;
    if (frame === null) return null;
    if (frame.type !== 'control')
      throw new ClawpeerError('PROTOCOL', `unexpected ${frame.type} frame on the control stream`);
    const message = decodeControl(frame.body, { maxBytes: this.maxFrameBytes });
    switch (message.type) {
      case 'error': {
        const err = errorFromWire(message.code, message.message);
        this.#failed = err;
        throw err;
      }
      case 'hello':
      case 'welcome':
      case 'finished':
      case 'pair-request':
      case 'pair-accept':
      case 'code-pair-start':
      case 'code-pair-reply':
      case 'code-pair-finish':
      case 'code-pair-done':
        throw new ClawpeerError('PROTOCOL', `unexpected ${message.type} after the handshake`);
      case 'ping':
      case 'pong':
      case 'transfer-request':
      case 'transfer-accept':
      case 'manifest':
      case 'want':
      case 'data-open':
      case 'transfer-done':
      case 'sync-request':
      case 'sync-accept':
      case 'sync-reconcile':
      case 'sync-revisions':
      case 'sync-fetch':
      case 'sync-done':
      case 'watch-share':
      case 'share-changed':
      case 'list-request':
      case 'list-reply':
      case 'join-wanted':
        return message;
      case 'session-join':
      case 'session-joined':
        throw new ClawpeerError(
          'PROTOCOL',
          `unexpected ${message.type} on a session's control stream (it belongs on a joining connection)`,
        );
      default: {
        const unreachable: never = message;
        throw new TypeError(`unhandled control message ${JSON.stringify(unreachable)}`);
      }
    }
  }

  /** Finishes our direction (FIN after everything queued). The peer's receive() then returns null. */
  async close(): Promise<void> {
    if (this.#finished) return;
    this.#finished = true;
    const pending = this.#writeChain;
    await pending.catch(() => undefined);
    await this.#stream.finish();
  }

  #write(frame: Uint8Array, signal?: AbortSignal): Promise<void> {
    const run = async (): Promise<void> => {
      await waitUntil(this.#stream.write(frame), null, this.#clock, signal);
    };
    const next = this.#writeChain.then(run, run);
    this.#writeChain = next.catch(() => undefined);
    return next;
  }
}

/** Errors caused by what the peer sent, which we explain to it before giving up. */
function isPeerFault(err: unknown): err is ClawpeerError {
  return err instanceof ClawpeerError && (err.code === 'PROTOCOL' || err.code === 'FRAME_TOO_LARGE');
}

/** Best effort, bounded by ERROR_FLUSH_TIMEOUT_MS: send an Error message, then FIN. */
async function sayGoodbye(stream: DuplexStream, err: ClawpeerError, clock: () => number): Promise<void> {
  const frame = encodeControlFrame({ type: 'error', code: wireCodeFor(err).code, message: err.message });
  try {
    const waited = await waitUntil(stream.write(frame), clock() + ERROR_FLUSH_TIMEOUT_MS, clock);
    if (waited.kind === 'value') await stream.finish();
  } catch {
    // The peer may be gone already; the local error is what the caller gets.
  }
}

/**
 * The server's first message, when it is neither a Hello nor an Error, offered to `takeFirst`
 * before the handshake refuses it; true means it was taken (and answered) by the caller.
 */
type TakeFirst = (message: ControlMessage) => Promise<boolean>;

async function runHandshake(
  stream: DuplexStream,
  core: Handshake,
  options: ControlHandshakeOptions,
  clock: () => number,
  takeFirst?: TakeFirst,
): Promise<ControlHandshakeResult | null> {
  const reader = new FrameReader(stream, HANDSHAKE_MAX_FRAME_BYTES);
  const flush = async (deadline: number | null): Promise<void> => {
    for (let frame = core.pollTransmit(); frame !== null; frame = core.pollTransmit()) {
      const waited = await waitUntil(stream.write(frame), deadline, clock, options.signal);
      if (waited.kind === 'timeout') core.handleTimeout(clock());
    }
  };
  try {
    for (;;) {
      await flush(core.pollTimeout());
      const result = core.result;
      if (result !== undefined) {
        return { ...result, channel: new ControlChannel(stream, reader, result.caps.maxFrameBytes, clock) };
      }
      const error = core.error;
      if (error !== undefined) {
        // Deliver the Error message the core queued (if any), then stop writing.
        await flush(clock() + ERROR_FLUSH_TIMEOUT_MS).catch(() => undefined);
        await stream.finish().catch(() => undefined);
        throw error;
      }
      let waited: Waited<Frame | null>;
      try {
        waited = await reader.next(core.pollTimeout(), clock, options.signal);
      } catch (err) {
        // A framing error (bad header, oversized, truncated): tell the peer, as the core would.
        if (isPeerFault(err)) await sayGoodbye(stream, err, clock);
        throw err;
      }
      if (waited.kind === 'timeout') {
        core.handleTimeout(clock());
        continue;
      }
      if (waited.value === null) {
        throw new ClawpeerError(
          'CONNECTION_CLOSED',
          `peer closed the control stream during the handshake (phase ${core.phase})`,
        );
      }
      if (takeFirst !== undefined && (await takenFirst(waited.value, takeFirst))) return null;
      takeFirst = undefined;
      core.handleFrame(waited.value, clock());
    }
  } catch (err) {
    if (err instanceof ClawpeerError && err.code === 'ABORTED') stream.reset();
    throw err;
  }
}

async function takenFirst(frame: Frame, takeFirst: TakeFirst): Promise<boolean> {
  if (frame.type !== 'control') return false;
  let message: ControlMessage;
  try {
    message = decodeControl(frame.body, { maxBytes: HANDSHAKE_MAX_FRAME_BYTES });
  } catch {
    return false; // the handshake core refuses it, with its own error
  }
  return message.type !== 'hello' && message.type !== 'error' && (await takeFirst(message));
}

function coreConfig(options: ControlHandshakeOptions, clock: () => number): HandshakeConfig {
  return {
    identity: options.identity,
    expectedRemoteKey: options.expectedRemoteKey,
    caps: options.caps ?? DEFAULT_CAPABILITIES,
    ...(options.versions === undefined ? {} : { versions: options.versions }),
    now: clock(),
    timeoutMs: options.timeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS,
  };
}

/** Runs the client side on the first bidi stream (which the client opened). */
export async function clientHandshake(
  stream: DuplexStream,
  options: ControlHandshakeOptions,
): Promise<ControlHandshakeResult> {
  const clock = options.clock ?? (() => performance.now());
  return (await runHandshake(
    stream,
    Handshake.client(coreConfig(options, clock)),
    options,
    clock,
  )) as ControlHandshakeResult;
}

/** Runs the server side on the first bidi stream the client opened. */
export async function serverHandshake(
  stream: DuplexStream,
  options: ControlHandshakeOptions,
): Promise<ControlHandshakeResult> {
  return (await serverHandshakeOrTake(stream, options)) as ControlHandshakeResult;
}

/**
 * serverHandshake, except that a first message other than Hello (a paired joiner retrying its
 * PairRequest) is offered to `takeFirst`; resolves null when that took it, and the caller is
 * done with the stream.
 */
export function serverHandshakeOrTake(
  stream: DuplexStream,
  options: ControlHandshakeOptions,
  takeFirst?: TakeFirst,
): Promise<ControlHandshakeResult | null> {
  const clock = options.clock ?? (() => performance.now());
  return runHandshake(stream, Handshake.server(coreConfig(options, clock)), options, clock, takeFirst);
}

/**
 * One control message read from a stream on which no handshake runs (pairing by invite): the
 * next CONTROL frame, decoded with the handshake's size limit; null at a clean FIN. A peer's
 * Error rejects as its ClawpeerError; anything else malformed as PROTOCOL; no frame within
 * `timeoutMs` as TIMEOUT.
 */
export async function readLoneMessage(
  stream: DuplexStream,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<ControlMessage | null> {
  const clock = (): number => performance.now();
  const waited = await new FrameReader(stream, HANDSHAKE_MAX_FRAME_BYTES).next(clock() + timeoutMs, clock, signal);
  if (waited.kind === 'timeout') throw new ClawpeerError('TIMEOUT', `no message within ${timeoutMs} ms`);
  const frame = waited.value;
  if (frame === null) return null;
  if (frame.type !== 'control')
    throw new ClawpeerError('PROTOCOL', `unexpected ${frame.type} frame on the control stream`);
  const message = decodeControl(frame.body, { maxBytes: HANDSHAKE_MAX_FRAME_BYTES });
  if (message.type === 'error') throw errorFromWire(message.code, message.message);
  return message;
}
