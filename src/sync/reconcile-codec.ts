// Binary encoding of the revision-set reconciliation messages (reconcile.ts speaks them).
//
// Goals: compact (a cell costs 32 + 8 + 1..3 bytes), canonical (one encoding per message, so
// byte counts are exact and a test can pin bytes), self-delimiting (a stream decoder returns
// "need more bytes" as a value), and strict: every count is checked against a maximum and the
// bytes actually present before anything is allocated; malformed input is ClawpeerError
// PROTOCOL naming what was wrong. Non-goals: framing against the transport, encryption,
// compression (ids and cells are incompressible).
//
// Frame:     varint(body length) body          (body length <= maxMessageBytes, default 1 MiB)
// Body:      u8 tag, then the fields below. varint = unsigned LEB128, minimal, <= 2^53 - 1.
//   1 hello      u8 version | root[32] | varint count              initiator -> responder
//   2 equal      (empty)                                            responder -> initiator
//   3 different  root[32] | varint count | varint cells              responder -> initiator
//   4 symbols    varint start | varint n | n x cell                 responder -> initiator
//                cell = idXor[32] | checksum u64 little-endian | zigzag varint count
//   5 more       varint start | varint n                            initiator -> responder
//   6 send-ids   (empty)                                            initiator -> responder
//   7 ids        u8 list | u8 last (0/1) | varint n | n x id[32]    either way
//                list: 0 = the sender's full set, 1 = ids the initiator lacks,
//                      2 = ids the responder lacks

import { ClawpeerError } from '../errors.js';
import { REVISION_ID_BYTES } from './merkle-root.js';
import { allocateSymbols, type CodedSymbols } from './riblt.js';

/** Version of the cell format and index sequence (riblt.ts). Bump on any change to either. */
export const RECONCILE_VERSION = 1;
/** Default and hard upper bound of one encoded message, bytes (1 MiB). */
export const MAX_RECONCILE_MESSAGE_BYTES = 1 << 20;
/** Cells per `symbols` message: 16,384 x at most 50 bytes = 800 KiB, under 1 MiB. */
export const MAX_SYMBOLS_PER_MESSAGE = 16_384;
/** Ids per `ids` message: 32,000 x 32 bytes = 1,024,000 bytes, under 1 MiB with its header. */
export const MAX_IDS_PER_MESSAGE = 32_000;
const ROOT_BYTES = 32;
const CELL_FIXED_BYTES = REVISION_ID_BYTES + 8; // idXor + checksum; the count adds 1..8
const MAX_VARINT_BYTES = 8; // 8 x 7 bits = 56 bits >= 2^53

export type IdListKind = 'full' | 'initiator-lacks' | 'responder-lacks';
const LIST_CODES: Record<IdListKind, number> = { full: 0, 'initiator-lacks': 1, 'responder-lacks': 2 };
const LIST_KINDS: readonly IdListKind[] = ['full', 'initiator-lacks', 'responder-lacks'];

export type ReconcileMessage =
  /** Opens a reconciliation: the initiator's root and set size. */
  | { readonly type: 'hello'; readonly version: number; readonly root: Uint8Array; readonly count: number }
  /** The roots match: nothing to do. */
  | { readonly type: 'equal' }
  /**
   * The roots differ: the responder's root and size. `cells` symbols (cells [0, cells)) follow,
   * or, when `cells` is 0, the responder's full id list.
   */
  | { readonly type: 'different'; readonly root: Uint8Array; readonly count: number; readonly cells: number }
  /** Consecutive RIBLT cells of the responder's set. */
  | { readonly type: 'symbols'; readonly symbols: CodedSymbols }
  /** Asks for cells [start, start + cells). */
  | { readonly type: 'more'; readonly start: number; readonly cells: number }
  /** Asks for the responder's full id list (the fallback). */
  | { readonly type: 'send-ids' }
  /** A chunk of an id list; `ids` is packed (32 bytes each); `last` ends the list. */
  | { readonly type: 'ids'; readonly list: IdListKind; readonly ids: Uint8Array; readonly last: boolean };

export type ReconcileMessageType = ReconcileMessage['type'];

const TAGS: Record<ReconcileMessageType, number> = {
  hello: 1,
  equal: 2,
  different: 3,
  symbols: 4,
  more: 5,
  'send-ids': 6,
  ids: 7,
};

export type ReconcileDecodeResult =
  | { readonly kind: 'message'; readonly message: ReconcileMessage; readonly bytesRead: number }
  | { readonly kind: 'need-more' };

function varintLength(value: number): number {
  let n = 1;
  while (value >= 0x80) {
    value = Math.floor(value / 128);
    n++;
  }
  return n;
}

function zigzag(value: number): number {
  return value >= 0 ? value * 2 : -value * 2 - 1;
}

function unzigzag(value: number): number {
  return value % 2 === 0 ? value / 2 : -(value + 1) / 2;
}

function bodyLength(msg: ReconcileMessage): number {
  switch (msg.type) {
    case 'hello':
      return 1 + 1 + ROOT_BYTES + varintLength(msg.count);
    case 'equal':
    case 'send-ids':
      return 1;
    case 'different':
      return 1 + ROOT_BYTES + varintLength(msg.count) + varintLength(msg.cells);
    case 'symbols': {
      const s = msg.symbols;
      let n = 1 + varintLength(s.start) + varintLength(s.length) + s.length * CELL_FIXED_BYTES;
      for (let c = 0; c < s.length; c++) n += varintLength(zigzag(s.count[c]!));
      return n;
    }
    case 'more':
      return 1 + varintLength(msg.start) + varintLength(msg.cells);
    case 'ids':
      return 1 + 2 + varintLength(msg.ids.length / REVISION_ID_BYTES) + msg.ids.length;
    default: {
      const never: never = msg;
      throw new TypeError(`unknown reconcile message ${JSON.stringify(never)}`);
    }
  }
}

/** Encoded size of `msg` in bytes, length prefix included (what `encode` would return). */
export function encodedLength(msg: ReconcileMessage): number {
  const body = bodyLength(msg);
  return varintLength(body) + body;
}

class Writer {
  readonly bytes: Uint8Array;
  readonly view: DataView;
  pos = 0;
  constructor(length: number) {
    this.bytes = new Uint8Array(length);
    this.view = new DataView(this.bytes.buffer);
  }
  u8(v: number): void {
    this.bytes[this.pos++] = v;
  }
  varint(v: number): void {
    while (v >= 0x80) {
      this.bytes[this.pos++] = (v % 128) | 0x80;
      v = Math.floor(v / 128);
    }
    this.bytes[this.pos++] = v;
  }
  raw(b: Uint8Array): void {
    this.bytes.set(b, this.pos);
    this.pos += b.length;
  }
}

function checkUint(name: string, v: number): void {
  if (!Number.isSafeInteger(v) || v < 0) throw new RangeError(`${name} must be a non-negative safe integer, got ${v}`);
}

/**
 * Encodes `msg` with its length prefix. A message over `maxMessageBytes` or with out-of-range
 * fields is a programming error (reconcile.ts splits batches and lists), hence RangeError.
 */
export function encodeReconcileMessage(
  msg: ReconcileMessage,
  maxMessageBytes = MAX_RECONCILE_MESSAGE_BYTES,
): Uint8Array {
  const body = bodyLength(msg);
  if (body > maxMessageBytes)
    throw new RangeError(`${msg.type} message of ${body} bytes exceeds the maximum ${maxMessageBytes}`);
  const w = new Writer(varintLength(body) + body);
  w.varint(body);
  w.u8(TAGS[msg.type]);
  switch (msg.type) {
    case 'hello':
      checkUint('count', msg.count);
      if (msg.root.length !== ROOT_BYTES) throw new RangeError('root must be 32 bytes');
      w.u8(msg.version);
      w.raw(msg.root);
      w.varint(msg.count);
      break;
    case 'equal':
    case 'send-ids':
      break;
    case 'different':
      checkUint('count', msg.count);
      checkUint('cells', msg.cells);
      if (msg.root.length !== ROOT_BYTES) throw new RangeError('root must be 32 bytes');
      w.raw(msg.root);
      w.varint(msg.count);
      w.varint(msg.cells);
      break;
    case 'symbols': {
      const s = msg.symbols;
      checkUint('start', s.start);
      if (s.length > MAX_SYMBOLS_PER_MESSAGE)
        throw new RangeError(`${s.length} cells exceed ${MAX_SYMBOLS_PER_MESSAGE} per message`);
      w.varint(s.start);
      w.varint(s.length);
      const xorBytes = new Uint8Array(s.idXor.buffer, s.idXor.byteOffset, s.length * REVISION_ID_BYTES);
      for (let c = 0; c < s.length; c++) {
        w.raw(xorBytes.subarray(c * REVISION_ID_BYTES, (c + 1) * REVISION_ID_BYTES));
        w.view.setUint32(w.pos, s.checksum[c * 2]!, true);
        w.view.setUint32(w.pos + 4, s.checksum[c * 2 + 1]!, true);
        w.pos += 8;
        w.varint(zigzag(s.count[c]!));
      }
      break;
    }
    case 'more':
      checkUint('start', msg.start);
      checkUint('cells', msg.cells);
      w.varint(msg.start);
      w.varint(msg.cells);
      break;
    case 'ids':
      if (msg.ids.length % REVISION_ID_BYTES !== 0) throw new RangeError('ids must be packed 32-byte ids');
      if (msg.ids.length / REVISION_ID_BYTES > MAX_IDS_PER_MESSAGE)
        throw new RangeError(`more than ${MAX_IDS_PER_MESSAGE} ids in one message`);
      w.u8(LIST_CODES[msg.list]);
      w.u8(msg.last ? 1 : 0);
      w.varint(msg.ids.length / REVISION_ID_BYTES);
      w.raw(msg.ids);
      break;
    default: {
      const never: never = msg;
      throw new TypeError(`unknown reconcile message ${JSON.stringify(never)}`);
    }
  }
  return w.bytes;
}

function malformed(what: string): ClawpeerError {
  return new ClawpeerError('PROTOCOL', `malformed reconcile message: ${what}`);
}

/** Reads a minimal LEB128 varint; `undefined` if the input ends inside it. */
function readVarint(
  bytes: Uint8Array,
  pos: number,
  end: number,
  field: string,
): { value: number; next: number } | undefined {
  let value = 0;
  let scale = 1;
  for (let i = 0; i < MAX_VARINT_BYTES; i++) {
    if (pos + i >= end) return undefined;
    const b = bytes[pos + i]!;
    value += (b & 0x7f) * scale;
    if ((b & 0x80) === 0) {
      if (b === 0 && i > 0) throw malformed(`${field}: varint has a redundant trailing zero byte`);
      if (!Number.isSafeInteger(value)) throw malformed(`${field}: varint ${value} exceeds 2^53 - 1`);
      return { value, next: pos + i + 1 };
    }
    scale *= 128;
  }
  throw malformed(`${field}: varint longer than ${MAX_VARINT_BYTES} bytes`);
}

class Reader {
  readonly view: DataView;
  constructor(
    readonly bytes: Uint8Array,
    public pos: number,
    readonly end: number,
    readonly type: string,
  ) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  get remaining(): number {
    return this.end - this.pos;
  }
  need(n: number, field: string): void {
    if (this.remaining < n)
      throw malformed(`${this.type}: truncated ${field} (needs ${n} bytes, ${this.remaining} left)`);
  }
  u8(field: string): number {
    this.need(1, field);
    return this.bytes[this.pos++]!;
  }
  varint(field: string): number {
    const r = readVarint(this.bytes, this.pos, this.end, `${this.type}.${field}`);
    if (r === undefined) throw malformed(`${this.type}: truncated ${field}`);
    this.pos = r.next;
    return r.value;
  }
  raw(n: number, field: string): Uint8Array {
    this.need(n, field);
    const out = this.bytes.slice(this.pos, this.pos + n); // a copy: the caller's buffer is reused
    this.pos += n;
    return out;
  }
}

function decodeBody(r: Reader, tag: number): ReconcileMessage {
  switch (tag) {
    case TAGS.hello: {
      const version = r.u8('version');
      const root = r.raw(ROOT_BYTES, 'root');
      return { type: 'hello', version, root, count: r.varint('count') };
    }
    case TAGS.equal:
      return { type: 'equal' };
    case TAGS.different: {
      const root = r.raw(ROOT_BYTES, 'root');
      const count = r.varint('count');
      return { type: 'different', root, count, cells: r.varint('cells') };
    }
    case TAGS.symbols: {
      const start = r.varint('start');
      const n = r.varint('cell count');
      if (n > MAX_SYMBOLS_PER_MESSAGE)
        throw malformed(`symbols: ${n} cells exceed the maximum ${MAX_SYMBOLS_PER_MESSAGE}`);
      if (n * (CELL_FIXED_BYTES + 1) > r.remaining)
        throw malformed(`symbols: ${n} cells cannot fit in ${r.remaining} bytes`);
      if (start + n > Number.MAX_SAFE_INTEGER) throw malformed('symbols: start + count overflows');
      const s = allocateSymbols(start, n);
      const xorBytes = new Uint8Array(s.idXor.buffer);
      for (let c = 0; c < n; c++) {
        r.need(CELL_FIXED_BYTES, `cell ${c}`);
        xorBytes.set(r.bytes.subarray(r.pos, r.pos + REVISION_ID_BYTES), c * REVISION_ID_BYTES);
        s.checksum[c * 2] = r.view.getUint32(r.pos + REVISION_ID_BYTES, true);
        s.checksum[c * 2 + 1] = r.view.getUint32(r.pos + REVISION_ID_BYTES + 4, true);
        r.pos += CELL_FIXED_BYTES;
        s.count[c] = unzigzag(r.varint(`cell ${c} count`));
      }
      return { type: 'symbols', symbols: s };
    }
    case TAGS.more: {
      const start = r.varint('start');
      return { type: 'more', start, cells: r.varint('cells') };
    }
    case TAGS['send-ids']:
      return { type: 'send-ids' };
    case TAGS.ids: {
      const code = r.u8('list');
      const list = LIST_KINDS[code];
      if (list === undefined) throw malformed(`ids: unknown list kind ${code}`);
      const last = r.u8('last');
      if (last > 1) throw malformed(`ids: last flag must be 0 or 1, got ${last}`);
      const n = r.varint('id count');
      if (n > MAX_IDS_PER_MESSAGE) throw malformed(`ids: ${n} ids exceed the maximum ${MAX_IDS_PER_MESSAGE}`);
      return { type: 'ids', list, last: last === 1, ids: r.raw(n * REVISION_ID_BYTES, 'ids') };
    }
    default:
      throw malformed(`unknown message tag ${tag}`);
  }
}

/**
 * Decodes one message from the start of `input`. Returns need-more while the frame is
 * incomplete; throws ClawpeerError PROTOCOL for a frame over `maxMessageBytes`, an unknown tag,
 * a field or count out of range, or a body whose length does not match its contents.
 * The decoded message does not alias `input`.
 */
export function decodeReconcileMessage(
  input: Uint8Array,
  maxMessageBytes = MAX_RECONCILE_MESSAGE_BYTES,
): ReconcileDecodeResult {
  const prefix = readVarint(input, 0, input.length, 'length prefix');
  if (prefix === undefined) return { kind: 'need-more' };
  const bodyLen = prefix.value;
  if (bodyLen > maxMessageBytes) throw malformed(`length ${bodyLen} exceeds the maximum ${maxMessageBytes} bytes`);
  if (bodyLen === 0) throw malformed('empty body');
  const end = prefix.next + bodyLen;
  if (input.length < end) return { kind: 'need-more' };
  const tag = input[prefix.next]!;
  const type = Object.entries(TAGS).find(([, t]) => t === tag)?.[0] ?? `tag ${tag}`;
  const r = new Reader(input, prefix.next + 1, end, type);
  const message = decodeBody(r, tag);
  if (r.pos !== end) throw malformed(`${type}: ${end - r.pos} trailing bytes`);
  return { kind: 'message', message, bytesRead: end };
}

/** Decodes a SyncReconcile payload: exactly one reconciliation message, nothing after it. */
export function decodeReconcilePayload(payload: Uint8Array): ReconcileMessage {
  const decoded = decodeReconcileMessage(payload, MAX_RECONCILE_MESSAGE_BYTES);
  if (decoded.kind === 'need-more')
    throw new ClawpeerError('PROTOCOL', `reconciliation payload of ${payload.length} bytes is truncated`);
  if (decoded.bytesRead !== payload.length)
    throw new ClawpeerError(
      'PROTOCOL',
      `reconciliation payload has ${payload.length - decoded.bytesRead} bytes after its message`,
    );
  return decoded.message;
}
