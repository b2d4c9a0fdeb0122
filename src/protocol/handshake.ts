// The Hello / Welcome / Finished handshake as a sans-I/O state machine, for both roles.
//
// Goals: agree on a protocol version and the session's capabilities, derive per-direction
// session keys from ephemeral X25519 keys, and bind all of it to the Ed25519 identities the
// transport proved, with signatures over a domain-separated transcript of the exact bytes sent.
// Non-goals: I/O and timers (session/control-channel.ts drives this core: it feeds frames and
// `now`, writes what pollTransmit() returns and re-arms one timer at pollTimeout()); pinning
// against the paired set (the node layer does that before the handshake starts).
//
//   client                                              server
//   Hello{versions, key_c, caps_c, eph_c, nonce_c,
//         sig_c = Sign_c(CTX_HELLO || Hello-without-sig)}   ->
//                                                       <-  Welcome{version, key_s, effective caps,
//                                                             eph_s, nonce_s, sig_s =
//                                                             Sign_s(CTX_WELCOME || TH(Hello, Welcome-without-sig))}
//   Finished{Sign_c(CTX_FINISHED || TH(Hello, Welcome))}   ->
//   keys = HKDF(X25519(eph_c, eph_s), salt = TH(Hello, Welcome), "clawpeer v1 c2s" / "... s2c")
//
// TH(a, b) = SHA-256("clawpeer v1 transcript\0" || u32be(len a) || a || u32be(len b) || b), over
// the Hello and Welcome message bytes exactly as on the wire; "-without-sig" means those bytes
// with the signature field removed (messages.ts stripField), so unknown fields stay signed.
//
// Why Finished: the Hello signature covers only the client's own values and can be replayed; the
// client's signature over the whole transcript (which holds the server's fresh nonce and
// ephemeral key) proves the client's identity key is live in THIS session and that it accepted
// the Welcome. It costs the client no round trip (its first request follows in the same flight);
// the server acts on nothing before Finished verifies.
import { createHash, randomBytes } from 'node:crypto';
import { ClawpeerError, errorFromWire, wireCodeFor } from '../errors.js';
import { signMessage, verifySignature, type Identity } from '../crypto/identity.js';
import { nodeIdFromPublicKey } from '../crypto/node-id.js';
import {
  deriveDirectionKeys,
  generateEphemeralKeyPair,
  sessionKeysFor,
  x25519SharedSecret,
  type EphemeralKeyPair,
  type HandshakeRole,
  type SessionKeys,
} from '../crypto/session-keys.js';
import {
  acceptSessionCapabilities,
  describeVersions,
  intersectCapabilities,
  negotiateVersion,
  sessionToCapabilities,
  SUPPORTED_VERSIONS,
  validateCapabilities,
  type Capabilities,
  type SessionCapabilities,
  type VersionRange,
} from './capabilities.js';
import { encodeFrame, type Frame } from './frame-codec.js';
import {
  decodeControlWithRaw,
  encodeControlFrame,
  encodeControlFromRaw,
  encodeHelloBody,
  encodeWelcomeBody,
  HANDSHAKE_NONCE_BYTES,
  HELLO_SIGNATURE_FIELD,
  stripField,
  WELCOME_SIGNATURE_FIELD,
  type ControlMessage,
  type HelloMessage,
  type WelcomeMessage,
} from './messages.js';

/** Handshake messages are a few hundred bytes; 64 KiB leaves room for growth and no more. */
export const HANDSHAKE_MAX_FRAME_BYTES = 64 << 10;
export const DEFAULT_HANDSHAKE_TIMEOUT_MS = 10_000;

const encoder = new TextEncoder();
const CTX_TRANSCRIPT = encoder.encode('clawpeer v1 transcript\0');
const CTX_HELLO = encoder.encode('clawpeer v1 hello signature\0');
const CTX_WELCOME = encoder.encode('clawpeer v1 welcome signature\0');
const CTX_FINISHED = encoder.encode('clawpeer v1 finished signature\0');

/** TH over message bytes, each length-prefixed so no two transcripts concatenate alike. */
export function transcriptHash(parts: readonly Uint8Array[]): Uint8Array {
  const hash = createHash('sha256').update(CTX_TRANSCRIPT);
  const length = new Uint8Array(4);
  for (const part of parts) {
    new DataView(length.buffer).setUint32(0, part.length);
    hash.update(length).update(part);
  }
  return new Uint8Array(hash.digest());
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function describeKey(key: Uint8Array): string {
  return key.length === 32 ? nodeIdFromPublicKey(key) : `<${key.length}-byte key>`;
}

export interface HandshakeConfig {
  readonly identity: Identity;
  /** The peer's Ed25519 key as the transport proved it; Hello/Welcome must carry the same. */
  readonly expectedRemoteKey: Uint8Array;
  /** Our capabilities (validated here). */
  readonly caps: Capabilities;
  readonly versions?: VersionRange;
  /** The caller's clock, in milliseconds, at the start. */
  readonly now: number;
  readonly timeoutMs?: number;
  /** Fixed ephemeral key and nonce: only for reproducible tests. */
  readonly ephemeral?: EphemeralKeyPair;
  readonly nonce?: Uint8Array;
}

export interface HandshakeResult {
  readonly role: HandshakeRole;
  readonly version: number;
  readonly caps: SessionCapabilities;
  readonly remotePublicKey: Uint8Array;
  readonly keys: SessionKeys;
  /** TH(Hello, Welcome): identical on both sides, usable as a session id / channel binding. */
  readonly transcriptHash: Uint8Array;
}

export type HandshakePhase =
  | { readonly name: 'await-hello' }
  | { readonly name: 'await-welcome'; readonly helloRaw: Uint8Array }
  | { readonly name: 'await-finished'; readonly transcript: Uint8Array; readonly pending: HandshakeResult }
  | { readonly name: 'done'; readonly result: HandshakeResult }
  | { readonly name: 'failed'; readonly error: ClawpeerError };

const WAITING_FOR = { 'await-hello': 'Hello', 'await-welcome': 'Welcome', 'await-finished': 'Finished' } as const;

export class Handshake {
  readonly role: HandshakeRole;
  readonly deadline: number;
  readonly #config: HandshakeConfig;
  readonly #versions: VersionRange;
  readonly #ephemeral: EphemeralKeyPair;
  readonly #nonce: Uint8Array;
  #phase: HandshakePhase;
  #transmit: Uint8Array[] = [];

  /** Starts a client handshake: the Hello is queued for pollTransmit() at once. */
  static client(config: HandshakeConfig): Handshake {
    return new Handshake('client', config);
  }

  /** Starts a server handshake: waits for the Hello. */
  static server(config: HandshakeConfig): Handshake {
    return new Handshake('server', config);
  }

  private constructor(role: HandshakeRole, config: HandshakeConfig) {
    try {
      validateCapabilities(config.caps, 'local');
    } catch (cause) {
      // Our own settings, not the peer's fault.
      throw new ClawpeerError('CONFIG_INVALID', (cause as Error).message, { cause });
    }
    const timeoutMs = config.timeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS;
    if (!(timeoutMs > 0)) throw new RangeError(`timeoutMs must be positive, got ${timeoutMs}`);
    if (config.nonce !== undefined && config.nonce.length !== HANDSHAKE_NONCE_BYTES) {
      throw new RangeError(`nonce must be ${HANDSHAKE_NONCE_BYTES} bytes`);
    }
    this.role = role;
    this.deadline = config.now + timeoutMs;
    this.#config = config;
    this.#versions = config.versions ?? SUPPORTED_VERSIONS;
    this.#ephemeral = config.ephemeral ?? generateEphemeralKeyPair();
    this.#nonce = config.nonce ?? new Uint8Array(randomBytes(HANDSHAKE_NONCE_BYTES));
    if (role === 'client') {
      const helloRaw = this.#signedHello();
      this.#transmit.push(encodeFrame('control', encodeControlFromRaw('hello', helloRaw)));
      this.#phase = { name: 'await-welcome', helloRaw };
    } else {
      this.#phase = { name: 'await-hello' };
    }
  }

  get phase(): HandshakePhase['name'] {
    return this.#phase.name;
  }

  /** The outcome once phase is 'done'. */
  get result(): HandshakeResult | undefined {
    return this.#phase.name === 'done' ? this.#phase.result : undefined;
  }

  /** Why the handshake failed, once phase is 'failed'. */
  get error(): ClawpeerError | undefined {
    return this.#phase.name === 'failed' ? this.#phase.error : undefined;
  }

  /** The next frame to write (whole frame bytes), or null. Drain it after every call in. */
  pollTransmit(): Uint8Array | null {
    return this.#transmit.shift() ?? null;
  }

  /** When handleTimeout() must be called (caller's clock, ms), or null once finished. */
  pollTimeout(): number | null {
    return this.#phase.name === 'done' || this.#phase.name === 'failed' ? null : this.deadline;
  }

  handleTimeout(now: number): void {
    const phase = this.#phase;
    if (phase.name === 'done' || phase.name === 'failed' || now < this.deadline) return;
    const timeoutMs = Math.round(this.deadline - this.#config.now); // clock readings are floats (performance.now)
    this.#fail(
      new ClawpeerError('TIMEOUT', `handshake timed out after ${timeoutMs} ms waiting for ${WAITING_FOR[phase.name]}`),
      true,
    );
  }

  /** Feeds one frame received on the handshake stream. */
  handleFrame(frame: Frame, now: number): void {
    if (this.#phase.name === 'failed') return;
    if (this.#phase.name === 'done') throw new TypeError('handshake is done: frames belong to the control channel now');
    this.handleTimeout(now);
    if (this.pollTimeout() === null) return; // the deadline passed before this frame arrived
    try {
      if (frame.type !== 'control')
        throw new ClawpeerError('PROTOCOL', `expected a CONTROL frame during the handshake, got ${frame.type}`);
      const { message, raw } = decodeControlWithRaw(frame.body, { maxBytes: HANDSHAKE_MAX_FRAME_BYTES });
      if (message.type === 'error') {
        this.#fail(this.#peerError(message.code, message.message), false);
        return;
      }
      this.#handleMessage(message, raw);
    } catch (err) {
      if (!(err instanceof ClawpeerError)) throw err;
      this.#fail(err, true);
    }
  }

  #handleMessage(message: ControlMessage, raw: Uint8Array): void {
    const phase = this.#phase;
    switch (phase.name) {
      case 'await-hello':
        if (message.type !== 'hello') throw unexpected('Hello', message);
        this.#onHello(message, raw);
        return;
      case 'await-welcome':
        if (message.type !== 'welcome') throw unexpected('Welcome', message);
        this.#onWelcome(phase.helloRaw, message, raw);
        return;
      case 'await-finished':
        if (message.type !== 'finished') throw unexpected('Finished', message);
        if (
          !verifySignature(phase.pending.remotePublicKey, concat(CTX_FINISHED, phase.transcript), message.signature)
        ) {
          throw new ClawpeerError(
            'AUTH_FAILED',
            `Finished signature of ${describeKey(phase.pending.remotePublicKey)} does not verify`,
          );
        }
        this.#phase = { name: 'done', result: phase.pending };
        return;
      case 'done':
      case 'failed':
        return;
      default: {
        const unreachable: never = phase;
        throw new TypeError(`unhandled phase ${JSON.stringify(unreachable)}`);
      }
    }
  }

  #checkRemoteKey(what: string, key: Uint8Array): void {
    if (!equalBytes(key, this.#config.expectedRemoteKey)) {
      throw new ClawpeerError(
        'AUTH_FAILED',
        `${what} names node ${describeKey(key)} but the transport authenticated ${describeKey(this.#config.expectedRemoteKey)}`,
      );
    }
  }

  #signedHello(): Uint8Array {
    const unsigned = {
      minVersion: this.#versions.min,
      maxVersion: this.#versions.max,
      nodePublicKey: this.#config.identity.publicKey,
      caps: this.#config.caps,
      ephemeralPublicKey: this.#ephemeral.publicKey,
      nonce: this.#nonce,
      signature: new Uint8Array(0),
    };
    const signature = signMessage(this.#config.identity, concat(CTX_HELLO, encodeHelloBody(unsigned)));
    return encodeHelloBody({ ...unsigned, signature });
  }

  #onHello(hello: HelloMessage, helloRaw: Uint8Array): void {
    // Version first: it is the one part of the Hello every future version keeps readable.
    const version = negotiateVersion(this.#versions, { min: hello.minVersion, max: hello.maxVersion });
    this.#checkRemoteKey('Hello', hello.nodePublicKey);
    if (
      !verifySignature(
        hello.nodePublicKey,
        concat(CTX_HELLO, stripField(helloRaw, HELLO_SIGNATURE_FIELD)),
        hello.signature,
      )
    ) {
      throw new ClawpeerError('AUTH_FAILED', `Hello signature of ${describeKey(hello.nodePublicKey)} does not verify`);
    }
    validateCapabilities(hello.caps, 'peer');
    const caps = intersectCapabilities(hello.caps, this.#config.caps);
    const shared = x25519SharedSecret(this.#ephemeral, hello.ephemeralPublicKey);

    const unsigned = {
      version,
      nodePublicKey: this.#config.identity.publicKey,
      caps: sessionToCapabilities(caps),
      ephemeralPublicKey: this.#ephemeral.publicKey,
      nonce: this.#nonce,
      signature: new Uint8Array(0),
    };
    const signedHash = transcriptHash([helloRaw, encodeWelcomeBody(unsigned)]);
    const signature = signMessage(this.#config.identity, concat(CTX_WELCOME, signedHash));
    const welcomeRaw = encodeWelcomeBody({ ...unsigned, signature });
    const transcript = transcriptHash([helloRaw, welcomeRaw]);
    this.#transmit.push(encodeFrame('control', encodeControlFromRaw('welcome', welcomeRaw)));
    this.#phase = {
      name: 'await-finished',
      transcript,
      pending: {
        role: 'server',
        version,
        caps,
        remotePublicKey: new Uint8Array(hello.nodePublicKey),
        keys: sessionKeysFor('server', caps.aeadSuite, deriveDirectionKeys(shared, transcript)),
        transcriptHash: transcript,
      },
    };
  }

  #onWelcome(helloRaw: Uint8Array, welcome: WelcomeMessage, welcomeRaw: Uint8Array): void {
    if (welcome.version < this.#versions.min || welcome.version > this.#versions.max) {
      throw new ClawpeerError(
        'VERSION_MISMATCH',
        `server chose protocol ${welcome.version}, we speak ${describeVersions(this.#versions)}`,
      );
    }
    this.#checkRemoteKey('Welcome', welcome.nodePublicKey);
    const signedHash = transcriptHash([helloRaw, stripField(welcomeRaw, WELCOME_SIGNATURE_FIELD)]);
    if (!verifySignature(welcome.nodePublicKey, concat(CTX_WELCOME, signedHash), welcome.signature)) {
      throw new ClawpeerError(
        'AUTH_FAILED',
        `Welcome signature of ${describeKey(welcome.nodePublicKey)} does not verify`,
      );
    }
    const caps = acceptSessionCapabilities(this.#config.caps, welcome.caps);
    const shared = x25519SharedSecret(this.#ephemeral, welcome.ephemeralPublicKey);
    const transcript = transcriptHash([helloRaw, welcomeRaw]);
    const signature = signMessage(this.#config.identity, concat(CTX_FINISHED, transcript));
    this.#transmit.push(encodeControlFrame({ type: 'finished', signature }));
    this.#phase = {
      name: 'done',
      result: {
        role: 'client',
        version: welcome.version,
        caps,
        remotePublicKey: new Uint8Array(welcome.nodePublicKey),
        keys: sessionKeysFor('client', caps.aeadSuite, deriveDirectionKeys(shared, transcript)),
        transcriptHash: transcript,
      },
    };
  }

  #peerError(code: number, text: string): ClawpeerError {
    const err = errorFromWire(code, text);
    if (err.code === 'VERSION_MISMATCH' && this.role === 'client') {
      return new ClawpeerError(
        'VERSION_MISMATCH',
        `server speaks none of our protocol versions ${describeVersions(this.#versions)}; it says: ${text}`,
        { cause: err, wire: 'VERSION_MISMATCH' },
      );
    }
    return err;
  }

  /** Enters 'failed'; with `tell`, queues an Error message so the peer learns why. */
  #fail(error: ClawpeerError, tell: boolean): void {
    if (tell) {
      this.#transmit.push(encodeControlFrame({ type: 'error', code: wireCodeFor(error).code, message: error.message }));
    }
    this.#phase = { name: 'failed', error };
  }
}

function unexpected(wanted: string, got: ControlMessage): ClawpeerError {
  return new ClawpeerError('PROTOCOL', `expected ${wanted} during the handshake, got ${got.type}`);
}
