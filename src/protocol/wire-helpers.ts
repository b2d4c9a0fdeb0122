// Field checks and conversions shared by the control-message codecs (messages.ts and the
// *-wire.ts family codecs): range checks that throw RangeError on our own bad input, and
// from-wire conversions that turn a peer's malformed field into a PROTOCOL error naming it.
import protobuf from 'protobufjs/minimal.js';
import { UNSAFE_TEXT, UNSAFE_TEXTS } from '../format.js';
import { LONE_SURROGATE } from './wire-limits.js';
import { ClawpeerError } from '../errors.js';
import { clawpeer } from './gen/clawpeer.js';
import { type EntryKind, type ListEntry, MAX_ENTRY_PATH_BYTES, MAX_ENTRY_MODE } from './message-types.js';

export const pb = clawpeer.v1;

export const UINT32_MAX = 0xffff_ffff;

export function invert<K extends string, V extends number>(table: Record<K, V>): ReadonlyMap<number, K> {
  return new Map((Object.entries(table) as [K, V][]).map(([k, v]) => [v, k]));
}
export const ENTRY_KIND_TO_WIRE: Record<EntryKind, clawpeer.v1.EntryKind> = {
  file: pb.EntryKind.ENTRY_KIND_FILE,
  dir: pb.EntryKind.ENTRY_KIND_DIR,
  symlink: pb.EntryKind.ENTRY_KIND_SYMLINK,
};
export const ENTRY_KIND_FROM_WIRE = invert(ENTRY_KIND_TO_WIRE);

/** The optional rateLimit field from its wire value (0 or absent: none). */
export function rateLimitFromWire(value: number | null | undefined): { rateLimit?: number } {
  return value === null || value === undefined || value === 0 ? {} : { rateLimit: value };
}

/** A rate limit is left out for none; present, it is a uint32 > 0 (0 on the wire means none). */
export function checkRateLimit(name: string, value: number | undefined): void {
  if (value === undefined) return;
  checkUint(name, value, UINT32_MAX);
  if (value === 0) throw new RangeError(`${name} must be > 0 (leave it out for no limit)`);
}

export function checkUint(name: string, value: number, max: number): void {
  if (!Number.isInteger(value) || value < 0 || value > max)
    throw new RangeError(`${name} must be an integer in 0..${max}, got ${value}`);
}

export function checkTextBytes(name: string, value: string): void {
  if (LONE_SURROGATE.test(value)) throw new RangeError(`${name} is not valid Unicode (unpaired surrogate)`);
  const bytes = protobuf.util.utf8.length(value);
  if (bytes > MAX_ENTRY_PATH_BYTES)
    throw new RangeError(`${name} is ${bytes} UTF-8 bytes, more than ${MAX_ENTRY_PATH_BYTES}`);
}

/** A peer's (or caller's) path quoted for an error message: escaped and cut to 200 characters. */
export function quote(text: string): string {
  return JSON.stringify(text.length <= 200 ? text : `${text.slice(0, 199)}…`);
}

/**
 * What is structurally wrong with an entry, or undefined. Shared by the encoder (RangeError:
 * our own bug) and the decoder (PROTOCOL: the peer's), so both enforce the same rules.
 */
/** What is wrong with an entry's name and metadata (a manifest's or a listing's), or undefined. */
export function entryMetaProblem(e: ListEntry): string | undefined {
  if (LONE_SURROGATE.test(e.path) || LONE_SURROGATE.test(e.linkTarget))
    return 'path or linkTarget is not valid Unicode (unpaired surrogate)';
  const pathBytes = protobuf.util.utf8.length(e.path);
  if (pathBytes === 0) return 'path is empty';
  if (pathBytes > MAX_ENTRY_PATH_BYTES) return `path is ${pathBytes} UTF-8 bytes, more than ${MAX_ENTRY_PATH_BYTES}`;
  const targetBytes = protobuf.util.utf8.length(e.linkTarget);
  if (targetBytes > MAX_ENTRY_PATH_BYTES)
    return `linkTarget is ${targetBytes} UTF-8 bytes, more than ${MAX_ENTRY_PATH_BYTES}`;
  if (!Number.isSafeInteger(e.size) || e.size < 0) return `size ${e.size} is not an integer in 0..2^53-1`;
  if (!Number.isInteger(e.mode) || e.mode < 0 || e.mode > MAX_ENTRY_MODE) return `mode ${e.mode} is not in 0..0o7777`;
  if (!Number.isSafeInteger(e.mtimeMs)) return `mtimeMs ${e.mtimeMs} is not an integer within +-(2^53-1)`;
  if (e.kind === 'symlink' && targetBytes === 0) return 'linkTarget is empty for a symlink';
  if (e.kind !== 'symlink' && targetBytes !== 0) return `linkTarget must be empty for a ${e.kind}`;
  return undefined;
}

export interface LongLike {
  readonly low: number;
  readonly high: number;
}

export function u64ToNumber(field: string, value: number | LongLike): number {
  if (typeof value === 'number') return value;
  const big = (BigInt(value.high >>> 0) << 32n) | BigInt(value.low >>> 0);
  if (big > BigInt(Number.MAX_SAFE_INTEGER)) throw new ClawpeerError('PROTOCOL', `${field} ${big} exceeds 2^53-1`);
  return Number(big);
}

function s64ToNumber(field: string, value: number | LongLike): number {
  if (typeof value === 'number') return value;
  const big = BigInt.asIntN(64, (BigInt(value.high >>> 0) << 32n) | BigInt(value.low >>> 0));
  if (big > BigInt(Number.MAX_SAFE_INTEGER) || big < -BigInt(Number.MAX_SAFE_INTEGER)) {
    throw new ClawpeerError('PROTOCOL', `${field} ${big} is outside +-(2^53-1)`);
  }
  return Number(big);
}

export function fixedBytes(field: string, value: Uint8Array | null | undefined, length: number): Uint8Array {
  const got = value?.length ?? 0;
  if (value === null || value === undefined || got !== length) {
    throw new ClawpeerError('PROTOCOL', `${field} must be ${length} bytes, got ${got}`);
  }
  return new Uint8Array(value); // a copy: decoded bytes are views into the frame buffer
}

export function wireEnum<K extends string>(
  field: string,
  value: number | null | undefined,
  table: ReadonlyMap<number, K>,
): K {
  const name = table.get(value ?? 0);
  if (name === undefined) {
    const what = (value ?? 0) === 0 ? 'unspecified (0)' : `unknown value ${value ?? 0}`;
    throw new ClawpeerError('PROTOCOL', `${field} is ${what}`);
  }
  return name;
}

export function wireText(field: string, value: string | null | undefined): string {
  const text = value ?? '';
  const bytes = protobuf.util.utf8.length(text);
  if (bytes > MAX_ENTRY_PATH_BYTES)
    throw new ClawpeerError('PROTOCOL', `${field} is ${bytes} UTF-8 bytes, more than ${MAX_ENTRY_PATH_BYTES}`);
  return text;
}

/** A listed path a peer sends for the user to read (refused, unreadable): no control or bidi characters. */
export function wirePathToShow(field: string, value: string | null | undefined): string {
  const text = wireText(field, value);
  if (UNSAFE_TEXT.test(text))
    throw new ClawpeerError('PROTOCOL', `${field} lists ${JSON.stringify(text)}: a control or bidi character`);
  return text;
}

/** What wirePathToShow refuses, refused before it is sent (RangeError), so what we encode decodes. */
export function checkPathToShow(field: string, value: string): void {
  checkTextBytes(field, value);
  if (UNSAFE_TEXT.test(value))
    throw new RangeError(`${field} lists ${JSON.stringify(value)}: a control or bidi character`);
}

/** Free text for a peer's user to read: control and bidi characters blanked (the same on both ends). */
export const textToShow = (text: string): string => text.replace(UNSAFE_TEXTS, ' ');

/**
 * What is wrong with a capped list and the count beside it (`field` lists, `field`Count counts
 * all), if anything: more than `cap` listed, or a count below the list's length. TransferDone's
 * deleted and refused paths and a Manifest's unreadable entries take this shape.
 */
export function listedCountProblem(
  field: string,
  list: readonly unknown[],
  count: number,
  cap: number,
): string | undefined {
  if (list.length > cap) return `${field} lists ${list.length} paths, more than ${cap}`;
  if (!Number.isSafeInteger(count) || count < list.length)
    return `${field}Count ${count} is less than the ${list.length} paths listed`;
  return undefined;
}

/** A copy: decoded bytes are views into the frame buffer. */
export function copyBytes(value: Uint8Array | null | undefined): Uint8Array {
  return value === null || value === undefined ? new Uint8Array(0) : new Uint8Array(value);
}

/** An entry's name and metadata fields from the wire (a manifest's or a listing's); `what` names its list. */
export function entryMetaFromWire(
  what: string,
  index: number,
  w: clawpeer.v1.ListEntry.$Properties | null | undefined,
): { owner: string; meta: ListEntry } {
  const path = w?.path ?? '';
  const owner = `${what}[${index}] ${quote(path)}`;
  if (w === null || w === undefined) throw new ClawpeerError('PROTOCOL', `${owner} is missing`);
  const meta: ListEntry = {
    path,
    kind: wireEnum(`${owner} kind`, w.kind, ENTRY_KIND_FROM_WIRE),
    size: u64ToNumber(`${owner} size`, w.size ?? 0),
    mode: w.mode ?? 0,
    mtimeMs: s64ToNumber(`${owner} mtimeMs`, w.mtimeMs ?? 0),
    linkTarget: w.linkTarget ?? '',
  };
  return { owner, meta };
}
