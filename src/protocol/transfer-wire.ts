// Encode/decode of the transfer messages (envelope fields 16-21: TransferRequest, TransferAccept,
// Manifest, Want, DataOpen, TransferDone).
//
// They carry whole manifests, so they get structural checks here (chunk id/length counts, root
// length, sizes that add up, bounded path lengths; the count of manifest entries is checked
// before protobufjs allocates them, in messages.ts). Path confinement and normalisation are
// src/transfer/paths.ts's job, not this module's.
import protobuf from 'protobufjs/minimal.js';
import { MAX_EXCLUDE_PATTERNS, type FilterRule } from './wire-limits.js';
import { ClawpeerError } from '../errors.js';
import { CHUNK_ID_BYTES } from './frame-codec.js';
import { clawpeer } from './gen/clawpeer.js';
import {
  type ManifestEntry,
  type TransferRequestMessage,
  type TransferControlMessage,
  MAX_MANIFEST_ENTRIES_PER_MESSAGE,
} from './message-types.js';
import {
  pb,
  UINT32_MAX,
  invert,
  ENTRY_KIND_TO_WIRE,
  checkRateLimit,
  rateLimitFromWire,
  checkUint,
  checkPathToShow,
  checkTextBytes,
  textToShow,
  quote,
  entryMetaProblem,
  type LongLike,
  u64ToNumber,
  wireEnum,
  wireText,
  copyBytes,
  entryMetaFromWire,
} from './wire-helpers.js';
import { bitmapProblem } from './want-bitmap.js';
import { unreadableFromWire, unreadableToWire } from './unreadable-list.js';
import {
  backedUpFromWire,
  createdFromWire,
  createdProblem,
  deletedFromWire,
  deletedProblem,
  keptFromWire,
  overLimitFromWire,
  refusedFromWire,
  refusedProblem,
  publishedFromWire,
  publishedProblem,
  updatedFromWire,
  updatedProblem,
} from './transfer-done-lists.js';

export { listedEntryBytes } from './transfer-done-lists.js';

const DIRECTION_TO_WIRE: Record<TransferRequestMessage['direction'], clawpeer.v1.TransferDirection> = {
  push: pb.TransferDirection.TRANSFER_DIRECTION_PUSH,
  pull: pb.TransferDirection.TRANSFER_DIRECTION_PULL,
};
const DIRECTION_FROM_WIRE = invert(DIRECTION_TO_WIRE);
const EXISTING_TO_WIRE: Record<NonNullable<TransferRequestMessage['existing']>, clawpeer.v1.ExistingFiles> = {
  keep: pb.ExistingFiles.EXISTING_FILES_KEEP,
  update: pb.ExistingFiles.EXISTING_FILES_UPDATE,
};
const EXISTING_FROM_WIRE = invert(EXISTING_TO_WIRE);
const COPY_LINKS_TO_WIRE: Record<NonNullable<TransferRequestMessage['copyLinks']>, clawpeer.v1.CopyLinks> = {
  all: pb.CopyLinks.COPY_LINKS_ALL,
  unsafe: pb.CopyLinks.COPY_LINKS_UNSAFE,
};
const COPY_LINKS_FROM_WIRE = invert(COPY_LINKS_TO_WIRE);

/** Most paths a pull's files-from list may name. */
export const MAX_FILES_FROM_PATHS = 100_000;
/** Most UTF-8 bytes of paths a files-from list may carry: it travels in one control frame. */
export const MAX_FILES_FROM_BYTES = 8 << 20;

/** The UTF-8 bytes a files-from list's paths take. */
export function fileListBytes(paths: readonly string[]): number {
  let n = 0;
  for (const p of paths) n += protobuf.util.utf8.length(p);
  return n;
}

/** A TransferRequest's files-from list (absent when empty); PROTOCOL for too many paths. */
function filesFromWire(paths: readonly string[] | null | undefined): { filesFrom?: string[] } {
  if (paths === null || paths === undefined || paths.length === 0) return {};
  if (paths.length > MAX_FILES_FROM_PATHS)
    throw new ClawpeerError(
      'PROTOCOL',
      `TransferRequest.filesFrom has ${paths.length} paths, more than ${MAX_FILES_FROM_PATHS}`,
    );
  return { filesFrom: paths.map((p) => wireText('TransferRequest.filesFrom', p)) };
}

/** An optional size bound of a TransferRequest from its wire value (0 or absent: none). */
function sizeBoundFromWire(
  field: 'minSize' | 'maxSize',
  value: number | LongLike | null | undefined,
): { minSize?: number } | { maxSize?: number } {
  const n = value === null || value === undefined ? 0 : u64ToNumber(`TransferRequest.${field}`, value);
  return n === 0 ? {} : { [field]: n };
}

function manifestEntryProblem(e: ManifestEntry): string | undefined {
  const meta = entryMetaProblem(e);
  if (meta !== undefined) return meta;
  const chunks = e.chunkLengths.length;
  if (e.kind !== 'file') {
    if (e.root.length !== 0) return `root must be empty for a ${e.kind}, got ${e.root.length} bytes`;
    if (e.chunkIds.length !== 0 || chunks !== 0)
      return `a ${e.kind} carries no chunks, got ${e.chunkIds.length} id bytes and ${chunks} lengths`;
    return undefined;
  }
  if (e.root.length !== CHUNK_ID_BYTES) return `root must be ${CHUNK_ID_BYTES} bytes for a file, got ${e.root.length}`;
  if (e.chunkIds.length % CHUNK_ID_BYTES !== 0)
    return `chunkIds is ${e.chunkIds.length} bytes, not a multiple of ${CHUNK_ID_BYTES}`;
  if (e.chunkIds.length / CHUNK_ID_BYTES !== chunks) {
    return `chunkIds holds ${e.chunkIds.length / CHUNK_ID_BYTES} ids but chunkLengths holds ${chunks} lengths`;
  }
  let sum = 0;
  for (let i = 0; i < chunks; i++) {
    const length = e.chunkLengths[i] ?? 0;
    if (!Number.isInteger(length) || length < 1 || length > UINT32_MAX)
      return `chunk ${i} length ${length} is not in 1..2^32-1`;
    sum += length;
  }
  if (sum !== e.size) return `chunk lengths add up to ${sum} bytes but size is ${e.size}`;
  return undefined;
}

export function manifestEntryToWire(e: ManifestEntry): clawpeer.v1.ManifestEntry.$Properties {
  const kind = ENTRY_KIND_TO_WIRE[e.kind];
  if (kind === undefined) throw new RangeError(`ManifestEntry ${quote(e.path)}: unknown kind ${String(e.kind)}`);
  const problem = manifestEntryProblem(e);
  if (problem !== undefined) throw new RangeError(`ManifestEntry ${quote(e.path)}: ${problem}`);
  return {
    path: e.path,
    kind,
    size: e.size,
    mode: e.mode,
    mtimeMs: e.mtimeMs,
    linkTarget: e.linkTarget,
    root: e.root,
    chunkIds: e.chunkIds,
    chunkLengths: e.chunkLengths as number[], // read only by the encoder
  };
}

export function transferToWire(message: TransferControlMessage): clawpeer.v1.Control.$Properties {
  checkUint(`${message.type} transferId`, message.transferId, UINT32_MAX);
  switch (message.type) {
    case 'transfer-request': {
      const direction = DIRECTION_TO_WIRE[message.direction];
      if (direction === undefined)
        throw new RangeError(`TransferRequest.direction must be push or pull, got ${String(message.direction)}`);
      checkTextBytes('TransferRequest.share', message.share);
      checkTextBytes('TransferRequest.path', message.path);
      checkUint('TransferRequest.streams', message.streams, UINT32_MAX);
      checkUint('TransferRequest.window', message.window, UINT32_MAX);
      const exclude = message.exclude ?? [];
      const filter = message.filter ?? [];
      if (exclude.length > 0 && filter.length > 0)
        throw new RangeError('TransferRequest carries both exclude and filter: send one');
      if (exclude.length > MAX_EXCLUDE_PATTERNS)
        throw new RangeError(
          `TransferRequest.exclude has ${exclude.length} patterns, more than ${MAX_EXCLUDE_PATTERNS}`,
        );
      if (filter.length > MAX_EXCLUDE_PATTERNS)
        throw new RangeError(`TransferRequest.filter has ${filter.length} rules, more than ${MAX_EXCLUDE_PATTERNS}`);
      for (const pattern of exclude) checkTextBytes('TransferRequest.exclude', pattern);
      for (const rule of filter) checkTextBytes('TransferRequest.filter', rule.pattern);
      if (message.backup !== undefined) {
        checkTextBytes('TransferRequest.backup.suffix', message.backup.suffix);
        checkTextBytes('TransferRequest.backup.dir', message.backup.dir);
      }
      checkRateLimit('TransferRequest.rateLimit', message.rateLimit);
      if (message.maxDelete !== undefined)
        checkUint('TransferRequest.maxDelete', message.maxDelete, Number.MAX_SAFE_INTEGER);
      if (message.minSize !== undefined) checkUint('TransferRequest.minSize', message.minSize, Number.MAX_SAFE_INTEGER);
      if (message.maxSize !== undefined) checkUint('TransferRequest.maxSize', message.maxSize, Number.MAX_SAFE_INTEGER);
      if (message.filesFrom !== undefined) {
        if (message.filesFrom.length > MAX_FILES_FROM_PATHS)
          throw new RangeError(
            `TransferRequest.filesFrom has ${message.filesFrom.length} paths, more than ${MAX_FILES_FROM_PATHS}`,
          );
        if (fileListBytes(message.filesFrom) > MAX_FILES_FROM_BYTES)
          throw new RangeError(`TransferRequest.filesFrom takes more than ${MAX_FILES_FROM_BYTES} bytes`);
        for (const p of message.filesFrom) checkTextBytes('TransferRequest.filesFrom', p);
      }
      return {
        transferRequest: {
          transferId: message.transferId,
          direction,
          share: message.share,
          path: message.path,
          force: message.force,
          streams: message.streams,
          window: message.window,
          exclude: [...exclude],
          filter: filter.map((r) => ({ pattern: r.pattern, include: r.include })),
          existing:
            message.existing === undefined
              ? pb.ExistingFiles.EXISTING_FILES_REFUSE
              : EXISTING_TO_WIRE[message.existing],
          ...(message.backup === undefined
            ? {}
            : { backup: { suffix: message.backup.suffix, dir: message.backup.dir } }),
          ...(message.maxDelete === undefined ? {} : { maxDelete: { paths: message.maxDelete } }),
          itemize: message.itemize ?? false,
          minSize: message.minSize ?? 0,
          maxSize: message.maxSize ?? 0,
          filesFrom: [...(message.filesFrom ?? [])],
          copyLinks:
            message.copyLinks === undefined ? pb.CopyLinks.COPY_LINKS_NONE : COPY_LINKS_TO_WIRE[message.copyLinks],
          rateLimit: message.rateLimit ?? 0,
          dryRun: message.dryRun ?? false,
          delete: message.delete ?? false,
          noFsync: message.noFsync ?? false,
        },
      };
    }
    case 'transfer-accept':
      checkUint('TransferAccept.streams', message.streams, UINT32_MAX);
      checkUint('TransferAccept.window', message.window, UINT32_MAX);
      return { transferAccept: { transferId: message.transferId, streams: message.streams, window: message.window } };
    case 'manifest':
      if (message.entries.length > MAX_MANIFEST_ENTRIES_PER_MESSAGE) {
        throw new RangeError(
          `Manifest has ${message.entries.length} entries, more than ${MAX_MANIFEST_ENTRIES_PER_MESSAGE}: use splitManifest`,
        );
      }
      return {
        manifest: {
          transferId: message.transferId,
          entries: message.entries.map(manifestEntryToWire),
          last: message.last,
          ...unreadableToWire(message),
        },
      };
    case 'want': {
      checkUint('Want.uniqueChunks', message.uniqueChunks, UINT32_MAX);
      const problem = bitmapProblem(message.lacking, message.uniqueChunks);
      if (problem !== undefined) throw new RangeError(`Want.lacking: ${problem}`);
      return {
        want: {
          transferId: message.transferId,
          lacking: message.lacking,
          uniqueChunks: message.uniqueChunks,
          ...(message.publish === undefined ? {} : { publish: message.publish }),
          ...(message.create === undefined ? {} : { create: message.create }),
          ...(message.touchTime === undefined ? {} : { touchTime: message.touchTime }),
          ...(message.touchPerms === undefined ? {} : { touchPerms: message.touchPerms }),
        },
      };
    }
    case 'data-open':
      checkUint('DataOpen.streamId', message.streamId, UINT32_MAX);
      return { dataOpen: { transferId: message.transferId, streamId: message.streamId } };
    case 'transfer-done': {
      checkUint('TransferDone.files', message.files, Number.MAX_SAFE_INTEGER);
      checkUint('TransferDone.bytes', message.bytes, Number.MAX_SAFE_INTEGER);
      checkUint('TransferDone.chunksReceived', message.chunksReceived, Number.MAX_SAFE_INTEGER);
      checkUint('TransferDone.chunksSkipped', message.chunksSkipped, Number.MAX_SAFE_INTEGER);
      checkUint('TransferDone.filesKept', message.filesKept ?? 0, Number.MAX_SAFE_INTEGER);
      checkUint('TransferDone.filesBackedUp', message.filesBackedUp ?? 0, Number.MAX_SAFE_INTEGER);
      checkUint('TransferDone.deletesOverLimit', message.deletesOverLimit ?? 0, Number.MAX_SAFE_INTEGER);
      const publishedWrong = publishedProblem(message.published ?? [], message.files);
      if (publishedWrong !== undefined) throw new RangeError(publishedWrong);
      for (const f of message.published ?? []) checkPathToShow('TransferDone.published', f.path);
      const createdWrong = createdProblem(message.created ?? []);
      if (createdWrong !== undefined) throw new RangeError(createdWrong);
      for (const e of message.created ?? []) {
        checkPathToShow('TransferDone.created', e.path);
        if (e.kind === 'symlink') checkTextBytes('TransferDone.created target', e.target);
      }
      const updatedWrong = updatedProblem(message.updated ?? []);
      if (updatedWrong !== undefined) throw new RangeError(updatedWrong);
      for (const u of message.updated ?? []) checkPathToShow('TransferDone.updated', u.path);
      const deletedWrong = deletedProblem(message.deleted ?? [], message.deletedCount ?? 0);
      if (deletedWrong !== undefined) throw new RangeError(deletedWrong);
      for (const p of message.deleted ?? []) checkPathToShow('TransferDone.deleted', p);
      const refusedWrong = refusedProblem(message.refused ?? [], message.refusedCount ?? 0);
      if (refusedWrong !== undefined) throw new RangeError(refusedWrong);
      for (const r of message.refused ?? []) checkPathToShow('TransferDone.refused', r.path);
      return {
        transferDone: {
          transferId: message.transferId,
          files: message.files,
          bytes: message.bytes,
          chunksReceived: message.chunksReceived,
          chunksSkipped: message.chunksSkipped,
          deleted: [...(message.deleted ?? [])],
          deletedCount: message.deletedCount ?? 0,
          filesKept: message.filesKept ?? 0,
          filesBackedUp: message.filesBackedUp ?? 0,
          deletesOverLimit: message.deletesOverLimit ?? 0,
          published: (message.published ?? []).map((f) => ({ path: f.path, replaced: f.replaced })),
          created: (message.created ?? []).map((e) =>
            e.kind === 'dir'
              ? { path: e.path, kind: ENTRY_KIND_TO_WIRE.dir }
              : {
                  path: e.path,
                  kind: ENTRY_KIND_TO_WIRE.symlink,
                  // Free text, blanked as the decoder does (transfer-done-lists.ts createdFromWire).
                  linkTarget: textToShow(e.target),
                  replaced: e.replaced,
                },
          ),
          updated: (message.updated ?? []).map((u) => ({ path: u.path, time: u.time, perms: u.perms })),
          refused: (message.refused ?? []).map((r) => ({ path: r.path, reason: r.reason })),
          refusedCount: message.refusedCount ?? 0,
        },
      };
    }
    default: {
      const unreachable: never = message;
      throw new TypeError(`unknown transfer message ${JSON.stringify(unreachable)}`);
    }
  }
}

/** A request's exclude patterns or filter rules (at most one of them, each within the limits). */
function patternsFromWire(r: clawpeer.v1.TransferRequest.$Properties): { exclude?: string[]; filter?: FilterRule[] } {
  const exclude = r.exclude ?? [];
  const filter = r.filter ?? [];
  if (exclude.length > 0 && filter.length > 0)
    throw new ClawpeerError('PROTOCOL', 'TransferRequest carries both exclude patterns and filter rules');
  if (exclude.length > MAX_EXCLUDE_PATTERNS)
    throw new ClawpeerError(
      'PROTOCOL',
      `TransferRequest.exclude has ${exclude.length} patterns, more than ${MAX_EXCLUDE_PATTERNS}`,
    );
  if (filter.length > MAX_EXCLUDE_PATTERNS)
    throw new ClawpeerError(
      'PROTOCOL',
      `TransferRequest.filter has ${filter.length} rules, more than ${MAX_EXCLUDE_PATTERNS}`,
    );
  if (exclude.length > 0) return { exclude: exclude.map((p) => wireText('TransferRequest.exclude', p)) };
  if (filter.length > 0)
    return {
      filter: filter.map((f) => ({
        pattern: wireText('TransferRequest.filter', f.pattern),
        include: f.include === true,
      })),
    };
  return {};
}

function manifestEntryFromWire(
  index: number,
  w: clawpeer.v1.ManifestEntry.$Properties | null | undefined,
): ManifestEntry {
  const { owner, meta } = entryMetaFromWire('Manifest.entries', index, w);
  const entry: ManifestEntry = {
    ...meta,
    root: copyBytes(w?.root),
    chunkIds: copyBytes(w?.chunkIds),
    chunkLengths: w?.chunkLengths ?? [],
  };
  const problem = manifestEntryProblem(entry);
  if (problem !== undefined) throw new ClawpeerError('PROTOCOL', `${owner}: ${problem}`);
  return entry;
}

export function transferFromWire(control: clawpeer.v1.Control): TransferControlMessage | undefined {
  switch (control.body) {
    case 'transferRequest': {
      const r = control.transferRequest;
      if (r === null || r === undefined) return undefined;
      return {
        type: 'transfer-request',
        transferId: r.transferId ?? 0,
        direction: wireEnum('TransferRequest.direction', r.direction, DIRECTION_FROM_WIRE),
        share: wireText('TransferRequest.share', r.share),
        path: wireText('TransferRequest.path', r.path),
        force: r.force ?? false,
        streams: r.streams ?? 0,
        window: r.window ?? 0,
        ...patternsFromWire(r),
        ...((r.existing ?? 0) === pb.ExistingFiles.EXISTING_FILES_REFUSE
          ? {}
          : { existing: wireEnum('TransferRequest.existing', r.existing, EXISTING_FROM_WIRE) }),
        ...(r.backup === null || r.backup === undefined
          ? {}
          : {
              backup: {
                suffix: wireText('TransferRequest.backup.suffix', r.backup.suffix),
                dir: wireText('TransferRequest.backup.dir', r.backup.dir),
              },
            }),
        ...(r.maxDelete === null || r.maxDelete === undefined
          ? {}
          : { maxDelete: u64ToNumber('TransferRequest.maxDelete', r.maxDelete.paths ?? 0) }),
        ...(r.itemize === true ? { itemize: true } : {}),
        ...sizeBoundFromWire('minSize', r.minSize),
        ...sizeBoundFromWire('maxSize', r.maxSize),
        ...filesFromWire(r.filesFrom),
        ...((r.copyLinks ?? 0) === pb.CopyLinks.COPY_LINKS_NONE
          ? {}
          : { copyLinks: wireEnum('TransferRequest.copyLinks', r.copyLinks, COPY_LINKS_FROM_WIRE) }),
        ...rateLimitFromWire(r.rateLimit),
        ...(r.dryRun === true ? { dryRun: true } : {}),
        ...(r.delete === true ? { delete: true } : {}),
        ...(r.noFsync === true ? { noFsync: true } : {}),
      };
    }
    case 'transferAccept': {
      const a = control.transferAccept;
      if (a === null || a === undefined) return undefined;
      return { type: 'transfer-accept', transferId: a.transferId ?? 0, streams: a.streams ?? 0, window: a.window ?? 0 };
    }
    case 'manifest': {
      const m = control.manifest;
      if (m === null || m === undefined) return undefined;
      const raw = m.entries ?? [];
      if (raw.length > MAX_MANIFEST_ENTRIES_PER_MESSAGE) {
        throw new ClawpeerError(
          'PROTOCOL',
          `Manifest has ${raw.length} entries, more than ${MAX_MANIFEST_ENTRIES_PER_MESSAGE}`,
        );
      }
      return {
        type: 'manifest',
        transferId: m.transferId ?? 0,
        entries: raw.map((e, i) => manifestEntryFromWire(i, e)),
        last: m.last ?? false,
        ...unreadableFromWire(
          m.unreadable ?? [],
          u64ToNumber('Manifest.unreadableCount', m.unreadableCount ?? 0),
          m.last ?? false,
        ),
      };
    }
    case 'want': {
      const w = control.want;
      if (w === null || w === undefined) return undefined;
      const uniqueChunks = w.uniqueChunks ?? 0;
      const lacking = copyBytes(w.lacking);
      const problem = bitmapProblem(lacking, uniqueChunks);
      if (problem !== undefined) throw new ClawpeerError('PROTOCOL', `Want.lacking: ${problem}`);
      // Its length is checked by the client, which knows how many files it announced.
      const optional = (bytes: Uint8Array | null | undefined): Uint8Array | undefined =>
        bytes === null || bytes === undefined || bytes.length === 0 ? undefined : copyBytes(bytes);
      const publish = optional(w.publish);
      const create = optional(w.create);
      const touchTime = optional(w.touchTime);
      const touchPerms = optional(w.touchPerms);
      return {
        type: 'want',
        transferId: w.transferId ?? 0,
        lacking,
        uniqueChunks,
        ...(publish === undefined ? {} : { publish }),
        ...(create === undefined ? {} : { create }),
        ...(touchTime === undefined ? {} : { touchTime }),
        ...(touchPerms === undefined ? {} : { touchPerms }),
      };
    }
    case 'dataOpen': {
      const d = control.dataOpen;
      if (d === null || d === undefined) return undefined;
      return { type: 'data-open', transferId: d.transferId ?? 0, streamId: d.streamId ?? 0 };
    }
    case 'transferDone': {
      const d = control.transferDone;
      if (d === null || d === undefined) return undefined;
      return {
        type: 'transfer-done',
        transferId: d.transferId ?? 0,
        files: u64ToNumber('TransferDone.files', d.files ?? 0),
        bytes: u64ToNumber('TransferDone.bytes', d.bytes ?? 0),
        chunksReceived: u64ToNumber('TransferDone.chunksReceived', d.chunksReceived ?? 0),
        chunksSkipped: u64ToNumber('TransferDone.chunksSkipped', d.chunksSkipped ?? 0),
        ...deletedFromWire(d.deleted ?? [], u64ToNumber('TransferDone.deletedCount', d.deletedCount ?? 0)),
        ...keptFromWire(u64ToNumber('TransferDone.filesKept', d.filesKept ?? 0)),
        ...backedUpFromWire(u64ToNumber('TransferDone.filesBackedUp', d.filesBackedUp ?? 0)),
        ...overLimitFromWire(u64ToNumber('TransferDone.deletesOverLimit', d.deletesOverLimit ?? 0)),
        ...publishedFromWire(d.published ?? [], u64ToNumber('TransferDone.files', d.files ?? 0)),
        ...createdFromWire(d.created ?? []),
        ...updatedFromWire(d.updated ?? []),
        ...refusedFromWire(d.refused ?? [], u64ToNumber('TransferDone.refusedCount', d.refusedCount ?? 0)),
      };
    }
    default:
      return undefined;
  }
}
