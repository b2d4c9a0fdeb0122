// The control messages of the wire protocol as the rest of the code sees them: plain readonly
// objects, a discriminated union on `type`, grouped by family (handshake, pairing, transfer,
// sync, watch, list), with the envelope's field numbers and the limits every codec enforces.
// Types and constants only: encoding and decoding live in messages.ts and its *-wire.ts parts.
import type { FilterRule } from './wire-limits.js';
import type { Capabilities } from './capabilities.js';

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
/** A session's id on the wire (SessionJoin): the first half of its transcript hash. */
export const SESSION_ID_BYTES = 16;
/** HMAC-SHA256 of a SessionJoin. */
export const JOIN_PROOF_BYTES = 32;

/** Pairing by short code (pairing/code-pake.ts): the joiner's nameplate and CPace element. */
export interface CodePairStartMessage {
  readonly type: 'code-pair-start';
  readonly nameplate: string;
  /** CODE_PAIR_SHARE_BYTES. */
  readonly share: Uint8Array;
}

/** The inviter's CPace element and its key confirmation. */
export interface CodePairReplyMessage {
  readonly type: 'code-pair-reply';
  readonly share: Uint8Array;
  /** CODE_PAIR_CONFIRM_BYTES. */
  readonly confirm: Uint8Array;
}

/** The joiner's key confirmation and its info sealed under the key. */
export interface CodePairFinishMessage {
  readonly type: 'code-pair-finish';
  readonly confirm: Uint8Array;
  /** At most MAX_CODE_PAIR_SEALED_BYTES. */
  readonly sealed: Uint8Array;
}

/** The inviter's info sealed under the key. */
export interface CodePairDoneMessage {
  readonly type: 'code-pair-done';
  readonly sealed: Uint8Array;
}

export type CodePairMessage = CodePairStartMessage | CodePairReplyMessage | CodePairFinishMessage | CodePairDoneMessage;

/** A ristretto255 element. */
export const CODE_PAIR_SHARE_BYTES = 32;
/** HMAC-SHA256 output. */
export const CODE_PAIR_CONFIRM_BYTES = 32;
/** Sealed info: a node id, a few addresses, a name, and the AEAD tag. */
export const MAX_CODE_PAIR_SEALED_BYTES = 4096;
/** A nameplate: up to 6 digits. */
export const MAX_NAMEPLATE_CHARS = 6;

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
  /** Push: publish without fsync, --fsync=none (feature 'fsync-none'). */
  readonly noFsync?: boolean;
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
  /** The final batch of a pull's: entries the sender could not read and left out, at most MAX_LISTED_DELETIONS. */
  readonly unreadable?: readonly UnreadablePath[];
  /** All of them (>= unreadable.length). */
  readonly unreadableCount?: number;
}

/** An entry a sender left out because it could not read it (a name not valid UTF-8, EACCES, ...). */
export interface UnreadablePath {
  /** Relative to the transfer root, as manifest entries' paths; bytes not valid UTF-8 as \\#ooo. */
  readonly path: string;
  /** Why, without the sender's local path (at most MAX_UNREADABLE_ERROR_BYTES). */
  readonly error: string;
}

/** The longest reason an UnreadablePath travels with. */
export const MAX_UNREADABLE_ERROR_BYTES = 1024;

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
  /** Paths the receiver may not write (its errno: EACCES, EPERM, ENAMETOOLONG), at most MAX_LISTED_DELETIONS; the rest was published. */
  readonly refused?: readonly RefusedPath[];
  /** All of them (>= refused.length). */
  readonly refusedCount?: number;
}

/** A path a receiver left out because it may not write it (support/path-refusal.ts). */
export interface RefusedPath {
  readonly path: string;
  /** The errno code, e.g. EACCES. */
  readonly reason: string;
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
  | {
      readonly path: string;
      readonly kind: 'symlink';
      readonly target: string;
      /** A different file or link was there before. */ readonly replaced: boolean;
    };

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
  /** The server applies without fsync, --fsync=none (feature 'fsync-none'). */
  readonly noFsync?: boolean;
  /** Fetch only: no reconciliation; one SyncFetch, then SyncDone (feature 'sync-fetch-only'; `restore`). */
  readonly fetchOnly?: boolean;
  /** The client's folder service runs this sync for a folder of its own, not a person's `sync` (feature 'by-folder-service'). */
  readonly byFolderService?: boolean;
  /** A send-only client asks for the records of the server's heads it lacks, not to store (feature 'sync-peer-heads'). */
  readonly peerHeads?: boolean;
}

export interface SyncAcceptMessage {
  readonly type: 'sync-accept';
  readonly transferId: number;
  /** The share is a folder the listener's folder service keeps: it syncs its changes to its peers itself. */
  readonly keptFolder?: boolean;
  /** A send-only folder here asks the receive-only client for the records of its heads it lacks (feature 'sync-peer-heads'). */
  readonly peerHeads?: boolean;
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
  /** Final batch only (feature 'sync-pruned'): 32-byte ids of revisions the receiver has and the sender's gc dropped. */
  readonly pruned?: readonly Uint8Array[];
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
  /** The client's files the server left for the next sync for lack of disk space (absent: none). */
  readonly noSpace?: SyncNoSpace;
}

/** Files a sync's applying side left for the next sync for lack of disk space (exchange/space-fit.ts NoSpaceReport). */
export interface SyncNoSpace {
  readonly files: number;
  readonly needBytes: number;
  readonly freeBytes: number;
  readonly keepBytes: number;
  /** The first MAX_NO_SPACE_PATHS_LISTED of them. */
  readonly paths: readonly string[];
}

/** Paths a SyncNoSpace lists at most. */
export const MAX_NO_SPACE_PATHS_LISTED = 20;

export type SyncControlMessage =
  | SyncRequestMessage
  | SyncAcceptMessage
  | SyncReconcileMessage
  | SyncRevisionsMessage
  | SyncFetchMessage
  | SyncDoneMessage;

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

/** Client -> server, first on a new connection: join session `sessionId` as connection `index` (feature join). */
export interface SessionJoinMessage {
  readonly type: 'session-join';
  /** SESSION_ID_BYTES: the first half of the handshake's transcript hash. */
  readonly sessionId: Uint8Array;
  readonly index: number;
  /** JOIN_PROOF_BYTES: HMAC-SHA256 under the session's join key (crypto/session-keys.ts joinProof). */
  readonly proof: Uint8Array;
}

/** Server -> client: the join was accepted. */
export interface SessionJoinedMessage {
  readonly type: 'session-joined';
  readonly index: number;
}

/** Server -> client on the control stream: a sender seeing random loss asks for this many connections in all. */
export interface JoinWantedMessage {
  readonly type: 'join-wanted';
  readonly connections: number;
}

export type JoinControlMessage = SessionJoinMessage | SessionJoinedMessage | JoinWantedMessage;

export type ControlMessage =
  | HelloMessage
  | WelcomeMessage
  | FinishedMessage
  | ErrorMessage
  | PingMessage
  | PongMessage
  | PairRequestMessage
  | PairAcceptMessage
  | CodePairMessage
  | TransferControlMessage
  | SyncControlMessage
  | WatchControlMessage
  | ListControlMessage
  | JoinControlMessage;
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
  'code-pair-start': 9,
  'code-pair-reply': 10,
  'code-pair-finish': 11,
  'code-pair-done': 12,
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
  'session-join': 64,
  'session-joined': 65,
  'join-wanted': 66,
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

/** Entries per Manifest message: bounds what one frame makes a receiver allocate. */
export const MAX_MANIFEST_ENTRIES_PER_MESSAGE = 100_000;
/** UTF-8 bytes of a path, symlink target or share name (Linux PATH_MAX). */
export const MAX_ENTRY_PATH_BYTES = 4096;
/** Permission bits a ManifestEntry may carry (rwx for all, setuid, setgid, sticky). */
export const MAX_ENTRY_MODE = 0o7777;
/** Field numbers of the signature inside Hello and Welcome: excluded from the signed bytes. */
export const HELLO_SIGNATURE_FIELD = 7;
export const WELCOME_SIGNATURE_FIELD = 6;
