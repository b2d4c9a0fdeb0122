// BLAKE3 content ids: one small API over two interchangeable backends.
//
// Goals: hash(bytes) -> 32-byte digest and an incremental hasher for inputs too big to hold,
// identical output from either backend, and a way to tell which backend is active (bench, logs).
// Backends, in order of preference:
//   native  `@napi-rs/blake-hash` (prebuilt N-API; ~1.4 GiB/s at 4 KiB, 4-6 GiB/s at >= 64 KiB)
//   wasm    `blake3-wasm` 2.1.5 (portable, ~700 MiB/s), used when the native addon cannot load
//           (no prebuilt binary for this platform/libc). We call its wasm-bindgen module directly:
//           the package's own `createHash()` wraps every hasher in a stream.Transform.
// Non-goals: keyed hashing, key derivation and extended (XOF) output; nothing here needs them.
// Sans-I/O apart from loading the backends once at import.

import { createRequire } from 'node:module';
import { ClawpeerError } from '../errors.js';

/** Digest length in bytes (BLAKE3's default output, 256 bits). */
export const BLAKE3_OUT_BYTES = 32;

export type Blake3Backend = 'native' | 'wasm';

/** Incremental hasher. Single use: `digest()` ends it (and frees wasm memory). */
export interface Blake3Hasher {
  update(bytes: Uint8Array): this;
  digest(): Uint8Array;
}

export interface Blake3Implementation {
  readonly backend: Blake3Backend;
  /** BLAKE3 of `bytes`, 32 bytes. */
  hash(bytes: Uint8Array): Uint8Array;
  createHasher(): Blake3Hasher;
}

// --- native backend -----------------------------------------------------------------------------

interface NativeBlake3Hasher {
  update(input: Uint8Array): unknown;
  digestBuffer(): Uint8Array;
}
interface NativeModule {
  blake3(input: Uint8Array): Uint8Array;
  Blake3Hasher: new () => NativeBlake3Hasher;
}

class NativeHasher implements Blake3Hasher {
  #inner: NativeBlake3Hasher | undefined;
  constructor(inner: NativeBlake3Hasher) {
    this.#inner = inner;
  }
  update(bytes: Uint8Array): this {
    if (this.#inner === undefined) throw new TypeError('BLAKE3 hasher used after digest()');
    this.#inner.update(bytes);
    return this;
  }
  digest(): Uint8Array {
    if (this.#inner === undefined) throw new TypeError('BLAKE3 hasher digested twice');
    const out = this.#inner.digestBuffer();
    this.#inner = undefined;
    return out;
  }
}

function nativeImplementation(mod: NativeModule): Blake3Implementation {
  return {
    backend: 'native',
    hash: (bytes) => mod.blake3(bytes),
    createHasher: () => new NativeHasher(new mod.Blake3Hasher()),
  };
}

// --- wasm backend -------------------------------------------------------------------------------

interface WasmBlake3Hash {
  update(input: Uint8Array): void;
  digest(out: Uint8Array): void;
  free(): void;
}
interface WasmModule {
  hash(data: Uint8Array, out: Uint8Array): void;
  create_hasher(): WasmBlake3Hash;
}

// A hasher dropped without digest() would leak its wasm-heap state; free it when collected.
const wasmFinalizer = new FinalizationRegistry<WasmBlake3Hash>((state) => state.free());

class WasmHasher implements Blake3Hasher {
  #state: WasmBlake3Hash | undefined;
  constructor(state: WasmBlake3Hash) {
    this.#state = state;
    wasmFinalizer.register(this, state, this);
  }
  update(bytes: Uint8Array): this {
    if (this.#state === undefined) throw new TypeError('BLAKE3 hasher used after digest()');
    this.#state.update(bytes);
    return this;
  }
  digest(): Uint8Array {
    const state = this.#state;
    if (state === undefined) throw new TypeError('BLAKE3 hasher digested twice');
    const out = new Uint8Array(BLAKE3_OUT_BYTES);
    state.digest(out);
    this.#state = undefined;
    wasmFinalizer.unregister(this);
    state.free();
    return out;
  }
}

function wasmImplementation(mod: WasmModule): Blake3Implementation {
  return {
    backend: 'wasm',
    hash: (bytes) => {
      const out = new Uint8Array(BLAKE3_OUT_BYTES);
      mod.hash(bytes, out);
      return out;
    },
    createHasher: () => new WasmHasher(mod.create_hasher()),
  };
}

// --- loading ------------------------------------------------------------------------------------

const requireCjs = createRequire(import.meta.url);
const loaded = new Map<Blake3Backend, Blake3Implementation | null>();
const loadErrors = new Map<Blake3Backend, unknown>();

function load(backend: Blake3Backend): Blake3Implementation | null {
  try {
    if (backend === 'native') {
      const mod = requireCjs('@napi-rs/blake-hash') as NativeModule;
      const impl = nativeImplementation(mod);
      impl.hash(new Uint8Array(0)); // a broken binary fails here, not on first real use
      return impl;
    }
    const mod = requireCjs('blake3-wasm/dist/wasm/nodejs/blake3_js') as WasmModule;
    return wasmImplementation(mod);
  } catch (err) {
    loadErrors.set(backend, err);
    return null;
  }
}

/**
 * The implementation for one backend, or undefined when it cannot load on this machine.
 * Loaded once and cached. Tests and benchmarks use this to compare backends.
 */
export function blake3Implementation(backend: Blake3Backend): Blake3Implementation | undefined {
  let impl = loaded.get(backend);
  if (impl === undefined) {
    impl = load(backend);
    loaded.set(backend, impl);
  }
  return impl ?? undefined;
}

function selectDefault(): Blake3Implementation {
  const impl = blake3Implementation('native') ?? blake3Implementation('wasm');
  if (impl === undefined) {
    throw new ClawpeerError('INTERNAL', 'no BLAKE3 backend loads: neither @napi-rs/blake-hash nor blake3-wasm', {
      cause: loadErrors.get('wasm') ?? loadErrors.get('native'),
    });
  }
  return impl;
}

let active: Blake3Implementation = selectDefault();

/** Which backend `blake3()` and `createBlake3Hasher()` use. */
export function activeBlake3Backend(): Blake3Backend {
  return active.backend;
}

/**
 * Switch the process-wide backend (e.g. a config or test forcing 'wasm'). Both backends give
 * identical digests, so this changes speed only. Throws if that backend cannot load here.
 */
export function useBlake3Backend(backend: Blake3Backend): void {
  const impl = blake3Implementation(backend);
  if (impl === undefined) {
    throw new ClawpeerError('CONFIG_INVALID', `BLAKE3 backend '${backend}' cannot load on this machine`, {
      cause: loadErrors.get(backend),
    });
  }
  active = impl;
}

/**
 * Inputs up to this size go to the wasm backend even when the native one is active: a call into
 * the native addon costs ~2.4 µs whatever the size, and measured here wasm is faster below
 * ~1 KiB (32 B: 2.4 µs native, 1.0 µs wasm; 1 KiB: even; 4 KiB: 4.0 vs 13.8 µs). Path keys,
 * revision ids and Merkle nodes are this small, ~10,000 of each in a sync of 10,000 files.
 */
export const SMALL_INPUT_MAX_BYTES = 512;
let smallInputs: Blake3Implementation | null | undefined; // loaded at the first small input

/** BLAKE3-256 of `bytes` with the active backend (small inputs: see SMALL_INPUT_MAX_BYTES). */
export function blake3(bytes: Uint8Array): Uint8Array {
  if (bytes.length <= SMALL_INPUT_MAX_BYTES && active.backend === 'native') {
    smallInputs ??= blake3Implementation('wasm') ?? null;
    if (smallInputs !== null) return smallInputs.hash(bytes);
  }
  return active.hash(bytes);
}

/** A new incremental BLAKE3 hasher on the active backend. */
export function createBlake3Hasher(): Blake3Hasher {
  return active.createHasher();
}

// --- hex ----------------------------------------------------------------------------------------

const HEX_DIGITS = '0123456789abcdef';

/** Lower-case hex of `bytes`. */
export function toHex(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    s += HEX_DIGITS[b >>> 4]! + HEX_DIGITS[b & 15]!;
  }
  return s;
}

/**
 * Parses hex (either case). `expectedBytes` rejects a wrong length, e.g. BLAKE3_OUT_BYTES for
 * a content id typed by a user. Throws ClawpeerError USAGE naming what was wrong.
 */
export function fromHex(hex: string, expectedBytes?: number): Uint8Array {
  if (hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) {
    throw new ClawpeerError('USAGE', `not a hex string: '${hex.length > 80 ? hex.slice(0, 80) + '…' : hex}'`);
  }
  const n = hex.length / 2;
  if (expectedBytes !== undefined && n !== expectedBytes) {
    throw new ClawpeerError('USAGE', `hex string has ${n} bytes, expected ${expectedBytes}`);
  }
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

/** Byte-wise equality of two digests (not constant-time: content ids are not secrets). */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
