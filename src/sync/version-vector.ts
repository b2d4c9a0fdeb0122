// Version vectors: which edits of one path a revision has seen, so two peers can tell "newer"
// from "concurrent" without trusting each other's clocks.
//
// Goals: an immutable value (nodeId -> counter) with the four-way comparison sync needs
// (equal / before / after / concurrent), merge (element-wise max) and increment; one canonical
// byte encoding (entries sorted by node id, zero counters omitted) so equal vectors encode to
// equal bytes and a revision's id is well defined; a decoder with hard bounds for vectors a peer
// sends. Non-goals: pruning entries of nodes that left (a vector grows by one entry per node that
// ever edited the path, which for a folder shared between paired machines stays small), clocks.
//
// Representation: a ReadonlyMap whose iteration order is ascending node id; counters are
// integers in [1, 2^53 - 1] (a missing node means 0). Node ids are 1..64 bytes of printable
// ASCII (0x21..0x7e): real ids are base58 (52 characters, "12D3KooW..."), and ASCII makes
// JavaScript string order equal to byte order, which the canonical encoding sorts by.
//
// Encoding (integers big-endian):
//   u16 entryCount | entryCount x ( u8 idBytes | id (ASCII) | u64 counter )
// with ids strictly ascending and every counter >= 1.

import { ClawpeerError } from '../errors.js';

export type VersionVector = ReadonlyMap<string, number>;
export type VectorOrder = 'equal' | 'before' | 'after' | 'concurrent';

/** Longest node id accepted, bytes (a real one is 52). */
export const MAX_NODE_ID_BYTES = 64;
/** Most entries a vector may have (the encoding's u16 count allows more; this bounds a peer). */
export const MAX_VECTOR_ENTRIES = 1024;
/** Largest counter: counters are JS numbers, exact up to 2^53 - 1. */
export const MAX_VECTOR_COUNTER = Number.MAX_SAFE_INTEGER;

const ENTRY_FIXED_BYTES = 1 + 8;

/** The empty vector (a path nobody has edited). */
export const EMPTY_VECTOR: VersionVector = new Map<string, number>();

/** Why `nodeId` is not a valid node id, or undefined. */
export function checkNodeId(nodeId: string): string | undefined {
  if (nodeId.length === 0) return 'node id is empty';
  if (nodeId.length > MAX_NODE_ID_BYTES) return `node id is longer than ${MAX_NODE_ID_BYTES} bytes`;
  for (let i = 0; i < nodeId.length; i++) {
    const c = nodeId.charCodeAt(i);
    if (c < 0x21 || c > 0x7e) return `node id ${JSON.stringify(nodeId)} has a character outside printable ASCII`;
  }
  return undefined;
}

function assertNodeId(nodeId: string): void {
  const problem = checkNodeId(nodeId);
  if (problem !== undefined) throw new TypeError(problem);
}

function assertCounter(nodeId: string, counter: number): void {
  if (!Number.isSafeInteger(counter) || counter < 0) {
    throw new TypeError(`version vector counter for ${nodeId} must be an integer in [0, 2^53), got ${String(counter)}`);
  }
}

function byId(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Builds the canonical map (sorted, zeros dropped) from trusted, already validated entries. */
function canonical(entries: Iterable<readonly [string, number]>): VersionVector {
  const list = [...entries].filter(([, c]) => c > 0).sort((x, y) => byId(x[0], y[0]));
  return new Map(list);
}

/**
 * A vector from entries or a plain object. Validates ids and counters (TypeError: a programming
 * bug, peers' vectors go through decodeVector); zero counters are dropped; a repeated id throws.
 */
export function vectorFrom(
  entries: Iterable<readonly [string, number]> | Readonly<Record<string, number>>,
): VersionVector {
  const list: (readonly [string, number])[] = Symbol.iterator in entries ? [...entries] : Object.entries(entries);
  const seen = new Set<string>();
  for (const [id, counter] of list) {
    assertNodeId(id);
    assertCounter(id, counter);
    if (seen.has(id)) throw new TypeError(`node id ${id} appears twice in a version vector`);
    seen.add(id);
  }
  return canonical(list);
}

/** The counter of `nodeId` in `v` (0 when absent). */
export function counterOf(v: VersionVector, nodeId: string): number {
  return v.get(nodeId) ?? 0;
}

/**
 * How `a` relates to `b`: 'before' when every counter of a is <= b's and one is smaller (b has
 * seen everything a has, and more), 'after' for the reverse, 'equal', else 'concurrent'.
 */
export function compareVectors(a: VersionVector, b: VersionVector): VectorOrder {
  let aBigger = false;
  let bBigger = false;
  for (const [id, ca] of a) {
    const cb = b.get(id) ?? 0;
    if (ca > cb) aBigger = true;
    else if (ca < cb) bBigger = true;
  }
  for (const [id, cb] of b) {
    if (!a.has(id) && cb > 0) bBigger = true;
  }
  if (aBigger && bBigger) return 'concurrent';
  if (aBigger) return 'after';
  if (bBigger) return 'before';
  return 'equal';
}

/** Element-wise maximum: the smallest vector that has seen both. */
export function mergeVectors(a: VersionVector, b: VersionVector): VersionVector {
  const out = new Map(a);
  for (const [id, cb] of b) out.set(id, Math.max(out.get(id) ?? 0, cb));
  return canonical(out);
}

/**
 * `v` with `nodeId`'s counter raised to max(current + 1, atLeast): the vector of an edit made by
 * `nodeId` after seeing `v`. `atLeast` lets a node use one counter across all its paths (the
 * revision store passes its persisted local counter + 1), so a counter is never reused even
 * after the history of a path was collected.
 */
export function incrementVector(v: VersionVector, nodeId: string, atLeast = 0): VersionVector {
  assertNodeId(nodeId);
  const next = Math.max(counterOf(v, nodeId) + 1, atLeast);
  if (next > MAX_VECTOR_COUNTER) throw new RangeError(`version vector counter for ${nodeId} would pass 2^53 - 1`);
  const out = new Map(v);
  out.set(nodeId, next);
  return canonical(out);
}

/** True when both vectors hold the same counters. */
export function vectorsEqual(a: VersionVector, b: VersionVector): boolean {
  return compareVectors(a, b) === 'equal';
}

/** Bytes `encodeVector(v)` produces. */
export function encodedVectorLength(v: VersionVector): number {
  let n = 2;
  for (const [id, counter] of v) if (counter > 0) n += ENTRY_FIXED_BYTES + id.length;
  return n;
}

/** Writes the canonical encoding of `v` at `out[offset..]`; returns the offset after it. */
export function writeVector(v: VersionVector, out: Uint8Array, offset: number): number {
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  const entries = [...v].filter(([, c]) => c > 0).sort((x, y) => byId(x[0], y[0]));
  if (entries.length > MAX_VECTOR_ENTRIES)
    throw new RangeError(`version vector has more than ${MAX_VECTOR_ENTRIES} entries`);
  let o = offset;
  view.setUint16(o, entries.length);
  o += 2;
  for (const [id, counter] of entries) {
    assertNodeId(id);
    assertCounter(id, counter);
    out[o++] = id.length;
    for (let i = 0; i < id.length; i++) out[o++] = id.charCodeAt(i);
    view.setBigUint64(o, BigInt(counter));
    o += 8;
  }
  return o;
}

/** The canonical encoding of `v` (entries sorted by node id, zero counters omitted). */
export function encodeVector(v: VersionVector): Uint8Array {
  const out = new Uint8Array(encodedVectorLength(v));
  writeVector(v, out, 0);
  return out;
}

function protocolError(what: string, detail: string): ClawpeerError {
  return new ClawpeerError('PROTOCOL', `malformed ${what}: ${detail}`);
}

/**
 * Reads a canonical vector at `bytes[offset..]` that must lie entirely within `bytes` (the
 * caller has the whole record). Throws ClawpeerError PROTOCOL naming the problem: truncated,
 * too many entries, an invalid or unsorted id, a zero or oversized counter. `what` names the
 * enclosing record in messages.
 */
export function readVector(
  bytes: Uint8Array,
  offset: number,
  what = 'version vector',
): { vector: VersionVector; end: number } {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let o = offset;
  if (o + 2 > bytes.length) throw protocolError(what, 'version vector truncated before its entry count');
  const count = view.getUint16(o);
  o += 2;
  if (count > MAX_VECTOR_ENTRIES)
    throw protocolError(what, `version vector has ${count} entries, more than ${MAX_VECTOR_ENTRIES}`);
  const out = new Map<string, number>();
  let previous: string | undefined;
  for (let k = 0; k < count; k++) {
    if (o + 1 > bytes.length) throw protocolError(what, `version vector truncated in entry ${k}`);
    const idLen = bytes[o++]!;
    if (o + idLen + 8 > bytes.length) throw protocolError(what, `version vector truncated in entry ${k}`);
    let id = '';
    for (let i = 0; i < idLen; i++) id += String.fromCharCode(bytes[o + i]!);
    o += idLen;
    const problem = checkNodeId(id);
    if (problem !== undefined) throw protocolError(what, `version vector entry ${k}: ${problem}`);
    if (previous !== undefined && !(previous < id)) {
      throw protocolError(what, `version vector entries not in strictly ascending node id order at entry ${k}`);
    }
    const counter = view.getBigUint64(o);
    o += 8;
    if (counter === 0n) throw protocolError(what, `version vector entry ${k} (${id}) has counter 0`);
    if (counter > BigInt(MAX_VECTOR_COUNTER))
      throw protocolError(what, `version vector entry ${k} (${id}) counter exceeds 2^53 - 1`);
    out.set(id, Number(counter));
    previous = id;
  }
  return { vector: out, end: o };
}

/** Decodes a whole buffer holding exactly one canonical vector; PROTOCOL error otherwise. */
export function decodeVector(bytes: Uint8Array): VersionVector {
  const { vector, end } = readVector(bytes, 0);
  if (end !== bytes.length) throw protocolError('version vector', `${bytes.length - end} trailing bytes`);
  return vector;
}

/** Human-readable form for logs and `clawpeer log`: `{a:3, b:1}`. */
export function formatVector(v: VersionVector): string {
  return `{${[...v].map(([id, c]) => `${id}:${c}`).join(', ')}}`;
}
