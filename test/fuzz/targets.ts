// Fuzz targets for every decoder a peer can reach, shared by the CI-depth suite (test/fuzz/)
// and the deep suite (test/slow/fuzz/), with their iteration counts.
//
// Each target generates one input from a seeded PRNG (usually a valid encoding, then mutated:
// bit flips, truncation, duplicated or unknown fields, oversized varints, huge length fields)
// and checks properties that must hold for ANY input:
//   - the only exception is a ClawpeerError with an expected code (PROTOCOL, FRAME_TOO_LARGE,
//     PATH_INVALID, ...): a TypeError/RangeError is a crash of the listener;
//   - decoding terminates within a bounded number of steps and buffers at most the limit;
//   - what decodes re-encodes to bytes that decode to the same value (round-trip stability),
//     and for canonical formats to the very bytes that came in;
//   - split invariance: a stream cut into random pushes decodes exactly as one push does.
// Non-goals: throughput or timing (no assertions on time), coverage guidance.
import path from 'node:path';
import { ClawpeerError } from '../../src/errors.js';
import { identityFromSeed, signMessage, type Identity } from '../../src/crypto/identity.js';
import { ephemeralKeyPairFromPrivate } from '../../src/crypto/session-keys.js';
import { decodeAckBody, encodeAckFrame, ACK_BODY_BYTES } from '../../src/protocol/ack-codec.js';
import {
  AEAD_SUITES,
  COMPRESSION_CODECS,
  DEFAULT_CAPABILITIES,
  FEATURES,
  MAX_CAPABILITY_LIST_ENTRIES,
  validateCapabilities,
  type Capabilities,
} from '../../src/protocol/capabilities.js';
import {
  DATA_HEADER_BYTES,
  encodeDataFrame,
  encodeFrame,
  FRAME_HEADER_BYTES,
  FrameDecoder,
  type Frame,
} from '../../src/protocol/frame-codec.js';
import { Handshake, transcriptHash } from '../../src/protocol/handshake.js';
import { readZstdFrame, ZSTD_MAX_BLOCK_BYTES, ZstdFrameError } from '../../src/transfer/zstd-frame.js';
import {
  decodeControl,
  decodeControlWithRaw,
  encodeControl,
  encodeControlFromRaw,
  encodeHelloBody,
  encodeWelcomeBody,
  sanitizeErrorText,
  stripField,
  HELLO_SIGNATURE_FIELD,
  WELCOME_SIGNATURE_FIELD,
  type ControlMessage,
  type ControlMessageType,
  type ManifestEntry,
} from '../../src/protocol/messages.js';
import {
  decodeReconcileMessage,
  encodeReconcileMessage,
  MAX_RECONCILE_MESSAGE_BYTES,
  type ReconcileMessage,
} from '../../src/sync/reconcile-codec.js';
import { allocateSymbols } from '../../src/sync/riblt.js';
import { decodeRevision, encodeRevision, type Revision, type RevisionKind } from '../../src/sync/revision.js';
import { decodeVector, encodeVector, vectorFrom, type VersionVector } from '../../src/sync/version-vector.js';
import { UNSAFE_TEXTS } from '../../src/format.js';
import { normalizeSharePath } from '../../src/transfer/paths.js';
import {
  encodeFrame as encodeMuxFrame,
  FRAME_HEADER_BYTES as MUX_HEADER_BYTES,
  FrameDecoder as MuxFrameDecoder,
  FrameType as MuxType,
  MAX_GOAWAY_REASON_BYTES,
  type MuxFrame,
} from '../../src/transport/mux-codec.js';
import {
  concatBytes,
  FuzzViolation,
  hex,
  mutate,
  mutatePb,
  pbLenField,
  piecesOf,
  randomSplits,
  readPbVarint,
  unhex,
  type FuzzTarget,
  type JsonValue,
  type Rng,
} from './fuzz-kit.js';

/**
 * Iterations per target. CI: 10,000 each, except the handshake (every iteration signs and
 * verifies Ed25519 and runs X25519: ~0.3 ms) at 3,000, so the whole test/fuzz folder stays under
 * ~60 s on a loaded 2-core machine (measured figures in the report of each run's TAP comments).
 * Deep: 1,000,000 each, time-boxed per target (DEEP_TIME_BUDGET_MS); the log states the count reached.
 */
export const CI_ITERATIONS: Readonly<Record<TargetName, number>> = {
  'frame-decoder': 10_000,
  'control-messages': 10_000,
  'control-text': 10_000,
  'ack-body': 10_000,
  'mux-decoder': 10_000,
  'reconcile-codec': 10_000,
  revision: 10_000,
  'version-vector': 10_000,
  'share-path': 10_000,
  handshake: 3_000,
  'zstd-frame': 10_000,
};
export const DEEP_ITERATIONS = 1_000_000;
/** Per-target time box of the deep suite (ms): 11 targets x 60 s keeps it near 11 minutes. */
export const DEEP_TIME_BUDGET_MS = 60_000;
/** Base seed of the CI runs: fixed, so CI is deterministic; the deep suite picks a fresh one. */
export const CI_SEED = 0x00c1a3;

// ---------------------------------------------------------------------------------------------
// Shared checks

/** Passes an expected ClawpeerError; anything else is the bug we look for. */
function expectError(err: unknown, codes: readonly string[], where: string): void {
  if (err instanceof ClawpeerError && codes.includes(err.code)) return;
  if (err instanceof FuzzViolation) throw err;
  const what =
    err instanceof Error
      ? `${err.name}${err instanceof ClawpeerError ? ` ${err.code}` : ''}: ${err.message}`
      : String(err);
  throw new FuzzViolation(`${where} threw ${what} (only ClawpeerError ${codes.join('/')} is allowed)`);
}

/** A stable text form for deep comparison: bytes as hex, maps as entry lists, bigints as text. */
export function canon(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v instanceof Uint8Array) return `hex:${hex(v)}`;
    if (typeof v === 'bigint') return `big:${v}`;
    if (v instanceof Map) return ['map', ...v];
    if (v instanceof Float64Array || v instanceof Uint32Array) return [...v];
    return v;
  });
}

function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(a, b) === 0;
}

function violation(message: string): never {
  throw new FuzzViolation(message);
}

function asObject(json: JsonValue): Record<string, JsonValue> {
  if (json === null || typeof json !== 'object' || Array.isArray(json))
    throw new TypeError('seed input: expected an object');
  return json;
}
function numberField(o: Record<string, JsonValue>, key: string): number {
  const v = o[key];
  if (typeof v !== 'number') throw new TypeError(`seed input: ${key} must be a number`);
  return v;
}
function stringField(o: Record<string, JsonValue>, key: string): string {
  const v = o[key];
  if (typeof v !== 'string') throw new TypeError(`seed input: ${key} must be a string`);
  return v;
}
function numberList(o: Record<string, JsonValue>, key: string): number[] {
  const v = o[key];
  if (!Array.isArray(v) || !v.every((x) => typeof x === 'number'))
    throw new TypeError(`seed input: ${key} must be numbers`);
  return v;
}

// ---------------------------------------------------------------------------------------------
// Adversarial text

/** Pieces of hostile paths: traversal spellings, look-alike dots and slashes, device names, bidi. */
export const PATH_PIECES: readonly string[] = [
  '..',
  '.',
  '...',
  '%2e%2e',
  '%2e',
  '%2f',
  '\u2024\u2024',
  '\uff0e\uff0e',
  '\u3002',
  '\u0000',
  '\\',
  '/',
  '//',
  'CON',
  'con.txt',
  'nul',
  'Nul.tar.gz',
  'COM1',
  'COM\u00b9',
  'LPT9.log',
  'aux ',
  'conin$',
  'CONOUT$.x',
  'C:',
  'c:x',
  'z:',
  ' ',
  '.hidden',
  'a.',
  'a ',
  'e\u0301',
  '\u00e9',
  '\u212b',
  '\u00c5',
  '\u202e',
  '\u200f',
  '\u2066',
  '\ufeff',
  '\ud800',
  '\udc00',
  '\ud83d\ude00',
  'x'.repeat(255),
  'x'.repeat(256),
  '\u00e9'.repeat(127),
  '\u00e9'.repeat(128),
  'e\u0301'.repeat(85),
  '\u0085',
  '\u007f',
  '\u001b[2J',
  '\u2028',
  '\uff3c',
  '\u2215',
  '\u2044',
  '\u0338',
  'a',
  'b',
  'dir',
  'file.txt',
  '~',
  '$HOME',
  '\t',
  '\r\n',
  '\u00a0',
  '\u3000',
  '*',
  '?',
  ':',
  '|',
];

/** A hostile path: segments built from PATH_PIECES and random code points, sometimes huge. */
export function hostilePath(rng: Rng): string {
  const segments: string[] = [];
  const count = rng.range(1, 6);
  for (let s = 0; s < count; s++) {
    let seg = '';
    const parts = rng.range(1, 3);
    for (let p = 0; p < parts; p++) seg += rng.bool(0.8) ? rng.pick(PATH_PIECES) : randomText(rng, 6);
    segments.push(seg);
  }
  let out = segments.join(rng.bool(0.9) ? '/' : rng.pick(['//', '\\', '/./']));
  if (rng.bool(0.05)) out = `/${out}`;
  if (rng.bool(0.05)) out = `${out}/`;
  if (rng.bool(0.03)) out = Array.from({ length: 20 }, () => 'y'.repeat(220)).join('/') + `/${out}`; // near 4096 bytes
  if (rng.bool(0.1)) out = out.normalize(rng.pick(['NFC', 'NFD', 'NFKC', 'NFKD'] as const));
  return out;
}

/** Random text of up to `maxChars` code points from ASCII, Latin, combining marks, astral, surrogates. */
export function randomText(rng: Rng, maxChars: number): string {
  let s = '';
  const n = rng.int(maxChars + 1);
  for (let i = 0; i < n; i++) {
    switch (rng.int(6)) {
      case 0:
      case 1:
        s += String.fromCharCode(rng.range(0x20, 0x7e));
        break;
      case 2:
        s += String.fromCharCode(rng.range(0x80, 0x2fff));
        break;
      case 3:
        s += String.fromCharCode(rng.range(0x300, 0x36f)); // combining marks
        break;
      case 4:
        s += String.fromCodePoint(rng.range(0x1_0000, 0x10_ffff));
        break;
      default:
        s += String.fromCharCode(rng.pick([0, 0x1b, 0x7f, 0xfeff, 0xfffd, 0xd800, 0xdfff, 0x202e, 0x2028]));
    }
  }
  return s;
}

// ---------------------------------------------------------------------------------------------
// 1. Frame decoder (src/protocol/frame-codec.ts)

interface StreamInput {
  readonly max: number;
  readonly bytes: Uint8Array;
  readonly cuts: readonly number[];
}

const streamToJson = (i: StreamInput): JsonValue => ({ max: i.max, hex: hex(i.bytes), cuts: [...i.cuts] });
const streamFromJson = (json: JsonValue): StreamInput => {
  const o = asObject(json);
  return { max: numberField(o, 'max'), bytes: unhex(o['hex'] ?? null), cuts: numberList(o, 'cuts') };
};

function randomProtocolFrame(rng: Rng, max: number): Uint8Array {
  switch (rng.int(3)) {
    case 0:
      return encodeFrame('control', rng.bytes(rng.size(Math.min(max, 300))));
    case 1:
      return encodeFrame('ack', rng.bytes(rng.bool(0.7) ? 12 : rng.size(Math.min(max, 40))));
    default: {
      const payload = rng.bytes(rng.size(Math.min(max - DATA_HEADER_BYTES, 300)));
      return encodeDataFrame(
        {
          streamId: rng.edgyUint(32),
          sequence: rng.edgyUint(53),
          chunkId: rng.bytes(32),
          compressed: rng.bool(),
          chunkBytes: rng.bool(0.9) ? rng.int(max + 1) : rng.edgyUint(32),
        },
        payload,
      );
    }
  }
}

type FrameEvent = string;

function frameEvent(frame: Frame): FrameEvent {
  return frame.type === 'data'
    ? `data:${hex(frame.headerBytes)}:${hex(frame.payload)}`
    : `${frame.type}:${hex(frame.body)}`;
}

function reencodeFrame(frame: Frame): Uint8Array {
  switch (frame.type) {
    case 'data':
      return encodeDataFrame(frame.header, frame.payload);
    case 'control':
    case 'ack':
      return encodeFrame(frame.type, frame.body);
    default: {
      const never: never = frame;
      throw new TypeError(`unknown frame ${String(never)}`);
    }
  }
}

/** Feeds `pieces` and drains after each; the event log, ending in the error code or 'need-more'. */
function runFrameDecoder(
  max: number,
  pieces: readonly Uint8Array[],
  checkBounds: boolean,
): { events: FrameEvent[]; reencoded: Uint8Array[]; end: string } {
  const decoder = new FrameDecoder({ maxFrameBytes: max });
  const events: FrameEvent[] = [];
  const reencoded: Uint8Array[] = [];
  const bound = FRAME_HEADER_BYTES + max - 1; // after a drain: at most one partial frame
  for (const piece of pieces) {
    decoder.push(piece);
    if (checkBounds && decoder.bufferedBytes > bound + piece.length) {
      violation(
        `frame decoder holds ${decoder.bufferedBytes} bytes after a push of ${piece.length}, more than ${bound} + that push`,
      );
    }
    // Every frame consumes >= 5 bytes, so a drain takes at most buffered / 5 + 1 calls.
    const maxCalls = Math.floor(decoder.bufferedBytes / FRAME_HEADER_BYTES) + 2;
    for (let calls = 0; ; calls++) {
      if (calls > maxCalls)
        violation(
          `frame decoder returned more than ${maxCalls} results for ${decoder.bufferedBytes} bytes (no progress)`,
        );
      let r;
      try {
        r = decoder.next();
      } catch (err) {
        expectError(err, ['PROTOCOL', 'FRAME_TOO_LARGE'], 'FrameDecoder.next');
        const code = (err as ClawpeerError).code;
        // A failed decoder stays failed with the same error.
        try {
          decoder.next();
          violation('FrameDecoder.next succeeded after an error');
        } catch (again) {
          if (again !== err) violation('FrameDecoder.next threw a different error after failing');
        }
        return { events, reencoded, end: code };
      }
      if (r.kind === 'need-more') break;
      events.push(frameEvent(r.frame));
      reencoded.push(reencodeFrame(r.frame));
    }
    if (checkBounds && decoder.bufferedBytes > bound)
      violation(`frame decoder holds ${decoder.bufferedBytes} bytes after draining, more than ${bound}`);
  }
  try {
    decoder.end();
  } catch (err) {
    expectError(err, ['PROTOCOL'], 'FrameDecoder.end');
    return { events, reencoded, end: 'ended-inside-frame' };
  }
  return { events, reencoded, end: 'need-more' };
}

export const frameDecoderTarget: FuzzTarget<StreamInput> = {
  name: 'frame-decoder',
  generate(rng) {
    const max = rng.pick([56, 57, 64, 100, 1000, 4096, 65_536]);
    const frames: Uint8Array[] = [];
    const count = rng.int(6);
    for (let i = 0; i < count; i++) frames.push(randomProtocolFrame(rng, max));
    let bytes = concatBytes(frames);
    const how = rng.int(10);
    if (how < 5) bytes = mutate(rng, bytes);
    else if (how < 7 && frames.length > 0) {
      // A hostile length field in one frame header: u32 max, the limit, the limit + 1.
      const at = frames.slice(0, rng.int(frames.length)).reduce((s, f) => s + f.length, 0);
      const len = rng.pick([0xffff_ffff, max, max + 1, 0x7fff_ffff, rng.u32()]);
      bytes = bytes.slice();
      new DataView(bytes.buffer).setUint32(at + 1, len);
    } else if (how === 7) bytes = rng.bytes(rng.size(200));
    return { max, bytes, cuts: randomSplits(rng, bytes.length) };
  },
  check({ max, bytes, cuts }) {
    const split = runFrameDecoder(max, piecesOf(bytes, cuts), true);
    const whole = runFrameDecoder(max, [bytes], true);
    if (canon(split.events) !== canon(whole.events) || split.end !== whole.end) {
      violation(
        `split decode differs from one-push decode: ${split.events.length} vs ${whole.events.length} frames, ${split.end} vs ${whole.end}`,
      );
    }
    // Canonical framing: the decoded frames re-encode to exactly the bytes they came from.
    const again = concatBytes(whole.reencoded);
    if (!bytesEqual(again, bytes.subarray(0, again.length)))
      violation('decoded frames do not re-encode to the input bytes');
  },
  toJson: streamToJson,
  fromJson: streamFromJson,
};

// ---------------------------------------------------------------------------------------------
// 2. Control messages (src/protocol/messages.ts)

const CONTROL_TYPES: readonly ControlMessageType[] = [
  'hello',
  'welcome',
  'finished',
  'error',
  'ping',
  'pong',
  'transfer-request',
  'transfer-accept',
  'manifest',
  'want',
  'data-open',
  'transfer-done',
  'sync-request',
  'sync-accept',
  'sync-reconcile',
  'sync-revisions',
  'sync-fetch',
  'sync-done',
];

function subset<T>(rng: Rng, items: readonly T[], min: number): T[] {
  const out = items.filter(() => rng.bool());
  while (out.length < min) out.push(rng.pick(items));
  // Duplicates, as a peer may send them; within the lists' limit, which the encoder enforces.
  return rng.bool(0.1) ? [...out, ...out].slice(0, MAX_CAPABILITY_LIST_ENTRIES) : out;
}

function randomCaps(rng: Rng): Capabilities {
  return {
    aeadSuites: subset(rng, AEAD_SUITES, rng.bool(0.9) ? 1 : 0),
    compression: subset(rng, COMPRESSION_CODECS, rng.bool(0.9) ? 1 : 0),
    chunking: Array.from({ length: rng.int(4) }, () =>
      rng.bool(0.5)
        ? { minBytes: 64 << 10, avgBytes: 256 << 10, maxBytes: 1 << 20 }
        : { minBytes: rng.edgyUint(32), avgBytes: rng.edgyUint(32), maxBytes: rng.edgyUint(32) },
    ),
    maxWindowChunks: rng.edgyUint(32),
    maxStreams: rng.edgyUint(32),
    maxFrameBytes: rng.bool(0.5) ? 16 << 20 : rng.edgyUint(32),
    features: subset(rng, FEATURES, 0),
  };
}

// Text in generated messages is well-formed: lone surrogates are the control-text target's job.
const wfText = (rng: Rng, maxChars: number): string => wellFormed(randomText(rng, maxChars));
const wfPath = (rng: Rng): string => wellFormed(hostilePath(rng));
// A path listed for the peer's user to read (TransferDone's lists, Manifest.unreadable): mostly
// without control or bidi characters, which the encoder refuses there (then the whole message
// is replaced), sometimes with them.
const shownPath = (rng: Rng, fallback: string): string =>
  (rng.bool(0.1) ? wfPath(rng) : wfPath(rng).replace(UNSAFE_TEXTS, '')) || fallback;

function randomEntry(rng: Rng): ManifestEntry {
  const kind = rng.pick(['file', 'dir', 'symlink'] as const);
  const base = {
    path: rng.bool(0.7) ? wfPath(rng) || 'a' : wfText(rng, 20) || 'b',
    mode: rng.int(0o10000),
    mtimeMs: (rng.bool() ? -1 : 1) * rng.edgyUint(53),
  };
  if (kind !== 'file') {
    return {
      ...base,
      kind,
      size: 0,
      linkTarget: kind === 'symlink' ? wfText(rng, 30) || 't' : '',
      root: new Uint8Array(0),
      chunkIds: new Uint8Array(0),
      chunkLengths: [],
    };
  }
  const n = rng.int(4);
  const chunkLengths = Array.from({ length: n }, () => rng.range(1, 0xffff_ffff));
  return {
    ...base,
    kind,
    size: chunkLengths.reduce((s, x) => s + x, 0),
    linkTarget: '',
    root: rng.bytes(32),
    chunkIds: rng.bytes(32 * n),
    chunkLengths,
  };
}

function randomControl(rng: Rng, type: ControlMessageType): ControlMessage {
  const u32 = (): number => rng.edgyUint(32);
  const u53 = (): number => rng.edgyUint(53);
  switch (type) {
    case 'hello':
      return {
        type,
        minVersion: u32(),
        maxVersion: u32(),
        nodePublicKey: rng.bytes(32),
        caps: randomCaps(rng),
        ephemeralPublicKey: rng.bytes(32),
        nonce: rng.bytes(32),
        signature: rng.bytes(64),
      };
    case 'welcome':
      return {
        type,
        version: u32(),
        nodePublicKey: rng.bytes(32),
        caps: randomCaps(rng),
        ephemeralPublicKey: rng.bytes(32),
        nonce: rng.bytes(32),
        signature: rng.bytes(64),
      };
    case 'finished':
      return { type, signature: rng.bytes(64) };
    case 'error':
      return { type, code: u32(), message: wfText(rng, rng.bool(0.05) ? 1100 : 40) };
    case 'ping':
      return { type, seq: u53(), sentTimeUs: u53() };
    case 'pong':
      return { type, seq: u53(), echoedTimeUs: u53() };
    case 'transfer-request': {
      const force = rng.bool();
      const patterns = (): string[] => Array.from({ length: rng.range(1, 4) }, () => wfText(rng, 10) || '*');
      // Exclude patterns or filter rules (never both), and an existing-files policy only without force.
      const rules = rng.int(3);
      return {
        type,
        transferId: u32(),
        direction: rng.pick(['push', 'pull'] as const),
        share: wfText(rng, 12),
        path: rng.bool() ? wfPath(rng) : '',
        force,
        streams: u32(),
        window: u32(),
        ...(rules === 1
          ? { exclude: patterns() }
          : rules === 2
            ? { filter: patterns().map((pattern) => ({ pattern, include: rng.bool() })) }
            : {}),
        ...(!force && rng.bool() ? { existing: rng.pick(['keep', 'update'] as const) } : {}),
        ...(rng.bool() ? { backup: { suffix: wfText(rng, 6), dir: rng.bool() ? wfPath(rng) : '' } } : {}),
        ...(rng.bool() ? { maxDelete: u53() } : {}),
        ...(rng.bool() ? { itemize: true } : {}),
      };
    }
    case 'transfer-accept':
      return { type, transferId: u32(), streams: u32(), window: u32() };
    case 'manifest': {
      const last = rng.bool();
      // A pull's last batch may name what its sender could not read (hostile paths and reasons).
      const unreadable =
        last && rng.bool()
          ? Array.from({ length: rng.range(1, 4) }, () => ({ path: shownPath(rng, 'u'), error: wfText(rng, 40) }))
          : [];
      return {
        type,
        transferId: u32(),
        entries: Array.from({ length: rng.int(4) }, () => randomEntry(rng)),
        last,
        ...(unreadable.length === 0 ? {} : { unreadable, unreadableCount: unreadable.length + rng.int(3) }),
      };
    }
    case 'want': {
      const uniqueChunks = rng.int(70);
      const lacking = rng.bytes(Math.ceil(uniqueChunks / 8));
      if (uniqueChunks % 8 !== 0) lacking[lacking.length - 1]! &= (1 << (uniqueChunks % 8)) - 1;
      // A dry run's bitmaps over the files and over the directories and symlinks (any non-empty length here).
      const dryRun = rng.bool() ? { publish: rng.bytes(rng.range(1, 4)), create: rng.bytes(rng.range(1, 4)) } : {};
      return { type, transferId: u32(), lacking, uniqueChunks, ...dryRun };
    }
    case 'data-open':
      return { type, transferId: u32(), streamId: u32() };
    case 'transfer-done':
      return {
        type,
        transferId: u32(),
        files: rng.range(4, 2 ** 40),
        bytes: u53(),
        chunksReceived: u53(),
        chunksSkipped: u53(),
        ...(rng.bool()
          ? {
              published: Array.from({ length: rng.int(4) }, () => ({
                path: shownPath(rng, 'p'),
                replaced: rng.bool(),
              })),
            }
          : {}),
        ...(rng.bool()
          ? {
              created: Array.from({ length: rng.int(4) }, () =>
                rng.bool()
                  ? { path: shownPath(rng, 'd'), kind: 'dir' as const }
                  : {
                      path: shownPath(rng, 'l'),
                      kind: 'symlink' as const,
                      // Free text, blanked (not refused) by the encoder: any character goes.
                      target: (rng.bool() ? wfPath(rng) : wfText(rng, 30)) || 't',
                      replaced: rng.bool(),
                    },
              ),
            }
          : {}),
        ...(rng.bool()
          ? {
              refused: Array.from({ length: rng.range(1, 4) }, () => ({
                path: shownPath(rng, 'r'),
                reason: rng.pick(['EACCES', 'EPERM', 'ENAMETOOLONG']),
              })),
              refusedCount: 3 + rng.int(3),
            }
          : {}),
        ...(rng.bool()
          ? {
              updated: Array.from({ length: rng.range(1, 4) }, () => ({
                path: shownPath(rng, 'u'),
                time: rng.bool(),
                perms: rng.bool(),
              })),
            }
          : {}),
        ...(rng.bool()
          ? {
              deleted: Array.from({ length: rng.range(1, 4) }, () => shownPath(rng, 'x')),
              deletedCount: 3 + rng.int(3),
            }
          : {}),
        ...(rng.bool() ? { filesKept: rng.range(1, 1000) } : {}),
        ...(rng.bool() ? { filesBackedUp: rng.range(1, 1000) } : {}),
        ...(rng.bool() ? { deletesOverLimit: rng.range(1, 1000) } : {}),
      };
    case 'sync-request':
      return {
        type,
        transferId: u32(),
        share: wfText(rng, 12),
        mode: rng.pick(['two-way', 'send-only', 'receive-only'] as const),
        reconcile: rng.bytes(rng.range(1, 80)),
      };
    case 'sync-accept':
      return { type, transferId: u32() };
    case 'sync-reconcile':
      return { type, transferId: u32(), payload: rng.bytes(rng.range(1, 80)) };
    case 'sync-revisions':
      return {
        type,
        transferId: u32(),
        records: Array.from({ length: rng.int(4) }, () => rng.bytes(rng.range(1, 60))),
        last: rng.bool(),
      };
    case 'sync-fetch':
      return {
        type,
        transferId: u32(),
        fetchId: u32(),
        items: Array.from({ length: rng.int(4) }, () => ({ path: wfPath(rng) || 'p', root: rng.bytes(32) })),
        last: rng.bool(),
      };
    case 'sync-done':
      return { type, transferId: u32() };
    case 'watch-share':
      return { type, share: wfText(rng, 12) };
    case 'share-changed':
      return { type, share: wfText(rng, 12), seq: u53() };
    case 'pair-request':
    case 'pair-accept':
      return { type, proof: rng.bytes(32), name: wfText(rng, 12) };
    case 'code-pair-start':
      return { type, nameplate: String(rng.range(1, 999_999)), share: rng.bytes(32) };
    case 'code-pair-reply':
      return { type, share: rng.bytes(32), confirm: rng.bytes(32) };
    case 'code-pair-finish':
      return { type, confirm: rng.bytes(32), sealed: rng.bytes(rng.range(1, 200)) };
    case 'code-pair-done':
      return { type, sealed: rng.bytes(rng.range(1, 200)) };
    case 'list-request':
      return {
        type,
        requestId: u32(),
        share: wfText(rng, 12),
        path: rng.bool() ? wfPath(rng) : '',
        recursive: rng.bool(),
      };
    case 'list-reply': {
      // A listing carries names and metadata only: a manifest entry without its chunks.
      const entries = Array.from({ length: rng.int(4) }, () => {
        const e = randomEntry(rng);
        return {
          path: e.path,
          kind: e.kind,
          size: e.kind === 'file' ? Math.min(e.size, Number.MAX_SAFE_INTEGER) : e.size,
          mode: e.mode,
          mtimeMs: e.mtimeMs,
          linkTarget: e.linkTarget,
        };
      });
      const shares = Array.from({ length: rng.int(3) }, () => ({
        name: wfText(rng, 12),
        readOnly: rng.bool(),
        noDelete: rng.bool(),
      }));
      return { type, requestId: u32(), entries, shares, last: rng.bool() };
    }
    case 'session-join':
      return { type, sessionId: rng.bytes(16), index: u32(), proof: rng.bytes(32) };
    case 'session-joined':
      return { type, index: u32() };
    case 'join-wanted':
      return { type, connections: u32() };
    default: {
      const never: never = type;
      throw new TypeError(`unknown type ${String(never)}`);
    }
  }
}

interface ControlInput {
  readonly bytes: Uint8Array;
  /** Decode from a Node Buffer (what the transports hand out) or a plain Uint8Array. */
  readonly buffer: boolean;
  /** Unmutated encoder output: must re-encode to the same bytes. */
  readonly pristine: boolean;
}

const asInput = (bytes: Uint8Array, buffer: boolean): Uint8Array =>
  buffer ? Buffer.from(bytes) : new Uint8Array(bytes);
const CONTROL_MAX_BYTES = 1 << 20;

/** Decode -> encode -> decode: the two decodes agree and the second encoding is a fixed point. */
function checkControlRoundTrip(message: ControlMessage, where: string): Uint8Array {
  let encoded: Uint8Array;
  try {
    encoded = encodeControl(message);
  } catch (err) {
    return violation(`${where}: decoded ${message.type} does not re-encode: ${(err as Error).message}`);
  }
  for (const buffer of [true, false]) {
    let again: ControlMessage;
    try {
      again = decodeControl(asInput(encoded, buffer), { maxBytes: CONTROL_MAX_BYTES });
    } catch (err) {
      return violation(
        `${where}: re-encoded ${message.type} does not decode (${buffer ? 'Buffer' : 'Uint8Array'}): ${(err as Error).message}`,
      );
    }
    if (canon(again) !== canon(message))
      violation(`${where}: ${message.type} changes on a round trip (${buffer ? 'Buffer' : 'Uint8Array'} input)`);
  }
  return encoded;
}

export const controlMessagesTarget: FuzzTarget<ControlInput> = {
  name: 'control-messages',
  generate(rng) {
    const buffer = rng.bool(0.7);
    if (rng.bool(0.05)) return { bytes: rng.bytes(rng.size(300)), buffer, pristine: false };
    let encoded: Uint8Array;
    try {
      encoded = encodeControl(randomControl(rng, rng.pick(CONTROL_TYPES)));
    } catch {
      // The generator made a value the encoder refuses (e.g. a bitmap or text over a limit).
      encoded = encodeControl({ type: 'sync-done', transferId: rng.u32() });
    }
    if (rng.bool(0.15)) return { bytes: encoded, buffer, pristine: true };
    // Mutate the body inside the envelope (keeping the envelope valid) or the envelope itself.
    if (rng.bool(0.75)) {
      const tag = readPbVarint(encoded, 0);
      const len = tag === undefined ? undefined : readPbVarint(encoded, tag.next);
      if (tag !== undefined && len !== undefined) {
        const inner = encoded.subarray(len.next);
        return { bytes: pbLenField(Math.floor(tag.value / 8), mutatePb(rng, inner)), buffer, pristine: false };
      }
    }
    return { bytes: rng.bool() ? mutatePb(rng, encoded) : mutate(rng, encoded), buffer, pristine: false };
  },
  check({ bytes, buffer, pristine }) {
    let message: ControlMessage;
    try {
      message = decodeControl(asInput(bytes, buffer), { maxBytes: CONTROL_MAX_BYTES });
    } catch (err) {
      if (pristine) violation(`encoder output does not decode: ${(err as Error).message}`);
      expectError(err, ['PROTOCOL', 'FRAME_TOO_LARGE'], 'decodeControl');
      return;
    }
    const encoded = checkControlRoundTrip(message, 'decodeControl');
    // Byte-exact only where decoding keeps everything: Hello/Welcome drop duplicate and unknown
    // capability enum values (by design), so for them the round trip above is the property.
    if (pristine && message.type !== 'hello' && message.type !== 'welcome' && !bytesEqual(encoded, bytes))
      violation(`${message.type}: encode(decode(encoderOutput)) differs from encoderOutput`);
  },
  toJson: (i) => ({ hex: hex(i.bytes), buffer: i.buffer, pristine: i.pristine }),
  fromJson(json) {
    const o = asObject(json);
    return { bytes: unhex(o['hex'] ?? null), buffer: o['buffer'] === true, pristine: o['pristine'] === true };
  },
};

// 2b. Text fields of control messages: whatever string our side puts in a message, the encoder
// either refuses it (RangeError: a local bug, caught before sending) or produces bytes the peer
// decodes to the same text (or its well-formed form, U+FFFD for a lone surrogate).

const TEXT_FIELDS = [
  'error.message',
  'transfer-request.share',
  'transfer-request.path',
  'manifest.path',
  'manifest.linkTarget',
  'sync-request.share',
  'sync-fetch.path',
] as const;
type TextField = (typeof TEXT_FIELDS)[number];

interface TextInput {
  readonly field: TextField;
  readonly text: string;
}

function messageWithText(field: TextField, text: string): ControlMessage {
  const dir = { type: 'manifest' as const, transferId: 1, last: true };
  const entry = {
    path: 'a',
    kind: 'dir' as const,
    size: 0,
    mode: 0o755,
    mtimeMs: 0,
    linkTarget: '',
    root: new Uint8Array(0),
    chunkIds: new Uint8Array(0),
    chunkLengths: [],
  };
  switch (field) {
    case 'error.message':
      return { type: 'error', code: 5, message: text };
    case 'transfer-request.share':
    case 'transfer-request.path':
      return {
        type: 'transfer-request',
        transferId: 1,
        direction: 'push',
        share: field.endsWith('share') ? text : '',
        path: field.endsWith('path') ? text : '',
        force: false,
        streams: 1,
        window: 1,
      };
    case 'manifest.path':
      return { ...dir, entries: [{ ...entry, path: text }] };
    case 'manifest.linkTarget':
      return { ...dir, entries: [{ ...entry, kind: 'symlink', linkTarget: text }] };
    case 'sync-request.share':
      return { type: 'sync-request', transferId: 1, share: text, mode: 'two-way', reconcile: Uint8Array.of(1) };
    case 'sync-fetch.path':
      return {
        type: 'sync-fetch',
        transferId: 1,
        fetchId: 2,
        items: [{ path: text, root: new Uint8Array(32) }],
        last: true,
      };
    default: {
      const never: never = field;
      throw new TypeError(`unknown field ${String(never)}`);
    }
  }
}

function textOf(field: TextField, m: ControlMessage): string | undefined {
  if (m.type === 'error' && field === 'error.message') return m.message;
  if (m.type === 'transfer-request') return field.endsWith('share') ? m.share : m.path;
  if (m.type === 'manifest') return field === 'manifest.path' ? m.entries[0]?.path : m.entries[0]?.linkTarget;
  if (m.type === 'sync-request') return m.share;
  if (m.type === 'sync-fetch') return m.items[0]?.path;
  return undefined;
}

/** `text` with each unpaired surrogate replaced by U+FFFD (String.prototype.toWellFormed, ES2024). */
function wellFormed(text: string): string {
  return text.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');
}

export const controlTextTarget: FuzzTarget<TextInput> = {
  name: 'control-text',
  generate: (rng) => ({
    field: rng.pick(TEXT_FIELDS),
    text: (rng.bool() ? randomText(rng, rng.bool(0.05) ? 1500 : 45) : hostilePath(rng)) || 'x',
  }),
  check({ field, text }) {
    let bytes: Uint8Array;
    try {
      bytes = encodeControl(messageWithText(field, text));
    } catch (err) {
      if (err instanceof RangeError) return; // refused locally: never reaches the wire
      throw err;
    }
    let decoded: ControlMessage;
    try {
      decoded = decodeControl(Buffer.from(bytes), { maxBytes: CONTROL_MAX_BYTES });
    } catch (err) {
      return violation(
        `${field}: our encoding of ${JSON.stringify(text.slice(0, 80))} does not decode at the peer: ${(err as Error).message}`,
      );
    }
    const got = textOf(field, decoded);
    const sent = field === 'error.message' ? sanitizeErrorText(text) : text;
    if (got !== sent && got !== wellFormed(sent))
      violation(`${field}: ${JSON.stringify(sent.slice(0, 80))} arrives as ${JSON.stringify(got?.slice(0, 80))}`);
  },
  toJson: (i) => ({ field: i.field, text: i.text }),
  fromJson(json) {
    const o = asObject(json);
    const field = stringField(o, 'field');
    if (!(TEXT_FIELDS as readonly string[]).includes(field)) throw new TypeError(`seed input: unknown field ${field}`);
    return { field: field as TextField, text: stringField(o, 'text') };
  },
};

// ---------------------------------------------------------------------------------------------
// 3. ACK bodies (src/protocol/ack-codec.ts)

export const ackBodyTarget: FuzzTarget<Uint8Array> = {
  name: 'ack-body',
  generate(rng) {
    const valid = encodeAckFrame(rng.edgyUint(32), rng.edgyUint(53)).subarray(FRAME_HEADER_BYTES);
    return rng.bool(0.2)
      ? valid
      : rng.bool(0.5)
        ? mutate(rng, valid)
        : rng.bytes(rng.pick([ACK_BODY_BYTES, rng.size(32)]));
  },
  check(body) {
    let ack;
    try {
      ack = decodeAckBody(body);
    } catch (err) {
      expectError(err, ['PROTOCOL'], 'decodeAckBody');
      return;
    }
    const again = encodeAckFrame(ack.streamId, ack.ackedThroughSeq).subarray(FRAME_HEADER_BYTES);
    if (!bytesEqual(again, body)) violation('ACK body does not re-encode to the same bytes');
  },
  toJson: (b) => hex(b),
  fromJson: (j) => unhex(j),
};

// ---------------------------------------------------------------------------------------------
// 4. TLS mux frame decoder (src/transport/mux-codec.ts)

type MuxInput = StreamInput;

function randomMuxFrame(rng: Rng, maxData: number): MuxFrame {
  const stream = (): number => rng.range(1, 0xffff_ffff);
  switch (rng.int(8)) {
    case 0:
      return { type: MuxType.OPEN, streamId: stream() };
    case 1:
      return { type: MuxType.DATA, streamId: stream(), payload: rng.bytes(rng.size(Math.min(maxData, 400))) };
    case 2:
      return { type: MuxType.FIN, streamId: stream() };
    case 3:
      return { type: MuxType.RESET, streamId: stream(), code: rng.edgyUint(32) };
    case 4:
      return { type: MuxType.WINDOW_UPDATE, streamId: stream(), increment: rng.range(1, 0xffff_ffff) };
    case 5:
      return { type: MuxType.PING, payload: rng.bytes(8) };
    case 6:
      return { type: MuxType.PONG, payload: rng.bytes(8) };
    default:
      return { type: MuxType.GOAWAY, code: rng.edgyUint(32), reason: randomText(rng, rng.bool(0.1) ? 600 : 30) };
  }
}

/** Largest control payload the mux decoder assembles (GOAWAY: code + reason). */
const MUX_MAX_CONTROL_PAYLOAD = 4 + MAX_GOAWAY_REASON_BYTES;

function runMuxDecoder(
  maxData: number,
  pieces: readonly Uint8Array[],
  pinned: ArrayBufferLike,
): { events: string[]; reencoded: Uint8Array[]; end: string } {
  const decoder = new MuxFrameDecoder(maxData);
  const events: string[] = [];
  const reencoded: Uint8Array[] = [];
  let data: Uint8Array[] = [];
  let dataStream = 0;
  const bound = MUX_HEADER_BYTES + MUX_MAX_CONTROL_PAYLOAD - 1;
  for (const piece of pieces) {
    decoder.push(piece);
    // Every result consumes >= 1 byte (a data piece) or a whole header.
    const maxCalls = decoder.bufferedBytes + 2;
    for (let calls = 0; ; calls++) {
      if (calls > maxCalls)
        violation(`mux decoder returned more than ${maxCalls} results for ${decoder.bufferedBytes} bytes`);
      let r;
      try {
        r = decoder.next();
      } catch (err) {
        expectError(err, ['PROTOCOL', 'FRAME_TOO_LARGE'], 'mux FrameDecoder.next');
        if (data.length > 0) events.push(`partial:${dataStream}:${hex(concatBytes(data))}`);
        return { events, reencoded, end: (err as ClawpeerError).code };
      }
      if (r.kind === 'need-more') break;
      if (r.kind === 'data') {
        // A view may pin its whole pushed buffer only when it covers at least half of it.
        if (r.bytes.buffer === pinned && r.bytes.length * 2 < pinned.byteLength) {
          violation(`mux DATA piece of ${r.bytes.length} bytes pins a ${pinned.byteLength}-byte buffer`);
        }
        if (r.bytes.length === 0 && !r.last) violation('mux decoder returned an empty, non-final DATA piece');
        data.push(r.bytes);
        dataStream = r.streamId;
        if (r.last) {
          const payload = concatBytes(data);
          events.push(`data:${r.streamId}:${hex(payload)}`);
          reencoded.push(...encodeMuxFrame({ type: MuxType.DATA, streamId: r.streamId, payload }));
          data = [];
        }
        continue;
      }
      events.push(canon(r.frame));
      reencoded.push(...encodeMuxFrame(r.frame));
    }
    if (decoder.bufferedBytes > bound)
      violation(`mux decoder holds ${decoder.bufferedBytes} bytes after draining, more than ${bound}`);
  }
  if (data.length > 0) events.push(`partial:${dataStream}:${hex(concatBytes(data))}`);
  return { events, reencoded, end: 'need-more' };
}

/** The type name of the mux frame covering byte `offset` of a well-framed prefix of `bytes`. */
function muxFrameTypeAt(bytes: Uint8Array, offset: number): string {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let at = 0; at + MUX_HEADER_BYTES <= bytes.length;) {
    const end = at + MUX_HEADER_BYTES + view.getUint32(at + 5);
    if (offset < end) return Object.entries(MuxType).find(([, v]) => v === bytes[at])?.[0] ?? `type-${bytes[at] ?? 0}`;
    at = end;
  }
  return 'unknown';
}

export const muxDecoderTarget: FuzzTarget<MuxInput> = {
  name: 'mux-decoder',
  generate(rng) {
    const max = rng.pick([1, 16, 256, 4096, 256 * 1024]);
    const parts: Uint8Array[] = [];
    const count = rng.int(6);
    for (let i = 0; i < count; i++) parts.push(...encodeMuxFrame(randomMuxFrame(rng, max)));
    let bytes = concatBytes(parts);
    const how = rng.int(10);
    if (how < 5) bytes = mutate(rng, bytes);
    else if (how === 5 && bytes.length >= MUX_HEADER_BYTES) {
      bytes = bytes.slice();
      new DataView(bytes.buffer).setUint32(5, rng.pick([0xffff_ffff, max, max + 1, MUX_MAX_CONTROL_PAYLOAD + 1]));
    } else if (how === 6) bytes = rng.bytes(rng.size(200));
    return { max, bytes, cuts: randomSplits(rng, bytes.length) };
  },
  check({ max, bytes, cuts }) {
    const copy = new Uint8Array(bytes); // its own ArrayBuffer, to detect pinning
    const split = runMuxDecoder(max, piecesOf(copy, cuts), copy.buffer);
    const whole = runMuxDecoder(max, [copy], copy.buffer);
    if (canon(split.events) !== canon(whole.events) || split.end !== whole.end) {
      violation(`mux: split decode differs from one-push decode (${split.end} vs ${whole.end})`);
    }
    const again = concatBytes(whole.reencoded);
    if (!bytesEqual(again, bytes.subarray(0, again.length))) {
      let at = 0;
      while (at < again.length && again[at] === bytes[at]) at++;
      violation(
        `mux: decoded frames do not re-encode to the input bytes (first difference at byte ${at}, in a ${muxFrameTypeAt(bytes, at)} frame)`,
      );
    }
  },
  toJson: streamToJson,
  fromJson: streamFromJson,
};

// ---------------------------------------------------------------------------------------------
// 5. Reconciliation messages (src/sync/reconcile-codec.ts)

function randomReconcile(rng: Rng): ReconcileMessage {
  switch (rng.int(7)) {
    case 0:
      return { type: 'hello', version: rng.int(256), root: rng.bytes(32), count: rng.edgyUint(53) };
    case 1:
      return { type: 'equal' };
    case 2:
      return { type: 'different', root: rng.bytes(32), count: rng.edgyUint(53), cells: rng.edgyUint(53) };
    case 3: {
      const n = rng.int(6);
      const s = allocateSymbols(rng.edgyUint(32), n);
      new Uint8Array(s.idXor.buffer).set(rng.bytes(s.idXor.byteLength));
      for (let i = 0; i < s.checksum.length; i++) s.checksum[i] = rng.u32();
      for (let i = 0; i < n; i++) s.count[i] = (rng.bool() ? -1 : 1) * rng.pick([0, 1, 2, 1000, 2 ** 40, 2 ** 52 - 1]);
      return { type: 'symbols', symbols: s };
    }
    case 4:
      return { type: 'more', start: rng.edgyUint(53), cells: rng.edgyUint(53) };
    case 5:
      return { type: 'send-ids' };
    default:
      return {
        type: 'ids',
        list: rng.pick(['full', 'initiator-lacks', 'responder-lacks'] as const),
        ids: rng.bytes(32 * rng.int(5)),
        last: rng.bool(),
      };
  }
}

interface ReconcileInput {
  readonly bytes: Uint8Array;
  readonly max: number;
}

/** Reads the length prefix as the spec says (LEB128); undefined while incomplete. */
function reconcilePrefix(bytes: Uint8Array): { value: number; next: number } | undefined {
  return readPbVarint(bytes, 0);
}

export const reconcileCodecTarget: FuzzTarget<ReconcileInput> = {
  name: 'reconcile-codec',
  generate(rng) {
    const max = rng.bool(0.8) ? MAX_RECONCILE_MESSAGE_BYTES : rng.pick([1, 2, 33, 64, 200]);
    const valid = encodeReconcileMessage(randomReconcile(rng));
    const how = rng.int(10);
    const bytes = how < 2 ? valid : how < 9 ? mutate(rng, valid) : rng.bytes(rng.size(200));
    return { bytes, max };
  },
  check({ bytes, max }) {
    let r;
    try {
      r = decodeReconcileMessage(bytes, max);
    } catch (err) {
      expectError(err, ['PROTOCOL'], 'decodeReconcileMessage');
      return;
    }
    if (r.kind === 'need-more') {
      // Only for a frame that is really incomplete and within the limit.
      const prefix = reconcilePrefix(bytes);
      if (prefix !== undefined && (prefix.value > max || bytes.length >= prefix.next + prefix.value)) {
        violation(
          `need-more for a complete or oversized frame (prefix ${prefix.value}, ${bytes.length} bytes, max ${max})`,
        );
      }
      return;
    }
    if (r.bytesRead > bytes.length) violation(`bytesRead ${r.bytesRead} > input length ${bytes.length}`);
    let again: Uint8Array;
    try {
      again = encodeReconcileMessage(r.message, max);
    } catch (err) {
      return violation(`decoded ${r.message.type} does not re-encode: ${(err as Error).message}`);
    }
    if (!bytesEqual(again, bytes.subarray(0, r.bytesRead)))
      violation(`${r.message.type}: decoded message re-encodes to different bytes (non-canonical)`);
  },
  toJson: (i) => ({ hex: hex(i.bytes), max: i.max }),
  fromJson(json) {
    const o = asObject(json);
    return { bytes: unhex(o['hex'] ?? null), max: numberField(o, 'max') };
  },
};

// ---------------------------------------------------------------------------------------------
// 6. Revision records (src/sync/revision.ts) and 7. version vectors (src/sync/version-vector.ts)

const NODE_ID_CHARS = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz!~';

function randomNodeId(rng: Rng): string {
  if (rng.bool(0.5)) return `12D3KooW${'x'.repeat(44)}`.slice(0, rng.range(1, 52));
  let s = '';
  const n = rng.pick([1, 2, 8, 52, 64]);
  for (let i = 0; i < n; i++) s += NODE_ID_CHARS.charAt(rng.int(NODE_ID_CHARS.length));
  return s;
}

function randomVector(rng: Rng, must?: string): VersionVector {
  const entries = new Map<string, number>();
  if (must !== undefined) entries.set(must, rng.range(1, 1000));
  const n = rng.int(rng.bool(0.02) ? 1100 : 5);
  for (let i = 0; i < n; i++)
    entries.set(randomNodeId(rng), rng.bool(0.9) ? rng.range(1, 1_000_000) : rng.edgyUint(53));
  return vectorFrom(entries);
}

/** A path normalizeSharePath accepts (a hostile one when possible). */
function acceptedPath(rng: Rng): string {
  for (let i = 0; i < 8; i++) {
    try {
      return normalizeSharePath(hostilePath(rng));
    } catch {
      /* try another */
    }
  }
  return rng.pick(['a', 'dir/file.txt', '\ufeffbom', '\u00e9t\u00e9']);
}

function randomRevision(rng: Rng): Revision {
  const kind: RevisionKind = rng.pick(['file', 'dir', 'symlink']);
  const deleted = rng.bool(0.2);
  const origin = randomNodeId(rng);
  const linkTarget =
    !deleted && kind === 'symlink'
      ? (rng.bool(0.3) ? '\ufeff' : '') + (randomText(rng, 20).replace(/\0/g, '') || 't')
      : '';
  return {
    path: acceptedPath(rng),
    kind,
    contentRoot: !deleted && kind === 'file' ? rng.bytes(32) : new Uint8Array(0),
    size: deleted || kind === 'dir' ? 0 : kind === 'symlink' ? Buffer.byteLength(linkTarget) : rng.edgyUint(53),
    mode: rng.int(0o10000),
    mtimeNs: BigInt.asIntN(64, (BigInt(rng.u32()) << 32n) | BigInt(rng.u32())),
    deleted,
    origin,
    vector: randomVector(rng, origin),
    linkTarget,
  };
}

/** A note for failure triage: TextDecoder drops a leading U+FEFF unless told not to. */
function bomHint(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).includes(Buffer.from([0xef, 0xbb, 0xbf]))
    ? ' [input holds a UTF-8 BOM EF BB BF]'
    : '';
}

interface CanonicalInput {
  readonly bytes: Uint8Array;
  readonly pristine: boolean;
}

function canonicalTarget<T>(
  name: string,
  make: (rng: Rng) => Uint8Array,
  decode: (b: Uint8Array) => T,
  encode: (v: T) => Uint8Array,
): FuzzTarget<CanonicalInput> {
  return {
    name,
    generate(rng) {
      let valid: Uint8Array;
      try {
        valid = make(rng);
      } catch (err) {
        // A generated value the encoder refuses is a generator limit, not a finding.
        if (err instanceof TypeError || err instanceof RangeError)
          return { bytes: rng.bytes(rng.size(100)), pristine: false };
        throw err;
      }
      if (rng.bool(0.2)) return { bytes: valid, pristine: true };
      return { bytes: rng.bool(0.95) ? mutate(rng, valid) : rng.bytes(rng.size(200)), pristine: false };
    },
    check({ bytes, pristine }) {
      let value: T;
      try {
        value = decode(bytes);
      } catch (err) {
        if (pristine) violation(`${name}: encoder output does not decode: ${(err as Error).message}${bomHint(bytes)}`);
        expectError(err, ['PROTOCOL'], `${name} decode`);
        return;
      }
      let again: Uint8Array;
      try {
        again = encode(value);
      } catch (err) {
        return violation(`${name}: decoded value does not re-encode: ${(err as Error).message}`);
      }
      // The formats are canonical: one value, one byte string (ids are hashes of these bytes).
      if (!bytesEqual(again, bytes))
        violation(
          `${name}: decoded value re-encodes to different bytes (${bytes.length} in, ${again.length} out)${bomHint(bytes)}`,
        );
    },
    toJson: (i) => ({ hex: hex(i.bytes), pristine: i.pristine }),
    fromJson(json) {
      const o = asObject(json);
      return { bytes: unhex(o['hex'] ?? null), pristine: o['pristine'] === true };
    },
  };
}

export const revisionTarget = canonicalTarget(
  'revision',
  (rng) => encodeRevision(randomRevision(rng)),
  (b) => decodeRevision(b),
  encodeRevision,
);
export const versionVectorTarget = canonicalTarget(
  'version-vector',
  (rng) => encodeVector(randomVector(rng)),
  decodeVector,
  encodeVector,
);

// ---------------------------------------------------------------------------------------------
// 8. Share paths (src/transfer/paths.ts)

export const sharePathTarget: FuzzTarget<string> = {
  name: 'share-path',
  generate: hostilePath,
  check(raw) {
    let result: string;
    try {
      result = normalizeSharePath(raw);
    } catch (err) {
      expectError(err, ['PATH_INVALID'], 'normalizeSharePath');
      // NFD spelling of a refused path is refused too (the checks run on the NFC form).
      try {
        const other = normalizeSharePath(raw.normalize('NFD'));
        violation(`refused ${JSON.stringify(raw)} but accepted its NFD form as ${JSON.stringify(other)}`);
      } catch (again) {
        expectError(again, ['PATH_INVALID'], 'normalizeSharePath(NFD)');
      }
      return;
    }
    const joined = path.posix.join('/share', result);
    if (!joined.startsWith('/share/'))
      violation(`${JSON.stringify(raw)} -> ${JSON.stringify(result)} leaves the share (${joined})`);
    const win = path.win32.join('C:\\share', result);
    if (!win.startsWith('C:\\share\\'))
      violation(`${JSON.stringify(raw)} -> ${JSON.stringify(result)} leaves the share on Windows (${win})`);
    if (result.split('/').some((s) => s === '..' || s === '.' || s === ''))
      violation(`${JSON.stringify(result)} has a dot or empty segment`);
    if (/[\0\\]/.test(result) || result.startsWith('/'))
      violation(`${JSON.stringify(result)} has NUL, a backslash or a leading slash`);
    if (result.normalize('NFC') !== result) violation(`${JSON.stringify(result)} is not NFC`);
    if (Buffer.byteLength(result) > 4096) violation(`${JSON.stringify(result)} is longer than 4096 bytes`);
    let twice: string;
    try {
      twice = normalizeSharePath(result);
    } catch (err) {
      return violation(`normalizing ${JSON.stringify(result)} again throws ${(err as Error).message}`);
    }
    if (twice !== result)
      violation(`normalizing twice is not stable: ${JSON.stringify(result)} -> ${JSON.stringify(twice)}`);
    let nfd: string;
    try {
      nfd = normalizeSharePath(raw.normalize('NFD'));
    } catch (err) {
      return violation(`accepted ${JSON.stringify(raw)} but refused its NFD form: ${(err as Error).message}`);
    }
    if (nfd !== result)
      violation(`NFC and NFD spellings normalise differently: ${JSON.stringify(result)} vs ${JSON.stringify(nfd)}`);
  },
  toJson: (s) => s,
  fromJson(json) {
    if (typeof json !== 'string') throw new TypeError('seed input: expected a string');
    return json;
  },
};

// ---------------------------------------------------------------------------------------------
// 9. Handshake state machine (src/protocol/handshake.ts)

const enc = new TextEncoder();
// The signature contexts are part of the protocol (handshake.ts module comment).
const CTX_HELLO = enc.encode('clawpeer v1 hello signature\0');
const CTX_WELCOME = enc.encode('clawpeer v1 welcome signature\0');
const CTX_FINISHED = enc.encode('clawpeer v1 finished signature\0');

interface HandshakeWorld {
  readonly client: Identity;
  readonly server: Identity;
  readonly stranger: Identity;
  readonly clientEphemeral: ReturnType<typeof ephemeralKeyPairFromPrivate>;
  readonly serverEphemeral: ReturnType<typeof ephemeralKeyPairFromPrivate>;
  readonly clientNonce: Uint8Array;
  /** A captured legitimate session (server nonce = 0x55...): the attacker's raw material. */
  readonly helloRaw: Uint8Array;
  readonly welcomeRaw: Uint8Array;
  readonly finishedFrame: Uint8Array;
}

let world: HandshakeWorld | undefined;

function handshakeWorld(): HandshakeWorld {
  if (world !== undefined) return world;
  const client = identityFromSeed(new Uint8Array(32).fill(1));
  const server = identityFromSeed(new Uint8Array(32).fill(2));
  const stranger = identityFromSeed(new Uint8Array(32).fill(3));
  const clientEphemeral = ephemeralKeyPairFromPrivate(new Uint8Array(32).fill(4));
  const serverEphemeral = ephemeralKeyPairFromPrivate(new Uint8Array(32).fill(5));
  const clientNonce = new Uint8Array(32).fill(6);
  const c = Handshake.client({
    identity: client,
    expectedRemoteKey: server.publicKey,
    caps: DEFAULT_CAPABILITIES,
    now: 0,
    ephemeral: clientEphemeral,
    nonce: clientNonce,
  });
  const s = Handshake.server({
    identity: server,
    expectedRemoteKey: client.publicKey,
    caps: DEFAULT_CAPABILITIES,
    now: 0,
    ephemeral: serverEphemeral,
    nonce: new Uint8Array(32).fill(0x55),
  });
  const helloFrame = c.pollTransmit();
  if (helloFrame === null) throw new TypeError('client sent no Hello');
  s.handleFrame(controlFrameOf(helloFrame), 1);
  const welcomeFrame = s.pollTransmit();
  if (welcomeFrame === null) throw new TypeError('server sent no Welcome');
  c.handleFrame(controlFrameOf(welcomeFrame), 1);
  const finishedFrame = c.pollTransmit();
  if (finishedFrame === null || c.phase !== 'done') throw new TypeError('captured session did not complete');
  s.handleFrame(controlFrameOf(finishedFrame), 1);
  if (s.phase !== 'done') throw new TypeError('captured session did not complete on the server');
  const rawOf = (frame: Uint8Array): Uint8Array =>
    decodeControlWithRaw(frame.subarray(FRAME_HEADER_BYTES), { maxBytes: 1 << 16 }).raw.slice();
  world = {
    client,
    server,
    stranger,
    clientEphemeral,
    serverEphemeral,
    clientNonce,
    helloRaw: rawOf(helloFrame),
    welcomeRaw: rawOf(welcomeFrame),
    finishedFrame,
  };
  return world;
}

function controlFrameOf(frameBytes: Uint8Array): Frame {
  const d = new FrameDecoder();
  d.push(frameBytes);
  const r = d.next();
  if (r.kind !== 'frame') throw new TypeError('not a whole frame');
  return r.frame;
}

function signedHelloBody(rng: Rng, w: HandshakeWorld, signer: Identity, claimedKey: Uint8Array): Uint8Array {
  const unsigned = encodeHelloBody({
    minVersion: rng.bool(0.7) ? 1 : rng.edgyUint(32),
    maxVersion: rng.bool(0.7) ? 1 : rng.edgyUint(32),
    nodePublicKey: claimedKey,
    caps: rng.bool(0.4) ? DEFAULT_CAPABILITIES : randomCaps(rng),
    ephemeralPublicKey: rng.bool(0.6)
      ? w.clientEphemeral.publicKey
      : rng.pick([
          new Uint8Array(32),
          Uint8Array.of(1, ...new Uint8Array(31)),
          rng.bytes(32),
          new Uint8Array(32).fill(0xff),
        ]),
    nonce: rng.bytes(32),
    signature: new Uint8Array(0),
  });
  // Sometimes sign a structurally odd body (unknown fields, duplicates): the signature covers it.
  const body = rng.bool(0.3) ? mutatePb(rng, unsigned) : unsigned;
  let stripped: Uint8Array;
  try {
    stripped = stripField(body, HELLO_SIGNATURE_FIELD);
  } catch {
    stripped = body;
  }
  return concatBytes([
    stripped,
    pbLenField(HELLO_SIGNATURE_FIELD, signMessage(signer, concatBytes([CTX_HELLO, stripped]))),
  ]);
}

function signedWelcomeBody(rng: Rng, w: HandshakeWorld, signer: Identity, claimedKey: Uint8Array): Uint8Array {
  const caps: Capabilities = rng.bool(0.4)
    ? { ...DEFAULT_CAPABILITIES, aeadSuites: [rng.pick(AEAD_SUITES)], chunking: [DEFAULT_CAPABILITIES.chunking[0]!] }
    : randomCaps(rng);
  const unsigned = encodeWelcomeBody({
    version: rng.bool(0.7) ? 1 : rng.edgyUint(32),
    nodePublicKey: claimedKey,
    caps,
    ephemeralPublicKey: rng.bool(0.6) ? w.serverEphemeral.publicKey : rng.pick([new Uint8Array(32), rng.bytes(32)]),
    nonce: rng.bytes(32),
    signature: new Uint8Array(0),
  });
  const body = rng.bool(0.3) ? mutatePb(rng, unsigned) : unsigned;
  let stripped: Uint8Array;
  try {
    stripped = stripField(body, WELCOME_SIGNATURE_FIELD);
  } catch {
    stripped = body;
  }
  const signature = signMessage(signer, concatBytes([CTX_WELCOME, transcriptHash([w.helloRaw, stripped])]));
  return concatBytes([stripped, pbLenField(WELCOME_SIGNATURE_FIELD, signature)]);
}

type HandshakeScenario = 'server-forged' | 'client-forged' | 'server-pinned-hostile' | 'client-pinned-hostile';

interface HandshakeInput {
  readonly scenario: HandshakeScenario;
  /** The server's fresh nonce (differs from the captured session's). */
  readonly serverNonce: Uint8Array;
  /** Whole frames fed in order. */
  readonly frames: readonly Uint8Array[];
}

function controlFrame(type: ControlMessageType, body: Uint8Array): Uint8Array {
  return encodeFrame('control', encodeControlFromRaw(type, body));
}

function forgedFrame(rng: Rng, w: HandshakeWorld, wanted: 'hello' | 'welcome' | 'finished'): Uint8Array {
  switch (rng.int(9)) {
    case 0:
      return encodeFrame('control', rng.bytes(rng.size(200)));
    case 1:
      return rng.bool()
        ? encodeFrame('ack', rng.bytes(12))
        : encodeDataFrame(
            { streamId: 1, sequence: 0, chunkId: rng.bytes(32), compressed: false, chunkBytes: 4 },
            rng.bytes(20),
          );
    case 2:
      // A well-signed message from an unpaired key, claiming its own key or the pinned one.
      return wanted === 'welcome'
        ? controlFrame(
            'welcome',
            signedWelcomeBody(rng, w, w.stranger, rng.bool() ? w.stranger.publicKey : w.server.publicKey),
          )
        : controlFrame(
            'hello',
            signedHelloBody(rng, w, w.stranger, rng.bool() ? w.stranger.publicKey : w.client.publicKey),
          );
    case 3:
      return encodeControlFrameSafe({ type: 'error', code: rng.edgyUint(32), message: randomText(rng, 40) });
    case 4:
      // Replays of the captured session, whole or mutated.
      return rng.pick([controlFrame('hello', w.helloRaw), controlFrame('welcome', w.welcomeRaw), w.finishedFrame]);
    case 5:
      return encodeFrame('control', mutatePb(rng, encodeControlFromRaw('hello', w.helloRaw)));
    case 6:
      return controlFrame('welcome', mutatePb(rng, w.welcomeRaw));
    case 7:
      return encodeFrame('control', mutatePb(rng, w.finishedFrame.subarray(FRAME_HEADER_BYTES)));
    default:
      return controlFrame(rng.pick(CONTROL_TYPES), mutate(rng, w.helloRaw));
  }
}

function encodeControlFrameSafe(message: ControlMessage): Uint8Array {
  try {
    return encodeFrame('control', encodeControl(message));
  } catch {
    return encodeFrame('control', encodeControl({ type: 'sync-done', transferId: 1 }));
  }
}

/** Frames the state machine transmitted must be well-formed CONTROL frames (Welcome/Finished/Error). */
function checkTransmitted(h: Handshake, where: string): { message: ControlMessage; raw: Uint8Array }[] {
  const out: { message: ControlMessage; raw: Uint8Array }[] = [];
  for (let bytes = h.pollTransmit(); bytes !== null; bytes = h.pollTransmit()) {
    const d = new FrameDecoder();
    d.push(bytes);
    const r = d.next();
    if (r.kind !== 'frame' || r.frame.type !== 'control' || d.bufferedBytes !== 0)
      violation(`${where} transmitted a malformed frame`);
    try {
      out.push(decodeControlWithRaw(r.frame.body, { maxBytes: 1 << 16 }));
    } catch (err) {
      violation(`${where} transmitted a control message that does not decode: ${(err as Error).message}`);
    }
  }
  return out;
}

function feed(h: Handshake, frameBytes: Uint8Array, where: string): void {
  const d = new FrameDecoder({ maxFrameBytes: 1 << 16 });
  d.push(frameBytes);
  let r;
  try {
    r = d.next();
  } catch {
    return; // the frame layer refuses it before the handshake sees it
  }
  if (r.kind !== 'frame') return;
  try {
    h.handleFrame(r.frame, 1);
  } catch (err) {
    violation(`${where}: handleFrame threw ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`);
  }
}

function checkEnd(h: Handshake, where: string): void {
  if (h.phase === 'failed' && !(h.error instanceof ClawpeerError))
    violation(`${where}: failed without a ClawpeerError`);
  checkTransmitted(h, where);
}

export const handshakeTarget: FuzzTarget<HandshakeInput> = {
  name: 'handshake',
  generate(rng) {
    const w = handshakeWorld();
    const scenario = rng.pick([
      'server-forged',
      'client-forged',
      'server-pinned-hostile',
      'client-pinned-hostile',
    ] as const);
    let serverNonce = rng.bytes(32);
    if (serverNonce.every((b) => b === 0x55)) serverNonce = new Uint8Array(32);
    const frames: Uint8Array[] = [];
    switch (scenario) {
      case 'server-forged': {
        const n = rng.range(1, 3);
        for (let i = 0; i < n; i++) frames.push(forgedFrame(rng, w, i === 0 ? 'hello' : 'finished'));
        break;
      }
      case 'client-forged': {
        const n = rng.range(1, 2);
        for (let i = 0; i < n; i++) frames.push(forgedFrame(rng, w, 'welcome'));
        break;
      }
      case 'server-pinned-hostile':
        frames.push(controlFrame('hello', signedHelloBody(rng, w, w.client, w.client.publicKey)));
        break;
      case 'client-pinned-hostile':
        frames.push(controlFrame('welcome', signedWelcomeBody(rng, w, w.server, w.server.publicKey)));
        break;
      default: {
        const never: never = scenario;
        throw new TypeError(`unknown scenario ${String(never)}`);
      }
    }
    return { scenario, serverNonce, frames };
  },
  check({ scenario, serverNonce, frames }) {
    const w = handshakeWorld();
    const isServer = scenario.startsWith('server');
    const h = isServer
      ? Handshake.server({
          identity: w.server,
          expectedRemoteKey: w.client.publicKey,
          caps: DEFAULT_CAPABILITIES,
          now: 0,
          ephemeral: w.serverEphemeral,
          nonce: serverNonce,
        })
      : Handshake.client({
          identity: w.client,
          expectedRemoteKey: w.server.publicKey,
          caps: DEFAULT_CAPABILITIES,
          now: 0,
          ephemeral: w.clientEphemeral,
          nonce: w.clientNonce,
        });
    if (!isServer) {
      const hello = h.pollTransmit();
      if (
        hello === null ||
        !bytesEqual(decodeControlWithRaw(hello.subarray(FRAME_HEADER_BYTES), { maxBytes: 1 << 16 }).raw, w.helloRaw)
      ) {
        violation('client Hello is not the captured one (fixed keys and nonce)');
      }
    }
    let lastFed: Uint8Array | undefined;
    for (const frame of frames) {
      if (h.phase === 'done' || h.phase === 'failed') break;
      feed(h, frame, scenario);
      lastFed = frame;
    }
    switch (scenario) {
      case 'server-forged':
        // Nobody here holds the client's key for THIS transcript: done would be a forgery.
        if (h.phase === 'done') violation('server completed a handshake without the client key signing this session');
        break;
      case 'client-forged': {
        if (h.phase !== 'done') break;
        // Only the captured server's Welcome (its signed content, byte for byte) may complete it.
        const raw =
          lastFed === undefined
            ? undefined
            : decodeControlWithRaw(lastFed.subarray(FRAME_HEADER_BYTES), { maxBytes: 1 << 16 }).raw;
        if (
          raw === undefined ||
          !bytesEqual(stripField(raw, WELCOME_SIGNATURE_FIELD), stripField(w.welcomeRaw, WELCOME_SIGNATURE_FIELD))
        ) {
          violation('client completed a handshake on a Welcome the pinned server did not sign');
        }
        break;
      }
      case 'server-pinned-hostile': {
        if (h.phase !== 'await-finished') break;
        // The pinned (but hostile) client finishes; the session must then hold sane capabilities.
        const welcomeRaw = checkTransmitted(h, scenario).find((m) => m.message.type === 'welcome')?.raw;
        if (welcomeRaw === undefined) return violation('server awaits Finished but sent no Welcome');
        const helloRaw = decodeControlWithRaw(frames[0]!.subarray(FRAME_HEADER_BYTES), { maxBytes: 1 << 16 }).raw;
        const signature = signMessage(w.client, concatBytes([CTX_FINISHED, transcriptHash([helloRaw, welcomeRaw])]));
        feed(h, encodeControlFrameSafe({ type: 'finished', signature }), scenario);
        if ((h.phase as string) !== 'done')
          violation(`server did not accept the pinned client's Finished: ${h.error?.message ?? h.phase}`);
        checkSession(h, scenario);
        return;
      }
      case 'client-pinned-hostile':
        if (h.phase === 'done') checkSession(h, scenario);
        break;
      default: {
        const never: never = scenario;
        throw new TypeError(`unknown scenario ${String(never)}`);
      }
    }
    checkEnd(h, scenario);
  },
  toJson: (i) => ({ scenario: i.scenario, serverNonce: hex(i.serverNonce), frames: i.frames.map(hex) }),
  fromJson(json) {
    const o = asObject(json);
    const frames = o['frames'];
    if (!Array.isArray(frames)) throw new TypeError('seed input: frames must be a list');
    return {
      scenario: stringField(o, 'scenario') as HandshakeScenario,
      serverNonce: unhex(o['serverNonce'] ?? null),
      frames: frames.map(unhex),
    };
  },
};

/** A completed session: the agreed set is valid and within what this side offered. */
function checkSession(h: Handshake, where: string): void {
  const r = h.result;
  if (r === undefined) return violation(`${where}: done without a result`);
  const caps = r.caps;
  const ours = DEFAULT_CAPABILITIES;
  try {
    validateCapabilities({ ...caps, aeadSuites: [caps.aeadSuite], chunking: [caps.chunking] }, 'session');
  } catch (err) {
    violation(`${where}: session capabilities are invalid: ${(err as Error).message}`);
  }
  if (!ours.aeadSuites.includes(caps.aeadSuite)) violation(`${where}: session AEAD ${caps.aeadSuite} not offered`);
  if (
    caps.maxFrameBytes > ours.maxFrameBytes ||
    caps.maxStreams > ours.maxStreams ||
    caps.maxWindowChunks > ours.maxWindowChunks
  ) {
    violation(`${where}: session limits exceed ours`);
  }
  if (!caps.features.every((f) => ours.features.includes(f))) violation(`${where}: session features not offered`);
  if (r.version !== 1) violation(`${where}: session version ${r.version}`);
}

// ---------------------------------------------------------------------------------------------
// 11. zstd frame structure of a compressed chunk (src/transfer/zstd-frame.ts), read before the
// decoder runs: it must refuse or bound, never crash or under-count.

/** A well-formed frame of random blocks, as an encoder could write it. */
function randomZstdFrame(rng: Rng): Uint8Array {
  const singleSegment = rng.bool(0.2);
  const fcsFlag = rng.int(4);
  const checksum = rng.bool(0.3);
  const parts: number[] = [0x28, 0xb5, 0x2f, 0xfd, (fcsFlag << 6) | (singleSegment ? 0x20 : 0) | (checksum ? 0x04 : 0)];
  const blocks: number[] = [];
  let content = 0;
  const windowLog = rng.range(10, 20);
  const blockMax = Math.min(2 ** windowLog, ZSTD_MAX_BLOCK_BYTES);
  const count = rng.range(1, 6);
  for (let i = 0; i < count; i++) {
    const type = rng.int(3);
    const size = rng.int(Math.min(blockMax, 300) + 1);
    const h = (size << 3) | (type << 1) | (i === count - 1 ? 1 : 0);
    blocks.push(h & 0xff, (h >> 8) & 0xff, (h >> 16) & 0xff);
    if (type === 1) blocks.push(rng.int(256));
    else blocks.push(...rng.bytes(size));
    content += type === 2 ? 0 : size;
  }
  if (!singleSegment) parts.push((windowLog - 10) << 3);
  const fcsBytes = fcsFlag === 0 ? (singleSegment ? 1 : 0) : 1 << fcsFlag;
  const fcs = new DataView(new ArrayBuffer(8));
  fcs.setBigUint64(0, BigInt(fcsBytes === 2 ? Math.max(0, content - 256) : content), true);
  parts.push(...new Uint8Array(fcs.buffer).subarray(0, fcsBytes), ...blocks);
  if (checksum) parts.push(...rng.bytes(4));
  return Uint8Array.from(parts);
}

export const zstdFrameTarget: FuzzTarget<Uint8Array> = {
  name: 'zstd-frame',
  generate(rng) {
    const valid = randomZstdFrame(rng);
    return rng.bool(0.3) ? valid : mutate(rng, valid);
  },
  check(payload) {
    let shape;
    try {
      shape = readZstdFrame(payload);
    } catch (err) {
      if (err instanceof ZstdFrameError) return;
      throw new FuzzViolation(
        `readZstdFrame threw ${(err as Error).name}: ${(err as Error).message} (only ZstdFrameError is allowed)`,
      );
    }
    if (!(shape.blocks >= 1 && shape.exactBytes <= shape.maxOutputBytes))
      violation(`inconsistent shape ${JSON.stringify(shape)}`);
    if (shape.maxOutputBytes > shape.blocks * ZSTD_MAX_BLOCK_BYTES)
      violation(`bound ${shape.maxOutputBytes} exceeds ${shape.blocks} blocks of 128 KiB`);
    if (shape.blocks > payload.length / 3) violation(`${shape.blocks} blocks in ${payload.length} bytes`);
    if (
      shape.contentSize !== undefined &&
      (shape.contentSize < shape.exactBytes || shape.contentSize > shape.maxOutputBytes)
    )
      violation(`content size ${shape.contentSize} outside the blocks' ${shape.exactBytes}..${shape.maxOutputBytes}`);
  },
  toJson: (b) => hex(b),
  fromJson: (j) => unhex(j),
};

// ---------------------------------------------------------------------------------------------

export const TARGETS = {
  'frame-decoder': frameDecoderTarget,
  'control-messages': controlMessagesTarget,
  'control-text': controlTextTarget,
  'ack-body': ackBodyTarget,
  'mux-decoder': muxDecoderTarget,
  'reconcile-codec': reconcileCodecTarget,
  revision: revisionTarget,
  'version-vector': versionVectorTarget,
  'share-path': sharePathTarget,
  handshake: handshakeTarget,
  'zstd-frame': zstdFrameTarget,
} as const;
export type TargetName = keyof typeof TARGETS;

/** Replays one committed seed input against its target (throws on a broken property). */
export function replaySeed(targetName: string, input: JsonValue): void {
  const target = (TARGETS as Record<string, FuzzTarget<unknown>>)[targetName];
  if (target === undefined) throw new TypeError(`seed names unknown target ${targetName}`);
  target.check(target.fromJson(input));
}
