// Revisions: the immutable records a synced folder's history is made of, and their ids.
//
// Goals: one canonical binary encoding (fixed field order, explicit lengths, big-endian
// integers), so the same revision has the same bytes and therefore the same id on every peer;
// id = BLAKE3-256 of those bytes, which is what reconciliation exchanges; a decoder for records
// a peer sends that takes a maximum size and rejects anything non-canonical with a PROTOCOL
// error naming the field, so a peer cannot make two byte strings for one revision or smuggle an
// unsafe path. Non-goals: deciding which revision wins (conflict.ts), storage (store/revision-store.ts),
// framing (a record travels whole, length-delimited by the protocol, so a short buffer is a
// malformed record here, not "need more bytes").
//
// Encoding, format version 1 (integers big-endian):
//   off  bytes  field
//   0    1      format version = 1
//   1    1      kind: 0 file, 1 dir, 2 symlink
//   2    1      flags: bit 0 = deleted (tombstone); other bits must be 0
//   3    2      mode: permission bits (st_mode & 0o7777)
//   5    8      size: u64, bytes (file length; symlink target length; 0 for dirs and tombstones)
//   13   8      mtimeNs: i64, ns since the Unix epoch (signed: files can predate 1970)
//   21   1+n    contentRoot: u8 length (32 for a live file, else 0) | manifest root
//   ..   2+n    path: u16 length | UTF-8 (a normalised share path, as normalizeSharePath returns)
//   ..   1+n    origin: u8 length | node id (printable ASCII) of the node that made this revision
//   ..   2+n    linkTarget: u16 length | UTF-8 (live symlinks only, else empty)
//   ..          version vector (version-vector.ts): u16 count | count x (u8 len | id | u64 counter)
// Nothing may follow. Canonical-form rules enforced both ways: the fields a kind does not use
// are empty/zero, the path is already normalised, the vector is sorted without zero counters
// and counts the origin's edit (vector[origin] >= 1).

import { BLAKE3_OUT_BYTES, blake3, bytesEqual } from '../chunking/blake3.js';
import { ClawpeerError, isClawpeerError } from '../errors.js';
import { MAX_PATH_BYTES, normalizeSharePath } from '../transfer/paths.js';
import { checkNodeId, counterOf, encodedVectorLength, readVector, writeVector } from './version-vector.js';
import type { VersionVector } from './version-vector.js';

export type RevisionKind = 'file' | 'dir' | 'symlink';

export interface Revision {
  /** Normalised relative POSIX path inside the shared folder. */
  readonly path: string;
  readonly kind: RevisionKind;
  /** Manifest root (32 bytes) for a live file; empty for directories, symlinks and tombstones. */
  readonly contentRoot: Uint8Array;
  /** Bytes: file length, symlink target length (UTF-8); 0 for directories and tombstones. */
  readonly size: number;
  /** Permission bits (st_mode & 0o7777). */
  readonly mode: number;
  /** Modification time, ns since the epoch (for a tombstone: when the deletion was noticed). */
  readonly mtimeNs: bigint;
  /** A tombstone: the path was deleted. */
  readonly deleted: boolean;
  /** Node id of the node that made this revision. */
  readonly origin: string;
  readonly vector: VersionVector;
  /** Symlink target text for a live symlink; '' otherwise. */
  readonly linkTarget: string;
}

/** A revision with its id and canonical bytes (what the store keeps and peers exchange). */
export interface RevisionEntry {
  readonly id: Uint8Array;
  readonly revision: Revision;
  readonly encoded: Uint8Array;
}

export const REVISION_FORMAT_VERSION = 1;
/** Length of a revision id, bytes. */
export const REVISION_ID_LENGTH = BLAKE3_OUT_BYTES;
/** Longest symlink target recorded, bytes (Linux PATH_MAX). */
export const MAX_LINK_TARGET_BYTES = 4096;
/**
 * Hard ceiling on an encoded revision, bytes: 21 fixed + 33 root + 2+4096 path + 1+64 origin
 * + 2+4096 link + 2+1024x73 vector = ~83 KiB; 128 KiB leaves room without allowing abuse.
 */
export const MAX_REVISION_BYTES = 128 << 10;

const KIND_CODES: Readonly<Record<RevisionKind, number>> = { file: 0, dir: 1, symlink: 2 };
const KINDS: readonly RevisionKind[] = ['file', 'dir', 'symlink'];
const FLAG_DELETED = 0x01;
const MODE_MASK = 0o7777;
const FIXED_BYTES = 21;
const I64_MIN = -(1n << 63n);
const I64_MAX = (1n << 63n) - 1n;

const utf8Encoder = new TextEncoder();
// ignoreBOM: a leading U+FEFF is content, not a byte-order mark (else one record has two encodings).
const utf8Decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** What breaks the canonical-form rules in `rev`, or undefined when it is valid. */
export function checkRevision(rev: Revision): string | undefined {
  if (!Object.hasOwn(KIND_CODES, rev.kind)) return `unknown kind ${JSON.stringify(rev.kind)}`;
  let normalised: string | undefined;
  try {
    normalised = normalizeSharePath(rev.path);
  } catch (err) {
    if (!isClawpeerError(err)) throw err;
    return `path refused: ${err.message}`;
  }
  if (normalised !== rev.path)
    return `path ${JSON.stringify(rev.path)} is not in normal form (expected ${JSON.stringify(normalised)})`;
  if (!Number.isInteger(rev.mode) || rev.mode < 0 || rev.mode > MODE_MASK)
    return `mode ${rev.mode} is not permission bits (0..0o7777)`;
  if (!Number.isSafeInteger(rev.size) || rev.size < 0) return `size ${rev.size} is not an integer in [0, 2^53)`;
  if (rev.mtimeNs < I64_MIN || rev.mtimeNs > I64_MAX) return `mtimeNs ${rev.mtimeNs} does not fit in 64 bits`;
  const originProblem = checkNodeId(rev.origin);
  if (originProblem !== undefined) return `origin: ${originProblem}`;
  if (counterOf(rev.vector, rev.origin) < 1) return `version vector does not count the origin's edit (${rev.origin})`;
  const live = !rev.deleted;
  const wantsRoot = live && rev.kind === 'file';
  if (rev.contentRoot.length !== (wantsRoot ? BLAKE3_OUT_BYTES : 0)) {
    return wantsRoot
      ? `a file needs a ${BLAKE3_OUT_BYTES}-byte content root, got ${rev.contentRoot.length} bytes`
      : `a ${rev.deleted ? 'tombstone' : rev.kind} has no content root, got ${rev.contentRoot.length} bytes`;
  }
  if (live && rev.kind === 'symlink') {
    if (rev.linkTarget.length === 0) return 'a symlink needs a target';
    if (rev.linkTarget.includes('\0')) return 'symlink target contains NUL';
    const targetBytes = utf8Encoder.encode(rev.linkTarget).length;
    if (targetBytes > MAX_LINK_TARGET_BYTES) return `symlink target longer than ${MAX_LINK_TARGET_BYTES} bytes`;
    if (rev.size !== targetBytes)
      return `a symlink's size must be its target's length (${targetBytes}), got ${rev.size}`;
  } else if (rev.linkTarget.length !== 0) {
    return `a ${rev.deleted ? 'tombstone' : rev.kind} has no link target`;
  }
  if ((rev.deleted || rev.kind === 'dir') && rev.size !== 0)
    return `a ${rev.deleted ? 'tombstone' : 'directory'} has size 0, got ${rev.size}`;
  return undefined;
}

/** The canonical encoding. Throws TypeError for a revision that breaks the rules (a bug). */
export function encodeRevision(rev: Revision): Uint8Array {
  const problem = checkRevision(rev);
  if (problem !== undefined) throw new TypeError(`invalid revision of ${JSON.stringify(rev.path)}: ${problem}`);
  const path = utf8Encoder.encode(rev.path);
  const link = utf8Encoder.encode(rev.linkTarget);
  const length =
    FIXED_BYTES +
    1 +
    rev.contentRoot.length +
    2 +
    path.length +
    1 +
    rev.origin.length +
    2 +
    link.length +
    encodedVectorLength(rev.vector);
  const out = new Uint8Array(length);
  const view = new DataView(out.buffer);
  out[0] = REVISION_FORMAT_VERSION;
  out[1] = KIND_CODES[rev.kind];
  out[2] = rev.deleted ? FLAG_DELETED : 0;
  view.setUint16(3, rev.mode);
  view.setBigUint64(5, BigInt(rev.size));
  view.setBigInt64(13, rev.mtimeNs);
  let o = FIXED_BYTES;
  out[o++] = rev.contentRoot.length;
  out.set(rev.contentRoot, o);
  o += rev.contentRoot.length;
  view.setUint16(o, path.length);
  o += 2;
  out.set(path, o);
  o += path.length;
  out[o++] = rev.origin.length;
  for (let i = 0; i < rev.origin.length; i++) out[o++] = rev.origin.charCodeAt(i);
  view.setUint16(o, link.length);
  o += 2;
  out.set(link, o);
  o += link.length;
  o = writeVector(rev.vector, out, o);
  if (o !== length) throw new TypeError(`revision encoder wrote ${o} bytes, planned ${length}`);
  return out;
}

/** The id of an encoded revision: BLAKE3-256 of its canonical bytes. */
export function revisionIdOf(encoded: Uint8Array): Uint8Array {
  return blake3(encoded);
}

/**
 * Entries whose id this module computed from their encoded bytes (revisionEntry,
 * decodeRevisionWithId): a store putting one need not hash it again to check it (a first sync's
 * listener hashed each of 10,000 received records twice).
 */
const hashedEntries = new WeakSet<RevisionEntry>();

/** True when `entry` came from revisionEntry or decodeRevisionWithId: its id is the hash of its encoded bytes. */
export function isHashedEntry(entry: RevisionEntry): boolean {
  return hashedEntries.has(entry);
}

/** Encodes `rev` and computes its id. */
export function revisionEntry(rev: Revision): RevisionEntry {
  const encoded = encodeRevision(rev);
  const entry = { id: revisionIdOf(encoded), revision: rev, encoded };
  hashedEntries.add(entry);
  return entry;
}

function malformed(detail: string): ClawpeerError {
  return new ClawpeerError('PROTOCOL', `malformed revision record: ${detail}`);
}

/**
 * True when the record `bytes` (its first `length` bytes) is a live file with content `root`,
 * read from its header alone: a hot check that allocates nothing. False for any other record,
 * a malformed one included (decodeRevision says what is wrong with it).
 */
export function isLiveFileWithRoot(bytes: Uint8Array, length: number, root: Uint8Array): boolean {
  if (root.length !== BLAKE3_OUT_BYTES || length < FIXED_BYTES + 1 + BLAKE3_OUT_BYTES) return false;
  if (bytes[0] !== REVISION_FORMAT_VERSION || bytes[1] !== KIND_CODES.file || bytes[2] !== 0) return false;
  if (bytes[FIXED_BYTES] !== BLAKE3_OUT_BYTES) return false;
  for (let i = 0; i < BLAKE3_OUT_BYTES; i++) if (bytes[FIXED_BYTES + 1 + i] !== root[i]) return false;
  return true;
}

/**
 * Decodes one whole revision record (a peer's or our store's). Throws ClawpeerError PROTOCOL
 * naming what is wrong: longer than `maxBytes`, truncated, an unknown version, kind or flag,
 * invalid UTF-8, a path that is not normalised or not allowed, trailing bytes, or any
 * canonical-form rule broken (so re-encoding always gives back the same bytes).
 */
export function decodeRevision(bytes: Uint8Array, maxBytes: number = MAX_REVISION_BYTES): Revision {
  if (bytes.length > maxBytes) throw malformed(`${bytes.length} bytes, more than the ${maxBytes}-byte limit`);
  if (bytes.length < FIXED_BYTES)
    throw malformed(`${bytes.length} bytes, shorter than the ${FIXED_BYTES}-byte fixed header`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const version = bytes[0]!;
  if (version !== REVISION_FORMAT_VERSION)
    throw malformed(`format version ${version}, this node reads ${REVISION_FORMAT_VERSION}`);
  const kind = KINDS[bytes[1]!];
  if (kind === undefined) throw malformed(`unknown kind code ${bytes[1]!}`);
  const flags = bytes[2]!;
  if ((flags & ~FLAG_DELETED) !== 0) throw malformed(`unknown flag bits 0x${flags.toString(16)}`);
  const mode = view.getUint16(3);
  const size64 = view.getBigUint64(5);
  if (size64 > BigInt(Number.MAX_SAFE_INTEGER)) throw malformed(`size ${size64} exceeds 2^53 - 1`);
  const mtimeNs = view.getBigInt64(13);

  let o = FIXED_BYTES;
  const need = (n: number, field: string): void => {
    if (o + n > bytes.length)
      throw malformed(`truncated in ${field} (needs ${n} bytes at offset ${o}, record has ${bytes.length})`);
  };
  const text = (start: number, end: number, field: string): string => {
    try {
      return utf8Decoder.decode(bytes.subarray(start, end));
    } catch (cause) {
      throw new ClawpeerError('PROTOCOL', `malformed revision record: ${field} is not valid UTF-8`, { cause });
    }
  };

  need(1, 'content root length');
  const rootLen = bytes[o++]!;
  if (rootLen !== 0 && rootLen !== BLAKE3_OUT_BYTES)
    throw malformed(`content root is ${rootLen} bytes (0 or ${BLAKE3_OUT_BYTES})`);
  need(rootLen, 'content root');
  const contentRoot = bytes.slice(o, o + rootLen);
  o += rootLen;

  need(2, 'path length');
  const pathLen = view.getUint16(o);
  o += 2;
  if (pathLen > MAX_PATH_BYTES) throw malformed(`path is ${pathLen} bytes, more than ${MAX_PATH_BYTES}`);
  need(pathLen, 'path');
  const path = text(o, o + pathLen, 'path');
  o += pathLen;

  need(1, 'origin length');
  const originLen = bytes[o++]!;
  need(originLen, 'origin');
  let origin = '';
  for (let i = 0; i < originLen; i++) origin += String.fromCharCode(bytes[o + i]!);
  o += originLen;

  need(2, 'link target length');
  const linkLen = view.getUint16(o);
  o += 2;
  if (linkLen > MAX_LINK_TARGET_BYTES)
    throw malformed(`link target is ${linkLen} bytes, more than ${MAX_LINK_TARGET_BYTES}`);
  need(linkLen, 'link target');
  const linkTarget = text(o, o + linkLen, 'link target');
  o += linkLen;

  const { vector, end } = readVector(bytes, o, 'revision record');
  if (end !== bytes.length) throw malformed(`${bytes.length - end} trailing bytes after the version vector`);

  const rev: Revision = {
    path,
    kind,
    contentRoot,
    size: Number(size64),
    mode,
    mtimeNs,
    deleted: (flags & FLAG_DELETED) !== 0,
    origin,
    vector,
    linkTarget,
  };
  const problem = checkRevision(rev);
  if (problem !== undefined) throw malformed(`${JSON.stringify(path)}: ${problem}`);
  return rev;
}

/** Decodes a record and checks it has the id a peer announced for it (HASH_MISMATCH if not). */
export function decodeRevisionWithId(
  bytes: Uint8Array,
  expectedId: Uint8Array,
  maxBytes: number = MAX_REVISION_BYTES,
): RevisionEntry {
  const revision = decodeRevision(bytes, maxBytes);
  const id = revisionIdOf(bytes);
  if (!bytesEqual(id, expectedId)) {
    throw new ClawpeerError(
      'HASH_MISMATCH',
      `revision record of ${JSON.stringify(revision.path)} does not hash to the id it was sent for`,
    );
  }
  const entry = { id, revision, encoded: new Uint8Array(bytes) }; // a copy: not a view pinning the whole message
  hashedEntries.add(entry);
  return entry;
}

/**
 * True when two revisions leave the same thing at the path: both tombstones, or both live with
 * the same kind and the same content (manifest root for files, target for symlinks; any two
 * directories). Mode, mtime, origin and vector are metadata, not content.
 */
export function sameContent(a: Revision, b: Revision): boolean {
  if (a.deleted || b.deleted) return a.deleted && b.deleted;
  if (a.kind !== b.kind) return false;
  switch (a.kind) {
    case 'file':
      return bytesEqual(a.contentRoot, b.contentRoot);
    case 'symlink':
      return a.linkTarget === b.linkTarget;
    case 'dir':
      return true;
    default: {
      const never: never = a.kind;
      throw new TypeError(`unknown kind ${String(never)}`);
    }
  }
}

const NS_PER_MS = 1_000_000n;

/** The whole ms a time in ns lies in (floor: BigInt division truncates toward zero, a ms late before 1970). */
export function floorMs(ns: bigint): number {
  const q = ns / NS_PER_MS;
  return Number(ns < 0n && ns % NS_PER_MS !== 0n ? q - 1n : q);
}

/** How far below a ms a time set through seconds as a double lands: libuv keeps whole µs. */
const DOUBLE_SECONDS_SLACK_NS = 1_000n;

/**
 * A revision's mtime in whole ms for utimes: the ms it lies in, so the next scan on the other
 * node reads the same ms and second back (the publisher adds half a µs, see toSeconds). Only a
 * time within a µs below a ms goes up to that ms: it is one set as X ms through a double (Node's
 * utimes with a Date), which landed a µs short. Rounding every time to the nearest ms put
 * X.9996 s at X+1 s on the other node, a whole second off.
 */
export function mtimeMsOf(rev: Pick<Revision, 'mtimeNs'>): number {
  return floorMs(rev.mtimeNs + DOUBLE_SECONDS_SLACK_NS);
}

/**
 * True when a file's mtime on disk (ns) is the one `rev` records: the very time (this node's
 * own scan recorded it), or the ms a sync sets for it (mtimeMsOf). The scanner records a new
 * revision for anything else (folder-sync/folder-scanner.ts), so both must count, or a received file would
 * come back as a change of its own at the next scan.
 */
export function isMtimeOf(diskMtimeNs: bigint, rev: Pick<Revision, 'mtimeNs'>): boolean {
  return diskMtimeNs === rev.mtimeNs || floorMs(diskMtimeNs) === mtimeMsOf(rev);
}
