// Typed encode/decode of CONTROL frame bodies (the clawpeer.v1.Control protobuf envelope).
//
// Goals: the rest of the code sees plain readonly objects (a discriminated union on `type`),
// never protobufjs classes or Long values; every decode takes a maximum length and turns any
// malformed input into a PROTOCOL error naming the field; the raw bytes of the envelope's body
// are available to the handshake, whose signatures cover exactly the bytes received.
// Non-goals: framing (frame-codec.ts), semantic checks such as version or capability
// negotiation (capabilities.ts, handshake.ts).
//
// uint64 fields (Ping/Pong seq and times, sizes, counters) are numbers: our encoders never
// exceed 2^53-1 and a decoded value above it is a PROTOCOL error (the sint64 mtime likewise
// outside +-(2^53-1)).
//
// Transfer messages (envelope fields 16-21) carry whole manifests, so they get structural
// checks here (chunk id/length counts, root length, sizes that add up, bounded path lengths,
// at most MAX_MANIFEST_ENTRIES_PER_MESSAGE entries, counted before protobufjs allocates them);
// splitManifest cuts a tree into batches that each fit the negotiated frame size. Path
// confinement and normalisation are src/transfer/paths.ts's job, not this module's.
// Sync messages (envelope fields 48-53) carry opaque reconciliation payloads and revision
// records, bounded here by size and count; their contents are checked by src/sync/ decoders.
import protobuf from 'protobufjs/minimal.js';
import { LONE_SURROGATE, MAX_EXCLUDE_PATTERNS, type FilterRule } from './wire-limits.js';
import { ClawpeerError } from '../errors.js';
import type { AeadSuiteName, Capabilities, ChunkingParams, CompressionName, FeatureName } from './capabilities.js';
import { MAX_CAPABILITY_LIST_ENTRIES, MAX_FEATURES } from './capabilities.js';
import { CHUNK_ID_BYTES, encodeFrame } from './frame-codec.js';
import { clawpeer } from './gen/clawpeer.js';

const pb = clawpeer.v1;

export const ED25519_KEY_BYTES = 32;
export const ED25519_SIGNATURE_BYTES = 64;
export const X25519_KEY_BYTES = 32;
export const HANDSHAKE_NONCE_BYTES = 32;
/** Error texts longer than this (in UTF-16 code units) are cut, on encode and on decode. */
export const MAX_ERROR_MESSAGE_CHARS = 1024;

export interface HelloMessage {
  readonly type: 'hello';
  readonly minVersion: number;
  readonly maxVersion: number;
  readonly nodePublicKey: Uint8Array;
  readonly caps: Capabilities;
  readonly ephemeralPublicKey: Uint8Array;
  readonly nonce: Uint8Array;
  /** Empty while being signed. */
  readonly signature: Uint8Array;
}

export interface WelcomeMessage {
  readonly type: 'welcome';
  readonly version: number;
  readonly nodePublicKey: Uint8Array;
  readonly caps: Capabilities;
  readonly ephemeralPublicKey: Uint8Array;
  readonly nonce: Uint8Array;
  readonly signature: Uint8Array;
}

export interface FinishedMessage {
  readonly type: 'finished';
  readonly signature: Uint8Array;
}

export interface ErrorMessage {
  readonly type: 'error';
  /** Wire number from WIRE_ERRORS (src/errors.ts); unknown numbers are kept as they are. */
  readonly code: number;
  readonly message: string;
}

export interface PingMessage {
  readonly type: 'ping';
  readonly seq: number;
  readonly sentTimeUs: number;
}

export interface PongMessage {
  readonly type: 'pong';
  readonly seq: number;
  readonly echoedTimeUs: number;
}

/** Pairing by invite (home/pair-invite.ts): the joiner's proof of the invite secret, and the name it suggests. */
export interface PairRequestMessage {
  readonly type: 'pair-request';
  /** PAIR_PROOF_BYTES. */
  readonly proof: Uint8Array;
  readonly name: string;
}

/** The inviter's answer: its own proof, and the name it suggests. */
export interface PairAcceptMessage {
  readonly type: 'pair-accept';
  readonly proof: Uint8Array;
  readonly name: string;
}

/** HMAC-SHA256 output. */
export const PAIR_PROOF_BYTES = 32;
/** A suggested peer name: peer-store.ts allows 64 characters. */
const MAX_PAIR_NAME_BYTES = 64;

export type EntryKind = 'file' | 'dir' | 'symlink';

/** An entry's name and metadata: what a manifest entry and a listing entry (ls) both carry. */
export interface EntryMeta {
  /** Relative POSIX path (inside the transfer root; in a listing, below the listed directory), 1..MAX_ENTRY_PATH_BYTES UTF-8 bytes. */
  readonly path: string;
  readonly kind: EntryKind;
  /** Bytes; for a file the sum of chunkLengths. Not interpreted for dir/symlink (0 by convention). */
  readonly size: number;
  /** Permission bits, 0..0o7777 (no file type bits). */
  readonly mode: number;
  /** Integer milliseconds since the epoch (may be 0 or negative). */
  readonly mtimeMs: number;
  /** Symlink target text (non-empty for symlinks), '' otherwise. */
  readonly linkTarget: string;
}

/** One file, directory or symlink of a transfer tree (proto ManifestEntry). */
export interface ManifestEntry extends EntryMeta {
  /** 32-byte manifest root (src/chunking/manifest.ts) for files; empty for dir/symlink. */
  readonly root: Uint8Array;
  /** Concatenated 32-byte chunk ids in file order (length = 32 * n); empty for dir/symlink. */
  readonly chunkIds: Uint8Array;
  /** n chunk lengths in bytes (1..2^32-1), same order as chunkIds. */
  readonly chunkLengths: readonly number[];
}

export interface TransferRequestMessage {
  readonly type: 'transfer-request';
  /** Chosen by the client, unique per session (uint32). */
  readonly transferId: number;
  readonly direction: 'push' | 'pull';
  /** Share name ('' = the server's default share). */
  readonly share: string;
  /** Sub path inside the share ('' = the share root). */
  readonly path: string;
  /** Replace existing files whose content differs. */
  readonly force: boolean;
  /** Data streams the client wants to use (uint32). */
  readonly streams: number;
  /** Chunks in flight per stream (uint32). */
  readonly window: number;
  /** Pull: patterns the server leaves out (transfer/exclude.ts; feature 'exclude'). Push with delete: patterns never removed. */
  readonly exclude?: readonly string[];
  /** Instead of exclude (never both; feature 'filter'): include and exclude rules, first match decides. */
  readonly filter?: readonly FilterRule[];
  /** Push, never with force (feature 'existing'): keep different existing files, or keep only newer ones. Absent: refuse. */
  readonly existing?: 'keep' | 'update';
  /** Push (feature 'backup'): keep what is replaced or removed, beside it with the suffix or under dir (destination-relative). */
  readonly backup?: { readonly suffix: string; readonly dir: string };
  /** Push with delete (feature 'max-delete'): remove nothing when more than this many paths would go. */
  readonly maxDelete?: number;
  /** Push (feature 'itemize'): list the files published in TransferDone. */
  readonly itemize?: boolean;
  /** Pull (feature 'size-filter'): files outside these bounds (bytes, inclusive) are left out; absent: no bound. */
  readonly minSize?: number;
  readonly maxSize?: number;
  /** Pull (feature 'files-from'): these paths relative to `path`, not `path` itself; at most MAX_FILES_FROM_PATHS. */
  readonly filesFrom?: readonly string[];
  /** Pull (feature 'copy-links'): symlinks sent as what they point to, all or those leading out of the tree; never out of the share. */
  readonly copyLinks?: 'all' | 'unsafe';
  /** Pull: the most bytes per second the server sends at (uint32 > 0; feature 'rate-limit'). */
  readonly rateLimit?: number;
  /** Plan only: nothing is written, no chunk travels (feature 'dry-run'). */
  readonly dryRun?: boolean;
  /** Push: remove what the pushed directories hold beyond the source (feature 'delete'). */
  readonly delete?: boolean;
}

export interface TransferAcceptMessage {
  readonly type: 'transfer-accept';
  readonly transferId: number;
  /** The granted stream count (<= requested, <= the session's maxStreams). */
  readonly streams: number;
  /** The granted window in chunks per stream. */
  readonly window: number;
}

export interface ManifestMessage {
  readonly type: 'manifest';
  readonly transferId: number;
  /** At most MAX_MANIFEST_ENTRIES_PER_MESSAGE entries. */
  readonly entries: readonly ManifestEntry[];
  /** True on the final batch. */
  readonly last: boolean;
}

export interface WantMessage {
  readonly type: 'want';
  readonly transferId: number;
  /**
   * Bitmap over the sender's unique chunk ids in first-appearance order across all manifest
   * batches: bit i (LSB-first within each byte) = 1 -> the receiver lacks chunk i and wants it.
   * Exactly ceil(uniqueChunks / 8) bytes; the padding bits of the last byte are 0.
   */
  readonly lacking: Uint8Array;
  /** Number of meaningful bits (uint32). */
  readonly uniqueChunks: number;
  /** Dry runs: bitmap over the manifest's file entries, set = would be published (new or different). */
  readonly publish?: Uint8Array;
  /** Dry runs: bitmap over the manifest's directory and symlink entries, set = would be created or replaced. */
  readonly create?: Uint8Array;
  /** Dry runs: bitmaps over the file entries (as `publish`), set = identical, its mtime / permissions would be set. */
  readonly touchTime?: Uint8Array;
  readonly touchPerms?: Uint8Array;
}

export interface DataOpenMessage {
  /** The first frame on each data stream, sent by the data sender. */
  readonly type: 'data-open';
  readonly transferId: number;
  /** The data stream's id as carried in DATA frame headers (uint32). */
  readonly streamId: number;
}

export interface TransferDoneMessage {
  /** Sent by the receiver once everything is published. */
  readonly type: 'transfer-done';
  readonly transferId: number;
  readonly files: number;
  /** Payload bytes published. */
  readonly bytes: number;
  readonly chunksReceived: number;
  readonly chunksSkipped: number;
  /** A push with delete: paths removed (or, in a dry run, to be removed), at most MAX_LISTED_DELETIONS. */
  readonly deleted?: readonly string[];
  /** All of them (>= deleted.length). */
  readonly deletedCount?: number;
  /** A push with an existing policy: different files and symlinks already there that were kept. */
  readonly filesKept?: number;
  /** A push with backup: files and symlinks backed up before they were replaced or removed. */
  readonly filesBackedUp?: number;
  /** A push with maxDelete: the paths that would have been removed, when more than the cap (none was). */
  readonly deletesOverLimit?: number;
  /** A push with itemize: the files published (share-relative), at most MAX_LISTED_PUBLISHED (files counts all). */
  readonly published?: readonly PublishedFile[];
  /** A push with itemize: the directories and symlinks created, at most MAX_LISTED_PUBLISHED. */
  readonly created?: readonly CreatedEntry[];
  /** A push with itemize: identical files whose mtime or mode was set, at most MAX_LISTED_PUBLISHED. */
  readonly updated?: readonly UpdatedFile[];
}

export interface PublishedFile {
  readonly path: string;
  /** A different file was there before. */
  readonly replaced: boolean;
}

/** An identical file whose metadata a transfer set (itemize: rsync's `.f..tp.....`). */
export interface UpdatedFile {
  readonly path: string;
  readonly time: boolean;
  readonly perms: boolean;
}

/** A directory or symlink a transfer created (itemize), beside the files it published. */
export type CreatedEntry =
  | { readonly path: string; readonly kind: 'dir' }
  | { readonly path: string; readonly kind: 'symlink'; readonly target: string; /** A different file or link was there before. */ readonly replaced: boolean };

/** TransferDone lists at most this many removed paths (the count covers the rest). */
export const MAX_LISTED_DELETIONS = 1000;
/** Published files a TransferDone lists at most (and MAX_LISTED_PUBLISHED_BYTES of their paths). */
export const MAX_LISTED_PUBLISHED = 10_000;
export const MAX_LISTED_PUBLISHED_BYTES = 1 << 20;

export type TransferControlMessage =
  | TransferRequestMessage
  | TransferAcceptMessage
  | ManifestMessage
  | WantMessage
  | DataOpenMessage
  | TransferDoneMessage;

export type SyncModeName = 'two-way' | 'send-only' | 'receive-only';

export interface SyncRequestMessage {
  readonly type: 'sync-request';
  /** Chosen by the client, unique per session (uint32); every later sync message carries it. */
  readonly transferId: number;
  /** Share name ('' = the server's default share). */
  readonly share: string;
  /** The client's mode. */
  readonly mode: SyncModeName;
  /**
   * The first reconciliation message (src/sync/reconcile-codec.ts), at most MAX_SYNC_RECONCILE_BYTES;
   * empty when it follows as the first SyncReconcile (the client scans while the server does).
   */
  readonly reconcile: Uint8Array;
  /** The most bytes per second the server sends this sync's content at (uint32 > 0; feature 'rate-limit'). */
  readonly rateLimit?: number;
  /** Plan only: the server sends its records and SyncDone, applies nothing (feature 'sync-dry-run'). */
  readonly dryRun?: boolean;
}

export interface SyncAcceptMessage {
  readonly type: 'sync-accept';
  readonly transferId: number;
}

export interface SyncReconcileMessage {
  readonly type: 'sync-reconcile';
  readonly transferId: number;
  /** One reconciliation message, 1..MAX_SYNC_RECONCILE_BYTES. */
  readonly payload: Uint8Array;
}

export interface SyncRevisionsMessage {
  readonly type: 'sync-revisions';
  readonly transferId: number;
  /** Canonical revision records, each 1..MAX_SYNC_RECORD_BYTES; at most MAX_SYNC_ITEMS_PER_MESSAGE. */
  readonly records: readonly Uint8Array[];
  readonly last: boolean;
}

export interface SyncFetchItem {
  /** The content owner's path (normalised by the caller). */
  readonly path: string;
  /** 32-byte manifest root the content must have. */
  readonly root: Uint8Array;
}

export interface SyncFetchMessage {
  readonly type: 'sync-fetch';
  readonly transferId: number;
  /** Data-plane transfer id of the content (Manifest, Want, DataOpen, TransferDone). */
  readonly fetchId: number;
  /** At most MAX_SYNC_ITEMS_PER_MESSAGE. */
  readonly items: readonly SyncFetchItem[];
  readonly last: boolean;
}

export interface SyncDoneMessage {
  readonly type: 'sync-done';
  readonly transferId: number;
}

export type SyncControlMessage = SyncRequestMessage | SyncAcceptMessage | SyncReconcileMessage | SyncRevisionsMessage | SyncFetchMessage | SyncDoneMessage;

/** Client -> server: tell me when this share changes, for the rest of the session (feature 'watch'). */
export interface WatchShareMessage {
  readonly type: 'watch-share';
  /** Share name; '' = the server's default share. */
  readonly share: string;
}

/** Server -> client: the watched share changed (seq >= 1); seq 0 confirms the WatchShare. */
export interface ShareChangedMessage {
  readonly type: 'share-changed';
  readonly share: string;
  readonly seq: number;
}

export type WatchControlMessage = WatchShareMessage | ShareChangedMessage;

/** Client -> server (feature 'list'): the entries under `path` of `share`, or ('' share) the shares. */
export interface ListRequestMessage {
  readonly type: 'list-request';
  /** Chosen by the client, echoed in every reply (uint32). */
  readonly requestId: number;
  readonly share: string;
  readonly path: string;
  readonly recursive: boolean;
}

/** One listed entry: names and metadata, no content (a listed file's path is its name). */
export type ListEntry = EntryMeta;

export interface ShareInfo {
  readonly name: string;
  readonly readOnly: boolean;
  readonly noDelete: boolean;
}

/** Server -> client: a batch of entries (or the shares); `last` on the final one. */
export interface ListReplyMessage {
  readonly type: 'list-reply';
  readonly requestId: number;
  readonly entries: readonly ListEntry[];
  readonly shares: readonly ShareInfo[];
  readonly last: boolean;
}

export type ListControlMessage = ListRequestMessage | ListReplyMessage;

export type ControlMessage = HelloMessage | WelcomeMessage | FinishedMessage | ErrorMessage | PingMessage | PongMessage | PairRequestMessage | PairAcceptMessage | TransferControlMessage | SyncControlMessage | WatchControlMessage | ListControlMessage;
export type ControlMessageType = ControlMessage['type'];

/** Field number of each envelope member (proto/clawpeer.proto, message Control). */
export const CONTROL_FIELDS = {
  hello: 1,
  welcome: 2,
  finished: 3,
  error: 4,
  ping: 5,
  pong: 6,
  'pair-request': 7,
  'pair-accept': 8,
  'transfer-request': 16,
  'transfer-accept': 17,
  manifest: 18,
  want: 19,
  'data-open': 20,
  'transfer-done': 21,
  'sync-request': 48,
  'sync-accept': 49,
  'sync-reconcile': 50,
  'sync-revisions': 51,
  'sync-fetch': 52,
  'sync-done': 53,
  'watch-share': 54,
  'share-changed': 55,
  'list-request': 56,
  'list-reply': 57,
} as const satisfies Record<ControlMessageType, number>;

/**
 * Largest reconciliation payload, bytes: reconcile-codec.ts's 1 MiB message limit plus its
 * length prefix (at most 3 varint bytes for 1 MiB); the sync driver decodes it with that limit.
 */
export const MAX_SYNC_RECONCILE_BYTES = (1 << 20) + 8;
/** Largest revision record, bytes (src/sync/revision.ts MAX_REVISION_BYTES). */
export const MAX_SYNC_RECORD_BYTES = 128 << 10;
/** Records per SyncRevisions and items per SyncFetch: bounds what one frame makes us allocate. */
export const MAX_SYNC_ITEMS_PER_MESSAGE = 100_000;
/** Entries in one ListReply (counted before decoding, as manifest entries). */
export const MAX_LIST_ENTRIES_PER_MESSAGE = 100_000;
/** Field number of the entries inside ListReply. */
const LIST_REPLY_ENTRIES_FIELD = 2;
/** Field numbers of the repeated members counted before decoding (records, items). */
const SYNC_REVISIONS_RECORDS_FIELD = 2;
const SYNC_FETCH_ITEMS_FIELD = 3;

/** Entries per Manifest message: bounds what one frame makes a receiver allocate. */
export const MAX_MANIFEST_ENTRIES_PER_MESSAGE = 100_000;
/** UTF-8 bytes of a path, symlink target or share name (Linux PATH_MAX). */
export const MAX_ENTRY_PATH_BYTES = 4096;
/** Permission bits a ManifestEntry may carry (rwx for all, setuid, setgid, sticky). */
export const MAX_ENTRY_MODE = 0o7777;
/** Field number of the entries inside Manifest (counted before decoding). */
const MANIFEST_ENTRIES_FIELD = 2;
const UINT32_MAX = 0xffff_ffff;
/** Field numbers of the signature inside Hello and Welcome: excluded from the signed bytes. */
export const HELLO_SIGNATURE_FIELD = 7;
export const WELCOME_SIGNATURE_FIELD = 6;

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
};

function invert<K extends string>(table: Record<K, number>): ReadonlyMap<number, K> {
  return new Map((Object.entries(table) as [K, number][]).map(([k, v]) => [v, k]));
}
const ENTRY_KIND_TO_WIRE: Record<EntryKind, number> = {
  file: pb.EntryKind.ENTRY_KIND_FILE,
  dir: pb.EntryKind.ENTRY_KIND_DIR,
  symlink: pb.EntryKind.ENTRY_KIND_SYMLINK,
};
const DIRECTION_TO_WIRE: Record<TransferRequestMessage['direction'], number> = {
  push: pb.TransferDirection.TRANSFER_DIRECTION_PUSH,
  pull: pb.TransferDirection.TRANSFER_DIRECTION_PULL,
};

const AEAD_FROM_WIRE = invert(AEAD_TO_WIRE);
const ENTRY_KIND_FROM_WIRE = invert(ENTRY_KIND_TO_WIRE);
const DIRECTION_FROM_WIRE = invert(DIRECTION_TO_WIRE);
const EXISTING_TO_WIRE: Record<NonNullable<TransferRequestMessage['existing']>, number> = {
  keep: pb.ExistingFiles.EXISTING_FILES_KEEP,
  update: pb.ExistingFiles.EXISTING_FILES_UPDATE,
};
const EXISTING_FROM_WIRE = invert(EXISTING_TO_WIRE);
const COPY_LINKS_TO_WIRE: Record<NonNullable<TransferRequestMessage['copyLinks']>, number> = {
  all: pb.CopyLinks.COPY_LINKS_ALL,
  unsafe: pb.CopyLinks.COPY_LINKS_UNSAFE,
};
const COPY_LINKS_FROM_WIRE = invert(COPY_LINKS_TO_WIRE);
const COMPRESSION_FROM_WIRE = invert(COMPRESSION_TO_WIRE);
const FEATURE_FROM_WIRE = invert(FEATURE_TO_WIRE);

// ---------------------------------------------------------------------------------------------
// Encoding

function capsToWire(caps: Capabilities): clawpeer.v1.Capabilities.$Properties {
  // The decoder refuses longer lists: what this encodes must decode (found by the deep fuzzer
  // once a generated list of every feature, twice over, passed 16 entries).
  for (const [name, list, max] of [['aeadSuites', caps.aeadSuites, MAX_CAPABILITY_LIST_ENTRIES], ['compression', caps.compression, MAX_CAPABILITY_LIST_ENTRIES], ['chunking', caps.chunking, MAX_CAPABILITY_LIST_ENTRIES], ['features', caps.features, MAX_FEATURES]] as const) {
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
    ...(features.length > MAX_CAPABILITY_LIST_ENTRIES ? { featuresMore: features.slice(MAX_CAPABILITY_LIST_ENTRIES) } : {}),
  };
}

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
  if (paths.length > MAX_FILES_FROM_PATHS) throw new ClawpeerError('PROTOCOL', `TransferRequest.filesFrom has ${paths.length} paths, more than ${MAX_FILES_FROM_PATHS}`);
  return { filesFrom: paths.map((p) => wireText('TransferRequest.filesFrom', p)) };
}

/** An optional size bound of a TransferRequest from its wire value (0 or absent: none). */
function sizeBoundFromWire(field: 'minSize' | 'maxSize', value: number | LongLike | null | undefined): { minSize?: number } | { maxSize?: number } {
  const n = value === null || value === undefined ? 0 : u64ToNumber(`TransferRequest.${field}`, value);
  return n === 0 ? {} : { [field]: n };
}

/** The optional rateLimit field from its wire value (0 or absent: none). */
function rateLimitFromWire(value: number | null | undefined): { rateLimit?: number } {
  return value === null || value === undefined || value === 0 ? {} : { rateLimit: value };
}

/** A rate limit is left out for none; present, it is a uint32 > 0 (0 on the wire means none). */
function checkRateLimit(name: string, value: number | undefined): void {
  if (value === undefined) return;
  checkUint(name, value, UINT32_MAX);
  if (value === 0) throw new RangeError(`${name} must be > 0 (leave it out for no limit)`);
}

function checkUint(name: string, value: number, max: number): void {
  if (!Number.isInteger(value) || value < 0 || value > max) throw new RangeError(`${name} must be an integer in 0..${max}, got ${value}`);
}

function checkTextBytes(name: string, value: string): void {
  if (LONE_SURROGATE.test(value)) throw new RangeError(`${name} is not valid Unicode (unpaired surrogate)`);
  const bytes = protobuf.util.utf8.length(value);
  if (bytes > MAX_ENTRY_PATH_BYTES) throw new RangeError(`${name} is ${bytes} UTF-8 bytes, more than ${MAX_ENTRY_PATH_BYTES}`);
}

/** A peer's (or caller's) path quoted for an error message: escaped and cut to 200 characters. */
function quote(text: string): string {
  return JSON.stringify(text.length <= 200 ? text : `${text.slice(0, 199)}…`);
}

/**
 * What is structurally wrong with an entry, or undefined. Shared by the encoder (RangeError:
 * our own bug) and the decoder (PROTOCOL: the peer's), so both enforce the same rules.
 */
/** What is wrong with an entry's name and metadata (a manifest's or a listing's), or undefined. */
function entryMetaProblem(e: ListEntry): string | undefined {
  if (LONE_SURROGATE.test(e.path) || LONE_SURROGATE.test(e.linkTarget)) return 'path or linkTarget is not valid Unicode (unpaired surrogate)';
  const pathBytes = protobuf.util.utf8.length(e.path);
  if (pathBytes === 0) return 'path is empty';
  if (pathBytes > MAX_ENTRY_PATH_BYTES) return `path is ${pathBytes} UTF-8 bytes, more than ${MAX_ENTRY_PATH_BYTES}`;
  const targetBytes = protobuf.util.utf8.length(e.linkTarget);
  if (targetBytes > MAX_ENTRY_PATH_BYTES) return `linkTarget is ${targetBytes} UTF-8 bytes, more than ${MAX_ENTRY_PATH_BYTES}`;
  if (!Number.isSafeInteger(e.size) || e.size < 0) return `size ${e.size} is not an integer in 0..2^53-1`;
  if (!Number.isInteger(e.mode) || e.mode < 0 || e.mode > MAX_ENTRY_MODE) return `mode ${e.mode} is not in 0..0o7777`;
  if (!Number.isSafeInteger(e.mtimeMs)) return `mtimeMs ${e.mtimeMs} is not an integer within +-(2^53-1)`;
  if (e.kind === 'symlink' && targetBytes === 0) return 'linkTarget is empty for a symlink';
  if (e.kind !== 'symlink' && targetBytes !== 0) return `linkTarget must be empty for a ${e.kind}`;
  return undefined;
}

function manifestEntryProblem(e: ManifestEntry): string | undefined {
  const meta = entryMetaProblem(e);
  if (meta !== undefined) return meta;
  const chunks = e.chunkLengths.length;
  if (e.kind !== 'file') {
    if (e.root.length !== 0) return `root must be empty for a ${e.kind}, got ${e.root.length} bytes`;
    if (e.chunkIds.length !== 0 || chunks !== 0) return `a ${e.kind} carries no chunks, got ${e.chunkIds.length} id bytes and ${chunks} lengths`;
    return undefined;
  }
  if (e.root.length !== CHUNK_ID_BYTES) return `root must be ${CHUNK_ID_BYTES} bytes for a file, got ${e.root.length}`;
  if (e.chunkIds.length % CHUNK_ID_BYTES !== 0) return `chunkIds is ${e.chunkIds.length} bytes, not a multiple of ${CHUNK_ID_BYTES}`;
  if (e.chunkIds.length / CHUNK_ID_BYTES !== chunks) {
    return `chunkIds holds ${e.chunkIds.length / CHUNK_ID_BYTES} ids but chunkLengths holds ${chunks} lengths`;
  }
  let sum = 0;
  for (let i = 0; i < chunks; i++) {
    const length = e.chunkLengths[i] ?? 0;
    if (!Number.isInteger(length) || length < 1 || length > UINT32_MAX) return `chunk ${i} length ${length} is not in 1..2^32-1`;
    sum += length;
  }
  if (sum !== e.size) return `chunk lengths add up to ${sum} bytes but size is ${e.size}`;
  return undefined;
}

function manifestEntryToWire(e: ManifestEntry): clawpeer.v1.ManifestEntry.$Properties {
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

function transferToWire(message: TransferControlMessage): clawpeer.v1.Control.$Properties {
  checkUint(`${message.type} transferId`, message.transferId, UINT32_MAX);
  switch (message.type) {
    case 'transfer-request': {
      const direction = DIRECTION_TO_WIRE[message.direction];
      if (direction === undefined) throw new RangeError(`TransferRequest.direction must be push or pull, got ${String(message.direction)}`);
      checkTextBytes('TransferRequest.share', message.share);
      checkTextBytes('TransferRequest.path', message.path);
      checkUint('TransferRequest.streams', message.streams, UINT32_MAX);
      checkUint('TransferRequest.window', message.window, UINT32_MAX);
      const exclude = message.exclude ?? [];
      const filter = message.filter ?? [];
      if (exclude.length > 0 && filter.length > 0) throw new RangeError('TransferRequest carries both exclude and filter: send one');
      if (exclude.length > MAX_EXCLUDE_PATTERNS) throw new RangeError(`TransferRequest.exclude has ${exclude.length} patterns, more than ${MAX_EXCLUDE_PATTERNS}`);
      if (filter.length > MAX_EXCLUDE_PATTERNS) throw new RangeError(`TransferRequest.filter has ${filter.length} rules, more than ${MAX_EXCLUDE_PATTERNS}`);
      for (const pattern of exclude) checkTextBytes('TransferRequest.exclude', pattern);
      for (const rule of filter) checkTextBytes('TransferRequest.filter', rule.pattern);
      if (message.backup !== undefined) {
        checkTextBytes('TransferRequest.backup.suffix', message.backup.suffix);
        checkTextBytes('TransferRequest.backup.dir', message.backup.dir);
      }
      checkRateLimit('TransferRequest.rateLimit', message.rateLimit);
      if (message.maxDelete !== undefined) checkUint('TransferRequest.maxDelete', message.maxDelete, Number.MAX_SAFE_INTEGER);
      if (message.minSize !== undefined) checkUint('TransferRequest.minSize', message.minSize, Number.MAX_SAFE_INTEGER);
      if (message.maxSize !== undefined) checkUint('TransferRequest.maxSize', message.maxSize, Number.MAX_SAFE_INTEGER);
      if (message.filesFrom !== undefined) {
        if (message.filesFrom.length > MAX_FILES_FROM_PATHS) throw new RangeError(`TransferRequest.filesFrom has ${message.filesFrom.length} paths, more than ${MAX_FILES_FROM_PATHS}`);
        if (fileListBytes(message.filesFrom) > MAX_FILES_FROM_BYTES) throw new RangeError(`TransferRequest.filesFrom takes more than ${MAX_FILES_FROM_BYTES} bytes`);
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
          existing: message.existing === undefined ? pb.ExistingFiles.EXISTING_FILES_REFUSE : EXISTING_TO_WIRE[message.existing],
          ...(message.backup === undefined ? {} : { backup: { suffix: message.backup.suffix, dir: message.backup.dir } }),
          ...(message.maxDelete === undefined ? {} : { maxDelete: { paths: message.maxDelete } }),
          itemize: message.itemize ?? false,
          minSize: message.minSize ?? 0,
          maxSize: message.maxSize ?? 0,
          filesFrom: [...(message.filesFrom ?? [])],
          copyLinks: message.copyLinks === undefined ? pb.CopyLinks.COPY_LINKS_NONE : COPY_LINKS_TO_WIRE[message.copyLinks],
          rateLimit: message.rateLimit ?? 0,
          dryRun: message.dryRun ?? false,
          delete: message.delete ?? false,
        },
      };
    }
    case 'transfer-accept':
      checkUint('TransferAccept.streams', message.streams, UINT32_MAX);
      checkUint('TransferAccept.window', message.window, UINT32_MAX);
      return { transferAccept: { transferId: message.transferId, streams: message.streams, window: message.window } };
    case 'manifest':
      if (message.entries.length > MAX_MANIFEST_ENTRIES_PER_MESSAGE) {
        throw new RangeError(`Manifest has ${message.entries.length} entries, more than ${MAX_MANIFEST_ENTRIES_PER_MESSAGE}: use splitManifest`);
      }
      return { manifest: { transferId: message.transferId, entries: message.entries.map(manifestEntryToWire), last: message.last } };
    case 'want': {
      checkUint('Want.uniqueChunks', message.uniqueChunks, UINT32_MAX);
      const problem = bitmapProblem(message.lacking, message.uniqueChunks);
      if (problem !== undefined) throw new RangeError(`Want.lacking: ${problem}`);
      return {
        want: {
          transferId: message.transferId, lacking: message.lacking, uniqueChunks: message.uniqueChunks,
          ...(message.publish === undefined ? {} : { publish: message.publish }), ...(message.create === undefined ? {} : { create: message.create }),
          ...(message.touchTime === undefined ? {} : { touchTime: message.touchTime }), ...(message.touchPerms === undefined ? {} : { touchPerms: message.touchPerms }),
        },
      };
    }
    case 'data-open':
      checkUint('DataOpen.streamId', message.streamId, UINT32_MAX);
      return { dataOpen: { transferId: message.transferId, streamId: message.streamId } };
    case 'transfer-done':
      checkUint('TransferDone.files', message.files, Number.MAX_SAFE_INTEGER);
      checkUint('TransferDone.bytes', message.bytes, Number.MAX_SAFE_INTEGER);
      checkUint('TransferDone.chunksReceived', message.chunksReceived, Number.MAX_SAFE_INTEGER);
      checkUint('TransferDone.chunksSkipped', message.chunksSkipped, Number.MAX_SAFE_INTEGER);
      checkUint('TransferDone.filesKept', message.filesKept ?? 0, Number.MAX_SAFE_INTEGER);
      checkUint('TransferDone.filesBackedUp', message.filesBackedUp ?? 0, Number.MAX_SAFE_INTEGER);
      checkUint('TransferDone.deletesOverLimit', message.deletesOverLimit ?? 0, Number.MAX_SAFE_INTEGER);
      const publishedWrong = publishedProblem(message.published ?? [], message.files);
      if (publishedWrong !== undefined) throw new RangeError(publishedWrong);
      for (const f of message.published ?? []) checkTextBytes('TransferDone.published', f.path);
      const createdWrong = createdProblem(message.created ?? []);
      if (createdWrong !== undefined) throw new RangeError(createdWrong);
      for (const e of message.created ?? []) {
        checkTextBytes('TransferDone.created', e.path);
        if (e.kind === 'symlink') checkTextBytes('TransferDone.created target', e.target);
      }
      const updatedWrong = updatedProblem(message.updated ?? []);
      if (updatedWrong !== undefined) throw new RangeError(updatedWrong);
      for (const u of message.updated ?? []) checkTextBytes('TransferDone.updated', u.path);
      const deletedWrong = deletedProblem(message.deleted ?? [], message.deletedCount ?? 0);
      if (deletedWrong !== undefined) throw new RangeError(deletedWrong);
      for (const p of message.deleted ?? []) checkTextBytes('TransferDone.deleted', p);
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
            e.kind === 'dir' ? { path: e.path, kind: ENTRY_KIND_TO_WIRE.dir } : { path: e.path, kind: ENTRY_KIND_TO_WIRE.symlink, linkTarget: e.target, replaced: e.replaced },
          ),
          updated: (message.updated ?? []).map((u) => ({ path: u.path, time: u.time, perms: u.perms })),
        },
      };
    default: {
      const unreachable: never = message;
      throw new TypeError(`unknown transfer message ${JSON.stringify(unreachable)}`);
    }
  }
}

const SYNC_MODE_TO_WIRE: Record<SyncModeName, number> = {
  'two-way': pb.SyncMode.SYNC_MODE_TWO_WAY,
  'send-only': pb.SyncMode.SYNC_MODE_SEND_ONLY,
  'receive-only': pb.SyncMode.SYNC_MODE_RECEIVE_ONLY,
};
const SYNC_MODE_FROM_WIRE = invert(SYNC_MODE_TO_WIRE);

function checkBlob(name: string, value: Uint8Array, min: number, max: number): void {
  if (value.length < min || value.length > max) throw new RangeError(`${name} is ${value.length} bytes, expected ${min}..${max}`);
}

function syncToWire(message: SyncControlMessage): clawpeer.v1.Control.$Properties {
  checkUint(`${message.type} transferId`, message.transferId, UINT32_MAX);
  switch (message.type) {
    case 'sync-request': {
      const mode = SYNC_MODE_TO_WIRE[message.mode];
      if (mode === undefined) throw new RangeError(`SyncRequest.mode must be two-way, send-only or receive-only, got ${String(message.mode)}`);
      checkTextBytes('SyncRequest.share', message.share);
      checkBlob('SyncRequest.reconcile', message.reconcile, 0, MAX_SYNC_RECONCILE_BYTES);
      checkRateLimit('SyncRequest.rateLimit', message.rateLimit);
      return { syncRequest: { transferId: message.transferId, share: message.share, mode, reconcile: message.reconcile, rateLimit: message.rateLimit ?? 0, dryRun: message.dryRun ?? false } };
    }
    case 'sync-accept':
      return { syncAccept: { transferId: message.transferId } };
    case 'sync-reconcile':
      checkBlob('SyncReconcile.payload', message.payload, 1, MAX_SYNC_RECONCILE_BYTES);
      return { syncReconcile: { transferId: message.transferId, payload: message.payload } };
    case 'sync-revisions':
      if (message.records.length > MAX_SYNC_ITEMS_PER_MESSAGE) throw new RangeError(`SyncRevisions has ${message.records.length} records, more than ${MAX_SYNC_ITEMS_PER_MESSAGE}`);
      message.records.forEach((r, i) => checkBlob(`SyncRevisions.records[${i}]`, r, 1, MAX_SYNC_RECORD_BYTES));
      return { syncRevisions: { transferId: message.transferId, records: message.records as Uint8Array[], last: message.last } };
    case 'sync-fetch':
      checkUint('SyncFetch.fetchId', message.fetchId, UINT32_MAX);
      if (message.items.length > MAX_SYNC_ITEMS_PER_MESSAGE) throw new RangeError(`SyncFetch has ${message.items.length} items, more than ${MAX_SYNC_ITEMS_PER_MESSAGE}`);
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
      return { syncDone: { transferId: message.transferId } };
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

function helloToWire(m: Omit<HelloMessage, 'type'>): clawpeer.v1.Hello.$Properties {
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

function welcomeToWire(m: Omit<WelcomeMessage, 'type'>): clawpeer.v1.Welcome.$Properties {
  return {
    version: m.version,
    nodePublicKey: m.nodePublicKey,
    caps: capsToWire(m.caps),
    ephemeralPublicKey: m.ephemeralPublicKey,
    nonce: m.nonce,
    signature: m.signature,
  };
}

// An unpaired UTF-16 surrogate (paths.ts): protobufjs would write it as invalid UTF-8 that its
// own decoder refuses.
const LONE_SURROGATES = new RegExp(LONE_SURROGATE.source, 'g');

/**
 * Cuts to MAX_ERROR_MESSAGE_CHARS and replaces control and bidi-override characters with spaces:
 * a peer's text reaches terminals and logs, where escapes could repaint or disguise output.
 */
export function sanitizeErrorText(text: string): string {
  // eslint-disable-next-line no-control-regex
  const clean = text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, ' ').replace(LONE_SURROGATES, '\ufffd');
  if (clean.length <= MAX_ERROR_MESSAGE_CHARS) return clean;
  // Never between the halves of a surrogate pair: a lone half would be written as U+FFFD (deep fuzz).
  const cut = isHighSurrogate(clean.charCodeAt(MAX_ERROR_MESSAGE_CHARS - 2)) ? MAX_ERROR_MESSAGE_CHARS - 2 : MAX_ERROR_MESSAGE_CHARS - 1;
  return `${clean.slice(0, cut)}…`;
}

function isHighSurrogate(unit: number): boolean {
  return unit >= 0xd800 && unit <= 0xdbff;
}

function toWire(message: ControlMessage): clawpeer.v1.Control.$Properties {
  switch (message.type) {
    case 'hello':
      return { hello: helloToWire(message) };
    case 'welcome':
      return { welcome: welcomeToWire(message) };
    case 'finished':
      return { finished: { signature: message.signature } };
    case 'error':
      checkUint('Error.code', message.code, 0xffff_ffff);
      return { error: { code: message.code, message: sanitizeErrorText(message.message) } };
    case 'ping':
      checkUint('Ping.seq', message.seq, Number.MAX_SAFE_INTEGER);
      checkUint('Ping.sentTimeUs', message.sentTimeUs, Number.MAX_SAFE_INTEGER);
      return { ping: { seq: message.seq, sentTimeUs: message.sentTimeUs } };
    case 'pong':
      checkUint('Pong.seq', message.seq, Number.MAX_SAFE_INTEGER);
      checkUint('Pong.echoedTimeUs', message.echoedTimeUs, Number.MAX_SAFE_INTEGER);
      return { pong: { seq: message.seq, echoedTimeUs: message.echoedTimeUs } };
    case 'pair-request':
    case 'pair-accept': {
      if (message.proof.length !== PAIR_PROOF_BYTES) throw new RangeError(`${message.type} proof must be ${PAIR_PROOF_BYTES} bytes, got ${message.proof.length}`);
      checkTextBytes(`${message.type} name`, message.name);
      if (protobuf.util.utf8.length(message.name) > MAX_PAIR_NAME_BYTES) throw new RangeError(`${message.type} name is longer than ${MAX_PAIR_NAME_BYTES} bytes`);
      const body = { proof: message.proof, name: message.name };
      return message.type === 'pair-request' ? { pairRequest: body } : { pairAccept: body };
    }
    case 'transfer-request':
    case 'transfer-accept':
    case 'manifest':
    case 'want':
    case 'data-open':
    case 'transfer-done':
      return transferToWire(message);
    case 'sync-request':
    case 'sync-accept':
    case 'sync-reconcile':
    case 'sync-revisions':
    case 'sync-fetch':
    case 'sync-done':
      return syncToWire(message);
    case 'watch-share':
      checkTextBytes('WatchShare.share', message.share);
      return { watchShare: { share: message.share } };
    case 'share-changed':
      checkTextBytes('ShareChanged.share', message.share);
      checkUint('ShareChanged.seq', message.seq, Number.MAX_SAFE_INTEGER);
      return { shareChanged: { share: message.share, seq: message.seq } };
    case 'list-request':
      checkUint('ListRequest.requestId', message.requestId, UINT32_MAX);
      checkTextBytes('ListRequest.share', message.share);
      checkTextBytes('ListRequest.path', message.path);
      return { listRequest: { requestId: message.requestId, share: message.share, path: message.path, recursive: message.recursive } };
    case 'list-reply': {
      checkUint('ListReply.requestId', message.requestId, UINT32_MAX);
      if (message.entries.length > MAX_LIST_ENTRIES_PER_MESSAGE) throw new RangeError(`ListReply has ${message.entries.length} entries, more than ${MAX_LIST_ENTRIES_PER_MESSAGE}`);
      for (const sh of message.shares) checkTextBytes('ListReply.shares.name', sh.name);
      const entries = message.entries.map((e) => {
        const problem = entryMetaProblem(e);
        if (problem !== undefined) throw new RangeError(`ListEntry ${quote(e.path)}: ${problem}`);
        return { path: e.path, kind: ENTRY_KIND_TO_WIRE[e.kind], size: e.size, mode: e.mode, mtimeMs: e.mtimeMs, linkTarget: e.linkTarget };
      });
      return { listReply: { requestId: message.requestId, entries, shares: message.shares.map((sh) => ({ name: sh.name, readOnly: sh.readOnly, noDelete: sh.noDelete })), last: message.last } };
    }
    default: {
      const unreachable: never = message;
      throw new TypeError(`unknown control message ${JSON.stringify(unreachable)}`);
    }
  }
}

/** The Control envelope bytes (a CONTROL frame body). */
export function encodeControl(message: ControlMessage): Uint8Array {
  return pb.Control.encode(toWire(message)).finish();
}

/** A complete CONTROL frame (frame header + envelope), ready to write. */
export function encodeControlFrame(message: ControlMessage): Uint8Array {
  return encodeFrame('control', encodeControl(message));
}

/**
 * A Control envelope around an already encoded body message (e.g. a signed Hello): the body
 * goes on the wire byte for byte, so the transcript the handshake hashes is what the peer gets.
 */
export function encodeControlFromRaw(type: ControlMessageType, body: Uint8Array): Uint8Array {
  return protobuf.Writer.create().uint32((CONTROL_FIELDS[type] << 3) | 2).bytes(body).finish();
}

/** The bytes of a Hello message alone (not the envelope): what the handshake signs. */
export function encodeHelloBody(hello: Omit<HelloMessage, 'type'>): Uint8Array {
  return pb.Hello.encode(helloToWire(hello)).finish();
}

/** The bytes of a Welcome message alone (not the envelope). */
export function encodeWelcomeBody(welcome: Omit<WelcomeMessage, 'type'>): Uint8Array {
  return pb.Welcome.encode(welcomeToWire(welcome)).finish();
}

// ---------------------------------------------------------------------------------------------
// Decoding

interface LongLike {
  readonly low: number;
  readonly high: number;
}

function u64ToNumber(field: string, value: number | LongLike): number {
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

function fixedBytes(field: string, value: Uint8Array | null | undefined, length: number): Uint8Array {
  const got = value?.length ?? 0;
  if (value === null || value === undefined || got !== length) {
    throw new ClawpeerError('PROTOCOL', `${field} must be ${length} bytes, got ${got}`);
  }
  return new Uint8Array(value); // a copy: decoded bytes are views into the frame buffer
}

function enumList<K extends string>(field: string, values: readonly number[] | null | undefined, table: ReadonlyMap<number, K>, max = MAX_CAPABILITY_LIST_ENTRIES): K[] {
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

function capsFromWire(owner: string, caps: clawpeer.v1.Capabilities.$Properties | null | undefined): Capabilities {
  if (caps === null || caps === undefined) throw new ClawpeerError('PROTOCOL', `${owner}.caps is missing`);
  const chunkingRaw = caps.chunking ?? [];
  if (chunkingRaw.length > MAX_CAPABILITY_LIST_ENTRIES) {
    throw new ClawpeerError('PROTOCOL', `${owner}.caps.chunking has ${chunkingRaw.length} entries, more than ${MAX_CAPABILITY_LIST_ENTRIES}`);
  }
  const chunking: ChunkingParams[] = chunkingRaw.map((c) => ({ minBytes: c.minBytes ?? 0, avgBytes: c.avgBytes ?? 0, maxBytes: c.maxBytes ?? 0 }));
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
        ...enumList(`${owner}.caps.featuresMore`, caps.featuresMore, FEATURE_FROM_WIRE, MAX_FEATURES - MAX_CAPABILITY_LIST_ENTRIES),
      ]),
    ],
  };
}

function wireEnum<K extends string>(field: string, value: number | null | undefined, table: ReadonlyMap<number, K>): K {
  const name = table.get(value ?? 0);
  if (name === undefined) {
    const what = (value ?? 0) === 0 ? 'unspecified (0)' : `unknown value ${value ?? 0}`;
    throw new ClawpeerError('PROTOCOL', `${field} is ${what}`);
  }
  return name;
}

function wireText(field: string, value: string | null | undefined): string {
  const text = value ?? '';
  const bytes = protobuf.util.utf8.length(text);
  if (bytes > MAX_ENTRY_PATH_BYTES) throw new ClawpeerError('PROTOCOL', `${field} is ${bytes} UTF-8 bytes, more than ${MAX_ENTRY_PATH_BYTES}`);
  return text;
}

/** What is wrong with TransferDone's removed paths, if anything: too many listed, or a count below the list. */
function deletedProblem(deleted: readonly string[], count: number): string | undefined {
  if (deleted.length > MAX_LISTED_DELETIONS) return `TransferDone.deleted lists ${deleted.length} paths, more than ${MAX_LISTED_DELETIONS}`;
  if (!Number.isSafeInteger(count) || count < deleted.length) return `TransferDone.deletedCount ${count} is less than the ${deleted.length} paths listed`;
  return undefined;
}

function deletedFromWire(deleted: readonly string[], count: number): { deleted?: string[]; deletedCount?: number } {
  const problem = deletedProblem(deleted, count);
  if (problem !== undefined) throw new ClawpeerError('PROTOCOL', problem);
  return count === 0 ? {} : { deleted: deleted.map((p) => wireText('TransferDone.deleted', p)), deletedCount: count };
}

function keptFromWire(kept: number): { filesKept?: number } {
  return kept === 0 ? {} : { filesKept: kept };
}

function backedUpFromWire(backedUp: number): { filesBackedUp?: number } {
  return backedUp === 0 ? {} : { filesBackedUp: backedUp };
}

/** The text a listed entry of TransferDone takes: its path, and a symlink's target (UTF-8 bytes). */
export function listedEntryBytes(e: { readonly path: string; readonly target?: string }): number {
  return protobuf.util.utf8.length(e.path) + (e.target === undefined ? 0 : protobuf.util.utf8.length(e.target));
}

/** What is wrong with a list TransferDone carries, if anything: over MAX_LISTED_PUBLISHED items, or over MAX_LISTED_PUBLISHED_BYTES of text. */
function listedProblem(field: string, noun: string, text: string, list: readonly { readonly path: string; readonly target?: string }[]): string | undefined {
  if (list.length > MAX_LISTED_PUBLISHED) return `${field} lists ${list.length} ${noun}, more than ${MAX_LISTED_PUBLISHED}`;
  let bytes = 0;
  for (const e of list) bytes += listedEntryBytes(e);
  return bytes > MAX_LISTED_PUBLISHED_BYTES ? `${field} lists ${bytes} bytes of ${text}, more than ${MAX_LISTED_PUBLISHED_BYTES}` : undefined;
}

function publishedProblem(published: readonly PublishedFile[], files: number): string | undefined {
  if (published.length <= MAX_LISTED_PUBLISHED && published.length > files) return `TransferDone.published lists ${published.length} files, more than the ${files} it counts`;
  return listedProblem('TransferDone.published', 'files', 'paths', published);
}

function publishedFromWire(raw: readonly clawpeer.v1.PublishedFile.$Properties[], files: number): { published?: PublishedFile[] } {
  if (raw.length === 0) return {};
  const published = raw.map((f) => ({ path: wireText('TransferDone.published', f.path), replaced: f.replaced ?? false }));
  const problem = publishedProblem(published, files);
  if (problem !== undefined) throw new ClawpeerError('PROTOCOL', problem);
  return { published };
}

function updatedProblem(updated: readonly UpdatedFile[]): string | undefined {
  return listedProblem('TransferDone.updated', 'files', 'paths', updated);
}

function updatedFromWire(raw: readonly clawpeer.v1.UpdatedFile.$Properties[]): { updated?: UpdatedFile[] } {
  if (raw.length === 0) return {};
  const updated = raw.map((u) => ({ path: wireText('TransferDone.updated', u.path), time: u.time ?? false, perms: u.perms ?? false }));
  const problem = updatedProblem(updated);
  if (problem !== undefined) throw new ClawpeerError('PROTOCOL', problem);
  return { updated };
}

function createdProblem(created: readonly CreatedEntry[]): string | undefined {
  return listedProblem('TransferDone.created', 'entries', 'paths and targets', created);
}

function createdFromWire(raw: readonly clawpeer.v1.CreatedEntry.$Properties[]): { created?: CreatedEntry[] } {
  if (raw.length === 0) return {};
  const created = raw.map((e): CreatedEntry => {
    const path = wireText('TransferDone.created', e.path);
    const kind = wireEnum('TransferDone.created kind', e.kind, ENTRY_KIND_FROM_WIRE);
    if (kind === 'dir') return { path, kind };
    if (kind === 'symlink') return { path, kind, target: wireText('TransferDone.created target', e.linkTarget), replaced: e.replaced ?? false };
    throw new ClawpeerError('PROTOCOL', `TransferDone.created lists ${JSON.stringify(path)} as a ${kind}: only directories and symlinks`);
  });
  const problem = createdProblem(created);
  if (problem !== undefined) throw new ClawpeerError('PROTOCOL', problem);
  return { created };
}

function overLimitFromWire(over: number): { deletesOverLimit?: number } {
  return over === 0 ? {} : { deletesOverLimit: over };
}

/** A request's exclude patterns or filter rules (at most one of them, each within the limits). */
function patternsFromWire(r: clawpeer.v1.TransferRequest.$Properties): { exclude?: string[]; filter?: FilterRule[] } {
  const exclude = r.exclude ?? [];
  const filter = r.filter ?? [];
  if (exclude.length > 0 && filter.length > 0) throw new ClawpeerError('PROTOCOL', 'TransferRequest carries both exclude patterns and filter rules');
  if (exclude.length > MAX_EXCLUDE_PATTERNS) throw new ClawpeerError('PROTOCOL', `TransferRequest.exclude has ${exclude.length} patterns, more than ${MAX_EXCLUDE_PATTERNS}`);
  if (filter.length > MAX_EXCLUDE_PATTERNS) throw new ClawpeerError('PROTOCOL', `TransferRequest.filter has ${filter.length} rules, more than ${MAX_EXCLUDE_PATTERNS}`);
  if (exclude.length > 0) return { exclude: exclude.map((p) => wireText('TransferRequest.exclude', p)) };
  if (filter.length > 0) return { filter: filter.map((f) => ({ pattern: wireText('TransferRequest.filter', f.pattern), include: f.include === true })) };
  return {};
}

/** A copy: decoded bytes are views into the frame buffer. */
function copyBytes(value: Uint8Array | null | undefined): Uint8Array {
  return value === null || value === undefined ? new Uint8Array(0) : new Uint8Array(value);
}

/** An entry's name and metadata fields from the wire (a manifest's or a listing's); `what` names its list. */
function entryMetaFromWire(what: string, index: number, w: clawpeer.v1.ListEntry.$Properties | null | undefined): { owner: string; meta: ListEntry } {
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

function manifestEntryFromWire(index: number, w: clawpeer.v1.ManifestEntry.$Properties | null | undefined): ManifestEntry {
  const { owner, meta } = entryMetaFromWire('Manifest.entries', index, w);
  const entry: ManifestEntry = { ...meta, root: copyBytes(w?.root), chunkIds: copyBytes(w?.chunkIds), chunkLengths: w?.chunkLengths ?? [] };
  const problem = manifestEntryProblem(entry);
  if (problem !== undefined) throw new ClawpeerError('PROTOCOL', `${owner}: ${problem}`);
  return entry;
}

function listEntryFromWire(index: number, w: clawpeer.v1.ListEntry.$Properties | null | undefined): ListEntry {
  const { owner, meta } = entryMetaFromWire('ListReply.entries', index, w);
  const problem = entryMetaProblem(meta);
  if (problem !== undefined) throw new ClawpeerError('PROTOCOL', `${owner}: ${problem}`);
  return meta;
}

function transferFromWire(control: clawpeer.v1.Control): TransferControlMessage | undefined {
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
        ...((r.existing ?? 0) === pb.ExistingFiles.EXISTING_FILES_REFUSE ? {} : { existing: wireEnum('TransferRequest.existing', r.existing, EXISTING_FROM_WIRE) }),
        ...(r.backup === null || r.backup === undefined ? {} : { backup: { suffix: wireText('TransferRequest.backup.suffix', r.backup.suffix), dir: wireText('TransferRequest.backup.dir', r.backup.dir) } }),
        ...(r.maxDelete === null || r.maxDelete === undefined ? {} : { maxDelete: u64ToNumber('TransferRequest.maxDelete', r.maxDelete.paths ?? 0) }),
        ...(r.itemize === true ? { itemize: true } : {}),
        ...sizeBoundFromWire('minSize', r.minSize),
        ...sizeBoundFromWire('maxSize', r.maxSize),
        ...filesFromWire(r.filesFrom),
        ...((r.copyLinks ?? 0) === pb.CopyLinks.COPY_LINKS_NONE ? {} : { copyLinks: wireEnum('TransferRequest.copyLinks', r.copyLinks, COPY_LINKS_FROM_WIRE) }),
        ...rateLimitFromWire(r.rateLimit),
        ...(r.dryRun === true ? { dryRun: true } : {}),
        ...(r.delete === true ? { delete: true } : {}),
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
        throw new ClawpeerError('PROTOCOL', `Manifest has ${raw.length} entries, more than ${MAX_MANIFEST_ENTRIES_PER_MESSAGE}`);
      }
      return { type: 'manifest', transferId: m.transferId ?? 0, entries: raw.map((e, i) => manifestEntryFromWire(i, e)), last: m.last ?? false };
    }
    case 'want': {
      const w = control.want;
      if (w === null || w === undefined) return undefined;
      const uniqueChunks = w.uniqueChunks ?? 0;
      const lacking = copyBytes(w.lacking);
      const problem = bitmapProblem(lacking, uniqueChunks);
      if (problem !== undefined) throw new ClawpeerError('PROTOCOL', `Want.lacking: ${problem}`);
      // Its length is checked by the client, which knows how many files it announced.
      const optional = (bytes: Uint8Array | null | undefined): Uint8Array | undefined => (bytes === null || bytes === undefined || bytes.length === 0 ? undefined : copyBytes(bytes));
      const publish = optional(w.publish);
      const create = optional(w.create);
      const touchTime = optional(w.touchTime);
      const touchPerms = optional(w.touchPerms);
      return {
        type: 'want', transferId: w.transferId ?? 0, lacking, uniqueChunks, ...(publish === undefined ? {} : { publish }), ...(create === undefined ? {} : { create }),
        ...(touchTime === undefined ? {} : { touchTime }), ...(touchPerms === undefined ? {} : { touchPerms }),
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
      };
    }
    default:
      return undefined;
  }
}

function blobFromWire(field: string, value: Uint8Array | null | undefined, min: number, max: number): Uint8Array {
  const got = value?.length ?? 0;
  if (got < min || got > max) throw new ClawpeerError('PROTOCOL', `${field} is ${got} bytes, expected ${min}..${max}`);
  return copyBytes(value);
}

function syncFromWire(control: clawpeer.v1.Control): SyncControlMessage | undefined {
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
      };
    }
    case 'syncAccept': {
      const a = control.syncAccept;
      if (a === null || a === undefined) return undefined;
      return { type: 'sync-accept', transferId: a.transferId ?? 0 };
    }
    case 'syncReconcile': {
      const r = control.syncReconcile;
      if (r === null || r === undefined) return undefined;
      return { type: 'sync-reconcile', transferId: r.transferId ?? 0, payload: blobFromWire('SyncReconcile.payload', r.payload, 1, MAX_SYNC_RECONCILE_BYTES) };
    }
    case 'syncRevisions': {
      const r = control.syncRevisions;
      if (r === null || r === undefined) return undefined;
      const raw = r.records ?? [];
      if (raw.length > MAX_SYNC_ITEMS_PER_MESSAGE) throw new ClawpeerError('PROTOCOL', `SyncRevisions has ${raw.length} records, more than ${MAX_SYNC_ITEMS_PER_MESSAGE}`);
      return {
        type: 'sync-revisions',
        transferId: r.transferId ?? 0,
        records: raw.map((rec, i) => blobFromWire(`SyncRevisions.records[${i}]`, rec, 1, MAX_SYNC_RECORD_BYTES)),
        last: r.last ?? false,
      };
    }
    case 'syncFetch': {
      const f = control.syncFetch;
      if (f === null || f === undefined) return undefined;
      const raw = f.items ?? [];
      if (raw.length > MAX_SYNC_ITEMS_PER_MESSAGE) throw new ClawpeerError('PROTOCOL', `SyncFetch has ${raw.length} items, more than ${MAX_SYNC_ITEMS_PER_MESSAGE}`);
      const items = raw.map((w, i): SyncFetchItem => {
        const item = { path: wireText(`SyncFetch.items[${i}].path`, w.path), root: copyBytes(w.root) };
        const problem = fetchItemProblem(item);
        if (problem !== undefined) throw new ClawpeerError('PROTOCOL', `SyncFetch.items[${i}] ${quote(item.path)}: ${problem}`);
        return item;
      });
      return { type: 'sync-fetch', transferId: f.transferId ?? 0, fetchId: f.fetchId ?? 0, items, last: f.last ?? false };
    }
    case 'syncDone': {
      const d = control.syncDone;
      if (d === null || d === undefined) return undefined;
      return { type: 'sync-done', transferId: d.transferId ?? 0 };
    }
    default:
      return undefined;
  }
}

function fromWire(control: clawpeer.v1.Control): ControlMessage {
  switch (control.body) {
    case 'hello': {
      const h = control.hello;
      if (h === null || h === undefined) break;
      return {
        type: 'hello',
        minVersion: h.minVersion ?? 0,
        maxVersion: h.maxVersion ?? 0,
        nodePublicKey: fixedBytes('Hello.nodePublicKey', h.nodePublicKey, ED25519_KEY_BYTES),
        caps: capsFromWire('Hello', h.caps),
        ephemeralPublicKey: fixedBytes('Hello.ephemeralPublicKey', h.ephemeralPublicKey, X25519_KEY_BYTES),
        nonce: fixedBytes('Hello.nonce', h.nonce, HANDSHAKE_NONCE_BYTES),
        signature: fixedBytes('Hello.signature', h.signature, ED25519_SIGNATURE_BYTES),
      };
    }
    case 'welcome': {
      const w = control.welcome;
      if (w === null || w === undefined) break;
      return {
        type: 'welcome',
        version: w.version ?? 0,
        nodePublicKey: fixedBytes('Welcome.nodePublicKey', w.nodePublicKey, ED25519_KEY_BYTES),
        caps: capsFromWire('Welcome', w.caps),
        ephemeralPublicKey: fixedBytes('Welcome.ephemeralPublicKey', w.ephemeralPublicKey, X25519_KEY_BYTES),
        nonce: fixedBytes('Welcome.nonce', w.nonce, HANDSHAKE_NONCE_BYTES),
        signature: fixedBytes('Welcome.signature', w.signature, ED25519_SIGNATURE_BYTES),
      };
    }
    case 'finished': {
      const f = control.finished;
      if (f === null || f === undefined) break;
      return { type: 'finished', signature: fixedBytes('Finished.signature', f.signature, ED25519_SIGNATURE_BYTES) };
    }
    case 'error': {
      const e = control.error;
      if (e === null || e === undefined) break;
      return { type: 'error', code: e.code ?? 0, message: sanitizeErrorText(e.message ?? '') };
    }
    case 'ping': {
      const p = control.ping;
      if (p === null || p === undefined) break;
      return { type: 'ping', seq: u64ToNumber('Ping.seq', p.seq ?? 0), sentTimeUs: u64ToNumber('Ping.sentTimeUs', p.sentTimeUs ?? 0) };
    }
    case 'pong': {
      const p = control.pong;
      if (p === null || p === undefined) break;
      return { type: 'pong', seq: u64ToNumber('Pong.seq', p.seq ?? 0), echoedTimeUs: u64ToNumber('Pong.echoedTimeUs', p.echoedTimeUs ?? 0) };
    }
    case 'pairRequest':
    case 'pairAccept': {
      const p = control.body === 'pairRequest' ? control.pairRequest : control.pairAccept;
      if (p === null || p === undefined) break;
      const what = control.body === 'pairRequest' ? 'PairRequest' : 'PairAccept';
      const name = wireText(`${what}.name`, p.name);
      if (protobuf.util.utf8.length(name) > MAX_PAIR_NAME_BYTES) throw new ClawpeerError('PROTOCOL', `${what}.name is longer than ${MAX_PAIR_NAME_BYTES} bytes`);
      const proof = fixedBytes(`${what}.proof`, p.proof, PAIR_PROOF_BYTES);
      return control.body === 'pairRequest' ? { type: 'pair-request', proof, name } : { type: 'pair-accept', proof, name };
    }
    case 'transferRequest':
    case 'transferAccept':
    case 'manifest':
    case 'want':
    case 'dataOpen':
    case 'transferDone': {
      const message = transferFromWire(control);
      if (message === undefined) break;
      return message;
    }
    case 'syncRequest':
    case 'syncAccept':
    case 'syncReconcile':
    case 'syncRevisions':
    case 'syncFetch':
    case 'syncDone': {
      const message = syncFromWire(control);
      if (message === undefined) break;
      return message;
    }
    case 'watchShare': {
      const w = control.watchShare;
      if (w === null || w === undefined) break;
      return { type: 'watch-share', share: wireText('WatchShare.share', w.share) };
    }
    case 'shareChanged': {
      const c = control.shareChanged;
      if (c === null || c === undefined) break;
      return { type: 'share-changed', share: wireText('ShareChanged.share', c.share), seq: u64ToNumber('ShareChanged.seq', c.seq ?? 0) };
    }
    case 'listRequest': {
      const r = control.listRequest;
      if (r === null || r === undefined) break;
      return { type: 'list-request', requestId: r.requestId ?? 0, share: wireText('ListRequest.share', r.share), path: wireText('ListRequest.path', r.path), recursive: r.recursive ?? false };
    }
    case 'listReply': {
      const r = control.listReply;
      if (r === null || r === undefined) break;
      return {
        type: 'list-reply',
        requestId: r.requestId ?? 0,
        entries: (r.entries ?? []).map((e, i) => listEntryFromWire(i, e)),
        shares: (r.shares ?? []).map((sh) => ({ name: wireText('ShareInfo.name', sh.name), readOnly: sh.readOnly ?? false, noDelete: sh.noDelete ?? false })),
        last: r.last ?? false,
      };
    }
    case undefined:
      break;
    default: {
      const unreachable: never = control.body;
      throw new TypeError(`unhandled Control member ${String(unreachable)}`);
    }
  }
  throw new ClawpeerError('PROTOCOL', 'control message has no body');
}

interface FieldSpan {
  readonly field: number;
  readonly wireType: number;
  /** Whole field, tag included. */
  readonly start: number;
  readonly end: number;
  /** Value bytes of a length-delimited field. */
  readonly valueStart: number;
}

/** The top-level fields of a protobuf message, in wire order. Throws on malformed input. */
function scanFields(bytes: Uint8Array): FieldSpan[] {
  const reader = protobuf.Reader.create(bytes);
  const spans: FieldSpan[] = [];
  while (reader.pos < reader.len) {
    const start = reader.pos;
    const tag = reader.uint32();
    const field = tag >>> 3;
    const wireType = tag & 7;
    if (field === 0) throw new RangeError(`field number 0 at offset ${start}`);
    let valueStart = reader.pos;
    if (wireType === 2) {
      const length = reader.uint32();
      valueStart = reader.pos;
      if (length > reader.len - reader.pos) throw new RangeError(`field ${field} length ${length} runs past the end at offset ${start}`);
      reader.pos += length;
    } else {
      reader.skipType(wireType);
    }
    spans.push({ field, wireType, start, end: reader.pos, valueStart });
  }
  return spans;
}

/** `message` (an encoded protobuf message) without any occurrence of top-level `field`. */
export function stripField(message: Uint8Array, field: number): Uint8Array {
  let spans: FieldSpan[];
  try {
    spans = scanFields(message);
  } catch (cause) {
    throw new ClawpeerError('PROTOCOL', `malformed protobuf message: ${(cause as Error).message}`, { cause });
  }
  const kept = spans.filter((s) => s.field !== field);
  const out = new Uint8Array(kept.reduce((n, s) => n + (s.end - s.start), 0));
  let at = 0;
  for (const s of kept) {
    out.set(message.subarray(s.start, s.end), at);
    at += s.end - s.start;
  }
  return out;
}

export interface DecodedControl {
  readonly message: ControlMessage;
  /** The encoded body message (e.g. the Hello bytes inside the envelope), a view of the input. */
  readonly raw: Uint8Array;
}

const KNOWN_CONTROL_FIELDS: ReadonlySet<number> = new Set(Object.values(CONTROL_FIELDS));

/**
 * Decodes a CONTROL frame body. The envelope must hold exactly one member; an unknown member
 * (a newer peer's message we do not speak) is a PROTOCOL error naming its field number.
 * FRAME_TOO_LARGE when `bytes` exceeds `maxBytes`.
 */
export function decodeControlWithRaw(bytes: Uint8Array, options: { readonly maxBytes: number }): DecodedControl {
  if (bytes.length > options.maxBytes) {
    throw new ClawpeerError('FRAME_TOO_LARGE', `control message of ${bytes.length} bytes exceeds the maximum of ${options.maxBytes}`);
  }
  let spans: FieldSpan[];
  try {
    spans = scanFields(bytes);
  } catch (cause) {
    throw new ClawpeerError('PROTOCOL', `malformed control message: ${(cause as Error).message}`, { cause });
  }
  const [span, ...extra] = spans;
  if (span === undefined) throw new ClawpeerError('PROTOCOL', 'control message has no body');
  if (extra.length > 0) {
    throw new ClawpeerError('PROTOCOL', `control message carries ${spans.length} fields (${spans.map((s) => s.field).join(', ')}); exactly one expected`);
  }
  if (!KNOWN_CONTROL_FIELDS.has(span.field)) {
    throw new ClawpeerError('PROTOCOL', `unknown control message (envelope field ${span.field})`);
  }
  if (span.wireType !== 2) throw new ClawpeerError('PROTOCOL', `control message field ${span.field} has wire type ${span.wireType}, expected 2`);
  const raw = bytes.subarray(span.valueStart, span.end);
  let message: ControlMessage;
  try {
    // Count manifest entries before protobufjs builds an object for each: a 16 MiB frame of
    // empty entries would otherwise become 8 million objects before the limit is checked.
    if (span.field === CONTROL_FIELDS.manifest) {
      const entries = scanFields(raw).filter((s) => s.field === MANIFEST_ENTRIES_FIELD).length;
      if (entries > MAX_MANIFEST_ENTRIES_PER_MESSAGE) {
        throw new ClawpeerError('PROTOCOL', `Manifest has ${entries} entries, more than ${MAX_MANIFEST_ENTRIES_PER_MESSAGE}`);
      }
    }
    if (span.field === CONTROL_FIELDS['list-reply']) {
      const entries = scanFields(raw).filter((s) => s.field === LIST_REPLY_ENTRIES_FIELD).length;
      if (entries > MAX_LIST_ENTRIES_PER_MESSAGE) throw new ClawpeerError('PROTOCOL', `ListReply has ${entries} entries, more than ${MAX_LIST_ENTRIES_PER_MESSAGE}`);
    }
    if (span.field === CONTROL_FIELDS['sync-revisions'] || span.field === CONTROL_FIELDS['sync-fetch']) {
      const field = span.field === CONTROL_FIELDS['sync-revisions'] ? SYNC_REVISIONS_RECORDS_FIELD : SYNC_FETCH_ITEMS_FIELD;
      const items = scanFields(raw).filter((s) => s.field === field).length;
      if (items > MAX_SYNC_ITEMS_PER_MESSAGE) {
        throw new ClawpeerError('PROTOCOL', `${span.field === CONTROL_FIELDS['sync-revisions'] ? 'SyncRevisions' : 'SyncFetch'} has ${items} items, more than ${MAX_SYNC_ITEMS_PER_MESSAGE}`);
      }
    }
    message = fromWire(pb.Control.decode(bytes));
  } catch (cause) {
    if (cause instanceof ClawpeerError) throw cause;
    throw new ClawpeerError('PROTOCOL', `malformed control message: ${(cause as Error).message}`, { cause });
  }
  return { message, raw };
}

/** Decodes a CONTROL frame body; see decodeControlWithRaw. */
export function decodeControl(bytes: Uint8Array, options: { readonly maxBytes: number }): ControlMessage {
  return decodeControlWithRaw(bytes, options).message;
}

// ---------------------------------------------------------------------------------------------
// Manifest batching

function varintBytes(value: number): number {
  let n = 1;
  for (let v = value; v >= 0x80; v = Math.floor(v / 0x80)) n++;
  return n;
}

/** Envelope tag of Control.manifest (field 18, LEN): two varint bytes. */
const MANIFEST_ENVELOPE_TAG_BYTES = varintBytes((CONTROL_FIELDS.manifest << 3) | 2);
/** `last = true` inside Manifest: tag byte + one varint byte. */
const MANIFEST_LAST_FIELD_BYTES = 2;

/** Encoded bytes of one entry inside a Manifest message: tag, length prefix and body. Validates it. */
export function manifestEntryWireBytes(entry: ManifestEntry): number {
  const body = pb.ManifestEntry.encode(manifestEntryToWire(entry)).finish().length;
  return 1 + varintBytes(body) + body;
}

/** Control envelope bytes of a Manifest whose entries take `entryBytes` (sum of manifestEntryWireBytes). */
function manifestEnvelopeBytes(transferId: number, entryBytes: number): number {
  const inner = (transferId === 0 ? 0 : 1 + varintBytes(transferId)) + entryBytes + MANIFEST_LAST_FIELD_BYTES;
  return MANIFEST_ENVELOPE_TAG_BYTES + varintBytes(inner) + inner;
}

/**
 * Cuts a tree's entries, in order, into Manifest messages whose Control envelopes (the CONTROL
 * frame body) each take at most `maxBytes` (pass the session's maxFrameBytes) and hold at most
 * MAX_MANIFEST_ENTRIES_PER_MESSAGE entries. Only the final batch has last = true; an empty list
 * gives one empty batch with last = true. An entry too large for a frame on its own (a file
 * with very many chunks) is a FRAME_TOO_LARGE ClawpeerError naming its path and chunk count.
 * Entries are validated as encodeControl would (RangeError on a malformed one).
 */
export function splitManifest(transferId: number, entries: readonly ManifestEntry[], maxBytes: number): ManifestMessage[] {
  checkUint('transferId', transferId, UINT32_MAX);
  checkUint('maxBytes', maxBytes, Number.MAX_SAFE_INTEGER);
  const batches: ManifestMessage[] = [];
  let batch: ManifestEntry[] = [];
  let batchBytes = 0;
  for (const entry of entries) {
    const bytes = manifestEntryWireBytes(entry);
    if (manifestEnvelopeBytes(transferId, bytes) > maxBytes) {
      throw new ClawpeerError(
        'FRAME_TOO_LARGE',
        `manifest entry ${quote(entry.path)} with ${entry.chunkLengths.length} chunks needs ${manifestEnvelopeBytes(transferId, bytes)} bytes, more than the ${maxBytes}-byte frame limit`,
      );
    }
    if (batch.length === MAX_MANIFEST_ENTRIES_PER_MESSAGE || manifestEnvelopeBytes(transferId, batchBytes + bytes) > maxBytes) {
      batches.push({ type: 'manifest', transferId, entries: batch, last: false });
      batch = [];
      batchBytes = 0;
    }
    batch.push(entry);
    batchBytes += bytes;
  }
  batches.push({ type: 'manifest', transferId, entries: batch, last: true });
  return batches;
}

// ---------------------------------------------------------------------------------------------
// Want bitmaps (bit i is bit i % 8 of byte i >> 3: LSB first)

/** Bytes of a bitmap of `bits` bits. */
export function bitmapBytes(bits: number): number {
  return Math.ceil(bits / 8);
}

/** An all-zero bitmap of `bits` bits (ceil(bits / 8) bytes). */
export function newBitmap(bits: number): Uint8Array {
  checkUint('bitmap bits', bits, UINT32_MAX);
  return new Uint8Array(bitmapBytes(bits));
}

function bitmapIndex(bitmap: Uint8Array, i: number): void {
  if (!Number.isInteger(i) || i < 0 || i >= bitmap.length * 8) throw new RangeError(`bit ${i} is outside a ${bitmap.length}-byte bitmap`);
}

export function bitmapSet(bitmap: Uint8Array, i: number): void {
  bitmapIndex(bitmap, i);
  bitmap[i >>> 3] = (bitmap[i >>> 3] ?? 0) | (1 << (i & 7));
}

export function bitmapGet(bitmap: Uint8Array, i: number): boolean {
  bitmapIndex(bitmap, i);
  return ((bitmap[i >>> 3] ?? 0) & (1 << (i & 7))) !== 0;
}

/** What is wrong with a `bits`-bit bitmap, or undefined: its length and its padding bits. */
function bitmapProblem(bitmap: Uint8Array, bits: number): string | undefined {
  const expected = bitmapBytes(bits);
  if (bitmap.length !== expected) return `${bitmap.length} bytes for ${bits} chunks, expected ${expected}`;
  const used = bits & 7;
  if (used !== 0 && ((bitmap[expected - 1] ?? 0) >> used) !== 0) return `padding bits after chunk ${bits - 1} are set`;
  return undefined;
}
