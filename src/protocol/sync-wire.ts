// Encode/decode of the sync messages (envelope fields 48-53). They carry opaque reconciliation
// payloads and revision records, bounded here by size and count; their contents are checked by
// src/sync/ decoders.
import protobuf from 'protobufjs/minimal.js';
import { LONE_SURROGATE } from './wire-limits.js';
import { ClawpeerError } from '../errors.js';
import { CHUNK_ID_BYTES } from './frame-codec.js';
import { clawpeer } from './gen/clawpeer.js';
import {
  type SyncModeName,
  type SyncFetchItem,
  type SyncControlMessage,
  MAX_SYNC_RECONCILE_BYTES,
  MAX_SYNC_RECORD_BYTES,
  MAX_SYNC_ITEMS_PER_MESSAGE,
  MAX_ENTRY_PATH_BYTES,
  MAX_NO_SPACE_PATHS_LISTED,
  type SyncNoSpace,
} from './message-types.js';
import {
  pb,
  UINT32_MAX,
  invert,
  checkRateLimit,
  rateLimitFromWire,
  checkUint,
  checkTextBytes,
  quote,
  wireEnum,
  wireText,
  copyBytes,
  checkPathToShow,
  u64ToNumber,
  wirePathToShow,
} from './wire-helpers.js';

const SYNC_MODE_TO_WIRE: Record<SyncModeName, clawpeer.v1.SyncMode> = {
  'two-way': pb.SyncMode.SYNC_MODE_TWO_WAY,
  'send-only': pb.SyncMode.SYNC_MODE_SEND_ONLY,
  'receive-only': pb.SyncMode.SYNC_MODE_RECEIVE_ONLY,
};
const SYNC_MODE_FROM_WIRE = invert(SYNC_MODE_TO_WIRE);

function checkBlob(name: string, value: Uint8Array, min: number, max: number): void {
  if (value.length < min || value.length > max)
    throw new RangeError(`${name} is ${value.length} bytes, expected ${min}..${max}`);
}

export function syncToWire(message: SyncControlMessage): clawpeer.v1.Control.$Properties {
  checkUint(`${message.type} transferId`, message.transferId, UINT32_MAX);
  switch (message.type) {
    case 'sync-request': {
      const mode = SYNC_MODE_TO_WIRE[message.mode];
      if (mode === undefined)
        throw new RangeError(
          `SyncRequest.mode must be two-way, send-only or receive-only, got ${String(message.mode)}`,
        );
      checkTextBytes('SyncRequest.share', message.share);
      checkBlob('SyncRequest.reconcile', message.reconcile, 0, MAX_SYNC_RECONCILE_BYTES);
      checkRateLimit('SyncRequest.rateLimit', message.rateLimit);
      return {
        syncRequest: {
          transferId: message.transferId,
          share: message.share,
          mode,
          reconcile: message.reconcile,
          rateLimit: message.rateLimit ?? 0,
          dryRun: message.dryRun ?? false,
          noFsync: message.noFsync ?? false,
          fetchOnly: message.fetchOnly ?? false,
          byFolderService: message.byFolderService ?? false,
          peerHeads: message.peerHeads ?? false,
        },
      };
    }
    case 'sync-accept':
      return {
        syncAccept: {
          transferId: message.transferId,
          keptFolder: message.keptFolder ?? false,
          peerHeads: message.peerHeads ?? false,
        },
      };
    case 'sync-reconcile':
      checkBlob('SyncReconcile.payload', message.payload, 1, MAX_SYNC_RECONCILE_BYTES);
      return { syncReconcile: { transferId: message.transferId, payload: message.payload } };
    case 'sync-revisions':
      if (message.records.length > MAX_SYNC_ITEMS_PER_MESSAGE)
        throw new RangeError(
          `SyncRevisions has ${message.records.length} records, more than ${MAX_SYNC_ITEMS_PER_MESSAGE}`,
        );
      message.records.forEach((r, i) => checkBlob(`SyncRevisions.records[${i}]`, r, 1, MAX_SYNC_RECORD_BYTES));
      if ((message.pruned?.length ?? 0) > MAX_SYNC_ITEMS_PER_MESSAGE)
        throw new RangeError(
          `SyncRevisions has ${message.pruned?.length} pruned ids, more than ${MAX_SYNC_ITEMS_PER_MESSAGE}`,
        );
      message.pruned?.forEach((id, i) => checkBlob(`SyncRevisions.pruned[${i}]`, id, CHUNK_ID_BYTES, CHUNK_ID_BYTES));
      return {
        syncRevisions: {
          transferId: message.transferId,
          records: message.records as Uint8Array[],
          last: message.last,
          ...(message.pruned === undefined || message.pruned.length === 0
            ? {}
            : { pruned: message.pruned as Uint8Array[] }),
        },
      };
    case 'sync-fetch':
      checkUint('SyncFetch.fetchId', message.fetchId, UINT32_MAX);
      if (message.items.length > MAX_SYNC_ITEMS_PER_MESSAGE)
        throw new RangeError(`SyncFetch has ${message.items.length} items, more than ${MAX_SYNC_ITEMS_PER_MESSAGE}`);
      return {
        syncFetch: {
          transferId: message.transferId,
          fetchId: message.fetchId,
          items: message.items.map((item, i) => {
            const problem = fetchItemProblem(item);
            if (problem !== undefined) throw new RangeError(`SyncFetch.items[${i}]: ${problem}`);
            return { path: item.path, root: item.root };
          }),
          last: message.last,
        },
      };
    case 'sync-done':
      return {
        syncDone: {
          transferId: message.transferId,
          ...(message.noSpace === undefined ? {} : { noSpace: noSpaceToWire(message.noSpace) }),
        },
      };
    default: {
      const unreachable: never = message;
      throw new TypeError(`unknown sync message ${JSON.stringify(unreachable)}`);
    }
  }
}

/** What is structurally wrong with a fetch item, or undefined (shared by encoder and decoder). */
function fetchItemProblem(item: SyncFetchItem): string | undefined {
  if (LONE_SURROGATE.test(item.path)) return 'path is not valid Unicode (unpaired surrogate)';
  const pathBytes = protobuf.util.utf8.length(item.path);
  if (pathBytes === 0) return 'path is empty';
  if (pathBytes > MAX_ENTRY_PATH_BYTES) return `path is ${pathBytes} UTF-8 bytes, more than ${MAX_ENTRY_PATH_BYTES}`;
  if (item.root.length !== CHUNK_ID_BYTES) return `root must be ${CHUNK_ID_BYTES} bytes, got ${item.root.length}`;
  return undefined;
}

function blobFromWire(field: string, value: Uint8Array | null | undefined, min: number, max: number): Uint8Array {
  const got = value?.length ?? 0;
  if (got < min || got > max) throw new ClawpeerError('PROTOCOL', `${field} is ${got} bytes, expected ${min}..${max}`);
  return copyBytes(value);
}

export function syncFromWire(control: clawpeer.v1.Control): SyncControlMessage | undefined {
  switch (control.body) {
    case 'syncRequest': {
      const r = control.syncRequest;
      if (r === null || r === undefined) return undefined;
      return {
        type: 'sync-request',
        transferId: r.transferId ?? 0,
        share: wireText('SyncRequest.share', r.share),
        mode: wireEnum('SyncRequest.mode', r.mode, SYNC_MODE_FROM_WIRE),
        reconcile: blobFromWire('SyncRequest.reconcile', r.reconcile, 0, MAX_SYNC_RECONCILE_BYTES),
        ...rateLimitFromWire(r.rateLimit),
        ...(r.dryRun === true ? { dryRun: true } : {}),
        ...(r.noFsync === true ? { noFsync: true } : {}),
        ...(r.fetchOnly === true ? { fetchOnly: true } : {}),
        ...(r.byFolderService === true ? { byFolderService: true } : {}),
        ...(r.peerHeads === true ? { peerHeads: true } : {}),
      };
    }
    case 'syncAccept': {
      const a = control.syncAccept;
      if (a === null || a === undefined) return undefined;
      return {
        type: 'sync-accept',
        transferId: a.transferId ?? 0,
        ...(a.keptFolder === true ? { keptFolder: true } : {}),
        ...(a.peerHeads === true ? { peerHeads: true } : {}),
      };
    }
    case 'syncReconcile': {
      const r = control.syncReconcile;
      if (r === null || r === undefined) return undefined;
      return {
        type: 'sync-reconcile',
        transferId: r.transferId ?? 0,
        payload: blobFromWire('SyncReconcile.payload', r.payload, 1, MAX_SYNC_RECONCILE_BYTES),
      };
    }
    case 'syncRevisions': {
      const r = control.syncRevisions;
      if (r === null || r === undefined) return undefined;
      const raw = r.records ?? [];
      if (raw.length > MAX_SYNC_ITEMS_PER_MESSAGE)
        throw new ClawpeerError(
          'PROTOCOL',
          `SyncRevisions has ${raw.length} records, more than ${MAX_SYNC_ITEMS_PER_MESSAGE}`,
        );
      const pruned = r.pruned ?? [];
      if (pruned.length > MAX_SYNC_ITEMS_PER_MESSAGE)
        throw new ClawpeerError(
          'PROTOCOL',
          `SyncRevisions has ${pruned.length} pruned ids, more than ${MAX_SYNC_ITEMS_PER_MESSAGE}`,
        );
      return {
        type: 'sync-revisions',
        transferId: r.transferId ?? 0,
        records: raw.map((rec, i) => blobFromWire(`SyncRevisions.records[${i}]`, rec, 1, MAX_SYNC_RECORD_BYTES)),
        last: r.last ?? false,
        ...(pruned.length === 0
          ? {}
          : {
              pruned: pruned.map((id, i) =>
                blobFromWire(`SyncRevisions.pruned[${i}]`, id, CHUNK_ID_BYTES, CHUNK_ID_BYTES),
              ),
            }),
      };
    }
    case 'syncFetch': {
      const f = control.syncFetch;
      if (f === null || f === undefined) return undefined;
      const raw = f.items ?? [];
      if (raw.length > MAX_SYNC_ITEMS_PER_MESSAGE)
        throw new ClawpeerError(
          'PROTOCOL',
          `SyncFetch has ${raw.length} items, more than ${MAX_SYNC_ITEMS_PER_MESSAGE}`,
        );
      const items = raw.map((w, i): SyncFetchItem => {
        const item = { path: wireText(`SyncFetch.items[${i}].path`, w.path), root: copyBytes(w.root) };
        const problem = fetchItemProblem(item);
        if (problem !== undefined)
          throw new ClawpeerError('PROTOCOL', `SyncFetch.items[${i}] ${quote(item.path)}: ${problem}`);
        return item;
      });
      return {
        type: 'sync-fetch',
        transferId: f.transferId ?? 0,
        fetchId: f.fetchId ?? 0,
        items,
        last: f.last ?? false,
      };
    }
    case 'syncDone': {
      const d = control.syncDone;
      if (d === null || d === undefined) return undefined;
      const noSpace = d.noSpace === null || d.noSpace === undefined ? undefined : noSpaceFromWire(d.noSpace);
      return { type: 'sync-done', transferId: d.transferId ?? 0, ...(noSpace === undefined ? {} : { noSpace }) };
    }
    default:
      return undefined;
  }
}

/** SyncDone's no-space report; RangeError when it lists more paths than the cap or one unfit to show. */
function noSpaceToWire(n: SyncNoSpace): clawpeer.v1.SyncNoSpace.$Properties {
  if (n.paths.length > MAX_NO_SPACE_PATHS_LISTED)
    throw new RangeError(`SyncDone.noSpace lists ${n.paths.length} paths, more than ${MAX_NO_SPACE_PATHS_LISTED}`);
  for (const [field, v] of [
    ['files', n.files],
    ['needBytes', n.needBytes],
    ['freeBytes', n.freeBytes],
    ['keepBytes', n.keepBytes],
  ] as const)
    checkUint(`SyncDone.noSpace.${field}`, v, field === 'files' ? UINT32_MAX : Number.MAX_SAFE_INTEGER);
  for (const p of n.paths) checkPathToShow('SyncDone.noSpace.paths', p);
  if (n.files < n.paths.length)
    throw new RangeError(`SyncDone.noSpace names ${n.paths.length} paths of ${n.files} files`);
  return {
    files: n.files,
    needBytes: n.needBytes,
    freeBytes: n.freeBytes,
    keepBytes: n.keepBytes,
    paths: [...n.paths],
  };
}

/** A peer's no-space report, checked as noSpaceToWire checks ours (PROTOCOL otherwise). */
function noSpaceFromWire(w: clawpeer.v1.SyncNoSpace.$Properties): SyncNoSpace {
  const paths = w.paths ?? [];
  if (paths.length > MAX_NO_SPACE_PATHS_LISTED)
    throw new ClawpeerError(
      'PROTOCOL',
      `SyncDone.noSpace lists ${paths.length} paths, more than ${MAX_NO_SPACE_PATHS_LISTED}`,
    );
  // The paths are some of the files left out: a report naming more than it counts is made up.
  if ((w.files ?? 0) < paths.length)
    throw new ClawpeerError('PROTOCOL', `SyncDone.noSpace names ${paths.length} paths of ${w.files ?? 0} files`);
  return {
    files: w.files ?? 0,
    needBytes: u64ToNumber('SyncDone.noSpace.needBytes', w.needBytes ?? 0),
    freeBytes: u64ToNumber('SyncDone.noSpace.freeBytes', w.freeBytes ?? 0),
    keepBytes: u64ToNumber('SyncDone.noSpace.keepBytes', w.keepBytes ?? 0),
    paths: paths.map((p) => wirePathToShow('SyncDone.noSpace.paths', p)),
  };
}
