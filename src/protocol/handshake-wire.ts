// Encode/decode of the handshake messages' parts (Hello, Welcome and their capabilities).
import { ClawpeerError } from '../errors.js';
import {
  type AeadSuiteName,
  type Capabilities,
  type ChunkingParams,
  type CompressionName,
  type FeatureName,
  MAX_CAPABILITY_LIST_ENTRIES,
  MAX_FEATURES,
} from './capabilities.js';
import { clawpeer } from './gen/clawpeer.js';
import type { HelloMessage, WelcomeMessage } from './message-types.js';
import { pb, invert } from './wire-helpers.js';

const AEAD_TO_WIRE: Record<AeadSuiteName, number> = {
  'aes-256-gcm': pb.AeadSuite.AEAD_SUITE_AES_256_GCM,
  'chacha20-poly1305': pb.AeadSuite.AEAD_SUITE_CHACHA20_POLY1305,
};
const COMPRESSION_TO_WIRE: Record<CompressionName, number> = {
  none: pb.Compression.COMPRESSION_NONE,
  zstd: pb.Compression.COMPRESSION_ZSTD,
};
const FEATURE_TO_WIRE: Record<FeatureName, number> = {
  sync: pb.Feature.FEATURE_SYNC,
  resume: pb.Feature.FEATURE_RESUME,
  history: pb.Feature.FEATURE_HISTORY,
  'early-chunks': pb.Feature.FEATURE_EARLY_CHUNKS,
  exclude: pb.Feature.FEATURE_EXCLUDE,
  watch: pb.Feature.FEATURE_WATCH,
  'rate-limit': pb.Feature.FEATURE_RATE_LIMIT,
  'dry-run': pb.Feature.FEATURE_DRY_RUN,
  'sync-dry-run': pb.Feature.FEATURE_SYNC_DRY_RUN,
  delete: pb.Feature.FEATURE_DELETE,
  filter: pb.Feature.FEATURE_FILTER,
  existing: pb.Feature.FEATURE_EXISTING,
  backup: pb.Feature.FEATURE_BACKUP,
  list: pb.Feature.FEATURE_LIST,
  'max-delete': pb.Feature.FEATURE_MAX_DELETE,
  itemize: pb.Feature.FEATURE_ITEMIZE,
  'size-filter': pb.Feature.FEATURE_SIZE_FILTER,
  'files-from': pb.Feature.FEATURE_FILES_FROM,
  'copy-links': pb.Feature.FEATURE_COPY_LINKS,
  'fsync-none': pb.Feature.FEATURE_FSYNC_NONE,
  'sync-pruned': pb.Feature.FEATURE_SYNC_PRUNED,
  'sync-fetch-only': pb.Feature.FEATURE_SYNC_FETCH_ONLY,
  join: pb.Feature.FEATURE_JOIN,
  'share-paused': pb.Feature.FEATURE_SHARE_PAUSED,
  'sync-pruned-always': pb.Feature.FEATURE_SYNC_PRUNED_ALWAYS,
  'by-folder-service': pb.Feature.FEATURE_BY_FOLDER_SERVICE,
  'sync-peer-heads': pb.Feature.FEATURE_SYNC_PEER_HEADS,
};

const AEAD_FROM_WIRE = invert(AEAD_TO_WIRE);
const COMPRESSION_FROM_WIRE = invert(COMPRESSION_TO_WIRE);
const FEATURE_FROM_WIRE = invert(FEATURE_TO_WIRE);

function capsToWire(caps: Capabilities): clawpeer.v1.Capabilities.$Properties {
  // The decoder refuses longer lists: what this encodes must decode (found by the deep fuzzer
  // once a generated list of every feature, twice over, passed 16 entries).
  for (const [name, list, max] of [
    ['aeadSuites', caps.aeadSuites, MAX_CAPABILITY_LIST_ENTRIES],
    ['compression', caps.compression, MAX_CAPABILITY_LIST_ENTRIES],
    ['chunking', caps.chunking, MAX_CAPABILITY_LIST_ENTRIES],
    ['features', caps.features, MAX_FEATURES],
  ] as const) {
    if (list.length > max) throw new RangeError(`caps.${name} has ${list.length} entries, more than ${max}`);
  }
  const features = caps.features.map((f) => FEATURE_TO_WIRE[f]);
  return {
    aeadSuites: caps.aeadSuites.map((s) => AEAD_TO_WIRE[s]),
    compression: caps.compression.map((c) => COMPRESSION_TO_WIRE[c]),
    chunking: caps.chunking.map((c) => ({ minBytes: c.minBytes, avgBytes: c.avgBytes, maxBytes: c.maxBytes })),
    maxWindowChunks: caps.maxWindowChunks,
    maxStreams: caps.maxStreams,
    maxFrameBytes: caps.maxFrameBytes,
    // An older peer refuses more than 16 here and ignores featuresMore (see the .proto).
    features: features.slice(0, MAX_CAPABILITY_LIST_ENTRIES),
    ...(features.length > MAX_CAPABILITY_LIST_ENTRIES
      ? { featuresMore: features.slice(MAX_CAPABILITY_LIST_ENTRIES) }
      : {}),
  };
}

export function helloToWire(m: Omit<HelloMessage, 'type'>): clawpeer.v1.Hello.$Properties {
  return {
    minVersion: m.minVersion,
    maxVersion: m.maxVersion,
    nodePublicKey: m.nodePublicKey,
    caps: capsToWire(m.caps),
    ephemeralPublicKey: m.ephemeralPublicKey,
    nonce: m.nonce,
    signature: m.signature,
  };
}

export function welcomeToWire(m: Omit<WelcomeMessage, 'type'>): clawpeer.v1.Welcome.$Properties {
  return {
    version: m.version,
    nodePublicKey: m.nodePublicKey,
    caps: capsToWire(m.caps),
    ephemeralPublicKey: m.ephemeralPublicKey,
    nonce: m.nonce,
    signature: m.signature,
  };
}

function enumList<K extends string>(
  field: string,
  values: readonly number[] | null | undefined,
  table: ReadonlyMap<number, K>,
  max = MAX_CAPABILITY_LIST_ENTRIES,
): K[] {
  const raw = values ?? [];
  if (raw.length > max) {
    throw new ClawpeerError('PROTOCOL', `${field} has ${raw.length} entries, more than ${max}`);
  }
  const out: K[] = [];
  for (const v of raw) {
    const name = table.get(v);
    // Unknown values come from newer peers: ignore them (they cannot be in the intersection).
    if (name !== undefined && !out.includes(name)) out.push(name);
  }
  return out;
}

export function capsFromWire(
  owner: string,
  caps: clawpeer.v1.Capabilities.$Properties | null | undefined,
): Capabilities {
  if (caps === null || caps === undefined) throw new ClawpeerError('PROTOCOL', `${owner}.caps is missing`);
  const chunkingRaw = caps.chunking ?? [];
  if (chunkingRaw.length > MAX_CAPABILITY_LIST_ENTRIES) {
    throw new ClawpeerError(
      'PROTOCOL',
      `${owner}.caps.chunking has ${chunkingRaw.length} entries, more than ${MAX_CAPABILITY_LIST_ENTRIES}`,
    );
  }
  const chunking: ChunkingParams[] = chunkingRaw.map((c) => ({
    minBytes: c.minBytes ?? 0,
    avgBytes: c.avgBytes ?? 0,
    maxBytes: c.maxBytes ?? 0,
  }));
  return {
    aeadSuites: enumList(`${owner}.caps.aeadSuites`, caps.aeadSuites, AEAD_FROM_WIRE),
    compression: enumList(`${owner}.caps.compression`, caps.compression, COMPRESSION_FROM_WIRE),
    chunking,
    maxWindowChunks: caps.maxWindowChunks ?? 0,
    maxStreams: caps.maxStreams ?? 0,
    maxFrameBytes: caps.maxFrameBytes ?? 0,
    features: [
      ...new Set([
        ...enumList(`${owner}.caps.features`, caps.features, FEATURE_FROM_WIRE),
        ...enumList(
          `${owner}.caps.featuresMore`,
          caps.featuresMore,
          FEATURE_FROM_WIRE,
          MAX_FEATURES - MAX_CAPABILITY_LIST_ENTRIES,
        ),
      ]),
    ],
  };
}
