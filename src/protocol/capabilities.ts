// Capability sets and protocol-version negotiation.
//
// Goals: one typed description of what a node can do (AEAD suites, compression codecs, FastCDC
// parameters, window/stream/frame limits, features), its defaults, validation of a peer's set,
// and the rules that turn two sets into the session's effective set:
//   - lists (AEAD suites, codecs, features): the client's preference order, filtered by what the
//     server supports; the session's AEAD suite is the first entry;
//   - numbers (window, streams, frame size): the smaller of the two maxima;
//   - chunking: the server's choice (its first entry the client also lists). Chunk ids depend on
//     the parameters and the server usually holds the larger index to deduplicate against, so
//     the server decides; if the client supports none of the server's choices, reject.
// Versions: each side speaks a range min..max; the session uses the highest common version.
// Non-goals: wire encoding (messages.ts), the handshake sequence (handshake.ts).
import { ClawpeerError } from '../errors.js';
import { AEAD_SUITES, type AeadSuiteName } from '../crypto/session-keys.js';
import { AEAD_TAG_BYTES, DATA_HEADER_BYTES, MAX_ENCODABLE_FRAME_BYTES } from './frame-codec.js';

export { AEAD_SUITES, type AeadSuiteName };
export const COMPRESSION_CODECS = ['none', 'zstd'] as const;
export type CompressionName = (typeof COMPRESSION_CODECS)[number];
// early-chunks: a sender may send a stream's first window of DATA frames (flagged early) before
// it has the receiver's Want, which saves the round trip of the Manifest/Want exchange.
// exclude: a pull's request may carry exclude patterns (transfer/exclude.ts) the server applies;
// a server without it would send everything, so a client does not ask one that lacks it.
// watch: a client may ask to be told when a share changes (WatchShare / ShareChanged).
// rate-limit: a pull's or a sync's request may carry a rate (bytes per second) the server sends
// within (--bwlimit); a server without it would send at full speed, so a client does not ask one.
// dry-run: a transfer request may be a dry run (nothing written, no chunk sent); a server
// without it would carry the transfer out, so a client does not ask one.
// sync-dry-run: the same for a sync request (the server sends its records and applies nothing).
// delete: a push may ask the server to remove what the pushed directories hold beyond the source
// (--delete); a server without it would leave them, so a client does not ask one.
// filter: a transfer request may carry include rules among its excludes (--include), in order;
// a server without it knows plain exclude patterns only, so a client does not ask one.
// existing: a push may ask the server to keep different existing files, or keep only newer ones
// (--ignore-existing, --update); a server without it would refuse them as FILE_EXISTS.
// fsync-none: a push or sync request may ask the server to publish without fsync (--fsync=none);
// a server without it would fsync, which is safe but not what was asked, so a client says so.
// sync-pruned: a sync tells the peer which of its revisions this side's gc dropped
// (SyncRevisions.pruned); the peer drops them too, so gc is not undone by the next sync.
// sync-pruned-always: with sync-pruned, a side that sends no records in a sync (the peer syncs
// send-only, or it syncs receive-only) still tells what its gc dropped, in one empty final
// SyncRevisions where its records would go; without it the sending side found those revisions
// lacking at every check (a send-only pair never in sync after the receiver's gc).
// sync-fetch-only: a sync request may only fetch contents by root (`restore` from a peer).
// join: more QUIC connections may join the session (SessionJoin with a token bound to this
// handshake's keys) and carry its data streams; a server seeing random loss as a sender may ask
// for them (JoinWanted). Without it, a session is one connection.
// share-paused: a sync of a shared folder paused on the server is refused with SHARE_PAUSED, not
// SHARE_UNKNOWN; a client without it (which would read the new code as an unknown error) gets
// SHARE_UNKNOWN as before.
// by-folder-service: a sync request may say it is a listener's folder service's
// (SyncRequest.byFolderService); the server then counts only those as folder offers. A client
// without it cannot say: each of its refused syncs of an unknown share counts, as before.
// sync-peer-heads: a send-only side may ask the peer for the records of its heads this side
// lacks (SyncRequest.peer_heads as the client, SyncAccept.peer_heads as the server), sent where
// the peer's records would go in a sync that moves them the other way only; they are not stored,
// only shown (`status`: paths changed by peers, not taken) and overridden (`folder override`).
export const FEATURES = [
  'sync',
  'resume',
  'history',
  'early-chunks',
  'exclude',
  'watch',
  'rate-limit',
  'dry-run',
  'sync-dry-run',
  'delete',
  'filter',
  'existing',
  'backup',
  'list',
  'max-delete',
  'itemize',
  'size-filter',
  'files-from',
  'copy-links',
  'sync-pruned',
  'sync-fetch-only',
  'fsync-none',
  'join',
  'share-paused',
  'sync-pruned-always',
  'by-folder-service',
  'sync-peer-heads',
] as const;
export type FeatureName = (typeof FEATURES)[number];

/** Protocol versions this build speaks. */
export const PROTOCOL_VERSION_MIN = 1;
export const PROTOCOL_VERSION_MAX = 1;

export interface VersionRange {
  readonly min: number;
  readonly max: number;
}
export const SUPPORTED_VERSIONS: VersionRange = Object.freeze({ min: PROTOCOL_VERSION_MIN, max: PROTOCOL_VERSION_MAX });

export interface ChunkingParams {
  readonly minBytes: number;
  readonly avgBytes: number;
  readonly maxBytes: number;
}

/** What one node supports; lists in preference order. */
export interface Capabilities {
  readonly aeadSuites: readonly AeadSuiteName[];
  readonly compression: readonly CompressionName[];
  readonly chunking: readonly ChunkingParams[];
  /** Unacknowledged DATA frames in flight per stream. */
  readonly maxWindowChunks: number;
  /** Concurrent data streams per connection. */
  readonly maxStreams: number;
  /** Largest frame body this node accepts, in bytes. */
  readonly maxFrameBytes: number;
  readonly features: readonly FeatureName[];
}

/** The effective capabilities of one session (what both sides agreed on). */
export interface SessionCapabilities {
  /** The AEAD suite of every DATA frame in this session. */
  readonly aeadSuite: AeadSuiteName;
  /** Codecs both sides support, in the client's preference order; always non-empty. */
  readonly compression: readonly CompressionName[];
  readonly chunking: ChunkingParams;
  readonly maxWindowChunks: number;
  readonly maxStreams: number;
  readonly maxFrameBytes: number;
  readonly features: readonly FeatureName[];
}

/** Smallest frame limit a peer may announce: 64 KiB, room for any control message of a handshake. */
export const MIN_FRAME_BYTES = 64 << 10;
/** FastCDC bounds we accept from a peer: 64 B .. 64 MiB, min <= avg <= max. */
export const CHUNK_MIN_BYTES_FLOOR = 64;
export const CHUNK_MAX_BYTES_CEILING = 64 << 20;
/** A peer's lists are short; more entries than this are a malformed Hello. */
export const MAX_CAPABILITY_LIST_ENTRIES = 16;
/**
 * Features a Hello or Welcome may list in all: the first MAX_CAPABILITY_LIST_ENTRIES in
 * `features` (all that a peer of before December 2026 accepts there), the rest in
 * `features_more` (which such a peer ignores).
 */
export const MAX_FEATURES = 64;
/** Sanity ceilings on a peer's numbers (they size our tables): 65536 chunks, 1024 streams. */
const MAX_WINDOW_CHUNKS_CEILING = 1 << 16;
const MAX_STREAMS_CEILING = 1 << 10;

/**
 * Defaults. FastCDC 64 KiB / 256 KiB / 1 MiB: AEAD and BLAKE3 run at full speed from 64 KiB
 * records (PLATFORM.md) and 1 MiB bounds a chunk's memory; 256 KiB average keeps per-chunk
 * overhead (header, ack, index entry) below 0.1%. A window of 64 chunks x 256 KiB = 16 MiB in
 * flight per stream fills 1 Gbit/s at 130 ms RTT. 'zstd' is absent because node:zlib has no zstd
 * on Node 20; the node layer adds it when the runtime provides it.
 */
export const DEFAULT_CAPABILITIES: Capabilities = Object.freeze({
  aeadSuites: Object.freeze(['aes-256-gcm', 'chacha20-poly1305'] as const),
  compression: Object.freeze(['none'] as const),
  chunking: Object.freeze([Object.freeze({ minBytes: 64 << 10, avgBytes: 256 << 10, maxBytes: 1 << 20 })]),
  maxWindowChunks: 64,
  maxStreams: 8,
  maxFrameBytes: 16 << 20,
  features: FEATURES, // every feature this build has
});

function describeChunking(c: ChunkingParams): string {
  return `${c.minBytes}/${c.avgBytes}/${c.maxBytes}`;
}

function sameChunking(a: ChunkingParams, b: ChunkingParams): boolean {
  return a.minBytes === b.minBytes && a.avgBytes === b.avgBytes && a.maxBytes === b.maxBytes;
}

function checkCount(what: string, who: string, value: number, min: number, max: number): void {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new ClawpeerError('PROTOCOL', `${who} capabilities: ${what} ${value} is outside ${min}..${max}`);
  }
}

/**
 * Checks a capability set (ours or a peer's) for values that cannot work: empty suite list,
 * limits outside sane bounds, chunking that does not fit a frame. `who` names the side in the
 * error ("peer", "local").
 */
export function validateCapabilities(caps: Capabilities, who = 'peer'): void {
  if (caps.aeadSuites.length === 0) throw new ClawpeerError('PROTOCOL', `${who} capabilities list no known AEAD suite`);
  if (caps.compression.length === 0)
    throw new ClawpeerError('PROTOCOL', `${who} capabilities list no known compression codec`);
  if (caps.chunking.length === 0)
    throw new ClawpeerError('PROTOCOL', `${who} capabilities list no chunking parameters`);
  for (const [name, list, max] of [
    ['aeadSuites', caps.aeadSuites, MAX_CAPABILITY_LIST_ENTRIES],
    ['compression', caps.compression, MAX_CAPABILITY_LIST_ENTRIES],
    ['chunking', caps.chunking, MAX_CAPABILITY_LIST_ENTRIES],
    ['features', caps.features, MAX_FEATURES],
  ] as const) {
    if (list.length > max) {
      throw new ClawpeerError('PROTOCOL', `${who} capabilities: ${name} has ${list.length} entries, more than ${max}`);
    }
  }
  checkCount('maxWindowChunks', who, caps.maxWindowChunks, 1, MAX_WINDOW_CHUNKS_CEILING);
  checkCount('maxStreams', who, caps.maxStreams, 1, MAX_STREAMS_CEILING);
  checkCount('maxFrameBytes', who, caps.maxFrameBytes, MIN_FRAME_BYTES, MAX_ENCODABLE_FRAME_BYTES);
  for (const c of caps.chunking) {
    const ok =
      Number.isInteger(c.minBytes) &&
      Number.isInteger(c.avgBytes) &&
      Number.isInteger(c.maxBytes) &&
      c.minBytes >= CHUNK_MIN_BYTES_FLOOR &&
      c.minBytes <= c.avgBytes &&
      c.avgBytes <= c.maxBytes &&
      c.maxBytes <= CHUNK_MAX_BYTES_CEILING;
    if (!ok) {
      throw new ClawpeerError(
        'PROTOCOL',
        `${who} capabilities: chunking ${describeChunking(c)} (min/avg/max bytes) must satisfy ${CHUNK_MIN_BYTES_FLOOR} <= min <= avg <= max <= ${CHUNK_MAX_BYTES_CEILING}`,
      );
    }
  }
}

/** Text for a version range: "1..1". */
export function describeVersions(range: VersionRange): string {
  return `${range.min}..${range.max}`;
}

/** The highest version both ranges contain; VERSION_MISMATCH naming both ranges if none. */
export function negotiateVersion(ours: VersionRange, theirs: VersionRange): number {
  const low = Math.max(ours.min, theirs.min);
  const high = Math.min(ours.max, theirs.max);
  if (theirs.min > theirs.max || high < low) {
    throw new ClawpeerError(
      'VERSION_MISMATCH',
      `peer speaks protocol ${describeVersions(theirs)}, we speak ${describeVersions(ours)}`,
    );
  }
  return high;
}

/**
 * The session's capabilities from the client's offer and the server's support (see the module
 * comment for the rules). Throws PROTOCOL naming what has no overlap.
 */
export function intersectCapabilities(client: Capabilities, server: Capabilities): SessionCapabilities {
  const filter = <T>(offered: readonly T[], supported: readonly T[]): T[] => {
    const out: T[] = [];
    for (const item of offered) if (supported.includes(item) && !out.includes(item)) out.push(item);
    return out;
  };
  const aead = filter(client.aeadSuites, server.aeadSuites);
  const aeadSuite = aead[0];
  if (aeadSuite === undefined) {
    throw new ClawpeerError(
      'PROTOCOL',
      `no AEAD suite in common: client offers [${client.aeadSuites.join(', ')}], server supports [${server.aeadSuites.join(', ')}]`,
    );
  }
  const compression = filter(client.compression, server.compression);
  if (compression.length === 0) {
    throw new ClawpeerError(
      'PROTOCOL',
      `no compression codec in common: client offers [${client.compression.join(', ')}], server supports [${server.compression.join(', ')}]`,
    );
  }
  const chunking = server.chunking.find((s) => client.chunking.some((c) => sameChunking(c, s)));
  if (chunking === undefined) {
    throw new ClawpeerError(
      'PROTOCOL',
      `no chunking parameters in common: client supports [${client.chunking.map(describeChunking).join(', ')}], server uses [${server.chunking.map(describeChunking).join(', ')}] (min/avg/max bytes)`,
    );
  }
  const maxFrameBytes = Math.min(client.maxFrameBytes, server.maxFrameBytes);
  if (chunking.maxBytes + DATA_HEADER_BYTES + AEAD_TAG_BYTES > maxFrameBytes) {
    throw new ClawpeerError(
      'PROTOCOL',
      `chunking max ${chunking.maxBytes} bytes does not fit the frame limit of ${maxFrameBytes} bytes`,
    );
  }
  return Object.freeze({
    aeadSuite,
    compression: Object.freeze(compression),
    chunking: Object.freeze({ ...chunking }),
    maxWindowChunks: Math.min(client.maxWindowChunks, server.maxWindowChunks),
    maxStreams: Math.min(client.maxStreams, server.maxStreams),
    maxFrameBytes,
    features: Object.freeze(filter(client.features, server.features)),
  });
}

/** The session capabilities as a capability set (the form a Welcome carries). */
export function sessionToCapabilities(session: SessionCapabilities): Capabilities {
  return {
    aeadSuites: [session.aeadSuite],
    compression: session.compression,
    chunking: [session.chunking],
    maxWindowChunks: session.maxWindowChunks,
    maxStreams: session.maxStreams,
    maxFrameBytes: session.maxFrameBytes,
    features: session.features,
  };
}

/**
 * The client's check of the effective set a Welcome announces: exactly one AEAD suite and one
 * chunking entry, every list a subset of what we offered, every number within our maxima.
 * Anything else means the server ignored our offer (or the Welcome was forged): PROTOCOL.
 */
export function acceptSessionCapabilities(offered: Capabilities, announced: Capabilities): SessionCapabilities {
  const problem = findUnofferedCapability(offered, announced);
  if (problem !== undefined)
    throw new ClawpeerError('PROTOCOL', `Welcome announces capabilities we did not offer: ${problem}`);
  validateCapabilities(announced, 'Welcome');
  const [aeadSuite] = announced.aeadSuites;
  const [chunking] = announced.chunking;
  if (aeadSuite === undefined || chunking === undefined) throw new TypeError('checked by findUnofferedCapability');
  return Object.freeze({
    aeadSuite,
    compression: Object.freeze([...announced.compression]),
    chunking: Object.freeze({ ...chunking }),
    maxWindowChunks: announced.maxWindowChunks,
    maxStreams: announced.maxStreams,
    maxFrameBytes: announced.maxFrameBytes,
    features: Object.freeze([...announced.features]),
  });
}

function findUnofferedCapability(offered: Capabilities, announced: Capabilities): string | undefined {
  const [aeadSuite] = announced.aeadSuites;
  if (announced.aeadSuites.length !== 1 || aeadSuite === undefined)
    return `${announced.aeadSuites.length} AEAD suites instead of 1`;
  if (!offered.aeadSuites.includes(aeadSuite)) return `AEAD suite ${aeadSuite}`;
  const [chunking] = announced.chunking;
  if (announced.chunking.length !== 1 || chunking === undefined)
    return `${announced.chunking.length} chunking entries instead of 1`;
  if (!offered.chunking.some((c) => sameChunking(c, chunking))) return `chunking ${describeChunking(chunking)}`;
  if (announced.compression.length === 0) return 'no compression codec';
  for (const codec of announced.compression) if (!offered.compression.includes(codec)) return `compression ${codec}`;
  for (const feature of announced.features) if (!offered.features.includes(feature)) return `feature ${feature}`;
  if (announced.maxWindowChunks > offered.maxWindowChunks)
    return `maxWindowChunks ${announced.maxWindowChunks} > ${offered.maxWindowChunks}`;
  if (announced.maxStreams > offered.maxStreams) return `maxStreams ${announced.maxStreams} > ${offered.maxStreams}`;
  if (announced.maxFrameBytes > offered.maxFrameBytes)
    return `maxFrameBytes ${announced.maxFrameBytes} > ${offered.maxFrameBytes}`;
  return undefined;
}
